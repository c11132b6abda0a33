//! Network drivers (Linux `drivers/net/`, e.g. `e1000/`, `ixgbe/`): what a NIC port and its
//! driver do with a frame before the device-independent receive path (`net/core`) sees it.
//!
//! - this file: the devices' state (`Nic` ports, `NicQueue` queue pairs with their vectors).
//! - `nic`: a frame's arrival in an RX ring chosen by RSS, interrupt moderation (coalescing,
//!   ITR/EITR) and the interrupt handler of the legacy (2.4) and NAPI drivers.
//! - `txring`: one transmit queue's device queue (qdisc) and TX descriptor ring.
//! - `fdir`: the 82599's Flow Director in ATR mode (ixgbe 3.2's default): a sampled transmit
//!   steers the flow's received frames to the sending CPU's queue.
//! - `dim`: Linux 6.x `net_dim`, the adaptive moderation mlx5 runs by default (modern profile).
//! - `itr`: the interrupt throttle rate per vector, fixed or ixgbe 3.2's dynamic `ixgbe_set_itr`.
//! - `rsc`: the 82599's receive-side coalescing (ixgbe 3.2's default): in-order TCP frames of a
//!   flow joined into one aggregate of at most 16 descriptors before the driver sees them.

pub mod dim;
pub mod fdir;
pub mod itr;
pub mod nic;
pub mod rsc;
pub mod txring;

use crate::config::HostConfig;
use crate::config::{ItrMode, NicConfig};
use crate::drivers::net::dim::NetDim;
use crate::drivers::net::fdir::Fdir;
use crate::drivers::net::itr::DynItr;
use crate::drivers::net::rsc::Rsc;
use crate::drivers::net::txring::TxQueue;
use crate::kernel::irq::route::IrqRouter;
use crate::net::core::gro::GroList;
use crate::types::{Pid, PktId, NONE};
use hostsim_engine::{Rng, Time, Timer};
use std::collections::VecDeque;

pub struct NicQueue {
    pub nic: u32,
    pub ring: VecDeque<PktId>,
    pub ring_max: u32,
    pub irq_enabled: bool,
    /// Interrupt raised and not yet finished (pending on a CPU or its handler running).
    pub irq_active: bool,
    pub napi_scheduled: bool,
    pub since_irq: u32,
    pub coalesce: Timer,
    /// The TX half of the queue pair: device queue and TX ring (`drivers/net/txring.rs`, `net/core/tx.rs`).
    pub tx: TxQueue,
    /// NAPI: the TX ring was cleaned in the poll now running (once per poll call, as
    /// `ixgbe_poll` does at its start).
    pub tx_polled: bool,
    /// When the queue last interrupted (for throttling).
    pub last_irq: Time,
    pub router: IrqRouter,
    /// RFS device flow table: (cpu, last_qtail) per hash bucket.
    pub rflow: Vec<(u32, u64)>,
    /// The vector's minimum interval between interrupts in ns (0 = no throttle): 1/ITR for a
    /// fixed rate, the dynamic ITR's current value otherwise.
    pub itr_ns: u64,
    /// `nic.itr_mode = "ixgbe_dynamic"`: the vector's dynamic ITR state (`itr.rs`).
    pub dyn_itr: Option<DynItr>,
    /// `nic.itr_mode = "net_dim_*"`: the queue's `struct dim` (`dim.rs`) and its counters
    /// (interrupts, packets, bytes received).
    pub net_dim: Option<Box<NetDimQ>>,
    /// `nic.gro`: the NAPI instance's GRO list (`net/core/gro.rs`).
    pub gro: Option<GroList>,
    /// Aggregates GRO has completed and the poll has yet to pass up (first packets, in order).
    pub gro_up: std::collections::VecDeque<PktId>,
    /// `nic.rsc_max_desc > 0`: the queue's open RSC aggregates (`rsc.rs`).
    pub rsc: Option<Rsc>,
    /// Descriptors held by frames that joined an RSC aggregate (in the ring's occupancy, not
    /// in `ring`).
    pub rsc_desc: u32,
    /// Threaded NAPI (`kernel.napi_threaded`): the queue's kthread (`net/core/napi_thread.rs`;
    /// NONE: the poll runs in NET_RX) and the frames its current poll call has taken (its
    /// `work_done` against the weight).
    pub napi_thread: Pid,
    pub thread_work: u32,
}

/// A queue's `net_dim` state with the counters it samples.
pub struct NetDimQ {
    pub dim: NetDim,
    pub events: u32,
    pub pkts: u64,
    pub bytes: u64,
}

impl NetDimQ {
    pub fn new(cqe_mode: bool) -> NetDimQ {
        NetDimQ { dim: NetDim::new(cqe_mode), events: 0, pkts: 0, bytes: 0 }
    }
}

pub struct Nic {
    pub cfg: NicConfig,
    pub first_queue: u32,
    pub ns_per_byte: f64,
    /// When the switch→host wire is next free.
    pub rx_wire_free: Time,
    /// When the host→switch wire, fed by every TX ring of the NIC (`NicQueue::tx`), is next free.
    pub tx_wire_free: Time,
    /// Where packets arriving here that no local socket takes are forwarded: the sink source
    /// (`Host::srcs` index) on the route's output NIC, NONE if no route.
    pub fwd_to: u32,
    /// Flow Director ATR (`fdir.rs`), None when `fdir_atr_sample_rate` is 0.
    pub fdir: Option<Fdir>,
}

/// The host's network devices: NIC ports and their queues (each an RX ring and a TX queue pair
/// with its interrupt vector), numbered across all ports.
pub struct NetDevs {
    pub nics: Vec<Nic>,
    pub queues: Vec<NicQueue>,
    /// Random draws of IRQ routing (2.4 balance_irq's choice among neighbours).
    pub rng_route: Rng,
}

impl NetDevs {
    pub fn new(cfg: &HostConfig, ncpu: usize, rng_route: Rng) -> NetDevs {
        let mut nics = Vec::new();
        let mut queues = Vec::new();
        for (i, n) in cfg.nics.iter().enumerate() {
            let first_queue = queues.len() as u32;
            for qi in 0..n.queues {
                let router = IrqRouter::new(n, qi, ncpu);
                queues.push(NicQueue {
                    nic: i as u32,
                    ring: VecDeque::with_capacity(n.rx_ring as usize),
                    ring_max: n.rx_ring,
                    irq_enabled: true,
                    irq_active: false,
                    napi_scheduled: false,
                    since_irq: 0,
                    coalesce: Timer::new(),
                    tx: TxQueue::new(n.tx_ring, n.tx_queue_len, n.tx_irq_ring_level),
                    tx_polled: false,
                    last_irq: Time::ZERO,
                    router,
                    rflow: if cfg.kernel.rfs { vec![(NONE, 0); cfg.kernel.rfs_entries as usize] } else { Vec::new() },
                    itr_ns: match n.itr_mode {
                        ItrMode::Fixed if n.itr_ints_per_s > 0 => 1_000_000_000 / u64::from(n.itr_ints_per_s),
                        ItrMode::Fixed => 0,
                        ItrMode::IxgbeDynamic => DynItr::default().interval_ns(),
                        ItrMode::NetDimCqe | ItrMode::NetDimEqe => 0,
                    },
                    dyn_itr: (n.itr_mode == ItrMode::IxgbeDynamic).then(DynItr::default),
                    net_dim: match n.itr_mode {
                        ItrMode::NetDimCqe => Some(Box::new(NetDimQ::new(true))),
                        ItrMode::NetDimEqe => Some(Box::new(NetDimQ::new(false))),
                        _ => None,
                    },
                    gro: n.gro.then(GroList::default),
                    gro_up: std::collections::VecDeque::new(),
                    rsc: (n.rsc_max_desc > 0).then(|| Rsc::new(n.rsc_max_desc)),
                    rsc_desc: 0,
                    napi_thread: NONE,
                    thread_work: 0,
                });
            }
            nics.push(Nic {
                cfg: n.clone(),
                first_queue,
                ns_per_byte: 8_000.0 / n.rate_mbps as f64,
                rx_wire_free: Time::ZERO,
                tx_wire_free: Time::ZERO,
                fwd_to: NONE,
                fdir: (n.fdir_atr_sample_rate > 0).then(|| Fdir::new(n.fdir_atr_sample_rate, n.queues)),
            });
        }
        NetDevs { nics, queues, rng_route }
    }
}
