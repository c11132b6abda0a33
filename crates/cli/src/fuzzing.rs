//! The properties the fuzzers check (`fuzz/`, `scripts/fuzz.sh`) and the regression corpus
//! replays under `cargo test`: every input gets an answer, never a panic, a hang or an abort.
//!
//! - [`check_load`]: loading any text with any `--set` list either succeeds or gives an error
//!   that names the file, is one line, and points at a line that exists.
//! - [`check_run`]: an accepted configuration runs (no stall, no model bug) and its results
//!   pass the conservation checks.
//!
//! A violation panics, which the fuzzer reports as a crash.

use hostsim_host::HostConfig;
use hostsim_scenario::{Options, Scenario};
use std::path::Path;

/// Load `text` as if it were the file `path`, with `sets` as `--set`; check the error if any.
pub fn check_load(path: &Path, text: &str, sets: &[(String, String)], max_runs: u64) -> Option<Scenario> {
    match hostsim_scenario::load_str_with(path, text, sets, &Options { max_runs }) {
        Ok(sc) => {
            assert!(
                sc.run_count() >= 1 && sc.run_count() as u64 <= max_runs,
                "accepted {} runs with max_runs {max_runs}",
                sc.run_count()
            );
            Some(sc)
        }
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with(&path.display().to_string()), "error does not name the file: {shown}");
            assert!(
                !e.message.is_empty() && !e.message.contains('\n'),
                "error message empty or not one line: {shown:?}"
            );
            if let Some(line) = e.line {
                let lines = text.split('\n').count();
                assert!(line >= 1 && line <= lines.max(1), "error at line {line} of a {lines}-line file: {shown}");
            }
            None
        }
    }
}

/// An upper bound on the events a run of `cfg` may process, to keep fuzzed runs short: ticks,
/// packets (at most what the sources' links carry) and the bursts of CPU-bound programs.
pub fn run_cost(cfg: &HostConfig) -> f64 {
    let secs = cfg.duration_ns as f64 * 1e-9;
    let ncpu = cfg.profile.topology.cpus() as f64;
    let mut events = ncpu * f64::from(cfg.kernel.hz) * secs * 4.0;
    events += ncpu * secs * 1000.0 / cfg.kernel.balance_interval_ms as f64;
    for t in &cfg.traffic {
        let link = t.link_mbps as f64 * 1e6 / (8.0 * hostsim_host::wire_bytes(t.payload_bytes, false) as f64)
            * f64::from(t.clients);
        let pps = match t.kind {
            hostsim_workload::SourceKind::Cbr | hostsim_workload::SourceKind::Poisson => t.rate_pps.min(link),
            // One request outstanding: a round trip takes at least a microsecond.
            hostsim_workload::SourceKind::PingPong => link.min(2e6),
            hostsim_workload::SourceKind::TcpWindow => link,
            // The host's sending TCP into this sink: data frames in, ACKs out, at most its link.
            hostsim_workload::SourceKind::StreamSink => link,
            // Requests and responses on every connection, at most what the links carry both
            // ways, plus each connection's set-up and tear-down.
            hostsim_workload::SourceKind::HttpClients => {
                2.0 * link + t.http.as_ref().map_or(0.0, |h| f64::from(h.conns) * 8.0 / secs.max(1e-9))
            }
            hostsim_workload::SourceKind::HttpOrigin => 2.0 * link,
            // A sink only receives (what is forwarded to it is counted at its source).
            hostsim_workload::SourceKind::Sink => 0.0,
        };
        // Each packet: arrival, interrupt, softirq, protocol, wake-up, recv, maybe a reply.
        events += pps * secs * 12.0;
    }
    for p in &cfg.processes {
        if matches!(p.program, hostsim_workload::ProgramKind::Spin | hostsim_workload::ProgramKind::Periodic) {
            let period = (p.work_ns + p.sleep_ns + cfg.kernel.timer_slack_ns).max(1) as f64;
            events += f64::from(p.instances) * cfg.duration_ns as f64 / period * 4.0;
        }
        if p.program == hostsim_workload::ProgramKind::Accelerator {
            // Its threads' poll loops: at most one system call per simulated microsecond each.
            events += p.threads.len() as f64 * cfg.duration_ns as f64 / 1000.0;
        }
        events += f64::from(p.instances) * 4.0;
    }
    events
}

/// Run `cfg`: it must finish, and conserve CPU time and packets.
pub fn check_run(cfg: HostConfig) {
    let seed = cfg.seed;
    if let Err(e) = crate::run_checked(cfg) {
        panic!("an accepted configuration failed to run (seed {seed}): {e}");
    }
}
