//! # hostsim-host: the host model
//!
//! A multi-CPU network server as a discrete-event model on [`hostsim_engine`]:
//!
//! ```text
//!  sources ─link─▶ switch ─wire─▶ NIC port ─RSS─▶ RX ring(s) ──IRQ (moderation, routing policy)──┐
//!                                                                                              ▼
//!   CPU n: [ hard IRQ ] > [ softirq NET_RX: NAPI poll / backlog (policy) / RPS-RFS ] > [ process ]
//!                                   │ protocol (UDP / TCP) → socket buffer → wake-up (select_task_rq)
//!                                   ▼
//!                 scheduler: CFS-like fair class + SCHED_FIFO, tick, load balancing, migrations
//! ```
//!
//! The tree follows Linux's where it helps, so a kernel reader finds each part where Linux keeps
//! it, and a paper's reader finds its mechanism under the paper's id:
//!
//! | folder / file | what |
//! |---|---|
//! | `drivers/net/` | NIC ports and queue pairs, RSS, RX rings, interrupt moderation, the driver's handler, TX rings |
//! | `kernel/` | CPUs and their nested contexts with exact accounting (`cpu.rs`, `context.rs`), tasks (`task.rs`), programs' system calls (`process.rs`, `app.rs`) |
//! | `kernel/irq/` | IRQ routing: fixed, masks, 2.4's balance_irq, MSI-X |
//! | `kernel/sched/` | the scheduler of each era (2.4 O(1), CFS 3.2, CFS 6.x): run queues, wake-up placement, load balancing |
//! | `kernel/locking/` | how one kernel runs on several CPUs (SMP, uniprocessor, the big kernel lock) and the lock gate |
//! | `kernel/time/` | nanosleep() as each era rounded it |
//! | `fs/` | poll() (`fs/select.c`) |
//! | `net/core/` | `netif_rx`, NAPI, the NET_RX softirq, backlogs, RPS/RFS, the device transmit layer, sockets, packets |
//! | `net/ipv4/` | UDP and TCP input, the sending TCP (around the `hostsim-tcp` crate), event-driven servers' connections, forwarding |
//! | `mechanisms/` | one entry per paper id (`ozaki_pbq`, `goda_rfs`, `tabata_speed`, `takeuchi_symbiose`) plus `flow_limit`, and the registry: only the papers' policies |
//! | `hooks.rs` | what a mechanism implements and what the host offers it (the hub is generic over the registry) |
//! | `metrics/` | counters, time series, windowed metrics and `summary.json`, traces, paper 001's migration classifier |
//! | `wire/` | outside the host: sources, their links and the switch in front of each NIC port |
//! | `sim.rs` | the hub: `Host` (each subsystem's state struct side by side), the event enum, the main loop |
//! | `run.rs` | running a host with its failures caught |
//! | `config.rs`, `types.rs`, `policies.rs` | the configuration, small shared types, the closed enum of each hook |
//! | `tests/` | unit tests that need a whole `Host` |
//!
//! Mechanisms are policies selected in [`KernelConfig`] (closed enums, static dispatch), never
//! special cases. The model reads no files: [`HostConfig`] comes from the scenario crate.
//!
//! Entry point: [`run`].

mod config;
mod drivers;
mod fs;
pub mod hooks;
mod kernel;
pub mod mechanisms;
mod metrics;
mod net;
mod policies;
mod run;
mod sim;
#[cfg(test)]
mod tests;
mod types;
mod wire;

pub use config::*;
pub use kernel::irq::route::IrqRouter;
pub use net::core::backlog::{BacklogPolicy, Enqueue, Fifo};
// 2.4/2.5's nanosleep rule, also what `hostsim live kawai-interval`'s quantised sleeps follow.
pub use kernel::time::nanosleep::{nanosleep_jiffies, Nanosleep};
/// Paper 001's wake-up migration classes (unintended ping-pongs, settling): also fed from a live
/// run's scheduler tracepoints (crates/live/src/goda_rfs/wake.rs), so both use one definition.
pub use metrics::migration_class::{insert as insert_class_metrics, ClassCounts, MigrationClass};
/// A stream sink's metrics (bandwidth, inter-arrival histograms) from its [`hostsim_workload::SinkStats`]:
/// also filled from a live run's frames (crates/live/src/tabata_speed/experiment.rs), so both use one definition.
pub use metrics::sink::insert as insert_sink_metrics;
pub use metrics::summary::{
    CacheSummary, ConcurrencySummary, CpuSummary, FdirSummary, HttpTotals, Latency, PacketSummary, ProcessSummary,
    SocketSummary, SpeedSummary, Summary, TcpSummary, TrafficSummary,
};
pub use metrics::trace::{TraceSink, TraceWindow, FLUSH_RECORDS};
pub use run::RunError;
pub use types::{nice_weight, CAUSE_NAMES, DROP_NAMES, NICE_WEIGHT, STATE_NAMES};
pub use wire::wire_bytes;

use hostsim_engine::TimeSeries;

/// The results of one run.
pub struct RunOutput {
    pub summary: Summary,
    pub timeseries: TimeSeries,
    /// Slices handed to the trace sink ([`run_traced`]; 0 without a trace).
    pub trace_slices: u64,
    /// Events the engine processed (for speed measurements).
    pub events: u64,
}

/// Run one simulation to completion. Deterministic: the same config gives the same output.
/// Panics with [`RunError`]'s message if the run stalls or the model has a bug: use [`try_run`]
/// where that must be an error.
pub fn run(cfg: HostConfig) -> RunOutput {
    run_with_progress(cfg, |_| {})
}

/// [`run`], calling `progress(simulated time)` now and then (every 2^20 events).
pub fn run_with_progress(cfg: HostConfig, progress: impl FnMut(hostsim_engine::Time)) -> RunOutput {
    try_run_with_progress(cfg, progress).unwrap_or_else(|e| panic!("{e}"))
}

/// [`run_with_progress`] with a trace of what every CPU ran inside `window`, streamed to `sink`
/// (see `metrics/trace.rs`: one slice per unit run, nested like the CPU's contexts). Tracing never
/// changes the simulated results.
pub fn run_traced(
    cfg: HostConfig,
    window: TraceWindow,
    sink: &mut dyn TraceSink,
    progress: impl FnMut(hostsim_engine::Time),
) -> RunOutput {
    try_run_traced(cfg, window, sink, progress).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn output<M: hooks::Mechanisms>(host: &mut sim::Host<M>) -> RunOutput {
    RunOutput {
        summary: host.summary(),
        timeseries: host.stats.series.clone(),
        trace_slices: host.trace.as_ref().map_or(0, |t| t.slices()),
        events: host.q.events_popped(),
    }
}

/// Run one simulation; a run whose simulated time stops advancing, or a bug in the model (a
/// panic, e.g. an event scheduled in the past), is an error naming the seed and the likely cause.
pub fn try_run(cfg: HostConfig) -> Result<RunOutput, RunError> {
    try_run_with_progress(cfg, |_| {})
}

pub use run::{try_run_traced, try_run_with_progress};
