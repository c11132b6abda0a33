//! Statistics collected during a run: cumulative counters that the model's subsystems bump as
//! things happen, and the time series. `metrics/summary.rs` turns them into windowed metrics and
//! `summary.json`. Every statistic has one name used in `summary.json`, in `results.csv` and in the
//! time series.

use crate::config::HostConfig;
use crate::metrics::migration_class::MigrationClass;
use crate::types::*;
use hostsim_engine::{Histogram, Time, TimeSeries};

/// Cumulative counters at one instant (for windowed rates and time-series deltas).
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    pub(crate) t: u64,
    pub(crate) offered: u64,
    pub(crate) delivered: u64,
    pub(crate) drops: [u64; N_DROPS],
    pub(crate) acct: Vec<[u64; N_STATES]>,
    pub(crate) proc_rx: Vec<u64>,
    pub(crate) proc_rx_bytes: Vec<u64>,
    pub(crate) proc_tx: Vec<u64>,
    pub(crate) proc_tx_bytes: Vec<u64>,
    pub(crate) proc_cpu: Vec<u64>,
    pub(crate) migrations: [u64; N_CAUSES],
    pub(crate) cache: [u64; 4],
    pub(crate) wakeups: u64,
    pub(crate) src_acked: Vec<u64>,
    pub(crate) src_timeouts: Vec<u64>,
    pub(crate) src_drops: Vec<[u64; N_DROPS]>,
    /// poll(): kernel ns, calls, ready descriptors returned.
    pub(crate) poll: [u64; 3],
    pub(crate) src_received: Vec<u64>,
    pub(crate) forwarded: u64,
    pub(crate) ipis: u64,
    pub(crate) lock: [u64; 2],
}

pub struct Stats {
    pub offered: u64,
    pub delivered: u64,
    pub drops: [u64; N_DROPS],
    /// Flow-limit drops by the CPU whose table refused them (`softnet_stat`'s flow_limit_count).
    pub flow_limit_drops: Vec<u64>,
    /// Frames the host handed to its NICs (`dev_queue_xmit`), and their payload bytes.
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames the device dropped: TX ring and device queue full.
    pub tx_ring_drops: u64,
    /// Frames on their way (ring, wire, switch, far link) to their destination.
    pub tx_en_route: u64,
    /// Frames (and payload bytes) that reached their destination.
    pub tx_delivered: u64,
    pub tx_delivered_bytes: u64,
    /// Incoming pure ACKs consumed by the host's sending TCP.
    pub acks_consumed: u64,
    /// SYNs, handshake ACKs and FINs consumed by the protocol (`net/ipv4/endpoint.rs`).
    pub ctrl_consumed: u64,
    /// TCP connections closed (`tcp_close`): bytes written, acknowledged and abandoned, bytes
    /// sent, retransmits and timeouts, so that the totals stay whole when slots are reused.
    pub tcp_closed: [u64; 6],
    /// Kernel time in poll() (the `sys_poll` units of programs) and the calls' count and
    /// ready descriptors returned (`fs/select.rs`).
    pub poll_ns: u64,
    pub polls: u64,
    pub poll_ready: u64,
    /// Packets forwarded (IP routing): handed to the output device.
    pub forwarded: u64,
    /// Time from a forwarded packet's arrival at the NIC to its hand-over to the output device
    /// (after warm-up).
    pub forward_latency: Histogram,
    /// Inter-processor interrupts sent (RPS/RFS backlog kicks; no model sends others).
    pub ipis: u64,
    pub migrations: [u64; N_CAUSES],
    pub llc_load_misses: u64,
    pub llc_store_misses: u64,
    pub dtlb_load_misses: u64,
    pub dtlb_store_misses: u64,
    pub wakeups: u64,
    /// Drops by place for each traffic source.
    pub src_drops: Vec<[u64; N_DROPS]>,
    /// Deliveries whose sequence number was below an earlier one of the same flow.
    pub reordered: u64,
    /// RFS moved a flow from one CPU to another.
    pub rfs_flow_moves: u64,
    /// TCP segments prequeued for a blocked reader (`net/ipv4/tcp_prequeue.rs`).
    pub prequeued: u64,
    /// Flow Director ATR samples (filters added or updated, `drivers/net/fdir.rs`).
    pub fdir_samples: u64,
    /// GRO (`net/core/gro.rs`): segments merged into a held aggregate, aggregates passed up.
    pub gro_merged: u64,
    pub gro_aggregates: u64,
    /// RSC (`drivers/net/rsc.rs`): frames that joined an open aggregate.
    pub rsc_joined: u64,
    /// RFS wanted to move a flow but the old CPU still held its packets (no-reorder rule).
    pub rfs_moves_deferred: u64,
    /// Moves made while the old CPU still held the flow's packets (only without the rule).
    pub rfs_unsafe_moves: u64,
    /// Paper 001's classification of migrations (counts since the end of warm-up).
    pub class: MigrationClass,
    last_seq: Vec<Vec<u64>>,
    pub(crate) warm: Option<Snapshot>,
    pub(crate) last_sample: Snapshot,
    pub series: TimeSeries,
}

const SERIES: [&str; 12] = [
    "offered_pps",
    "delivered_pps",
    "drops_pps",
    "cpu_hardirq",
    "cpu_softirq",
    "cpu_system",
    "cpu_user",
    "cpu_idle",
    "migrations_per_s",
    "runnable",
    "backlog_len",
    "throttled_cpus",
];

impl Stats {
    pub fn new(cfg: &HostConfig, ncpu: usize, nprocs: usize) -> Stats {
        Stats {
            offered: 0,
            delivered: 0,
            drops: [0; N_DROPS],
            flow_limit_drops: vec![0; ncpu],
            tx_frames: 0,
            tx_bytes: 0,
            tx_ring_drops: 0,
            tx_en_route: 0,
            tx_delivered: 0,
            tx_delivered_bytes: 0,
            acks_consumed: 0,
            ctrl_consumed: 0,
            tcp_closed: [0; 6],
            poll_ns: 0,
            polls: 0,
            poll_ready: 0,
            forwarded: 0,
            forward_latency: Histogram::new(),
            ipis: 0,
            migrations: [0; N_CAUSES],
            llc_load_misses: 0,
            llc_store_misses: 0,
            dtlb_load_misses: 0,
            dtlb_store_misses: 0,
            wakeups: 0,
            reordered: 0,
            rfs_flow_moves: 0,
            fdir_samples: 0,
            gro_merged: 0,
            gro_aggregates: 0,
            rsc_joined: 0,
            prequeued: 0,
            rfs_moves_deferred: 0,
            rfs_unsafe_moves: 0,
            class: MigrationClass::new(nprocs),
            src_drops: vec![[0; N_DROPS]; cfg.traffic.len()],
            last_seq: cfg.traffic.iter().map(|t| vec![u64::MAX; t.flows.max(1) as usize]).collect(),
            warm: None,
            last_sample: Snapshot::default(),
            series: TimeSeries::new(cfg.sample_interval_ns, SERIES.iter().map(|s| s.to_string()).collect()),
        }
    }

    pub fn samples_taken(&self) -> u64 {
        self.series.len() as u64
    }

    pub fn record_delivery(&mut self, src: u32, flow: u32, seq: u64) {
        self.delivered += 1;
        if let Some(last) = self.last_seq.get_mut(src as usize).and_then(|v| v.get_mut(flow as usize)) {
            if *last != u64::MAX && seq < *last {
                self.reordered += 1;
            }
            *last = seq;
        }
    }

    pub fn record_migration(&mut self, _now: Time, pid: Pid, _from: usize, _to: usize, c: MigrationCause) {
        if c != MigrationCause::Wakeup {
            self.class.balanced(pid);
        }
    }

    pub fn record_wakeup(&mut self, _now: Time, pid: Pid, waker: usize, prev: usize, target: usize) {
        self.wakeups += 1;
        self.class.wakeup(pid, waker, prev, target);
    }
}
