//! Paper 000's interrupt suppression at context switch (`mechanisms/ozaki_pbq/suppress.rs`),
//! through the hook the scheduler calls (`Mechanisms::context_switch`), and the port → priority
//! table it reads.

use crate::config::*;
use crate::hooks::Mechanisms;
use crate::mechanisms::Registry;
use crate::tests::util::{host, nic, sink, Host};

/// Two CPUs, one NIC, a nice −20 reader whose socket is over half full, a throttled backlog:
/// every condition for suppression holds, and the draw always succeeds at nice −20.
fn armed(ncpu: u32) -> Host {
    let k = KernelConfig { rx_path: RxPath::Legacy, ..KernelConfig::default() }.with("irq_suppression", true);
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
    Registry::context_switch(&mut h, 1, Some(0));
    assert_eq!(h.dev.queues[0].router.allowed, 0b1101, "CPU 1 taken out of the IRQ affinity");
    Registry::context_switch(&mut h, 1, None); // the next switch on CPU 1 is to idle: conditions end
    assert_eq!(h.dev.queues[0].router.allowed, 0b1111, "restored");
}

#[test]
fn suppression_never_masks_all_cpus() {
    let mut h = armed(2);
    Registry::context_switch(&mut h, 0, Some(0));
    assert_eq!(h.dev.queues[0].router.allowed, 0b10);
    Registry::context_switch(&mut h, 1, Some(0));
    assert_eq!(h.dev.queues[0].router.allowed, 0b10, "the last CPU keeps the interrupt");
    assert_ne!(h.dev.queues[0].router.allowed, 0);
}

#[test]
fn no_suppression_below_high_load_or_with_a_light_socket() {
    let k = KernelConfig::default().with("irq_suppression", true);
    let mut h = host(2, k, vec![nic("eth0", IrqRouting::BalanceIrq)], vec![sink("hi", 7, -20)]);
    h.net.socks[0].used = h.net.socks[0].rcvbuf; // full socket, but no high load
    Registry::context_switch(&mut h, 0, Some(0));
    assert_eq!(h.dev.queues[0].router.allowed, 0b11);
    let mut h = armed(2);
    h.net.socks[0].used = 0; // high load, but the socket is empty
    Registry::context_switch(&mut h, 0, Some(0));
    assert_eq!(h.dev.queues[0].router.allowed, 0b11);
}

#[test]
fn priority_table_follows_bind_and_nice() {
    let k = KernelConfig { backlog: Policy::new("pbq"), ..KernelConfig::default() };
    // Two processes share port 7 (nice 5 and nice 10); one has port 8 (nice 19).
    let mut h = host(2, k, vec![], vec![sink("a", 7, 5), sink("b", 7, 10), sink("c", 8, 19)]);
    let level = |h: &Host, port: usize| h.net.socks[h.net.port_sock[port] as usize].level;
    assert_eq!(level(&h, 7), crate::types::level_of_nice(5), "bind: the highest priority of the socket's processes");
    assert_eq!(level(&h, 8), 0);
    h.set_nice(0, 15); // a becomes less important than b
    assert_eq!(level(&h, 7), crate::types::level_of_nice(10));
    h.set_nice(2, -19);
    assert_eq!(level(&h, 8), crate::types::level_of_nice(-19));
}
