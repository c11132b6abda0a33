//! TCP prequeue (`kernel.tcp_prequeue`; Linux's default, `sysctl_tcp_low_latency = 0`): while a
//! reader is blocked in recvmsg, its segments are not processed by TCP in softirq but queued for
//! it, and it processes them in its own context, on its own CPU.
//!
//! Rules, from Linux 3.2.7:
//! - `tcp_v4_rcv` (net/ipv4/tcp_ipv4.c): after IP input, the socket lookup and the header checks,
//!   `if (!sock_owned_by_user(sk)) { if (!tcp_prequeue(sk, skb)) ret = tcp_v4_do_rcv(sk, skb); }`.
//! - `tcp_prequeue` (include/net/tcp.h): nothing `if (sysctl_tcp_low_latency ||
//!   !tp->ucopy.task)`; else the segment is queued and `ucopy.memory += skb->truesize`; over
//!   `sk_rcvbuf` every queued segment is processed at once in softirq (`sk_backlog_rcv`); else the
//!   first queued segment wakes the reader with `wake_up_interruptible_sync_poll` (a sync wake-up,
//!   as `sock_def_readable`'s) and the later ones do not wake anyone.
//! - `tcp_recvmsg` (net/ipv4/tcp.c): with the receive queue empty and nothing copied, the reader
//!   installs itself (`tp->ucopy.task = user_recv`) and sleeps in `sk_wait_data`; woken, it runs
//!   `tcp_prequeue_process` (`sk_backlog_rcv` → `tcp_v4_do_rcv` → `tcp_rcv_established` for
//!   each queued segment: the TCP work and the ACKs it sends, `__tcp_ack_snd_check`, now in
//!   process context on the reader's CPU, so they leave on that CPU's TX queue) and returns what
//!   it copied; at its end `tp->ucopy.task = NULL`.
//!
//! Costs: the softirq part is IP input and `tcp_v4_rcv`'s checks and socket lookup, taken as
//! the IP + UDP input path's cost (`ip_udp_rx_ns`: both end in a hashed socket lookup; estimate),
//! plus the wake-up; the reader pays the rest of the segment's TCP input
//! (`tcp_rx_ns - ip_udp_rx_ns`) and its ACKs.
//!
//! Simplifications: segments that arrive while the woken reader is inside recvmsg holding the
//! socket lock go to the socket backlog in Linux and are processed at `release_sock`, also by the
//! reader; here the reader's recvmsg is one unit of work and such segments take the softirq path.
//! The prequeue's delayed-ACK timer (`3 * tcp_rto_min / 4`, re-armed at the first queued segment)
//! is not modelled: the reader always runs well within 150 ms here.

use crate::kernel::cpu::Work;
use crate::net::core::skbuff::PacketTcp;
use crate::sim::*;
use crate::types::*;

/// A host-internal flag in `PacketTcp::flags` (above the HTTP flags): the segment's softirq unit
/// was charged as a prequeue (set at the unit's start, acted on at its end).
pub const FLAG_PREQUEUED: u8 = 0x80;

impl<M: Mechanisms> Host<M> {
    /// At the start of a TCP segment's softirq unit: if it will be prequeued (its socket has a
    /// reader blocked in recvmsg), mark it and return the unit's cost; None otherwise.
    pub fn tcp_prequeue_cost(&mut self, pkt: PktId) -> Option<u64> {
        let p = &self.skb.pkts[pkt as usize];
        if !p.tcp || p.fwd != NONE {
            return None;
        }
        let s = self.net.port_sock[p.dst_port as usize];
        if s == NONE {
            return None;
        }
        let sock = &self.net.socks[s as usize];
        if !sock.tcp || sock.ucopy_task == NONE {
            return None;
        }
        let c = &self.cfg.profile.costs;
        let wake = if sock.prequeue.is_empty() && !sock.waiters.is_empty() { c.wakeup_ns } else { 0 };
        let cost = c.ip_udp_rx_ns + wake;
        let t: &mut PacketTcp = &mut self.skb.pkts_tcp[pkt as usize];
        t.flags |= FLAG_PREQUEUED;
        Some(cost)
    }

    /// At the end of a unit charged as a prequeue: has the reader left recvmsg meanwhile? Then
    /// the segment takes the softirq path in a follow-up unit (`Work::Proto`) costing the rest
    /// of that path ([`Host::proto_cost`] less the IP input already charged), and true is
    /// returned.
    ///
    /// In Linux the test and the queueing are one step under `bh_lock_sock` (3.2 `tcp_v4_rcv`:
    /// `if (!sock_owned_by_user(sk)) { if (!tcp_prequeue(sk, skb)) ret = tcp_v4_do_rcv(sk, skb); }`),
    /// and the reader empties the prequeue before it leaves (the end of `tcp_recvmsg`:
    /// `tcp_prequeue_process(sk)`, then `tp->ucopy.task = NULL`), so no segment waits in a
    /// prequeue without a reader. Here the decision is taken at the unit's start; queued at its
    /// end for a reader that has gone, a segment waited for the reader's next recvmsg while the
    /// later ones went straight to the receive queue, out of order: duplicate ACKs and spurious
    /// fast retransmits (issue 26: 223 of them in 150 ms, 5 flows, 1,448-byte reads, no loss).
    pub fn tcp_prequeue_reader_left(&mut self, cpu: usize, pkt: PktId) -> bool {
        if !self.cfg.kernel.tcp_prequeue || self.skb.pkts_tcp[pkt as usize].flags & FLAG_PREQUEUED == 0 {
            return false;
        }
        let s = self.net.port_sock[self.skb.pkts[pkt as usize].dst_port as usize];
        if s == NONE || self.net.socks[s as usize].ucopy_task != NONE {
            return false;
        }
        self.skb.pkts_tcp[pkt as usize].flags &= !FLAG_PREQUEUED;
        let cost = self.proto_cost(pkt).saturating_sub(self.cfg.profile.costs.ip_udp_rx_ns);
        self.next_unit(cpu, Work::Proto { pkt }, CpuState::Softirq, cost);
        true
    }

    /// `tcp_prequeue` at the end of the unit: queue `pkt` for socket `s`'s reader; the first
    /// queued segment wakes it; over the receive buffer, everything queued is processed here.
    pub fn tcp_prequeue(&mut self, cpu: usize, pkt: PktId, s: usize) {
        self.skb.pkts_tcp[pkt as usize].flags &= !FLAG_PREQUEUED;
        // A GRO/RSC aggregate counts with all its segments' bytes.
        let truesize = if self.skb.has_frags(pkt) {
            let (bytes, segs) = self.skb.agg_size(pkt);
            bytes + segs * self.cfg.kernel.skb_overhead_bytes
        } else {
            self.skb.pkts[pkt as usize].bytes + self.cfg.kernel.skb_overhead_bytes
        };
        let sock = &mut self.net.socks[s];
        sock.prequeue.push_back(pkt);
        sock.prequeue_mem += truesize;
        self.stats.prequeued += 1;
        if sock.prequeue_mem > sock.rcvbuf {
            // `sk_backlog_rcv` of every queued segment, in softirq (LINUX_MIB_TCPPREQUEUEDROPPED).
            sock.prequeue_mem = 0;
            let queued: Vec<PktId> = sock.prequeue.drain(..).collect();
            for p in queued {
                self.protocol_deliver(cpu, p);
            }
        } else if sock.prequeue.len() == 1 {
            if let Some(pid) = self.net.socks[s].waiters.pop_front() {
                self.wake_up(pid, cpu, false);
            }
        }
    }

    /// `tcp_prequeue_process` by the reader of socket `s` on `cpu`: TCP input of every queued
    /// segment in its context. Returns the process-context cost.
    pub fn tcp_prequeue_process(&mut self, cpu: usize, s: usize) -> u64 {
        let c = &self.cfg.profile.costs;
        let (seg, ack) = (c.tcp_rx_ns.saturating_sub(c.ip_udp_rx_ns), c.tcp_ack_send_ns + c.driver_tx_frame_ns);
        let mut cost = 0;
        self.net.socks[s].prequeue_mem = 0;
        while let Some(pkt) = self.net.socks[s].prequeue.pop_front() {
            cost += seg;
            // A GRO/RSC aggregate of several segments is acknowledged at once (`input.rs`).
            if self.skb.has_frags(pkt) || self.tcp_will_ack(s, pkt) {
                cost += ack;
            }
            self.protocol_deliver(cpu, pkt);
        }
        cost
    }
}
