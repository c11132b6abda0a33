//! Interrupt suppression as the live agent does it (`kernel.napi_suppress`; paper 000 §3.3 on
//! today's Linux, crates/live/src/ozaki_pbq/suppress.rs and agent.rs), beside `suppress.rs`, which is the
//! paper's own rule at the context switch.
//!
//! With threaded NAPI (`net/core/napi_thread.rs`) the receive work of the NIC queues runs in
//! kthreads bound to the server's CPU at SCHED_FIFO: they preempt the server processes as 2.4's
//! interrupts did. Every `napi_suppress_check_ms` the agent checks the rule ([`wanted`]): the
//! detector of the XDP program (`xdp.rs`, the same state machine live runs; `kernel.xdp` =
//! `"pbq"` or `"detect"`) is in high load, and the sockets of the highest priority level bound
//! hold more than `napi_suppress_queued_bytes_min` bytes (what they are charged: the live
//! `/proc/net/udp` `rx_queue`). While it holds, the kthreads are
//! - `affinity`: bound to the first online CPU other than their own (the live agent's
//!   `away_cpus`, every CPU but the server's; on the twin's 2 CPUs the same CPU), standing for
//!   the IRQ affinity write; back to their own CPU when it no longer holds;
//! - `priority`: dropped to SCHED_OTHER nice 0 on their CPU (standing for "no interrupt on this
//!   CPU while the process runs": the scheduler now runs a nice −19 server before them), and
//!   back to SCHED_FIFO `napi_rt_prio`.
//!
//! The agent is not a process here: a periodic timer of the mechanism's (the host's `Ev::Mech`)
//! applies the change at once, costing no CPU time (live it is a user-space thread on the
//! machine, and its `sched_setaffinity` / `sched_setscheduler` calls take tens of µs). Like the live agent, and unlike the paper's rule,
//! it acts every check period, not at the context switch, and a running kthread that must move
//! leaves at its next frame (`napi_thread.rs`).

use super::options::{NapiSuppress, OzakiOptions};
use crate::hooks::{part, timer_id, Packets, Part, Project, Reach, Tasks, Timers};
use hostsim_engine::{Time, Timer};

/// The live rule (crates/live/src/ozaki_pbq/suppress.rs `wanted`): suppress while the detector says high
/// load and the top level's sockets hold more than `queued_bytes_min` bytes.
pub fn wanted(high_load: bool, top_queued_bytes: u64, queued_bytes_min: u64) -> bool {
    high_load && top_queued_bytes > queued_bytes_min
}

/// The agent's state and counters (live `Suppressor`).
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

/// The agent (`kernel.napi_suppress` other than `off`).
pub struct NapiAgent {
    knob: NapiSuppress,
    check_ms: u64,
    queued_bytes_min: u64,
    rt_prio: u8,
    pub supp: NapiSupp,
    /// Changes and time suppressed at the end of the warm-up.
    pub warm: (u64, u64),
    timer: Timer,
}

/// The agent's timer (its mechanism-local id).
pub const TIMER: u32 = 1;

impl NapiAgent {
    /// The agent of `o.napi_suppress`; `rt_prio` is the kthreads' own priority (`kernel.napi_rt_prio`).
    pub fn new(k: &OzakiOptions, rt_prio: u8) -> NapiAgent {
        NapiAgent {
            knob: k.napi_suppress,
            check_ms: k.napi_suppress_check_ms.max(1),
            queued_bytes_min: k.napi_suppress_queued_bytes_min,
            rt_prio,
            supp: NapiSupp::default(),
            warm: (0, 0),
            timer: Timer::new(),
        }
    }
}

/// Where a mechanism keeps its agent (None: `napi_suppress = "off"`).
pub type Slot = Option<NapiAgent>;

/// The first check, one period after the start.
pub fn start<S: Part<Slot>, M: Project<S>, H: Reach<M> + Timers>(h: &mut H) {
    let Some(a) = part::<Slot, S, M>(h).as_mut() else { return };
    let (gen, at) = (a.timer.arm(), Time::from_ms(a.check_ms));
    h.poll_at(timer_id::<S, M>(TIMER), gen, at);
}

/// The agent's check (its timer fired): evaluate the rule (`high_load`: the XDP detector's
/// flag) and move or lower the NAPI kthreads, or put them back; then check again one period
/// later.
pub fn check<S: Part<Slot>, M: Project<S>, H: Reach<M> + Tasks + Packets + Timers>(
    h: &mut H,
    gen: u32,
    high_load: bool,
) {
    let Some(a) = part::<Slot, S, M>(h).as_mut() else { return };
    if !a.timer.fires(gen) {
        return;
    }
    let (_, queued) = h.top_level_sockets();
    let now = h.now();
    let a = part::<Slot, S, M>(h).as_mut().expect("checked");
    let want = wanted(high_load, queued, a.queued_bytes_min);
    let (knob, rt_prio) = (a.knob, a.rt_prio);
    if a.supp.set(want, now.ns()) {
        let ncpu = h.ncpus();
        for (pid, home) in h.napi_kthreads() {
            match knob {
                NapiSuppress::Off => {}
                NapiSuppress::Affinity => {
                    let to = if want { (0..ncpu).find(|&c| c != home).unwrap_or(home) } else { home };
                    h.kthread_set_cpu(pid, to);
                }
                NapiSuppress::Priority => h.kthread_set_class(pid, (!want).then_some(rt_prio)),
            }
        }
    }
    let a = part::<Slot, S, M>(h).as_mut().expect("checked");
    let (gen, at) = (a.timer.arm(), now + Time::from_ms(a.check_ms));
    h.poll_at(timer_id::<S, M>(TIMER), gen, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_needs_both_high_load_and_data() {
        assert!(wanted(true, 1, 0));
        assert!(!wanted(true, 0, 0), "an empty top-level socket");
        assert!(!wanted(false, 10_000, 0), "no high load");
        assert!(!wanted(true, 100, 100), "not above the threshold");
    }

    #[test]
    fn counters_follow_the_stretches() {
        let mut s = NapiSupp::default();
        assert!(!s.set(false, 10), "already off: no change");
        assert!(s.set(true, 100));
        assert_eq!(s.suppressed_ns(150), 50, "the current stretch counts");
        assert!(!s.set(true, 200));
        assert!(s.set(false, 300));
        assert!(s.set(true, 1000));
        assert_eq!((s.changes, s.suppressed_ns(1100)), (3, 300));
    }
}
