//! The sending side of one TCP connection as a pure state machine (no host, no clock of its own:
//! every call takes `now`). The host's sending TCP (hostsim-host's `net/ipv4/tcp_output.rs`)
//! drives it: system-call costs, the device, timers.
//!
//! Follows Linux 2.4's sender (net/ipv4/tcp.c `tcp_sendmsg`, tcp_output.c, tcp_input.c
//! `tcp_ack`, tcp_timer.c), reduced to what a bulk or request/response sender needs:
//!
//! - **Send buffer.** Written data is kept in segments (the write queue) until acknowledged.
//!   Each segment is charged its payload plus `overhead` (sk_buff truesize) against `sndbuf`;
//!   as in 2.4 `tcp_sendmsg`, a new segment may be started while `wmem_queued < sndbuf` and is
//!   then filled up to the MSS (so the buffer may overshoot by one segment).
//! - **Segmentation.** `Stream` (Linux): data fills the unsent tail segment up to the MSS across
//!   send() calls. `PerSend`: every send() starts a new segment, so a 2048 B send with a 1460 B
//!   MSS leaves as 1460 + 588 (paper 002's Table 1 shows one small packet per send; what
//!   Tender's stack did is not published, see notes 002 §6).
//! - **Windows.** In flight ≤ min(cwnd × MSS, the peer's advertised window). The congestion
//!   control is a policy (`cc/`: Reno, CUBIC) and the era's rules around it (`Era`: initial
//!   window 2 or 10 segments; the window grows only on ACKs that find it limiting the sender,
//!   2.4's `prior_in_flight >= snd_cwnd` or 3.2's `tcp_is_cwnd_limited`). Fast retransmit on the
//!   third duplicate ACK with ssthresh from the policy (Reno: max(cwnd/2, 2), 2.4's
//!   `tcp_recalc_ssthresh`) and cwnd = ssthresh + 3 inflated by further duplicates, deflated to
//!   ssthresh when the hole is filled (NewReno's recovery, RFC 6582: a partial ACK retransmits the
//!   next hole). Not modelled: SACK and 3.2's proportional rate reduction, so a window with
//!   several losses recovers one hole per round trip.
//! - **Nagle** (RFC 896, 2.4 `tcp_nagle_check`): a segment shorter than the MSS waits while
//!   data is unacknowledged, unless `nodelay`.
//! - **Retransmission timer.** RFC 6298 estimator (srtt, rttvar; Karn: no sample from a
//!   retransmitted segment), RTO ≥ 200 ms (2.4 `TCP_RTO_MIN` = HZ/5), initial 3 s in 2.4, 1 s
//!   in 3.2 (`TCP_TIMEOUT_INIT`), doubled per expiry up to 120 s. On expiry: ssthresh from the
//!   policy, cwnd = 1, go back to the first unacknowledged byte. The timer is armed only while data
//!   is outstanding, so an idle connection costs nothing.
//! - **Restart after idle** (RFC 2861; 2.4/2.5 `tcp_event_data_sent` → `tcp_cwnd_restart`): new
//!   data sent with nothing in flight more than an RTO after the last send halves cwnd per RTO
//!   elapsed, down to the restart window min(2, cwnd) (`tcp_init_cwnd` gives 2 once the RTT is
//!   over 20 ms), with ssthresh raised to at least ¾ of the old cwnd. A persistent connection
//!   that idles between requests starts each response in slow start.

use crate::cc::{Cc, CcKind, Era, Window, CWND_CLAMP};
use hostsim_engine::Time;
use std::collections::VecDeque;

/// How send() data is cut into segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segmentation {
    Stream,
    PerSend,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    seq: u64,
    len: u32,
    /// Sent at least twice (its ACK gives the congestion control no RTT sample: Karn).
    retx: bool,
    /// When it was last sent.
    sent_at: Time,
}

pub const RTO_MIN_NS: u64 = 200_000_000;
/// 2.4's initial RTO; see [`Era::rto_init_ns`].
pub const RTO_INIT_NS: u64 = 3_000_000_000;
pub const RTO_MAX_NS: u64 = 120_000_000_000;
const DUPACK_THRESHOLD: u32 = 3;

/// What an incoming ACK did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckEffect {
    /// Send-buffer bytes (truesize) freed.
    pub freed: u32,
    /// Payload bytes newly acknowledged.
    pub acked: u64,
    /// The third duplicate ACK: the head segment is to be retransmitted.
    pub fast_retransmit: bool,
}

/// A segment to put on the wire now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSeg {
    pub seq: u64,
    pub len: u32,
    pub retransmit: bool,
}

#[derive(Clone, Debug)]
pub struct TcpSnd {
    pub mss: u32,
    pub sndbuf: u32,
    overhead: u32,
    pub seg_mode: Segmentation,
    pub nodelay: bool,
    segs: VecDeque<Seg>,
    /// Segments at the front of `segs` that have been sent (since the last go-back).
    sent: usize,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Highest sequence ever sent (for go-back-N after a timeout).
    snd_max: u64,
    pub write_seq: u64,
    pub wmem_queued: u32,
    /// Congestion window and slow-start threshold in segments (`snd_cwnd`, `snd_ssthresh`).
    pub w: Window,
    cc: Cc,
    era: Era,
    /// The peer's advertised window, bytes.
    pub rwnd: u64,
    dupacks: u32,
    /// Fast recovery until this sequence is acknowledged.
    recover: Option<u64>,
    retx_head: bool,
    srtt_ns: u64,
    rttvar_ns: u64,
    pub rto_ns: u64,
    /// The RTT sample in progress: (sequence that completes it, sent at).
    rtt_probe: Option<(u64, Time)>,
    /// When new data was last sent (`lsndtime`).
    lsndtime: Option<Time>,
    pub retransmits: u64,
    pub timeouts: u64,
}

impl TcpSnd {
    pub fn new(mss: u32, sndbuf: u32, overhead: u32, seg_mode: Segmentation, nodelay: bool, rwnd: u64) -> TcpSnd {
        TcpSnd {
            mss: mss.max(1),
            sndbuf,
            overhead,
            seg_mode,
            nodelay,
            segs: VecDeque::new(),
            sent: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            write_seq: 0,
            wmem_queued: 0,
            w: Window { cwnd: Era::Linux24.initial_cwnd(), ssthresh: u32::MAX / 2, cwnd_cnt: 0 },
            cc: Cc::Reno,
            era: Era::Linux24,
            rwnd,
            dupacks: 0,
            recover: None,
            retx_head: false,
            srtt_ns: 0,
            rttvar_ns: 0,
            rto_ns: RTO_INIT_NS,
            rtt_probe: None,
            lsndtime: None,
            retransmits: 0,
            timeouts: 0,
        }
    }

    /// Run congestion control `kind` under `era`'s rules (`hz`: the sender's timer frequency),
    /// from `now`: the initial window and RTO of the era. For a connection that has sent nothing.
    pub fn with_cc(mut self, kind: CcKind, era: Era, hz: u32, now: Time) -> TcpSnd {
        self.era = era;
        self.w.cwnd = era.initial_cwnd();
        self.rto_ns = era.rto_init_ns();
        self.cc = Cc::new(kind, hz);
        self.cc.init(now, self.snd_nxt);
        self
    }

    /// The congestion control's state (CUBIC's W_max, HyStart), for tests and statistics.
    pub fn cc(&self) -> &Cc {
        &self.cc
    }

    /// Bytes a send() may still queue now (`tcp_memory_free`: a new segment may be started while
    /// the queue is under the buffer size).
    pub fn can_queue(&self) -> bool {
        self.wmem_queued < self.sndbuf
    }

    /// 2.4 `tcp_wspace(sk) >= tcp_min_write_space(sk)`: free space at least half of what is
    /// queued. A writer blocked on the buffer is woken when this holds (`tcp_new_space`).
    pub fn writable(&self) -> bool {
        self.sndbuf.saturating_sub(self.wmem_queued) >= self.wmem_queued / 2
    }

    /// Copy up to `bytes` of one send() into the write queue; `first` = the call's first chunk
    /// (starts a new segment under `PerSend`). Returns the bytes taken.
    pub fn append(&mut self, bytes: u32, first: bool) -> u32 {
        let mut left = bytes;
        let mut fresh = first && self.seg_mode == Segmentation::PerSend;
        while left > 0 {
            let n_unsent = self.segs.len() - self.sent;
            let tail_open = !fresh && n_unsent > 0 && self.segs.back().is_some_and(|s| s.len < self.mss);
            if tail_open {
                let tail = self.segs.back_mut().expect("tail");
                let take = (self.mss - tail.len).min(left);
                tail.len += take;
                self.wmem_queued += take;
                self.write_seq += u64::from(take);
                left -= take;
                continue;
            }
            if !self.can_queue() {
                break;
            }
            let take = self.mss.min(left);
            self.segs.push_back(Seg { seq: self.write_seq, len: take, retx: false, sent_at: Time::ZERO });
            self.wmem_queued += take + self.overhead;
            self.write_seq += u64::from(take);
            left -= take;
            fresh = false;
        }
        bytes - left
    }

    /// Bytes written and not yet acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.write_seq - self.snd_una
    }

    pub fn outstanding(&self) -> bool {
        self.snd_nxt > self.snd_una
    }

    fn window_bytes(&self) -> u64 {
        (u64::from(self.w.cwnd) * u64::from(self.mss)).min(self.rwnd)
    }

    /// The next segment to transmit now, if any, and mark it sent.
    pub fn next_tx(&mut self, now: Time) -> Option<TxSeg> {
        if self.retx_head {
            self.retx_head = false;
            if let Some(s) = self.segs.front_mut() {
                self.retransmits += 1;
                s.retx = true;
                s.sent_at = now;
                return Some(TxSeg {
                    seq: s.seq.max(self.snd_una),
                    len: (s.seq + u64::from(s.len) - s.seq.max(self.snd_una)) as u32,
                    retransmit: true,
                });
            }
        }
        let s = *self.segs.get(self.sent)?;
        let end = s.seq + u64::from(s.len);
        if end - self.snd_una > self.window_bytes() {
            return None;
        }
        let more_queued = self.sent + 1 < self.segs.len();
        if s.len < self.mss && !self.nodelay && self.outstanding() && !more_queued {
            return None; // Nagle: a runt waits for the ACK of what is in flight
        }
        if !self.outstanding() {
            self.cwnd_restart(now);
        }
        let retransmit = end <= self.snd_max;
        let seg = &mut self.segs[self.sent];
        seg.sent_at = now;
        seg.retx |= retransmit;
        self.sent += 1;
        self.snd_nxt = end;
        self.snd_max = self.snd_max.max(end);
        if retransmit {
            self.retransmits += 1;
        } else if self.rtt_probe.is_none() {
            self.rtt_probe = Some((end, now));
        }
        Some(TxSeg { seq: s.seq, len: s.len, retransmit })
    }

    /// 2.5.17 `tcp_cwnd_restart`, when new data leaves an idle connection.
    fn cwnd_restart(&mut self, now: Time) {
        const RESTART_CWND: u32 = 2;
        let Some(last) = self.lsndtime.replace(now) else { return };
        let mut delta = now.since(last).ns() as i128;
        let rto = i128::from(self.rto_ns);
        if delta <= rto {
            return;
        }
        let restart = RESTART_CWND.min(self.w.cwnd);
        // tcp_current_ssthresh: max(ssthresh, 3/4 cwnd).
        self.w.ssthresh = self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2));
        let mut cwnd = self.w.cwnd;
        loop {
            delta -= rto;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.w.cwnd = cwnd.max(restart);
        self.w.cwnd_cnt = 0;
    }

    fn rtt_sample(&mut self, r: u64) {
        if self.srtt_ns == 0 {
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
        } else {
            let d = self.srtt_ns.abs_diff(r);
            self.rttvar_ns = (3 * self.rttvar_ns + d) / 4;
            self.srtt_ns = (7 * self.srtt_ns + r) / 8;
        }
        self.rto_ns = (self.srtt_ns + 4 * self.rttvar_ns).clamp(RTO_MIN_NS, RTO_MAX_NS);
    }

    /// An ACK for `ack` with window `win` arrived.
    pub fn on_ack(&mut self, now: Time, ack: u64, win: u64) -> AckEffect {
        let mut e = AckEffect::default();
        if ack > self.snd_max || ack < self.snd_una {
            return e; // acknowledges nothing sent, or old
        }
        let win_changed = win != self.rwnd;
        self.rwnd = win;
        if ack == self.snd_una {
            if self.outstanding() && !win_changed {
                self.dupacks += 1;
                if self.dupacks == DUPACK_THRESHOLD && self.recover.is_none() {
                    self.w.ssthresh = self.cc.ssthresh(&self.w);
                    self.w.cwnd = self.w.ssthresh + DUPACK_THRESHOLD;
                    self.w.cwnd_cnt = 0;
                    self.recover = Some(self.snd_nxt);
                    self.retx_head = true;
                    self.rtt_probe = None;
                    e.fast_retransmit = true;
                } else if self.recover.is_some() {
                    self.w.cwnd += 1;
                }
            }
            return e;
        }
        // `tcp_packets_in_flight` before this ACK, for the window-limited test: segments sent and
        // not yet acknowledged, whatever their size (`packets_out`).
        let prior_in_flight = self.sent as u32;
        e.acked = ack - self.snd_una;
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        self.dupacks = 0;
        // The newest segment this ACK fully covers gives the congestion control its RTT sample,
        // unless retransmitted data was acknowledged (`FLAG_RETRANS_DATA_ACKED`).
        let (mut pkts, mut newest, mut retx_acked) = (0u32, None, false);
        while let Some(s) = self.segs.front_mut() {
            let end = s.seq + u64::from(s.len);
            if end <= ack {
                e.freed += s.len + self.overhead;
                pkts += 1;
                retx_acked |= s.retx;
                newest = Some(s.sent_at);
                self.segs.pop_front();
                self.sent = self.sent.saturating_sub(1);
            } else {
                if s.seq < ack {
                    let cut = (ack - s.seq) as u32;
                    s.seq = ack;
                    s.len -= cut;
                    e.freed += cut;
                }
                break;
            }
        }
        // Segments before snd_nxt count as sent (an ACK can pass a go-back point).
        while self.sent < self.segs.len() && self.segs[self.sent].seq < self.snd_nxt {
            self.sent += 1;
        }
        self.wmem_queued -= e.freed;
        if let Some((seq, at)) = self.rtt_probe {
            if ack >= seq {
                self.rtt_sample(now.since(at).ns());
                self.rtt_probe = None;
            }
        }
        let rtt = if retx_acked { None } else { newest.map(|at: Time| now.since(at).ns()) };
        if pkts > 0 {
            self.cc.pkts_acked(&mut self.w, now, pkts, rtt, self.recover.is_none());
        }
        match self.recover {
            Some(r) if ack >= r => {
                self.recover = None;
                self.w.cwnd = self.w.ssthresh;
            }
            Some(_) => self.retx_head = true, // partial ACK: the next hole (NewReno)
            None => {
                if self.era.cwnd_limited(self.w.cwnd, prior_in_flight) {
                    self.cc.cong_avoid(&mut self.w, now, ack, self.snd_nxt);
                }
            }
        }
        self.w.cwnd = self.w.cwnd.min(CWND_CLAMP);
        e
    }

    /// The retransmission timer expired: back off, collapse the window, go back to snd_una.
    pub fn on_timeout(&mut self, now: Time) {
        if !self.outstanding() {
            return;
        }
        self.timeouts += 1;
        self.w.ssthresh = self.cc.ssthresh(&self.w);
        self.w.cwnd = 1;
        self.w.cwnd_cnt = 0;
        self.cc.enter_loss(now, self.snd_nxt);
        self.recover = None;
        self.dupacks = 0;
        self.rtt_probe = None;
        self.retx_head = false;
        self.sent = 0;
        self.snd_nxt = self.snd_una;
        self.rto_ns = (self.rto_ns * 2).min(RTO_MAX_NS);
    }

    /// Linux 3.2 `tcp_tso_should_defer` (net/ipv4/tcp_output.c), for a sender with TSO: new
    /// data waits while neither a full TSO frame (`sk_gso_max_size`, 64 KB) nor a third of the
    /// window (`sysctl_tcp_tso_win_divisor = 3`: `min(snd_wnd, snd_cwnd * mss) / 3`) can leave at
    /// once, `limit = min(send window left, (snd_cwnd - in_flight) * mss)`; never in recovery
    /// (`icsk_ca_state != TCP_CA_Open`) or with nothing in flight. Not modelled: the deferral's
    /// limit of two jiffies (a deferring flow has data in flight, whose ACKs release it) and the
    /// clause for an skb in the middle of the write queue.
    pub fn tso_should_defer(&self) -> bool {
        if self.recover.is_some() || self.retx_head || self.snd_nxt < self.snd_max {
            return false;
        }
        let in_flight = self.snd_nxt - self.snd_una;
        if in_flight == 0 {
            return false;
        }
        let mss = u64::from(self.mss.max(1));
        let cwnd = u64::from(self.w.cwnd) * mss;
        let limit = self.rwnd.saturating_sub(in_flight).min(cwnd.saturating_sub(in_flight));
        if limit >= 65_536 {
            return false;
        }
        limit < self.rwnd.min(cwnd) / 3
    }

    /// Segments held (sent or not).
    #[cfg(test)]
    pub fn queued_segments(&self) -> usize {
        self.segs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_send_cuts_each_send_stream_coalesces() {
        let mut a = TcpSnd::new(1460, 1 << 20, 0, Segmentation::PerSend, true, 1 << 20);
        a.append(2048, true);
        a.append(2048, true);
        let lens: Vec<u32> = std::iter::from_fn(|| a.next_tx(Time(0))).map(|s| s.len).collect();
        // cwnd 2: the first send's two segments, 1460 + 588.
        assert_eq!(lens, vec![1460, 588]);
        assert_eq!(a.queued_segments(), 4);
        let mut b = TcpSnd::new(1460, 1 << 20, 0, Segmentation::Stream, true, 1 << 20);
        b.append(2048, true);
        b.append(2048, true);
        // cwnd 2 lets two segments go: both full-sized when data is coalesced.
        let lens: Vec<u32> = std::iter::from_fn(|| b.next_tx(Time(0))).map(|s| s.len).collect();
        assert_eq!(lens, vec![1460, 1460]);
    }

    #[test]
    fn tso_defers_until_a_third_of_the_window_can_leave() {
        let mut t = TcpSnd::new(1000, 1 << 24, 0, Segmentation::Stream, true, 1 << 20);
        t.w.cwnd = 30;
        t.append(1 << 20, true);
        // Nothing in flight: never deferred; the whole window (30 segments) leaves.
        assert!(!t.tso_should_defer());
        let mut sent = 0;
        while t.next_tx(Time(0)).is_some() {
            sent += 1;
        }
        assert_eq!(sent, 30);
        // Each ACK of 2 segments opens 2 (cwnd held for the test): deferred while the room is
        // below 30 * 1000 / 3 = 10,000 bytes, sent at 10 segments.
        let mut acked = 0;
        for i in 1..=5u64 {
            acked += 2000;
            t.on_ack(Time(i), acked, 1 << 20);
            t.w.cwnd = 30;
            assert_eq!(t.tso_should_defer(), i < 5, "after {i} ACKs");
        }
        // A window that allows a full 64 KB frame never defers.
        t.w.cwnd = 1000;
        assert!(!t.tso_should_defer());
    }

    #[test]
    fn buffer_blocks_then_acks_free_and_wake() {
        let mut t = TcpSnd::new(1000, 4000, 0, Segmentation::Stream, true, 1 << 20);
        assert_eq!(t.append(10_000, true), 4000);
        assert!(!t.can_queue() && !t.writable());
        t.next_tx(Time(0));
        t.next_tx(Time(0));
        let e = t.on_ack(Time(100), 2000, 1 << 20);
        assert_eq!((e.freed, e.acked), (2000, 2000));
        assert!(t.writable());
        assert_eq!(t.w.cwnd, 3, "slow start: +1 per ACK");
    }

    #[test]
    fn three_dupacks_retransmit_the_head() {
        let mut t = TcpSnd::new(1000, 1 << 20, 0, Segmentation::Stream, true, 1 << 20);
        t.w.cwnd = 10;
        t.append(10_000, true);
        while t.next_tx(Time(0)).is_some() {}
        assert_eq!(t.snd_nxt, 10_000);
        t.on_ack(Time(1), 1000, 1 << 20);
        for _ in 0..2 {
            assert!(!t.on_ack(Time(2), 1000, 1 << 20).fast_retransmit);
        }
        assert!(t.on_ack(Time(3), 1000, 1 << 20).fast_retransmit);
        let r = t.next_tx(Time(3)).unwrap();
        assert_eq!((r.seq, r.len, r.retransmit), (1000, 1000, true));
        t.on_ack(Time(4), 10_000, 1 << 20);
        assert_eq!(t.unacked_bytes(), 0);
        assert_eq!(t.w.cwnd, t.w.ssthresh);
    }

    #[test]
    fn timeout_goes_back_n() {
        let mut t = TcpSnd::new(1000, 1 << 20, 0, Segmentation::Stream, true, 1 << 20);
        t.append(3000, true);
        t.next_tx(Time(0));
        t.next_tx(Time(0));
        t.on_timeout(Time(2));
        assert_eq!((t.w.cwnd, t.snd_nxt), (1, 0));
        let r = t.next_tx(Time(5)).unwrap();
        assert_eq!((r.seq, r.retransmit), (0, true));
        assert!(t.next_tx(Time(5)).is_none(), "cwnd 1");
        assert_eq!(t.rto_ns, 2 * RTO_INIT_NS);
    }

    #[test]
    fn cwnd_restarts_after_an_idle_rto() {
        let mut t = TcpSnd::new(1000, 1 << 20, 0, Segmentation::Stream, true, 1 << 20);
        t.w.cwnd = 16;
        t.append(1000, true);
        t.next_tx(Time(0));
        t.on_ack(Time(1_000_000), 1000, 1 << 20);
        // One segment in flight did not fill the window (2.4: `prior_in_flight >= snd_cwnd`):
        // no growth.
        assert_eq!(t.w.cwnd, 16);
        // The 1 ms RTT sample sets the RTO to its 200 ms floor. Idle for 1.1 RTO: one halving,
        // 16 -> 8; ssthresh >= 3/4 of 16.
        assert_eq!(t.rto_ns, RTO_MIN_NS);
        t.append(1000, true);
        t.next_tx(Time(221_000_000));
        assert_eq!(t.w.cwnd, 8);
        assert!(t.w.ssthresh >= 12);
        t.on_ack(Time(222_000_000), 2000, 1 << 20);
        // Idle for ten RTOs: down to the restart window, 2.
        t.append(1000, true);
        t.next_tx(Time(40_000_000_000));
        assert_eq!(t.w.cwnd, 2);
        // Sending while data is in flight is no restart.
        t.append(1000, true);
        t.next_tx(Time(80_000_000_000));
        assert_eq!(t.w.cwnd, 2);
    }

    #[test]
    fn nagle_holds_a_runt_while_data_is_in_flight() {
        let mut t = TcpSnd::new(1000, 1 << 20, 0, Segmentation::Stream, false, 1 << 20);
        t.append(1500, true);
        assert_eq!(t.next_tx(Time(0)).map(|s| s.len), Some(1000));
        assert_eq!(t.next_tx(Time(0)), None);
        t.on_ack(Time(1), 1000, 1 << 20);
        assert_eq!(t.next_tx(Time(1)).map(|s| s.len), Some(500));
    }
}
