//! `summary.json`'s structure: what a run reports, every statistic under the one name it has in
//! `summary.json`, `results.csv` and the time series. Pure data: the host fills it at the end of
//! a run (`build.rs`), its mechanisms their parts (`Mechanism::summary`).

use hostsim_engine::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

pub mod build;

/// The host's sending TCP (`net/ipv4/tcp_output.rs`), summed over connections. Bytes written by programs
/// are acknowledged or still held: `written_bytes = acked_bytes + unacked_bytes`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TcpSummary {
    pub connections: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub written_bytes: u64,
    pub acked_bytes: u64,
    pub unacked_bytes: u64,
    /// Payload bytes put on the wire, retransmissions included.
    pub sent_bytes: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Latency {
    pub fn of(h: &Histogram) -> Latency {
        Latency { count: h.count(), mean: h.mean(), p50: h.quantile(0.5), p99: h.quantile(0.99), max: h.max() }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuSummary {
    pub id: u32,
    pub hardirq_ns: u64,
    pub softirq_ns: u64,
    pub system_ns: u64,
    pub user_ns: u64,
    pub spin_ns: u64,
    pub idle_ns: u64,
    pub irqs: u64,
    /// Packets this CPU's RPS flow-limit table refused (Linux: `flow_limit_count`, column 11 of
    /// /proc/net/softnet_stat).
    pub flow_limit_drops: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProcessSummary {
    pub name: String,
    pub nice: i8,
    pub kernel_thread: bool,
    pub cpu_ns: u64,
    pub migrations: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames sent: replies, or a sender's TCP segments (retransmissions included).
    pub tx_packets: u64,
    /// Payload bytes sent (replies; send() calls returned).
    pub tx_bytes: u64,
    /// Time packets waited in the socket before this process read them (after warm-up).
    pub wait_ns: Option<Latency>,
    /// A speed-regulated process (paper 002): the slots in effect (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<SpeedSummary>,
}

/// The execution speed in effect for a regulated process: `slots_per_block` of `block_slots`
/// slots of `slot_ns` (`speed_pct` is what they give, 100 n / T).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SpeedSummary {
    pub slots_per_block: u64,
    pub block_slots: u64,
    pub slot_ns: u64,
    pub speed_pct: f64,
}

/// Flow Director ATR over all NICs: samples taken (filters added or updated), filters at the
/// end, table flushes (`adapter->fdir_overflow`).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct FdirSummary {
    pub samples: u64,
    pub filters: u64,
    pub overflows: u64,
}

/// GRO and RSC counts over all queues.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct GroRscSummary {
    pub gro_merged: u64,
    pub gro_aggregates: u64,
    pub rsc_joined: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PacketSummary {
    pub offered: u64,
    pub delivered: u64,
    pub in_flight: u64,
    pub drops: BTreeMap<String, u64>,
    pub reordered: u64,
    pub rfs_flow_moves: u64,
    /// Flow Director ATR (`nic.fdir_atr_sample_rate`), absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdir: Option<FdirSummary>,
    /// TCP segments queued for a reader blocked in recvmsg (`kernel.tcp_prequeue`), absent
    /// without the prequeue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_prequeued: Option<u64>,
    /// ixgbe's dynamic ITR (`nic.itr_mode = "ixgbe_dynamic"`): each queue's interval at the end
    /// of the run in microseconds (the register >> 2; 0 for a queue without it); absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub itr_dynamic_us: Option<Vec<u32>>,
    /// GRO and RSC (`nic.gro`, `nic.rsc_max_desc`): segments merged, aggregates passed up,
    /// frames that joined an RSC aggregate; absent without either.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro_rsc: Option<GroRscSummary>,
    /// net_dim (`nic.itr_mode = "net_dim_*"`): each queue's profile index at the end (0 for a
    /// queue without it); absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net_dim_profile: Option<Vec<u32>>,
    pub rfs_moves_deferred: u64,
    pub rfs_unsafe_moves: u64,
    /// Inter-processor interrupts sent to kick another CPU's backlog (RPS/RFS).
    pub rps_ipis: u64,
    /// Frames the host handed to its NICs, and their payload bytes: each one reaches its
    /// destination (`tx_delivered`), is dropped by the device (`tx_ring_drops`) or is still on
    /// its way (`tx_in_flight`).
    pub tx_frames: u64,
    pub tx_ring_drops: u64,
    pub tx_bytes: u64,
    pub tx_delivered: u64,
    pub tx_delivered_bytes: u64,
    pub tx_in_flight: u64,
    /// Pure ACKs consumed by the host's sending TCP (offered = delivered + acks_consumed +
    /// ctrl_consumed + drops + in flight).
    pub acks_consumed: u64,
    /// Connection set-up and tear-down segments (SYN, handshake ACK, FIN) consumed by the
    /// protocol.
    pub ctrl_consumed: u64,
    /// Packets forwarded by the kernel (IP routing), handed to the output device.
    pub forwarded: u64,
}

/// The kernel concurrency model's counters (whole run).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ConcurrencySummary {
    /// `smp`, `up`, `bkl` or `functional`.
    pub model: String,
    pub online_cpus: u32,
    pub machine_cpus: u32,
    /// Acquisitions of the model's lock (the big kernel lock, or Symbiose's global-queue lock).
    pub lock_acquisitions: u64,
    /// Acquisitions whose previous holder was another CPU.
    pub lock_transfers: u64,
    /// `functional`: splices by each CPU's exchange threads.
    pub exchanges: Vec<u64>,
    /// `functional`: shared-pool buffers in use at the end.
    pub pool_buffers_used: u32,
    /// `functional`: buffers in the local and global exchange queues at the end.
    pub exchange_queued: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CacheSummary {
    pub llc_load_misses: u64,
    pub llc_store_misses: u64,
    pub dtlb_load_misses: u64,
    pub dtlb_store_misses: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SocketSummary {
    pub port: u16,
    pub enqueued: u64,
    /// Time-averaged number of packets queued (whole run).
    pub queue_len_mean: f64,
    pub queued_at_end: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TrafficSummary {
    pub name: String,
    pub emitted: u64,
    pub replies: u64,
    pub timeouts: u64,
    pub retransmits: u64,
    pub acked_bytes: u64,
    pub rtt_ns: Option<Latency>,
    /// Where this source's packets were dropped (places with none are omitted).
    pub drops: BTreeMap<String, u64>,
    /// `http_clients`: whole-run request counts, for the conservation check (not written to
    /// summary.json; the windowed rates are in `metrics`).
    #[serde(skip)]
    pub http: Option<HttpTotals>,
}

/// An `http_clients` source's requests over the whole run: every request sent is completed or
/// still outstanding at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpTotals {
    pub sent: u64,
    pub completed: u64,
    pub outstanding: u64,
}

/// `summary.json`: simulated results only (no wall-clock facts), so equal seeds give equal files.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub sim_time_ns: u64,
    /// Start of the measurement window (end of warm-up) for `metrics` and latencies.
    pub measure_from_ns: u64,
    pub cpus: Vec<CpuSummary>,
    pub processes: Vec<ProcessSummary>,
    pub packets: PacketSummary,
    pub concurrency: ConcurrencySummary,
    pub migrations: BTreeMap<String, u64>,
    pub cache: CacheSummary,
    pub latency_ns: Option<Latency>,
    pub sockets: Vec<SocketSummary>,
    pub traffic: Vec<TrafficSummary>,
    /// The host's sending TCP connections, summed.
    pub tcp: TcpSummary,
    /// Times a speed-regulated process ran outside its allocated slots (paper 002; always 0).
    pub speed_violations: u64,
    /// Flat metrics over the measurement window: the columns of `results.csv`.
    pub metrics: BTreeMap<String, f64>,
}
