//! Interrupt suppression as the live agent does it (`kernel.napi_suppress`; paper 000 §3.3 on
//! today's Linux, crates/live/src/suppress.rs and agent.rs), beside `suppress.rs`, which is the
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
//! The agent is not a process here: a periodic timer event applies the change at once, costing
//! no CPU time (live it is a user-space thread on the machine, and its `sched_setaffinity` /
//! `sched_setscheduler` calls take tens of µs). Like the live agent, and unlike the paper's rule,
//! it acts every check period, not at the context switch, and a running kthread that must move
//! leaves at its next frame (`napi_thread.rs`).

#[cfg(test)]
use super::NapiSupp;
use crate::config::NapiSuppress;
use crate::sim::*;
use crate::types::*;

/// The live rule (crates/live/src/suppress.rs `wanted`): suppress while the detector says high
/// load and the top level's sockets hold more than `queued_bytes_min` bytes.
pub fn wanted(high_load: bool, top_queued_bytes: u64, queued_bytes_min: u64) -> bool {
    high_load && top_queued_bytes > queued_bytes_min
}

impl Host {
    /// The agent's check: evaluate the rule and move or lower the NAPI kthreads, or put them back.
    pub fn napi_suppress_check(&mut self) {
        let top = self.net.socks.iter().map(|s| s.level).max().unwrap_or(0);
        let queued: u64 = self.net.socks.iter().filter(|s| top > 0 && s.level == top).map(|s| u64::from(s.used)).sum();
        let want = wanted(self.mech.xdp.high_load(), queued, self.cfg.kernel.napi_suppress_queued_bytes_min);
        if !self.mech.napi_supp.set(want, self.q.now().ns()) {
            return;
        }
        for q in 0..self.dev.queues.len() {
            let pid = self.dev.queues[q].napi_thread;
            if pid == NONE {
                continue;
            }
            match self.cfg.kernel.napi_suppress {
                NapiSuppress::Off => {}
                NapiSuppress::Affinity => {
                    let home = self.napi_home_cpu(q);
                    let to = if want { (0..self.cpus.len()).find(|&c| c != home).unwrap_or(home) } else { home };
                    self.napi_kthread_set_cpu(pid, to);
                }
                NapiSuppress::Priority => {
                    let rt = (!want).then_some(self.cfg.kernel.napi_rt_prio);
                    self.napi_kthread_set_class(pid, rt);
                }
            }
        }
    }

    /// Where queue `q`'s kthread runs when not suppressed: the first CPU of its NIC's
    /// `irq_cpus` (`kernel/task.rs` `spawn_napi_kthreads`).
    fn napi_home_cpu(&self, q: usize) -> usize {
        let nic = self.dev.queues[q].nic as usize;
        self.dev.nics[nic].cfg.irq_cpus.first().map_or(0, |&c| c as usize)
    }
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
