//! Sockets of event-driven servers: a listening socket with its accept queue, one connected
//! socket per TCP connection (accepted from clients, or opened to origin servers), and pipes,
//! plus the protocol work for them in softirq: connection set-up and tear-down, in-order data
//! with ACKs, and the readiness that poll() reports (`fs/select.rs`).
//!
//! Follows Linux 2.4/2.5 (net/ipv4/tcp_ipv4.c, tcp_input.c, tcp.c), reduced to what a server
//! with thousands of persistent connections needs:
//!
//! - **Set-up.** A SYN to a listening port is answered with a SYN-ACK at once
//!   (`tcp_v4_conn_request`; dropped when the accept queue is full, `tcp_acceptq_is_full`); the
//!   handshake's ACK creates the child socket (`tcp_v4_syn_recv_sock`, `syscalls.tcp_child_ns`),
//!   queues it for accept() and wakes the thread blocked there. The child's sending side is a
//!   `tcp_conn` connection (send buffer, windows, retransmission) with TCP_NODELAY: 2.4's Nagle
//!   test lets the one short segment at the end of a response go at once while full segments
//!   are unacknowledged (`tcp_minshall_check`), which is what a one-write response needs.
//! - **Data in.** In-order segments are queued on their socket (out-of-order ones cannot occur
//!   without loss and are dropped, `tcp_ooo`). Requests from clients are acknowledged by the
//!   response's first segment, or by the delayed-ACK timer (`kernel.delack_ms`) if the answer
//!   takes longer (a miss); data from origins is acknowledged every second segment in the
//!   softirq (`tcp_ack_send_ns` + driver), a lone last one by the delayed-ACK timer. As for the
//!   existing receiver (`net/ipv4/input.rs`), the timer's ACK is not charged to any CPU.
//! - **Tear-down.** A peer's FIN marks end-of-file (readable); close() sends a FIN and frees
//!   the socket and its connection for reuse, so memory stays bounded however many connections
//!   come and go.
//!
//! Demultiplexing is by (source, flow) in a `BTreeMap`: O(log n), never iterated.

use crate::net::core::sock::{EpKind, PortUse};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;
use hostsim_workload::http::{FLAG_FIN, FLAG_HANDSHAKE, FLAG_SYN};
use hostsim_workload::{Feedback, POLLIN, POLLOUT};

/// What a segment for an event-driven program's port is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seg {
    Syn(u32),
    Handshake(u32),
    Fin(u32),
    Data(u32),
    /// For a program's port but no live socket (late or duplicate): dropped.
    Stray,
}

impl<M: Mechanisms> Host<M> {
    fn ep_classify(&self, pkt: PktId) -> Option<Seg> {
        let p = &self.skb.pkts[pkt as usize];
        let port = *self.net.eps.ports.get(&p.dst_port)?;
        if !p.tcp {
            return Some(Seg::Stray);
        }
        let t = self.skb.tcp(pkt);
        if t.flags & (FLAG_SYN | FLAG_HANDSHAKE) != 0 {
            return Some(match port {
                PortUse::Listen(l) if t.flags & FLAG_SYN != 0 => Seg::Syn(l),
                PortUse::Listen(l) if !self.net.eps.has_flow(p.src, p.flow) => Seg::Handshake(l),
                _ => Seg::Stray,
            });
        }
        let Some(ep) = self.net.eps.flow_ep(p.src, p.flow) else { return Some(Seg::Stray) };
        Some(if t.flags & FLAG_FIN != 0 {
            Seg::Fin(ep)
        } else if t.ack.is_none() && p.bytes > 0 {
            Seg::Data(ep)
        } else {
            Seg::Stray
        })
    }

    fn set_waiting(&self, ep: u32) -> bool {
        let s = self.net.eps.eps[ep as usize].set;
        s != NONE && self.net.eps.sets[s as usize].waiter != NONE
    }

    /// The protocol cost of a segment for an event-driven program's socket, None if it is not
    /// one (`net/core/rx.rs` `proto_begin`, after the sending TCP's ACK check).
    pub fn ep_proto_cost(&self, pkt: PktId) -> Option<u64> {
        let seg = self.ep_classify(pkt)?;
        let c = &self.cfg.profile.costs;
        let sys = self.cfg.profile.syscalls.as_ref();
        let child = sys.map_or(0, |s| s.tcp_child_ns);
        let bytes = self.skb.pkts[pkt as usize].bytes;
        Some(
            c.tcp_rx_ns
                + match seg {
                    Seg::Syn(_) => c.tcp_ack_send_ns + c.driver_tx_frame_ns,
                    Seg::Handshake(l) => {
                        child + if self.net.eps.listeners[l as usize].waiter != NONE { c.wakeup_ns } else { 0 }
                    }
                    Seg::Fin(ep) => {
                        if self.set_waiting(ep) {
                            c.wakeup_ns
                        } else {
                            0
                        }
                    }
                    Seg::Data(ep) => {
                        let e = &self.net.eps.eps[ep as usize];
                        let mut x = (f64::from(bytes) * c.rx_per_byte_ns).round() as u64;
                        if e.kind == EpKind::Connected && e.unacked + 1 >= 2 {
                            x += c.tcp_ack_send_ns + c.driver_tx_frame_ns;
                        }
                        if self.set_waiting(ep) {
                            x += c.wakeup_ns;
                        }
                        x
                    }
                    Seg::Stray => 0,
                },
        )
    }

    /// Softirq protocol processing of a segment for an event-driven program's socket is done
    /// on `cpu`; false if the segment is not one (`net/ipv4/input.rs`).
    pub fn ep_deliver(&mut self, cpu: usize, pkt: PktId) -> bool {
        let Some(seg) = self.ep_classify(pkt) else { return false };
        let (src, flow, seq, bytes) = {
            let p = &self.skb.pkts[pkt as usize];
            (p.src, p.flow, p.seq, p.bytes)
        };
        match seg {
            Seg::Syn(l) => {
                let li = &mut self.net.eps.listeners[l as usize];
                li.syns += 1;
                if li.queue.len() >= li.backlog as usize {
                    li.syn_drops += 1;
                    self.drop_pkt(pkt, DropPlace::AcceptQueue);
                    return true;
                }
                self.consume_ctrl(pkt);
                self.transmit(src, 0, true, Feedback::SynAck { flow });
            }
            Seg::Handshake(l) => {
                self.consume_ctrl(pkt);
                let sock = self.net.eps.listeners[l as usize].sock;
                let k = &self.cfg.kernel;
                let conn = self.tcp_connect(sock, src, flow, k.sndbuf_bytes, true);
                let ep = self.net.eps.alloc(EpKind::Accepted, src, flow, sock, conn);
                self.net.eps.accepted += 1;
                let li = &mut self.net.eps.listeners[l as usize];
                li.queue.push_back(ep);
                let w = std::mem::replace(&mut li.waiter, NONE);
                if w != NONE {
                    self.wake_up(w, cpu, false);
                }
            }
            Seg::Fin(ep) => {
                self.consume_ctrl(pkt);
                self.net.eps.eps[ep as usize].eof = true;
                self.ep_poke(cpu, ep);
            }
            Seg::Data(ep) => self.ep_data(cpu, pkt, ep, seq, bytes),
            Seg::Stray => self.drop_pkt(pkt, DropPlace::NoSocket),
        }
        true
    }

    fn consume_ctrl(&mut self, pkt: PktId) {
        self.stats.ctrl_consumed += 1;
        self.skb.free(pkt);
    }

    fn ep_data(&mut self, cpu: usize, pkt: PktId, ep: u32, seq: u64, bytes: u32) {
        let truesize = bytes + self.cfg.kernel.skb_overhead_bytes;
        let rcvbuf = self.cfg.kernel.rcvbuf_bytes;
        let e = &mut self.net.eps.eps[ep as usize];
        if seq != e.rcv_nxt {
            return self.drop_pkt(pkt, DropPlace::TcpOutOfOrder);
        }
        if e.rx_used + truesize > rcvbuf {
            return self.drop_pkt(pkt, DropPlace::Socket);
        }
        e.rx_used += truesize;
        e.rx.push_back(pkt);
        e.rcv_nxt += u64::from(bytes);
        e.unacked += 1;
        let (kind, src, flow, ack, unacked) = (e.kind, e.src, e.flow, e.rcv_nxt, e.unacked);
        self.skb.pkts[pkt as usize].t_sock = self.now();
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
        if kind == EpKind::Connected && unacked >= 2 {
            let e = &mut self.net.eps.eps[ep as usize];
            e.unacked = 0;
            e.delack.cancel();
            self.transmit(src, 0, true, Feedback::Ack { flow, ack, win: u32::MAX });
        } else if !self.net.eps.eps[ep as usize].delack.is_armed() {
            let gen = self.net.eps.eps[ep as usize].delack.arm();
            self.net.eps.eps[ep as usize].delack_cpu = cpu as u32;
            let at = self.now() + Time::from_ms(self.cfg.kernel.delack_ms);
            self.post(at, Ev::EpDelAck { ep, gen });
        }
        self.ep_poke(cpu, ep);
    }

    /// The delayed-ACK timer of an endpoint fired.
    pub fn ep_delack_fire(&mut self, ep: u32, gen: u32) {
        let e = &mut self.net.eps.eps[ep as usize];
        if !e.delack.fires(gen) || !e.live || e.unacked == 0 {
            return;
        }
        e.unacked = 0;
        let (src, flow, ack) = (e.src, e.flow, e.rcv_nxt);
        self.net.xmit_cpu = e.delack_cpu;
        self.transmit(src, 0, true, Feedback::Ack { flow, ack, win: u32::MAX });
    }

    /// poll() events of an endpoint now (only those it asked for).
    pub fn ep_revents(&self, ep: u32) -> u8 {
        let e = &self.net.eps.eps[ep as usize];
        if !e.live {
            return 0;
        }
        let mut r = 0;
        match e.kind {
            EpKind::Pipe => {
                if e.notified {
                    r |= POLLIN;
                }
            }
            _ => {
                if !e.rx.is_empty() || e.eof {
                    r |= POLLIN;
                }
                if e.events & POLLOUT != 0 && e.conn != NONE && self.net.conns[e.conn as usize].snd.writable() {
                    r |= POLLOUT;
                }
            }
        }
        r & e.events
    }

    /// Something about `ep` changed: if it is ready, put it on its poll set's ready list and
    /// wake the thread blocked on the set (`sk->sleep` wake-up).
    pub fn ep_poke(&mut self, cpu: usize, ep: u32) {
        let e = &self.net.eps.eps[ep as usize];
        if e.set == NONE || e.in_ready || self.ep_revents(ep) == 0 {
            return;
        }
        let s = e.set as usize;
        self.net.eps.eps[ep as usize].in_ready = true;
        self.net.eps.sets[s].ready.push(ep);
        let w = std::mem::replace(&mut self.net.eps.sets[s].waiter, NONE);
        if w != NONE {
            self.wake_up(w, cpu, false);
        }
    }

    /// An ACK freed send-buffer space on `conn` (`net/ipv4/tcp_output.rs`): POLLOUT may now hold.
    pub fn ep_write_space(&mut self, cpu: usize, conn: usize) {
        if let Some(&ep) = self.net.eps.conn_ep.get(conn) {
            if ep != NONE {
                self.ep_poke(cpu, ep);
            }
        }
    }

    /// The label of a message whose last byte `conn`'s segment [seq, seq+len) carries.
    pub fn ep_segment_tag(&mut self, conn: usize, seq: u64, len: u32) -> u64 {
        let Some(&ep) = self.net.eps.conn_ep.get(conn) else { return 0 };
        if ep == NONE {
            return 0;
        }
        let marks = &mut self.net.eps.eps[ep as usize].tx_marks;
        while marks.front().is_some_and(|&(end, _)| end <= seq) {
            marks.pop_front();
        }
        match marks.front() {
            Some(&(end, tag)) if end <= seq + u64::from(len) => {
                marks.pop_front();
                tag
            }
            _ => 0,
        }
    }

    /// Put `ep` in poll set `set` with `events`, or take it out (`events` 0).
    pub fn ep_watch(&mut self, cpu: usize, ep: u32, set: u32, events: u8) {
        let old = self.net.eps.eps[ep as usize].set;
        if events == 0 {
            self.ep_unwatch(ep);
            return;
        }
        if old != set {
            self.ep_unwatch(ep);
            self.net.eps.sets[set as usize].nfds += 1;
            self.net.eps.eps[ep as usize].set = set;
        }
        self.net.eps.eps[ep as usize].events = events;
        self.ep_poke(cpu, ep);
    }

    fn ep_unwatch(&mut self, ep: u32) {
        let e = &mut self.net.eps.eps[ep as usize];
        if e.set == NONE {
            return;
        }
        let s = std::mem::replace(&mut e.set, NONE) as usize;
        e.events = 0;
        let was_ready = std::mem::replace(&mut e.in_ready, false);
        self.net.eps.sets[s].nfds -= 1;
        if was_ready {
            let r = &mut self.net.eps.sets[s].ready;
            if let Some(i) = r.iter().position(|&x| x == ep) {
                r.swap_remove(i);
            }
        }
    }

    /// read() from an endpoint: (bytes, label of a message that ended in them, end-of-file).
    pub fn ep_read(&mut self, ep: u32, max_bytes: u32) -> (u32, u64, bool) {
        if self.net.eps.eps[ep as usize].kind == EpKind::Pipe {
            let was = std::mem::replace(&mut self.net.eps.eps[ep as usize].notified, false);
            return (u32::from(was), 0, false);
        }
        let overhead = self.cfg.kernel.skb_overhead_bytes;
        let (mut bytes, mut tag) = (0u32, 0u64);
        while bytes < max_bytes {
            let e = &mut self.net.eps.eps[ep as usize];
            let Some(&pkt) = e.rx.front() else { break };
            let p = &self.skb.pkts[pkt as usize];
            let avail = p.bytes - e.head_off;
            let take = avail.min(max_bytes - bytes);
            bytes += take;
            if take < avail {
                e.head_off += take;
                break;
            }
            e.rx.pop_front();
            e.head_off = 0;
            e.rx_used -= p.bytes + overhead;
            let t = self.skb.tcp(pkt).tag;
            if t != 0 {
                tag = t;
            }
            let (src, flow, seq) = (p.src, p.flow, p.seq);
            self.stats.record_delivery(src, flow, seq);
            self.skb.free(pkt);
        }
        let e = &self.net.eps.eps[ep as usize];
        (bytes, tag, e.eof && e.rx.is_empty())
    }

    /// close(): FIN to the peer, the connection and socket freed for reuse.
    pub fn ep_close(&mut self, ep: u32) {
        self.ep_unwatch(ep);
        let e = &mut self.net.eps.eps[ep as usize];
        e.live = false;
        e.delack.cancel();
        e.tx_marks.clear();
        let (kind, src, flow, sock, conn) = (e.kind, e.src, e.flow, e.sock, e.conn);
        let rest: Vec<PktId> = e.rx.drain(..).collect();
        for pkt in rest {
            // Data the program never read: dropped with the socket.
            self.drop_pkt(pkt, DropPlace::Socket);
        }
        if kind != EpKind::Pipe {
            self.net.eps.forget_flow(src, flow);
            self.transmit(src, 0, true, Feedback::Fin { flow });
            if conn != NONE {
                self.net.eps.conn_ep[conn as usize] = NONE;
                self.tcp_close(sock, conn);
            }
            self.net.eps.closed += 1;
        }
        self.net.eps.release(ep);
    }
}
