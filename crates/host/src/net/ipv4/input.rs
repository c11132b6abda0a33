//! Protocol input and sockets: UDP datagrams and a TCP receiver (an in-order stream per flow, an
//! ACK every second segment or when the delayed-ACK timer fires). Receive buffers limit queued
//! truesize. Out-of-order segments are dropped and answered with a duplicate ACK by the simple
//! receiver (`kernel.tcp_receiver = "simple"`); Linux's (`"linux"`) holds them until the hole
//! fills, acknowledges every segment at once while it holds any (3.2 `tcp_data_queue`,
//! `tcp_ofo_queue`, `__tcp_ack_snd_check`), advertises its window and autotunes its buffer
//! (`tcp_rcv_window.rs`).

use crate::net::core::sock::{Sock, TcpFlowState};
use crate::net::ipv4::tcp_prequeue::FLAG_PREQUEUED;
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;
use hostsim_workload::Feedback;

impl<M: Mechanisms> Host<M> {
    /// Would delivering `pkt` to TCP socket `s` send an ACK right away?
    pub fn tcp_will_ack(&self, s: usize, pkt: PktId) -> bool {
        let p = &self.skb.pkts[pkt as usize];
        let sock = &self.net.socks[s];
        let st = sock.flows.get(&(p.src, p.flow)).copied().unwrap_or_default();
        p.seq != st.rcv_nxt
            || st.unacked_segs + 1 >= 2
            || (!sock.ooo.is_empty() && sock.ooo.range((p.src, p.flow, 0)..=(p.src, p.flow, u64::MAX)).next().is_some())
    }

    /// Softirq protocol processing finished for `pkt` on `cpu`: queue it on its socket (or,
    /// for an ACK to a sending connection, let the sending TCP act on it). A GRO or RSC aggregate
    /// (`net/core/gro.rs`) is one skb to TCP: its segments are queued in order and acknowledged
    /// once, after the last (3.2 `tcp_rcv_established` on an skb of several MSS:
    /// `__tcp_ack_snd_check` sees more than `rcv_mss` unacknowledged and ACKs at once).
    #[inline]
    pub fn protocol_deliver(&mut self, cpu: usize, pkt: PktId) {
        // A prequeued aggregate goes to the prequeue whole (its reader delivers it later).
        if !self.skb.has_frags(pkt) || self.skb.pkts_tcp[pkt as usize].flags & FLAG_PREQUEUED != 0 {
            return self.protocol_deliver_one(cpu, pkt);
        }
        let mut p = pkt;
        self.net.agg_defer_ack = true;
        while p != NONE {
            let next = self.skb.frag_next[p as usize];
            self.skb.frag_next[p as usize] = NONE;
            if next == NONE {
                self.net.agg_defer_ack = false;
            }
            self.protocol_deliver_one(cpu, p);
            p = next;
        }
    }

    fn protocol_deliver_one(&mut self, cpu: usize, pkt: PktId) {
        let now = self.now();
        if let Some(conn) = self.tcp_ack_conn(pkt) {
            return self.tcp_ack_done(cpu, pkt, conn);
        }
        if self.ep_deliver(cpu, pkt) {
            return;
        }
        let p = &self.skb.pkts[pkt as usize];
        if p.fwd != NONE {
            return self.ip_forward(cpu, pkt);
        }
        let s = self.net.port_sock[p.dst_port as usize];
        if s == NONE {
            return self.drop_pkt(pkt, DropPlace::NoSocket);
        }
        let s = s as usize;
        if p.tcp && self.skb.pkts_tcp[pkt as usize].flags & FLAG_PREQUEUED != 0 {
            return self.tcp_prequeue(cpu, pkt, s);
        }
        let truesize = p.bytes + self.cfg.kernel.skb_overhead_bytes;
        let (src, flow, seq, bytes, hash) = (p.src, p.flow, p.seq, p.bytes, p.hash);
        let linux = self.net.socks[s].rwin.is_some();
        if self.net.socks[s].tcp {
            let sock = &mut self.net.socks[s];
            let st = sock.flows.entry((src, flow)).or_insert_with(|| {
                // A new connection: its handshake advertised the initial window (Linux).
                let rcv_wnd = sock.rwin.as_deref().map_or(0, |w| w.select(sock.used));
                TcpFlowState { rcv_wnd, ..TcpFlowState::default() }
            });
            let rcv_nxt = st.rcv_nxt;
            let held = self.net.socks[s].ooo.contains_key(&(src, flow, seq));
            if seq != rcv_nxt && !(linux && seq > rcv_nxt && !held) {
                // A retransmitted duplicate, or (simple receiver) out of order: dropped, with a
                // duplicate ACK.
                self.drop_pkt(pkt, DropPlace::TcpOutOfOrder);
                let win = self.tcp_ack_window(s, src, flow);
                self.transmit(src, 0, true, Feedback::Ack { flow, ack: rcv_nxt, win });
                return;
            }
        }
        let sock = &mut self.net.socks[s];
        if sock.used + truesize > sock.rcvbuf {
            sock.drops += 1;
            return self.drop_pkt(pkt, DropPlace::Socket);
        }
        sock.used += truesize;
        if sock.tcp && seq != sock.flows[&(src, flow)].rcv_nxt {
            // Linux receiver: above a hole, held in the out-of-order queue (counted in the
            // buffer) and answered at once with a duplicate ACK (`tcp_data_queue`).
            sock.ooo.insert((src, flow, seq), pkt);
            self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
            let ack = sock.flows[&(src, flow)].rcv_nxt;
            let win = self.tcp_ack_window(s, src, flow);
            self.transmit(src, 0, true, Feedback::Ack { flow, ack, win });
            return;
        }
        self.sock_len_changed(s);
        let jiffies = self.jiffies();
        let sock = &mut self.net.socks[s];
        sock.queue.push_back(pkt);
        sock.enqueued += 1;
        sock.hash = hash;
        self.skb.pkts[pkt as usize].t_sock = now;
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
        if sock.tcp {
            let Sock { flows, rwin, used, ooo, queue, enqueued, .. } = sock;
            let st = flows.get_mut(&(src, flow)).expect("flow state created above");
            st.rcv_nxt += u64::from(bytes);
            st.unacked_segs += 1;
            if let Some(w) = rwin.as_deref_mut() {
                w.rtt_measure(jiffies, st.rcv_nxt, st.rcv_wnd);
                w.grow(*used, bytes, truesize);
            }
            // A filled hole moves the held segments that now follow in order (`tcp_ofo_queue`);
            // while any are held every segment is acknowledged at once (`__tcp_ack_snd_check`).
            let mut had_ooo = false;
            if !ooo.is_empty() {
                had_ooo = ooo.range((src, flow, 0)..=(src, flow, u64::MAX)).next().is_some();
                while let Some(next) = ooo.remove(&(src, flow, st.rcv_nxt)) {
                    queue.push_back(next);
                    *enqueued += 1;
                    let p = &mut self.skb.pkts[next as usize];
                    p.t_sock = now;
                    st.rcv_nxt += u64::from(p.bytes);
                }
            }
            if self.net.agg_defer_ack {
                // Within an aggregate: the last segment decides.
            } else if st.unacked_segs >= 2 || had_ooo {
                st.unacked_segs = 0;
                let ack = st.rcv_nxt;
                let win = self.tcp_ack_window(s, src, flow);
                self.transmit(src, 0, true, Feedback::Ack { flow, ack, win });
            } else if !sock.delack.is_armed() {
                let gen = sock.delack.arm();
                sock.delack_cpu = cpu as u32;
                let at = now + Time::from_ms(self.cfg.kernel.delack_ms);
                self.post(at, Ev::DelAck { sock: s as u32, gen });
            }
        }
        if let Some(pid) = self.net.socks[s].waiters.pop_front() {
            self.wake_up(pid, cpu, false);
        }
    }

    /// Delayed-ACK timer: acknowledge every flow with unacknowledged segments.
    pub fn delack_fire(&mut self, s: usize) {
        let mut acks: Vec<(u32, u32, u64)> = Vec::new();
        for (&(src, flow), st) in self.net.socks[s].flows.iter_mut() {
            if st.unacked_segs > 0 {
                st.unacked_segs = 0;
                acks.push((src, flow, st.rcv_nxt));
            }
        }
        for (src, flow, ack) in acks {
            let win = self.tcp_ack_window(s, src, flow);
            self.transmit(src, 0, true, Feedback::Ack { flow, ack, win });
        }
    }

    /// The window an ACK of flow (`src`, `flow`) of TCP socket `s` advertises now, recorded as
    /// the flow's `rcv_wnd` (`tcp_select_window`); `u32::MAX` when the receiver's window is not
    /// modelled (`kernel.tcp_receiver = "simple"`).
    fn tcp_ack_window(&mut self, s: usize, src: u32, flow: u32) -> u32 {
        let Sock { flows, rwin, used, .. } = &mut self.net.socks[s];
        let Some(w) = rwin.as_deref() else { return u32::MAX };
        let st = flows.get_mut(&(src, flow)).expect("a flow being acknowledged");
        let open = (st.rcv_wup + u64::from(st.rcv_wnd)).saturating_sub(st.rcv_nxt);
        let win = w.advertise(*used, open);
        st.rcv_wnd = win;
        st.rcv_wup = st.rcv_nxt;
        win
    }

    /// After a read of TCP socket `s` (`tcp_recvmsg`): autotune its buffer
    /// (`tcp_rcv_space_adjust`), then send a window update to each flow whose open window the
    /// read has at least doubled (`tcp_cleanup_rbuf`). Returns the ACKs sent (the caller charges
    /// them). Nothing without the receiver's window model.
    pub fn tcp_after_read(&mut self, s: usize, bytes: u32) -> u32 {
        let jiffies = self.jiffies();
        let sock = &mut self.net.socks[s];
        let Some(w) = sock.rwin.as_deref_mut() else { return 0 };
        w.copied += u64::from(bytes);
        if let Some(buf) = w.space_adjust(jiffies) {
            sock.rcvbuf = buf;
        }
        let mut updates: Vec<(u32, u32, u64)> = Vec::new();
        for (&(src, flow), st) in sock.flows.iter_mut() {
            let open = (st.rcv_wup + u64::from(st.rcv_wnd)).saturating_sub(st.rcv_nxt);
            if w.update_due(sock.used, open) {
                st.unacked_segs = 0;
                updates.push((src, flow, st.rcv_nxt));
            }
        }
        for &(src, flow, ack) in &updates {
            let win = self.tcp_ack_window(s, src, flow);
            self.transmit(src, 0, true, Feedback::Ack { flow, ack, win });
        }
        updates.len() as u32
    }

    /// Track the time-integral of the socket queue length (Little's law check).
    pub fn sock_len_changed(&mut self, s: usize) {
        let now = self.now();
        let sock = &mut self.net.socks[s];
        let dt = now.since(sock.len_changed).ns();
        sock.len_area += u128::from(dt) * sock.queue.len() as u128;
        sock.len_changed = now;
    }

    /// Take up to `max_bytes` from socket `s` (one datagram for UDP). Returns (bytes, packets,
    /// cache penalty ns) and frees the packets read; `pid` is the reader on `cpu`.
    pub fn sock_read(&mut self, s: usize, max_bytes: u32, pid: Pid, cpu: usize) -> (u32, u32, u64) {
        self.sock_len_changed(s);
        let overhead = self.cfg.kernel.skb_overhead_bytes;
        let cache = self.cfg.profile.cache;
        let mut bytes = 0u32;
        let mut pkts = 0u32;
        let mut penalty = 0u64;
        let tcp = self.net.socks[s].tcp;
        while let Some(&pkt) = self.net.socks[s].queue.front() {
            let p = &self.skb.pkts[pkt as usize];
            let avail = p.bytes - self.net.socks[s].head_off;
            let take = if tcp { avail.min(max_bytes - bytes) } else { avail };
            bytes += take;
            if tcp && take < avail {
                self.net.socks[s].head_off += take;
                break;
            }
            // The whole packet is consumed.
            let wait = self.now().since(p.t_sock).ns();
            if p.rx_cpu != cpu as u32 {
                penalty += cache.remote_packet_ns;
                self.stats.llc_load_misses += cache.remote_packet_llc_load_misses;
                self.stats.llc_store_misses += cache.remote_packet_llc_store_misses;
            }
            let (src, flow, seq) = (p.src, p.flow, p.seq);
            let truesize = p.bytes + overhead;
            let sock = &mut self.net.socks[s];
            sock.queue.pop_front();
            sock.head_off = 0;
            sock.used -= truesize;
            self.procs[pid as usize].wait.record(wait);
            self.procs[pid as usize].reply_to = (src, flow, seq);
            self.stats.record_delivery(src, flow, seq);
            self.skb.free(pkt);
            pkts += 1;
            if !tcp || bytes >= max_bytes {
                break;
            }
        }
        (bytes, pkts, penalty)
    }
}
