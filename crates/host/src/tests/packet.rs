//! The packet slab's TCP side table (`Host::pkts_tcp`, `Host::pkt_tcp`): a TCP packet reads back
//! its TCP fields, a UDP packet the defaults, whatever packet used its slot before.

use crate::config::KernelConfig;
use crate::net::core::skbuff::{Packet, PacketTcp};
use crate::tests::util;
use crate::types::NONE;
use hostsim_engine::Time;

fn packet(tcp: bool) -> Packet {
    Packet {
        src: 0,
        flow: 0,
        seq: 0,
        bytes: 100,
        tcp,
        live: true,
        dst_port: 9000,
        hash: 1,
        queue: 0,
        rx_cpu: NONE,
        fwd: NONE,
        t_sock: Time::ZERO,
        t_nic: Time::ZERO,
    }
}

/// A packet's TCP fields live beside the slab: a TCP packet reads back what it was given, a
/// UDP packet reads the defaults, also in a slot a TCP packet used before it.
#[test]
fn packet_tcp_fields_follow_the_slot() {
    let mut h = util::host(1, KernelConfig::default(), vec![], vec![]);
    let ack = PacketTcp { ack: Some(7), tag: 3, win: 65535, tx_segs: 0, flags: 1 };
    let a = h.skb.alloc(packet(true), ack);
    let b = h.skb.alloc(packet(false), PacketTcp::default());
    assert_eq!(h.skb.tcp(a), ack);
    assert_eq!(h.skb.tcp(b), PacketTcp::default());
    h.skb.free(a);
    let c = h.skb.alloc(packet(false), PacketTcp::default());
    assert_eq!(c, a, "the slab reuses the freed slot");
    assert_eq!(h.skb.tcp(c), PacketTcp::default(), "a UDP packet never sees a stale TCP entry");
    h.skb.free(c);
    let d = h.skb.alloc(packet(true), PacketTcp { ack: None, ..ack });
    assert_eq!(d, a);
    assert_eq!(h.skb.tcp(d).ack, None);
    assert_eq!(std::mem::size_of::<Packet>(), 64);
    assert_eq!(std::mem::align_of::<Packet>(), 64);
}
