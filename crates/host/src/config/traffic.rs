//! `[[traffic]]`: the external sources and the far ends of routes, and `[[route]]`, each key
//! declared once.

use hostsim_options::{float, int, options, Gen, DAY_MS, DAY_US, PORT, TIME};
use hostsim_tcp::{CcKind, Era};
use hostsim_workload::{HttpConfig, SourceKind};
use serde::{Deserialize, Serialize};

/// Transport of a ping-pong source (window-limited sources are always TCP, rate sources UDP).
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    #[default]
    Udp,
    Tcp,
}

/// An external traffic generator attached to a NIC.
#[options]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrafficConfig {
    /// The source's name: its metrics are `<name>_...`, `--set traffic.<name>.<key>` addresses it.
    #[option(gen = Gen::Name)]
    pub name: String,
    /// What it sends (`crates/workload/src/source.rs`).
    pub kind: SourceKind,
    /// NIC (by name) the traffic arrives on.
    #[option(gen = Gen::Name)]
    pub nic: String,
    /// Destination port; with several `clients`, client i sends to `dst_port + i`. Required
    /// for every kind that sends (a `sink` only receives).
    #[option(default = 0, bound = int(1, 65_535), why = PORT)]
    pub dst_port: u16,
    /// Identical client machines, each with its own link and destination port; `rate_pps` is
    /// their total and `flows` are spread over them.
    #[option(default = 1, bound = int(1, 65_535), why = "client machines, one port each")]
    pub clients: u32,
    /// ping_pong only: UDP (lat_udp) or TCP (lat_tcp).
    #[option(default = Protocol::default())]
    pub protocol: Protocol,
    /// Frames per second, all clients together (`cbr`, `poisson`).
    #[option(default = 0.0, bound = float(0.0, 1e9), why = "packets per second; a frame takes at least 1 ns on the fastest link")]
    pub rate_pps: f64,
    /// UDP payload or TCP segment size.
    #[option(default = 18, bound = int(0, 1_472), why = "bytes; one unfragmented frame")]
    pub payload_bytes: u32,
    /// Distinct flows (source ports); frames rotate over them (`cbr`, `poisson`), one connection each (`tcp_window`).
    #[option(default = 1, bound = int(1, 1_048_576), why = "flows (2^20)")]
    pub flows: u32,
    /// When the source starts sending.
    #[option(default = 0, bound = int(0, DAY_MS), why = TIME)]
    pub start_ms: u64,
    /// Stop sending at this time (default: end of run).
    #[option(default = None, bound = int(0, DAY_MS), why = TIME)]
    pub stop_ms: Option<u64>,
    /// The sender's own link rate (its frames are serialised at this rate before the switch).
    #[option(default = 1000, bound = int(1, 1_000_000), why = "Mbit/s; 1 Tbit/s is above the fastest Ethernet port (800 Gbit/s)")]
    pub link_mbps: u64,
    /// `ping_pong`: the client's own stack time per round trip (its send and receive path).
    #[option(default = 0, bound = int(0, 1_000_000_000), why = "ns; at most 1 s")]
    pub client_stack_ns: u64,
    /// `ping_pong`: a request unanswered this long counts as a timeout, and the next is sent.
    #[option(default = 100, bound = int(1, 3_600_000), why = "ms; at most an hour")]
    pub timeout_ms: u64,
    /// `tcp_window`: bytes each flow keeps unacknowledged. Without congestion control
    /// (`tcp_cc = "none"`) the flow's fixed window; with it, a cap on the window (the sender's
    /// socket buffer).
    #[option(default = 65535, bound = int(1, 1 << 30), why = "bytes; RFC 7323 window scaling reaches 2^30")]
    pub window_bytes: u32,
    /// `tcp_window` without congestion control: the retransmission timeout (with it, RFC 6298's).
    #[option(default = 200, bound = int(1, 120_000), why = "ms; Linux's TCP_RTO_MAX is 120 s")]
    pub rto_ms: u64,
    /// `tcp_window`: the senders' congestion control: `none` (the default: a fixed window,
    /// go-back-N on three duplicate ACKs or a timeout), `reno` or `cubic` (the `hostsim-tcp`
    /// sender, `crates/tcp`).
    #[option(default = TcpCc::default())]
    pub tcp_cc: TcpCc,
    /// `tcp_window` with congestion control: whose rules the senders follow where the kernels
    /// differ (`linux24`: initial window 2, initial RTO 3 s; `linux32`, the default: 10 and
    /// 1 s, 3.2's `tcp_is_cwnd_limited`).
    #[option(default = Era::Linux32)]
    pub tcp_era: Era,
    /// `tcp_window` with congestion control: the senders' HZ (CUBIC's clock).
    #[option(default = 1000, bound = int(1, 10_000), why = "timer interrupts per second of the senders' kernel; Linux offers 100..=1000")]
    pub tcp_hz: u32,
    /// `tcp_window` with congestion control: the senders' NIC does TCP segmentation offload,
    /// so their TCP sends new data in trains (Linux 3.2 `tcp_tso_should_defer`: until 64 KB or a
    /// third of the window can leave at once). Default off: each segment leaves as the windows
    /// open it.
    #[option(default = false)]
    pub tcp_tso: bool,
    /// `tcp_window`: bytes each flow sends before it stops (0 = unlimited).
    #[option(default = 0, bound = int(0, 1 << 50), why = "bytes per flow (0 = unlimited); at most 1 PiB")]
    pub total_bytes: u64,
    /// Flow f goes to `dst_port + f` (one connection per receiving socket, e.g. iperf -P N
    /// against one receiver thread per connection) instead of all flows to `dst_port`.
    #[option(default = false)]
    pub dst_port_per_flow: bool,
    /// One-way propagation delay of each client machine's link, both directions (WebAxe-4
    /// asks for 40 ms on the client side).
    #[option(default = 0, bound = int(0, 1_000_000), why = "us of one-way propagation; 1 s is longer than any path on Earth or to a geostationary satellite")]
    pub link_delay_us: u64,
    /// `http_clients` / `http_origin`: the HTTP workload's parameters (`[traffic.http]`).
    #[option(default = None)]
    pub http: Option<HttpConfig>,
    /// `cbr`: send in pacing quanta of this many us (0, the default: evenly spaced): the frames
    /// due in a quantum leave at its start, `burst_pps` apart (a paced generator such as
    /// `hostsim live`'s, crates/live/src/gen.rs, which builds each quantum's frames at once).
    #[option(default = 0, bound = int(0, DAY_US), why = TIME)]
    pub quantum_us: u64,
    /// `cbr` with `quantum_us`: the rate at which a quantum's frames leave.
    #[option(default = 0.0, bound = float(0.0, 1e9), why = "packets per second; a frame takes at least 1 ns on the fastest link")]
    pub burst_pps: f64,
    /// `cbr` with `quantum_us`, instead of `burst_pps`: a quantum's frames leave evenly over
    /// this fraction of it, at `rate_pps / spread` (0, the default: `burst_pps`), as the live
    /// generator's spread streams (crates/live/src/gen.rs `Stream::spread`), whose burst rate
    /// follows the rate.
    #[option(default = 0.0, bound = float(0.0, 1.0), why = "a fraction of the pacing quantum (0: burst_pps)")]
    pub spread: f64,
}

/// The congestion control of a `tcp_window` source's senders.
#[options]
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpCc {
    /// A fixed window without congestion control.
    #[default]
    None,
    Reno,
    Cubic,
}

impl TcpCc {
    /// The `hostsim-tcp` algorithm, None for the fixed window.
    pub fn kind(self) -> Option<CcKind> {
        match self {
            TcpCc::None => None,
            TcpCc::Reno => Some(CcKind::Reno),
            TcpCc::Cubic => Some(CcKind::Cubic),
        }
    }
}

/// A route: packets arriving on NIC `from` (any NIC if absent) that no local socket takes are
/// forwarded by the kernel (IP forwarding, no process) out of NIC `to`, to the external sink
/// (`[[traffic]]` of kind `sink`) attached to that NIC.
#[options]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// The NIC whose packets the route takes (absent: any NIC).
    #[option(default = None, gen = Gen::Name)]
    pub from: Option<String>,
    /// The NIC the packets leave by, to the `sink` traffic attached to it.
    #[option(gen = Gen::Name)]
    pub to: String,
}
