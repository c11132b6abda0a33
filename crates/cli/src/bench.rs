//! `hostsim bench`: simulation speed and memory, measured in wall-clock time (never in tests).
//!
//! Cases (single-threaded, one after the other; each reports simulated packets per wall second,
//! events per wall second, wall seconds per simulated second and peak RSS):
//! - `livelock-150k`, `livelock-400k`: the 1-CPU legacy receive path of `examples/livelock`
//!   (variant `legacy`) at 150,000 and 400,000 pkt/s (below and deep in receive livelock);
//! - `udp-flood-150k`, `udp-flood-400k`: the 4-CPU legacy-path server of `bench/udp-flood`;
//! - `modern-64c`: `bench/modern-64c`, a 64-CPU NAPI host with 16 RSS queues, 48 readers and
//!   10 M pkt/s (issue 12's target: at most 4 wall seconds per simulated second);
//! - `memory-100k-10s`, `memory-100k-60s`: the 100,000 pkt/s flood for 10 and 60 simulated
//!   seconds: peak RSS must not grow with simulated time;
//! - `traced-60s`, `untraced-60s`: `examples/livelock` (legacy, 20,000 pkt/s) for 60 simulated
//!   seconds with and without `--trace` (Perfetto, streamed to a temporary file): the trace must
//!   not grow memory (RSS within 2x);
//! - `tcp-send-100m`: a host-sending TCP stream at 100 Mbit/s (`bench/tcp-send`, ~8,600
//!   segments/s out, ~4,300 ACKs/s in): every event of the transmit path;
//! - `forward-2cpu-148k`: a 2-CPU router forwarding at Fast Ethernet's line rate, 148,809
//!   frames/s, under a big kernel lock (`bench/forward-2cpu`);
//! - `accel-7000-2000rps`, `accel-7000-long`: paper 004's web accelerator over ~7,000 persistent
//!   connections at 2,000 requests/s (`kawai-interval-static`, static 20 ms control) for 10 and
//!   60 simulated seconds (speed per simulated second, memory flat in duration).
//!
//! `packets` counts the frames through the host (received + sent).
//!
//! `--json` output is what `bench/history/` keeps, one file per release-worthy change.

use crate::{reset_peak_rss, run_timed_traced, run_timed_with, TraceFormat};
use serde::Serialize;
use std::path::Path;

#[derive(Clone, Debug, Serialize)]
pub struct BenchCase {
    pub name: String,
    pub scenario: String,
    /// Offered load of the case's traffic (configured), pkt/s.
    pub pps: f64,
    pub sim_s: f64,
    /// Packets the sources offered during the run.
    pub packets: u64,
    /// Simulated packets per wall-clock second.
    pub packets_per_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub wall_s: f64,
    pub wall_s_per_sim_s: f64,
    pub peak_rss_bytes: u64,
    /// Slices written when the case is traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_slices: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub version: String,
    pub cases: Vec<BenchCase>,
}

struct Spec {
    name: &'static str,
    scenario: &'static str,
    variant: Option<&'static str>,
    rate_key: &'static str,
    pps: f64,
    sim_ms: u64,
    traced: bool,
    /// Further `--set`s of the case (a warm-up given here replaces the default one).
    extra: &'static [(&'static str, &'static str)],
}

fn case(s: &Spec) -> Result<BenchCase, String> {
    // The warm-up does not matter for speed figures; a tenth of the run keeps --quick valid.
    let mut sets = vec![("duration_ms".to_string(), s.sim_ms.to_string())];
    if !s.extra.iter().any(|(k, _)| *k == "warmup_ms") {
        sets.push(("warmup_ms".to_string(), (s.sim_ms / 10).to_string()));
    }
    sets.extend(s.extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    if !s.rate_key.is_empty() {
        sets.push((s.rate_key.to_string(), format!("{}", s.pps)));
    }
    let sc = hostsim_scenario::load(Path::new(s.scenario), &sets).map_err(|e| e.to_string())?;
    let cfg = sc.config_with(s.variant, &[]).map_err(|e| e.to_string())?;
    reset_peak_rss();
    let (out, info) = if s.traced {
        let dir = std::env::temp_dir().join(format!("hostsim-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let r = run_timed_traced(cfg, TraceFormat::Perfetto, hostsim_host::TraceWindow::ALL, &dir, |_| {});
        let _ = std::fs::remove_dir_all(&dir);
        r?
    } else {
        run_timed_with(cfg, |_| {})?
    };
    let sim_s = s.sim_ms as f64 / 1000.0;
    Ok(BenchCase {
        name: s.name.to_string(),
        scenario: s.scenario.to_string() + s.variant.map_or(String::new(), |v| format!(" --variant {v}")).as_str(),
        pps: s.pps,
        sim_s,
        packets: out.summary.packets.offered + out.summary.packets.tx_frames,
        packets_per_s: (out.summary.packets.offered + out.summary.packets.tx_frames) as f64 / info.wall_s.max(1e-9),
        events: out.events,
        events_per_s: info.events_per_s,
        wall_s: info.wall_s,
        wall_s_per_sim_s: info.wall_s / sim_s,
        peak_rss_bytes: info.peak_rss_bytes,
        trace_slices: info.trace_slices,
    })
}

/// Run all cases; `quick` shortens them (for smoke-testing the command itself).
pub fn run_bench(quick: bool, mut progress: impl FnMut(&BenchCase)) -> Result<BenchReport, String> {
    // Simulated ms per case: (full, quick).
    let ms = |full: u64, short: u64| if quick { short } else { full };
    const NONE: &[(&str, &str)] = &[];
    const ACCEL: &[(&str, &str)] = &[
        ("traffic.clients.http.rate_rps", "2000"),
        ("process.chamomile.accelerator.interval_control", "static"),
        ("process.chamomile.accelerator.min_cycle_ms", "20"),
        ("warmup_ms", "500"),
    ];
    let specs = [
        (
            "livelock-150k",
            "examples/livelock",
            Some("legacy"),
            "traffic.load.rate_pps",
            150_000.0,
            ms(5000, 50),
            false,
            NONE,
        ),
        (
            "livelock-400k",
            "examples/livelock",
            Some("legacy"),
            "traffic.load.rate_pps",
            400_000.0,
            ms(5000, 50),
            false,
            NONE,
        ),
        ("udp-flood-150k", "bench/udp-flood", None, "traffic.flood.rate_pps", 150_000.0, ms(5000, 50), false, NONE),
        ("udp-flood-400k", "bench/udp-flood", None, "traffic.flood.rate_pps", 400_000.0, ms(5000, 50), false, NONE),
        ("modern-64c", "bench/modern-64c", None, "", 10_000_000.0, ms(1000, 5), false, NONE),
        ("memory-100k-10s", "bench/udp-flood", None, "traffic.flood.rate_pps", 100_000.0, ms(10_000, 100), false, NONE),
        ("memory-100k-60s", "bench/udp-flood", None, "traffic.flood.rate_pps", 100_000.0, ms(60_000, 200), false, NONE),
        (
            "untraced-60s",
            "examples/livelock",
            Some("legacy"),
            "traffic.load.rate_pps",
            20_000.0,
            ms(60_000, 100),
            false,
            NONE,
        ),
        (
            "traced-60s",
            "examples/livelock",
            Some("legacy"),
            "traffic.load.rate_pps",
            20_000.0,
            ms(60_000, 100),
            true,
            NONE,
        ),
        ("tcp-send-100m", "bench/tcp-send", None, "", 0.0, ms(10_000, 1000), false, NONE),
        (
            "forward-2cpu-148k",
            "bench/forward-2cpu",
            None,
            "traffic.load.rate_pps",
            148_809.0,
            ms(5000, 1000),
            false,
            NONE,
        ),
        ("accel-7000-2000rps", "kawai-interval-static", None, "", 0.0, ms(10_000, 1000), false, ACCEL),
        ("accel-7000-long", "kawai-interval-static", None, "", 0.0, ms(60_000, 2000), false, ACCEL),
    ];
    let mut cases = Vec::new();
    for (name, scenario, variant, rate_key, pps, sim_ms, traced, extra) in specs {
        let c = case(&Spec { name, scenario, variant, rate_key, pps, sim_ms, traced, extra })?;
        progress(&c);
        cases.push(c);
    }
    Ok(BenchReport { version: env!("CARGO_PKG_VERSION").to_string(), cases })
}
