//! Library side of the `hostsim` command: running scenarios and sweeps and writing their outputs.
//! The binary (`main.rs`) only parses arguments; tests call these functions directly.

use hostsim_host::{run, RunOutput, Summary};
use hostsim_scenario::{ExpectResult, Row, RunSpec, Scenario};
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
        .map(|(s, sum)| Row { variant: s.variant.clone(), point: s.point.clone(), metrics: sum.metrics.clone() })
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

/// `results.csv`: `variant`, one column per swept key (named by its key path), then metrics.
pub fn results_csv(sc: &Scenario, rows: &[Row]) -> String {
    let keys: Vec<&str> = sc.sweep.iter().map(|(k, _)| k.as_str()).collect();
    let metrics: BTreeSet<&str> = rows.iter().flat_map(|r| r.metrics.keys().map(String::as_str)).collect();
    let mut s = String::from("variant");
    for k in &keys {
        s.push(',');
        s.push_str(k);
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

/// A plain-text table of claims for the terminal.
pub fn claims_table(results: &[ExpectResult]) -> String {
    let mut s = String::new();
    for r in results {
        let verdict = if r.pass { "PASS" } else { "FAIL" };
        let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
        let _ = writeln!(s, "{verdict}  {}  [{}]", r.claim, r.paper);
        let _ = write!(s, "      sim {} {:?} {}", num(r.sim), r.op, num(r.rhs));
        if let Some(e) = &r.error {
            let _ = write!(s, "  ({e})");
        }
        s.push('\n');
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

/// `hostsim reproduce`: sweep every reproducible scenario into `out/<scenario>/results.csv`
/// (with the `scenario.toml` it ran, for the report) and write all verdicts to
/// `out/expectations.json`. The HTML report is [`report::build`]'s.
pub fn reproduce(ids: &[String], jobs: usize, quiet: bool, out: &Path) -> Result<Vec<ExpectResult>, String> {
    let list = reproducible(ids);
    if list.is_empty() {
        return Err(format!("no built-in experiment matches {ids:?} (see `hostsim scenarios`)"));
    }
    let mut all = Vec::new();
    for (i, (name, text)) in list.iter().enumerate() {
        if !quiet {
            eprintln!("[{}/{}] {name}", i + 1, list.len());
        }
        // The file on disk wins (so edits take effect without a rebuild); else the built-in copy.
        let path = Path::new("scenarios").join(format!("{name}.toml"));
        let sc = if path.exists() {
            hostsim_scenario::load(&path, &[])
        } else {
            hostsim_scenario::load_str(&path, text, &[])
        }
        .map_err(|e| e.to_string())?;
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
