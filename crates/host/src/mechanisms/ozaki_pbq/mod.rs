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

/// The agent's state and counters (live `Suppressor`).
/// (Kept apart from `napi_suppress.rs`, which is an `impl Host`: `MechState` holds it.)
#[derive(Clone, Debug, Default)]
pub struct NapiSupp {
    pub on: bool,
    /// When the current suppressed stretch began.
    since_ns: u64,
    /// Changes made (suppress + release) and time suppressed in the stretches already ended.
    pub changes: u64,
    ended_ns: u64,
}

impl NapiSupp {
    /// Switch to `on` at `now_ns`; returns whether anything changed.
    pub fn set(&mut self, on: bool, now_ns: u64) -> bool {
        if on == self.on {
            return false;
        }
        if on {
            self.since_ns = now_ns;
        } else {
            self.ended_ns += now_ns - self.since_ns;
        }
        self.on = on;
        self.changes += 1;
        true
    }

    /// Time suppressed up to `now_ns`, the current stretch included.
    pub fn suppressed_ns(&self, now_ns: u64) -> u64 {
        self.ended_ns + if self.on { now_ns - self.since_ns } else { 0 }
    }
}
