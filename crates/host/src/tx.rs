//! The device layer of the transmit path (`dev_queue_xmit` and below), used by every frame the
//! host sends: UDP replies, TCP ACKs, TCP data segments, and packets the kernel forwards (`forward.rs`). It needs
//! no socket: a caller in any context hands it a [`TxFrame`].
//!
//! Costs: the caller charges the driver's per-frame transmit cost (`driver_tx_frame_ns`) in its
//! own unit of work (process context for send(), softirq for ACKs and forwarding), as the 2.4
//! driver's `hard_start_xmit` runs inside `dev_queue_xmit`. A frame that waits in the device
//! queue is moved to the ring by the clean-up (2.4: `netif_wake_queue` → NET_TX `qdisc_run`);
//! its driver cost was already charged by the caller, so the move itself is free here.
//!
//! TX completion: frames leave the ring on the wire in order; when a TX-done interrupt cause
//! arrives (a descriptor that asked for one, or the ring draining, see `txring.rs`), the NIC
//! raises its interrupt through the same IRQ routing as its first RX queue. On the 2.4 (`legacy`)
//! path the handler cleans the completed frames itself (`driver_tx_clean_ns` each, hard IRQ), as
//! tulip's `tulip_interrupt` and e1000's `e1000_intr` → `e1000_clean_tx_irq` do; an RX
//! interrupt of the first queue cleans completed frames too (one handler serves both causes).
//! With NAPI the handler schedules a poll that cleans them in softirq.

use crate::config::RxPath;
use crate::nic::wire_bytes;
use crate::sim::*;
use crate::txring::{TxFrame, Xmit};
use crate::types::*;
use hostsim_engine::Time;

impl Host {
    /// `dev_queue_xmit`: hand a frame to the NIC that reaches its destination. Returns false if
    /// the device dropped it (ring and queue full).
    pub fn dev_queue_xmit(&mut self, f: TxFrame) -> bool {
        let nic = self.srcs[f.dst as usize].nic as usize;
        let bytes = wire_bytes(f.payload, f.tcp);
        let wire_ns = (bytes as f64 * self.nics[nic].ns_per_byte).round() as u64;
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += u64::from(f.payload);
        match self.nics[nic].tx.xmit(self.now, f, wire_ns, bytes) {
            Xmit::Ring { done, irq, .. } => {
                self.tx_on_ring(nic, f, done, irq, bytes);
                true
            }
            Xmit::Queued => true,
            Xmit::Dropped => {
                self.stats.tx_ring_drops += 1;
                false
            }
        }
    }

    /// A frame went onto the ring: it reaches its destination after the switch and the
    /// destination's own link; its completion may interrupt.
    fn tx_on_ring(&mut self, nic: usize, f: TxFrame, done: Time, irq: bool, bytes: u64) {
        let src = &mut self.srcs[f.dst as usize];
        let ready = done + Time(self.nics[nic].cfg.switch_latency_ns);
        // Each client machine has its own link from the switch (as to it, `nic.rs`).
        let c = f.fb.flow() as usize % src.down_free.len();
        let begin = ready.max(src.down_free[c]);
        let at_client = begin + Time((bytes as f64 * src.link_ns_per_byte).round() as u64);
        src.down_free[c] = at_client;
        let arrive = at_client + Time(src.link_delay_ns);
        self.stats.tx_en_route += 1;
        let slot = self.feedback.put(f.dst, f.fb, f.payload);
        self.q.schedule(arrive, Ev::Feedback { slot });
        let gen = self.nics[nic].tx.drain.arm();
        self.q.schedule(done, Ev::TxDrain { nic: nic as u32, gen });
        if irq {
            self.q.schedule(done, Ev::TxIrq { nic: nic as u32 });
        }
    }

    /// A TX-done interrupt cause: raise the NIC's interrupt unless its clean-up is already on
    /// the way (then it is remembered and raised again once that is done).
    pub fn tx_irq_cause(&mut self, nic: usize) {
        let now = self.now;
        let tx = &mut self.nics[nic].tx;
        if tx.irq_active {
            tx.irq_pending = true;
            return;
        }
        if tx.done(now) == 0 {
            return;
        }
        tx.irq_active = true;
        let q = self.nics[nic].first_queue as usize;
        let cpu = self.route_irq(q);
        self.raise_irq(cpu, IrqSrc::NicTx(nic as u32));
    }

    /// The TX interrupt's entry has run on `cpu`.
    pub fn nic_tx_irq_handler(&mut self, cpu: usize, nic: usize) {
        match self.cfg.kernel.rx_path {
            RxPath::Legacy => {
                let n = self.nics[nic].tx.done(self.now);
                if n == 0 {
                    return self.tx_irq_end(cpu, nic);
                }
                let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
                self.next_unit(cpu, Work::TxCleanIrq { nic: nic as u32, n, rx_q: NONE }, CpuState::Hardirq, cost);
            }
            RxPath::Napi => {
                self.napi_schedule(cpu, Napi::Tx(nic as u32));
                self.irq_exit(cpu);
            }
        }
    }

    /// Before an RX interrupt of `q` handles frames: clean completed TX frames of its NIC first
    /// (one handler serves both causes). Returns true if a clean-up unit was started.
    pub fn tx_clean_in_rx_irq(&mut self, cpu: usize, q: usize) -> bool {
        let nic = self.queues[q].nic as usize;
        if self.nics[nic].first_queue as usize != q || self.nics[nic].tx.irq_active {
            return false;
        }
        let n = self.nics[nic].tx.done(self.now);
        if n == 0 {
            return false;
        }
        self.nics[nic].tx.irq_active = true;
        let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
        self.next_unit(cpu, Work::TxCleanIrq { nic: nic as u32, n, rx_q: q as u32 }, CpuState::Hardirq, cost);
        true
    }

    /// A hard-IRQ clean-up unit completed.
    pub fn tx_clean_irq_done(&mut self, cpu: usize, nic: usize, n: u32, rx_q: u32) {
        self.tx_clean(nic, n);
        if rx_q == NONE {
            return self.tx_irq_end(cpu, nic);
        }
        self.tx_cause_again(nic);
        self.cpus[cpu].irq_frames = 0;
        self.legacy_irq_next(cpu, rx_q as usize);
    }

    fn tx_irq_end(&mut self, cpu: usize, nic: usize) {
        self.tx_cause_again(nic);
        self.irq_exit(cpu);
    }

    /// The clean-up is over: a cause that came meanwhile interrupts again if frames are done.
    fn tx_cause_again(&mut self, nic: usize) {
        let tx = &mut self.nics[nic].tx;
        tx.irq_active = false;
        if std::mem::take(&mut tx.irq_pending) {
            self.tx_irq_cause(nic);
        }
    }

    /// NAPI: the next unit of a TX poll, or its end. Returns false when the poll is complete
    /// (taken off the list by the caller).
    pub fn tx_poll_next(&mut self, cpu: usize, nic: usize) -> bool {
        let n = self.nics[nic].tx.done(self.now);
        if n == 0 {
            let tx = &mut self.nics[nic].tx;
            tx.irq_active = false;
            tx.irq_pending = false;
            return false;
        }
        let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
        self.next_unit(cpu, Work::TxPoll { nic: nic as u32, n }, CpuState::Softirq, cost);
        true
    }

    /// Free `n` completed descriptors and refill the ring from the device queue.
    pub fn tx_clean(&mut self, nic: usize, n: u32) {
        let now = self.now;
        self.nics[nic].tx.clean(now, n);
        while let Some(f) = self.nics[nic].tx.next_queued() {
            let bytes = wire_bytes(f.payload, f.tcp);
            let wire_ns = (bytes as f64 * self.nics[nic].ns_per_byte).round() as u64;
            if let Xmit::Ring { done, irq, .. } = self.nics[nic].tx.ring_queued(now, wire_ns, bytes) {
                self.tx_on_ring(nic, f, done, irq, bytes);
            }
        }
    }

    /// Frames handed to the device and not yet at their destination (queued, on the ring
    /// before or after the wire, in the switch or on the far link).
    pub fn tx_in_flight(&self) -> u64 {
        self.nics.iter().map(|n| n.tx.queue.len() as u64).sum::<u64>() + self.stats.tx_en_route
    }
}
