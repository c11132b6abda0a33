//! Interrupt suppression at context switch (`ozaki-pbq`, paper 000 §3.3).
//!
//! In `schedule()`, when the incoming process waits on a socket whose buffer is over half full,
//! the receive path is in its high-load state (some CPU's backlog is throttled / in PBQ mode),
//! and a draw weighted by the process's priority succeeds (probability (level + 1) / 40, so
//! nice −19 almost always, nice 19 almost never), the CPU is taken out of every NIC queue's IRQ
//! affinity, so the IRQ router sends interrupts elsewhere while the process drains its socket.
//! At the CPU's next context switch the conditions are checked again and the CPU restored if
//! they no longer hold. Linux refuses an empty IRQ affinity, so a CPU is never suppressed if
//! that would leave some queue with no CPU at all.

use crate::sim::*;
use crate::types::*;

impl Host {
    /// The context-switch hook: returns the extra ns the switch costs.
    pub fn switch_hook(&mut self, cpu: usize, next: Option<Pid>) -> u64 {
        if !self.cfg.kernel.irq_suppression {
            return 0;
        }
        let m = &self.cfg.profile.mechanisms;
        let (check, write) = (m.irq_suppress_check_ns, m.irq_affinity_write_ns);
        let high_load = self.cpus.iter().any(|c| c.backlog.high_load());
        let want = match next {
            Some(pid) if high_load => {
                let p = &self.procs[pid as usize];
                let s = p.sock;
                let over_half = s != NONE && {
                    let sk = &self.net.socks[s as usize];
                    u64::from(sk.used) * 2 > u64::from(sk.rcvbuf)
                };
                let prob = f64::from(level_of_nice(p.nice) + 1) / LEVELS as f64;
                over_half && self.mech.rng_suppress.chance(prob)
            }
            _ => false,
        };
        let bit = 1u128 << cpu;
        if want == (self.mech.suppressed & bit != 0) {
            return check;
        }
        let new = if want { self.mech.suppressed | bit } else { self.mech.suppressed & !bit };
        if want && self.dev.queues.iter().any(|q| q.router.base & !new == 0) {
            return check; // it would mask every CPU of some queue
        }
        self.mech.suppressed = new;
        for q in &mut self.dev.queues {
            let ok = q.router.set_affinity(q.router.base & !new);
            debug_assert!(ok, "suppression left an empty IRQ affinity");
        }
        if want {
            self.stats.irq_suppressions += 1;
        }
        check + write * self.dev.queues.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use crate::config::*;
    use crate::tests::util::{host, nic, sink};

    /// Two CPUs, one NIC, a nice −20 reader whose socket is over half full, a throttled backlog:
    /// every condition for suppression holds, and the draw always succeeds at nice −20.
    fn armed(ncpu: u32) -> crate::sim::Host {
        let k = KernelConfig { irq_suppression: true, rx_path: RxPath::Legacy, ..KernelConfig::default() };
        let mut h = host(ncpu, k, vec![nic("eth0", IrqRouting::BalanceIrq)], vec![sink("hi", 7, -20)]);
        let sk = &mut h.net.socks[0];
        sk.used = sk.rcvbuf / 2 + 1;
        // Overflow CPU 0's backlog so the receive path is in its high-load state.
        for i in 0..=h.cfg.kernel.netdev_max_backlog + 1 {
            h.cpus[0].backlog.enqueue(i, 0);
        }
        assert!(h.cpus[0].backlog.high_load());
        h
    }

    #[test]
    fn suppression_masks_the_cpu_then_restores_it() {
        let mut h = armed(4);
        h.switch_hook(1, Some(0));
        assert_eq!(h.dev.queues[0].router.allowed, 0b1101, "CPU 1 taken out of the IRQ affinity");
        h.switch_hook(1, None); // the next switch on CPU 1 is to idle: conditions end
        assert_eq!(h.dev.queues[0].router.allowed, 0b1111, "restored");
    }

    #[test]
    fn suppression_never_masks_all_cpus() {
        let mut h = armed(2);
        h.switch_hook(0, Some(0));
        assert_eq!(h.dev.queues[0].router.allowed, 0b10);
        h.switch_hook(1, Some(0));
        assert_eq!(h.dev.queues[0].router.allowed, 0b10, "the last CPU keeps the interrupt");
        assert_ne!(h.dev.queues[0].router.allowed, 0);
    }

    #[test]
    fn no_suppression_below_high_load_or_with_a_light_socket() {
        let k = KernelConfig { irq_suppression: true, ..KernelConfig::default() };
        let mut h = host(2, k, vec![nic("eth0", IrqRouting::BalanceIrq)], vec![sink("hi", 7, -20)]);
        h.net.socks[0].used = h.net.socks[0].rcvbuf; // full socket, but no high load
        h.switch_hook(0, Some(0));
        assert_eq!(h.dev.queues[0].router.allowed, 0b11);
        let mut h = armed(2);
        h.net.socks[0].used = 0; // high load, but the socket is empty
        h.switch_hook(0, Some(0));
        assert_eq!(h.dev.queues[0].router.allowed, 0b11);
    }

    #[test]
    fn priority_table_follows_bind_and_nice() {
        let k = KernelConfig { backlog: BacklogKind::Pbq, ..KernelConfig::default() };
        // Two processes share port 7 (nice 5 and nice 10); one has port 8 (nice 19).
        let mut h = host(2, k, vec![], vec![sink("a", 7, 5), sink("b", 7, 10), sink("c", 8, 19)]);
        let level = |h: &crate::sim::Host, port: usize| h.net.socks[h.net.port_sock[port] as usize].level;
        assert_eq!(
            level(&h, 7),
            crate::types::level_of_nice(5),
            "bind: the highest priority of the socket's processes"
        );
        assert_eq!(level(&h, 8), 0);
        h.set_nice(0, 15); // a becomes less important than b
        assert_eq!(level(&h, 7), crate::types::level_of_nice(10));
        h.set_nice(2, -19);
        assert_eq!(level(&h, 8), crate::types::level_of_nice(-19));
    }
}
