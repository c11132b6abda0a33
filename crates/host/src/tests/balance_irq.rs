//! balance_irq's idle test on a real `Host` (issue 26 item 1): which CPUs `IDLE_ENOUGH` takes as
//! idle when the IRQ moves (`kernel/irq/route.rs` `idle_enough`, called from
//! `drivers/net/nic.rs` `route_irq`).

use crate::config::*;
use crate::kernel::cpu::{Frame, Work};
use crate::tests::util::Host;
use crate::tests::util::{host, nic, sink};
use crate::types::*;
use hostsim_engine::Time;

/// Four CPUs, one NIC under balance_irq moving at every interrupt, two sleeping processes.
fn four_cpus(test: BalanceIrqIdle) -> Host {
    let kernel = KernelConfig { rx_path: RxPath::Legacy, balance_irq_idle: test, ..KernelConfig::default() };
    let mut n = nic("eth0", IrqRouting::BalanceIrq);
    n.balance_irq_interval_us = Some(0);
    host(4, kernel, vec![n], vec![sink("a", 1, 0), sink("b", 2, 0)])
}

/// CPU `cpu` runs interrupt work (a frame at `level`) with the idle task current.
fn irq_work(h: &mut Host, cpu: usize, state: CpuState) {
    let work = if state == CpuState::Hardirq { Work::IrqEntry(IrqSrc::Nic(0)) } else { Work::SoftirqEntry };
    h.cpus[cpu].stack.push(Frame { work, state, remaining: 1_000 });
    h.cpus[cpu].curr = None;
}

/// Where the IRQ goes from CPU 0, over many draws of the direction: every move must land on
/// `want` (the only idle-enough CPU), whichever way the search goes.
fn moves_to(h: &mut Host, want: usize) {
    for i in 0..40u64 {
        h.dev.queues[0].router.cpu = 0;
        h.q.advance(Time::from_ms(100 + i));
        assert_eq!(h.route_irq(0), want, "draw {i}: the IRQ must go to CPU {want}");
    }
}

/// A CPU spinning in a flood's hard IRQ (or its softirq) with the idle task current counts as
/// idle: the IRQ moves onto it, past a CPU running a task and one running ksoftirqd.
#[test]
fn interrupt_work_with_the_idle_task_current_counts_as_idle() {
    for state in [CpuState::Hardirq, CpuState::Softirq] {
        let mut h = four_cpus(BalanceIrqIdle::IdleCpu);
        h.cpus[0].curr = Some(0);
        irq_work(&mut h, 1, state);
        h.cpus[2].curr = Some(1); // a task
        let k = h.cpus[3].ksoftirqd;
        h.cpus[3].curr = Some(k); // ksoftirqd
        moves_to(&mut h, 1);
    }
}

/// The other side: a CPU with ksoftirqd current or any task current is never idle enough, even
/// when it does no interrupt work; the only CPU with the idle task current wins.
#[test]
fn ksoftirqd_or_a_task_current_is_busy() {
    let mut h = four_cpus(BalanceIrqIdle::IdleCpu);
    h.cpus[0].curr = Some(0);
    let k = h.cpus[1].ksoftirqd;
    h.cpus[1].curr = Some(k);
    h.cpus[2].curr = None; // idle, no work at all
    h.cpus[3].curr = Some(1);
    moves_to(&mut h, 2);
    // With every other CPU busy the search comes round to CPU 0 and then takes the first allowed
    // neighbour in its direction (B1's `move`: `search_idle = 0` after a full circle).
    h.cpus[2].curr = Some(1);
    let mut seen = [false; 4];
    for i in 0..40u64 {
        h.dev.queues[0].router.cpu = 0;
        h.q.advance(Time::from_ms(200 + i));
        seen[h.route_irq(0)] = true;
    }
    assert_eq!(seen, [false, true, false, true], "neighbours 1 and 3, by direction");
}

/// 2.5's form also wants the idle loop entered more than a jiffy ago: a CPU that went idle this
/// jiffy is passed over, one idle for two jiffies is taken, interrupt work or not.
#[test]
fn idle_timestamp_form_wants_two_jiffies_of_idle() {
    let mut h = four_cpus(BalanceIrqIdle::IdleTimestamp);
    let jiffy = h.tick_ns();
    h.cpus[0].curr = Some(0);
    h.cpus[1].curr = Some(1);
    h.cpus[3].curr = Some(1);
    irq_work(&mut h, 2, CpuState::Hardirq);
    h.dev.queues[0].router.cpu = 0;
    h.q.advance(Time(100 * jiffy));
    h.cpus[2].idle_since = Time(100 * jiffy);
    let c = h.route_irq(0);
    assert!(c == 1 || c == 3, "just gone idle: not idle enough, the search wraps to a neighbour ({c})");
    h.cpus[2].idle_since = Time(97 * jiffy);
    moves_to(&mut h, 2);
}
