//! `hostsim bench`: simulation speed and memory, measured in wall-clock time (never in tests).
//!
//! Cases: a UDP flood at 100,000 and 400,000 pkt/s on the 4-CPU legacy-path server
//! (`scenarios/bench/udp-flood.toml`), and the 100,000 pkt/s flood for 10 and 60 simulated
//! seconds to show that memory does not grow with simulated duration; a host-sending TCP stream
//! at 100 Mbit/s (`scenarios/bench/tcp-send.toml`, ~8,600 segments/s out, ~4,300 ACKs/s in); a
//! 2-CPU router forwarding at Fast Ethernet's line rate, 148,809 frames/s, under a big kernel
//! lock (`scenarios/bench/forward-2cpu.toml`).
//! `pps` is the rate of frames through the host (received + sent). Single-threaded.

use crate::{reset_peak_rss, run_timed};
use serde::Serialize;
use std::path::Path;

#[derive(Clone, Debug, Serialize)]
pub struct BenchCase {
    pub name: String,
    pub pps: f64,
    pub sim_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub wall_s: f64,
    pub wall_s_per_sim_s: f64,
    pub peak_rss_bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub cases: Vec<BenchCase>,
}

/// One case: `scenario` (a built-in under `scenarios/`) with `rate_key` set to `pps`.
fn case(name: &str, scenario: &str, rate_key: &str, pps: f64, sim_s: u64) -> Result<BenchCase, String> {
    let sets = vec![
        (rate_key.to_string(), format!("{pps}")),
        ("duration_ms".to_string(), format!("{}", sim_s * 1000)),
    ];
    timed(name, scenario, &sets, pps, sim_s)
}

fn timed(name: &str, scenario: &str, sets: &[(String, String)], pps: f64, sim_s: u64) -> Result<BenchCase, String> {
    let sc = hostsim_scenario::load(Path::new(scenario), sets).map_err(|e| e.to_string())?;
    reset_peak_rss();
    let (out, info) = run_timed(sc.base_config().clone());
    let p = &out.summary.packets;
    let pps = if pps > 0.0 { pps } else { (p.offered + p.tx_frames) as f64 / sim_s as f64 };
    Ok(BenchCase {
        name: name.to_string(),
        pps,
        sim_s: sim_s as f64,
        events: out.events,
        events_per_s: info.events_per_s,
        wall_s: info.wall_s,
        wall_s_per_sim_s: info.wall_s / sim_s as f64,
        peak_rss_bytes: info.peak_rss_bytes,
    })
}

/// Run all cases; `quick` shortens them (for smoke-testing the command itself).
pub fn run_bench(quick: bool, mut progress: impl FnMut(&BenchCase)) -> Result<BenchReport, String> {
    let (short, long_a, long_b) = if quick { (1, 1, 2) } else { (5, 10, 60) };
    let mut cases = Vec::new();
    let flood = ("bench/udp-flood", "traffic.flood.rate_pps");
    let forward = ("bench/forward-2cpu", "traffic.load.rate_pps");
    for (name, (scenario, key), pps, s) in [
        ("udp-flood-100k", flood, 100_000.0, short),
        ("udp-flood-400k", flood, 400_000.0, short),
        ("forward-2cpu-148k", forward, 148_809.0, short),
        ("memory-100k-short", flood, 100_000.0, long_a),
        ("memory-100k-long", flood, 100_000.0, long_b),
    ] {
        let c = case(name, scenario, key, pps, s)?;
        progress(&c);
        cases.push(c);
    }
    let sets = vec![("duration_ms".to_string(), format!("{}", long_a * 1000))];
    let c = timed("tcp-send-100m", "bench/tcp-send", &sets, 0.0, long_a)?;
    progress(&c);
    cases.push(c);
    Ok(BenchReport { cases })
}
