//! Packets (Linux's `sk_buff`) and the slab they live in: no allocation in steady state. A
//! packet is one cache line; the fields only TCP packets use are beside the slab
//! ([`PacketTcp`]), so a UDP packet never touches them.

use crate::types::*;
use hostsim_engine::Time;

// One cache line per packet (`align(64)`, 56 bytes of fields): a queued packet's first touch
// after a wait (the NIC ring, a backlog, a socket queue) is a cache miss on the 64-CPU host, and
// a 96-byte packet straddled two lines. The fields only TCP packets use are beside the slab, in
// `PacketTcp`. Layout only: no behaviour depends on it.
#[repr(align(64))]
pub struct Packet {
    pub src: u32,
    pub flow: u32,
    pub seq: u64,
    pub bytes: u32,
    pub tcp: bool,
    /// False once freed (slab bookkeeping).
    pub live: bool,
    pub dst_port: u16,
    pub hash: u32,
    pub queue: u32,
    pub rx_cpu: u32,
    /// The sink it is forwarded to (`Host::srcs` index), NONE if it is for a local socket.
    pub fwd: u32,
    pub t_sock: Time,
    /// When the frame reached the NIC.
    pub t_nic: Time,
}

// (A packet must stay within one cache line: see above.)
const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// A TCP packet's TCP fields, kept in `PacketSlab::pkts_tcp` at the packet's index (written when a TCP
/// packet is allocated; read through [`PacketSlab::tcp`], which gives a UDP packet the defaults:
/// no ACK, window 0, no flags, no tag).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketTcp {
    /// A TCP acknowledgement (pure ACK to a sending connection) and its window.
    pub ack: Option<u64>,
    /// The application's label of the message the segment carries (`Emit::tag`).
    pub tag: u64,
    pub win: u32,
    /// Segments an ACK's processing lets out (decided when its unit starts).
    pub tx_segs: u32,
    /// TCP flags beyond ACK (`hostsim_workload::http::FLAG_*`).
    pub flags: u8,
}

/// The packet slab: packets by [`PktId`], their TCP fields at the same index, and the free list.
pub struct PacketSlab {
    pub pkts: Vec<Packet>,
    /// TCP fields of the TCP packets of `pkts`, same index (`PacketTcp`).
    pub pkts_tcp: Vec<PacketTcp>,
    pub free_pkts: Vec<PktId>,
    /// GRO and RSC aggregates (`net/core/gro.rs`): the packet linked behind each packet of an
    /// aggregate (NONE at its end), by packet id. Empty when neither is on.
    pub frag_next: Vec<PktId>,
}

impl PacketSlab {
    pub fn new() -> PacketSlab {
        PacketSlab {
            pkts: Vec::with_capacity(4096),
            pkts_tcp: Vec::new(),
            free_pkts: Vec::with_capacity(4096),
            frag_next: Vec::new(),
        }
    }
}

impl PacketSlab {
    /// A new packet; `t`: its TCP fields (the defaults for a UDP packet). Inlined into the
    /// sources' emit (callgrind, livelock-150k: out of line since the hub became generic, it cost
    /// ~1.6 M instructions more).
    #[inline]
    pub fn alloc(&mut self, p: Packet, t: PacketTcp) -> PktId {
        let tcp = p.tcp;
        debug_assert!(tcp || t == PacketTcp::default(), "TCP fields on a UDP packet");
        let id = if let Some(id) = self.free_pkts.pop() {
            self.pkts[id as usize] = p;
            id
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as PktId
        };
        if tcp {
            let i = id as usize;
            if self.pkts_tcp.len() <= i {
                self.pkts_tcp.resize(self.pkts.len(), PacketTcp::default());
            }
            self.pkts_tcp[i] = t;
        }
        id
    }

    /// The TCP fields of packet `id` (the defaults for a UDP packet).
    #[inline]
    pub fn tcp(&self, id: PktId) -> PacketTcp {
        if self.pkts[id as usize].tcp {
            self.pkts_tcp[id as usize]
        } else {
            PacketTcp::default()
        }
    }

    pub fn free(&mut self, id: PktId) {
        debug_assert!(self.pkts[id as usize].live, "double free of packet {id}");
        self.pkts[id as usize].live = false;
        self.free_pkts.push(id);
    }

    /// The packets after `head` in its aggregate (none without GRO/RSC).
    #[inline]
    pub fn has_frags(&self, head: PktId) -> bool {
        self.frag_next.get(head as usize).is_some_and(|&n| n != NONE)
    }

    /// Payload bytes and segments of the aggregate starting at `head`.
    pub fn agg_size(&self, head: PktId) -> (u32, u32) {
        crate::net::core::gro::chain(&self.frag_next, head)
            .fold((0, 0), |(b, n), p| (b + self.pkts[p as usize].bytes, n + 1))
    }

    pub fn in_flight(&self) -> u64 {
        (self.pkts.len() - self.free_pkts.len()) as u64
    }
}
