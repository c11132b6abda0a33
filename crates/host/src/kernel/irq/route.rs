//! IRQ routing policies: which CPU a NIC queue's interrupt goes to (`route`).
//!
//! Every policy honours the queue's affinity mask (`allowed`), which a mechanism may narrow at
//! run time (but never to empty: Linux refuses an empty IRQ affinity).

use crate::config::{BalanceIrqIdle, IrqRouting, NicConfig};
use hostsim_engine::{Rng, Time};

/// `IDLE_ENOUGH(cpu, now)` of the irqbalance patch's `move()` (arch/i386/kernel/io_apic.c), for a
/// CPU whose `current` is its idle task (`idle_task_current`) and which entered the idle loop at
/// jiffy `idle_timestamp` (`irq_stat[cpu].idle_timestamp`), at jiffy `now`:
///
/// - `IdleCpu` (irqbalance-2.4.17-B1, Red Hat's 2.4.18): `idle_cpu(cpu)` alone, B1 never writing
///   the timestamp (see [`BalanceIrqIdle`]). A CPU that spends all its time in a flood's hard IRQ
///   and NET_RX softirq with the idle task current counts as idle: interrupt work does not change
///   `current` (do_IRQ and do_softirq at irq_exit run on the interrupted task's stack). A CPU
///   running ksoftirqd, or any task, does not.
/// - `IdleTimestamp` (2.5): `idle_cpu(cpu) && now - idle_timestamp > 1`.
#[inline]
pub fn idle_enough(test: BalanceIrqIdle, idle_task_current: bool, now: u64, idle_timestamp: u64) -> bool {
    match test {
        BalanceIrqIdle::IdleCpu => idle_task_current,
        BalanceIrqIdle::IdleTimestamp => idle_task_current && now.saturating_sub(idle_timestamp) > 1,
    }
}

#[derive(Clone, Debug)]
pub struct IrqRouter {
    pub kind: IrqRouting,
    /// CPUs the IRQ may go to (`/proc/irq/N/smp_affinity`).
    pub allowed: u128,
    /// The configured mask (what `allowed` returns to when a mechanism restores it).
    pub base: u128,
    /// Current target (balance_irq moves it; fixed/msix keep it).
    pub cpu: usize,
    last_move: Time,
}

impl IrqRouter {
    pub fn new(nic: &NicConfig, queue: u32, ncpu: usize) -> IrqRouter {
        let cpus: Vec<u32> = if nic.irq_cpus.is_empty() { (0..ncpu as u32).collect() } else { nic.irq_cpus.clone() };
        let (allowed, cpu) = match nic.irq_routing {
            IrqRouting::Fixed => (1u128 << cpus[0], cpus[0] as usize),
            IrqRouting::Msix => {
                let c = cpus[queue as usize % cpus.len()];
                (1u128 << c, c as usize)
            }
            IrqRouting::Mask | IrqRouting::BalanceIrq => {
                let m = cpus.iter().fold(0u128, |m, &c| m | (1u128 << c));
                (m, cpus[0] as usize)
            }
        };
        IrqRouter { kind: nic.irq_routing, allowed, base: allowed, cpu, last_move: Time::ZERO }
    }

    /// Narrow or widen the affinity mask. An empty mask is refused (returns false).
    pub fn set_affinity(&mut self, mask: u128) -> bool {
        if mask == 0 {
            return false;
        }
        self.allowed = mask;
        true
    }

    /// The CPU for the next interrupt under a policy that needs no clock, randomness or CPU
    /// states (fixed, MSI-X, mask): `route`'s answer without building its arguments (for
    /// modern-64c's ~90,000 MSI-X interrupts per 20 simulated ms that was ~45 instructions
    /// each, callgrind). None under balance_irq.
    #[inline]
    pub fn route_static(&self) -> Option<usize> {
        match self.kind {
            IrqRouting::Fixed | IrqRouting::Msix | IrqRouting::Mask => Some(self.static_cpu()),
            IrqRouting::BalanceIrq => None,
        }
    }

    #[inline]
    fn static_cpu(&self) -> usize {
        if self.allowed & (1u128 << self.cpu) != 0 {
            self.cpu
        } else {
            self.allowed.trailing_zeros() as usize
        }
    }

    /// The CPU for the next interrupt.
    pub fn route(
        &mut self,
        now: Time,
        balance_interval: Time,
        ncpu: usize,
        rng: &mut Rng,
        idle_enough: impl Fn(usize) -> bool,
    ) -> usize {
        let allowed = |c: usize| self.allowed & (1u128 << c) != 0;
        match self.kind {
            IrqRouting::Fixed | IrqRouting::Msix | IrqRouting::Mask => self.static_cpu(),
            IrqRouting::BalanceIrq => {
                // irqbalance-2.4.17-B1 / 2.5 arch/i386/kernel/io_apic.c balance_irq()/move(): at
                // most every `balance_interval` step from the current CPU in a random direction
                // to the first allowed CPU that is IDLE_ENOUGH ([`idle_enough`]); if a full
                // circle finds none, the first allowed CPU in that direction.
                let due = balance_interval == Time::ZERO || now.since(self.last_move) > balance_interval;
                if due || !allowed(self.cpu) {
                    self.last_move = now;
                    let up = rng.below(2) == 1;
                    let step = |c: usize| if up { (c + 1) % ncpu } else { (c + ncpu - 1) % ncpu };
                    // do { if (cpu == curr_cpu) search_idle = 0; inside: step } while
                    //   (!IRQ_ALLOWED(cpu) || (search_idle && !IDLE_ENOUGH(cpu, now)));
                    let mut c = self.cpu;
                    let mut search_idle = true;
                    for i in 0..3 * ncpu {
                        if i > 0 && c == self.cpu {
                            search_idle = false;
                        }
                        c = step(c);
                        if allowed(c) && (!search_idle || idle_enough(c)) {
                            break;
                        }
                    }
                    if allowed(c) {
                        self.cpu = c;
                    }
                }
                self.cpu
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IrqRouting;
    use hostsim_engine::RngStreams;

    fn nic(kind: IrqRouting, cpus: Vec<u32>) -> NicConfig {
        NicConfig {
            name: "eth0".into(),
            rate_mbps: 1000,
            queues: 4,
            rx_ring: 256,
            tx_ring: 256,
            tx_queue_len: 100,
            tx_irq_ring_level: None,
            coalesce_frames: 1,
            coalesce_usecs: 0,
            irq_routing: kind,
            irq_cpus: cpus,
            switch_latency_ns: 0,
            switch_buffer_bytes: 1 << 20,
            itr_ints_per_s: 0,
            balance_irq_interval_us: None,
            fdir_atr_sample_rate: 0,
            itr_mode: Default::default(),
            gro: false,
            rsc_max_desc: 0,
        }
    }

    /// `route_static` answers as `route` for the policies without state, also with a narrowed
    /// mask that excludes the current CPU, and declines balance_irq.
    #[test]
    fn route_static_agrees_with_route() {
        let mut rng = RngStreams::new(9).stream("t");
        for kind in [IrqRouting::Fixed, IrqRouting::Msix, IrqRouting::Mask] {
            let n = nic(kind, vec![1, 2, 3]);
            for q in 0..4 {
                let mut r = IrqRouter::new(&n, q, 4);
                for mask in [r.allowed, 0b1000u128, 0b0110] {
                    r.set_affinity(mask);
                    let s = r.route_static();
                    assert_eq!(s, Some(r.route(Time::from_ms(1), Time::from_ms(20), 4, &mut rng, |_| true)));
                }
            }
        }
        let r = IrqRouter::new(&nic(IrqRouting::BalanceIrq, vec![]), 0, 4);
        assert_eq!(r.route_static(), None);
    }

    /// Both forms of IDLE_ENOUGH: B1's is the idle task alone; 2.5's also wants the idle loop
    /// entered more than one jiffy ago (two jiffies' difference, integer jiffies).
    #[test]
    fn idle_enough_forms() {
        use crate::config::BalanceIrqIdle::*;
        for (now, ts) in [(0, 0), (5, 5), (100, 0), (7, 6)] {
            assert!(idle_enough(IdleCpu, true, now, ts), "B1 ignores the timestamp ({now}, {ts})");
            assert!(!idle_enough(IdleCpu, false, now, ts), "a task current is never idle");
        }
        assert!(!idle_enough(IdleTimestamp, true, 6, 5), "one jiffy is not more than one");
        assert!(idle_enough(IdleTimestamp, true, 7, 5));
        assert!(!idle_enough(IdleTimestamp, false, 700, 5));
    }

    #[test]
    fn msix_spreads_queues() {
        let n = nic(IrqRouting::Msix, vec![]);
        let cpus: Vec<usize> = (0..4).map(|q| IrqRouter::new(&n, q, 4).cpu).collect();
        assert_eq!(cpus, [0, 1, 2, 3]);
    }

    #[test]
    fn balance_irq_moves_to_neighbours_within_mask_and_never_empty() {
        let n = nic(IrqRouting::BalanceIrq, vec![]);
        let mut r = IrqRouter::new(&n, 0, 4);
        let mut rng = RngStreams::new(9).stream("t");
        let mut seen = [0u32; 4];
        let mut prev = r.cpu;
        for i in 1..400u64 {
            let c = r.route(Time::from_ms(i * 30), Time::from_ms(20), 4, &mut rng, |_| false);
            let d = (c + 4 - prev) % 4;
            assert!(d == 1 || d == 3, "moved from {prev} to {c}: not a neighbour");
            prev = c;
            seen[c] += 1;
        }
        assert!(seen.iter().all(|&s| s > 0), "{seen:?}");
        assert!(!r.set_affinity(0), "an empty mask must be refused");
        assert!(r.set_affinity(0b0100));
        for i in 400..420u64 {
            assert_eq!(r.route(Time::from_ms(i * 30), Time::from_ms(20), 4, &mut rng, |_| false), 2);
        }
    }
}
