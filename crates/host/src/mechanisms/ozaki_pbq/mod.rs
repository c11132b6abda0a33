//! `ozaki-pbq` (paper 000: Ozaki & Nakayama, priority-based receive processing in Linux 2.4.18).
//!
//! Baseline it changes: Linux 2.4's per-CPU FIFO backlog with its throttle state
//! (`net/core/rx.rs`, `net/core/backlog.rs`), and the NIC's IRQ affinity (`kernel/irq/route.rs`).
//!
//! - `pbq`: Priority-Based Queues, a backlog policy (hook: `BacklogPolicy::enqueue`/`dequeue`,
//!   §3.2, Figs. 3–4).
//! - `suppress`: interrupt suppression at context switch (hook: `Host::switch_hook`, §3.3).
//! - `xdp`: the priority drop moved to the driver's entry point as `hostsim live` runs it with
//!   XDP on today's Linux, and its agent's high-load detector (hook: the NAPI poll's driver entry).

pub mod pbq;
pub mod suppress;
pub mod xdp;
