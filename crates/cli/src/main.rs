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
    /// removes (needs root; see the README's `hostsim live` section).
    Live {
        #[command(subcommand)]
        cmd: LiveCmd,
    },
    /// A process of a live experiment (started by `hostsim live`, not by hand).
    #[command(hide = true)]
    LiveWorker {
        #[command(subcommand)]
        cmd: WorkerCmd,
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

#[derive(Subcommand)]
enum LiveCmd {
    /// Paper 000's Fig. 5 on this kernel: a nice -19 UDP counter under a nice 19 flood from a
    /// kernel-side paced generator, flood rate swept past the receiver's capacity, the XDP
    /// priority drop off and on at the same offered load, two placements of the receive work,
    /// 3 repetitions. Writes DIR/results.csv (the model's metric names) and DIR/run.json.
    #[command(name = "ozaki-pbq")]
    OzakiPbq {
        #[arg(long)]
        out: PathBuf,
        /// The short run of the tests: one flood past capacity, RPS placement, off then on, 0.6 s.
        #[arg(long)]
        quick: bool,
        /// Repetitions of the whole sweep (default 3).
        #[arg(long)]
        reps: Option<u32>,
        /// Flood rates, pkt/s, comma-separated (default 200000,500000,800000,1000000).
        #[arg(long, value_delimiter = ',')]
        rates: Option<Vec<f64>>,
        /// Measurement window per point, seconds (default 2).
        #[arg(long)]
        window_s: Option<f64>,
        /// The bw client's rate, pkt/s (default 34000, as the paper).
        #[arg(long)]
        bw_rate: Option<f64>,
        /// Variants to run: `off` (count only), `on` (priority drop), `supp` (interrupt
        /// suppression), `both` (default all four; `supp` and `both` only in `threaded`).
        #[arg(long, value_delimiter = ',')]
        modes: Option<Vec<String>>,
        /// Interrupt suppression's knob: `affinity` (the NAPI kthreads moved off the server's
        /// CPU; default), `priority` (SCHED_FIFO to SCHED_OTHER) or `both`.
        #[arg(long)]
        supp_knob: Option<String>,
        /// Where the server veths' receive work runs: `rps` (NAPI on the generator's CPU, RPS
        /// to the server's), `threaded` (NAPI kthreads on the server's CPU at SCHED_FIFO), or
        /// both (default `rps,threaded`).
        #[arg(long, value_delimiter = ',')]
        placements: Option<Vec<String>>,
        /// The receiver's capacity for the detector, pkt/s (default: measured on the `off` points).
        #[arg(long)]
        capacity_pps: Option<f64>,
        /// Where ports' priorities come from: `hooks` (the program's bind hooks on a cgroup2
        /// group the sinks join; default) or `proc` (the agent's scan of /proc, the fallback).
        #[arg(long, default_value = "hooks")]
        ports: String,
        /// The server sockets' receive limit, bytes (default: this machine's rmem_default;
        /// 65535 is Linux 2.4's, as in the paper).
        #[arg(long)]
        rcvbuf: Option<u32>,
        /// Frames per batch the generator hands a server veth's 256-frame ring (default 32).
        #[arg(long)]
        gen_batch: Option<u32>,
        /// The flood stream's quantum, microseconds of its frames per call (default 1000; bw's
        /// stays 1000).
        #[arg(long)]
        gen_quantum_us: Option<f64>,
        /// Spread each of the flood's calls evenly over this fraction of its quantum (0, the
        /// default: its frames back to back in 32-frame batches; at most 0.95). The generator's
        /// CPU spins for the frames' slots.
        #[arg(long)]
        gen_spread: Option<f64>,
        /// bw's EEVDF slice, microseconds (default 100, the shortest the kernel grants, so that
        /// its wake-up preempts its CPU's other tasks; 0 = the kernel's base slice).
        #[arg(long)]
        bw_slice_us: Option<u32>,
    },
    /// Paper 002's Fig. 1-3 and Table 1 on this kernel: a bulk TCP sender (1 MB in 1024 and
    /// 2048 B writes) over a 100 Mbit/s shaped veth, its speed regulated by a SCHED_FIFO slot
    /// regulator (n of 1000 1-ms slots, cgroup.freeze); the receiver's kernel timestamps every
    /// frame. Writes DIR/results.csv (the model's metric names), DIR/frames/ and DIR/run.json.
    #[command(name = "tabata-speed")]
    TabataSpeed {
        #[arg(long)]
        out: PathBuf,
        /// The short run of the tests: 1024 B units, unregulated, 100 % and 20 %, once.
        #[arg(long)]
        quick: bool,
        /// Repetitions of the whole sweep (default 3).
        #[arg(long)]
        reps: Option<u32>,
        /// Regulated speeds, percent, comma-separated (default 10,20,...,100).
        #[arg(long, value_delimiter = ',')]
        speeds: Option<Vec<u32>>,
        /// send() units, bytes, comma-separated (default 1024,2048).
        #[arg(long, value_delimiter = ',')]
        units: Option<Vec<usize>>,
        /// SO_SNDBUF given to the sender, bytes (default 2304, Linux's smallest: the kernel
        /// doubles it to 4608).
        #[arg(long)]
        sndbuf: Option<i32>,
        /// How the regulator stops the sender: `freeze` (cgroup v2, default) or `signal`
        /// (SIGSTOP/SIGCONT).
        #[arg(long)]
        gate: Option<String>,
        /// Skip the unregulated baseline.
        #[arg(long)]
        no_off: bool,
    },
    /// Paper 003's Fig. 4 on this kernel: a router namespace forwarding 64-byte UDP frames from
    /// a paced kernel-side generator to a checksum-checking sink, input rate swept past
    /// saturation, the kernel's forwarding on one CPU and on two (RPS), and the functional split
    /// (XDP driver half on one CPU, cpumap IP half on the other), and the paper's own design
    /// (AF_XDP: a driver thread and an IP thread exchanging buffers in bulk every 5 ms), 3 repetitions. Writes
    /// DIR/results.csv (the model's metric names) and DIR/run.json.
    #[command(name = "takeuchi-symbiose")]
    TakeuchiSymbiose {
        #[arg(long)]
        out: PathBuf,
        /// The short run of the tests: every variant at 50,000 pkt/s, 1 s, once.
        #[arg(long)]
        quick: bool,
        /// Repetitions of the whole sweep (default 3).
        #[arg(long)]
        reps: Option<u32>,
        /// Input rates, pkt/s, comma-separated (default 100000 to 1000000 in steps of 100000, and 1200000).
        #[arg(long, value_delimiter = ',')]
        rates: Option<Vec<f64>>,
        /// Variants: kernel-1cpu, kernel-rps, split-cpumap, split-afxdp (default all four).
        #[arg(long, value_delimiter = ',')]
        variants: Option<Vec<String>>,
        /// Measurement window per point, seconds (default 2).
        #[arg(long)]
        window_s: Option<f64>,
        /// split-afxdp: the driver and IP threads' exchange period, ms (default 5, the paper's).
        #[arg(long)]
        period_ms: Option<f64>,
    },
    /// Paper 001's Fig. 2 on this kernel, without RFS: N bulk TCP senders to N readers over a
    /// veth, unpinned on every CPU; the readers' wake-ups recorded from the scheduler's
    /// tracepoints (waking CPU, previous CPU, chosen CPU) and classified as the model's goda-rfs
    /// metrics. Writes DIR/results.csv (the model's metric names) and DIR/run.json.
    #[command(name = "goda-wakeups")]
    GodaWakeups {
        #[arg(long)]
        out: PathBuf,
        /// The short run of the tests: 2 flows, 0.5 s warm-up, 1 s window, once.
        #[arg(long)]
        quick: bool,
        /// Repetitions of the whole sweep (default 3).
        #[arg(long)]
        reps: Option<u32>,
        /// Flow counts, comma-separated (default 1,2,4,8).
        #[arg(long, value_delimiter = ',')]
        flows: Option<Vec<u32>>,
        /// Measurement window per point, seconds (default 3).
        #[arg(long)]
        window_s: Option<f64>,
        /// Warm-up before each window, seconds (default 1).
        #[arg(long)]
        warmup_s: Option<f64>,
        /// All flows' rate together, Mbit/s (default 400): each sender paces at rate / flows.
        #[arg(long)]
        rate_mbit: Option<f64>,
    },
    /// Paper 004's Figs. 7-10 on this kernel: a real HTTP/1.1 accelerator (listen, I/O and
    /// retrieve threads; the Fig. 5 loop) under open-loop clients with an origin, request rate
    /// swept past saturation, interval control none / static / dynamic, with and without
    /// SCHED_FIFO and with 2.5's tick-quantised sleep, 3 repetitions. Writes DIR/results.csv
    /// (the model's metric names) and DIR/run.json.
    #[command(name = "kawai-interval")]
    KawaiInterval {
        #[arg(long)]
        out: PathBuf,
        /// The short run of the tests: static 20 ms, 300 req/s over 200 connections, 1.5 s.
        #[arg(long)]
        quick: bool,
        /// Repetitions of the whole sweep (default 3).
        #[arg(long)]
        reps: Option<u32>,
        /// Request rates, req/s, comma-separated.
        #[arg(long, value_delimiter = ',')]
        rates: Option<Vec<f64>>,
        /// Variants, comma-separated (none, none-fifo, static-N[-nofifo|-hzH], dynamic-Kx[-nofifo|-hzH]).
        #[arg(long, value_delimiter = ',')]
        variants: Option<Vec<String>>,
        /// Measurement window per point, seconds (default 3).
        #[arg(long)]
        window_s: Option<f64>,
        /// Client connections held open (default 6000).
        #[arg(long)]
        conns: Option<u32>,
        /// Accelerator-to-origin connections (default 1000).
        #[arg(long)]
        origin_conns: Option<u32>,
        /// No idle soaker on the accelerator's CPU.
        #[arg(long)]
        no_soak: bool,
    },
    /// The ozaki-pbq agent on an existing interface: attaches the priority-drop XDP program to
    /// IFACE (refusing one that already has an XDP program), gives ports the priority of the
    /// servers that bind them (bind hooks on a cgroup2 group it creates, or `--ports proc`),
    /// counts only unless `--drop`, prints what it protects and the detector's state, and
    /// detaches everything on exit and on SIGINT, SIGTERM, SIGHUP and SIGQUIT.
    Pbq {
        /// The interface to attach to.
        #[arg(long)]
        dev: String,
        /// The network namespace (a name under /run/netns) the interface is in (default: this
        /// process's).
        #[arg(long)]
        netns: Option<String>,
        /// Shed low priorities under high load (default: count only, never drop).
        #[arg(long)]
        drop: bool,
        /// XDP mode: `native` (the driver's), `generic` (after the skb is built) or `auto`
        /// (default: native where the driver supports it).
        #[arg(long, default_value = "auto")]
        mode: String,
        /// Where ports' priorities come from: `hooks` (bind hooks on a cgroup2 group the agent
        /// creates; default) or `proc` (a scan of /proc, for servers already running).
        #[arg(long, default_value = "hooks")]
        ports: String,
        /// The receiver's capacity, pkt/s: arrivals at 90% of it start high load (default:
        /// only drops at a top-priority socket do).
        #[arg(long)]
        capacity_pps: Option<f64>,
        /// Stop after this many seconds (default: run until a stop signal).
        #[arg(long)]
        duration: Option<f64>,
        /// Seconds between two prints of the state (default 1).
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
    },
    /// Delete what runs killed with SIGKILL left behind (namespaces named hsl-<dead pid>-*).
    Clean,
}

#[derive(Subcommand)]
enum WorkerCmd {
    Sink {
        #[arg(long)]
        port: u16,
        #[arg(long)]
        secs: f64,
        /// Also count datagrams whose sequence number (first 8 payload bytes, little-endian)
        /// is at least this ...
        #[arg(long, requires = "seq_hi")]
        seq_lo: Option<u64>,
        /// ... and below this.
        #[arg(long, requires = "seq_lo")]
        seq_hi: Option<u64>,
        /// SO_RCVBUF, bytes, set before bind (the kernel doubles it); default: rmem_default.
        #[arg(long)]
        rcvbuf: Option<i32>,
    },
    KawaiAccel {
        #[arg(long)]
        variant: String,
        #[arg(long, default_value_t = 80)]
        port: u16,
        #[arg(long)]
        origin: std::net::Ipv4Addr,
        #[arg(long, default_value_t = 3128)]
        origin_port: u16,
        #[arg(long)]
        origin_conns: u32,
        #[arg(long)]
        secs: f64,
    },
    KawaiOrigin {
        #[arg(long, default_value_t = 3128)]
        port: u16,
        #[arg(long)]
        think_ms_mean: f64,
        #[arg(long)]
        think_ms_sd: f64,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        secs: f64,
    },
    KawaiClients {
        #[arg(long)]
        dst: std::net::Ipv4Addr,
        #[arg(long, default_value_t = 80)]
        port: u16,
        #[arg(long)]
        conns: u32,
        #[arg(long)]
        rate_rps: f64,
        #[arg(long)]
        hit_ratio: f64,
        #[arg(long, default_value_t = 1000)]
        ramp_ms: u64,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        secs: f64,
    },
    KawaiSoak {
        #[arg(long)]
        secs: f64,
    },
    Send {
        #[arg(long)]
        dst: std::net::Ipv4Addr,
        #[arg(long, value_delimiter = ',')]
        ports: Vec<u16>,
        #[arg(long)]
        rate_pps: f64,
        #[arg(long, default_value_t = 18)]
        payload: usize,
        #[arg(long)]
        secs: f64,
        #[arg(long, default_value_t = 32)]
        batch: usize,
    },
    TcpSink {
        #[arg(long)]
        port: u16,
        #[arg(long)]
        secs: f64,
    },
    TcpSend {
        #[arg(long)]
        dst: std::net::Ipv4Addr,
        #[arg(long)]
        port: u16,
        #[arg(long)]
        unit: usize,
        #[arg(long)]
        total: usize,
        #[arg(long)]
        sndbuf: i32,
        #[arg(long)]
        start_ns: u64,
        #[arg(long)]
        secs: f64,
        /// SO_MAX_PACING_RATE, bytes/s (TCP's own pacing; default: none).
        #[arg(long)]
        pacing: Option<u64>,
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

/// A live run's outcome as an exit code: 0, 1 (failed), 2 (this machine cannot run it: the
/// tests skip on it, saying why), 128 + N (stopped by signal N, everything removed).
fn live_exit(r: Result<(), hostsim_live::harness::LiveError>) -> Result<ExitCode, String> {
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            hostsim_live::harness::progress(format!("hostsim live: {e}"));
            Ok(ExitCode::from(e.exit_code()))
        }
    }
}

fn main() -> ExitCode {
    hostsim_cli::ensure_stdio();
    match real_main(Cli::parse()) {
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
        Cmd::Live { cmd } => match cmd {
            LiveCmd::OzakiPbq {
                out,
                quick,
                reps,
                rates,
                window_s,
                bw_rate,
                modes,
                supp_knob,
                placements,
                capacity_pps,
                ports,
                rcvbuf,
                gen_batch,
                gen_quantum_us,
                gen_spread,
                bw_slice_us,
            } => {
                let hooks = match ports.as_str() {
                    "hooks" => true,
                    "proc" => false,
                    p => return Err(format!("--ports: `{p}`, expected `hooks` or `proc`")),
                };
                let placements = match placements {
                    None => None,
                    Some(v) => Some(
                        v.iter()
                            .map(|p| {
                                hostsim_live::ozaki::RxPlacement::parse(p)
                                    .ok_or_else(|| format!("--placements: `{p}`, expected `rps` or `threaded`"))
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                    ),
                };
                let modes = match modes {
                    None => None,
                    Some(v) => Some(
                        v.iter()
                            .map(|m| {
                                hostsim_live::ozaki::Variant::parse(m)
                                    .ok_or_else(|| format!("--modes: `{m}`, expected `off`, `on`, `supp` or `both`"))
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                    ),
                };
                let supp_knob = match supp_knob {
                    None => None,
                    Some(k) => Some(
                        hostsim_live::suppress::Knob::parse(&k)
                            .ok_or_else(|| format!("--supp-knob: `{k}`, expected `affinity`, `priority` or `both`"))?,
                    ),
                };
                let o = hostsim_cli::live::OzakiOptions {
                    quick,
                    reps,
                    rates_pps: rates,
                    window_s,
                    bw_rate_pps: bw_rate,
                    variants: modes,
                    supp_knob,
                    placements,
                    capacity_pps,
                    proc_ports: !hooks,
                    rcvbuf_bytes: rcvbuf,
                    gen_batch,
                    gen_quantum_us,
                    gen_spread,
                    bw_slice_us,
                };
                live_exit(hostsim_cli::live::ozaki_pbq(&o, &out))
            }
            LiveCmd::TabataSpeed { out, quick, reps, speeds, units, sndbuf, gate, no_off } => {
                let o = hostsim_cli::live::TabataOptions {
                    quick,
                    reps,
                    speeds_pct: speeds,
                    units_bytes: units,
                    sndbuf_bytes: sndbuf,
                    gate,
                    no_off,
                };
                live_exit(hostsim_cli::live::tabata_speed(&o, &out))
            }
            LiveCmd::TakeuchiSymbiose { out, quick, reps, rates, variants, window_s, period_ms } => {
                let o =
                    hostsim_cli::live::SymbioseOptions { quick, reps, rates_pps: rates, variants, window_s, period_ms };
                live_exit(hostsim_cli::live::takeuchi_symbiose(&o, &out))
            }
            LiveCmd::GodaWakeups { out, quick, reps, flows, window_s, warmup_s, rate_mbit } => {
                let o = hostsim_cli::live::WakeupsOptions { quick, reps, flows, window_s, warmup_s, rate_mbit };
                live_exit(hostsim_cli::live::goda_wakeups(&o, &out))
            }
            LiveCmd::KawaiInterval { out, quick, reps, rates, variants, window_s, conns, origin_conns, no_soak } => {
                let o = hostsim_cli::live::KawaiOptions {
                    quick,
                    reps,
                    rates_rps: rates,
                    variants,
                    window_s,
                    conns,
                    origin_conns,
                    no_soak,
                };
                live_exit(hostsim_cli::live::kawai_interval(&o, &out))
            }
            LiveCmd::Pbq { dev, netns, drop, mode, ports, capacity_pps, duration, interval } => {
                let o = hostsim_cli::live::PbqOptions {
                    dev,
                    netns,
                    drop,
                    mode,
                    ports,
                    capacity_pps,
                    duration_s: duration,
                    interval_s: interval,
                };
                live_exit(hostsim_cli::live::pbq(&o))
            }
            LiveCmd::Clean => match hostsim_cli::live::clean() {
                Ok(true) => Ok(ExitCode::SUCCESS),
                Ok(false) => Ok(ExitCode::from(1)),
                Err(e) => live_exit(Err(e)),
            },
        },
        Cmd::LiveWorker { cmd } => {
            let r = match cmd {
                // Each worker checks its arguments (finite, in range) before it starts.
                WorkerCmd::Sink { port, secs, seq_lo, seq_hi, rcvbuf } => {
                    hostsim_live::worker::run_sink(port, secs, seq_lo.zip(seq_hi), rcvbuf)
                }
                WorkerCmd::Send { dst, ports, rate_pps, payload, secs, batch } => {
                    hostsim_live::worker::run_sender(dst, &ports, rate_pps, payload, secs, batch)
                }
                WorkerCmd::TcpSink { port, secs } => hostsim_live::tcp_worker::run_tcp_sink(port, secs),
                WorkerCmd::TcpSend { dst, port, unit, total, sndbuf, start_ns, secs, pacing } => {
                    let spec = hostsim_live::tcp_worker::SendSpec {
                        dst,
                        port,
                        unit_bytes: unit,
                        total_bytes: total,
                        sndbuf_bytes: sndbuf,
                        start_ns,
                        secs,
                        pacing_bytes_per_s: pacing,
                    };
                    hostsim_live::tcp_worker::run_tcp_sender(&spec)
                }
                WorkerCmd::KawaiAccel { variant, port, origin, origin_port, origin_conns, secs } => {
                    hostsim_live::kawai::worker_accel(&variant, port, origin, origin_port, origin_conns, secs)
                }
                WorkerCmd::KawaiOrigin { port, think_ms_mean, think_ms_sd, seed, secs } => {
                    hostsim_live::kawai::worker_origin(port, think_ms_mean, think_ms_sd, seed, secs)
                }
                WorkerCmd::KawaiClients { dst, port, conns, rate_rps, hit_ratio, ramp_ms, seed, secs } => {
                    hostsim_live::kawai::worker_clients(dst, port, conns, rate_rps, hit_ratio, ramp_ms, seed, secs)
                }
                WorkerCmd::KawaiSoak { secs } => hostsim_live::kawai::worker_soak(secs),
            };
            r.map_err(|e| format!("live-worker: {e}"))?;
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
