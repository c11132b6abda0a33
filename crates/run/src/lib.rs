//! # hostsim-run: running the model
//!
//! What the `hostsim` command and the Python package share, and nothing of the command line or
//! the live experiments (so the Python package builds without the BPF toolchain):
//!
//! - one run, checked: [`run_checked`] turns a stall or a model bug into an error naming the seed
//!   and refuses results that fail [`conservation`] (CPU time and packets accounted for); timed
//!   ([`run_timed`]), with a trace streamed to a file ([`run_timed_traced`], `trace_out`) or kept
//!   in memory ([`run_traced_json`]);
//! - a sweep: every point × variant × seed of a scenario on a thread pool ([`sweep`],
//!   [`sweep_to_dir`]), parallel across runs only, and its `results.csv` ([`results_csv`]);
//! - writing outputs so that nothing partial is taken for a result (`outputs`).

use hostsim_host::{try_run_with_progress, HostConfig, RunOutput, Summary};
use hostsim_scenario::{ExpectResult, Row, RunSpec, Scenario};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

/// `eprintln!` that cannot panic: a closed stderr or a reader that went away (EPIPE) loses the
/// line, never the run (`eprintln!` panics on a failed write).
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}

pub mod outputs;
pub mod trace_out;

pub use outputs::{write_atomic, write_atomic_mode, Marker};

/// Wall-clock facts about a run (kept out of `summary.json` so that file is deterministic).
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunInfo {
    pub wall_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub peak_rss_bytes: u64,
    pub seed: u64,
    pub version: String,
    /// With a trace: its file name and the slices written to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_slices: Option<u64>,
}

/// Trace file formats of `hostsim run --trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TraceFormat {
    /// Perfetto's protobuf trace (`trace.perfetto-trace`): compact, loads fast in ui.perfetto.dev.
    Perfetto,
    /// Chrome trace-event JSON (`trace.json`).
    Json,
}

impl TraceFormat {
    pub fn file_name(self) -> &'static str {
        match self {
            TraceFormat::Perfetto => "trace.perfetto-trace",
            TraceFormat::Json => "trace.json",
        }
    }
}

/// Peak resident set size of this process (VmHWM), 0 where /proc is unavailable.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).map(|kb| kb * 1024))
        })
        .unwrap_or(0)
}

/// Reset the peak-RSS mark (Linux >= 4.0); harmless where unsupported.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The checks every finished run must pass before its numbers are written: each CPU's states sum
/// exactly to the elapsed time; every packet offered is delivered to a socket, forwarded (IP
/// routing), consumed by the sending TCP (ACKs) or by connection set-up and tear-down (SYN,
/// handshake ACK, FIN), dropped somewhere, or still in flight; every frame the host sends
/// (forwarded ones included) is delivered, dropped by the device or on its way; TCP bytes
/// written are acknowledged or held; every HTTP request sent is completed or outstanding; processes are charged no more time than the CPUs ran. A
/// failure is a bug in the model.
pub fn conservation(s: &Summary) -> Result<(), String> {
    for c in &s.cpus {
        let sum = [c.hardirq_ns, c.softirq_ns, c.system_ns, c.user_ns, c.spin_ns, c.idle_ns]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b));
        if sum != s.sim_time_ns {
            return Err(format!("CPU {}'s states sum to {sum} ns but {} ns elapsed", c.id, s.sim_time_ns));
        }
    }
    let p = &s.packets;
    let drops: u64 = p.drops.values().fold(0u64, |a, &b| a.saturating_add(b));
    let accounted = [p.delivered, p.forwarded, p.acks_consumed, p.ctrl_consumed, drops, p.in_flight]
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b));
    if p.offered != accounted {
        return Err(format!(
            "{} packets offered but {} delivered + {} forwarded + {} ACKs consumed + {} SYN/FIN consumed + {drops} dropped + {} in flight",
            p.offered, p.delivered, p.forwarded, p.acks_consumed, p.ctrl_consumed, p.in_flight
        ));
    }
    let tx_accounted = p.tx_delivered.saturating_add(p.tx_ring_drops).saturating_add(p.tx_in_flight);
    if p.tx_frames != tx_accounted {
        return Err(format!(
            "{} frames sent but {} delivered + {} device drops + {} in flight",
            p.tx_frames, p.tx_delivered, p.tx_ring_drops, p.tx_in_flight
        ));
    }
    if p.tx_delivered_bytes > p.tx_bytes {
        return Err(format!("{} bytes arrived but {} were sent", p.tx_delivered_bytes, p.tx_bytes));
    }
    if p.tx_in_flight == 0 && p.tx_ring_drops == 0 && p.tx_delivered_bytes != p.tx_bytes {
        return Err(format!(
            "{} bytes sent but {} delivered, none lost or in flight",
            p.tx_bytes, p.tx_delivered_bytes
        ));
    }
    let t = &s.tcp;
    if t.written_bytes != t.acked_bytes.saturating_add(t.unacked_bytes) {
        return Err(format!(
            "TCP: {} bytes written but {} acknowledged + {} held",
            t.written_bytes, t.acked_bytes, t.unacked_bytes
        ));
    }
    if t.sent_bytes < t.acked_bytes {
        return Err(format!("TCP acknowledged {} bytes but sent {}", t.acked_bytes, t.sent_bytes));
    }
    for t in &s.traffic {
        if let Some(h) = t.http {
            if h.sent != h.completed.saturating_add(h.outstanding) {
                return Err(format!(
                    "HTTP source {}: {} requests sent but {} completed + {} outstanding",
                    t.name, h.sent, h.completed, h.outstanding
                ));
            }
        }
    }
    if s.speed_violations != 0 {
        return Err(format!("a speed-regulated process ran outside its slots {} times", s.speed_violations));
    }
    let busy: u64 = s.processes.iter().map(|p| p.cpu_ns).fold(0u64, |a, b| a.saturating_add(b));
    let ran: u64 = s
        .cpus
        .iter()
        .map(|c| c.system_ns + c.user_ns + c.spin_ns + c.softirq_ns)
        .fold(0u64, |a, b| a.saturating_add(b));
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
    conservation(&out.summary).map_err(|e| {
        format!("conservation check failed (a bug in hostsim; please report it with the scenario and seed {seed}): {e}")
    })?;
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
    let info = run_info(&out, t0.elapsed().as_secs_f64(), seed);
    Ok((out, info))
}

fn wrap(mut progress: impl FnMut(u64)) -> impl FnMut(hostsim_engine::Time) {
    move |t| progress(t.ns())
}

fn run_info(out: &RunOutput, wall: f64, seed: u64) -> RunInfo {
    RunInfo {
        wall_s: wall,
        events: out.events,
        events_per_s: out.events as f64 / wall.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
        seed,
        version: env!("CARGO_PKG_VERSION").to_string(),
        trace_file: None,
        trace_slices: None,
    }
}

fn checked(out: Result<RunOutput, hostsim_host::RunError>, seed: u64) -> Result<RunOutput, String> {
    let out = out.map_err(|e| e.to_string())?;
    conservation(&out.summary).map_err(|e| {
        format!("conservation check failed (a bug in hostsim; please report it with the scenario and seed {seed}): {e}")
    })?;
    Ok(out)
}

/// [`run_timed_with`] writing a trace of `window` into `dir` as the run goes (streamed: memory
/// does not grow with the trace). The file is `format.file_name()`, written under a temporary
/// name and renamed when complete (a failed or killed run leaves no half trace under that name).
pub fn run_timed_traced(
    cfg: hostsim_host::HostConfig,
    format: TraceFormat,
    window: hostsim_host::TraceWindow,
    dir: &Path,
    progress: impl FnMut(u64),
) -> Result<(RunOutput, RunInfo), String> {
    let seed = cfg.seed;
    let path = dir.join(format.file_name());
    // Registered: a signal removes it (outputs.rs); dropped on an error, it is removed too.
    let mut tmp = outputs::Temp::create(&path, 0o666).map_err(|e| format!("{}: {e}", path.display()))?;
    let out_buf = std::io::BufWriter::with_capacity(1 << 20, tmp.take_file());
    let t0 = Instant::now();
    let (out, written) = match format {
        TraceFormat::Perfetto => {
            let mut w = trace_out::PerfettoWriter::new(out_buf);
            let out = hostsim_host::try_run_traced(cfg, window, &mut w, wrap(progress));
            (out, w.finish().map(|(_, n)| n))
        }
        TraceFormat::Json => {
            let mut w = trace_out::JsonWriter::new(out_buf);
            let out = hostsim_host::try_run_traced(cfg, window, &mut w, wrap(progress));
            (out, w.finish().map(|(_, n)| n))
        }
    };
    let done = checked(out, seed).and_then(|out| Ok((out, written.map_err(|e| format!("{}: {e}", path.display()))?)));
    let (out, written) = done?;
    tmp.persist(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut info = run_info(&out, t0.elapsed().as_secs_f64(), seed);
    info.trace_file = Some(format.file_name().to_string());
    info.trace_slices = Some(written);
    debug_assert_eq!(written, out.trace_slices, "the writer wrote every slice the model recorded");
    Ok((out, info))
}

/// A run's Chrome JSON trace in memory (small runs: tests, the Python API).
pub fn run_traced_json(cfg: hostsim_host::HostConfig) -> Result<(RunOutput, RunInfo, String), String> {
    let seed = cfg.seed;
    let t0 = Instant::now();
    let mut w = trace_out::JsonWriter::new(Vec::new());
    let out = checked(hostsim_host::try_run_traced(cfg, hostsim_host::TraceWindow::ALL, &mut w, |_| {}), seed)?;
    let (bytes, n) = w.finish().map_err(|e| e.to_string())?;
    let mut info = run_info(&out, t0.elapsed().as_secs_f64(), seed);
    info.trace_slices = Some(n);
    Ok((out, info, String::from_utf8(bytes).map_err(|e| e.to_string())?))
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
    // A few bytes, synced: on a full disk creating an empty file may still succeed.
    let probe = dir.join(format!(".hostsim-probe-{}", std::process::id()));
    let res = std::fs::File::create(&probe).and_then(|mut f| {
        std::io::Write::write_all(&mut f, b"probe: this directory takes files\n").and_then(|()| f.sync_data())
    });
    let _ = std::fs::remove_file(&probe);
    res.map_err(|e| format!("cannot write to {shown}: {e}"))
}

/// [`write_atomic`] with the error as a message naming the file.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    write_atomic(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Every file `hostsim run` may write (a run removes those an earlier run left first).
pub const RUN_OUTPUTS: [&str; 5] = ["summary.json", "run.json", "timeseries.csv", "trace.perfetto-trace", "trace.json"];

/// `hostsim run`: write summary.json, run.json and timeseries.csv, each atomically (a trace is
/// written during the run by [`run_timed_traced`]). An error names the file.
pub fn write_run(out: &RunOutput, info: &RunInfo, dir: &Path) -> Result<(), String> {
    write_file(&dir.join("summary.json"), &summary_json(&out.summary))?;
    write_file(&dir.join("run.json"), &(serde_json::to_string_pretty(info).expect("serialises") + "\n"))?;
    write_file(&dir.join("timeseries.csv"), &out.timeseries.to_csv())
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
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .map_err(|e| format!("cannot start {n} threads for --jobs {jobs}: {e}"))
}

/// Run every point × variant of a scenario on `jobs` threads. Parallel across runs only, so each
/// run's result is independent of thread timing. Shows a progress bar on a terminal. Any run that
/// fails (a stall, a bug, a conservation check) fails the sweep, naming the run (see
/// [`sweep_keep`] for the finished runs of a sweep with failures).
pub fn sweep(sc: &Scenario, jobs: usize, quiet: bool) -> Result<SweepResult, String> {
    let o = sweep_keep(sc, jobs, quiet)?;
    if o.failed.is_empty() {
        Ok(o.done)
    } else {
        Err(o.failed.join("\n"))
    }
}

/// A sweep in which runs may have failed: the finished runs (their rows and results.csv, in run
/// order; claims evaluated only if none failed) and the failures.
pub struct SweepOutcome {
    pub done: SweepResult,
    pub failed: Vec<String>,
}

/// One run of a sweep as `hostsim sweep` runs it: checked, with the scenario's aliases.
pub fn run_spec(sc: &Scenario, s: &RunSpec) -> Result<Summary, String> {
    let mut out =
        run_checked(s.config.clone()).map_err(|e| format!("{}: run {}: {e}", sc.path.display(), describe_run(s)))?;
    sc.derive_metrics(&mut out.summary.metrics)?;
    Ok(out.summary)
}

/// [`sweep`] that runs every run and keeps those that finish when others fail.
pub fn sweep_keep(sc: &Scenario, jobs: usize, quiet: bool) -> Result<SweepOutcome, String> {
    sweep_keep_with(sc, jobs, quiet, |s| run_spec(sc, s))
}

/// [`sweep_keep`] with the function that runs one run (tests give one that fails).
pub fn sweep_keep_with(
    sc: &Scenario,
    jobs: usize,
    quiet: bool,
    run: impl Fn(&RunSpec) -> Result<Summary, String> + Sync,
) -> Result<SweepOutcome, String> {
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
                let r = run(s);
                pb.inc(1);
                r
            })
            .collect()
    });
    pb.finish_and_clear();
    let mut rows = Vec::with_capacity(specs.len());
    let mut summaries = Vec::with_capacity(specs.len());
    let mut failed = Vec::new();
    for (s, r) in specs.iter().zip(results) {
        match r {
            Ok(sum) => {
                rows.push(Row {
                    variant: s.variant.clone(),
                    point: s.point.clone(),
                    seed: s.seed,
                    metrics: sum.metrics.clone(),
                });
                summaries.push(sum);
            }
            Err(e) => failed.push(e),
        }
    }
    // Claims need every run: judged on part of them they would say something else.
    let expectations = if failed.is_empty() { sc.evaluate(&rows) } else { Vec::new() };
    let csv = results_csv(sc, &rows);
    Ok(SweepOutcome { done: SweepResult { rows, summaries, expectations, csv }, failed })
}

/// `hostsim sweep --out DIR`: mark DIR incomplete, remove an earlier sweep's results, sweep,
/// write results.csv (the finished runs, also when others failed) and expectations.json, and
/// remove the mark only when every run finished. `run` runs one run ([`run_spec`]).
pub fn sweep_to_dir(
    sc: &Scenario,
    jobs: usize,
    quiet: bool,
    out: &Path,
    run: impl Fn(&RunSpec) -> Result<Summary, String> + Sync,
) -> Result<SweepResult, String> {
    prepare_out(out)?;
    let marker = Marker::begin(out, &format!("hostsim sweep {} -> results.csv, expectations.json", sc.path.display()))?;
    let res = (|| {
        outputs::remove_stale(out, &["results.csv", "expectations.json"])?;
        let o = sweep_keep_with(sc, jobs, quiet, run)?;
        write_file(&out.join("results.csv"), &o.done.csv)?;
        if !o.failed.is_empty() {
            let total = o.done.rows.len() + o.failed.len();
            return Err(format!(
                "{} of {total} runs failed; results.csv holds the {} that finished, no claims were judged:\n{}",
                o.failed.len(),
                o.done.rows.len(),
                o.failed.join("\n")
            ));
        }
        write_file(
            &out.join("expectations.json"),
            &(serde_json::to_string_pretty(&o.done.expectations).expect("serialises") + "\n"),
        )?;
        Ok(o.done)
    })();
    match res {
        Ok(done) => {
            marker.complete()?;
            Ok(done)
        }
        Err(e) => {
            marker.failed(&e);
            Err(e)
        }
    }
}

/// `variant `legacy` at traffic.load.rate_pps = 50000, seed 3`.
pub fn describe_run(s: &RunSpec) -> String {
    let point: Vec<String> = s.point.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    if point.is_empty() {
        format!("variant `{}`, seed {}", s.variant, s.seed)
    } else {
        format!("variant `{}` at {}, seed {}", s.variant, point.join(", "), s.seed)
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

/// `results.csv`: `variant`, one column per swept key (named by its key path), `seed` (unless it
/// is swept), then metrics. Written with the `csv` crate, so a name holding a comma, a quote or
/// a newline is quoted rather than breaking the table.
pub fn results_csv(sc: &Scenario, rows: &[Row]) -> String {
    let keys: Vec<&str> = sc.sweep.iter().map(|(k, _)| k.as_str()).collect();
    let seed_col = !keys.contains(&"seed");
    let metrics: BTreeSet<&str> = rows.iter().flat_map(|r| r.metrics.keys().map(String::as_str)).collect();
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let seed_head = if seed_col { Some("seed") } else { None };
    let header = std::iter::once("variant").chain(keys.iter().copied()).chain(seed_head).chain(metrics.iter().copied());
    w.write_record(header).expect("writing to memory");
    for r in rows {
        let mut rec: Vec<String> = Vec::with_capacity(2 + keys.len() + metrics.len());
        rec.push(r.variant.clone());
        for k in &keys {
            rec.push(r.point.iter().find(|(pk, _)| pk == k).map_or(String::new(), |(_, v)| fmt_value(v)));
        }
        if seed_col {
            rec.push(r.seed.to_string());
        }
        for m in &metrics {
            rec.push(r.metrics.get(*m).map_or(String::new(), |v| fmt_metric(*v)));
        }
        w.write_record(&rec).expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("CSV of UTF-8 fields is UTF-8")
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
        let rows = [Row {
            variant: "v,1".into(),
            point: vec![("kernel.hz".into(), toml::Value::Integer(100))],
            seed: 1,
            metrics,
        }];
        let csv = results_csv(&sc, &rows);
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let head: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
        assert_eq!(head, ["variant", "kernel.hz", "seed", "\"q\"", "a,b", "line\nbreak"]);
        let rec: Vec<Vec<String>> = r.records().map(|x| x.unwrap().iter().map(str::to_string).collect()).collect();
        assert_eq!(rec, [["v,1", "100", "1", "", "1", "2.500000"]]);
    }

    #[test]
    fn conservation_catches_lost_time_and_packets() {
        let sc = hostsim_scenario::load(
            Path::new("livelock"),
            &[("duration_ms".into(), "20".into()), ("warmup_ms".into(), "0".into())],
        )
        .unwrap();
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
