//! HTTP traffic on persistent TCP connections, shaped like Web Polygraph's WebAxe-4 workload
//! (paper 004's benchmark): a population of client robots (`http_clients`) sending requests to
//! a web accelerator in the host, and origin servers (`http_origin`) answering the accelerator's
//! cache misses. Both only see the wire.
//!
//! **Clients.** `conns` persistent connections are kept open (the paper: "about 7,000 sockets").
//! Requests arrive as a Poisson process at `rate_rps` (open arrivals: the offered rate does not
//! depend on the accelerator's speed); each goes out on an idle connection drawn at random. A
//! request that finds no idle connection cannot be served and is counted (`no_conn`), never
//! lost silently. A connection carries `pconn_use_lmt = zipf(16)` requests (WebAxe-4 robot),
//! then the client closes it (its FIN after the last response) and opens a new one in its place
//! when the accelerator's FIN arrives: connect (SYN), the accelerator's SYN-ACK, the
//! handshake's ACK. At the start the connections are opened at random times over
//! `connect_ramp_ms`; requests start after the ramp. Responses are acknowledged like FreeBSD 4.3
//! (the paper's client OS): every second data segment at once, a lone one after the delayed-ACK
//! timer (`delack_ms`, FreeBSD's 100 ms). A response's time runs from the request leaving the
//! client to the last byte arriving.
//!
//! **What a request asks for.** The object's type and size follow WebAxe-4's content mix
//! (`include/contents.pg`: image 65 % exp(4.5 KB), HTML 15 % exp(8.5 KB), download 0.5 %
//! logn(300 KB, 300 KB), other 19.5 % logn(25 KB, 10 KB); mean ≈ 11 KB). Whether the accelerator
//! holds it is drawn by the client with probability `hit_ratio` (the accelerator's cache itself
//! is not modelled: after Polygraph's fill phase every revisited cachable object is in its 2 GB;
//! WebAxe-4: recurrence 95 % × cachable ≈ 80 % × non-reload 95 % ≈ 0.72). The request carries
//! the answer (`request_tag`), as its URL would.
//!
//! **Origins.** An origin answers each request on a connection after a think time drawn from
//! norm(`think_ms_mean`, `think_ms_sd`) (WebAxe-4 server: `xact_think = norm(0.3 s, 0.1 s)`),
//! acknowledging the request at once and sending the response (header + object, the size in
//! the request's tag) in MSS segments within the accelerator's advertised window.
//!
//! Left out: Polygraph's IMS and reload request types (10 %/5 %/5 % of requests), aborts
//! (0.1 %), POST bodies, the 0.05 % client-side packet loss and the origins' own connection
//! limits (`pconn_use_lmt = zipf(64)`): the accelerator's connections to the origins are
//! opened once and kept.
//!
//! Memory: per-connection state is fixed (slots); timers are a heap of at most one entry per
//! connection and kind; statistics are fixed-size histograms.

use crate::frame::{Emit, Feedback};
use hostsim_engine::{Histogram, Rng, Time};
use hostsim_options::{float, int, options, DAY_MS, TIME};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// TCP flags carried by an `Emit` (a frame from a source).
pub const FLAG_SYN: u8 = 1;
pub const FLAG_FIN: u8 = 2;
/// The ACK that completes a three-way handshake (it creates the accepted socket).
pub const FLAG_HANDSHAKE: u8 = 4;

/// Maximum segment size of the sources' TCP (Ethernet, no options).
pub const MSS: u32 = 1460;

const HIT_BIT: u64 = 1 << 63;

/// The label of a request: the response's size (header + object) and whether the accelerator
/// holds the object.
pub fn request_tag(hit: bool, response_bytes: u32) -> u64 {
    (if hit { HIT_BIT } else { 0 }) | u64::from(response_bytes)
}
/// Is the requested object a cache hit?
pub fn tag_hit(tag: u64) -> bool {
    tag & HIT_BIT != 0
}
/// The response's size in bytes (header + object).
pub fn tag_bytes(tag: u64) -> u32 {
    (tag & 0xffff_ffff) as u32
}

/// Object sizes and types.
#[options]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentMix {
    /// WebAxe-4's content mix (Polygraph `contents.pg`, see the module documentation).
    #[default]
    Webaxe4,
    /// Every object is `object_bytes` long.
    Fixed,
}

/// Parameters of an `http_clients` or `http_origin` source (`[traffic.http]`).
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Clients: offered request rate in requests/s (Poisson arrivals over all connections).
    #[option(default = 100.0, bound = float(0.0, 1e7), why = "requests per second (paper 004: 2,000); 10^7 is past any one accelerator")]
    pub rate_rps: f64,
    /// Clients: persistent connections kept open (paper 004: about 7,000 sockets in all).
    #[option(default = 1000, bound = int(1, 262_144), why = "persistent connections (paper 004: ~7,000); 2^18, in the memory budget")]
    pub conns: u32,
    /// Clients: request size in bytes (request line and headers; inferred, ~300 B).
    #[option(default = 300, bound = int(1, 1_460), why = "bytes; a request is one TCP segment")]
    pub request_bytes: u32,
    /// Clients: response header bytes before the object (inferred, ~250 B); a request's tag
    /// carries header + object, which the accelerator and the origin send.
    #[option(default = 250, bound = int(0, 65_536), why = "bytes of HTTP response header")]
    pub response_header_bytes: u32,
    /// Clients: probability that a request's object is in the accelerator (inferred from
    /// WebAxe-4, see module documentation).
    #[option(default = 0.72, bound = float(0.0, 1.0), why = "a probability")]
    pub hit_ratio: f64,
    /// What the objects asked for are: their types and sizes.
    #[option(default = ContentMix::Webaxe4)]
    pub content: ContentMix,
    /// `content = "fixed"`: the object size.
    #[option(default = 11 * 1024, bound = int(0, 1 << 30), why = "bytes per object; at most 1 GiB")]
    pub object_bytes: u32,
    /// Multiplies every drawn object size (for sensitivity to the response size).
    #[option(default = 1.0, bound = float(0.0, 1_000.0), why = "a multiplier on the object-size mix; above 0")]
    pub size_scale: f64,
    /// Clients: requests per connection drawn from zipf(n) on 1..=n (WebAxe-4: zipf(16)).
    #[option(default = 16, bound = int(1, 1_000_000), why = "the Zipf parameter N of requests per connection (paper 004: 16)")]
    pub conn_uses_zipf: u32,
    /// Clients: the initial connections are opened over this long; requests start after it.
    #[option(default = 1000, bound = int(0, DAY_MS), why = TIME)]
    pub connect_ramp_ms: u64,
    /// Clients: delayed-ACK timeout (FreeBSD 4.3: 100 ms).
    #[option(default = 100, bound = int(0, 60_000), why = "ms; Linux's delayed ACK is 40..=200 ms")]
    pub delack_ms: u64,
    /// Clients: responses slower than this count as timeouts (they still complete).
    #[option(default = 10_000, bound = int(1, 3_600_000), why = "ms; at most an hour")]
    pub timeout_ms: u64,
    /// Clients: response times are those of requests sent after warm-up and at least this long
    /// before the end of the run, so that slow responses (a miss waits for the origin) to
    /// requests sent late are not missing from the times while fast ones are there (the live
    /// experiment's drain: the load goes on while the window's requests finish). 0: up to the end.
    #[option(default = 0, bound = int(0, DAY_MS), why = TIME)]
    pub drain_ms: u64,
    /// Origins: think time before answering, normal mean (WebAxe-4: 300 ms).
    #[option(default = 300.0, bound = float(0.0, 86_400_000.0), why = TIME)]
    pub think_ms_mean: f64,
    /// Origins: think time standard deviation (WebAxe-4: 100 ms); negative draws are 0.
    #[option(default = 100.0, bound = float(0.0, 86_400_000.0), why = TIME)]
    pub think_ms_sd: f64,
}

// ---------------------------------------------------------------- distributions

/// Standard normal by Box–Muller (also the live origin's think time).
pub fn normal(rng: &mut Rng) -> f64 {
    let u1 = rng.uniform().max(1e-300);
    let u2 = rng.uniform();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Lognormal with the given mean and standard deviation (Polygraph's `logn(mean, sd)`).
fn lognormal(rng: &mut Rng, mean: f64, sd: f64) -> f64 {
    let s2 = (1.0 + (sd * sd) / (mean * mean)).ln();
    let mu = mean.ln() - s2 / 2.0;
    (mu + s2.sqrt() * normal(rng)).exp()
}

/// zipf(n) on 1..=n with P(k) ∝ 1/k (also the live clients' requests per connection).
pub fn zipf(rng: &mut Rng, n: u32) -> u32 {
    let n = n.max(1);
    let h: f64 = (1..=n).map(|k| 1.0 / f64::from(k)).sum();
    let mut u = rng.uniform() * h;
    for k in 1..=n {
        u -= 1.0 / f64::from(k);
        if u <= 0.0 {
            return k;
        }
    }
    n
}

/// An object size drawn from the content mix.
pub fn object_bytes(cfg: &HttpConfig, rng: &mut Rng) -> u32 {
    const KB: f64 = 1024.0;
    let b = match cfg.content {
        ContentMix::Fixed => f64::from(cfg.object_bytes),
        ContentMix::Webaxe4 => {
            let u = rng.uniform();
            if u < 0.65 {
                rng.exp(4.5 * KB)
            } else if u < 0.80 {
                rng.exp(8.5 * KB)
            } else if u < 0.805 {
                lognormal(rng, 300.0 * KB, 300.0 * KB)
            } else {
                lognormal(rng, 25.0 * KB, 10.0 * KB)
            }
        }
    };
    (b * cfg.size_scale).round().clamp(1.0, 256.0 * 1024.0 * 1024.0) as u32
}

// ---------------------------------------------------------------- clients

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CState {
    /// SYN sent, waiting for the SYN-ACK.
    Connecting,
    /// Open, no request outstanding (in the idle list).
    Idle,
    /// A request outstanding.
    Busy,
    /// FIN sent after the last response; waiting for the accelerator's FIN.
    Closing,
    /// Not opened yet (its connect is scheduled).
    Unopened,
}

#[derive(Clone, Debug)]
struct CConn {
    gen: u32,
    state: CState,
    /// Requests this connection may still carry.
    uses_left: u32,
    /// Next byte the client sends (requests).
    snd_nxt: u64,
    /// Next byte expected from the accelerator.
    rcv_nxt: u64,
    /// The response is complete when `rcv_nxt` reaches this.
    expect_end: u64,
    sent_at: u64,
    hit: bool,
    /// Data segments received since the last ACK.
    unacked: u32,
    /// When the pending delayed ACK is due (0: none).
    delack_due: u64,
    /// Index in `idle` while idle.
    idle_pos: u32,
}

/// Timer kinds in a source's heap.
const T_CONNECT: u8 = 0;
const T_DELACK: u8 = 1;
const T_THINK: u8 = 2;

/// What the clients measured (requests sent after warm-up count; windows run from then).
#[derive(Clone, Debug, Default)]
pub struct HttpStats {
    /// Requests generated (sent or refused), after warm-up.
    pub offered: u64,
    pub sent: u64,
    /// Responses completed after warm-up (whenever their request left): the throughput.
    pub completed: u64,
    /// Of those, the requests sent after warm-up (their times are in the histograms).
    pub completed_timed: u64,
    /// Requests that found no idle connection.
    pub no_conn: u64,
    /// Completed slower than `timeout_ms`.
    pub timeouts: u64,
    pub resp: Histogram,
    pub resp_hit: Histogram,
    pub resp_miss: Histogram,
    /// Whole run: connections opened (SYN sent), established, closed (FIN sent).
    pub conns_opened: u64,
    pub conns_established: u64,
    pub conns_closed: u64,
    /// Whole run: requests sent and responses completed (for conservation).
    pub sent_total: u64,
    pub completed_total: u64,
    /// Origins: requests answered.
    pub served: u64,
    pub served_bytes: u64,
}

/// The client population.
#[derive(Clone, Debug)]
pub struct HttpClients {
    cfg: HttpConfig,
    start_ns: u64,
    stop_ns: u64,
    record_from_ns: u64,
    window_bytes: u32,
    conns: Vec<CConn>,
    idle: Vec<u32>,
    next_arrival: u64,
    timers: BinaryHeap<Reverse<(u64, u32, u32, u8)>>,
    /// The wake-up the host has armed (to answer "sooner?" in feedback).
    armed: u64,
    rng: Option<Rng>,
    pub stats: HttpStats,
}

impl HttpClients {
    pub fn new(cfg: HttpConfig, start_ns: u64, stop_ns: u64, record_from_ns: u64, window_bytes: u32) -> Self {
        let n = cfg.conns as usize;
        HttpClients {
            start_ns,
            stop_ns,
            record_from_ns,
            window_bytes,
            conns: vec![
                CConn {
                    gen: 0,
                    state: CState::Unopened,
                    uses_left: 0,
                    snd_nxt: 0,
                    rcv_nxt: 0,
                    expect_end: 0,
                    sent_at: 0,
                    hit: false,
                    unacked: 0,
                    delack_due: 0,
                    idle_pos: u32::MAX,
                };
                n
            ],
            idle: Vec::with_capacity(n),
            next_arrival: start_ns + cfg.connect_ramp_ms * 1_000_000,
            timers: BinaryHeap::with_capacity(2 * n + 1),
            armed: u64::MAX,
            rng: None,
            stats: HttpStats::default(),
            cfg,
        }
    }

    /// The flow id of slot `slot`'s current connection: a new one per reconnection.
    fn flow(&self, slot: u32) -> u32 {
        self.conns[slot as usize].gen.wrapping_mul(self.cfg.conns).wrapping_add(slot)
    }

    fn slot_of(&self, flow: u32) -> Option<u32> {
        let slot = flow % self.cfg.conns.max(1);
        (self.flow(slot) == flow).then_some(slot)
    }

    /// Connections open (idle or busy) now.
    pub fn open(&self) -> u64 {
        self.conns.iter().filter(|c| matches!(c.state, CState::Idle | CState::Busy)).count() as u64
    }

    /// Requests outstanding now.
    pub fn outstanding(&self) -> u64 {
        self.conns.iter().filter(|c| c.state == CState::Busy).count() as u64
    }

    fn rng(&mut self) -> &mut Rng {
        self.rng.as_mut().expect("seeded at the first wake")
    }

    fn next_wake(&self) -> Option<u64> {
        let t = self.timers.peek().map(|Reverse(t)| t.0);
        let a = (self.next_arrival < self.stop_ns).then_some(self.next_arrival);
        match (t, a) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    fn connect(&mut self, slot: u32, out: &mut Vec<Emit>) {
        let n = self.cfg.conn_uses_zipf;
        let uses = zipf(self.rng(), n);
        let c = &mut self.conns[slot as usize];
        c.state = CState::Connecting;
        c.uses_left = uses;
        c.snd_nxt = 0;
        c.rcv_nxt = 0;
        c.unacked = 0;
        c.delack_due = 0;
        self.stats.conns_opened += 1;
        let flow = self.flow(slot);
        out.push(Emit {
            flow,
            seq: 0,
            payload_bytes: 0,
            tcp: true,
            ack: None,
            win: self.window_bytes,
            flags: FLAG_SYN,
            tag: 0,
        });
    }

    fn push_idle(&mut self, slot: u32) {
        self.conns[slot as usize].state = CState::Idle;
        self.conns[slot as usize].idle_pos = self.idle.len() as u32;
        self.idle.push(slot);
    }

    fn take_idle(&mut self, i: usize) -> u32 {
        let slot = self.idle.swap_remove(i);
        if let Some(&moved) = self.idle.get(i) {
            self.conns[moved as usize].idle_pos = i as u32;
        }
        self.conns[slot as usize].idle_pos = u32::MAX;
        slot
    }

    fn send_ack(&mut self, slot: u32, out: &mut Vec<Emit>) {
        let flow = self.flow(slot);
        let c = &mut self.conns[slot as usize];
        c.unacked = 0;
        c.delack_due = 0;
        out.push(Emit {
            flow,
            seq: c.snd_nxt,
            payload_bytes: 0,
            tcp: true,
            ack: Some(c.rcv_nxt),
            win: self.window_bytes,
            flags: 0,
            tag: 0,
        });
    }

    fn arrival(&mut self, now: u64, out: &mut Vec<Emit>) {
        let record = now >= self.record_from_ns;
        if record {
            self.stats.offered += 1;
        }
        if self.idle.is_empty() {
            if record {
                self.stats.no_conn += 1;
            }
            return;
        }
        let len = self.idle.len() as u64;
        let i = self.rng().below(len) as usize;
        let slot = self.take_idle(i);
        let hit = {
            let p = self.cfg.hit_ratio;
            self.rng().chance(p)
        };
        let cfg = self.cfg.clone();
        let size = object_bytes(&cfg, self.rng());
        let flow = self.flow(slot);
        let c = &mut self.conns[slot as usize];
        c.state = CState::Busy;
        c.uses_left = c.uses_left.saturating_sub(1);
        c.sent_at = now;
        c.hit = hit;
        let response = size.saturating_add(cfg.response_header_bytes);
        c.expect_end = c.rcv_nxt + u64::from(response);
        let seq = c.snd_nxt;
        c.snd_nxt += u64::from(cfg.request_bytes);
        self.stats.sent_total += 1;
        if record {
            self.stats.sent += 1;
        }
        out.push(Emit {
            flow,
            seq,
            payload_bytes: cfg.request_bytes,
            tcp: true,
            ack: None,
            win: self.window_bytes,
            flags: 0,
            tag: request_tag(hit, response),
        });
    }

    /// The host wakes the source at the time it asked for.
    pub fn wake(&mut self, now: Time, rng: &mut Rng, out: &mut Vec<Emit>) -> Option<Time> {
        let now = now.ns();
        if self.rng.is_none() {
            self.rng = Some(rng.clone());
            // Open every connection at a random time during the ramp.
            let ramp = self.cfg.connect_ramp_ms * 1_000_000;
            for slot in 0..self.cfg.conns {
                let at = self.start_ns + (self.rng().uniform() * ramp as f64) as u64;
                self.timers.push(Reverse((at, slot, 0, T_CONNECT)));
            }
        }
        while let Some(&Reverse((t, slot, gen, kind))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let c = &self.conns[slot as usize];
            match kind {
                T_CONNECT if c.state == CState::Unopened => self.connect(slot, out),
                T_DELACK if c.gen == gen && c.delack_due == t => self.send_ack(slot, out),
                _ => {}
            }
        }
        while self.next_arrival <= now && self.next_arrival < self.stop_ns {
            let at = self.next_arrival;
            self.arrival(at, out);
            let mean = 1e9 / self.cfg.rate_rps.max(1e-9);
            let gap = self.rng().exp(mean).round().max(1.0) as u64;
            self.next_arrival += gap;
        }
        let next = self.next_wake();
        self.armed = next.unwrap_or(u64::MAX);
        next.map(Time)
    }

    /// A frame from the host reached the clients.
    pub fn feedback(&mut self, now: Time, fb: Feedback, out: &mut Vec<Emit>) -> Option<Time> {
        let now = now.ns();
        match fb {
            Feedback::SynAck { flow } => {
                let slot = self.slot_of(flow)?;
                if self.conns[slot as usize].state != CState::Connecting {
                    return None;
                }
                self.stats.conns_established += 1;
                out.push(Emit {
                    flow,
                    seq: 0,
                    payload_bytes: 0,
                    tcp: true,
                    ack: None,
                    win: self.window_bytes,
                    flags: FLAG_HANDSHAKE,
                    tag: 0,
                });
                self.push_idle(slot);
            }
            Feedback::Data { flow, seq, len, .. } => {
                let slot = self.slot_of(flow)?;
                let c = &mut self.conns[slot as usize];
                if c.state != CState::Busy || seq != c.rcv_nxt {
                    return None;
                }
                c.rcv_nxt += u64::from(len);
                c.unacked += 1;
                let done = c.rcv_nxt >= c.expect_end;
                if c.unacked >= 2 {
                    self.send_ack(slot, out);
                } else if self.conns[slot as usize].delack_due == 0 {
                    let due = now + self.cfg.delack_ms * 1_000_000;
                    let gen = self.conns[slot as usize].gen;
                    self.conns[slot as usize].delack_due = due;
                    self.timers.push(Reverse((due, slot, gen, T_DELACK)));
                }
                if done {
                    self.response_done(slot, now, out);
                }
            }
            Feedback::Fin { flow } => {
                let slot = self.slot_of(flow)?;
                if self.conns[slot as usize].state != CState::Closing {
                    return None;
                }
                // The accelerator closed too: reopen the slot (a new connection, new flow id).
                let c = &mut self.conns[slot as usize];
                c.gen = c.gen.wrapping_add(1);
                if now < self.stop_ns {
                    self.connect(slot, out);
                } else {
                    self.conns[slot as usize].state = CState::Unopened;
                }
            }
            Feedback::Ack { .. } | Feedback::Reply { .. } | Feedback::Forwarded { .. } => return None,
        }
        match self.next_wake() {
            Some(t) if t < self.armed => {
                self.armed = t;
                Some(Time(t))
            }
            _ => None,
        }
    }

    fn response_done(&mut self, slot: u32, now: u64, out: &mut Vec<Emit>) {
        let c = &self.conns[slot as usize];
        let (sent_at, hit) = (c.sent_at, c.hit);
        self.stats.completed_total += 1;
        if now >= self.record_from_ns {
            self.stats.completed += 1;
        }
        if sent_at >= self.record_from_ns && sent_at.saturating_add(self.cfg.drain_ms * 1_000_000) <= self.stop_ns {
            let rt = now - sent_at;
            self.stats.completed_timed += 1;
            self.stats.resp.record(rt);
            if hit {
                self.stats.resp_hit.record(rt);
            } else {
                self.stats.resp_miss.record(rt);
            }
            if rt > self.cfg.timeout_ms * 1_000_000 {
                self.stats.timeouts += 1;
            }
        }
        if self.conns[slot as usize].uses_left == 0 {
            // Last use: acknowledge what is unacknowledged and close (FIN).
            if self.conns[slot as usize].unacked > 0 {
                self.send_ack(slot, out);
            }
            let flow = self.flow(slot);
            let c = &mut self.conns[slot as usize];
            c.state = CState::Closing;
            c.delack_due = 0;
            self.stats.conns_closed += 1;
            out.push(Emit {
                flow,
                seq: c.snd_nxt,
                payload_bytes: 0,
                tcp: true,
                ack: None,
                win: self.window_bytes,
                flags: FLAG_FIN,
                tag: 0,
            });
        } else {
            self.push_idle(slot);
        }
    }
}

// ---------------------------------------------------------------- origins

#[derive(Clone, Debug, Default)]
struct OConn {
    /// Next request byte expected from the accelerator.
    rcv_nxt: u64,
    /// Response bytes: next to send, acknowledged, end of the current response.
    snd_nxt: u64,
    snd_una: u64,
    snd_end: u64,
    /// Responses waiting for their think time to pass or for the current one to finish.
    queued: std::collections::VecDeque<u32>,
    thinking: u32,
}

/// Origin servers answering the accelerator's requests.
#[derive(Clone, Debug)]
pub struct HttpOrigin {
    cfg: HttpConfig,
    window_bytes: u32,
    conns: Vec<OConn>,
    timers: BinaryHeap<Reverse<(u64, u32, u32, u8)>>,
    armed: u64,
    rng: Option<Rng>,
    pub stats: HttpStats,
}

impl HttpOrigin {
    pub fn new(cfg: HttpConfig, window_bytes: u32) -> Self {
        HttpOrigin {
            cfg,
            window_bytes,
            conns: Vec::new(),
            timers: BinaryHeap::new(),
            armed: u64::MAX,
            rng: None,
            stats: HttpStats::default(),
        }
    }

    fn conn(&mut self, flow: u32) -> &mut OConn {
        let i = flow as usize;
        if self.conns.len() <= i {
            self.conns.resize(i + 1, OConn::default());
        }
        &mut self.conns[i]
    }

    /// Send what the window allows of the current response on `flow`.
    fn fill(&mut self, flow: u32, out: &mut Vec<Emit>) {
        let win = u64::from(self.window_bytes);
        let c = self.conn(flow);
        while c.snd_nxt < c.snd_end && c.snd_nxt - c.snd_una < win {
            let len = u64::from(MSS).min(c.snd_end - c.snd_nxt).min(win - (c.snd_nxt - c.snd_una));
            if len < u64::from(MSS) && c.snd_nxt + len < c.snd_end {
                break; // no runt while the window is nearly full
            }
            let seq = c.snd_nxt;
            c.snd_nxt += len;
            out.push(Emit { flow, seq, payload_bytes: len as u32, tcp: true, ack: None, win: 0, flags: 0, tag: 0 });
        }
    }

    fn start_next(&mut self, flow: u32, out: &mut Vec<Emit>) {
        let c = self.conn(flow);
        if c.snd_nxt < c.snd_end || c.thinking == 0 {
            return;
        }
        let Some(bytes) = c.queued.pop_front() else { return };
        c.thinking -= 1;
        c.snd_end = c.snd_nxt + u64::from(bytes);
        self.stats.served += 1;
        self.stats.served_bytes += u64::from(bytes);
        self.fill(flow, out);
    }

    pub fn wake(&mut self, now: Time, rng: &mut Rng, out: &mut Vec<Emit>) -> Option<Time> {
        let now = now.ns();
        if self.rng.is_none() {
            self.rng = Some(rng.clone());
        }
        while let Some(&Reverse((t, flow, _, _))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            self.conn(flow).thinking += 1;
            self.start_next(flow, out);
        }
        let next = self.timers.peek().map(|Reverse(t)| t.0);
        self.armed = next.unwrap_or(u64::MAX);
        next.map(Time)
    }

    pub fn feedback(&mut self, now: Time, fb: Feedback, out: &mut Vec<Emit>) -> Option<Time> {
        let now = now.ns();
        match fb {
            Feedback::Data { flow, seq, len, tag, .. } => {
                let c = self.conn(flow);
                if seq != c.rcv_nxt {
                    return None;
                }
                c.rcv_nxt += u64::from(len);
                let (ack, snd) = (c.rcv_nxt, c.snd_nxt);
                // Acknowledge the request at once (its answer takes a think time).
                out.push(Emit {
                    flow,
                    seq: snd,
                    payload_bytes: 0,
                    tcp: true,
                    ack: Some(ack),
                    win: self.window_bytes,
                    flags: 0,
                    tag: 0,
                });
                if tag != 0 {
                    let (m, sd) = (self.cfg.think_ms_mean, self.cfg.think_ms_sd);
                    let rng = self.rng.as_mut().expect("seeded at the first wake (the start)");
                    let think_ms = (m + sd * normal(rng)).max(0.0);
                    let at = now + (think_ms * 1e6).round() as u64;
                    self.conn(flow).queued.push_back(tag_bytes(tag));
                    self.timers.push(Reverse((at, flow, 0, T_THINK)));
                }
            }
            Feedback::Ack { flow, ack, .. } => {
                let c = self.conn(flow);
                if ack > c.snd_una && ack <= c.snd_nxt {
                    c.snd_una = ack;
                }
                self.fill(flow, out);
                self.start_next(flow, out);
            }
            _ => return None,
        }
        match self.timers.peek().map(|Reverse(t)| t.0) {
            Some(t) if t < self.armed => {
                self.armed = t;
                Some(Time(t))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostsim_engine::RngStreams;

    #[test]
    fn tags_round_trip() {
        let t = request_tag(true, 12345);
        assert!(tag_hit(t));
        assert_eq!(tag_bytes(t), 12345);
        assert!(!tag_hit(request_tag(false, 7)));
    }

    #[test]
    fn webaxe4_mean_object_is_about_11_kb() {
        let mut r = RngStreams::new(1).stream("x");
        let cfg = HttpConfig::default();
        let n = 200_000;
        let mean = (0..n).map(|_| f64::from(object_bytes(&cfg, &mut r))).sum::<f64>() / f64::from(n);
        // 0.65×4.5 + 0.15×8.5 + 0.005×300 + 0.195×25 = 10.58 KB; the 300 KB lognormal's tail
        // makes the sample mean noisy: ±5 %.
        assert!((mean / 1024.0 - 10.58).abs() < 0.55, "mean {:.2} KB", mean / 1024.0);
    }

    #[test]
    fn zipf16_mean() {
        let mut r = RngStreams::new(2).stream("z");
        let n = 100_000;
        let mean = (0..n).map(|_| f64::from(zipf(&mut r, 16))).sum::<f64>() / f64::from(n);
        let want = 16.0 / (1..=16).map(|k| 1.0 / f64::from(k)).sum::<f64>();
        assert!((mean - want).abs() < 0.05, "zipf(16) mean {mean}, want {want}");
    }

    /// Drive the clients by hand: connect, a request, its response, the close and reconnect.
    #[test]
    fn a_connection_lives_its_uses_then_reconnects() {
        let mut cfg =
            HttpConfig { conns: 1, rate_rps: 1000.0, connect_ramp_ms: 1, conn_uses_zipf: 1, ..Default::default() };
        cfg.content = ContentMix::Fixed;
        cfg.object_bytes = 2000;
        let mut c = HttpClients::new(cfg, 0, 10_000_000_000, 0, 65535);
        let mut rng = RngStreams::new(3).stream("c");
        let mut out = Vec::new();
        let mut t = c.wake(Time(0), &mut rng, &mut out).unwrap();
        while out.is_empty() {
            t = c.wake(t, &mut rng, &mut out).unwrap();
        }
        assert_eq!(out[0].flags, FLAG_SYN);
        out.clear();
        c.feedback(t, Feedback::SynAck { flow: 0 }, &mut out);
        assert_eq!(out[0].flags, FLAG_HANDSHAKE);
        out.clear();
        // The next arrival takes the idle connection.
        while out.is_empty() {
            t = c.wake(t, &mut rng, &mut out).unwrap();
        }
        let req = out[0];
        assert_eq!((req.payload_bytes, tag_bytes(req.tag)), (300, 2250), "object + header");
        out.clear();
        // 2250 bytes of response in two segments: the second completes it; one use: FIN.
        c.feedback(t, Feedback::Data { flow: 0, seq: 0, len: 1460, frame_bytes: 0, tag: 0 }, &mut out);
        c.feedback(t + Time(1000), Feedback::Data { flow: 0, seq: 1460, len: 790, frame_bytes: 0, tag: 0 }, &mut out);
        assert_eq!(c.stats.completed_total, 1);
        assert!(out.iter().any(|e| e.ack == Some(2250)), "two segments are acknowledged at once");
        assert_eq!(out.last().unwrap().flags, FLAG_FIN);
        out.clear();
        c.feedback(t + Time(2000), Feedback::Fin { flow: 0 }, &mut out);
        assert_eq!(out[0].flags, FLAG_SYN);
        assert_eq!(out[0].flow, 1, "a new connection has a new flow id");
        assert_eq!(c.stats.conns_opened, c.stats.conns_closed + 1);
    }

    #[test]
    fn origin_thinks_then_sends_within_the_window() {
        let cfg = HttpConfig { think_ms_mean: 10.0, think_ms_sd: 0.0, ..Default::default() };
        let mut o = HttpOrigin::new(cfg, 4000);
        let mut rng = RngStreams::new(4).stream("x");
        let mut out = Vec::new();
        assert_eq!(o.wake(Time(0), &mut rng, &mut out), None);
        let wake = o.feedback(
            Time(0),
            Feedback::Data { flow: 3, seq: 0, len: 300, frame_bytes: 0, tag: request_tag(false, 5000) },
            &mut out,
        );
        assert_eq!(out.len(), 1, "the request is acknowledged");
        assert_eq!(wake, Some(Time(10_000_000)));
        out.clear();
        o.wake(Time(10_000_000), &mut rng, &mut out);
        let sent: u32 = out.iter().map(|e| e.payload_bytes).sum();
        assert!((2920..=4000).contains(&sent), "window-limited: {sent}");
        out.clear();
        o.feedback(Time(11_000_000), Feedback::Ack { flow: 3, ack: u64::from(sent), win: u32::MAX }, &mut out);
        let more: u32 = out.iter().map(|e| e.payload_bytes).sum();
        assert_eq!(sent + more, 5000, "the response as tagged");
    }
}
