//! External traffic generators. They live outside the host and only see the wire: the host tells
//! them when they are woken and what came back; they say what to send and when to wake next.

use crate::frame::{Emit, Feedback};
use crate::http::{HttpClients, HttpConfig, HttpOrigin};
use hostsim_engine::{round_u64, Histogram, Rng, Time};
use hostsim_options::options;
use hostsim_tcp::{CcKind, Era, Segmentation, TcpSnd};
use serde::{Deserialize, Serialize};

/// Kind of generator.
#[options]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Constant rate: frame k leaves at `start + k / rate`.
    Cbr,
    /// Poisson arrivals with mean rate `rate_pps`.
    Poisson,
    /// One request outstanding; the next leaves `client_stack_ns` after the reply (lat_udp).
    PingPong,
    /// `flows` TCP senders. Without congestion control (`tcp`: None) each keeps up to
    /// `window_bytes` unacknowledged and goes back to the first unacknowledged byte on three
    /// duplicate ACKs (fast retransmit) or on timeout. With it, each flow is a `hostsim-tcp`
    /// sender (`TcpSnd` with Reno or CUBIC and its era's rules: slow start, fast retransmit and
    /// NewReno recovery, RFC 6298 timer), its window capped by `window_bytes` (the sender's
    /// socket buffer) and by the window the host advertises.
    TcpWindow,
    /// The far end of a host's TCP sender: receives its data frames, records each one's arrival
    /// time (end of frame at its NIC) and size, and acknowledges like a Linux 2.4 receiver
    /// (`__tcp_ack_snd_check`, net/ipv4/tcp_input.c 2.4.19): at once in quick-ACK mode (the
    /// first up to 16 segments, `TCP_MAX_QUICKACKS`), when more than one full-sized segment
    /// (`rcv_mss`, the largest seen) is unacknowledged, or when a segment is out of order;
    /// otherwise after the delayed-ACK timeout (`TCP_ATO_MIN` = HZ/25 = 40 ms). Each ACK
    /// leaves `client_stack_ns` after the frame that triggered it (the receiver's stack).
    StreamSink,
    /// Web clients on persistent HTTP connections (WebAxe-4-like, `http.rs`; `[traffic.http]`).
    HttpClients,
    /// Origin servers answering a web accelerator's requests (`http.rs`; `[traffic.http]`).
    HttpOrigin,
    /// The far end of a route out of the host: counts the frames the host forwards to it
    /// ("output packets per unit time", paper 003) and never sends.
    Sink,
}

/// Parameters of a generator. Times are absolute simulated ns.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceConfig {
    pub kind: SourceKind,
    pub rate_pps: f64,
    pub payload_bytes: u32,
    /// Number of distinct flows (source ports); frames rotate over them (cbr/poisson).
    pub flows: u32,
    pub start_ns: u64,
    pub stop_ns: u64,
    /// ping-pong: client-side stack time per round trip (send + receive path on the client).
    pub client_stack_ns: u64,
    /// ping-pong: a request unanswered after this long counts as a timeout and the next is sent.
    pub timeout_ns: u64,
    /// tcp_window: window per flow, bytes.
    pub window_bytes: u32,
    /// tcp_window: retransmission timeout.
    pub rto_ns: u64,
    /// tcp_window: bytes to send per flow (0 = unlimited until stop).
    pub total_bytes: u64,
    /// ping_pong over TCP (lat_tcp) instead of UDP: requests carry byte sequence numbers.
    pub tcp: bool,
    /// Latency samples are recorded only from this time on (end of warm-up).
    pub record_from_ns: u64,
    /// http_clients / http_origin: their parameters.
    pub http: Option<HttpConfig>,
    /// Client machines behind the source (http_clients spreads its connections over them).
    pub clients: u32,
    /// tcp_window: the senders' TCP (None: the fixed window without congestion control).
    pub sender: Option<SenderTcp>,
    /// `cbr` only: paced in quanta (0 = evenly spaced). The frames whose even schedule falls
    /// in a quantum of this many ns leave at its start, `burst_gap_ns` apart, as a paced
    /// generator that builds each quantum's frames at once sends them (crates/live/src/gen.rs
    /// `Pacing`).
    pub quantum_ns: u64,
    /// `cbr` with `quantum_ns`: the gap between the frames of one quantum.
    pub burst_gap_ns: f64,
}

/// The TCP of a `tcp_window` source's senders.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderTcp {
    pub cc: CcKind,
    pub era: Era,
    /// The senders' timer frequency (CUBIC counts in jiffies).
    pub hz: u32,
    /// The senders' NIC segments for them (TSO): new data is sent in trains, as Linux's
    /// `tcp_tso_should_defer` holds it back until a large chunk can leave
    /// (`TcpSnd::tso_should_defer`).
    pub tso: bool,
}

/// One flow of a `tcp_window` source with congestion control.
#[derive(Clone, Debug)]
struct CcFlow {
    snd: TcpSnd,
    /// When its retransmission timer fires (armed while data is outstanding).
    rto_at: Option<u64>,
}

/// Resolution of the inter-arrival histogram a stream sink keeps.
pub const GAP_BIN_NS: u64 = 10_000;
/// Bins of the inter-arrival histogram (the last one holds everything longer).
pub const GAP_BINS: usize = 501;
/// Gaps shorter than this are also counted by frame size (paper 002 Table 1).
pub const SHORT_GAP_NS: u64 = 100_000;
/// Frame-size bins (100 B each) for the short gaps; the last holds larger frames.
pub const SIZE_BINS: usize = 16;
/// Linux 2.4's delayed-ACK timeout (`TCP_ATO_MIN`).
const DELACK_NS: u64 = 40_000_000;
/// Linux 2.4's `TCP_MAX_QUICKACKS`.
const QUICKACKS: u32 = 16;

/// What a stream sink measured: per data frame, arrival time and size, kept as fixed
/// histograms (memory does not grow with the run).
#[derive(Clone, Debug, Default)]
pub struct SinkStats {
    pub frames: u64,
    pub frame_bytes: u64,
    /// In-order payload bytes received.
    pub bytes: u64,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    pub acks: u64,
    pub out_of_order: u64,
    /// Inter-arrival times between consecutive data frames, `GAP_BIN_NS` bins.
    pub gaps: Vec<u64>,
    /// Frames arriving less than `SHORT_GAP_NS` after the previous one, by frame size (100 B).
    pub short_gap_sizes: Vec<u64>,
}

/// What a source measured.
#[derive(Clone, Debug, Default)]
pub struct SourceStats {
    pub emitted: u64,
    pub emitted_bytes: u64,
    pub replies: u64,
    /// Frames a sink received (forwarded by the host).
    pub received: u64,
    pub timeouts: u64,
    pub retransmits: u64,
    /// Bytes acknowledged before `stop_ns` (tcp_window).
    pub acked_bytes: u64,
    /// Round-trip times (ping-pong), recorded after warm-up.
    pub rtt: Histogram,
    /// stream_sink: arrivals.
    pub sink: SinkStats,
}

#[derive(Clone, Debug, Default)]
struct SinkState {
    rcv_nxt: u64,
    /// Bytes received since the last ACK (`rcv_nxt - rcv_wup`).
    unacked: u64,
    rcv_mss: u32,
    quickacks: u32,
    /// An ACK decided and waiting for the receiver's stack time: (leaves at, ack).
    ack_at: Option<u64>,
    delack_at: Option<u64>,
    last_arrival: Option<u64>,
    /// Segments received above a hole (2.4 `out_of_order_queue`): seq → end.
    ooo: std::collections::BTreeMap<u64, u64>,
}

#[derive(Clone, Debug, Default)]
struct TcpFlow {
    next_seq: u64,
    acked: u64,
    last_progress: u64,
    dup_acks: u32,
}

/// Duplicate ACKs that trigger a fast retransmit (RFC 5681).
const DUP_ACK_THRESHOLD: u32 = 3;

/// A running generator.
#[derive(Clone, Debug)]
pub struct Source {
    cfg: SourceConfig,
    k: u64,
    next_flow: u32,
    outstanding: Option<(u64, u64)>, // (seq, sent_at)
    tcp: Vec<TcpFlow>,
    /// tcp_window with congestion control: its flows and their retransmission timers by due time.
    cc: Vec<CcFlow>,
    cc_due: std::collections::BTreeSet<(u64, u32)>,
    /// The wake-up last asked of the host (tcp_window with congestion control).
    cc_wake: Option<u64>,
    /// Poisson: mean gap in ns (`1e9 / rate_pps`, computed once; the same value every time).
    mean_gap_ns: f64,
    sink: Vec<SinkState>,
    /// Flows with an ACK due, by due time: O(log flows) per frame with thousands of flows.
    sink_due: std::collections::BTreeSet<(u64, u32)>,
    /// http_clients / http_origin state (`http.rs`).
    http: Option<Box<HttpState>>,
    pub stats: SourceStats,
}

/// The state of an HTTP source.
#[derive(Clone, Debug)]
pub enum HttpState {
    Clients(HttpClients),
    Origin(HttpOrigin),
}

impl Source {
    pub fn new(cfg: SourceConfig) -> Self {
        let tcp = if cfg.kind == SourceKind::TcpWindow && cfg.sender.is_none() {
            vec![TcpFlow::default(); cfg.flows.max(1) as usize]
        } else {
            Vec::new()
        };
        let cc = match (cfg.kind, cfg.sender) {
            (SourceKind::TcpWindow, Some(s)) => (0..cfg.flows.max(1))
                .map(|_| CcFlow {
                    // No send-buffer limit: the writer keeps the queue full (`cc_pump`); the
                    // window cap is applied to the advertised window instead.
                    snd: TcpSnd::new(cfg.payload_bytes.max(1), u32::MAX, 0, Segmentation::Stream, false, u64::MAX)
                        .with_cc(s.cc, s.era, s.hz, Time(cfg.start_ns)),
                    rto_at: None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let mean_gap_ns = 1e9 / cfg.rate_pps;
        let sink = if cfg.kind == SourceKind::StreamSink {
            vec![SinkState { rcv_mss: 536, quickacks: QUICKACKS, ..Default::default() }; cfg.flows.max(1) as usize]
        } else {
            Vec::new()
        };
        let mut stats = SourceStats::default();
        if cfg.kind == SourceKind::StreamSink {
            stats.sink.gaps = vec![0; GAP_BINS];
            stats.sink.short_gap_sizes = vec![0; SIZE_BINS];
        }
        let http = match (cfg.kind, &cfg.http) {
            (SourceKind::HttpClients, h) => {
                let h = h.clone().unwrap_or_default();
                Some(Box::new(HttpState::Clients(HttpClients::new(
                    h,
                    cfg.start_ns,
                    cfg.stop_ns,
                    cfg.record_from_ns,
                    cfg.window_bytes,
                ))))
            }
            (SourceKind::HttpOrigin, h) => {
                Some(Box::new(HttpState::Origin(HttpOrigin::new(h.clone().unwrap_or_default(), cfg.window_bytes))))
            }
            _ => None,
        };
        Source {
            cfg,
            k: 0,
            next_flow: 0,
            outstanding: None,
            tcp,
            cc,
            cc_due: Default::default(),
            cc_wake: None,
            sink,
            sink_due: Default::default(),
            http,
            mean_gap_ns,
            stats,
        }
    }

    /// The HTTP state of an http_clients / http_origin source.
    pub fn http(&self) -> Option<&HttpState> {
        self.http.as_deref()
    }
    pub fn config(&self) -> &SourceConfig {
        &self.cfg
    }

    /// When to wake first (None: never sends).
    pub fn first_wake(&self) -> Option<Time> {
        (self.cfg.start_ns < self.cfg.stop_ns).then_some(Time(self.cfg.start_ns))
    }

    // Inlined: out of line, it cost a call per frame on the rate sources' path (`wake`).
    #[inline]
    fn emit(&mut self, out: &mut Vec<Emit>, flow: u32, seq: u64, bytes: u32, tcp: bool) {
        self.stats.emitted += 1;
        self.stats.emitted_bytes += u64::from(bytes);
        out.push(Emit { flow, seq, payload_bytes: bytes, tcp, ack: None, win: 0, flags: 0, tag: 0 });
    }

    fn emit_ack(&mut self, out: &mut Vec<Emit>, flow: u32, ack: u64) {
        self.stats.emitted += 1;
        self.stats.sink.acks += 1;
        out.push(Emit {
            flow,
            seq: 0,
            payload_bytes: 0,
            tcp: true,
            ack: Some(ack),
            win: self.cfg.window_bytes,
            flags: 0,
            tag: 0,
        });
    }

    /// The sink's next timed action (an ACK leaving, a delayed ACK due).
    fn sink_next_wake(&self) -> Option<Time> {
        self.sink_due.first().map(|&(t, _)| Time(t))
    }

    /// Flow `f`'s due time changed from `old` to its current one: keep `sink_due` in step.
    fn sink_reschedule(&mut self, f: usize, old: Option<u64>) {
        let st = &self.sink[f];
        let new = st.ack_at.or(st.delack_at);
        if old != new {
            if let Some(t) = old {
                self.sink_due.remove(&(t, f as u32));
            }
            if let Some(t) = new {
                self.sink_due.insert((t, f as u32));
            }
        }
    }

    /// Send what is due at `now`; returns the next wake-up.
    fn sink_wake(&mut self, now_ns: u64, out: &mut Vec<Emit>) -> Option<Time> {
        while let Some(&(t, f)) = self.sink_due.first() {
            if t > now_ns {
                break;
            }
            self.sink_due.pop_first();
            let st = &mut self.sink[f as usize];
            st.ack_at = None;
            st.delack_at = None;
            st.unacked = 0;
            let ack = st.rcv_nxt;
            self.emit_ack(out, f, ack);
        }
        self.sink_next_wake()
    }

    /// A data frame reached the sink.
    fn sink_data(&mut self, now_ns: u64, flow: u32, seq: u64, len: u32, frame_bytes: u32) -> Option<Time> {
        let record = now_ns >= self.cfg.record_from_ns;
        let stack = self.cfg.client_stack_ns;
        let f = flow as usize % self.sink.len().max(1);
        let old_due = self.sink[f].ack_at.or(self.sink[f].delack_at);
        let st = &mut self.sink[f];
        let prev = st.last_arrival.replace(now_ns);
        if record {
            let s = &mut self.stats.sink;
            s.frames += 1;
            s.frame_bytes += u64::from(frame_bytes);
            s.first_ns.get_or_insert(now_ns);
            s.last_ns = now_ns;
            if let Some(p) = prev {
                let gap = now_ns - p;
                s.gaps[((gap / GAP_BIN_NS) as usize).min(GAP_BINS - 1)] += 1;
                if gap < SHORT_GAP_NS {
                    s.short_gap_sizes[((frame_bytes / 100) as usize).min(SIZE_BINS - 1)] += 1;
                }
            }
        }
        let now_ack = if seq == st.rcv_nxt {
            let mut advanced = u64::from(len);
            st.rcv_nxt += u64::from(len);
            // The hole is filled: take what was queued above it (tcp_ofo_queue).
            while let Some((&s0, &e0)) = st.ooo.first_key_value() {
                if s0 > st.rcv_nxt {
                    break;
                }
                st.ooo.pop_first();
                if e0 > st.rcv_nxt {
                    advanced += e0 - st.rcv_nxt;
                    st.rcv_nxt = e0;
                }
            }
            let filled_hole = advanced > u64::from(len);
            st.unacked += advanced;
            if record {
                self.stats.sink.bytes += advanced;
            }
            // tcp_measure_rcv_mss: the largest segment seen.
            st.rcv_mss = st.rcv_mss.max(len);
            let quick = st.quickacks > 0;
            if quick {
                st.quickacks -= 1;
            }
            quick || filled_hole || !st.ooo.is_empty() || st.unacked > u64::from(st.rcv_mss)
        } else {
            self.stats.sink.out_of_order += 1;
            if seq > st.rcv_nxt {
                st.ooo.insert(seq, seq + u64::from(len));
            }
            true // out of order or a duplicate: a (duplicate) ACK at once
        };
        if now_ns >= self.cfg.stop_ns {
            // A stopped receiver takes frames in but sends no more ACKs: its wake-ups after
            // `stop_ns` do nothing, so nothing may be scheduled (a due ACK it will never send
            // would otherwise come back here as a wake-up in the past; fuzz finding).
            return None;
        }
        if now_ack {
            st.delack_at = None;
            st.ack_at = Some(st.ack_at.unwrap_or(now_ns + stack));
        } else if st.delack_at.is_none() && st.ack_at.is_none() {
            st.delack_at = Some(now_ns + DELACK_NS);
        }
        self.sink_reschedule(f, old_due);
        self.sink_next_wake()
    }

    fn rotate_flow(&mut self) -> u32 {
        let f = self.next_flow;
        // `(f + 1) % flows` without a division per frame (f < flows always holds).
        let next = f + 1;
        self.next_flow = if next >= self.cfg.flows.max(1) { 0 } else { next };
        f
    }

    /// The host wakes the source at a time it asked for. Returns the next wake-up time.
    ///
    /// The rate sources (one frame per wake-up, the bulk of every flood) take a short path
    /// inlined into the caller; the other kinds go through `wake_other`. (One out-of-line `wake`
    /// spilled six registers and a 168-byte frame for its HTTP and sink arms on every frame:
    /// callgrind, livelock-400k.)
    #[inline]
    pub fn wake(&mut self, now: Time, rng: &mut Rng, out: &mut Vec<Emit>) -> Option<Time> {
        let now_ns = now.ns();
        if now_ns >= self.cfg.stop_ns {
            return None;
        }
        // An HTTP source has its own kind, so a rate source never has HTTP state.
        match self.cfg.kind {
            SourceKind::Cbr => {
                let flow = self.rotate_flow();
                let seq = self.k;
                self.emit(out, flow, seq, self.cfg.payload_bytes, false);
                self.k += 1;
                // Exact schedule from the start time: no accumulated rounding drift.
                let next = self.cfg.start_ns + self.cbr_offset_ns(self.k);
                (next < self.cfg.stop_ns).then_some(Time(next.max(now_ns + 1)))
            }
            SourceKind::Poisson => {
                let flow = self.rotate_flow();
                let seq = self.k;
                self.emit(out, flow, seq, self.cfg.payload_bytes, false);
                self.k += 1;
                // `round_u64(x).max(1)` is `x.round().max(1.0) as u64`, without the libm call.
                let gap = round_u64(rng.exp(self.mean_gap_ns)).max(1);
                let next = now_ns + gap;
                (next < self.cfg.stop_ns).then_some(Time(next))
            }
            _ => self.wake_other(now, rng, out),
        }
    }

    /// When frame `k` of a `cbr` source leaves, from its start: `k / rate`, or with pacing
    /// quanta (`quantum_ns`), the start of the quantum that time falls in plus `burst_gap_ns`
    /// per earlier frame of that quantum.
    #[inline]
    pub fn cbr_offset_ns(&self, k: u64) -> u64 {
        // `k * 1e9 / rate` in this order (not `k * (1e9 / rate)`): the even schedule's times
        // are exactly those of before pacing existed, to the nanosecond.
        let even = |k: u64| (k as f64 * 1e9 / self.cfg.rate_pps) as u64;
        if self.cfg.quantum_ns == 0 {
            return even(k);
        }
        let q_ns = self.cfg.quantum_ns;
        let quantum = |k: u64| even(k) / q_ns;
        let q = quantum(k);
        // The quantum's first frame: the estimate, corrected for rounding either way.
        let mut first = ((q * q_ns) as f64 * self.cfg.rate_pps / 1e9).ceil() as u64;
        while first > 0 && quantum(first - 1) >= q {
            first -= 1;
        }
        while quantum(first) < q {
            first += 1;
        }
        q * q_ns + ((k - first) as f64 * self.cfg.burst_gap_ns) as u64
    }

    /// `wake` for the kinds other than the rate sources (after the `stop_ns` check).
    #[inline(never)]
    fn wake_other(&mut self, now: Time, rng: &mut Rng, out: &mut Vec<Emit>) -> Option<Time> {
        let now_ns = now.ns();
        if let Some(h) = self.http.as_deref_mut() {
            return match h {
                HttpState::Clients(c) => c.wake(now, rng, out),
                HttpState::Origin(o) => o.wake(now, rng, out),
            };
        }
        match self.cfg.kind {
            SourceKind::HttpClients | SourceKind::HttpOrigin => None,
            SourceKind::StreamSink => self.sink_wake(now_ns, out),
            SourceKind::Cbr | SourceKind::Poisson => unreachable!("rate sources take wake's own path"),
            SourceKind::PingPong => {
                if let Some((_, sent)) = self.outstanding {
                    if now_ns < sent + self.cfg.timeout_ns {
                        return Some(Time(sent + self.cfg.timeout_ns));
                    }
                    self.stats.timeouts += 1;
                }
                // Over TCP a request's sequence number is its first byte's offset.
                let seq = if self.cfg.tcp { self.k * u64::from(self.cfg.payload_bytes) } else { self.k };
                self.k += 1;
                self.outstanding = Some((seq, now_ns));
                self.emit(out, 0, seq, self.cfg.payload_bytes, self.cfg.tcp);
                Some(Time(now_ns + self.cfg.timeout_ns))
            }
            SourceKind::TcpWindow if self.cfg.sender.is_some() => self.cc_wake(now_ns, out),
            SourceKind::TcpWindow => {
                for f in 0..self.tcp.len() {
                    let fl = &mut self.tcp[f];
                    if fl.next_seq > fl.acked && now_ns >= fl.last_progress + self.cfg.rto_ns {
                        // Timeout: go back to the first unacknowledged byte.
                        fl.next_seq = fl.acked;
                        self.stats.retransmits += 1;
                    }
                    if fl.last_progress == 0 {
                        fl.last_progress = now_ns;
                    }
                    self.fill_window(f, now_ns, out);
                }
                Some(Time(now_ns + self.cfg.rto_ns))
            }
            SourceKind::Sink => None,
        }
    }

    fn fill_window(&mut self, f: usize, now_ns: u64, out: &mut Vec<Emit>) {
        if now_ns >= self.cfg.stop_ns {
            return;
        }
        let mss = u64::from(self.cfg.payload_bytes.max(1));
        let window = u64::from(self.cfg.window_bytes);
        loop {
            let fl = &self.tcp[f];
            let limit = if self.cfg.total_bytes > 0 { self.cfg.total_bytes } else { u64::MAX };
            let in_flight = fl.next_seq - fl.acked;
            if in_flight >= window || fl.next_seq >= limit {
                break;
            }
            let len = mss.min(window - in_flight).min(limit - fl.next_seq);
            if len < mss && in_flight > 0 && fl.next_seq + len < limit {
                break; // Nagle-like: don't send a runt while data is in flight
            }
            let seq = fl.next_seq;
            self.tcp[f].next_seq += len;
            self.emit(out, f as u32, seq, len as u32, true);
        }
    }

    /// A frame from the host reached the source. Returns a new wake-up time if it wants one
    /// sooner than (or instead of) the current one.
    pub fn feedback(&mut self, now: Time, fb: Feedback, out: &mut Vec<Emit>) -> Option<Time> {
        let now_ns = now.ns();
        if let Some(h) = self.http.as_deref_mut() {
            return match h {
                HttpState::Clients(c) => c.feedback(now, fb, out),
                HttpState::Origin(o) => o.feedback(now, fb, out),
            };
        }
        match fb {
            Feedback::Reply { seq, .. } => {
                self.stats.replies += 1;
                match self.outstanding {
                    Some((s, sent)) if s == seq => {
                        self.outstanding = None;
                        let rtt = now_ns - sent + self.cfg.client_stack_ns;
                        if sent >= self.cfg.record_from_ns {
                            self.stats.rtt.record(rtt);
                        }
                        let next = now_ns + self.cfg.client_stack_ns;
                        (next < self.cfg.stop_ns).then_some(Time(next))
                    }
                    _ => None, // a late reply to a request that already timed out
                }
            }
            Feedback::Ack { flow, ack, win } if self.cfg.sender.is_some() => self.cc_ack(now_ns, flow, ack, win, out),
            Feedback::Ack { flow, ack, .. } => {
                let fl = self.tcp.get_mut(flow as usize)?;
                if ack > fl.acked {
                    if now_ns < self.cfg.stop_ns {
                        // Goodput counts what is acknowledged while the source is sending.
                        self.stats.acked_bytes += ack - fl.acked;
                    }
                    fl.acked = ack;
                    fl.last_progress = now_ns;
                    fl.dup_acks = 0;
                    if fl.next_seq < ack {
                        fl.next_seq = ack;
                    }
                } else if ack == fl.acked && fl.next_seq > fl.acked {
                    fl.dup_acks += 1;
                    if fl.dup_acks == DUP_ACK_THRESHOLD {
                        // Fast retransmit, go-back-N style: resend from the hole.
                        fl.next_seq = fl.acked;
                        fl.last_progress = now_ns;
                        self.stats.retransmits += 1;
                    }
                }
                self.fill_window(flow as usize, now_ns, out);
                None
            }
            Feedback::Data { flow, seq, len, frame_bytes, .. } => self.sink_data(now_ns, flow, seq, len, frame_bytes),
            Feedback::SynAck { .. } | Feedback::Fin { .. } => None,
            Feedback::Forwarded { .. } => {
                self.stats.received += 1;
                None
            }
        }
    }

    /// tcp_window with congestion control, woken: the retransmission timers due fire, and at the
    /// start every flow opens its initial window.
    fn cc_wake(&mut self, now_ns: u64, out: &mut Vec<Emit>) -> Option<Time> {
        self.cc_wake = None;
        if now_ns == self.cfg.start_ns {
            for f in 0..self.cc.len() {
                self.cc_pump(f, now_ns, out);
            }
        }
        while let Some(&(t, f)) = self.cc_due.first() {
            if t > now_ns {
                break;
            }
            self.cc_due.pop_first();
            let fl = &mut self.cc[f as usize];
            fl.rto_at = None;
            fl.snd.on_timeout(Time(now_ns));
            self.stats.timeouts += 1;
            self.cc_pump(f as usize, now_ns, out);
        }
        self.cc_next_wake()
    }

    /// An ACK for flow `flow` of a tcp_window source with congestion control.
    fn cc_ack(&mut self, now_ns: u64, flow: u32, ack: u64, win: u32, out: &mut Vec<Emit>) -> Option<Time> {
        let cap = u64::from(self.cfg.window_bytes);
        let f = flow as usize;
        let fl = self.cc.get_mut(f)?;
        let win = if win == u32::MAX { u64::MAX } else { u64::from(win) };
        let e = fl.snd.on_ack(Time(now_ns), ack, win.min(cap));
        if e.acked > 0 {
            if now_ns < self.cfg.stop_ns {
                // Goodput counts what is acknowledged while the source is sending.
                self.stats.acked_bytes += e.acked;
            }
            // An ACK of new data restarts the timer (`tcp_rearm_rto`), or stops it.
            let outstanding = fl.snd.outstanding();
            let rto = fl.snd.rto_ns;
            self.cc_set_timer(f, outstanding.then_some(now_ns + rto));
        }
        self.cc_pump(f, now_ns, out);
        // Ask for a wake-up only when the earliest timer is now earlier than the wake-up asked
        // for (`cc_wake`, the one the host holds: asking again replaces it); a later timer lets
        // the host wake the source at the earlier time for nothing, and that wake-up asks for
        // the next. The comparison is with the wake-up asked for *before* this ACK: comparing
        // with the one `cc_next_wake` has just recorded always found them equal, so no ACK
        // ever asked, and a timer re-armed by an ACK (now + RTO) waited for the next wake-up
        // asked before it, at the start the initial RTO of 1 s (issue 26: five CUBIC flows
        // that lost segments at 40 ms sent nothing from 55 ms to 1,000 ms).
        let asked = self.cc_wake;
        let next = self.cc_due.first().map(|&(t, _)| t).filter(|&t| t < self.cfg.stop_ns);
        match (next, asked) {
            (Some(t), Some(w)) if t >= w => None,
            (Some(t), _) => {
                self.cc_wake = Some(t);
                Some(Time(t))
            }
            (None, _) => None,
        }
    }

    /// Let flow `f` send what its windows allow, writing more data first (the sender's
    /// application writes as fast as the socket takes it, `total_bytes` in all).
    fn cc_pump(&mut self, f: usize, now_ns: u64, out: &mut Vec<Emit>) {
        if now_ns >= self.cfg.stop_ns {
            return;
        }
        let limit = if self.cfg.total_bytes > 0 { self.cfg.total_bytes } else { u64::MAX };
        let chunk = 64 * u64::from(self.cfg.payload_bytes.max(1));
        let was_outstanding = self.cc[f].snd.outstanding();
        let tso = self.cfg.sender.is_some_and(|s| s.tso);
        loop {
            let snd = &mut self.cc[f].snd;
            if snd.write_seq - snd.snd_nxt < chunk && snd.write_seq < limit {
                let n = chunk.min(limit - snd.write_seq) as u32;
                snd.append(n, true);
            }
            if tso && snd.tso_should_defer() {
                break;
            }
            let Some(seg) = snd.next_tx(Time(now_ns)) else { break };
            if seg.retransmit {
                self.stats.retransmits += 1;
            }
            self.emit(out, f as u32, seg.seq, seg.len, true);
        }
        if !was_outstanding && self.cc[f].snd.outstanding() && self.cc[f].rto_at.is_none() {
            let rto = self.cc[f].snd.rto_ns;
            self.cc_set_timer(f, Some(now_ns + rto));
        }
    }

    fn cc_set_timer(&mut self, f: usize, at: Option<u64>) {
        if let Some(old) = self.cc[f].rto_at {
            self.cc_due.remove(&(old, f as u32));
        }
        self.cc[f].rto_at = at;
        if let Some(t) = at {
            self.cc_due.insert((t, f as u32));
        }
    }

    fn cc_next_wake(&mut self) -> Option<Time> {
        let next = self.cc_due.first().map(|&(t, _)| t).filter(|&t| t < self.cfg.stop_ns);
        if next.is_some() {
            self.cc_wake = next;
        }
        next.map(Time)
    }

    /// Is this a ping-pong request still waiting for its reply?
    pub fn outstanding(&self) -> bool {
        self.outstanding.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostsim_engine::RngStreams;

    fn cfg(kind: SourceKind) -> SourceConfig {
        SourceConfig {
            kind,
            rate_pps: 1000.0,
            payload_bytes: 18,
            flows: 2,
            start_ns: 0,
            stop_ns: 1_000_000_000,
            client_stack_ns: 10_000,
            timeout_ns: 1_000_000,
            window_bytes: 4096,
            rto_ns: 200_000_000,
            total_bytes: 0,
            tcp: false,
            record_from_ns: 0,
            http: None,
            clients: 1,
            sender: None,
            quantum_ns: 0,
            burst_gap_ns: 0.0,
        }
    }

    #[test]
    fn sink_acks_like_linux_24_and_histograms_gaps() {
        let mut c = cfg(SourceKind::StreamSink);
        c.flows = 1;
        c.client_stack_ns = 5_000;
        let mut s = Source::new(c);
        let mut r = RngStreams::new(1).stream("s");
        let mut out = Vec::new();
        assert_eq!(s.wake(Time(0), &mut r, &mut out), None);
        // Quick-ACK mode: the first segment is acknowledged at once (after the stack time).
        let t =
            s.feedback(Time(1_000), Feedback::Data { flow: 0, seq: 0, len: 1000, frame_bytes: 1058, tag: 0 }, &mut out);
        assert_eq!(t, Some(Time(6_000)));
        s.wake(Time(6_000), &mut r, &mut out);
        assert_eq!(out.last().and_then(|e| e.ack), Some(1000));
        for k in 1..40u64 {
            s.feedback(
                Time(1_000 + k * 90_000),
                Feedback::Data { flow: 0, seq: k * 1000, len: 1000, frame_bytes: 1058, tag: 0 },
                &mut out,
            );
        }
        let st = &s.stats.sink;
        assert_eq!((st.frames, st.bytes), (40, 40_000));
        assert_eq!(st.gaps[9], 39, "90 us gaps in the 90-100 us bin");
        assert_eq!(st.short_gap_sizes[10], 39, "1058 B frames in the 1000-1099 B bin");
        // Out of order: acknowledged at once, counted.
        s.wake(Time(9_000_000), &mut r, &mut out);
        let t = s.feedback(
            Time(10_000_000),
            Feedback::Data { flow: 0, seq: 99_000, len: 1000, frame_bytes: 1058, tag: 0 },
            &mut out,
        );
        assert_eq!(t, Some(Time(10_005_000)));
        assert_eq!(s.stats.sink.out_of_order, 1);
    }

    #[test]
    fn paced_cbr_sends_each_quantum_as_one_burst() {
        // 1,000,000 pkt/s in 500 us quanta at 2,500,000 pkt/s: 500 frames per quantum, 400 ns
        // apart from the quantum's start.
        let mut c = cfg(SourceKind::Cbr);
        c.rate_pps = 1_000_000.0;
        c.quantum_ns = 500_000;
        c.burst_gap_ns = 400.0;
        let s = Source::new(c);
        assert_eq!(s.cbr_offset_ns(0), 0);
        assert_eq!(s.cbr_offset_ns(1), 400);
        assert_eq!(s.cbr_offset_ns(499), 499 * 400);
        assert_eq!(s.cbr_offset_ns(500), 500_000);
        assert_eq!(s.cbr_offset_ns(1_001), 1_000_400);
        // Without quanta: evenly spaced.
        let mut e = cfg(SourceKind::Cbr);
        e.rate_pps = 1_000_000.0;
        assert_eq!(Source::new(e).cbr_offset_ns(500), 500_000);
    }

    #[test]
    fn paced_cbr_keeps_the_rate() {
        // Over rates and quanta, a paced source keeps the even schedule's frames in each
        // quantum and never sends a frame before the previous one.
        for &rate in &[1_000.0, 99_999.0, 300_000.0, 700_001.0, 1_200_000.0, 2_999_999.0] {
            for &q_us in &[1u64, 7, 250, 500, 1_999] {
                let mut c = cfg(SourceKind::Cbr);
                c.rate_pps = rate;
                c.quantum_ns = q_us * 1000;
                c.burst_gap_ns = 1e9 / (rate * 4.0);
                let s = Source::new(c);
                let mut last = 0;
                for k in 0..(rate * 0.01) as u64 {
                    let t = s.cbr_offset_ns(k);
                    assert!(t >= last, "rate {rate} quantum {q_us} us: frame {k} at {t} before {last}");
                    let even = (k as f64 * 1e9 / rate) as u64;
                    assert_eq!(t / (q_us * 1000), even / (q_us * 1000), "rate {rate} quantum {q_us} us: frame {k}");
                    last = t;
                }
            }
        }
    }

    #[test]
    fn cbr_emits_rate_for_a_second() {
        let mut s = Source::new(cfg(SourceKind::Cbr));
        let mut r = RngStreams::new(1).stream("s");
        let mut out = Vec::new();
        let mut t = s.first_wake();
        while let Some(now) = t {
            t = s.wake(now, &mut r, &mut out);
        }
        assert_eq!(out.len(), 1000);
        assert_eq!(out[0].flow, 0);
        assert_eq!(out[1].flow, 1);
    }

    #[test]
    fn pingpong_records_rtt_and_timeouts() {
        let mut s = Source::new(cfg(SourceKind::PingPong));
        let mut r = RngStreams::new(1).stream("s");
        let mut out = Vec::new();
        let t = s.wake(Time(0), &mut r, &mut out).unwrap();
        assert_eq!(t, Time(1_000_000));
        let next = s.feedback(Time(50_000), Feedback::Reply { flow: 0, seq: 0 }, &mut out);
        assert_eq!(next, Some(Time(60_000)));
        assert_eq!(s.stats.rtt.count(), 1);
        assert_eq!(s.stats.rtt.mean(), 60_000.0);
        // Next request is never answered: it times out and a new one goes.
        s.wake(Time(60_000), &mut r, &mut out);
        s.wake(Time(1_060_000), &mut r, &mut out);
        assert_eq!(s.stats.timeouts, 1);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn tcp_window_limits_and_acks_advance() {
        let mut c = cfg(SourceKind::TcpWindow);
        c.payload_bytes = 1000;
        c.flows = 1;
        let mut s = Source::new(c);
        let mut r = RngStreams::new(1).stream("s");
        let mut out = Vec::new();
        s.wake(Time(0), &mut r, &mut out);
        let sent: u32 = out.iter().map(|e| e.payload_bytes).sum();
        assert!((4000..=4096).contains(&sent), "sent {sent}");
        out.clear();
        s.feedback(Time(10), Feedback::Ack { flow: 0, ack: 2000, win: u32::MAX }, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].seq, 4000);
        // Three duplicate ACKs for 2000: fast retransmit from the hole.
        out.clear();
        for t in 11..14 {
            s.feedback(Time(t), Feedback::Ack { flow: 0, ack: 2000, win: u32::MAX }, &mut out);
        }
        assert_eq!(s.stats.retransmits, 1);
        assert_eq!(out.first().map(|e| e.seq), Some(2000));
    }

    /// A congestion-controlled flow whose ACKs stop with data outstanding times out one RTO
    /// after its last ACK of new data (`tcp_rearm_rto`): the ACK that re-arms the timer earlier
    /// than the wake-up the host holds asks for a new one. (Before issue 26's fix no ACK ever
    /// asked, and the flow waited for the initial 1 s RTO's wake-up.)
    #[test]
    fn cc_ack_asks_for_the_rearmed_retransmission_timer() {
        let mut c = cfg(SourceKind::TcpWindow);
        c.payload_bytes = 1000;
        c.flows = 1;
        c.window_bytes = 1_000_000;
        c.stop_ns = 10_000_000_000;
        c.sender = Some(SenderTcp { cc: CcKind::Reno, era: Era::Linux32, hz: 1000, tso: false });
        let mut s = Source::new(c);
        let mut r = RngStreams::new(1).stream("s");
        let mut out = Vec::new();
        // The initial window leaves; the timer is the initial RTO (3.2: 1 s).
        let first = s.wake(Time(0), &mut r, &mut out);
        assert_eq!(first, Some(Time(1_000_000_000)));
        assert_eq!(out.len(), 10);
        // An ACK of new data after 100 us: an RTT sample, RTO = TCP_RTO_MIN = 200 ms, the timer
        // re-armed at 200.1 ms, earlier than the 1 s wake-up held: the source asks for it.
        out.clear();
        let t = s.feedback(Time(100_000), Feedback::Ack { flow: 0, ack: 2000, win: 1_000_000 }, &mut out);
        assert_eq!(t, Some(Time(200_100_000)));
        // A later ACK moves the timer later: the wake-up held (200.1 ms) comes first, no new one.
        let t = s.feedback(Time(200_000), Feedback::Ack { flow: 0, ack: 4000, win: 1_000_000 }, &mut out);
        assert_eq!(t, None);
        // The held wake-up finds the timer not yet due and asks for it; then it fires.
        assert_eq!(s.wake(Time(200_100_000), &mut r, &mut out), Some(Time(200_200_000)));
        assert_eq!(s.stats.timeouts, 0);
        out.clear();
        s.wake(Time(200_200_000), &mut r, &mut out);
        assert_eq!(s.stats.timeouts, 1);
        assert_eq!(out.first().map(|e| e.seq), Some(4000), "go back to the first unacknowledged byte");
    }

    #[test]
    fn sink_counts_and_never_sends() {
        let mut s = Source::new(cfg(SourceKind::Sink));
        let mut r = RngStreams::new(1).stream("s");
        let mut out = Vec::new();
        assert_eq!(s.wake(Time(0), &mut r, &mut out), None);
        for k in 0..3 {
            assert_eq!(s.feedback(Time(k), Feedback::Forwarded { flow: 0, seq: k }, &mut out), None);
        }
        assert!(out.is_empty());
        assert_eq!(s.stats.received, 3);
    }
}
