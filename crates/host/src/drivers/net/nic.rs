//! The NIC: frames from the wire (`wire/`) land in an RX ring chosen by RSS and raise the queue's
//! interrupt subject to moderation and the IRQ routing policy; the driver's interrupt handler
//! then hands them to the receive path (`net/core/rx.rs`).

use crate::drivers::net::rsc::RscArrive;
use crate::kernel::cpu::{Napi, Work};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;

impl<M: Mechanisms> Host<M> {
    pub fn frame_arrive(&mut self, pkt: PktId) {
        self.skb.pkts[pkt as usize].t_nic = self.now();
        let mut q = self.skb.pkts[pkt as usize].queue as usize;
        let nic = self.dev.queues[q].nic as usize;
        if let Some(fd) = &self.dev.nics[nic].fdir {
            // Flow Director: a TCP flow with a filter goes to the filter's queue, not RSS's.
            let p = &mut self.skb.pkts[pkt as usize];
            if p.tcp {
                if let Some(fq) = fd.lookup(p.hash) {
                    q = (self.dev.nics[nic].first_queue + fq) as usize;
                    p.queue = q as u32;
                }
            }
        }
        let nq = &mut self.dev.queues[q];
        if nq.ring.len() + nq.rsc_desc as usize >= nq.ring_max as usize {
            self.drop_pkt(pkt, DropPlace::NicRing);
            return;
        }
        if let Some(r) = &mut nq.rsc {
            let p = &self.skb.pkts[pkt as usize];
            if p.tcp {
                // RSC (`rsc.rs`): a data segment without SYN/FIN may join its flow's open aggregate.
                let t = &self.skb.pkts_tcp[pkt as usize];
                let eligible = t.ack.is_none() && t.flags == 0;
                if r.arrive(pkt, (p.src, p.flow), p.seq, p.bytes, eligible, &mut self.skb.frag_next)
                    == RscArrive::Joined
                {
                    nq.rsc_desc += 1;
                    self.stats.rsc_joined += 1;
                    nq.since_irq += 1;
                    self.maybe_interrupt(q);
                    return;
                }
            }
        }
        nq.ring.push_back(pkt);
        nq.since_irq += 1;
        self.maybe_interrupt(q);
    }

    /// Interrupt moderation after a received frame: raise now, or arm the coalescing timer.
    /// With throttling (ITR) an interrupt never follows the previous one by less than 1/ITR
    /// seconds.
    #[inline]
    fn maybe_interrupt(&mut self, q: usize) {
        if !self.dev.queues[q].irq_enabled || self.dev.queues[q].irq_active {
            return; // the common case under load: the handler or a poll is already on it
        }
        self.moderate(q, false);
    }

    /// NAPI: a TX-done cause of queue `q`'s vector (`net/core/tx.rs`): moderated like a received frame,
    /// but it does not count towards `coalesce_frames`: without a coalescing timer it raises at
    /// once (subject to ITR), with one it arms the timer.
    pub fn nic_tx_cause(&mut self, q: usize) {
        if !self.dev.queues[q].irq_enabled || self.dev.queues[q].irq_active {
            return; // the poll is scheduled or running: it cleans the ring, or re-checks at its end
        }
        self.moderate(q, true);
    }

    fn moderate(&mut self, q: usize, tx_cause: bool) {
        let now = self.now();
        let nic = self.dev.queues[q].nic as usize;
        let frames = self.dev.nics[nic].cfg.coalesce_frames.max(1);
        let usecs = self.dev.nics[nic].cfg.coalesce_usecs;
        let nq = &mut self.dev.queues[q];
        if !nq.irq_enabled || nq.irq_active {
            return;
        }
        if let Some(d) = &nq.net_dim {
            // net_dim's (usec, pkts) (`dim.rs`): an interrupt at `pkts` pending completions or
            // when the timer runs out; in CQE mode each new completion restarts the timer, in
            // EQE mode it runs from the previous interrupt.
            let (usec, pkts) = d.dim.moderation();
            let period = Time::from_us(u64::from(usec));
            if nq.since_irq >= pkts || (!d.dim.cqe_mode && now >= nq.last_irq + period) {
                nq.coalesce.cancel();
                self.nic_raise(q);
                return;
            }
            let at = if d.dim.cqe_mode { now + period } else { nq.last_irq + period };
            if d.dim.cqe_mode || !nq.coalesce.is_armed() {
                let gen = nq.coalesce.arm();
                self.post(at, Ev::Coalesce { q: q as u32, gen });
            }
            return;
        }
        if nq.itr_ns > 0 {
            let earliest = nq.last_irq + Time(nq.itr_ns);
            if now < earliest {
                if !nq.coalesce.is_armed() {
                    let gen = nq.coalesce.arm();
                    self.post(earliest, Ev::Coalesce { q: q as u32, gen });
                }
                return;
            }
        }
        if nq.since_irq >= frames || (tx_cause && usecs == 0) {
            nq.coalesce.cancel();
            self.nic_raise(q);
        } else if usecs > 0 && !nq.coalesce.is_armed() {
            let gen = nq.coalesce.arm();
            self.post(now + Time::from_us(u64::from(usecs)), Ev::Coalesce { q: q as u32, gen });
        }
    }

    /// Assert queue `q`'s interrupt: the routing policy picks the CPU. With NAPI, completed
    /// frames on the queue's TX ring are a cause too (`net/core/tx.rs`).
    pub fn nic_raise(&mut self, q: usize) {
        let now = self.now();
        let napi = self.cfg.kernel.rx_path == crate::config::RxPath::Napi;
        let nq = &mut self.dev.queues[q];
        if !nq.irq_enabled || nq.irq_active || (nq.ring.is_empty() && !(napi && nq.tx.has_done(now))) {
            return;
        }
        nq.irq_active = true;
        nq.since_irq = 0;
        if let Some(r) = &mut nq.rsc {
            r.close_all(); // the interrupt reports the open aggregates (`rsc.rs`)
        }
        if let Some(d) = &mut nq.net_dim {
            d.events = d.events.wrapping_add(1); // mlx5e_completion_event: `cq->event_ctr++`
        }
        nq.last_irq = now;
        nq.coalesce.cancel();
        let cpu = self.route_irq(q);
        self.raise_irq(cpu, IrqSrc::Nic(q as u32));
    }

    pub fn route_irq(&mut self, q: usize) -> usize {
        if let Some(cpu) = self.dev.queues[q].router.route_static() {
            return cpu;
        }
        let now = self.now();
        let tick = self.tick_ns();
        let test = self.cfg.kernel.balance_irq_idle;
        let cpus = &self.cpus;
        // `IDLE_ENOUGH` looks only at `current` (the idle task or not), never at the interrupt
        // work a CPU is doing: `kernel/irq/route.rs` `idle_enough`.
        let idle_enough = |c: usize| {
            crate::kernel::irq::route::idle_enough(
                test,
                cpus[c].curr.is_none(),
                now.ns() / tick,
                cpus[c].idle_since.ns() / tick,
            )
        };
        let nic = self.dev.queues[q].nic as usize;
        let interval = match self.dev.nics[nic].cfg.balance_irq_interval_us {
            Some(us) => Time::from_us(us),
            None => Time(self.tick_ns() * u64::from((self.cfg.kernel.hz / 50).max(1))),
        };
        self.dev.queues[q].router.route(now, interval, cpus.len(), &mut self.dev.rng_route, idle_enough)
    }

    /// The NIC queue's hard-IRQ entry has run: legacy handlers pull frames; NAPI schedules a poll.
    pub fn nic_irq_handler(&mut self, cpu: usize, q: usize) {
        match self.cfg.kernel.rx_path {
            crate::config::RxPath::Legacy => {
                if self.tx_clean_in_rx_irq(cpu, q) {
                    return; // TX clean-up first, then the RX frames (net/core/tx.rs)
                }
                self.cpus[cpu].irq_frames = 0;
                self.legacy_irq_next(cpu, q);
            }
            crate::config::RxPath::Napi => {
                self.dev.queues[q].irq_enabled = false;
                if self.dev.queues[q].napi_thread != NONE {
                    // Threaded NAPI: wake the queue's kthread (`net/core/napi_thread.rs`).
                    self.napi_thread_schedule(cpu, q);
                } else {
                    self.napi_schedule(cpu, Napi::Queue(q as u32));
                }
                self.nic_irq_end(cpu, q);
            }
        }
    }

    /// Legacy handler loop: one frame per unit (driver + netif_rx), up to `irq_frames_max`.
    ///
    /// Intel's non-NAPI e1000 (4.x) `e1000_intr`: `while (loop_count > 0 && (icr = ICR) != 0)
    /// { e1000_clean_rx_irq(); e1000_clean_tx_irq(); loop_count--; }` with loop_count =
    /// E1000_MAX_INTR = 10, each clean taking every ready descriptor (ring 256): at most 2,560
    /// frames, all through `netif_rx` into this CPU's backlog (2.4's throttle drops the rest of a
    /// burst once 301 are queued, `net/core/backlog.rs`) before this CPU's softirq can run.
    pub fn legacy_irq_next(&mut self, cpu: usize, q: usize) {
        if self.cpus[cpu].irq_frames < self.cfg.kernel.irq_frames_max {
            if let Some(pkt) = self.dev.queues[q].ring.pop_front() {
                let c = &self.cfg.profile.costs;
                let mut cost = c.driver_rx_frame_ns + c.netif_rx_ns;
                let (extra, target) = self.rps_extra_cost_to(cpu, pkt);
                cost += extra;
                cost += self.backlog_enqueue_cost(target);
                self.next_unit(cpu, Work::IrqFrame { q: q as u32, pkt }, CpuState::Hardirq, cost);
                return;
            }
        }
        self.nic_irq_end(cpu, q);
    }

    /// The handler returns: the line is free again; frames left in the ring interrupt anew.
    fn nic_irq_end(&mut self, cpu: usize, q: usize) {
        self.dev.queues[q].irq_active = false;
        if self.dev.queues[q].irq_enabled && !self.dev.queues[q].ring.is_empty() {
            self.dev.queues[q].since_irq = self.dev.queues[q].ring.len() as u32;
            self.maybe_interrupt(q);
        }
        self.irq_exit(cpu);
    }
}
