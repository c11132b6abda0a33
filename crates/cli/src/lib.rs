//! Library side of the `hostsim` command: running scenarios and sweeps and writing their outputs.
//! The binary (`main.rs`) only parses arguments; tests call these functions directly.

use hostsim_host::{try_run_with_progress, HostConfig, RunOutput, Summary};
use hostsim_scenario::{ExpectResult, Row, RunSpec, Scenario};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

pub mod bench;
pub mod fuzzing;
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

/// The checks every finished run must pass before its numbers are written: each CPU's states sum
/// exactly to the elapsed time; every packet offered is delivered, dropped somewhere, or still in
/// flight; processes are charged no more time than the CPUs ran. A failure is a bug in the model.
pub fn conservation(s: &Summary) -> Result<(), String> {
    for c in &s.cpus {
        let sum = [c.hardirq_ns, c.softirq_ns, c.system_ns, c.user_ns, c.spin_ns, c.idle_ns].iter().fold(0u64, |a, &b| a.saturating_add(b));
        if sum != s.sim_time_ns {
            return Err(format!("CPU {}'s states sum to {sum} ns but {} ns elapsed", c.id, s.sim_time_ns));
        }
    }
    let p = &s.packets;
    let drops: u64 = p.drops.values().fold(0u64, |a, &b| a.saturating_add(b));
    let accounted = p.delivered.saturating_add(drops).saturating_add(p.in_flight);
    if p.offered != accounted {
        return Err(format!("{} packets offered but {} delivered + {drops} dropped + {} in flight", p.offered, p.delivered, p.in_flight));
    }
    let busy: u64 = s.processes.iter().map(|p| p.cpu_ns).fold(0u64, |a, b| a.saturating_add(b));
    let ran: u64 = s.cpus.iter().map(|c| c.system_ns + c.user_ns + c.spin_ns + c.softirq_ns).fold(0u64, |a, b| a.saturating_add(b));
    if busy > ran {
        return Err(format!("processes were charged {busy} ns, more than the CPUs ran ({ran} ns)"));
    }
    Ok(())
}

/// Run one configuration: a stall, a model bug or a failed conservation check is an error (with
/// the seed) instead of a hang, an abort or numbers that cannot be trusted.
pub fn run_checked(cfg: HostConfig) -> Result<RunOutput, String> {
    run_checked_with(cfg, |_| {})
}

/// [`run_checked`] with a progress callback (simulated ns so far).
pub fn run_checked_with(cfg: HostConfig, progress: impl FnMut(u64)) -> Result<RunOutput, String> {
    let seed = cfg.seed;
    let mut progress = progress;
    let out = try_run_with_progress(cfg, |t| progress(t.ns())).map_err(|e| e.to_string())?;
    conservation(&out.summary).map_err(|e| format!("conservation check failed (a bug in hostsim; please report it with the scenario and seed {seed}): {e}"))?;
    Ok(out)
}

/// Run one configuration and time it.
pub fn run_timed(cfg: HostConfig) -> Result<(RunOutput, RunInfo), String> {
    run_timed_with(cfg, |_| {})
}

/// [`run_timed`] with a progress callback (simulated ns so far).
pub fn run_timed_with(cfg: HostConfig, progress: impl FnMut(u64)) -> Result<(RunOutput, RunInfo), String> {
    let seed = cfg.seed;
    let t0 = Instant::now();
    let out = run_checked_with(cfg, progress)?;
    let wall = t0.elapsed().as_secs_f64();
    let info = RunInfo {
        wall_s: wall,
        events: out.events,
        events_per_s: out.events as f64 / wall.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
        seed,
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    Ok((out, info))
}

/// Make sure `dir` exists and a file can be written in it, before any simulation runs.
pub fn prepare_out(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.as_os_str().is_empty() {
        return Err("--out: give a directory".into());
    }
    if dir.exists() && !dir.is_dir() {
        return Err(format!("cannot write to {shown}: it exists and is not a directory"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {shown}: {e}"))?;
    let probe = dir.join(format!(".hostsim-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write to {shown}: {e}"))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Write a file so that a reader (or a killed writer) sees either the old file, or none, or the
/// complete new one: write a temporary file beside it, then rename it into place.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let res = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// `hostsim run`: write summary.json, run.json, timeseries.csv and (with trace) trace.json, each
/// atomically.
pub fn write_run(out: &RunOutput, info: &RunInfo, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    write_atomic(&dir.join("summary.json"), summary_json(&out.summary))?;
    write_atomic(&dir.join("run.json"), serde_json::to_string_pretty(info)? + "\n")?;
    write_atomic(&dir.join("timeseries.csv"), out.timeseries.to_csv())?;
    if let Some(t) = &out.trace {
        write_atomic(&dir.join("trace.json"), t)?;
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

/// A thread pool of `jobs` threads (never more than there are runs): an error, not a panic, when
/// the system refuses the threads.
pub fn pool(jobs: usize, runs: usize) -> Result<rayon::ThreadPool, String> {
    if jobs == 0 {
        return Err("--jobs: expected at least 1".into());
    }
    let n = jobs.min(runs.max(1));
    rayon::ThreadPoolBuilder::new().num_threads(n).build().map_err(|e| format!("cannot start {n} threads for --jobs {jobs}: {e}"))
}

/// Run every point × variant of a scenario on `jobs` threads. Parallel across runs only, so each
/// run's result is independent of thread timing. Shows a progress bar on a terminal. Any run that
/// fails (a stall, a bug, a conservation check) fails the sweep, naming the run.
pub fn sweep(sc: &Scenario, jobs: usize, quiet: bool) -> Result<SweepResult, String> {
    let specs: Vec<RunSpec> = sc.runs().map_err(|e| e.to_string())?;
    let pool = pool(jobs, specs.len())?;
    let pb = if quiet { ProgressBar::hidden() } else { ProgressBar::new(specs.len() as u64) };
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_prefix(sc.name.clone());
    let results: Vec<Result<Summary, String>> = pool.install(|| {
        specs
            .par_iter()
            .map(|s| {
                let mut out = run_checked(s.config.clone()).map_err(|e| format!("{}: run {}: {e}", sc.path.display(), describe_run(s)))?;
                sc.derive_metrics(&mut out.summary.metrics);
                pb.inc(1);
                Ok(out.summary)
            })
            .collect()
    });
    pb.finish_and_clear();
    let summaries = results.into_iter().collect::<Result<Vec<Summary>, String>>()?;
    let rows: Vec<Row> = specs
        .iter()
        .zip(&summaries)
        .map(|(s, sum)| Row { variant: s.variant.clone(), point: s.point.clone(), metrics: sum.metrics.clone() })
        .collect();
    let expectations = sc.evaluate(&rows);
    let csv = results_csv(sc, &rows);
    Ok(SweepResult { rows, summaries, expectations, csv })
}

/// `variant legacy at traffic.load.rate_pps = 50000`.
pub fn describe_run(s: &RunSpec) -> String {
    let point: Vec<String> = s.point.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    if point.is_empty() {
        format!("variant `{}`", s.variant)
    } else {
        format!("variant `{}` at {}", s.variant, point.join(", "))
    }
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
/// Written with the `csv` crate, so a name holding a comma, a quote or a newline is quoted
/// rather than breaking the table.
pub fn results_csv(sc: &Scenario, rows: &[Row]) -> String {
    let keys: Vec<&str> = sc.sweep.iter().map(|(k, _)| k.as_str()).collect();
    let metrics: BTreeSet<&str> = rows.iter().flat_map(|r| r.metrics.keys().map(String::as_str)).collect();
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let header = std::iter::once("variant").chain(keys.iter().copied()).chain(metrics.iter().copied());
    w.write_record(header).expect("writing to memory");
    for r in rows {
        let mut rec: Vec<String> = Vec::with_capacity(1 + keys.len() + metrics.len());
        rec.push(r.variant.clone());
        for k in &keys {
            rec.push(r.point.iter().find(|(pk, _)| pk == k).map_or(String::new(), |(_, v)| fmt_value(v)));
        }
        for m in &metrics {
            rec.push(r.metrics.get(*m).map_or(String::new(), |v| fmt_metric(*v)));
        }
        w.write_record(&rec).expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("CSV of UTF-8 fields is UTF-8")
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
        let res = sweep(&sc, jobs, quiet)?;
        let dir = out.join(name.rsplit('/').next().unwrap_or(name));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let wr = |f: &str, t: &str| write_atomic(&dir.join(f), t).map_err(|e| format!("writing {}: {e}", dir.join(f).display()));
        wr("results.csv", &res.csv)?;
        let text = if path.exists() { std::fs::read_to_string(&path).map_err(|e| e.to_string())? } else { text.to_string() };
        wr("scenario.toml", &text)?;
        all.extend(res.expectations);
    }
    let json = serde_json::to_string_pretty(&all).expect("serialises") + "\n";
    write_atomic(&out.join("expectations.json"), json).map_err(|e| format!("writing {}: {e}", out.join("expectations.json").display()))?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_csv_quotes_what_would_break_a_row() {
        let sc = hostsim_scenario::load_str(
            Path::new("t.toml"),
            "profile = \"ideal-4\"\nduration_ms = 10\n[sweep]\n\"kernel.hz\" = [100]\n",
            &[],
        )
        .unwrap();
        let mut metrics = std::collections::BTreeMap::new();
        metrics.insert("a,b".to_string(), 1.0);
        metrics.insert("line\nbreak".to_string(), 2.5);
        metrics.insert("\"q\"".to_string(), f64::NAN);
        let rows = [Row { variant: "v,1".into(), point: vec![("kernel.hz".into(), toml::Value::Integer(100))], metrics }];
        let csv = results_csv(&sc, &rows);
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let head: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
        assert_eq!(head, ["variant", "kernel.hz", "\"q\"", "a,b", "line\nbreak"]);
        let rec: Vec<Vec<String>> = r.records().map(|x| x.unwrap().iter().map(str::to_string).collect()).collect();
        assert_eq!(rec, [["v,1", "100", "", "1", "2.500000"]]);
    }

    #[test]
    fn conservation_catches_lost_time_and_packets() {
        let sc = hostsim_scenario::load(Path::new("livelock"), &[("duration_ms".into(), "20".into()), ("warmup_ms".into(), "0".into())]).unwrap();
        let good = run_checked(sc.base_config().clone()).unwrap().summary;
        assert!(conservation(&good).is_ok());
        let mut s = good.clone();
        s.cpus[0].idle_ns += 1;
        assert!(conservation(&s).unwrap_err().contains("CPU 0's states sum to"));
        let mut s = good.clone();
        s.packets.offered += 1;
        assert!(conservation(&s).unwrap_err().contains("packets offered"));
    }
}
