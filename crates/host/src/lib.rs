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
//! Modules: [`cpu`](crate) nested contexts and accounting; `nic` wire, rings, interrupt
//! moderation; `irq_route` IRQ routing policies; `rx` NET_RX softirq, backlog, RPS/RFS;
//! `types` the small shared types; `policies` the closed enums selecting each policy;
//! `backlog` backlog policies (`pbq` paper 000's, `flow_limit` Linux's RPS flow limit); `proto` UDP/TCP input and sockets; `sched` the scheduler;
//! `concurrency` the kernel concurrency models (big kernel lock, paper 003's functional split),
//! gated in `klock`, with Symbiose's exchange threads in `symbiose` and IP forwarding in `forward`;
//! `wake` Linux 3.2 wake-up placement, `sched_o1` the 2.4 O(1) scheduler's placement and
//! balancing, `placement` the era's placement (`wake_goda` paper 001's wraps it);
//! `migration_class` classifies
//! migrations (paper 001's unintended ping-pong); `xdp_pbq` the driver-entry priority drop of
//! `hostsim live` and its agent's high-load detector (shared with crates/live); `process` system-call semantics; `stats` the
//! counters; `summary` metrics and `summary.json`.
//!
//! Mechanisms are policies selected in [`KernelConfig`] (closed enums, static dispatch), never
//! special cases. The model reads no files: [`HostConfig`] comes from the scenario crate.
//!
//! Entry point: [`run`].

mod app;
mod app_metrics;
mod app_state;
mod backlog;
mod concurrency;
mod config;
mod cpu;
mod endpoint;
mod flow_limit;
mod forward;
mod irq_route;
mod klock;
mod migration_class;
mod nanosleep;
mod nic;
mod pbq;
mod placement;
mod policies;
mod poll;
mod suppress;
#[cfg(test)]
mod testutil;
mod process;
mod proto;
mod run;
mod regulate;
mod rx;
mod sched;
mod sched_cfs32;
mod sched_cfs6;
mod sched_o1;
mod sim;
mod sockets;
mod sink_metrics;
mod slots;
mod stats;
mod summary;
mod symbiose;
#[cfg(test)]
mod tests_packet;
#[cfg(test)]
mod tests_wake;
mod tcp_conn;
mod tcp_out;
mod trace;
mod tx;
mod txring;
mod types;
mod wake;
mod wake_goda;
pub mod xdp_pbq;

pub use backlog::{BacklogPolicy, Enqueue, Fifo};
pub use config::*;
pub use irq_route::IrqRouter;
pub use nic::wire_bytes;
pub use run::RunError;
pub use summary::{
    CacheSummary, ConcurrencySummary, CpuSummary, Latency, PacketSummary, ProcessSummary, SocketSummary, Summary,
    TcpSummary, TrafficSummary, HttpTotals,
};
pub use trace::{TraceSink, TraceWindow, FLUSH_RECORDS};
pub use types::{nice_weight, CAUSE_NAMES, DROP_NAMES, NICE_WEIGHT, STATE_NAMES};

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
/// (see `trace.rs`: one slice per unit run, nested like the CPU's contexts). Tracing never
/// changes the simulated results.
pub fn run_traced(
    cfg: HostConfig,
    window: TraceWindow,
    sink: &mut dyn TraceSink,
    progress: impl FnMut(hostsim_engine::Time),
) -> RunOutput {
    try_run_traced(cfg, window, sink, progress).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn output(host: &mut sim::Host) -> RunOutput {
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
