//! The wire and the NIC: external sources' frames cross their own link and a switch to the port,
//! land in an RX ring chosen by RSS, and raise the queue's interrupt subject to moderation and the
//! IRQ routing policy. Frames from the host go back the same way to the sources.

use crate::sim::*;
use crate::types::*;
use hostsim_engine::{round_u64, Time};
use hostsim_workload::Feedback;

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
    fn flow_wire(&mut self, s: usize, flow: u32, hash_key: u64, nic: &Nic) -> FlowWire {
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

impl Host {
    pub fn source_wake(&mut self, s: usize, gen: u32) {
        if !self.srcs[s].timer.fires(gen) {
            return;
        }
        let mut out = std::mem::take(&mut self.emit_buf);
        out.clear();
        let src = &mut self.srcs[s];
        let next = src.src.wake(self.now, &mut src.rng, &mut out);
        if let Some(t) = next {
            let gen = self.srcs[s].timer.arm();
            self.q.schedule(t, Ev::SourceWake { src: s as u32, gen });
        }
        self.send_emits(s, &out);
        self.emit_buf = out;
    }

    pub fn source_feedback(&mut self, s: usize, fb: Feedback) {
        let mut out = std::mem::take(&mut self.emit_buf);
        out.clear();
        if let Some(t) = self.srcs[s].src.feedback(self.now, fb, &mut out) {
            let gen = self.srcs[s].timer.arm();
            self.q.schedule(t, Ev::SourceWake { src: s as u32, gen });
        }
        self.send_emits(s, &out);
        self.emit_buf = out;
    }

    /// Serialise emitted frames on the source's link, then through the switch onto the port.
    fn send_emits(&mut self, s: usize, out: &[hostsim_workload::Emit]) {
        for e in out {
            self.stats.offered += 1;
            let src = &mut self.srcs[s];
            let (link_ns, port_ns) = src.wire_ns(e.payload_bytes, e.tcp, &self.nics);
            let nic_i = src.nic as usize;
            let nic = &self.nics[nic_i];
            let FlowWire { client: c, dst_port, hash, queue } = src.flow_wire(s, e.flow, self.hash_key, nic);
            let start = self.now.max(src.link_free[c as usize]);
            let at_switch = start + Time(link_ns);
            src.link_free[c as usize] = at_switch;
            let delay = src.link_delay_ns;
            // IP forwarding: a packet no local socket takes follows the NIC's route, if any.
            let fwd = if self.port_sock[dst_port as usize] == NONE { nic.fwd_to } else { NONE };
            let pkt = self.alloc_pkt(Packet {
                src: s as u32,
                flow: e.flow,
                seq: e.seq,
                bytes: e.payload_bytes,
                tcp: e.tcp,
                dst_port,
                hash,
                queue,
                rx_cpu: NONE,
                t_sock: Time::ZERO,
                t_nic: Time::ZERO,
                fwd,
                live: true,
            }, PacketTcp { ack: e.ack, tag: e.tag, win: e.win, tx_segs: 0, flags: e.flags });
            if delay == 0 {
                self.switch_forward(pkt, nic_i, at_switch, port_ns);
            } else {
                // The frame is on a long link: it reaches the switch later, in time order with
                // everyone else's (the switch's output queue is kept in arrival order).
                self.q.schedule(at_switch + Time(delay), Ev::AtSwitch { pkt, nic: nic_i as u32 });
            }
        }
    }

    /// A frame reached the switch at `at_switch`: it queues for the port's wire (`port_ns` to
    /// cross it), or is dropped when the switch's buffer in front of the port is full.
    ///
    /// Always inlined (into `send_emits` and the `AtSwitch` event): as a call it cost the frame
    /// path a register save and restore around it (callgrind, livelock-400k).
    #[inline(always)]
    pub fn switch_forward(&mut self, pkt: PktId, nic_i: usize, at_switch: Time, port_ns: u64) {
        let nic = &self.nics[nic_i];
        let ready = at_switch + Time(nic.cfg.switch_latency_ns);
        let begin = ready.max(nic.rx_wire_free);
        let waited = begin.since(ready).ns();
        // Bytes queued ahead in the switch (no division when nothing waits: 0 bytes).
        let over = waited > 0 && (waited as f64 / nic.ns_per_byte) as u64 > nic.cfg.switch_buffer_bytes;
        let arrive = begin + Time(port_ns);
        if over {
            self.drop_pkt(pkt, DropPlace::Switch);
            return;
        }
        let nic = &mut self.nics[nic_i];
        nic.rx_wire_free = arrive;
        self.q.schedule(arrive, Ev::FrameArrive { pkt });
    }

    /// Send a frame from the host to source `s` (a reply or an ACK) through the device layer
    /// (`tx.rs`); the caller charges the output and driver costs.
    pub fn transmit(&mut self, s: u32, payload: u32, tcp: bool, fb: Feedback) {
        self.dev_queue_xmit(crate::txring::TxFrame { dst: s, payload, tcp, fb });
    }

    pub fn frame_arrive(&mut self, pkt: PktId) {
        self.pkts[pkt as usize].t_nic = self.now;
        let q = self.pkts[pkt as usize].queue as usize;
        let nq = &mut self.queues[q];
        if nq.ring.len() >= nq.ring_max as usize {
            self.drop_pkt(pkt, DropPlace::NicRing);
            return;
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
        if !self.queues[q].irq_enabled || self.queues[q].irq_active {
            return; // the common case under load: the handler or a poll is already on it
        }
        self.moderate(q, false);
    }

    /// NAPI: a TX-done cause of queue `q`'s vector (`tx.rs`): moderated like a received frame,
    /// but it does not count towards `coalesce_frames`: without a coalescing timer it raises at
    /// once (subject to ITR), with one it arms the timer.
    pub fn nic_tx_cause(&mut self, q: usize) {
        if !self.queues[q].irq_enabled || self.queues[q].irq_active {
            return; // the poll is scheduled or running: it cleans the ring, or re-checks at its end
        }
        self.moderate(q, true);
    }

    fn moderate(&mut self, q: usize, tx_cause: bool) {
        let nic = self.queues[q].nic as usize;
        let frames = self.nics[nic].cfg.coalesce_frames.max(1);
        let usecs = self.nics[nic].cfg.coalesce_usecs;
        let itr = self.nics[nic].cfg.itr_ints_per_s;
        let nq = &mut self.queues[q];
        if !nq.irq_enabled || nq.irq_active {
            return;
        }
        if itr > 0 {
            let earliest = nq.last_irq + Time(1_000_000_000 / u64::from(itr));
            if self.now < earliest {
                if !nq.coalesce.is_armed() {
                    let gen = nq.coalesce.arm();
                    self.q.schedule(earliest, Ev::Coalesce { q: q as u32, gen });
                }
                return;
            }
        }
        if nq.since_irq >= frames || (tx_cause && usecs == 0) {
            nq.coalesce.cancel();
            self.nic_raise(q);
        } else if usecs > 0 && !nq.coalesce.is_armed() {
            let gen = nq.coalesce.arm();
            self.q.schedule(self.now + Time::from_us(u64::from(usecs)), Ev::Coalesce { q: q as u32, gen });
        }
    }

    /// Assert queue `q`'s interrupt: the routing policy picks the CPU. With NAPI, completed
    /// frames on the queue's TX ring are a cause too (`tx.rs`).
    pub fn nic_raise(&mut self, q: usize) {
        let napi = self.cfg.kernel.rx_path == crate::config::RxPath::Napi;
        let nq = &mut self.queues[q];
        if !nq.irq_enabled || nq.irq_active || (nq.ring.is_empty() && !(napi && nq.tx.has_done(self.now))) {
            return;
        }
        nq.irq_active = true;
        nq.since_irq = 0;
        nq.last_irq = self.now;
        nq.coalesce.cancel();
        let cpu = self.route_irq(q);
        self.raise_irq(cpu, IrqSrc::Nic(q as u32));
    }

    pub fn route_irq(&mut self, q: usize) -> usize {
        if let Some(cpu) = self.queues[q].router.route_static() {
            return cpu;
        }
        let now = self.now;
        let jiffy = Time(self.tick_ns);
        let cpus = &self.cpus;
        let idle_enough = |c: usize| {
            cpus[c].stack.is_empty() && cpus[c].curr.is_none() && now.since(cpus[c].idle_since) > jiffy
        };
        let nic = self.queues[q].nic as usize;
        let interval = match self.nics[nic].cfg.balance_irq_interval_us {
            Some(us) => Time::from_us(us),
            None => Time(self.tick_ns * u64::from((self.cfg.kernel.hz / 50).max(1))),
        };
        self.queues[q].router.route(now, interval, cpus.len(), &mut self.rng_route, idle_enough)
    }

    /// The NIC queue's hard-IRQ entry has run: legacy handlers pull frames; NAPI schedules a poll.
    pub fn nic_irq_handler(&mut self, cpu: usize, q: usize) {
        match self.cfg.kernel.rx_path {
            crate::config::RxPath::Legacy => {
                if self.tx_clean_in_rx_irq(cpu, q) {
                    return; // TX clean-up first, then the RX frames (tx.rs)
                }
                self.cpus[cpu].irq_frames = 0;
                self.legacy_irq_next(cpu, q);
            }
            crate::config::RxPath::Napi => {
                self.queues[q].irq_enabled = false;
                self.napi_schedule(cpu, Napi::Queue(q as u32));
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
    /// burst once 301 are queued, `backlog.rs`) before this CPU's softirq can run.
    pub fn legacy_irq_next(&mut self, cpu: usize, q: usize) {
        if self.cpus[cpu].irq_frames < self.cfg.kernel.irq_frames_max {
            if let Some(pkt) = self.queues[q].ring.pop_front() {
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
        self.queues[q].irq_active = false;
        if self.queues[q].irq_enabled && !self.queues[q].ring.is_empty() {
            self.queues[q].since_irq = self.queues[q].ring.len() as u32;
            self.maybe_interrupt(q);
        }
        self.irq_exit(cpu);
    }
}
