//! The device layer of the transmit path (`dev_queue_xmit` and below), used by every frame the
//! host sends: UDP replies, TCP ACKs, TCP data segments, and packets the kernel forwards (`net/ipv4/forward.rs`). It needs
//! no socket: a caller in any context hands it a [`TxFrame`].
//!
//! TX queues: each NIC queue is a queue pair, an RX ring and a TX ring (device queue + descriptor
//! ring, `drivers/net/txring.rs`); all of a NIC's TX rings feed its one wire. A frame goes to TX queue
//! `sel mod queues` (Linux 3.2 `dev_pick_tx` → ixgbe's `ixgbe_select_queue`, FDIR hash mode:
//! `txq = skb_rx_queue_recorded(skb) ? skb_get_rx_queue(skb) : smp_processor_id()`, reduced by
//! `real_num_tx_queues`; 6.x reaches the same queue through XPS, which ixgbe maps one queue per
//! CPU): `sel` is the RX queue a forwarded packet came in on, else the sending CPU
//! (`Host::xmit_cpu`). A single-queue NIC has one TX ring.
//!
//! Costs: the caller charges the driver's per-frame transmit cost (`driver_tx_frame_ns`) in its
//! own unit of work (process context for send(), softirq for ACKs and forwarding), as the 2.4
//! driver's `hard_start_xmit` runs inside `dev_queue_xmit`. A frame that waits in the device
//! queue is moved to the ring by the clean-up (2.4: `netif_wake_queue` → NET_TX `qdisc_run`);
//! its driver cost was already charged by the caller, so the move itself is free here.
//!
//! TX completion: frames leave the rings on the wire in the order they were handed over; a TX-done
//! interrupt cause arrives when a descriptor that asked for one completes, or when a ring drains
//! (see `drivers/net/txring.rs`).
//! - On the 2.4 (`legacy`) path the NIC raises its interrupt at once, routed as the queue's RX
//!   interrupt, and the handler cleans the completed frames itself (`driver_tx_clean_ns` each, hard
//!   IRQ), as tulip's `tulip_interrupt` and e1000's `e1000_intr` → `e1000_clean_tx_irq` do; an
//!   RX interrupt of the queue cleans completed frames too (one handler serves both causes).
//! - With NAPI the cause is one more cause of the queue's own interrupt vector, under its
//!   moderation (`coalesce_usecs`, `itr_ints_per_s`; a TX cause does not count towards
//!   `coalesce_frames`, which counts received frames), and the queue's poll cleans the TX ring
//!   before taking RX frames, without using the RX budget: Linux 3.2 ixgbe pairs TX and RX ring
//!   `i` on MSI-X vector `i` (`ixgbe_map_rings_to_vectors`), `ixgbe_msix_clean_rings` schedules
//!   the vector's NAPI, and `ixgbe_poll` runs `ixgbe_clean_tx_irq` on the vector's TX rings, then
//!   `ixgbe_clean_rx_irq` with the budget; e1000's NAPI `e1000_clean` cleans TX then RX under the
//!   one interrupt the same way. Completed descriptors are all cleaned in one unit (ixgbe's TX
//!   work limit of 256 per poll is not modelled: no scenario's ring holds more).

use crate::config::RxPath;
use crate::drivers::net::txring::{TxFrame, Xmit};
use crate::kernel::cpu::Work;
use crate::sim::*;
use crate::types::*;
use crate::wire::wire_bytes;
use hostsim_engine::Time;
use hostsim_workload::Feedback;

impl<M: Mechanisms> Host<M> {
    /// `dev_queue_xmit` from the current context: a locally generated frame goes to the TX queue
    /// of the CPU sending it (module documentation).
    pub fn dev_queue_xmit(&mut self, f: TxFrame) -> bool {
        self.dev_queue_xmit_sel(f, self.net.xmit_cpu)
    }

    /// `dev_queue_xmit` with the number `ixgbe_select_queue` reduces (`sel`): returns false if
    /// the device dropped the frame (ring and queue full).
    pub fn dev_queue_xmit_sel(&mut self, f: TxFrame, sel: u32) -> bool {
        let now = self.now();
        let nic = self.wire.srcs[f.dst as usize].nic as usize;
        let n = &self.dev.nics[nic];
        let ring = sel % n.cfg.queues.max(1);
        let q = (n.first_queue + ring) as usize;
        let bytes = wire_bytes(f.payload, f.tcp);
        let wire_ns = (bytes as f64 * n.ns_per_byte).round() as u64;
        if n.fdir.is_some() {
            self.ixgbe_atr(nic, ring, &f);
        }
        if let Some(d) = &mut self.dev.queues[q].dyn_itr {
            // The TX container's counts (ixgbe counts them at clean-up, a poll or two later).
            d.tx.total_bytes += bytes - 20;
            d.tx.total_packets += 1;
        }
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += u64::from(f.payload);
        match self.dev.queues[q].tx.xmit(now, f, wire_ns, bytes, &mut self.dev.nics[nic].tx_wire_free) {
            Xmit::Ring { done, irq, .. } => {
                self.tx_on_ring(q, f, done, irq, bytes);
                true
            }
            Xmit::Queued => true,
            Xmit::Dropped => {
                self.stats.tx_ring_drops += 1;
                false
            }
        }
    }

    /// `ixgbe_atr` (`drivers/net/fdir.rs`) for frame `f` put on TX ring `ring` of NIC `nic`: the
    /// filter is keyed by the flow's hash as its received frames carry it.
    #[cold]
    #[inline(never)]
    fn ixgbe_atr(&mut self, nic: usize, ring: u32, f: &TxFrame) {
        let (syn, fin) = (matches!(f.fb, Feedback::SynAck { .. }), matches!(f.fb, Feedback::Fin { .. }));
        let hash = if f.tcp {
            let s = f.dst as usize;
            let key = self.net.hash_key;
            self.wire.srcs[s].flow_wire(s, f.fb.flow(), key, &self.dev.nics[nic]).hash
        } else {
            0
        };
        let fd = self.dev.nics[nic].fdir.as_mut().expect("called with Flow Director on");
        if fd.atr(ring, f.tcp, syn, fin, hash) {
            self.stats.fdir_samples += 1;
        }
    }

    /// A frame went onto queue `q`'s ring: it reaches its destination after the switch and the
    /// destination's own link; its completion may interrupt.
    fn tx_on_ring(&mut self, q: usize, f: TxFrame, done: Time, irq: bool, bytes: u64) {
        let nic = self.dev.queues[q].nic as usize;
        let src = &mut self.wire.srcs[f.dst as usize];
        let ready = done + Time(self.dev.nics[nic].cfg.switch_latency_ns);
        // Each client machine has its own link from the switch (as to it, `drivers/net/nic.rs`).
        let c = f.fb.flow() as usize % src.down_free.len();
        let begin = ready.max(src.down_free[c]);
        let at_client = begin + Time((bytes as f64 * src.link_ns_per_byte).round() as u64);
        src.down_free[c] = at_client;
        let arrive = at_client + Time(src.link_delay_ns);
        self.stats.tx_en_route += 1;
        let slot = self.wire.feedback.put(f.dst, f.fb, f.payload);
        self.post(arrive, Ev::Feedback { slot });
        let gen = self.dev.queues[q].tx.drain.arm();
        self.post(done, Ev::TxDrain { q: q as u32, gen });
        if irq {
            self.post(done, Ev::TxIrq { q: q as u32 });
        }
    }

    /// A TX-done interrupt cause on queue `q`'s ring. 2.4: raise the NIC's interrupt unless its
    /// clean-up is already on the way (then it is remembered and raised again once that is
    /// done). NAPI: a cause of the queue's interrupt vector, under its moderation.
    pub fn tx_irq_cause(&mut self, q: usize) {
        let now = self.now();
        if self.cfg.kernel.rx_path == RxPath::Napi {
            if self.dev.queues[q].tx.has_done(now) {
                self.nic_tx_cause(q);
            }
            return;
        }
        let tx = &mut self.dev.queues[q].tx;
        if tx.irq_active {
            tx.irq_pending = true;
            return;
        }
        if !tx.has_done(now) {
            return;
        }
        tx.irq_active = true;
        let cpu = self.route_irq(q);
        self.raise_irq(cpu, IrqSrc::NicTx(q as u32));
    }

    /// The TX interrupt's entry has run on `cpu` (2.4 path): clean the completed frames.
    pub fn nic_tx_irq_handler(&mut self, cpu: usize, q: usize) {
        let n = self.dev.queues[q].tx.done(self.now());
        if n == 0 {
            return self.tx_irq_end(cpu, q);
        }
        let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
        self.next_unit(cpu, Work::TxCleanIrq { q: q as u32, n, rx: false }, CpuState::Hardirq, cost);
    }

    /// Before an RX interrupt of `q` handles frames (2.4 path): clean completed TX frames of the
    /// queue's ring first (one handler serves both causes). Returns true if a clean-up unit was
    /// started.
    pub fn tx_clean_in_rx_irq(&mut self, cpu: usize, q: usize) -> bool {
        if self.dev.queues[q].tx.irq_active {
            return false;
        }
        let n = self.dev.queues[q].tx.done(self.now());
        if n == 0 {
            return false;
        }
        self.dev.queues[q].tx.irq_active = true;
        let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
        self.next_unit(cpu, Work::TxCleanIrq { q: q as u32, n, rx: true }, CpuState::Hardirq, cost);
        true
    }

    /// A hard-IRQ clean-up unit completed; `rx`: the handler goes on with the queue's RX frames.
    pub fn tx_clean_irq_done(&mut self, cpu: usize, q: usize, n: u32, rx: bool) {
        self.tx_clean(q, n);
        if !rx {
            return self.tx_irq_end(cpu, q);
        }
        self.tx_cause_again(q);
        self.cpus[cpu].irq_frames = 0;
        self.legacy_irq_next(cpu, q);
    }

    fn tx_irq_end(&mut self, cpu: usize, q: usize) {
        self.tx_cause_again(q);
        self.irq_exit(cpu);
    }

    /// The clean-up is over: a cause that came meanwhile interrupts again if frames are done.
    fn tx_cause_again(&mut self, q: usize) {
        let tx = &mut self.dev.queues[q].tx;
        tx.irq_active = false;
        if std::mem::take(&mut tx.irq_pending) {
            self.tx_irq_cause(q);
        }
    }

    /// NAPI: at the start of a poll of queue `q`, a unit cleaning its completed TX frames.
    /// Returns false if there was nothing to clean.
    pub fn tx_poll_next(&mut self, cpu: usize, q: usize) -> bool {
        let n = self.dev.queues[q].tx.done(self.now());
        if n == 0 {
            return false;
        }
        let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
        self.next_unit(cpu, Work::TxPoll { q: q as u32, n }, CpuState::Softirq, cost);
        true
    }

    /// Free `n` completed descriptors of queue `q`'s ring and refill it from its device queue.
    pub fn tx_clean(&mut self, q: usize, n: u32) {
        let now = self.now();
        let nic = self.dev.queues[q].nic as usize;
        self.dev.queues[q].tx.clean(now, n);
        while let Some(f) = self.dev.queues[q].tx.next_queued() {
            let bytes = wire_bytes(f.payload, f.tcp);
            let wire_ns = (bytes as f64 * self.dev.nics[nic].ns_per_byte).round() as u64;
            let wire_free = &mut self.dev.nics[nic].tx_wire_free;
            if let Xmit::Ring { done, irq, .. } = self.dev.queues[q].tx.ring_queued(now, wire_ns, bytes, wire_free) {
                self.tx_on_ring(q, f, done, irq, bytes);
            }
        }
    }

    /// Frames handed to the device and not yet at their destination (queued, on the ring
    /// before or after the wire, in the switch or on the far link).
    pub fn tx_in_flight(&self) -> u64 {
        self.dev.queues.iter().map(|q| q.tx.queue.len() as u64).sum::<u64>() + self.stats.tx_en_route
    }

    /// Send a frame from the host to source `s` (a reply or an ACK) through the device layer;
    /// the caller charges the output and driver costs.
    pub fn transmit(&mut self, s: u32, payload: u32, tcp: bool, fb: Feedback) {
        self.dev_queue_xmit(TxFrame { dst: s, payload, tcp, fb });
    }
}
