//! The wire: the host's environment up to its NIC ports. External sources (traffic generators,
//! clients, origin servers) send frames over their own links to a switch in front of each port;
//! frames from the host go back the same way. Nothing here is the host's kernel: this is where
//! `drivers/net/nic.rs` receives frames from and where `net/core/tx.rs` hands them to.
//!
//! - this file: the sources' state (`Src`, `Wire`), a frame's bytes on the wire, and the frames
//!   on their way to a source (`FeedbackSlab`).
//! - `link`: a source's wake-ups and feedback, its frames over its link and through the switch.

use crate::config::{HostConfig, Protocol};
use crate::drivers::net::Nic;
use crate::types::*;
use hostsim_engine::{round_u64, Rng, RngStreams, Time, Timer};
use hostsim_workload::{Emit, Feedback, SenderTcp, Source, SourceConfig, SourceKind};

pub mod link;

/// Ethernet bytes on the wire around a payload: UDP/IPv4 headers 8+20, Ethernet 14 + FCS 4, and a
/// 64-byte minimum frame; preamble + SFD 8 and inter-frame gap 12 are added on top.
pub fn wire_bytes(payload: u32, tcp: bool) -> u64 {
    let l4 = if tcp { 20 } else { 8 };
    let frame = u64::from(payload) + l4 + 20 + 14 + 4;
    frame.max(64) + 20
}

/// Flows per source whose wire facts are cached (`Src::flow_cache`); others compute them per
/// frame. Bounds the cache's memory for sources with very many connections.
const FLOW_CACHE_FLOWS: usize = 4096;

impl Src {
    /// The wire facts of flow `flow` of source `s`, looked up in `flow_cache` after the flow's
    /// first frame. (Measured with callgrind, livelock-400k: the client's and the RSS queue's
    /// divisions, the port's branches and the hash's multiplications were ~30 instructions of
    /// every frame; the lookup is a bounds check and a test.)
    #[inline]
    pub fn flow_wire(&mut self, s: usize, flow: u32, hash_key: u64, nic: &Nic) -> FlowWire {
        if let Some(&w) = self.flow_cache.get(flow as usize) {
            if w.hash != 0 {
                return w;
            }
        }
        self.flow_wire_miss(s, flow, hash_key, nic)
    }

    /// `flow_wire` for a flow not in the cache (out of line: keeps the hit path's registers
    /// free).
    #[cold]
    #[inline(never)]
    fn flow_wire_miss(&mut self, s: usize, flow: u32, hash_key: u64, nic: &Nic) -> FlowWire {
        // Client machine `c` sends on its own link (to its own port unless ports are per flow).
        let clients = self.link_free.len();
        let c = if clients == 1 { 0 } else { flow as usize % clients };
        let dst_port = if self.fixed_port {
            self.dst_port
        } else if self.dst_port_per_flow {
            self.dst_port + flow as u16
        } else {
            self.dst_port + c as u16
        };
        let hash = flow_hash(hash_key, s as u32, flow, dst_port);
        let queue = nic.first_queue + rss_queue(hash, nic.cfg.queues);
        let w = FlowWire { client: c as u32, dst_port, hash, queue };
        let f = flow as usize;
        if f < FLOW_CACHE_FLOWS {
            if self.flow_cache.len() <= f {
                self.flow_cache.resize(f + 1, FlowWire::default());
            }
            self.flow_cache[f] = w;
        }
        w
    }

    /// Serialisation time of a frame with `payload` bytes on the source's link and on its NIC
    /// port, in ns (rounded to the nearest ns).
    #[inline]
    pub fn wire_ns(&mut self, payload: u32, tcp: bool, nics: &[Nic]) -> (u64, u64) {
        match self.wire_cache {
            Some((p, t, link, port)) if p == payload && t == tcp => (link, port),
            _ => self.wire_ns_miss(payload, tcp, nics),
        }
    }

    /// `wire_ns` for a new frame size (out of line: the float code and the library calls of
    /// `round_u64`'s far branch otherwise took registers from every frame's path).
    #[cold]
    #[inline(never)]
    fn wire_ns_miss(&mut self, payload: u32, tcp: bool, nics: &[Nic]) -> (u64, u64) {
        let bytes = wire_bytes(payload, tcp) as f64;
        let link = round_u64(bytes * self.link_ns_per_byte);
        let port = round_u64(bytes * nics[self.nic as usize].ns_per_byte);
        self.wire_cache = Some((payload, tcp, link, port));
        (link, port)
    }
}

pub struct Src {
    pub name: String,
    pub src: Source,
    pub nic: u32,
    pub dst_port: u16,
    pub dst_port_per_flow: bool,
    pub link_ns_per_byte: f64,
    /// When each client's link is next free.
    pub link_free: Vec<Time>,
    /// When each client's link from the switch (frames from the host) is next free.
    pub down_free: Vec<Time>,
    /// One-way propagation delay of the client links.
    pub link_delay_ns: u64,
    /// All frames go to `dst_port` (HTTP clients and origins talk to one listening port).
    pub fixed_port: bool,
    pub timer: Timer,
    pub rng: Rng,
    /// The last frame size's serialisation times, (payload, tcp) -> (link ns, port ns): a
    /// rate source sends one size, so the float products and rounding run once, not per frame.
    pub wire_cache: Option<(u32, bool, u64, u64)>,
    /// Per flow (index = flow, the first 4096): its client, port, RSS hash and queue, computed
    /// at its first frame (`Src::flow_wire` in drivers/net/nic.rs).
    pub flow_cache: Vec<FlowWire>,
}

/// What a source's frames of one flow share: the client machine sending them, the destination
/// port, the RSS hash and the RX queue (within the whole host). All follow from the flow and the
/// source's fixed configuration. `hash` 0 marks an empty entry (`flow_hash` is never 0).
#[derive(Clone, Copy, Default)]
pub struct FlowWire {
    pub client: u32,
    pub dst_port: u16,
    pub hash: u32,
    pub queue: u32,
}

/// Frames from the host in flight to a source: (source, what it learns, payload bytes), in
/// slots reused through a free list (an `Ev::Feedback` names its slot).
#[derive(Default)]
pub struct FeedbackSlab {
    slots: Vec<(u32, Feedback, u32)>,
    free: Vec<u32>,
}

impl FeedbackSlab {
    pub fn put(&mut self, src: u32, fb: Feedback, bytes: u32) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = (src, fb, bytes);
                i
            }
            None => {
                self.slots.push((src, fb, bytes));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The entry in `slot`, left in place.
    pub fn peek(&self, slot: u32) -> (u32, Feedback, u32) {
        self.slots[slot as usize]
    }

    pub fn take(&mut self, slot: u32) -> (u32, Feedback, u32) {
        self.free.push(slot);
        self.slots[slot as usize]
    }
}

/// The environment's state: the sources and the frames on their way to them.
pub struct Wire {
    pub srcs: Vec<Src>,
    /// Frames from the host on their way to a source (`Ev::Feedback`).
    pub feedback: FeedbackSlab,
    /// The frames a source emits at one wake-up (reused: no allocation per wake-up).
    pub emit_buf: Vec<Emit>,
}

impl Wire {
    pub fn new(cfg: &HostConfig, streams: &RngStreams) -> Wire {
        let mut srcs = Vec::new();
        for (i, t) in cfg.traffic.iter().enumerate() {
            let nic = cfg.nics.iter().position(|n| n.name == t.nic).expect("validated nic") as u32;
            let stop_ns = t.stop_ms.map_or(cfg.duration_ns, |s| s * 1_000_000).min(cfg.duration_ns);
            srcs.push(Src {
                name: t.name.clone(),
                src: Source::new(SourceConfig {
                    kind: t.kind,
                    rate_pps: t.rate_pps,
                    payload_bytes: t.payload_bytes,
                    flows: t.flows.max(t.clients),
                    start_ns: t.start_ms * 1_000_000,
                    stop_ns,
                    client_stack_ns: t.client_stack_ns,
                    timeout_ns: t.timeout_ms * 1_000_000,
                    window_bytes: t.window_bytes,
                    rto_ns: t.rto_ms * 1_000_000,
                    total_bytes: t.total_bytes,
                    tcp: t.protocol == Protocol::Tcp,
                    record_from_ns: cfg.warmup_ns,
                    http: t.http.clone(),
                    clients: t.clients.max(1),
                    sender: t.tcp_cc.kind().map(|cc| SenderTcp { cc, era: t.tcp_era, hz: t.tcp_hz, tso: t.tcp_tso }),
                    quantum_ns: t.quantum_us * 1000,
                    burst_gap_ns: if t.spread > 0.0 {
                        t.spread * 1e9 / t.rate_pps
                    } else if t.burst_pps > 0.0 {
                        1e9 / t.burst_pps
                    } else {
                        0.0
                    },
                }),
                nic,
                dst_port: t.dst_port,
                dst_port_per_flow: t.dst_port_per_flow,
                link_ns_per_byte: 8_000.0 / t.link_mbps as f64,
                link_free: vec![Time::ZERO; t.clients.max(1) as usize],
                down_free: vec![Time::ZERO; t.clients.max(1) as usize],
                link_delay_ns: t.link_delay_us * 1000,
                fixed_port: matches!(t.kind, SourceKind::HttpClients | SourceKind::HttpOrigin),
                timer: Timer::new(),
                rng: streams.stream(&format!("traffic/{i}/{}", t.name)),
                wire_cache: None,
                flow_cache: Vec::new(),
            });
        }
        Wire { srcs, feedback: FeedbackSlab::default(), emit_buf: Vec::with_capacity(256) }
    }
}
