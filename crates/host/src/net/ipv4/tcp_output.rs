//! The sending TCP of in-host programs, on top of the device layer (`net/core/tx.rs`): connections,
//! the send() system call with its send buffer, ACK input in softirq, the retransmission timer.
//! The state machine itself is `net/ipv4/tcp_conn.rs`.
//!
//! send() (2.4 `tcp_sendmsg`) runs as a series of units in process context, each copying up to
//! one segment of the caller's data into the write queue (`copy_per_byte_ns` +
//! `tx_per_byte_ns`, the checksum while copying) and putting out one segment if the windows
//! allow it (`tcp_send_ns` + `driver_tx_frame_ns`). With the buffer full and nothing to put
//! out, the caller blocks; an ACK that leaves at least a third of the buffer free
//! (`tcp_min_write_space`) wakes it. An ACK arriving in softirq (`tcp_ack_rx_ns`) frees
//! acknowledged segments and puts out what the windows now allow, charged to that softirq unit
//! (2.4 `tcp_data_snd_check`).
//!
//! Order on the wire: a unit marks its segments sent when it starts (so its cost is known) and
//! hands them to the device when it completes; marked segments wait in the connection's
//! `pending` queue, so if an ACK's softirq unit completes in the middle of a send() unit, the
//! wire still sees the segments in sequence.
//!
//! Work done by the retransmission timer (timer softirq) is not charged to any CPU, like the
//! delayed-ACK timer of the receive side.

use crate::config::TcpSegmentation;
use crate::drivers::net::txring::TxFrame;
use crate::kernel::task::{Pending, ProcState, SendOp};
use crate::net::ipv4::tcp_conn::Conn;
use crate::sim::*;
use crate::types::*;
use crate::wire::wire_bytes;
use hostsim_engine::{Time, Timer};
use hostsim_tcp::{Segmentation, TcpSnd};
use hostsim_workload::Feedback;
use std::collections::VecDeque;

/// What the next step of a send() is.
pub enum SendStep {
    /// Run a unit of this cost (system time).
    Unit(u64),
    /// The buffer is full: the caller blocks.
    Blocked,
    /// All bytes are queued: send() returns this many.
    Done(u32),
}

impl<M: Mechanisms> Host<M> {
    /// Open a sending connection on socket `sock` to flow `flow` of source `dst` (the
    /// connection is established at once: the handshake is not modelled).
    pub fn tcp_connect(&mut self, sock: u32, dst: u32, flow: u32, sndbuf: u32, nodelay: bool) -> u32 {
        let k = &self.cfg.kernel;
        let seg = match k.tcp_segmentation {
            TcpSegmentation::Stream => Segmentation::Stream,
            TcpSegmentation::PerSend => Segmentation::PerSend,
        };
        let rwnd = u64::from(self.wire.srcs[dst as usize].src.config().window_bytes);
        let snd = TcpSnd::new(k.tcp_mss_bytes, sndbuf, k.skb_overhead_bytes, seg, nodelay, rwnd);
        let conn = Conn {
            snd,
            dst,
            flow,
            writer: NONE,
            timer: Timer::new(),
            timer_cpu: 0,
            pending: VecDeque::new(),
            tx_bytes: 0,
        };
        let id = match self.net.free_conns.pop() {
            Some(id) => {
                // A reused slot keeps its timer's generation, so a stale expiry cannot fire.
                let gen_timer = std::mem::replace(&mut self.net.conns[id as usize].timer, Timer::new());
                self.net.conns[id as usize] = Conn { timer: gen_timer, ..conn };
                self.net.conns[id as usize].timer.cancel();
                id
            }
            None => {
                self.net.conns.push(conn);
                (self.net.conns.len() - 1) as u32
            }
        };
        self.net.socks[sock as usize].conns.insert((dst, flow), id);
        id
    }

    /// Per-segment output cost (stack + driver).
    fn seg_out_ns(&self) -> u64 {
        let c = &self.cfg.profile.costs;
        c.tcp_send_ns + c.driver_tx_frame_ns
    }

    /// Mark every segment the windows allow as sent (into `pending`); returns how many.
    pub(crate) fn tcp_mark_sendable(&mut self, conn: usize, max: u32) -> u32 {
        let now = self.now();
        let c = &mut self.net.conns[conn];
        let mut n = 0;
        while n < max {
            let Some(seg) = c.snd.next_tx(now) else { break };
            c.pending.push_back(seg);
            n += 1;
        }
        n
    }

    /// Hand the `n` oldest marked segments of `conn` to the device.
    pub(crate) fn tcp_emit(&mut self, conn: usize, n: u32) {
        for _ in 0..n {
            let c = &mut self.net.conns[conn];
            let Some(seg) = c.pending.pop_front() else { break };
            c.tx_bytes += u64::from(seg.len);
            let frame_bytes = wire_bytes(seg.len, true) as u32 - 20;
            let (dst, flow) = (c.dst, c.flow);
            // The application's label of a message ending in this segment (`net/ipv4/endpoint.rs`).
            let tag = self.ep_segment_tag(conn, seg.seq, seg.len);
            let f = TxFrame {
                dst,
                payload: seg.len,
                tcp: true,
                fb: Feedback::Data { flow, seq: seg.seq, len: seg.len, frame_bytes, tag },
            };
            // A frame the device drops is lost like one lost on the wire: the retransmission
            // timer or duplicate ACKs recover it (2.4 treats NET_XMIT_DROP as congestion).
            self.dev_queue_xmit(f);
        }
        self.tcp_arm_rto(conn);
    }

    /// Arm the retransmission timer if data is outstanding and it is not armed; cancel it when
    /// nothing is outstanding (an idle connection has no timer).
    fn tcp_arm_rto(&mut self, conn: usize) {
        let now = self.now();
        let c = &mut self.net.conns[conn];
        if !c.snd.outstanding() {
            c.timer.cancel();
        } else if !c.timer.is_armed() {
            let gen = c.timer.arm();
            c.timer_cpu = self.net.xmit_cpu;
            let at = now + Time(c.snd.rto_ns);
            self.post(at, Ev::Rto { conn: conn as u32, gen });
        }
    }

    /// The retransmission timer fired: go back to the first unacknowledged byte.
    pub fn tcp_retransmit_timer(&mut self, conn: usize) {
        let now = self.now();
        self.net.conns[conn].snd.on_timeout(now);
        let n = self.tcp_mark_sendable(conn, u32::MAX);
        let pending = self.net.conns[conn].pending.len() as u32;
        // Segments marked by units still running go out with them; these go now.
        let _ = n;
        self.tcp_emit(conn, pending);
    }

    // ----- send() -----

    /// send() of `bytes` starts (after the system-call entry, `syscall_ns`).
    pub fn tcp_send_begin(&mut self, pid: Pid, bytes: u32) -> SendStep {
        self.procs[pid as usize].send = SendOp { total: bytes, left: bytes, first: true };
        self.tcp_send_step(pid, self.cfg.profile.costs.syscall_ns)
    }

    /// The next unit of the send() in progress of `pid`, with `extra` ns added to it.
    pub fn tcp_send_step(&mut self, pid: Pid, extra: u64) -> SendStep {
        let conn = self.procs[pid as usize].conn as usize;
        let costs = &self.cfg.profile.costs;
        let per_byte = costs.copy_per_byte_ns + costs.tx_per_byte_ns;
        let op = self.procs[pid as usize].send;
        let mss = self.net.conns[conn].snd.mss;
        let mut cost = extra;
        let mut took = 0;
        if op.left > 0 {
            took = self.net.conns[conn].snd.append(op.left.min(mss), op.first);
            cost += (f64::from(took) * per_byte).round() as u64;
            let p = &mut self.procs[pid as usize];
            p.send.left -= took;
            if took > 0 {
                p.send.first = false;
            }
        }
        let tx = self.tcp_mark_sendable(conn, 1);
        cost += u64::from(tx) * self.seg_out_ns();
        if took == 0 && tx == 0 {
            let p = &mut self.procs[pid as usize];
            if p.send.left == 0 {
                p.tx_bytes += u64::from(op.total);
                return SendStep::Done(op.total);
            }
            p.state = ProcState::BlockedSend;
            p.pending = Pending::RetrySend;
            self.net.conns[conn].writer = pid;
            return SendStep::Blocked;
        }
        self.procs[pid as usize].pending = Pending::SendUnit { tx };
        SendStep::Unit(cost)
    }

    /// A send() unit completed: its segments go to the device.
    pub fn tcp_send_unit_done(&mut self, pid: Pid, tx: u32) {
        let conn = self.procs[pid as usize].conn as usize;
        self.procs[pid as usize].tx_packets += u64::from(tx);
        self.tcp_emit(conn, tx);
    }

    // ----- ACK input (softirq) -----

    /// The connection an ACK packet is for, if any.
    pub fn tcp_ack_conn(&self, pkt: PktId) -> Option<usize> {
        self.skb.tcp(pkt).ack?;
        let p = &self.skb.pkts[pkt as usize];
        let s = self.net.port_sock[p.dst_port as usize];
        if s == NONE {
            return None;
        }
        self.net.socks[s as usize].conns.get(&(p.src, p.flow)).map(|&c| c as usize)
    }

    /// An ACK's protocol unit starts: apply it, mark the segments it lets out, return the
    /// unit's cost. Its effects on the device and the writer happen at [`Host::tcp_ack_done`].
    pub fn tcp_ack_begin(&mut self, pkt: PktId, conn: usize) -> u64 {
        let (ack, win) = {
            let t = self.skb.tcp(pkt);
            (t.ack.expect("an ACK"), u64::from(t.win))
        };
        let now = self.now();
        let e = self.net.conns[conn].snd.on_ack(now, ack, win);
        if e.acked > 0 {
            // New data acknowledged: restart the timer from now (RFC 6298 5.3).
            self.net.conns[conn].timer.cancel();
        }
        let tx = self.tcp_mark_sendable(conn, u32::MAX);
        // (An ACK is a TCP packet: its fields are in `pkts_tcp`.)
        self.skb.pkts_tcp[pkt as usize].tx_segs = tx;
        let c = &self.cfg.profile.costs;
        let mut cost = c.tcp_ack_rx_ns + u64::from(tx) * self.seg_out_ns();
        let cn = &self.net.conns[conn];
        if cn.writer != NONE && cn.snd.writable() {
            cost += c.wakeup_ns;
        }
        cost
    }

    /// The ACK's unit completed on `cpu`: segments to the device, the writer woken.
    pub fn tcp_ack_done(&mut self, cpu: usize, pkt: PktId, conn: usize) {
        let tx = self.skb.tcp(pkt).tx_segs;
        self.stats.acks_consumed += 1;
        self.skb.free(pkt);
        self.tcp_emit(conn, tx);
        let c = &mut self.net.conns[conn];
        if c.writer != NONE && c.snd.writable() {
            let pid = std::mem::replace(&mut c.writer, NONE);
            self.wake_up(pid, cpu, false);
        }
        // `sk->write_space`: a poll()er waiting for POLLOUT on this socket (`fs/select.rs`).
        self.ep_write_space(cpu, conn);
    }

    /// Close a connection for good: it leaves its socket's table, its timer is cancelled and its
    /// slot is reused by the next `tcp_connect` (so that a server opening and closing
    /// connections for hours keeps a bounded table). Unacknowledged data is abandoned.
    pub fn tcp_close(&mut self, sock: u32, conn: u32) {
        let k = &self.cfg.kernel;
        let fresh = TcpSnd::new(k.tcp_mss_bytes, 0, k.skb_overhead_bytes, Segmentation::Stream, true, 0);
        let c = &mut self.net.conns[conn as usize];
        c.timer.cancel();
        c.pending.clear();
        c.writer = NONE;
        let old = std::mem::replace(&mut c.snd, fresh);
        let closed = &mut self.stats.tcp_closed;
        closed[0] += old.write_seq;
        closed[1] += old.snd_una;
        closed[2] += old.unacked_bytes();
        closed[3] += std::mem::take(&mut c.tx_bytes);
        closed[4] += old.retransmits;
        closed[5] += old.timeouts;
        let key = (c.dst, c.flow);
        self.net.socks[sock as usize].conns.remove(&key);
        self.net.free_conns.push(conn);
    }

    /// Payload bytes written by programs and not yet acknowledged, over all connections.
    pub fn tcp_unacked_bytes(&self) -> u64 {
        self.net.conns.iter().map(|c| c.snd.unacked_bytes()).sum()
    }
}
