//! `[[expect]]`: a paper's claim as a comparison of metrics between sweep points and variants,
//! judged over seeds with a 95% confidence interval.
//!
//! ```toml
//! seeds = 10                        # top level: every point x variant runs with seeds
//!                                   # seed, seed+1, ..., seed+9 (`seed` defaults to 1)
//! [[expect]]
//! claim = "legacy path livelocks: at the highest load it delivers under 20% of its peak"
//! paper = "Mogul & Ramakrishnan 1997, Fig. 6-1"
//! role = "prediction"               # or "calibration": a claim about the BASELINE system that
//!                                   # `hostsim calibrate` may fit parameters to (default: prediction)
//! metric = "delivered_pps"          # left-hand side ...
//! variant = "legacy"
//! at = { "traffic.load.rate_pps" = 400000 }   # ... at this sweep point (or `reduce`)
//! op = "<"                          # <, <=, >, >=, approx
//! rhs = { metric = "delivered_pps", variant = "legacy", reduce = "max" }
//! factor = 0.2                      # right-hand side = factor × rhs (or a literal `value`)
//! finding = "..."                   # optional: what we found about why the model agrees or not
//! applicable = false                # optional: the model cannot test this claim; `finding`
//!                                   # must then say why (the report shows it, no verdict) and
//! untestable = "not_simulated"      # which of the two reasons it is: "no_reference" (the paper
//!                                   # gives nothing to compare with) or "not_simulated" (the model
//!                                   # does not simulate the quantity)
//! ```
//!
//! ## How a claim is judged
//!
//! Both sides are selected **within each seed**: `reduce` (`max`, `mean`, ...) reduces the rows
//! of one seed (several sweep points), never across seeds. A comparison with another variant or
//! point (`rhs`) therefore pairs runs of equal seed (common random numbers), which removes most of
//! the seed-to-seed noise from the difference. Per seed `s` the target is `t_s = factor × rhs_s`
//! (or `factor × value`) and the judged statistic is
//!
//! - `x_s = sim_s − t_s` for `<`, `<=`, `>`, `>=` (the claim holds on the seed if `x_s op 0`);
//! - `x_s = sim_s / t_s − 1` for `approx` (it holds if `|x_s| <= tolerance`, default 0.05).
//!
//! Over the `n` seeds, the mean of `x` and its 95% confidence interval (Student's t with `n − 1`
//! degrees of freedom: `mean ± t(0.975, n−1) · sd / √n`) decide the verdict:
//!
//! - **pass**: the whole interval satisfies the claim (e.g. `hi < 0` for `<`; inside
//!   `[−tolerance, tolerance]` for `approx`);
//! - **fail**: the whole interval violates it;
//! - **inconclusive**: the interval straddles the boundary: the seeds cannot tell (run more).
//!
//! With one seed the interval is the point itself (a deterministic verdict, as before seeds
//! existed). The result also reports the mean of each side with its own interval and `held`, the
//! fraction of seeds on which the claim holds.
//!
//! **No model value.** A claim the model gives no value for on some seed (a side is NaN, e.g. a
//! gap statistic of a run that had no long gap, or no row meets the claim's conditions) fails:
//! the model did not show what the paper states. Its result says so in `no_model_value` (on how
//! many seeds, and why), so that a reader tells a missing model value from a missing reference.
//!
//! **Not applicable** is only for a claim the model cannot test at all, for one of two reasons,
//! which `untestable` names: the paper gives no reference to compare with (`no_reference`), or
//! the quantity is one the model does not simulate (`not_simulated`; the report draws it as
//! absent, never as 0). `applicable = false` needs both `untestable` and a `finding` saying why.
//! Its verdict is `not_applicable` whatever the values; it is counted apart from the judged
//! claims. A value the model does not produce is never a reason: that claim fails (above).
//!
//! **Ranges.** A paper's range ("8-15 %") is written as two claims, one bounding the value from
//! above (`<`, `<=`) and one from below (`>`, `>=`), that share their `claim_id` and `reading`
//! (`finding::check_readings` allows exactly such a pair). They are judged as **one claim**
//! ([`evaluate_claims`]): it passes when both ends pass, fails when either fails, and is
//! inconclusive otherwise; `held` counts the seeds on which both ends hold. The result carries the
//! first end's text (in file order), both ends' results in `ends` (lower end first), and the
//! numbers of the end that decides the verdict (a failing end, else an inconclusive one, else the
//! lower end; the lower end first).
//!
//! `offset` is added to the target after `factor` (e.g. "1 ms longer than at 100 %": `rhs =
//! {...}`, `offset = 1000`). With `tolerance_abs` an `approx` claim is judged on the absolute
//! difference `x_s = sim_s − t_s` (it holds if `|x_s| <= tolerance_abs`) instead of the relative
//! one. `outside` is the negation of `approx`: the values differ by more than the tolerance
//! (pass when the whole interval lies outside `[−tolerance, tolerance]`).
//!
//! ## Conditions, several variants, fits
//!
//! A side may also select rows by condition and combine variants (used by paper 004's maximum
//! throughput: "the highest rate at which throughput ≥ 95 % of the offered rate and response
//! time ≤ 2× its value at the lowest rate"):
//!
//! ```toml
//! metric = "traffic.clients.http.rate_rps"     # a swept key may stand for a metric
//! variants = ["static-20", "static-30"]        # each evaluated alone, then combined by `across`
//! where = [
//!   { metric = "clients_completed_frac", op = ">=", value = 0.95 },
//!   { metric = "clients_resp_ms_mean", op = "<=", factor = 2.0, of = "first" },
//! ]
//! reduce = "max"                               # within a variant, over the rows that qualify
//! across = "max"                               # over the variants: max, min, mean, spread
//! ```
//!
//! Everything is still evaluated within one seed and then judged over seeds as above. A
//! condition compares a row's `metric` with `value`, with another metric of the same row
//! (`rhs`), or with `of` = a reduction of the same metric over the variant's rows (`first` = the
//! first sweep point), each times `factor` (`approx`/`outside` in a condition use 5%).
//! Reductions `linear_r2` and `origin_r2` fit the metric against the swept key `x` (with and
//! without an intercept) and give the fit's R²; `spread` (across variants) is max − min.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;
use toml::{Table, Value};

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "approx")]
    Approx,
    #[serde(rename = "outside")]
    Outside,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    First,
    Last,
    Max,
    Min,
    Mean,
    /// R² of a least-squares line `metric = a + b·x` over the rows (needs `x`).
    LinearR2,
    /// R² of a line through the origin `metric = b·x` (needs `x`): "about proportional".
    OriginR2,
    /// max − min (across variants).
    Spread,
}

/// A condition on a row (`where`): `metric op factor × (value | rhs | of)`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Cond {
    pub metric: String,
    pub op: Op,
    #[serde(default)]
    pub value: Option<f64>,
    /// Another metric of the same row.
    #[serde(default)]
    pub rhs: Option<String>,
    /// The same metric reduced over the variant's rows (e.g. `first`: at the first sweep point).
    #[serde(default)]
    pub of: Option<Reduce>,
    #[serde(default = "one")]
    pub factor: f64,
}

/// What a claim is for. Calibration claims are about the baseline (unmodified) system only and
/// are what `hostsim calibrate` fits a scenario's `[[calibrate]]` parameters to; everything else
/// is a prediction, which nothing may be tuned against.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Calibration,
    #[default]
    Prediction,
}

/// The outcome of a claim (see the module documentation).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Inconclusive,
    NotApplicable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotApplicable => "not_applicable",
        }
    }
}

/// Why a claim cannot be tested (`untestable`, with `applicable = false`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Untestable {
    /// The paper gives nothing to compare with (e.g. background it cites from another work).
    NoReference,
    /// The model does not simulate the quantity (the report draws it as absent, never as 0).
    NotSimulated,
}

/// Which value(s) of a metric: a variant, sweep coordinates, and how to reduce several rows.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    pub metric: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub at: Table,
    #[serde(default)]
    pub reduce: Option<Reduce>,
    /// Several variants, each reduced alone and then combined by `across`.
    #[serde(default)]
    pub variants: Vec<String>,
    #[serde(default)]
    pub across: Option<Reduce>,
    /// Conditions a row must meet to be selected.
    #[serde(default, rename = "where")]
    pub conds: Vec<Cond>,
    /// The swept key fits (`linear_r2`, `origin_r2`) are made against.
    #[serde(default)]
    pub x: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub claim: String,
    /// Where the paper states it (figure/table) and its number, as text.
    #[serde(default)]
    pub paper: String,
    /// The paper's published value, when the claim has one (drawn in the report).
    #[serde(default)]
    pub paper_value: Option<f64>,
    /// `calibration` (about the baseline system; may be fitted to) or `prediction` (default).
    #[serde(default)]
    pub role: Role,
    /// False when the model cannot test the claim; `untestable` says for which reason and
    /// `finding` why.
    #[serde(default = "yes")]
    pub applicable: bool,
    /// With `applicable = false`: no reference, or a quantity the model does not simulate.
    #[serde(default)]
    pub untestable: Option<Untestable>,
    /// What was found about the claim: why the model does not reproduce it, or why it is not
    /// applicable (at most 300 characters and two sentences; numbers as placeholders such as
    /// `{sim}`: see the `finding` module).
    #[serde(default)]
    pub finding: String,
    /// Anything longer than the finding (the report folds it away).
    #[serde(default)]
    pub detail: String,
    /// The `MODEL_SOURCE_ID` the finding's and detail's own numbers were measured on (needed when
    /// they have any); the report marks the finding stale when the model differs.
    #[serde(default)]
    pub finding_model: Option<String>,
    /// The paper sentence this claim reads, shared by its several readings (default: the claim
    /// is its own sentence).
    #[serde(default)]
    pub claim_id: Option<String>,
    /// Which reading of the sentence this claim is (with `claim_id`).
    #[serde(default)]
    pub reading: Option<String>,
    /// The primary reading of its sentence (default); the summary counts the others apart.
    #[serde(default = "yes")]
    pub primary: bool,
    pub metric: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub at: Table,
    #[serde(default)]
    pub reduce: Option<Reduce>,
    /// As in [`Selector`]: several variants, conditions, the x of a fit.
    #[serde(default)]
    pub variants: Vec<String>,
    #[serde(default)]
    pub across: Option<Reduce>,
    #[serde(default, rename = "where")]
    pub conds: Vec<Cond>,
    #[serde(default)]
    pub x: Option<String>,
    pub op: Op,
    #[serde(default)]
    pub value: Option<f64>,
    #[serde(default)]
    pub rhs: Option<Selector>,
    #[serde(default = "one")]
    pub factor: f64,
    /// Added to the target after `factor`.
    #[serde(default)]
    pub offset: f64,
    /// Relative tolerance for `approx` and `outside`.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Absolute tolerance for `approx` and `outside` (instead of `tolerance`).
    #[serde(default)]
    pub tolerance_abs: Option<f64>,
}

fn one() -> f64 {
    1.0
}
fn yes() -> bool {
    true
}

/// One row of results: a variant at a sweep point, run with one seed, with its metrics.
#[derive(Clone, Debug)]
pub struct Row {
    pub variant: String,
    pub point: Vec<(String, Value)>,
    pub seed: u64,
    pub metrics: BTreeMap<String, f64>,
}

/// A 95% confidence interval `[lo, hi]`.
pub type Interval = [f64; 2];

/// The verdict on one claim.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ExpectResult {
    pub scenario: String,
    pub claim: String,
    pub paper: String,
    pub paper_value: Option<f64>,
    pub role: Role,
    pub applicable: bool,
    /// Why the claim cannot be tested (with `applicable = false`).
    pub untestable: Option<Untestable>,
    /// What was found, its placeholders filled from this result.
    pub finding: String,
    /// The longer evidence, its placeholders filled.
    pub detail: String,
    /// The model the finding's own numbers were measured on, if it has any.
    pub finding_model: Option<String>,
    /// `finding_model` is set and differs from the model that computed this result: the
    /// finding's own numbers may be out of date.
    pub finding_stale: bool,
    /// The paper sentence this claim reads (`claim_id`, default the claim itself), the reading's
    /// name, and whether it is the sentence's primary reading.
    pub claim_id: String,
    pub reading: Option<String>,
    pub primary: bool,
    /// Seeds the claim was judged over.
    pub seeds: usize,
    /// The simulated left-hand side: mean over seeds, and its 95% interval.
    pub sim: Option<f64>,
    pub sim_ci: Option<Interval>,
    /// The target it was compared with (after `factor`): mean over seeds, and its interval.
    pub rhs: Option<f64>,
    pub rhs_ci: Option<Interval>,
    pub op: Op,
    pub tolerance: Option<f64>,
    /// True when the target is another selection, compared seed by seed.
    pub paired: bool,
    /// What the verdict is judged on: `sim - target` or `sim / target - 1` (approx).
    pub judged: &'static str,
    pub judged_mean: Option<f64>,
    pub judged_ci: Option<Interval>,
    /// Fraction of seeds on which the claim holds.
    pub held: Option<f64>,
    pub verdict: Verdict,
    /// `verdict == pass`.
    pub pass: bool,
    /// Why the claim could not be evaluated, if it couldn't.
    pub error: Option<String>,
    /// The model gave no value on some seed: on how many and why (the verdict is `fail`).
    pub no_model_value: Option<String>,
    /// A range claim's two ends (lower first), each judged alone; empty for any other claim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ends: Vec<ExpectResult>,
}

pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a.as_float().or(a.as_integer().map(|i| i as f64)), b.as_float().or(b.as_integer().map(|i| i as f64))) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

fn select(
    rows: &[&Row],
    metric: &str,
    variant: Option<&str>,
    at: &Table,
    reduce: Option<Reduce>,
) -> Result<f64, String> {
    let vals: Vec<f64> = rows
        .iter()
        .filter(|r| variant.is_none_or(|v| r.variant == v))
        .filter(|r| at.iter().all(|(k, v)| r.point.iter().any(|(pk, pv)| pk == k && same(pv, v))))
        .map(|r| {
            r.metrics.get(metric).copied().ok_or_else(|| format!("no metric `{metric}` (see summary.json `metrics`)"))
        })
        .collect::<Result<_, _>>()?;
    if vals.is_empty() {
        return Err(format!("no result matches variant {variant:?} at {at}"));
    }
    match reduce {
        None if vals.len() == 1 => Ok(vals[0]),
        None => Err(format!("{} results match within one seed; add `at` coordinates or a `reduce`", vals.len())),
        Some(Reduce::First) => Ok(vals[0]),
        Some(Reduce::Last) => Ok(vals[vals.len() - 1]),
        Some(Reduce::Max) => Ok(vals.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        Some(Reduce::Min) => Ok(vals.iter().copied().fold(f64::INFINITY, f64::min)),
        Some(Reduce::Mean) => Ok(vals.iter().sum::<f64>() / vals.len() as f64),
        Some(r) => reduce_values(&vals, r),
    }
}

/// A metric of a row, or one of its sweep coordinates.
fn value_of(row: &Row, name: &str) -> Result<f64, String> {
    row.metrics
        .get(name)
        .copied()
        .or_else(|| {
            row.point
                .iter()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.as_float().or(v.as_integer().map(|i| i as f64)))
        })
        .ok_or_else(|| format!("no metric or swept key `{name}`"))
}

fn reduce_values(vals: &[f64], r: Reduce) -> Result<f64, String> {
    if vals.is_empty() {
        return Err("no row meets the claim's conditions".into());
    }
    let max = || vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = || vals.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(match r {
        Reduce::First => vals[0],
        Reduce::Last => vals[vals.len() - 1],
        Reduce::Max => max(),
        Reduce::Min => min(),
        Reduce::Mean => vals.iter().sum::<f64>() / vals.len() as f64,
        Reduce::Spread => max() - min(),
        Reduce::LinearR2 | Reduce::OriginR2 => {
            return Err("a fit (linear_r2, origin_r2) needs `x`, the swept key".into())
        }
    })
}

/// R² of `y = a + b·x` (or `y = b·x` with `origin`).
fn r2(pts: &[(f64, f64)], origin: bool) -> Result<f64, String> {
    if pts.len() < 3 {
        return Err(format!("a fit needs at least 3 rows, {} qualify", pts.len()));
    }
    let n = pts.len() as f64;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let (ss_tot, ss_res): (f64, f64) = if origin {
        // Against the same total variation as the free line (centred), so an intercept the
        // line through the origin cannot follow lowers R²: "about proportional", not just linear.
        let b = pts.iter().map(|p| p.0 * p.1).sum::<f64>() / pts.iter().map(|p| p.0 * p.0).sum::<f64>();
        (pts.iter().map(|p| (p.1 - my).powi(2)).sum(), pts.iter().map(|p| (p.1 - b * p.0).powi(2)).sum())
    } else {
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let b = if sxx == 0.0 { 0.0 } else { sxy / sxx };
        (pts.iter().map(|p| (p.1 - my).powi(2)).sum(), pts.iter().map(|p| (p.1 - (my + b * (p.0 - mx))).powi(2)).sum())
    };
    Ok(if ss_tot == 0.0 {
        if ss_res == 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        1.0 - ss_res / ss_tot
    })
}

fn cond_holds(a: f64, op: Op, b: f64) -> bool {
    match op {
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        Op::Approx => (a - b).abs() <= 0.05 * b.abs(),
        Op::Outside => (a - b).abs() > 0.05 * b.abs(),
    }
}

/// Whether a claim side needs more than one row per seed (several variants, conditions, an x
/// axis, a reduction across values or a fit): the rule `Selector::select` and the form checks of
/// `claims.rs` share.
pub(crate) fn extended_selection(
    variants: &[String],
    conds: &[Cond],
    has_x: bool,
    has_across: bool,
    reduce: Option<Reduce>,
) -> bool {
    !variants.is_empty()
        || !conds.is_empty()
        || has_x
        || has_across
        || matches!(reduce, Some(Reduce::LinearR2 | Reduce::OriginR2 | Reduce::Spread))
}

impl Selector {
    fn extended(&self) -> bool {
        extended_selection(&self.variants, &self.conds, self.x.is_some(), self.across.is_some(), self.reduce)
    }

    /// The value of this side within one seed's rows.
    fn select(&self, rows: &[&Row]) -> Result<f64, String> {
        if !self.extended() {
            return select(rows, &self.metric, self.variant.as_deref(), &self.at, self.reduce);
        }
        let names: Vec<String> = if !self.variants.is_empty() {
            self.variants.clone()
        } else if let Some(v) = &self.variant {
            vec![v.clone()]
        } else {
            let mut seen: Vec<String> = Vec::new();
            for r in rows {
                if !seen.contains(&r.variant) {
                    seen.push(r.variant.clone());
                }
            }
            seen
        };
        let mut per_variant = Vec::with_capacity(names.len());
        for v in &names {
            let gs: Vec<&Row> = rows
                .iter()
                .copied()
                .filter(|r| &r.variant == v)
                .filter(|r| self.at.iter().all(|(k, val)| r.point.iter().any(|(pk, pv)| pk == k && same(pv, val))))
                .collect();
            if gs.is_empty() {
                return Err(format!("no result matches variant {v:?} at {}", self.at));
            }
            let mut keep = Vec::new();
            for g in &gs {
                let mut ok = true;
                for c in &self.conds {
                    let a = value_of(g, &c.metric)?;
                    let b = match (c.value, &c.rhs, c.of) {
                        (Some(x), _, _) => x,
                        (None, Some(m), _) => value_of(g, m)?,
                        (None, None, Some(r)) => {
                            let all: Vec<f64> = gs.iter().map(|h| value_of(h, &c.metric)).collect::<Result<_, _>>()?;
                            reduce_values(&all, r)?
                        }
                        (None, None, None) => {
                            return Err(format!("condition on `{}` needs `value`, `rhs` or `of`", c.metric))
                        }
                    };
                    ok &= cond_holds(a, c.op, c.factor * b);
                }
                if ok {
                    keep.push(*g);
                }
            }
            let value = match self.reduce {
                Some(r @ (Reduce::LinearR2 | Reduce::OriginR2)) => {
                    let xk = self.x.as_deref().ok_or("a fit (linear_r2, origin_r2) needs `x`, the swept key")?;
                    let pts: Vec<(f64, f64)> = keep
                        .iter()
                        .map(|g| Ok((value_of(g, xk)?, value_of(g, &self.metric)?)))
                        .collect::<Result<_, String>>()?;
                    r2(&pts, r == Reduce::OriginR2)?
                }
                r => {
                    let vals: Vec<f64> = keep.iter().map(|g| value_of(g, &self.metric)).collect::<Result<_, _>>()?;
                    match r {
                        Some(r) => reduce_values(&vals, r)?,
                        None if vals.len() == 1 => vals[0],
                        None if vals.is_empty() => return Err("no row meets the claim's conditions".into()),
                        None => {
                            return Err(format!("{} results match; add `at` coordinates or a `reduce`", vals.len()))
                        }
                    }
                }
            };
            per_variant.push(value);
        }
        match (per_variant.len(), self.across) {
            (1, None) => Ok(per_variant[0]),
            (_, Some(r)) => reduce_values(&per_variant, r),
            (n, None) => Err(format!("{n} variants: say how to combine them with `across`")),
        }
    }
}

/// Mean and 95% confidence interval of a sample (Student's t). One value: the point itself.
pub fn mean_ci(xs: &[f64]) -> (f64, Interval) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, [mean, mean]);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    if sd == 0.0 || !sd.is_finite() {
        return (mean, [mean, mean]);
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n >= 2 degrees of freedom").inverse_cdf(0.975);
    let half = t * sd / (n as f64).sqrt();
    (mean, [mean - half, mean + half])
}

/// The seeds present in `rows`, ascending.
pub fn seeds_of(rows: &[Row]) -> Vec<u64> {
    let mut s: Vec<u64> = rows.iter().map(|r| r.seed).collect();
    s.sort_unstable();
    s.dedup();
    s
}

impl Expect {
    /// The left-hand side as a selector.
    fn lhs(&self) -> Selector {
        Selector {
            metric: self.metric.clone(),
            variant: self.variant.clone(),
            at: self.at.clone(),
            reduce: self.reduce,
            variants: self.variants.clone(),
            across: self.across,
            conds: self.conds.clone(),
            x: self.x.clone(),
        }
    }

    fn tol(&self) -> f64 {
        self.tolerance_abs.unwrap_or_else(|| self.tolerance.unwrap_or(0.05))
    }

    fn banded(&self) -> bool {
        matches!(self.op, Op::Approx | Op::Outside)
    }

    /// Judged on the relative difference (`approx`/`outside` without `tolerance_abs`).
    fn relative(&self) -> bool {
        self.banded() && self.tolerance_abs.is_none()
    }

    /// Does the claim hold for one judged value `x` (see the module documentation)?
    fn holds(&self, x: f64) -> bool {
        match self.op {
            Op::Lt => x < 0.0,
            Op::Le => x <= 0.0,
            Op::Gt => x > 0.0,
            Op::Ge => x >= 0.0,
            Op::Approx => x.abs() <= self.tol(),
            Op::Outside => x.abs() > self.tol(),
        }
    }

    /// The verdict from the interval of the judged statistic.
    fn judge(&self, [lo, hi]: Interval) -> Verdict {
        let (pass, fail) = match self.op {
            Op::Lt => (hi < 0.0, lo >= 0.0),
            Op::Le => (hi <= 0.0, lo > 0.0),
            Op::Gt => (lo > 0.0, hi <= 0.0),
            Op::Ge => (lo >= 0.0, hi < 0.0),
            Op::Approx => {
                let t = self.tol();
                (lo >= -t && hi <= t, hi < -t || lo > t)
            }
            Op::Outside => {
                let t = self.tol();
                (hi < -t || lo > t, lo >= -t && hi <= t)
            }
        };
        if pass {
            Verdict::Pass
        } else if fail {
            Verdict::Fail
        } else {
            Verdict::Inconclusive
        }
    }

    /// The judged statistic of one seed from its two sides.
    fn judged_value(&self, sim: f64, target: f64) -> f64 {
        if !self.relative() {
            return sim - target;
        }
        if target == 0.0 {
            if sim == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(sim)
            }
        } else {
            sim / target.abs() - target.signum()
        }
    }

    /// Evaluate against a sweep's rows (every seed's), see the module documentation. A range's
    /// end is judged alone here: [`evaluate_claims`] judges the two ends as one claim.
    pub fn evaluate(&self, scenario: &str, rows: &[Row]) -> ExpectResult {
        self.evaluate_seeds(scenario, rows).0
    }

    /// The result and, per seed (ascending), whether the claim holds on it (false where the model
    /// gave no value).
    fn evaluate_seeds(&self, scenario: &str, rows: &[Row]) -> (ExpectResult, Vec<bool>) {
        let seeds = seeds_of(rows);
        let mut r = ExpectResult {
            scenario: scenario.to_string(),
            claim: self.claim.clone(),
            paper: self.paper.clone(),
            paper_value: self.paper_value,
            role: self.role,
            applicable: self.applicable,
            untestable: if self.applicable { None } else { self.untestable },
            finding: String::new(),
            detail: String::new(),
            finding_model: self.finding_model.clone(),
            finding_stale: self.finding_model.as_deref().is_some_and(|m| m != crate::MODEL_SOURCE_ID),
            claim_id: self.claim_id.clone().unwrap_or_else(|| self.claim.clone()),
            reading: self.reading.clone(),
            primary: self.primary,
            seeds: seeds.len(),
            sim: None,
            sim_ci: None,
            rhs: None,
            rhs_ci: None,
            op: self.op,
            tolerance: self.banded().then(|| self.tol()),
            paired: self.rhs.is_some(),
            judged: if self.relative() { "sim / target - 1" } else { "sim - target" },
            judged_mean: None,
            judged_ci: None,
            held: None,
            verdict: Verdict::Fail,
            pass: false,
            error: None,
            no_model_value: None,
            ends: Vec::new(),
        };
        let (mut sims, mut targets, mut xs) = (Vec::new(), Vec::new(), Vec::new());
        let mut holds = vec![false; seeds.len()];
        let mut nan_seeds = 0;
        for (k, &s) in seeds.iter().enumerate() {
            let rs: Vec<&Row> = rows.iter().filter(|r| r.seed == s).collect();
            let lhs = self.lhs().select(&rs);
            let rhs = match (&self.rhs, self.value) {
                (Some(sel), _) => sel.select(&rs).map(|v| v * self.factor + self.offset),
                (None, Some(v)) => Ok(v * self.factor + self.offset),
                (None, None) => Err("neither `value` nor `rhs` given".to_string()),
            };
            match (lhs, rhs) {
                (Ok(a), Ok(b)) => {
                    if a.is_nan() || b.is_nan() {
                        nan_seeds += 1;
                    } else {
                        let x = self.judged_value(a, b);
                        holds[k] = self.holds(x);
                        sims.push(a);
                        targets.push(b);
                        xs.push(x);
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    // The form and the metric names were checked before anything ran
                    // (`claims.rs`): what is left is a value the model did not produce.
                    r.no_model_value = Some(if seeds.len() > 1 { format!("seed {s}: {e}") } else { e.clone() });
                    r.error = Some(if seeds.len() > 1 { format!("seed {s}: {e}") } else { e });
                    break;
                }
            }
        }
        if seeds.is_empty() {
            r.error = Some("no results".into());
            r.no_model_value = Some("no results".into());
        }
        if !sims.is_empty() {
            let (m, ci) = mean_ci(&sims);
            r.sim = Some(m);
            r.sim_ci = Some(ci);
            let (m, ci) = mean_ci(&targets);
            r.rhs = Some(m);
            r.rhs_ci = Some(ci);
            let (m, ci) = mean_ci(&xs);
            r.judged_mean = Some(m);
            r.judged_ci = Some(ci);
        }
        if r.error.is_none() && !seeds.is_empty() {
            let held = xs.iter().filter(|&&x| self.holds(x)).count();
            r.held = Some(held as f64 / seeds.len() as f64);
            r.verdict = if nan_seeds > 0 {
                let why = format!(
                    "undefined (NaN) on {nan_seeds} of {} seeds: the run measured nothing to compute it from (e.g. no gap of that kind, a stalled measurement)",
                    seeds.len()
                );
                r.error = Some(why.clone());
                r.no_model_value = Some(why);
                Verdict::Fail
            } else {
                self.judge(r.judged_ci.expect("set with the values"))
            };
        }
        if !self.applicable {
            r.verdict = Verdict::NotApplicable;
        }
        r.pass = r.verdict == Verdict::Pass;
        let v = crate::finding::Values {
            sim: r.sim,
            sim_ci: r.sim_ci,
            rhs: r.rhs,
            rhs_ci: r.rhs_ci,
            paper_value: r.paper_value,
            judged_mean: r.judged_mean,
            judged_ci: r.judged_ci,
            held: r.held,
            seeds: r.seeds,
            tolerance: r.tolerance,
        };
        r.finding = crate::finding::render(&self.finding, &v);
        r.detail = crate::finding::render(&self.detail, &v);
        (r, holds)
    }

    /// The upper end of a range (`<`, `<=`), else a lower end (`>`, `>=`) or a band.
    pub(crate) fn bounds_from_above(&self) -> bool {
        matches!(self.op, Op::Lt | Op::Le)
    }
}

/// Judge a scenario's claims in order: each alone, except the two ends of a range (the same
/// `claim_id` and `reading`), judged as one claim in the place of its first end (see the module
/// documentation).
pub fn evaluate_claims<'a>(
    expects: impl IntoIterator<Item = &'a Expect>,
    scenario: &str,
    rows: &[Row],
) -> Vec<ExpectResult> {
    let mut out: Vec<(ExpectResult, Vec<bool>, bool)> = Vec::new();
    for e in expects {
        let (r, holds) = e.evaluate_seeds(scenario, rows);
        let upper = e.bounds_from_above();
        match out.iter().position(|(o, _, _)| o.claim_id == r.claim_id && o.reading == r.reading) {
            Some(i) => {
                let (a, ha, a_upper) = out.remove(i);
                out.insert(i, (range(a, ha, a_upper, r, holds, upper), Vec::new(), false));
            }
            None => out.push((r, holds, upper)),
        }
    }
    out.into_iter().map(|(r, _, _)| r).collect()
}

/// One range claim from its two ends' results and per-seed holds (`*_upper`: that end bounds
/// from above).
fn range(a: ExpectResult, ha: Vec<bool>, a_upper: bool, b: ExpectResult, hb: Vec<bool>, b_upper: bool) -> ExpectResult {
    debug_assert!(a_upper != b_upper, "check_readings allows only a lower and an upper end");
    let text = a.claim.clone();
    let (lower, upper) = if b_upper { (a, b) } else { (b, a) };
    let ends = [&lower, &upper];
    let verdict = if ends.iter().any(|e| e.verdict == Verdict::NotApplicable) {
        Verdict::NotApplicable
    } else if ends.iter().any(|e| e.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if ends.iter().any(|e| e.verdict == Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    let decides = if verdict == Verdict::Pass || verdict == Verdict::NotApplicable {
        &lower
    } else {
        ends.iter().copied().find(|e| e.verdict == verdict).unwrap_or(&lower)
    };
    let mut r = decides.clone();
    r.claim = text;
    r.verdict = verdict;
    r.pass = verdict == Verdict::Pass;
    let n = ha.len().max(hb.len());
    r.held = (lower.held.is_some() && upper.held.is_some() && n > 0)
        .then(|| (0..n).filter(|&k| ha.get(k) == Some(&true) && hb.get(k) == Some(&true)).count() as f64 / n as f64);
    let join = |f: fn(&ExpectResult) -> &str| {
        let mut parts: Vec<&str> = Vec::new();
        for e in ends {
            let t = f(e).trim();
            if !t.is_empty() && !parts.contains(&t) {
                parts.push(t);
            }
        }
        parts.join(" ")
    };
    r.finding = join(|e| &e.finding);
    r.detail = join(|e| &e.detail);
    let errors = join(|e| e.error.as_deref().unwrap_or(""));
    r.error = (!errors.is_empty()).then_some(errors);
    let missing = join(|e| e.no_model_value.as_deref().unwrap_or(""));
    r.no_model_value = (!missing.is_empty()).then_some(missing);
    r.finding_stale = lower.finding_stale || upper.finding_stale;
    r.finding_model = lower.finding_model.clone().or_else(|| upper.finding_model.clone());
    r.ends = vec![lower, upper];
    r
}

impl ExpectResult {
    /// The calibration objective's term for this claim (`hostsim calibrate` sums them over the
    /// calibration claims). It is at least 1 exactly when the claim fails on the mean of its
    /// seeds, so the objective counts the calibration claims the fit misses and shapes the
    /// search within each count:
    /// - a met `approx` claim: `0.5 e²` with `e = |sim/target − 1| / tolerance` (< 0.5), so the
    ///   fit aims at the paper's value and not just inside the band;
    /// - a missed `approx` claim: `1 + (e − 1) / e` (1 to 2, growing with the miss);
    /// - a met order claim: 0; a missed one: `1 + d`, `d` = the violation relative to the larger
    ///   of the two sides (0 to 1);
    /// - a met `outside` claim: 0; a missed one: `1 + (t − |e|) / t` (1 to 2);
    /// - a claim without a value: 2;
    /// - a range: the sum of its ends' terms (a met end costs nothing).
    pub fn calibration_loss(&self) -> f64 {
        if !self.ends.is_empty() {
            return self.ends.iter().map(ExpectResult::calibration_loss).sum();
        }
        let (Some(x), None) = (self.judged_mean, &self.error) else {
            return 2.0;
        };
        if !x.is_finite() {
            return 2.0;
        }
        match self.op {
            Op::Approx => {
                let e = x.abs() / self.tolerance.unwrap_or(0.05);
                if e <= 1.0 {
                    0.5 * e * e
                } else {
                    1.0 + (e - 1.0) / e
                }
            }
            // Met when outside the band; a miss: 1 + how far inside it, in units of the band.
            Op::Outside => {
                let t = self.tolerance.unwrap_or(0.05);
                if x.abs() > t {
                    0.0
                } else {
                    1.0 + (t - x.abs()) / t
                }
            }
            op => {
                let holds = match op {
                    Op::Lt => x < 0.0,
                    Op::Le => x <= 0.0,
                    Op::Gt => x > 0.0,
                    _ => x >= 0.0,
                };
                if holds {
                    0.0
                } else {
                    let scale = self.rhs.unwrap_or(0.0).abs().max(self.sim.unwrap_or(0.0).abs()).max(1e-12);
                    1.0 + (x.abs() / scale).min(1.0)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        let mk = |v: &str, x: i64, y: f64| Row {
            variant: v.into(),
            point: vec![("rate".into(), Value::Integer(x))],
            seed: 1,
            metrics: [("m".to_string(), y)].into_iter().collect(),
        };
        vec![mk("a", 1, 10.0), mk("a", 2, 30.0), mk("a", 3, 5.0), mk("b", 3, 25.0)]
    }

    /// Two variants over `n` seeds: a = base + noise, b = base + noise + shift, with the same
    /// noise per seed (common random numbers).
    fn paired(n: u64, shift: f64) -> Vec<Row> {
        let mut out = Vec::new();
        for s in 1..=n {
            let noise = ((s * 7919) % 13) as f64 - 6.0;
            for (v, y) in [("a", 100.0 + noise), ("b", 100.0 + noise + shift)] {
                out.push(Row {
                    variant: v.into(),
                    point: vec![],
                    seed: s,
                    metrics: [("m".to_string(), y)].into_iter().collect(),
                });
            }
        }
        out
    }

    fn ex(src: &str) -> Expect {
        toml::from_str(src).unwrap()
    }

    #[test]
    fn offset_absolute_tolerance_and_outside() {
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=2}\nop='approx'\nrhs={metric='m', variant='a', at={rate=1}}\noffset=19\ntolerance_abs=1.5");
        let r = e.evaluate("s", &rows());
        assert!(r.pass, "{r:?}");
        assert_eq!(r.rhs, Some(29.0));
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=2}\nop='outside'\nvalue=29\ntolerance_abs=0.5");
        assert!(e.evaluate("s", &rows()).pass, "30 is outside 29 ± 0.5");
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=2}\nop='outside'\nvalue=29\ntolerance=0.1");
        assert!(!e.evaluate("s", &rows()).pass, "30 is within 29 ± 10%");
    }

    #[test]
    fn point_vs_reduced_rhs() {
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=3}\nop='<'\nrhs={metric='m', variant='a', reduce='max'}\nfactor=0.2");
        let r = e.evaluate("s", &rows());
        assert!(r.pass, "{r:?}");
        assert_eq!(r.sim, Some(5.0));
        assert_eq!(r.rhs, Some(6.0));
        assert_eq!((r.seeds, r.held, r.verdict), (1, Some(1.0), Verdict::Pass));
        assert_eq!(r.role, Role::Prediction);
    }

    #[test]
    fn ambiguous_selection_is_an_error_not_a_pass() {
        let e = ex("claim='c'\nmetric='m'\nop='>'\nvalue=0");
        let r = e.evaluate("s", &rows());
        assert!(!r.pass);
        assert!(r.error.unwrap().contains("4 results match"));
    }

    fn sweep_rows() -> Vec<Row> {
        // Two variants over x = 1..=5, two seeds; `thr` follows x until a knee.
        let mut rows = Vec::new();
        for (v, knee) in [("a", 3.0), ("b", 4.0)] {
            for x in 1..=5i64 {
                for seed in [1u64, 2] {
                    let xf = x as f64;
                    let thr = if xf <= knee { xf } else { knee * 0.5 };
                    let noise = if seed == 1 { 0.01 } else { -0.01 };
                    rows.push(Row {
                        variant: v.into(),
                        point: vec![("x".into(), Value::Integer(x))],
                        seed,
                        metrics: [("thr".to_string(), thr + noise), ("lin".to_string(), 2.0 * xf + 1.0)]
                            .into_iter()
                            .collect(),
                    });
                }
            }
        }
        rows
    }

    #[test]
    fn where_conditions_find_the_knee_and_variants_combine() {
        let rows = sweep_rows();
        // The highest x at which thr >= 0.95 x, per variant; max over both.
        let e = ex("claim='c'\nmetric='x'\nvariants=['a','b']\nacross='max'\nreduce='max'\nwhere=[{metric='thr', op='>=', rhs='x', factor=0.95}]\nop='approx'\nvalue=4");
        let r = e.evaluate("s", &rows);
        assert!(r.pass, "{r:?}");
        assert_eq!((r.sim, r.seeds), (Some(4.0), 2));
        let a = ex("claim='c'\nmetric='x'\nvariant='a'\nreduce='max'\nwhere=[{metric='thr', op='>=', rhs='x', factor=0.95}]\nop='approx'\nvalue=3");
        assert_eq!(a.evaluate("s", &rows).sim, Some(3.0));
        // `of = first`: relative to the variant's first sweep point.
        let f = ex("claim='c'\nmetric='x'\nvariant='b'\nreduce='max'\nwhere=[{metric='lin', op='<=', factor=3.0, of='first'}]\nop='>='\nvalue=0");
        assert_eq!(f.evaluate("s", &rows).sim, Some(4.0), "lin = 2x+1 <= 3 x 3 = 9 up to x = 4");
        // Nothing qualifies: an error, never a pass.
        let none = ex("claim='c'\nmetric='x'\nvariant='a'\nreduce='max'\nwhere=[{metric='thr', op='>', value=100}]\nop='>='\nvalue=0");
        let r = none.evaluate("s", &rows);
        assert!(!r.pass && r.error.is_some());
    }

    #[test]
    fn fits_and_spread() {
        let rows = sweep_rows();
        let lin = ex("claim='c'\nmetric='lin'\nvariant='a'\nx='x'\nreduce='linear_r2'\nop='>='\nvalue=0.999");
        assert!(lin.evaluate("s", &rows).pass);
        // 2x + 1 is linear but not through the origin: its R² through the origin is lower.
        let orig = ex("claim='c'\nmetric='lin'\nvariant='a'\nx='x'\nreduce='origin_r2'\nop='<'\nvalue=0.99");
        let r = orig.evaluate("s", &rows);
        assert!(r.pass, "{r:?}");
        let spread = ex("claim='c'\nmetric='thr'\nvariants=['a','b']\nat={x=4}\nreduce='mean'\nacross='spread'\nop='approx'\nvalue=2.5");
        let r = spread.evaluate("s", &rows);
        assert!(r.pass, "thr at x=4: a 1.5, b 4.0: {r:?}");
    }

    #[test]
    fn nan_fails() {
        let mut rs = rows();
        rs[0].metrics.insert("m".into(), f64::NAN);
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=1}\nop='approx'\nvalue=10\ntolerance=0.5");
        let r = e.evaluate("s", &rs);
        assert!(!r.pass && r.verdict == Verdict::Fail, "{r:?}");
    }

    #[test]
    fn a_missing_model_value_fails_and_says_so() {
        let mut rs = paired(4, 0.0);
        rs[0].metrics.insert("m".into(), f64::NAN);
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nop='>'\nvalue=0");
        let r = e.evaluate("s", &rs);
        assert_eq!(r.verdict, Verdict::Fail, "{r:?}");
        assert!(r.no_model_value.as_deref().unwrap().starts_with("undefined (NaN) on 1 of 4 seeds"), "{r:?}");
        // No row meeting the conditions is no value either.
        let rows = sweep_rows();
        let none = ex("claim='c'\nmetric='x'\nvariant='a'\nreduce='max'\nwhere=[{metric='thr', op='>', value=100}]\nop='>='\nvalue=0");
        let r = none.evaluate("s", &rows);
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.no_model_value.unwrap().contains("no row meets the claim's conditions"));
        // A value the model gives is never "no model value", whatever the verdict.
        let r = ex("claim='c'\nmetric='m'\nvariant='a'\nop='>'\nvalue=1000").evaluate("s", &paired(4, 0.0));
        assert_eq!((r.verdict, r.no_model_value), (Verdict::Fail, None));
    }

    /// The two ends of "m of b lies within [lo, hi]" (upper end first, as a file may have them).
    fn range_claims(lo: f64, hi: f64) -> Vec<Expect> {
        vec![
            ex(&format!(
                "claim='upper'\nclaim_id='r'\nmetric='m'\nvariant='b'\nop='<='\nvalue={hi}\nfinding='too high'"
            )),
            ex(&format!("claim='lower'\nclaim_id='r'\nmetric='m'\nvariant='b'\nop='>='\nvalue={lo}")),
        ]
    }

    #[test]
    fn a_range_is_one_claim_judged_against_both_ends() {
        // b = 100 + noise (-6..6) + 10 over 10 seeds: about 104 to 116.
        let rs = paired(10, 10.0);
        let one = |lo, hi| {
            let r = evaluate_claims(&range_claims(lo, hi), "s", &rs);
            assert_eq!(r.len(), 1, "two ends, one claim");
            r.into_iter().next().unwrap()
        };
        let r = one(50.0, 200.0);
        assert_eq!((r.verdict, r.held, r.claim.as_str()), (Verdict::Pass, Some(1.0), "upper"));
        assert_eq!(r.ends.iter().map(|e| e.claim.as_str()).collect::<Vec<_>>(), ["lower", "upper"]);
        // The upper end fails: the claim fails, whatever the lower end says; its numbers are the
        // failing end's.
        let r = one(50.0, 60.0);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!((r.op, r.rhs, r.finding.as_str()), (Op::Le, Some(60.0), "too high"));
        assert_eq!(r.ends[0].verdict, Verdict::Pass);
        // Each end holds on some seeds, never both on the same one: held counts seeds where both do.
        let r = one(111.0, 109.0);
        assert_eq!(r.held, Some(0.0), "{r:?}");
        assert!(r.ends.iter().all(|e| e.held.unwrap() > 0.0));
        // An inconclusive end and a passing one: inconclusive.
        assert_eq!(one(50.0, 110.0).verdict, Verdict::Inconclusive);
        // A claim of another sentence or another reading stays apart.
        let mut cs = range_claims(50.0, 200.0);
        cs.push(ex("claim='other'\nmetric='m'\nvariant='b'\nop='>='\nvalue=0"));
        assert_eq!(evaluate_claims(&cs, "s", &rs).len(), 2);
        // Judged alone (as `hostsim calibrate`'s objective sees each claim), the ends are two.
        assert_eq!(
            one(50.0, 60.0).calibration_loss(),
            range_claims(50.0, 60.0)[0].evaluate("s", &rs).calibration_loss()
        );
    }

    #[test]
    fn paired_seeds_see_a_small_shift_through_large_noise() {
        // Noise of +-6 per seed, a shift of 1: unpaired means would overlap, the paired
        // difference is exactly 1 on every seed.
        let e = ex("claim='c'\nmetric='m'\nvariant='b'\nop='>'\nrhs={metric='m', variant='a'}");
        let r = e.evaluate("s", &paired(10, 1.0));
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
        assert_eq!(r.judged_ci, Some([1.0, 1.0]));
        assert!(r.sim_ci.unwrap()[1] - r.sim_ci.unwrap()[0] > 2.0, "the mean itself is noisy: {r:?}");
        assert_eq!((r.seeds, r.held), (10, Some(1.0)));
    }

    #[test]
    fn interval_straddling_the_threshold_is_inconclusive() {
        // a's mean is ~100 with sd ~4: "a > 99" cannot be told apart over 10 seeds.
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nop='>'\nvalue=99");
        let r = e.evaluate("s", &paired(10, 0.0));
        assert_eq!(r.verdict, Verdict::Inconclusive, "{r:?}");
        let [lo, hi] = r.sim_ci.unwrap();
        assert!(lo < 99.0 && hi > 99.0);
        assert!(r.held.unwrap() > 0.0 && r.held.unwrap() < 1.0);
        // ... but far from it, the verdict is clear either way.
        assert_eq!(
            ex("claim='c'\nmetric='m'\nvariant='a'\nop='>'\nvalue=80").evaluate("s", &paired(10, 0.0)).verdict,
            Verdict::Pass
        );
        assert_eq!(
            ex("claim='c'\nmetric='m'\nvariant='a'\nop='>'\nvalue=120").evaluate("s", &paired(10, 0.0)).verdict,
            Verdict::Fail
        );
    }

    #[test]
    fn approx_is_judged_on_the_relative_difference() {
        // b = a x 1.02 on every seed: within 5%, outside 1%.
        let mut rs = paired(5, 0.0);
        for r in rs.iter_mut().filter(|r| r.variant == "b") {
            let v = r.metrics["m"] * 1.02;
            r.metrics.insert("m".into(), v);
        }
        let within = ex("claim='c'\nmetric='m'\nvariant='b'\nop='approx'\nrhs={metric='m', variant='a'}");
        let r = within.evaluate("s", &rs);
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
        assert!((r.judged_mean.unwrap() - 0.02).abs() < 1e-12);
        let tight =
            ex("claim='c'\nmetric='m'\nvariant='b'\nop='approx'\ntolerance=0.01\nrhs={metric='m', variant='a'}");
        assert_eq!(tight.evaluate("s", &rs).verdict, Verdict::Fail);
    }

    #[test]
    fn t_interval_matches_the_textbook() {
        // n = 4, mean 2.5, sd = 1.2910: t(0.975, 3) = 3.1824 -> half width 2.0543.
        let (m, [lo, hi]) = mean_ci(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((hi - m - 2.0543).abs() < 1e-3 && (m - lo - 2.0543).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn not_applicable_keeps_numbers_but_has_no_verdict() {
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=3}\nop='<'\nvalue=1\napplicable=false\nuntestable='not_simulated'\nfinding='why'");
        let r = e.evaluate("s", &rows());
        assert_eq!((r.verdict, r.pass, r.sim), (Verdict::NotApplicable, false, Some(5.0)));
        assert_eq!(r.untestable, Some(Untestable::NotSimulated));
    }

    #[test]
    fn calibration_loss_is_zero_when_met_and_grows_with_the_miss() {
        let rs = rows();
        let at = |v: f64| {
            ex(&format!("claim='c'\nmetric='m'\nvariant='a'\nat={{rate=3}}\nop='approx'\nvalue={v}\ntolerance=0.1\nrole='calibration'"))
        };
        assert_eq!(at(5.0).evaluate("s", &rs).calibration_loss(), 0.0);
        let near = at(5.5).evaluate("s", &rs).calibration_loss();
        let far = at(8.0).evaluate("s", &rs).calibration_loss();
        assert!(near > 0.0 && far > near, "{near} {far}");
        assert!(near < 0.5 && far >= 1.0, "a miss costs at least 1: {near} {far}");
        let order = |v: f64| ex(&format!("claim='c'\nmetric='m'\nvariant='a'\nat={{rate=3}}\nop='<'\nvalue={v}"));
        assert_eq!(order(10.0).evaluate("s", &rs).calibration_loss(), 0.0);
        let l = order(4.0).evaluate("s", &rs).calibration_loss();
        assert!((l - 1.2).abs() < 1e-12, "sim 5 misses < 4 by 1/5: {l}");
        assert_eq!(order(5.0).evaluate("s", &rs).calibration_loss(), 1.0, "the boundary of a strict claim fails");
    }
}
