//! `ozaki-pbq` (paper 000: Ozaki & Nakayama, priority-based receive processing in Linux 2.4.18).
//!
//! Baseline it changes: Linux 2.4's per-CPU FIFO backlog with its throttle state
//! (`net/core/rx.rs`, `net/core/backlog.rs`), and the NIC's IRQ affinity (`kernel/irq/route.rs`).
//!
//! - `pbq`: Priority-Based Queues, a backlog policy (hook: `BacklogPolicy::enqueue`/`dequeue`,
//!   §3.2, Figs. 3–4).
//! - `suppress`: interrupt suppression at context switch (hook: `Host::switch_hook`, §3.3).
//! - `napi_suppress`: §3.3 as the live agent does it with threaded NAPI (`net/core/napi_thread.rs`):
//!   every `napi_suppress_check_ms` a timer moves the NAPI kthreads off the server's CPU or lowers
//!   them to SCHED_OTHER while the rule holds (hook: a periodic event, `Ev::NapiSuppress`).
//! - `xdp`: the priority drop moved to the driver's entry point as `hostsim live` runs it with
//!   XDP on today's Linux, and its agent's high-load detector (hook: the NAPI poll's driver entry).

pub mod napi_suppress;
pub mod pbq;
pub mod suppress;
pub mod xdp;
