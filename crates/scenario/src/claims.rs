//! Claims (`[[expect]]`) and metric aliases (`[metrics]`) checked for form before anything runs,
//! so that a claim that could never be evaluated is an error of `hostsim check` with its line,
//! not a "fail" in the report after hours of simulation.
//!
//! Two steps:
//!
//! - [`check_form`] (part of loading): what the sweep's structure decides. Each side of a claim
//!   must select exactly one value per seed: `at` values must be among the swept values, a side
//!   without `reduce` must not match several points or variants, several variants need
//!   `across`, a fit (`linear_r2`, `origin_r2`) needs `x`, a condition needs `value`, `rhs` or
//!   `of`. (Numbers, `nan` included, are refused by the bounds: `bounds.rs`.)
//! - [`Scenario::check_metrics`]: the names. Which metrics a run has is known only to the model,
//!   so every (variant, sweep point) configuration is run for 1 simulated millisecond (its
//!   metrics' *names* depend on the configuration only, not on how long it ran) and every
//!   metric a claim or an alias names must be among them. `hostsim check`, `sweep`,
//!   `reproduce` and Python's `sweep` do this before simulating.

use crate::expect::{extended_selection, Cond, Expect, Reduce, Selector};
use crate::paths::Seg;
use crate::{Scenario, ScenarioError};
use std::collections::BTreeSet;
use toml::{Table, Value};

/// One side of a claim, as its fields and where it is in the file.
struct Side<'a> {
    segs: Vec<Seg>,
    metric: &'a str,
    variant: Option<&'a str>,
    variants: &'a [String],
    at: &'a Table,
    reduce: Option<Reduce>,
    across: Option<Reduce>,
    conds: &'a [Cond],
    x: Option<&'a str>,
}

impl Side<'_> {
    fn extended(&self) -> bool {
        extended_selection(self.variants, self.conds, self.x.is_some(), self.across.is_some(), self.reduce)
    }

    fn key(&self, k: &str) -> Vec<Seg> {
        let mut s = self.segs.clone();
        s.push(Seg::Key(k.into()));
        s
    }
}

fn sides(i: usize, e: &Expect) -> Vec<Side<'_>> {
    let base = vec![Seg::Key("expect".into()), Seg::Index(i)];
    let mut v = vec![Side {
        segs: base.clone(),
        metric: &e.metric,
        variant: e.variant.as_deref(),
        variants: &e.variants,
        at: &e.at,
        reduce: e.reduce,
        across: e.across,
        conds: &e.conds,
        x: e.x.as_deref(),
    }];
    if let Some(r) = &e.rhs {
        let mut segs = base;
        segs.push(Seg::Key("rhs".into()));
        v.push(side_of(segs, r));
    }
    v
}

fn side_of(segs: Vec<Seg>, r: &Selector) -> Side<'_> {
    Side {
        segs,
        metric: &r.metric,
        variant: r.variant.as_deref(),
        variants: &r.variants,
        at: &r.at,
        reduce: r.reduce,
        across: r.across,
        conds: &r.conds,
        x: r.x.as_deref(),
    }
}

/// The (variant, point) combinations of the sweep, in run order (seeds aside).
fn combos(sc: &Scenario) -> Vec<(String, Vec<(String, Value)>)> {
    let seeds = sc.seeds.max(1) as usize;
    (0..sc.run_count())
        .step_by(seeds)
        .filter_map(|i| sc.run_at(i).map(|(v, p, _)| (v.unwrap_or("base").to_string(), p)))
        .collect()
}

fn at_matches(at: &Table, point: &[(String, Value)]) -> bool {
    at.iter().all(|(k, v)| point.iter().any(|(pk, pv)| pk == k && crate::expect::same(pv, v)))
}

fn variant_names(sc: &Scenario) -> Vec<String> {
    if sc.variants.is_empty() {
        vec!["base".into()]
    } else {
        sc.variants.iter().map(|v| v.name.clone()).collect()
    }
}

/// The variants a side evaluates, each with the indices (into `all`) of the combinations it
/// selects.
fn selection(sc: &Scenario, side: &Side, all: &[(String, Vec<(String, Value)>)]) -> Vec<(String, Vec<usize>)> {
    let names: Vec<String> = if !side.variants.is_empty() {
        side.variants.to_vec()
    } else if let Some(v) = side.variant {
        vec![v.to_string()]
    } else if side.extended() {
        variant_names(sc)
    } else {
        // A plain side without `variant` takes the rows of every variant together.
        return vec![(String::new(), (0..all.len()).filter(|&i| at_matches(side.at, &all[i].1)).collect())];
    };
    names
        .into_iter()
        .map(|v| {
            let rows = (0..all.len()).filter(|&i| all[i].0 == v && at_matches(side.at, &all[i].1)).collect();
            (v, rows)
        })
        .collect()
}

/// The structural checks (see the module documentation); part of loading.
pub(crate) fn check_form(sc: &Scenario) -> Result<(), ScenarioError> {
    let at = |segs: Vec<Seg>, msg: String| crate::err_segs(&sc.path, &sc.src, &segs, crate::paths::render(&segs), msg);
    let all = combos(sc);
    let known: Vec<String> = variant_names(sc);
    for (i, e) in sc.expects.iter().enumerate() {
        for side in sides(i, e) {
            for v in side.variants {
                if !known.contains(v) {
                    return Err(at(side.key("variants"), format!("no variant `{v}` (have: {})", known.join(", "))));
                }
            }
            for (k, want) in side.at {
                let Some((_, vals)) = sc.sweep.iter().find(|(sk, _)| sk == k) else { continue };
                if !vals.iter().any(|v| crate::expect::same(v, want)) {
                    let have: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
                    let mut s = side.key("at");
                    s.push(Seg::Key(k.clone()));
                    return Err(at(s, format!("{want} is not one of the swept values of `{k}` ({})", have.join(", "))));
                }
            }
            if matches!(side.reduce, Some(Reduce::LinearR2 | Reduce::OriginR2)) && side.x.is_none() {
                return Err(at(
                    side.key("reduce"),
                    "a fit (linear_r2, origin_r2) needs `x`, the swept key to fit against".into(),
                ));
            }
            for (j, c) in side.conds.iter().enumerate() {
                if c.value.is_none() && c.rhs.is_none() && c.of.is_none() {
                    let mut s = side.key("where");
                    s.push(Seg::Index(j));
                    return Err(at(
                        s,
                        format!("the condition on `{}` needs `value`, `rhs` or `of` (what to compare with)", c.metric),
                    ));
                }
            }
            let sel = selection(sc, &side, &all);
            if side.extended() && sel.len() > 1 && side.across.is_none() {
                return Err(at(
                    side.segs.clone(),
                    format!(
                        "{} variants are selected: say how to combine them with `across` (max, min, mean, spread)",
                        sel.len()
                    ),
                ));
            }
            for (v, rows) in &sel {
                let shown_v = if v.is_empty() { String::new() } else { format!(" of variant `{v}`") };
                if rows.is_empty() {
                    return Err(at(side.segs.clone(), format!("no run{shown_v} matches `at` {}", side.at)));
                }
                let plain = side.reduce.is_none() && (!side.extended() || side.conds.is_empty());
                if plain && rows.len() > 1 {
                    return Err(at(
                        side.segs.clone(),
                        format!(
                            "{} runs{shown_v} match within one seed (variants × sweep points): add `at` coordinates{} or a `reduce`",
                            rows.len(),
                            if v.is_empty() && sc.variants.len() > 1 { ", a `variant`" } else { "" }
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// 1 simulated millisecond: enough for the model to name every metric of a configuration.
const PROBE_NS: u64 = 1_000_000;

impl Scenario {
    /// The metric names (the model's and the `[metrics]` aliases') of `cfg`, from a run of
    /// 1 simulated millisecond.
    fn metric_names(&self, cfg: &hostsim_host::HostConfig) -> Result<BTreeSet<String>, String> {
        let mut c = cfg.clone();
        c.duration_ns = PROBE_NS;
        c.warmup_ns = 0;
        c.sample_interval_ns = c.sample_interval_ns.min(PROBE_NS);
        let out = hostsim_host::try_run_with_progress(c, |_| {}).map_err(|e| e.to_string())?;
        Ok(out.summary.metrics.into_keys().collect())
    }

    /// Check the `[metrics]` aliases against `cfg`'s metrics (what `hostsim run` needs);
    /// `what` names the configuration in messages.
    pub fn check_aliases(&self, cfg: &hostsim_host::HostConfig, what: &str) -> Result<(), ScenarioError> {
        if self.metric_aliases.is_empty() {
            return Ok(());
        }
        let names =
            self.metric_names(cfg).map_err(|m| ScenarioError::new(&self.path, None, "", format!("{what}: {m}")))?;
        self.aliases_against(&names, what).map(|_| ())
    }

    /// `names` with the aliases added (as `derive_metrics` adds them, in order), or the first
    /// alias that cannot be.
    fn aliases_against(&self, names: &BTreeSet<String>, what: &str) -> Result<BTreeSet<String>, ScenarioError> {
        let mut out = names.clone();
        for (alias, from) in &self.metric_aliases {
            let segs = vec![Seg::Key("metrics".into()), Seg::Key(alias.clone())];
            let fail = |msg: String| crate::err_segs(&self.path, &self.src, &segs, crate::paths::render(&segs), msg);
            if names.contains(alias) {
                return Err(fail(format!(
                    "`{alias}` is one of the model's own metrics; an alias may not replace it (choose another name)"
                )));
            }
            if !out.contains(from) {
                return Err(fail(format!("no metric named `{from}` in the results of {what}{}", similar(&out, from))));
            }
            out.insert(alias.clone());
        }
        Ok(out)
    }

    /// Every metric a claim or an alias names exists in the runs it applies to: each (variant,
    /// sweep point) configuration runs for 1 simulated millisecond to learn its metrics' names.
    pub fn check_metrics(&self) -> Result<(), ScenarioError> {
        if self.expects.is_empty() && self.metric_aliases.is_empty() {
            return Ok(());
        }
        let all = combos(self);
        let mut names: Vec<BTreeSet<String>> = Vec::with_capacity(all.len());
        for (v, p) in &all {
            let vopt = if self.variants.is_empty() { None } else { Some(v.as_str()) };
            let cfg = self.config_with(vopt, p)?;
            let what = describe(v, p);
            let base = self
                .metric_names(&cfg)
                .map_err(|m| ScenarioError::new(&self.path, None, "", format!("{what}: {m}")))?;
            names.push(self.aliases_against(&base, &what)?);
        }
        let swept: BTreeSet<&str> = self.sweep.iter().map(|(k, _)| k.as_str()).collect();
        let at = |segs: Vec<Seg>, msg: String| {
            crate::err_segs(&self.path, &self.src, &segs, crate::paths::render(&segs), msg)
        };
        for (i, e) in self.expects.iter().enumerate() {
            for side in sides(i, e) {
                let sel = selection(self, &side, &all);
                // Plain sides read `metric` from the rows; extended ones may also read a swept key.
                let may_be_swept = side.extended();
                let mut wanted: Vec<(Vec<Seg>, &str, bool)> = vec![(side.key("metric"), side.metric, may_be_swept)];
                for (j, c) in side.conds.iter().enumerate() {
                    let mut s = side.key("where");
                    s.push(Seg::Index(j));
                    wanted.push((s.clone(), &c.metric, true));
                    if let Some(r) = &c.rhs {
                        wanted.push((s, r, true));
                    }
                }
                if let Some(x) = side.x {
                    wanted.push((side.key("x"), x, true));
                }
                for (segs, name, swept_ok) in wanted {
                    if swept_ok && swept.contains(name) {
                        continue;
                    }
                    for (_, rows) in &sel {
                        for &k in rows {
                            if !names[k].contains(name) {
                                let hint = similar(&names[k], name);
                                return Err(at(
                                    segs,
                                    format!(
                                        "no metric named `{name}` in the results of {}{hint}",
                                        describe(&all[k].0, &all[k].1)
                                    ),
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// ` (similar: a, b)` for an unknown metric name: those sharing its first word.
fn similar(names: &BTreeSet<String>, name: &str) -> String {
    let stem = name.split('_').next().unwrap_or("");
    let near: Vec<&str> =
        names.iter().filter(|m| !stem.is_empty() && m.contains(stem)).take(8).map(String::as_str).collect();
    if near.is_empty() {
        String::new()
    } else {
        format!(" (similar: {})", near.join(", "))
    }
}

/// `variant `legacy` at traffic.load.rate_pps = 50000`.
fn describe(v: &str, point: &[(String, Value)]) -> String {
    let p: Vec<String> = point.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    if p.is_empty() {
        format!("variant `{v}`")
    } else {
        format!("variant `{v}` at {}", p.join(", "))
    }
}
