//! Protocol input and sockets: UDP datagrams and a simplified TCP receiver (in-order stream per
//! flow, out-of-order segments dropped and answered with a duplicate ACK, an ACK every second
//! segment or when the delayed-ACK timer fires). Receive buffers limit queued truesize.

use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;
use hostsim_workload::Feedback;

impl Host {
    /// Would delivering `pkt` to TCP socket `s` send an ACK right away?
    pub fn tcp_will_ack(&self, s: usize, pkt: PktId) -> bool {
        let p = &self.skb.pkts[pkt as usize];
        let st = self.net.socks[s].flows.get(&(p.src, p.flow)).copied().unwrap_or_default();
        p.seq != st.rcv_nxt || st.unacked_segs + 1 >= 2
    }

    /// Softirq protocol processing finished for `pkt` on `cpu`: queue it on its socket (or,
    /// for an ACK to a sending connection, let the sending TCP act on it).
    pub fn protocol_deliver(&mut self, cpu: usize, pkt: PktId) {
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
        let truesize = p.bytes + self.cfg.kernel.skb_overhead_bytes;
        let (src, flow, seq, bytes, hash) = (p.src, p.flow, p.seq, p.bytes, p.hash);
        if self.net.socks[s].tcp {
            let st = self.net.socks[s].flows.entry((src, flow)).or_default();
            if seq != st.rcv_nxt {
                // Out of order (a predecessor was dropped) or a retransmitted duplicate.
                let ack = st.rcv_nxt;
                self.drop_pkt(pkt, DropPlace::TcpOutOfOrder);
                self.transmit(src, 0, true, Feedback::Ack { flow, ack });
                return;
            }
        }
        let sock = &mut self.net.socks[s];
        if sock.used + truesize > sock.rcvbuf {
            sock.drops += 1;
            return self.drop_pkt(pkt, DropPlace::Socket);
        }
        sock.used += truesize;
        self.sock_len_changed(s);
        let sock = &mut self.net.socks[s];
        sock.queue.push_back(pkt);
        sock.enqueued += 1;
        sock.hash = hash;
        self.skb.pkts[pkt as usize].t_sock = self.now;
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
        if sock.tcp {
            let st = sock.flows.get_mut(&(src, flow)).expect("flow state created above");
            st.rcv_nxt += u64::from(bytes);
            st.unacked_segs += 1;
            if st.unacked_segs >= 2 {
                st.unacked_segs = 0;
                let ack = st.rcv_nxt;
                self.transmit(src, 0, true, Feedback::Ack { flow, ack });
            } else if !sock.delack.is_armed() {
                let gen = sock.delack.arm();
                sock.delack_cpu = cpu as u32;
                let at = self.now + Time::from_ms(self.cfg.kernel.delack_ms);
                self.q.schedule(at, Ev::DelAck { sock: s as u32, gen });
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
            self.transmit(src, 0, true, Feedback::Ack { flow, ack });
        }
    }

    /// Track the time-integral of the socket queue length (Little's law check).
    pub fn sock_len_changed(&mut self, s: usize) {
        let now = self.now;
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
            let wait = self.now.since(p.t_sock).ns();
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
