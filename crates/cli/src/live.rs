//! `hostsim live`: mechanisms run for real on this machine's kernel (crates/live). This file
//! only turns the command line into a run and writes its outputs.

use hostsim_live::harness::{progress, LiveError, LiveRun};
use hostsim_live::ozaki::{self, OzakiConfig};
use hostsim_live::tabata::{self, GateKind, TabataConfig};
use std::path::Path;

/// Options of `hostsim live ozaki-pbq` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct OzakiOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub rates_pps: Option<Vec<f64>>,
    pub window_s: Option<f64>,
    pub bw_rate_pps: Option<f64>,
    pub variants: Option<Vec<ozaki::Variant>>,
    /// `--supp-knob affinity|priority|both` (suppress.rs).
    pub supp_knob: Option<hostsim_live::suppress::Knob>,
    pub placements: Option<Vec<ozaki::RxPlacement>>,
    pub capacity_pps: Option<f64>,
    /// `--ports proc`: the agent's /proc scan instead of the bind hooks.
    pub proc_ports: bool,
    /// `--rcvbuf BYTES`: the sinks' socket limit (0: the machine's rmem_default).
    pub rcvbuf_bytes: Option<u32>,
    /// `--gen-batch FRAMES` and `--gen-quantum-us US`: the generator's pacing.
    pub gen_batch: Option<u32>,
    pub gen_quantum_us: Option<f64>,
    /// `--gen-spread FRAC`: spread the flood's calls over this fraction of its quantum (0: back
    /// to back).
    pub gen_spread: Option<f64>,
    /// `--bw-slice-us US`: bw's EEVDF slice (0: the kernel's base slice).
    pub bw_slice_us: Option<u32>,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests (one
/// flood above the receiver's capacity, RPS placement, off then on, 0.6 s windows).
pub fn ozaki_config(o: &OzakiOptions) -> Result<OzakiConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?;
    let mut c = OzakiConfig::new(exe, vec!["live-worker".into()]);
    if o.quick {
        c.rates_pps = vec![400_000.0];
        c.reps = 1;
        c.placements = vec![ozaki::RxPlacement::Rps];
        c.variants = vec![ozaki::Variant::Off, ozaki::Variant::On];
        c.warmup_s = 0.3;
        c.window_s = 0.6;
    }
    if let Some(r) = o.reps {
        c.reps = r.clamp(1, 20);
    }
    if let Some(r) = &o.rates_pps {
        if r.iter().any(|&x| !(0.0..=5e6).contains(&x)) {
            return Err("--rates: each rate must be in 0..=5,000,000 pkt/s".into());
        }
        c.rates_pps = r.clone();
    }
    if let Some(w) = o.window_s {
        if !(0.1..=60.0).contains(&w) {
            return Err("--window-s: expected 0.1..=60".into());
        }
        c.window_s = w;
    }
    if let Some(b) = o.bw_rate_pps {
        if !(1.0..=1e6).contains(&b) {
            return Err("--bw-rate: expected 1..=1,000,000 pkt/s".into());
        }
        c.bw_rate_pps = b;
    }
    if let Some(m) = &o.variants {
        c.variants = m.clone();
    }
    if let Some(b) = o.gen_batch {
        if !(1..=256).contains(&b) {
            return Err("--gen-batch: expected 1..=256 frames (the kernel's TEST_XDP_MAX_BATCH)".into());
        }
        c.gen_batch = b;
    }
    if let Some(q) = o.gen_quantum_us {
        if !(50.0..=5000.0).contains(&q) {
            return Err("--gen-quantum-us: expected 50..=5000".into());
        }
        c.gen_quantum_us = q;
    }
    if let Some(f) = o.gen_spread {
        if !(f.is_finite() && (0.0..=0.95).contains(&f)) {
            return Err("--gen-spread: expected 0 (back to back) or a fraction of the quantum up to 0.95 (the generator's CPU keeps the rest for its other tasks)".into());
        }
        c.gen_spread = (f > 0.0).then_some(f);
    }
    if let Some(us) = o.bw_slice_us {
        if us != 0 && !(100..=100_000).contains(&us) {
            return Err(
                "--bw-slice-us: expected 0 (the kernel's base slice) or 100..=100000 (the kernel's clamp)".into()
            );
        }
        c.bw_slice_ns = (us > 0).then_some(u64::from(us) * 1000);
    }
    if let Some(k) = o.supp_knob {
        c.supp_knob = k;
    }
    if let Some(p) = &o.placements {
        c.placements = p.clone();
    }
    if let Some(x) = o.capacity_pps {
        if !(x.is_finite() && x > 0.0 && x <= 5e7) {
            return Err("--capacity-pps: expected a rate in (0, 50,000,000] pkt/s".into());
        }
        c.capacity_pps = Some(x);
    }
    if let Some(b) = o.rcvbuf_bytes {
        if b > 2 * hostsim_live::worker::RCVBUF_MAX as u32 {
            return Err(format!("--rcvbuf: expected 0..={} bytes", 2 * hostsim_live::worker::RCVBUF_MAX));
        }
        c.rcvbuf_bytes = (b > 0).then_some(b);
    }
    c.hooks = !o.proc_ports;
    Ok(c)
}

/// `hostsim live ozaki-pbq --out DIR`: run the sweep through the live harness, which writes
/// DIR/results.csv point by point and DIR/run.json, and undoes everything at the end.
pub fn ozaki_pbq(o: &OzakiOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = ozaki_config(o).map_err(LiveError::Failed)?;
    let mut run = LiveRun::start("ozaki-pbq", out)?;
    let per_rate: usize = cfg
        .placements
        .iter()
        .map(|p| cfg.variants.iter().filter(|v| *p == ozaki::RxPlacement::Threaded || !v.suppresses()).count())
        .sum();
    let points = cfg.rates_pps.len() * per_rate * cfg.reps as usize;
    run.set_info("points", points.into());
    run.set_info(
        "config",
        serde_json::json!({
            "rates_pps": cfg.rates_pps, "reps": cfg.reps, "variants": cfg.variants.iter().map(|v| v.name()).collect::<Vec<_>>(),
            "suppression": { "knob": cfg.supp_knob.name(), "check_ms": cfg.supp_check_ms },
            "placements": cfg.placements.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "generator": { "kind": "BPF_PROG_RUN live frames (crates/live/src/gen.rs)", "fifo_prio": cfg.gen_fifo_prio, "cpu": cfg.client_cpu, "quantum_us": cfg.gen_quantum_us, "batch": cfg.gen_batch, "flood_spread": cfg.gen_spread, "call_frames_max": cfg.gen_call_frames_max },
            "napi_fifo_prio": cfg.napi_fifo_prio, "valid_frac": cfg.valid_frac, "capacity_pps": cfg.capacity_pps,
            "bw_rate_pps": cfg.bw_rate_pps, "bw_slice_ns": cfg.bw_slice_ns, "payload_bytes": cfg.payload_bytes, "rcvbuf_bytes": cfg.rcvbuf_bytes, "warmup_s": cfg.warmup_s,
            "window_s": cfg.window_s, "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu,
            "agent": format!("{:?}", cfg.agent), "ports": if cfg.hooks { "hooks" } else { "proc" },
        }),
    );
    run.progress(format!(
        "hostsim live ozaki-pbq ({}): {points} points of {:.1} s (+{:.1} s warm-up), server CPU {}, generator CPU {} -> {}",
        run.name(),
        cfg.window_s,
        cfg.warmup_s,
        cfg.server_cpu,
        cfg.client_cpu,
        out.join("results.csv").display()
    ));
    let outcome = ozaki::run(&cfg, &mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", out.join("results.csv").display()));
    Ok(())
}

/// Options of `hostsim live tabata-speed` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct TabataOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub speeds_pct: Option<Vec<u32>>,
    pub units_bytes: Option<Vec<usize>>,
    pub sndbuf_bytes: Option<i32>,
    pub gate: Option<String>,
    pub no_off: bool,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests.
pub fn tabata_config(o: &TabataOptions) -> Result<TabataConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?;
    let mut c = TabataConfig::new(exe, vec!["live-worker".into()]);
    if o.quick {
        c.speeds_pct = vec![100, 20];
        c.units_bytes = vec![1024];
        c.reps = 1;
    }
    if let Some(r) = o.reps {
        c.reps = r.clamp(1, 20);
    }
    if let Some(v) = &o.speeds_pct {
        if v.is_empty() || v.iter().any(|&x| !(1..=100).contains(&x)) {
            return Err("--speeds: each speed must be in 1..=100 percent".into());
        }
        c.speeds_pct = v.clone();
    }
    if let Some(v) = &o.units_bytes {
        if v.is_empty() || v.iter().any(|&x| !(1..=65536).contains(&x)) {
            return Err("--units: each unit must be in 1..=65536 bytes".into());
        }
        c.units_bytes = v.clone();
    }
    if let Some(b) = o.sndbuf_bytes {
        if !(1024..=1 << 24).contains(&b) {
            return Err("--sndbuf: expected 1024..=16777216 bytes".into());
        }
        c.sndbuf_bytes = b;
    }
    match o.gate.as_deref() {
        None | Some("freeze") => c.gate = GateKind::Freeze,
        Some("signal") => c.gate = GateKind::Signal,
        Some(g) => return Err(format!("--gate: `{g}`, expected `freeze` or `signal`")),
    }
    c.off = !o.no_off;
    Ok(c)
}

/// `hostsim live tabata-speed --out DIR`: the sweep through the live harness.
pub fn tabata_speed(o: &TabataOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = tabata_config(o).map_err(LiveError::Failed)?;
    let mut run = LiveRun::start("tabata-speed", out)?;
    let points = (cfg.speeds_pct.len() + usize::from(cfg.off)) * cfg.units_bytes.len() * cfg.reps as usize;
    run.set_info("points", points.into());
    run.set_info(
        "config",
        serde_json::json!({
            "speeds_pct": cfg.speeds_pct, "units_bytes": cfg.units_bytes, "reps": cfg.reps, "off": cfg.off,
            "total_bytes": cfg.total_bytes, "sndbuf_bytes": cfg.sndbuf_bytes, "rate_mbit": cfg.rate_mbit,
            "slot_us": cfg.slot_us, "block_ms": cfg.block_ms, "sender_cpu": cfg.sender_cpu, "sink_cpu": cfg.sink_cpu,
            "fifo_prio": cfg.fifo_prio, "gate": cfg.gate.name(), "point_timeout_s": cfg.point_timeout_s,
        }),
    );
    run.progress(format!(
        "hostsim live tabata-speed ({}): {points} points, 1 MB each over {} Mbit/s, sender CPU {}, sink CPU {}, gate {} -> {}",
        run.name(),
        cfg.rate_mbit,
        cfg.sender_cpu,
        cfg.sink_cpu,
        cfg.gate.name(),
        out.join("results.csv").display()
    ));
    let outcome = tabata::run(&cfg, &mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", out.join("results.csv").display()));
    Ok(())
}

/// Options of `hostsim live takeuchi-symbiose` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct SymbioseOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub rates_pps: Option<Vec<f64>>,
    pub variants: Option<Vec<String>>,
    pub window_s: Option<f64>,
    pub period_ms: Option<f64>,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests (every
/// variant at 50,000 pkt/s, below saturation, 0.3 s warm-up and 1 s window, once).
pub fn symbiose_config(o: &SymbioseOptions) -> Result<hostsim_live::symbiose::SymbConfig, String> {
    use hostsim_live::symbiose::{SymbConfig, Variant};
    let mut c = SymbConfig::default();
    if o.quick {
        c.rates_pps = vec![50_000.0];
        c.reps = 1;
        c.warmup_s = 0.3;
        c.window_s = 1.0;
    }
    if let Some(r) = o.reps {
        c.reps = r.clamp(1, 20);
    }
    if let Some(r) = &o.rates_pps {
        if r.is_empty() || r.iter().any(|&x| !(x.is_finite() && x > 0.0 && x <= 5e6)) {
            return Err("--rates: each rate must be in (0, 5,000,000] pkt/s".into());
        }
        c.rates_pps = r.clone();
    }
    if let Some(v) = &o.variants {
        let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        c.variants = v
            .iter()
            .map(|s| {
                Variant::parse(s).ok_or_else(|| format!("--variants: `{s}`, expected one of {}", names.join(", ")))
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(w) = o.window_s {
        if !(0.1..=60.0).contains(&w) {
            return Err("--window-s: expected 0.1..=60".into());
        }
        c.window_s = w;
    }
    if let Some(p) = o.period_ms {
        if !(0.1..=100.0).contains(&p) {
            return Err("--period-ms: expected 0.1..=100".into());
        }
        c.afxdp.period = std::time::Duration::from_secs_f64(p / 1e3);
    }
    Ok(c)
}

/// `hostsim live takeuchi-symbiose --out DIR`: paper 003's Fig. 4 on this kernel (module doc of
/// hostsim_live::symbiose), through the live harness.
pub fn takeuchi_symbiose(o: &SymbioseOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = symbiose_config(o).map_err(LiveError::Failed)?;
    let mut run = LiveRun::start("takeuchi-symbiose", out)?;
    let points = cfg.rates_pps.len() * cfg.variants.len() * cfg.reps as usize;
    run.set_info("points", points.into());
    run.set_info(
        "config",
        serde_json::json!({
            "rates_pps": cfg.rates_pps, "reps": cfg.reps,
            "variants": cfg.variants.iter().map(|v| serde_json::json!({ "name": v.name(), "model_variant": v.model_variant(), "router_cpus": v.router_cpus() })).collect::<Vec<_>>(),
            "generator": { "kind": "BPF_PROG_RUN live frames (crates/live/src/gen.rs)", "fifo_prio": cfg.gen_fifo_prio, "cpu": cfg.other_cpu, "flows": hostsim_live::symbiose::SRC_PORTS.len() },
            "driver_cpu": cfg.driver_cpu, "other_cpu": cfg.other_cpu, "router_fifo_prio": cfg.router_fifo_prio, "sink_fifo_prio": cfg.sink_fifo_prio,
            "cpumap_qsize": cfg.cpumap_qsize,
            "afxdp": { "period_ms": cfg.afxdp.period.as_secs_f64() * 1e3, "umem_frames": cfg.afxdp.frames, "frame_bytes": 2048, "ring_entries": cfg.afxdp.ring, "bind": "XDP_COPY, queue 0 of in0; out0 shares the UMEM (XDP_SHARED_UMEM)" },
            "payload_bytes": cfg.payload_bytes, "warmup_s": cfg.warmup_s, "window_s": cfg.window_s, "valid_frac": cfg.valid_frac,
        }),
    );
    run.progress(format!(
        "hostsim live takeuchi-symbiose ({}): {points} points of {:.1} s (+{:.1} s warm-up), driver CPU {}, generator/sink CPU {} -> {}",
        run.name(),
        cfg.window_s,
        cfg.warmup_s,
        cfg.driver_cpu,
        cfg.other_cpu,
        out.join("results.csv").display()
    ));
    let outcome = hostsim_live::symbiose::run(&cfg, &mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", out.join("results.csv").display()));
    Ok(())
}

/// Options of `hostsim live pbq` (the command line's, unchecked).
#[derive(Clone, Debug, Default)]
pub struct PbqOptions {
    pub dev: String,
    pub netns: Option<String>,
    pub drop: bool,
    pub mode: String,
    pub ports: String,
    pub capacity_pps: Option<f64>,
    pub duration_s: Option<f64>,
    pub interval_s: f64,
}

/// The tool's configuration a command line asks for.
pub fn pbq_config(o: &PbqOptions) -> Result<hostsim_live::pbq_tool::PbqToolConfig, String> {
    use hostsim_live::xdp::XdpMode;
    let mode = match o.mode.as_str() {
        "auto" => XdpMode::Auto,
        "native" => XdpMode::Native,
        "generic" => XdpMode::Generic,
        m => return Err(format!("--mode: `{m}`, expected `native`, `generic` or `auto`")),
    };
    let hooks = match o.ports.as_str() {
        "hooks" => true,
        "proc" => false,
        p => return Err(format!("--ports: `{p}`, expected `hooks` or `proc`")),
    };
    if o.dev.is_empty() || o.dev.len() > 15 || o.dev.contains('/') {
        return Err(format!("--dev: `{}` is not an interface name", o.dev));
    }
    if let Some(x) = o.capacity_pps {
        if !(x.is_finite() && x > 0.0 && x <= 5e7) {
            return Err("--capacity-pps: expected a rate in (0, 50,000,000] pkt/s".into());
        }
    }
    let secs = |x: f64, what: &str, lo: f64| {
        if x.is_finite() && x >= lo && x <= 1e7 {
            Ok(std::time::Duration::from_secs_f64(x))
        } else {
            Err(format!("--{what}: expected {lo}..=10,000,000 seconds, got {x}"))
        }
    };
    Ok(hostsim_live::pbq_tool::PbqToolConfig {
        dev: o.dev.clone(),
        netns: o.netns.clone(),
        drop: o.drop,
        mode,
        hooks,
        capacity_pps: o.capacity_pps,
        duration: o.duration_s.map(|d| secs(d, "duration", 0.0)).transpose()?,
        interval: secs(o.interval_s, "interval", 0.05)?,
        agent: hostsim_live::agent::AgentConfig::default(),
    })
}

/// `hostsim live pbq --dev IFACE`: the agent through the live harness's ledger and signals
/// (no output directory: it prints its state on stdout).
pub fn pbq(o: &PbqOptions) -> Result<(), LiveError> {
    let cfg = pbq_config(o).map_err(LiveError::Failed)?;
    let run = LiveRun::start_tool("pbq")?;
    let outcome = hostsim_live::pbq_tool::run(&cfg, &run);
    run.finish(outcome)
}

/// `hostsim live clean`: print what was removed and what could not be; Ok(false) if anything
/// could not.
pub fn clean() -> Result<bool, LiveError> {
    let (lines, all) = hostsim_live::harness::clean()?;
    for l in lines {
        crate::outln!("{l}");
    }
    Ok(all)
}

/// Options of `hostsim live kawai-interval` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct KawaiOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub rates_rps: Option<Vec<f64>>,
    pub variants: Option<Vec<String>>,
    pub window_s: Option<f64>,
    pub conns: Option<u32>,
    pub origin_conns: Option<u32>,
    pub no_soak: bool,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests: a few
/// hundred requests at 300 req/s over 200 connections, the paper's static 20 ms control.
pub fn kawai_config(o: &KawaiOptions) -> Result<hostsim_live::kawai::experiment::KawaiConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?;
    let mut c = hostsim_live::kawai::experiment::KawaiConfig::new(exe, vec!["live-worker".into()]);
    if o.quick {
        c.rates_rps = vec![300.0];
        c.reps = 1;
        c.variants = vec!["static-20".into()];
        c.conns = 200;
        c.origin_conns = 100;
        c.ramp_ms = 300;
        c.warmup_s = 0.7;
        c.window_s = 1.5;
        c.drain_s = 2.0;
    }
    if let Some(r) = o.reps {
        c.reps = r.clamp(1, 20);
    }
    if let Some(r) = &o.rates_rps {
        if r.is_empty() || r.iter().any(|&x| !(1.0..=200_000.0).contains(&x)) {
            return Err("--rates: each rate must be in 1..=200,000 req/s".into());
        }
        c.rates_rps = r.clone();
    }
    if let Some(v) = &o.variants {
        c.variants = v.clone();
    }
    if let Some(w) = o.window_s {
        if !(0.2..=120.0).contains(&w) {
            return Err("--window-s: expected 0.2..=120".into());
        }
        c.window_s = w;
    }
    if let Some(n) = o.conns {
        if !(1..=30_000).contains(&n) {
            return Err("--conns: expected 1..=30,000".into());
        }
        c.conns = n;
    }
    if let Some(n) = o.origin_conns {
        if !(1..=10_000).contains(&n) {
            return Err("--origin-conns: expected 1..=10,000".into());
        }
        c.origin_conns = n;
    }
    c.soak = !o.no_soak;
    c.check()?;
    Ok(c)
}

/// `hostsim live kawai-interval --out DIR`: the sweep through the live harness (results.csv
/// point by point, run.json), everything undone at the end.
pub fn kawai_interval(o: &KawaiOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = kawai_config(o).map_err(LiveError::Failed)?;
    let mut run = LiveRun::start("kawai-interval", out)?;
    let points = cfg.rates_rps.len() * cfg.variants.len() * cfg.reps as usize;
    run.set_info("points", points.into());
    run.set_info(
        "config",
        serde_json::json!({
            "rates_rps": cfg.rates_rps, "reps": cfg.reps, "variants": cfg.variants, "conns": cfg.conns,
            "origin_conns": cfg.origin_conns, "hit_ratio": cfg.hit_ratio, "think_ms_mean": cfg.think_ms_mean,
            "think_ms_sd": cfg.think_ms_sd, "ramp_ms": cfg.ramp_ms, "warmup_s": cfg.warmup_s, "window_s": cfg.window_s,
            "drain_s": cfg.drain_s, "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu, "soak": cfg.soak,
            "fifo_priority": hostsim_live::kawai::interval::FIFO_PRIORITY, "load_generator": "hostsim live-worker kawai-clients (open-loop Poisson, crates/live/src/kawai/clients.rs)",
            "timer_slack_ns": std::fs::read_to_string("/proc/self/timerslack_ns").ok().and_then(|s| s.trim().parse::<u64>().ok()),
            "sched_rt_runtime_us": std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").ok().map(|s| s.trim().to_string()),
        }),
    );
    run.progress(format!(
        "hostsim live kawai-interval ({}): {points} points of {:.1} s (+{:.1} s ramp and warm-up), accelerator on CPU {}, clients and origin on CPU {} -> {}",
        run.name(),
        cfg.window_s,
        cfg.ramp_ms as f64 / 1e3 + cfg.warmup_s,
        cfg.server_cpu,
        cfg.client_cpu,
        out.join("results.csv").display()
    ));
    let outcome = hostsim_live::kawai::experiment::run(&cfg, &mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", out.join("results.csv").display()));
    Ok(())
}

/// Options of `hostsim live goda-wakeups` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct WakeupsOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub flows: Option<Vec<u32>>,
    pub window_s: Option<f64>,
    pub warmup_s: Option<f64>,
    pub rate_mbit: Option<f64>,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests.
pub fn wakeups_config(o: &WakeupsOptions) -> Result<hostsim_live::goda_wakeups::WakeupsConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?;
    let mut c = hostsim_live::goda_wakeups::WakeupsConfig::new(exe, vec!["live-worker".into()]);
    if o.quick {
        c.flows = vec![2];
        c.reps = 1;
        c.warmup_s = 0.5;
        c.window_s = 1.0;
    }
    if let Some(r) = o.reps {
        c.reps = r.clamp(1, 20);
    }
    if let Some(f) = &o.flows {
        c.flows = f.clone();
    }
    if let Some(w) = o.window_s {
        c.window_s = w;
    }
    if let Some(w) = o.warmup_s {
        c.warmup_s = w;
    }
    if let Some(r) = o.rate_mbit {
        c.rate_mbit = r;
    }
    c.check()?;
    Ok(c)
}

/// `hostsim live goda-wakeups --out DIR`: the sweep through the live harness (results.csv point
/// by point, run.json), everything undone at the end.
pub fn goda_wakeups(o: &WakeupsOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = wakeups_config(o).map_err(LiveError::Failed)?;
    let mut run = LiveRun::start("goda-wakeups", out)?;
    let points = cfg.flows.len() * cfg.reps as usize;
    run.set_info("points", points.into());
    run.set_info(
        "config",
        serde_json::json!({
            "flows": cfg.flows, "reps": cfg.reps, "warmup_s": cfg.warmup_s, "window_s": cfg.window_s,
            "unit_bytes": cfg.unit_bytes, "sndbuf_bytes": cfg.sndbuf_bytes, "cgroup": cfg.cgroup,
            "rate_mbit": cfg.rate_mbit, "pacing": "SO_MAX_PACING_RATE = rate / flows per sender", "sender_veth": "tso off, gso off",
            "placement": "senders and readers unpinned on every CPU; no RPS, no RFS",
        }),
    );
    run.progress(format!(
        "hostsim live goda-wakeups ({}): {points} points of {:.1} s (+{:.1} s warm-up), flows {:?} -> {}",
        run.name(),
        cfg.window_s,
        cfg.warmup_s,
        cfg.flows,
        out.join("results.csv").display()
    ));
    let outcome = hostsim_live::goda_wakeups::run(&cfg, &mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", out.join("results.csv").display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn takeuchi_symbiose_options_name_split_afxdp_and_its_period() {
        let c = symbiose_config(&SymbioseOptions::default()).unwrap();
        assert_eq!(c.afxdp.period, Duration::from_millis(5), "the paper's 5 ms by default");
        assert_eq!(c.variants.len(), 4);
        let o =
            SymbioseOptions { variants: Some(vec!["split-afxdp".into()]), period_ms: Some(1.0), ..Default::default() };
        let c = symbiose_config(&o).unwrap();
        assert_eq!(c.variants, [hostsim_live::symbiose::Variant::SplitAfxdp]);
        assert_eq!(c.afxdp.period, Duration::from_millis(1));
        for bad in [0.0, 0.05, 101.0, f64::NAN] {
            let o = SymbioseOptions { period_ms: Some(bad), ..Default::default() };
            assert!(symbiose_config(&o).unwrap_err().contains("--period-ms"), "{bad}");
        }
        let o = SymbioseOptions { variants: Some(vec!["split-xsk".into()]), ..Default::default() };
        assert!(symbiose_config(&o).unwrap_err().contains("split-afxdp"));
    }

    #[test]
    fn ozaki_pbq_spreads_the_flood_only_when_asked() {
        assert_eq!(ozaki_config(&OzakiOptions::default()).unwrap().gen_spread, None, "back to back by default");
        let c = ozaki_config(&OzakiOptions { gen_spread: Some(0.75), ..Default::default() }).unwrap();
        assert_eq!(c.gen_spread, Some(0.75));
        assert_eq!(
            ozaki_config(&OzakiOptions { gen_spread: Some(0.0), ..Default::default() }).unwrap().gen_spread,
            None,
            "0 = back to back"
        );
        for bad in [-0.1, 0.96, 1.0, f64::NAN] {
            let e = ozaki_config(&OzakiOptions { gen_spread: Some(bad), ..Default::default() }).unwrap_err();
            assert!(e.contains("--gen-spread"), "{bad}: {e}");
        }
    }
}
