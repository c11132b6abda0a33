//! Library side of the `hostsim` command: running scenarios and sweeps and writing their outputs.
//! The binary (`main.rs`) only parses arguments; tests call these functions directly.

use hostsim_host::{run, RunOutput, Summary};
use hostsim_scenario::{ExpectResult, Role, Row, RunSpec, Scenario, Verdict};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

pub mod bench;
pub mod live;
pub mod report;

/// Wall-clock facts about a run (kept out of `summary.json` so that file is deterministic).
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunInfo {
    pub wall_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub peak_rss_bytes: u64,
    pub seed: u64,
    pub version: String,
}

/// Peak resident set size of this process (VmHWM), 0 where /proc is unavailable.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).map(|kb| kb * 1024)
            })
        })
        .unwrap_or(0)
}

/// Reset the peak-RSS mark (Linux >= 4.0); harmless where unsupported.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Run one configuration and time it.
pub fn run_timed(cfg: hostsim_host::HostConfig) -> (RunOutput, RunInfo) {
    run_timed_with(cfg, |_| {})
}

/// [`run_timed`] with a progress callback (simulated ns so far).
pub fn run_timed_with(cfg: hostsim_host::HostConfig, mut progress: impl FnMut(u64)) -> (RunOutput, RunInfo) {
    let seed = cfg.seed;
    let t0 = Instant::now();
    let out = hostsim_host::run_with_progress(cfg, |t| progress(t.ns()));
    let wall = t0.elapsed().as_secs_f64();
    let info = RunInfo {
        wall_s: wall,
        events: out.events,
        events_per_s: out.events as f64 / wall.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
        seed,
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    (out, info)
}

/// `hostsim run`: write summary.json, run.json, timeseries.csv and (with trace) trace.json.
pub fn write_run(out: &RunOutput, info: &RunInfo, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("summary.json"), summary_json(&out.summary))?;
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(info)? + "\n")?;
    std::fs::write(dir.join("timeseries.csv"), out.timeseries.to_csv())?;
    if let Some(t) = &out.trace {
        std::fs::write(dir.join("trace.json"), t)?;
    }
    Ok(())
}

pub fn summary_json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).expect("summary serialises") + "\n"
}

/// A finished sweep.
pub struct SweepResult {
    pub rows: Vec<Row>,
    pub summaries: Vec<Summary>,
    pub expectations: Vec<ExpectResult>,
    pub csv: String,
}

/// Run every point × variant of a scenario on `jobs` threads. Parallel across runs only, so each
/// run's result is independent of thread timing. Shows a progress bar on a terminal.
pub fn sweep(sc: &Scenario, jobs: usize, quiet: bool) -> Result<SweepResult, hostsim_scenario::ScenarioError> {
    let specs: Vec<RunSpec> = sc.runs()?;
    let pb = if quiet { ProgressBar::hidden() } else { ProgressBar::new(specs.len() as u64) };
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_prefix(sc.name.clone());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs.max(1)).build().expect("thread pool");
    let summaries: Vec<Summary> = pool.install(|| {
        specs
            .par_iter()
            .map(|s| {
                let mut out = run(s.config.clone());
                sc.derive_metrics(&mut out.summary.metrics);
                pb.inc(1);
                out.summary
            })
            .collect()
    });
    pb.finish_and_clear();
    let rows: Vec<Row> = specs
        .iter()
        .zip(&summaries)
        .map(|(s, sum)| Row { variant: s.variant.clone(), point: s.point.clone(), seed: s.seed, metrics: sum.metrics.clone() })
        .collect();
    let expectations = sc.evaluate(&rows);
    let csv = results_csv(sc, &rows);
    Ok(SweepResult { rows, summaries, expectations, csv })
}

fn fmt_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn fmt_metric(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.6}")
    }
}

/// `results.csv`: `variant`, one column per swept key (named by its key path), `seed` (unless it
/// is swept), then metrics.
pub fn results_csv(sc: &Scenario, rows: &[Row]) -> String {
    let keys: Vec<&str> = sc.sweep.iter().map(|(k, _)| k.as_str()).collect();
    let seed_col = !keys.contains(&"seed");
    let metrics: BTreeSet<&str> = rows.iter().flat_map(|r| r.metrics.keys().map(String::as_str)).collect();
    let mut s = String::from("variant");
    for k in &keys {
        s.push(',');
        s.push_str(k);
    }
    if seed_col {
        s.push_str(",seed");
    }
    for m in &metrics {
        s.push(',');
        s.push_str(m);
    }
    s.push('\n');
    for r in rows {
        s.push_str(&r.variant);
        for k in &keys {
            s.push(',');
            if let Some((_, v)) = r.point.iter().find(|(pk, _)| pk == k) {
                s.push_str(&fmt_value(v));
            }
        }
        if seed_col {
            let _ = write!(s, ",{}", r.seed);
        }
        for m in &metrics {
            s.push(',');
            if let Some(v) = r.metrics.get(*m) {
                s.push_str(&fmt_metric(*v));
            }
        }
        s.push('\n');
    }
    s
}

/// A number for the claims table: 4 significant digits, thousands without decimals.
fn num(v: f64) -> String {
    if !v.is_finite() {
        format!("{v}")
    } else if v.abs() >= 1e4 {
        format!("{v:.0}")
    } else {
        let digits = (3 - v.abs().max(1e-12).log10().floor() as i32).clamp(0, 8) as usize;
        format!("{v:.digits$}")
    }
}

/// `mean [lo, hi]` of a side of a claim.
fn with_ci(v: Option<f64>, ci: Option<[f64; 2]>, seeds: usize) -> String {
    match (v, ci) {
        (Some(v), Some([lo, hi])) if seeds > 1 => format!("{} [{}, {}]", num(v), num(lo), num(hi)),
        (Some(v), _) => num(v),
        (None, _) => "-".to_string(),
    }
}

/// A plain-text table of claims for the terminal: calibration claims first, then predictions;
/// each with its verdict, the simulated mean and the target with 95% intervals over the seeds,
/// and the fraction of seeds on which it holds.
pub fn claims_table(results: &[ExpectResult]) -> String {
    let mut s = String::new();
    for role in [Role::Calibration, Role::Prediction] {
        let rs: Vec<&ExpectResult> = results.iter().filter(|r| r.role == role).collect();
        if rs.is_empty() {
            continue;
        }
        let _ = writeln!(s, "== {} claims ==", if role == Role::Calibration { "calibration" } else { "prediction" });
        for r in rs {
            let verdict = match r.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Inconclusive => "INCONCLUSIVE",
                Verdict::NotApplicable => "N/A",
            };
            let _ = writeln!(s, "{verdict}  {}: {}  [{}]", r.scenario, r.claim, r.paper);
            let op = match r.op {
                hostsim_scenario::Op::Lt => "<".to_string(),
                hostsim_scenario::Op::Le => "<=".to_string(),
                hostsim_scenario::Op::Gt => ">".to_string(),
                hostsim_scenario::Op::Ge => ">=".to_string(),
                hostsim_scenario::Op::Approx | hostsim_scenario::Op::Outside => {
                    let sign = if r.op == hostsim_scenario::Op::Approx { "~" } else { "outside" };
                    let t = r.tolerance.unwrap_or(0.05);
                    // An absolute tolerance is judged on `sim - target`, a relative one on the ratio.
                    if r.judged == "sim - target" {
                        format!("{sign}(±{t})")
                    } else {
                        format!("{sign}(±{}%)", t * 100.0)
                    }
                }
            };
            let _ = write!(s, "      sim {} {op} {}", with_ci(r.sim, r.sim_ci, r.seeds), with_ci(r.rhs, r.rhs_ci, r.seeds));
            if r.seeds > 1 {
                if r.paired {
                    let _ = write!(s, "; paired {} = {}", r.judged, with_ci(r.judged_mean, r.judged_ci, r.seeds));
                }
                if let Some(h) = r.held {
                    let _ = write!(s, "; holds on {:.0}% of {} seeds", h * 100.0, r.seeds);
                }
            }
            if let Some(e) = &r.error {
                let _ = write!(s, "  ({e})");
            }
            s.push('\n');
            if !r.finding.is_empty() && r.verdict != Verdict::Pass {
                let _ = writeln!(s, "      finding: {}", r.finding);
            }
        }
    }
    s
}

/// `N pass, M fail, …` over a set of verdicts.
pub fn tally(results: &[ExpectResult]) -> String {
    let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
    let mut s = format!("{} pass, {} fail", count(Verdict::Pass), count(Verdict::Fail));
    for (v, name) in [(Verdict::Inconclusive, "inconclusive"), (Verdict::NotApplicable, "not applicable")] {
        if count(v) > 0 {
            let _ = write!(s, ", {} {name}", count(v));
        }
    }
    s
}

/// The built-in scenarios `reproduce` runs: those with `[[expect]]` claims, except benchmarks,
/// filtered by `ids` (prefix of the scenario name, e.g. `ozaki-pbq`, or its full name).
pub fn reproducible(ids: &[String]) -> Vec<(&'static str, &'static str)> {
    hostsim_scenario::builtin_scenarios()
        .iter()
        .filter(|(name, text)| !name.starts_with("bench/") && text.contains("[[expect]]"))
        .filter(|(name, _)| {
            let short = name.rsplit('/').next().unwrap_or(name);
            ids.is_empty() || ids.iter().any(|id| short.starts_with(id.as_str()) || *name == id.as_str())
        })
        .copied()
        .collect()
}

/// Which seeds `reproduce` runs: each scenario's own (`seed`, `seeds`), or overridden.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeedChoice {
    /// Seeds per point × variant instead of the scenario's `seeds`.
    pub seeds: Option<u32>,
    /// Shift every scenario's first seed by this much (a disjoint seed set for a large enough
    /// shift; see [`seed_check`]).
    pub shift: u64,
}

/// Load a built-in experiment: the file on disk wins (so edits take effect without a rebuild),
/// else the built-in copy; with the seed choice applied.
fn load_experiment(name: &str, text: &str, seeds: SeedChoice) -> Result<(Scenario, std::path::PathBuf), String> {
    let path = Path::new("scenarios").join(format!("{name}.toml"));
    let plain = if path.exists() { hostsim_scenario::load(&path, &[]) } else { hostsim_scenario::load_str(&path, text, &[]) }
        .map_err(|e| e.to_string())?;
    let mut sets = Vec::new();
    if let Some(n) = seeds.seeds {
        sets.push(("seeds".to_string(), n.to_string()));
    }
    if seeds.shift > 0 {
        let base = plain.seed_list().first().copied().unwrap_or(1);
        sets.push(("seed".to_string(), (base + seeds.shift).to_string()));
    }
    if sets.is_empty() {
        return Ok((plain, path));
    }
    let sc = if path.exists() { hostsim_scenario::load(&path, &sets) } else { hostsim_scenario::load_str(&path, text, &sets) }
        .map_err(|e| e.to_string())?;
    Ok((sc, path))
}

/// `hostsim reproduce`: sweep every reproducible scenario into `out/<scenario>/results.csv`
/// (with the `scenario.toml` it ran, for the report) and write all verdicts to
/// `out/expectations.json`. The HTML report is [`report::build`]'s.
pub fn reproduce(ids: &[String], jobs: usize, quiet: bool, out: &Path) -> Result<Vec<ExpectResult>, String> {
    reproduce_with(ids, jobs, quiet, out, SeedChoice::default())
}

/// [`reproduce`] with a choice of seeds.
pub fn reproduce_with(ids: &[String], jobs: usize, quiet: bool, out: &Path, seeds: SeedChoice) -> Result<Vec<ExpectResult>, String> {
    let list = reproducible(ids);
    if list.is_empty() {
        return Err(format!("no built-in experiment matches {ids:?} (see `hostsim scenarios`)"));
    }
    let mut all = Vec::new();
    for (i, (name, text)) in list.iter().enumerate() {
        if !quiet {
            eprintln!("[{}/{}] {name}", i + 1, list.len());
        }
        let (sc, path) = load_experiment(name, text, seeds)?;
        let res = sweep(&sc, jobs, quiet).map_err(|e| e.to_string())?;
        let dir = out.join(name.rsplit('/').next().unwrap_or(name));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("results.csv"), &res.csv).map_err(|e| e.to_string())?;
        let text = if path.exists() { std::fs::read_to_string(&path).map_err(|e| e.to_string())? } else { text.to_string() };
        std::fs::write(dir.join("scenario.toml"), text).map_err(|e| e.to_string())?;
        // Measurements a figure overlays travel with the results (the report reads them there).
        for f in sc.figures.iter().filter_map(|f| f.measured.as_deref()) {
            let src = path.parent().unwrap_or(Path::new(".")).join(f);
            let name = Path::new(f).file_name().map(|n| n.to_os_string()).unwrap_or_default();
            if src.exists() {
                std::fs::copy(&src, dir.join(name)).map_err(|e| format!("{}: {e}", src.display()))?;
            }
        }
        all.extend(res.expectations);
    }
    let json = serde_json::to_string_pretty(&all).expect("serialises") + "\n";
    std::fs::write(out.join("expectations.json"), json).map_err(|e| e.to_string())?;
    Ok(all)
}

/// One claim's verdicts on two disjoint seed sets.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SeedCheck {
    pub scenario: String,
    pub claim: String,
    pub seeds_a: Vec<u64>,
    pub seeds_b: Vec<u64>,
    pub a: ExpectResult,
    pub b: ExpectResult,
    pub same: bool,
}

/// The acceptance check of claims judged over seeds: run every reproducible scenario (matching
/// `ids`) on its own seeds (set A: `seed` .. `seed + seeds - 1`) and on the next, disjoint block
/// (set B: `seed + seeds` ..), and compare every claim's verdict. Writes `out/a`, `out/b` (as
/// `reproduce` does) and `out/seedcheck.json`.
pub fn seed_check(ids: &[String], jobs: usize, quiet: bool, out: &Path, seeds: Option<u32>) -> Result<Vec<SeedCheck>, String> {
    let list = reproducible(ids);
    if list.is_empty() {
        return Err(format!("no built-in experiment matches {ids:?} (see `hostsim scenarios`)"));
    }
    let mut checks = Vec::new();
    for (name, text) in &list {
        let (sc, _) = load_experiment(name, text, SeedChoice { seeds, shift: 0 })?;
        let n = u64::from(sc.seeds);
        let (sb, _) = load_experiment(name, text, SeedChoice { seeds, shift: n })?;
        if !quiet {
            eprintln!("{name}: seeds {:?} vs {:?}", sc.seed_list(), sb.seed_list());
        }
        checks.extend(seed_check_pair(&sc, &sb, jobs, quiet, Some(out))?);
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let json = serde_json::to_string_pretty(&checks).expect("serialises") + "\n";
    std::fs::write(out.join("seedcheck.json"), json).map_err(|e| e.to_string())?;
    Ok(checks)
}

/// Sweep one scenario loaded with two seed sets (`a` and `b`, which must not share a seed) and
/// pair their claims' verdicts; with `out`, write each sweep's results.csv to `out/{a,b}/NAME/`.
pub fn seed_check_pair(a: &Scenario, b: &Scenario, jobs: usize, quiet: bool, out: Option<&Path>) -> Result<Vec<SeedCheck>, String> {
    let (la, lb) = (a.seed_list(), b.seed_list());
    if la.iter().any(|s| lb.contains(s)) {
        return Err(format!("{}: the seed sets {la:?} and {lb:?} overlap", a.name));
    }
    let ra = sweep(a, jobs, quiet).map_err(|e| e.to_string())?;
    let rb = sweep(b, jobs, quiet).map_err(|e| e.to_string())?;
    if let Some(out) = out {
        for (d, r) in [("a", &ra), ("b", &rb)] {
            let dir = out.join(d).join(&a.name);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            std::fs::write(dir.join("results.csv"), &r.csv).map_err(|e| e.to_string())?;
        }
    }
    Ok(ra
        .expectations
        .into_iter()
        .zip(rb.expectations)
        .map(|(x, y)| SeedCheck {
            scenario: x.scenario.clone(),
            claim: x.claim.clone(),
            seeds_a: la.clone(),
            seeds_b: lb.clone(),
            same: x.verdict == y.verdict,
            a: x,
            b: y,
        })
        .collect())
}

/// The seed check as a table: one line per claim with both verdicts.
pub fn seed_check_table(checks: &[SeedCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        let mark = if c.same { "same" } else { "DIFFERENT" };
        let _ = writeln!(
            s,
            "{mark:9}  {:12} {:12}  {}: {}",
            c.a.verdict.as_str(),
            c.b.verdict.as_str(),
            c.scenario,
            c.claim
        );
    }
    s
}
