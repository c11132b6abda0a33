//! `[[nic]]`: a NIC port, its queue pairs, moderation and IRQ routing, each key declared once.

use hostsim_options::{int, len, options, Gen, CPU_ID};
use serde::{Deserialize, Serialize};

/// How a NIC queue's interrupt chooses its CPU.
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IrqRouting {
    /// Always the first CPU of `irq_cpus`.
    Fixed,
    /// The IRQ's affinity mask is `irq_cpus`; the IO-APIC delivers to the lowest CPU in it.
    Mask,
    /// Linux 2.4 `balance_irq` (the irqbalance patch): every `balance_irq_interval_us` the IRQ
    /// moves to a neighbouring CPU (direction drawn at random), preferring one whose `current` is
    /// the idle task (`kernel.balance_irq_idle`), within the mask.
    BalanceIrq,
    /// One MSI-X vector per queue: queue q goes to `irq_cpus[q % len]`.
    Msix,
}

/// A NIC with one port.
#[options]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NicConfig {
    /// The port's name (`eth0`): traffic, routes and `--set nic.<name>.<key>` refer to it.
    #[option(gen = Gen::Name)]
    pub name: String,
    /// The port's line rate: frames arrive from the switch no faster than this.
    #[option(bound = int(1, 1_000_000), why = "Mbit/s; 1 Tbit/s is above the fastest Ethernet port (800 Gbit/s)")]
    pub rate_mbps: u64,
    /// Queue pairs: each has an RX ring (chosen by RSS), a TX ring (chosen by the sending CPU)
    /// and one interrupt vector serving both (`drivers/net/nic.rs`, `net/core/tx.rs`).
    #[option(default = 1, bound = int(1, 128), why = "RX queues")]
    pub queues: u32,
    /// RX descriptors per queue.
    #[option(default = 256, bound = int(1, 8_192), why = "RX descriptors per queue; the largest rings of real NICs (mlx5, ice) hold 8,192")]
    pub rx_ring: u32,
    /// TX descriptors per queue (each of the `queues` queue pairs has its TX ring, fed by the
    /// CPUs that send on it, `net/core/tx.rs`): a frame the host sends holds one from `dev_queue_xmit`
    /// until the driver's TX clean-up after the frame has left.
    #[option(default = 256, bound = int(1, 8_192), why = "TX descriptors; the largest rings of real NICs (mlx5, ice) hold 8,192")]
    pub tx_ring: u32,
    /// Device queue in front of each TX ring (`txqueuelen`, Linux `ether_setup`: 100): frames
    /// wait here while the ring is full; beyond it they are dropped (`tx_ring_drops`).
    #[option(default = 100, bound = int(0, 1_048_576), why = "frames in the device queue (txqueuelen); 2^20 is 100x the largest common setting")]
    pub tx_queue_len: u32,
    /// The descriptor that brings the TX ring's occupancy to this level asks for a TX-done
    /// interrupt (tulip: `TX_RING_SIZE/2`, the default: half of `tx_ring`); the NIC also
    /// interrupts when its ring drains. 1 = an interrupt for every frame put on an empty ring.
    #[option(default = None, bound = int(1, 8_192), why = "TX descriptors, at most a ring")]
    pub tx_irq_ring_level: Option<u32>,
    /// Raise the interrupt once this many frames are pending ...
    #[option(default = 1, bound = int(1, 8_192), why = "frames per interrupt, at most a ring")]
    pub coalesce_frames: u32,
    /// ... or this long after the first pending frame (0 = no timer).
    #[option(default = 0, bound = int(0, 1_000_000), why = "us; at most 1 s")]
    pub coalesce_usecs: u32,
    /// How the NIC's interrupts are routed to CPUs (`kernel/irq/route.rs`), over `irq_cpus`.
    #[option(default = IrqRouting::Fixed)]
    pub irq_routing: IrqRouting,
    /// CPUs for the routing policy (empty = all CPUs).
    #[option(default = Vec::new(), bound = len(128), why = "CPUs", each = int(0, 127), each_why = CPU_ID, gen = Gen::Cpus)]
    pub irq_cpus: Vec<u32>,
    /// Switch forwarding latency in front of this port.
    #[option(default = 2_000, bound = int(0, 1_000_000_000), why = "ns; at most 1 s")]
    pub switch_latency_ns: u64,
    /// Switch output buffer in front of this port; frames beyond it are dropped (`switch`).
    #[option(default = 1 << 20, bound = int(0, 1 << 30), why = "bytes; 1 GiB is far above any switch port's buffer")]
    pub switch_buffer_bytes: u64,
    /// Interrupt throttling (e1000 `InterruptThrottleRate`): at most this many interrupts per
    /// second per queue; an interrupt due sooner waits for the interval to pass. 0 = off.
    #[option(default = 0, bound = int(0, 1_000_000), why = "interrupts per second (e1000 allows up to 100,000)")]
    pub itr_ints_per_s: u32,
    /// balance_irq: minimum time between moves of the IRQ. None = IRQ_BALANCE_INTERVAL (HZ/50,
    /// 2.5/2.6's io_apic.c); 0 = a move at every interrupt's ACK (as paper 000 §3.4.3 describes
    /// its RedHat 2.4.18 kernel). Red Hat 2.4.18-14's own balance_irq (arch/i386/kernel/io_apic.c,
    /// called from end_level_ioapic_irq) moves only `if (entry->timestamp != now)`, at most once
    /// per jiffy: one jiffy (`1_000_000 / hz`) models it.
    #[option(default = None, bound = int(0, 60_000_000), why = "us; at most a minute")]
    pub balance_irq_interval_us: Option<u64>,
    /// Flow Director ATR (`drivers/net/fdir.rs`): sample every this many frames of a TX ring
    /// (and every SYN) and steer the sampled TCP flow's received frames to the RX queue paired
    /// with that ring. 0 = off (the default: a NIC without Flow Director); the 82599 under
    /// Linux 3.2's ixgbe: 20 (`ixgbe_sw_init`: `atr_sample_rate = 20`).
    #[option(default = 0, bound = int(0, 255), why = "frames per sample; ixgbe's atr_sample_rate is a u8")]
    pub fdir_atr_sample_rate: u32,
    /// Interrupt moderation's rate policy (`drivers/net/itr.rs`): `fixed` (the default:
    /// `itr_ints_per_s` as set) or `ixgbe_dynamic` (Linux 3.2 ixgbe's default,
    /// `rx_itr_setting = 1`: `ixgbe_set_itr` moves each vector between 100,000, 20,000 and 8,000
    /// interrupts/s by the bytes it received per interval; `itr_ints_per_s` is then ignored),
    /// `net_dim_cqe` / `net_dim_eqe` (Linux 6.x `net_dim`, mlx5's default: `drivers/net/dim.rs`).
    #[option(default = ItrMode::default())]
    pub itr_mode: ItrMode,
    /// GRO (`net/core/gro.rs`): the NAPI poll merges in-order TCP segments of up to 8 flows
    /// into aggregates of at most 64 KB that go up the stack as one skb (Linux 3.2
    /// `napi_gro_receive`; `NETIF_F_GRO` is on by default for every NAPI driver that calls it,
    /// such as ixgbe). Default off: the 2.4 drivers and the scenarios calibrated before it keep
    /// their results; the 82599/ixgbe 3.2 scenarios set it. Needs `kernel.rx_path = "napi"`.
    #[option(default = false)]
    pub gro: bool,
    /// RSC (`drivers/net/rsc.rs`): the 82599 coalesces in-order TCP frames of a flow into one
    /// receive aggregate of at most this many descriptors (ixgbe 3.2: `IXGBE_RSCCTL_MAXDESC_16`,
    /// with `IXGBE_FLAG2_RSC_ENABLED` on by default for the 82599). 0 = off (the default).
    #[option(default = 0, bound = int(0, 16), why = "descriptors per RSC aggregate; the 82599's RSCCTL.MAXDESC allows at most 16")]
    pub rsc_max_desc: u32,
}

/// How a NIC's interrupt throttle rate is set (`nic.itr_mode`).
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ItrMode {
    /// `itr_ints_per_s` as configured (0 = no throttle).
    #[default]
    Fixed,
    /// Linux 3.2 ixgbe `ixgbe_set_itr` / `ixgbe_update_itr` at every `napi_complete`.
    IxgbeDynamic,
    /// Linux 6.x `net_dim` (lib/dim) as mlx5 runs it by default on RX queues, CQE mode (the
    /// moderation timer restarts at each completion): `drivers/net/dim.rs`. `coalesce_frames`,
    /// `coalesce_usecs` and `itr_ints_per_s` are then ignored.
    NetDimCqe,
    /// `net_dim` in EQE mode (the timer runs from the previous interrupt): mlx5 on a device
    /// without `cq_period_start_from_cqe`.
    NetDimEqe,
}
