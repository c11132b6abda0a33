//! The `hostsim` command. See `hostsim --help` and the README.

use clap::{Parser, Subcommand};
use hostsim_cli::{claims_table, out, outln, prepare_out, say, write_run};
use hostsim_scenario::Options;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "hostsim", version, long_version = long_version(), about = "Deterministic simulator of a multi-CPU network server host")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// `hostsim --version`: the version and the model-source id (what a claim's `finding_model`
/// records: crates/scenario/src/finding.rs).
fn long_version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| format!("{} (model source {})", env!("CARGO_PKG_VERSION"), hostsim_scenario::MODEL_SOURCE_ID))
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one scenario (no sweep, no variant unless --variant) and write its outputs.
    Run {
        /// Scenario file, or the name of a built-in scenario (see `hostsim scenarios`).
        file: PathBuf,
        #[arg(long)]
        seed: Option<u64>,
        /// Override a key: `--set kernel.rx_path=napi --set process.sink.nice=-5`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Apply this [[variant]] of the file.
        #[arg(long)]
        variant: Option<String>,
        /// Also write a trace of what every CPU ran, streamed to disk as the run goes
        /// (trace.perfetto-trace, or trace.json with --trace-format json); open it in
        /// ui.perfetto.dev.
        #[arg(long)]
        trace: bool,
        /// Trace file format.
        #[arg(long, value_enum, default_value = "perfetto")]
        trace_format: hostsim_cli::TraceFormat,
        /// Trace only from this simulated time on (ms; implies --trace).
        #[arg(long, value_name = "MS")]
        trace_from: Option<f64>,
        /// Trace only until this simulated time (ms; implies --trace).
        #[arg(long, value_name = "MS")]
        trace_to: Option<f64>,
        #[arg(long)]
        out: PathBuf,
        /// Refuse a scenario whose sweep × variants has more runs than this.
        #[arg(long, value_name = "N", default_value_t = hostsim_scenario::DEFAULT_MAX_RUNS)]
        max_runs: u64,
    },
    /// Run every sweep point × variant into results.csv and evaluate the [[expect]] claims.
    Sweep {
        file: PathBuf,
        /// Parallel runs (default: number of CPUs).
        #[arg(long)]
        jobs: Option<usize>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[arg(long)]
        out: PathBuf,
        /// Refuse a scenario whose sweep × variants has more runs than this.
        #[arg(long, value_name = "N", default_value_t = hostsim_scenario::DEFAULT_MAX_RUNS)]
        max_runs: u64,
    },
    /// Run the built-in experiments that state claims ([[expect]]) and evaluate them: every paper
    /// scenario (or those whose name starts with an ID given) plus the reference examples.
    Reproduce {
        /// Paper IDs (e.g. `ozaki-pbq`) or scenario names; none = all.
        ids: Vec<String>,
        #[arg(long)]
        jobs: Option<usize>,
        #[arg(long)]
        out: PathBuf,
        /// Skip DIR/report/index.html (drawn by the Python package; see scripts/setup.sh).
        #[arg(long)]
        no_report: bool,
        /// Seeds per point × variant for every scenario instead of each scenario's `seeds`.
        #[arg(long)]
        seeds: Option<u32>,
        /// Go on from an interrupted reproduce in DIR: experiments it finished (DIR/reproduce.json,
        /// same configuration, claims, seeds and model) are judged again from their saved rows,
        /// the rest run.
        #[arg(long)]
        resume: bool,
    },
    /// Acceptance check of the claims' verdicts: reproduce every experiment (or those matching
    /// IDs) on two disjoint seed sets and compare every claim's verdict. Exit code 1 if any
    /// verdict differs. Writes DIR/seedcheck.json.
    Seedcheck {
        ids: Vec<String>,
        #[arg(long)]
        jobs: Option<usize>,
        #[arg(long)]
        out: PathBuf,
        /// Seeds per set instead of each scenario's `seeds`.
        #[arg(long)]
        seeds: Option<u32>,
    },
    /// Fit the [[calibrate]] parameters of scenarios sharing one calibration overlay to their
    /// calibration claims (baseline only) and write calibration/NAME.toml. Runs the Python
    /// package (`python -m hostsim.calibration`, scipy.optimize); see `--help` there.
    Calibrate {
        /// Scenario files (they must name the same `calibration` overlay).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Seeds per run (default: each scenario's `seeds`).
        #[arg(long)]
        seeds: Option<u32>,
        /// Sobol points evaluated before refining.
        #[arg(long, default_value_t = 16)]
        trials: u32,
        /// Nelder-Mead evaluations after the Sobol points (0 = none).
        #[arg(long, default_value_t = 24)]
        refine: u32,
        #[arg(long)]
        jobs: Option<usize>,
        /// Run on a Dask cluster: tcp://HOST:PORT, or `local`.
        #[arg(long)]
        dask: Option<String>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// A parameter's starting value (default: its current value).
        #[arg(long = "start", value_name = "NAME=VALUE")]
        starts: Vec<String>,
        /// Print the overlay instead of writing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Validate scenario files; errors name the file, line, key and what was expected.
    Check {
        files: Vec<PathBuf>,
        /// Refuse a scenario whose sweep × variants has more runs than this.
        #[arg(long, value_name = "N", default_value_t = hostsim_scenario::DEFAULT_MAX_RUNS)]
        max_runs: u64,
    },
    /// List the built-in scenarios.
    Scenarios,
    /// Run a mechanism for real on this machine's kernel, in network namespaces it creates and
    /// removes (needs root; see the docs book's `hostsim live` pages).
    Live {
        #[command(subcommand)]
        cmd: hostsim_cli::live::LiveCmd,
    },
    /// A process of a live experiment (started by `hostsim live`, not by hand).
    #[command(hide = true)]
    LiveWorker {
        #[command(subcommand)]
        cmd: hostsim_cli::live::WorkerCmd,
    },
    /// Measure simulation speed and memory (not a test).
    Bench {
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
        /// Short cases, to check the command works.
        #[arg(long)]
        quick: bool,
    },
}

fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>, String> {
    sets.iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("--set `{s}`: expected KEY=VALUE"))
        })
        .collect()
}

/// `--trace-from/--trace-to` (simulated ms) as a window in ns, or None if neither is given.
fn trace_window(from: Option<f64>, to: Option<f64>) -> Result<Option<hostsim_host::TraceWindow>, String> {
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let ns = |ms: f64, key: &str| {
        if ms.is_finite() && (0.0..=1e12).contains(&ms) {
            Ok((ms * 1e6).round() as u64)
        } else {
            Err(format!("--{key} {ms}: expected simulated milliseconds between 0 and 1e12"))
        }
    };
    let from_ns = from.map_or(Ok(0), |m| ns(m, "trace-from"))?;
    let to_ns = to.map_or(Ok(u64::MAX), |m| ns(m, "trace-to"))?;
    if from_ns >= to_ns {
        return Err(format!("--trace-from must be earlier than --trace-to (got {from_ns} ns and {to_ns} ns)"));
    }
    Ok(Some(hostsim_host::TraceWindow { from_ns, to_ns }))
}

fn main() -> ExitCode {
    hostsim_cli::ensure_stdio();
    // A live flag that moved is read under its new name, with a deprecation notice.
    let (args, notices) = hostsim_live::command::rename_flags(std::env::args_os().collect());
    for n in notices {
        say!("warning: {n}");
    }
    match real_main(Cli::parse_from(args)) {
        Ok(code) => code,
        Err(msg) => {
            say!("error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn real_main(cli: Cli) -> Result<ExitCode, String> {
    match cli.cmd {
        Cmd::Run { file, seed, sets, variant, trace, trace_format, trace_from, trace_to, out, max_runs } => {
            let mut sets = parse_sets(&sets)?;
            if let Some(s) = seed {
                sets.push(("seed".into(), s.to_string()));
            }
            prepare_out(&out)?;
            let sc = hostsim_scenario::load_with(&file, &sets, &Options { max_runs }).map_err(|e| e.to_string())?;
            if let Some(w) = sc.stale_calibration() {
                say!("warning: {w}");
            }
            let cfg = match &variant {
                Some(v) => sc.config_with(Some(v), &[]).map_err(|e| e.to_string())?,
                None => sc.base_config().clone(),
            };
            // The [metrics] aliases are checked on this configuration before it runs.
            sc.check_aliases(&cfg, &format!("variant `{}`", variant.as_deref().unwrap_or("base")))
                .map_err(|e| e.to_string())?;
            let window = trace_window(trace_from, trace_to)?;
            let trace = trace || window.is_some();
            // Until every output is written the directory says it is incomplete; an earlier
            // run's outputs that this one may not rewrite (a trace) go first.
            hostsim_cli::outputs::install_signal_cleanup();
            let marker = hostsim_cli::Marker::begin(
                &out,
                &format!(
                    "hostsim run {} -> summary.json, run.json, timeseries.csv{}",
                    file.display(),
                    if trace { ", trace" } else { "" }
                ),
            )?;
            let fail = |e: String| {
                marker.failed(&e);
                e
            };
            hostsim_cli::outputs::remove_stale(&out, &hostsim_cli::RUN_OUTPUTS).map_err(fail)?;
            // Progress in simulated milliseconds, on a terminal only.
            let pb = if std::io::stderr().is_terminal() {
                indicatif::ProgressBar::new(cfg.duration_ns / 1_000_000)
            } else {
                indicatif::ProgressBar::hidden()
            };
            pb.set_style(
                indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} simulated ms, ETA {eta}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            pb.set_prefix(sc.name.clone());
            let res = if trace {
                let window = window.unwrap_or(hostsim_host::TraceWindow::ALL);
                hostsim_cli::run_timed_traced(cfg, trace_format, window, &out, |ns| pb.set_position(ns / 1_000_000))
            } else {
                hostsim_cli::run_timed_with(cfg, |ns| pb.set_position(ns / 1_000_000))
            };
            pb.finish_and_clear();
            let (mut output, info) = res.map_err(fail)?;
            sc.derive_metrics(&mut output.summary.metrics).map_err(fail)?;
            write_run(&output, &info, &out).map_err(fail)?;
            marker.complete()?;
            let m = &output.summary.metrics;
            // A router delivers nothing to its processes: say what it forwarded instead.
            let forwarded = m.get("forwarded_pps").copied().unwrap_or(0.0);
            let fwd = if forwarded > 0.0 { format!(", forwarded {forwarded:.0} pkt/s") } else { String::new() };
            say!(
                "{}: {:.3} s simulated in {:.2} s wall ({:.1} M events/s); delivered {:.0} pkt/s{fwd}, CPU {:.1}% busy -> {}",
                sc.name,
                output.summary.sim_time_ns as f64 * 1e-9,
                info.wall_s,
                info.events_per_s / 1e6,
                m["delivered_pps"],
                m["cpu_util"] * 100.0,
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sweep { file, jobs, sets, out, max_runs } => {
            let sets = parse_sets(&sets)?;
            prepare_out(&out)?;
            let sc = hostsim_scenario::load_with(&file, &sets, &Options { max_runs }).map_err(|e| e.to_string())?;
            if let Some(w) = sc.stale_calibration() {
                say!("warning: {w}");
            }
            sc.check_metrics().map_err(|e| e.to_string())?;
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let quiet = !std::io::stderr().is_terminal();
            let t0 = std::time::Instant::now();
            hostsim_cli::outputs::install_signal_cleanup();
            let res = hostsim_cli::sweep_to_dir(&sc, jobs, quiet, &out, |s| hostsim_cli::run_spec(&sc, s))?;
            say!(
                "{}: {} runs in {:.1} s -> {}",
                sc.name,
                res.rows.len(),
                t0.elapsed().as_secs_f64(),
                out.join("results.csv").display()
            );
            if !res.expectations.is_empty() {
                out!("{}", claims_table(&res.expectations));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Seedcheck { ids, jobs, out, seeds } => {
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let quiet = !std::io::stderr().is_terminal();
            prepare_out(&out)?;
            let checks = hostsim_cli::seed_check(&ids, jobs, quiet, &out, seeds)?;
            out!("{}", hostsim_cli::seed_check_table(&checks));
            let differ = checks.iter().filter(|c| !c.same).count();
            say!(
                "{} claims: {} same verdict on both seed sets, {differ} different -> {}",
                checks.len(),
                checks.len() - differ,
                out.join("seedcheck.json").display()
            );
            Ok(if differ == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Cmd::Reproduce { ids, jobs, out, no_report, seeds, resume } => {
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let quiet = !std::io::stderr().is_terminal();
            let choice = hostsim_cli::SeedChoice { seeds, shift: 0 };
            prepare_out(&out)?;
            hostsim_cli::outputs::install_signal_cleanup();
            let results = hostsim_cli::reproduce_resumable(&ids, jobs, quiet, &out, choice, resume)?;
            out!("{}", claims_table(&results));
            say!(
                "{} claims: {} -> {}",
                results.len(),
                hostsim_cli::tally(&results),
                out.join("expectations.json").display()
            );
            if !no_report {
                match hostsim_cli::report::build(&out)? {
                    Ok(index) => say!("report -> {}", index.display()),
                    Err(why) => say!("report not built: {why}"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Calibrate { files, seeds, trials, refine, jobs, dask, sets, starts, dry_run } => {
            let mut args: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            if let Some(n) = seeds {
                args.extend(["--seeds".into(), n.to_string()]);
            }
            args.extend(["--trials".into(), trials.to_string(), "--refine".into(), refine.to_string()]);
            if let Some(j) = jobs {
                args.extend(["--jobs".into(), j.to_string()]);
            }
            if let Some(d) = dask {
                args.extend(["--dask".into(), d]);
            }
            for s in sets {
                args.extend(["--set".into(), s]);
            }
            for s in starts {
                args.extend(["--start".into(), s]);
            }
            if dry_run {
                args.push("--dry-run".into());
            }
            let code = hostsim_cli::report::calibrate(&args)?;
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        Cmd::Check { files, max_runs } => {
            if files.is_empty() {
                return Err("check: name at least one scenario file".into());
            }
            let mut bad = 0;
            for f in &files {
                match hostsim_scenario::load_with(f, &[], &Options { max_runs })
                    .and_then(|sc| sc.check_metrics().map(|()| sc))
                {
                    Ok(sc) => {
                        let runs = sc.run_count();
                        outln!("{}: ok ({} run{})", f.display(), runs, if runs == 1 { "" } else { "s" });
                        if let Some(w) = sc.stale_calibration() {
                            say!("warning: {w}");
                        }
                    }
                    Err(e) => {
                        say!("{e}");
                        bad += 1;
                    }
                }
            }
            Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Cmd::Scenarios => {
            for (name, text) in hostsim_scenario::builtin_scenarios() {
                let desc = text
                    .parse::<toml::Table>()
                    .ok()
                    .and_then(|t| t.get("description").and_then(|d| d.as_str()).map(str::to_string))
                    .unwrap_or_default();
                outln!("{name:32} {desc}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Live { cmd } => Ok(hostsim_cli::live::main(cmd)),
        Cmd::LiveWorker { cmd } => {
            hostsim_cli::live::worker(cmd).map_err(|e| format!("live-worker: {e}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { json, quick } => {
            let report = hostsim_cli::bench::run_bench(quick, |c| {
                if !json {
                    outln!(
                        "{:16} {:>9.0} offered pkt/s {:>5.1} sim s: {:>7.3} M pkt/s {:>6.2} M events/s {:>7.3} wall s / sim s  peak RSS {:>6.1} MiB",
                        c.name,
                        c.pps,
                        c.sim_s,
                        c.packets_per_s / 1e6,
                        c.events_per_s / 1e6,
                        c.wall_s_per_sim_s,
                        c.peak_rss_bytes as f64 / 1048576.0
                    );
                }
            })?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&report).expect("serialises"));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
