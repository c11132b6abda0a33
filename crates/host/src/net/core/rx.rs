//! The receive path above the driver: per-CPU backlogs, the NET_RX softirq (NAPI polling with
//! weight and budget, backlog processing), ksoftirqd hand-over, and RPS/RFS steering.
//!
//! Modelled on net/core/dev.c: `netif_rx` (2.4, with throttle) and `enqueue_to_backlog`,
//! `net_rx_action`, `process_backlog`, `napi_complete`, `get_rps_cpu` and `rps_record_sock_flow`
//! (Linux 3.2), and `__do_softirq`'s restart limit in kernel/softirq.c.

use crate::hooks::Verdict;
use crate::kernel::cpu::{Napi, Work};
use crate::kernel::task::ProcState;
use crate::net::core::backlog::{Backlog, Enqueue};
use crate::policies::Xdp;
use crate::sim::*;
use crate::types::*;
use hostsim_engine::{round_u64, Time};

impl<M: Mechanisms> Host<M> {
    /// `get_rps_cpu`: the CPU whose backlog should take `pkt`, or None to process it here
    /// without a backlog (no RPS map and no flow-table entry).
    ///
    /// With RFS, a flow moves to the CPU of its reader's last recvmsg only when the CPU it
    /// currently uses has dequeued every packet enqueued for it (`input_queue_head` has passed the
    /// flow's `last_qtail`), so a table-steered flow is never reordered. As in Linux, a flow with
    /// no table entry yet (`RPS_NO_CPU`) switches at once: if an RPS map had steered its first
    /// packets elsewhere, that first switch can reorder them. Without a map it cannot.
    pub fn rps_target(&mut self, pkt: PktId) -> Option<usize> {
        if !self.cfg.kernel.rps {
            return None;
        }
        let hash = self.skb.pkts[pkt as usize].hash;
        if self.cfg.kernel.rfs {
            let mask = self.net.sock_flow.len() - 1;
            let idx = hash as usize & mask;
            let next = self.net.sock_flow[idx];
            let q = self.skb.pkts[pkt as usize].queue as usize;
            let (tcpu, last_qtail) = self.dev.queues[q].rflow[idx];
            let mut target = tcpu;
            let passed = tcpu == NONE || self.cpus[tcpu as usize].input_queue_head >= last_qtail;
            let drained = passed || !self.cfg.kernel.rfs_no_reorder_rule;
            if tcpu != next && !passed {
                if drained {
                    self.stats.rfs_unsafe_moves += 1;
                } else {
                    self.stats.rfs_moves_deferred += 1;
                }
            }
            if tcpu != next && drained {
                if tcpu != NONE && next != NONE {
                    self.stats.rfs_flow_moves += 1;
                }
                target = next;
                let head = if next == NONE { 0 } else { self.cpus[next as usize].input_queue_head };
                self.dev.queues[q].rflow[idx] = (next, head);
            }
            if target != NONE {
                return Some(target as usize);
            }
        }
        if self.net.rps_cpus.is_empty() {
            return None;
        }
        Some(self.net.rps_cpus[((u64::from(hash) * self.net.rps_cpus.len() as u64) >> 32) as usize] as usize)
    }

    /// Choose the RPS target now (stored in the packet; NONE = here, no backlog) and return the
    /// extra cost of steering, with the CPU whose backlog takes the packet (`cpu` itself when
    /// it has no target): the legacy handler's frame needs it, and without RPS it is known
    /// without reading the packet back.
    #[inline]
    pub fn rps_extra_cost_to(&mut self, cpu: usize, pkt: PktId) -> (u64, usize) {
        if !self.cfg.kernel.rps {
            self.skb.pkts[pkt as usize].rx_cpu = NONE;
            return (0, cpu);
        }
        let extra = self.rps_steer(cpu, pkt);
        let target = self.skb.pkts[pkt as usize].rx_cpu;
        (extra, if target == NONE { cpu } else { target as usize })
    }

    /// `rps_extra_cost_to` with RPS on: the target stored in the packet, the extra cost
    /// returned (out of line: without RPS every frame only stores NONE).
    #[inline(never)]
    fn rps_steer(&mut self, cpu: usize, pkt: PktId) -> u64 {
        let target = self.rps_target(pkt);
        self.skb.pkts[pkt as usize].rx_cpu = target.map_or(NONE, |t| t as u32);
        match target {
            Some(t) if t != cpu => self.cfg.profile.costs.ipi_ns,
            _ => 0,
        }
    }

    /// Legacy hard-IRQ handler hands a frame to `netif_rx` (unless a mechanism takes it: under
    /// paper 003's `functional`, into the driver CPU's local queue for the IP stage).
    pub fn netif_rx_from_irq(&mut self, cpu: usize, pkt: PktId) {
        if M::netif_rx(self, cpu, pkt) {
            return;
        }
        let target = self.skb.pkts[pkt as usize].rx_cpu;
        let target = if target == NONE { cpu } else { target as usize };
        self.enqueue_backlog(cpu, target, pkt);
    }

    /// NAPI poll with RPS hands a frame to `enqueue_to_backlog` of its target CPU.
    pub fn receive_skb(&mut self, cpu: usize, pkt: PktId) {
        let target = self.skb.pkts[pkt as usize].rx_cpu as usize;
        self.enqueue_backlog(cpu, target, pkt);
    }

    /// Priority level of a packet for priority-aware backlogs: the port → priority table that
    /// bind() fills and nice() updates (the highest priority among the socket's processes).
    pub(crate) fn packet_level(&self, pkt: PktId) -> i32 {
        let s = self.net.port_sock[self.skb.pkts[pkt as usize].dst_port as usize];
        if s == NONE {
            0
        } else {
            i32::from(self.net.socks[s as usize].level)
        }
    }

    /// Extra cost of the backlog policy's enqueue on `target` (PBQ: the branch, plus the
    /// priority lookup under high load), charged where the enqueue runs: the legacy hard-IRQ
    /// handler's frame (`drivers/net/nic.rs`) or the NAPI poll that steers the packet (`softirq_next`).
    #[inline]
    pub fn backlog_enqueue_cost(&self, target: usize) -> u64 {
        self.cpus[target].backlog.enqueue_cost_ns()
    }

    /// Extra cost of the enqueuing CPU's `limit` check on CPU `from` for an enqueue onto
    /// `target`'s backlog (flow limit: the table work once that backlog is at least half full).
    pub fn backlog_limit_cost(&self, from: usize, target: usize) -> u64 {
        self.cpus[from].backlog.limit_cost_ns(self.cpus[target].backlog.len())
    }

    /// `enqueue_to_backlog(skb, target)` run on CPU `from`.
    fn enqueue_backlog(&mut self, from: usize, target: usize, pkt: PktId) {
        // `qlen <= netdev_max_backlog && !skb_flow_limit(skb, qlen)`: the flow-limit table is the
        // enqueuing CPU's (`this_cpu_ptr`), the queue length the target's.
        // (The target's length and the hash are read only for a policy that can refuse.)
        let limited = self.cpus[from].backlog.may_limit() && {
            let target_len = self.cpus[target].backlog.len();
            let hash = self.skb.pkts[pkt as usize].hash;
            self.cpus[from].backlog.limit(hash, target_len)
        };
        if limited {
            self.stats.flow_limit_drops[from] += 1;
            return self.drop_pkt(pkt, DropPlace::FlowLimit);
        }
        let prio = if self.cpus[target].backlog.needs_priority() { self.packet_level(pkt) } else { 0 };
        let res = self.cpus[target].backlog.enqueue(pkt, prio);
        if let Enqueue::Evicted { victim } = res {
            // The victim leaves the queue without being processed: it counts as dequeued for
            // RFS's bookkeeping.
            self.cpus[target].input_queue_head += 1;
            self.drop_pkt(victim, DropPlace::PbqEvict);
        }
        match res {
            Enqueue::Dropped => self.drop_pkt(pkt, DropPlace::Backlog),
            Enqueue::Queued { .. } | Enqueue::Evicted { .. } => {
                let c = &mut self.cpus[target];
                c.input_queue_tail += 1;
                let tail = c.input_queue_tail;
                if self.cfg.kernel.rfs {
                    let p = &self.skb.pkts[pkt as usize];
                    let idx = p.hash as usize & (self.net.sock_flow.len() - 1);
                    let q = p.queue as usize;
                    if self.dev.queues[q].rflow[idx].0 == target as u32 {
                        self.dev.queues[q].rflow[idx].1 = tail;
                    }
                }
                if !self.cpus[target].backlog_scheduled {
                    self.napi_schedule(target, Napi::Backlog);
                    if target != from {
                        self.stats.ipis += 1;
                        self.raise_irq(target, IrqSrc::Ipi);
                    }
                }
            }
        }
    }

    /// Put a NAPI instance on `cpu`'s poll list and raise NET_RX there.
    pub fn napi_schedule(&mut self, cpu: usize, napi: Napi) {
        match napi {
            Napi::Backlog => self.cpus[cpu].backlog_scheduled = true,
            Napi::Queue(q) => self.dev.queues[q as usize].napi_scheduled = true,
        }
        let c = &mut self.cpus[cpu];
        if c.poll_list.is_empty() {
            c.napi_quota = 0;
        }
        c.poll_list.push_back(napi);
        c.softirq_pending = true;
    }

    /// Start one NET_RX pass (`__do_softirq` → `net_rx_action`). The top must be paused.
    pub fn softirq_begin(&mut self, cpu: usize) {
        let now = self.now();
        let c = &mut self.cpus[cpu];
        c.softirq_pending = false;
        c.sirq_budget = self.cfg.kernel.netdev_budget;
        c.sirq_pass_start = now;
        let cost = self.cfg.profile.costs.softirq_entry_ns;
        self.push_frame(cpu, Work::SoftirqEntry, CpuState::Softirq, cost);
    }

    /// A packet's protocol unit starts: an ACK to a sending connection is applied now (its
    /// segments are marked; `net/ipv4/tcp_output.rs`), anything else costs [`Host::proto_cost`].
    pub fn proto_begin(&mut self, pkt: PktId) -> u64 {
        match self.tcp_ack_conn(pkt) {
            Some(conn) => self.tcp_ack_begin(pkt, conn),
            // Sockets of event-driven programs (`net/ipv4/endpoint.rs`), else the simple sockets.
            None => match self.ep_proto_cost(pkt) {
                Some(cost) => cost,
                None if self.cfg.kernel.tcp_prequeue => {
                    self.tcp_prequeue_cost(pkt).unwrap_or_else(|| self.proto_cost(pkt))
                }
                None => self.proto_cost(pkt),
            },
        }
    }

    /// Protocol cost of a packet (IP + UDP/TCP input, checksum, wake-up, ACK; or IP forwarding
    /// and the driver's transmit). A GRO/RSC aggregate (`net/core/gro.rs`) is one skb: IP and TCP
    /// input, the wake-up and the ACK once (what GRO saves), the per-byte work for all its bytes.
    pub fn proto_cost(&self, pkt: PktId) -> u64 {
        let c = &self.cfg.profile.costs;
        let p = &self.skb.pkts[pkt as usize];
        if p.fwd != NONE {
            return self.forward_cost();
        }
        let agg = self.skb.has_frags(pkt);
        let bytes = if agg { self.skb.agg_size(pkt).0 } else { p.bytes };
        let mut cost = if p.tcp { c.tcp_rx_ns } else { c.ip_udp_rx_ns };
        cost += round_u64(f64::from(bytes) * c.rx_per_byte_ns);
        let s = self.net.port_sock[p.dst_port as usize];
        if s != NONE {
            let sock = &self.net.socks[s as usize];
            if !sock.waiters.is_empty() {
                cost += c.wakeup_ns;
            }
            if sock.tcp && (agg || self.tcp_will_ack(s as usize, pkt)) {
                cost += c.tcp_ack_send_ns + c.driver_tx_frame_ns;
            }
        }
        cost
    }

    /// The NAPI poll hands skb `pkt` (a frame, or an aggregate's first packet) up the stack
    /// (`netif_receive_skb`): to a backlog under RPS/RFS, else protocol processing here; one
    /// unit, `driver` ns of the driver's work included.
    fn napi_pass_up(&mut self, cpu: usize, pkt: PktId, driver: u64) {
        // Without RPS the packet stays here (its rx_cpu is set below), as
        // `rps_extra_cost_to` would say after storing NONE.
        let (extra, rx_cpu) = if self.cfg.kernel.rps {
            let extra = self.rps_steer(cpu, pkt);
            (extra, self.skb.pkts[pkt as usize].rx_cpu)
        } else {
            (0, NONE)
        };
        if rx_cpu != NONE {
            // enqueue_to_backlog runs here, in the poll: the enqueuing CPU's check
            // and the target policy's enqueue work are charged to this unit.
            let backlog = self.backlog_limit_cost(cpu, rx_cpu as usize) + self.backlog_enqueue_cost(rx_cpu as usize);
            let cost = driver + self.cfg.profile.costs.netif_rx_ns + extra + backlog;
            self.next_unit(cpu, Work::Poll { pkt, proto: false }, CpuState::Softirq, cost);
        } else {
            self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
            let cost = driver + self.proto_begin(pkt);
            self.next_unit(cpu, Work::Poll { pkt, proto: true }, CpuState::Softirq, cost);
        }
    }

    /// The segment GRO sees in frame `pkt`, None if GRO does not take it (not TCP data for a
    /// local TCP socket: UDP, pure ACKs, forwarded packets; `net/core/gro.rs`).
    fn gro_seg(&self, pkt: PktId) -> Option<crate::net::core::gro::GroSeg> {
        let p = &self.skb.pkts[pkt as usize];
        if !p.tcp || p.fwd != NONE || p.bytes == 0 {
            return None;
        }
        let t = &self.skb.pkts_tcp[pkt as usize];
        let s = self.net.port_sock[p.dst_port as usize];
        if t.ack.is_some() || s == NONE || !self.net.socks[s as usize].tcp {
            return None;
        }
        Some(crate::net::core::gro::GroSeg {
            pkt,
            key: (p.src, p.flow),
            seq: p.seq,
            len: p.bytes,
            flush_flag: t.flags != 0,
            chained: self.skb.has_frags(pkt),
        })
    }

    /// `net_rx_action`: the next unit of this pass, or the end of the pass.
    pub fn softirq_next(&mut self, cpu: usize) {
        let now = self.now();
        let k = &self.cfg.kernel;
        let weight = k.napi_weight;
        let time_max = Time::from_us(k.net_rx_time_max_us);
        loop {
            let c = &mut self.cpus[cpu];
            let Some(&napi) = c.poll_list.front() else {
                return self.softirq_end(cpu);
            };
            if let Napi::Queue(q) = napi {
                if let Some(head) = self.dev.queues[q as usize].gro_up.pop_front() {
                    // An aggregate GRO completed (`napi_gro_complete` → `netif_receive_skb`),
                    // within the driver's call for the frame that completed it: no budget of
                    // its own, before any check of the pass's limits.
                    return self.napi_pass_up(cpu, head, 0);
                }
            }
            if c.sirq_budget == 0 || now.since(c.sirq_pass_start) >= time_max {
                c.softirq_pending = true; // `softnet_break`: re-raise
                if matches!(napi, Napi::Queue(_)) {
                    self.cpumap_flush(cpu); // the driver's poll returns: `xdp_do_flush`
                }
                return self.softirq_end(cpu);
            }
            if c.napi_quota >= weight {
                // Used its whole weight: to the tail of the list, fresh quota (the next call
                // of a queue's poll cleans its TX ring again). The driver's poll returned:
                // `xdp_do_flush` (a no-op without a CPU map).
                if matches!(napi, Napi::Queue(_)) {
                    self.cpumap_flush(cpu);
                }
                let c = &mut self.cpus[cpu];
                c.poll_list.pop_front();
                c.poll_list.push_back(napi);
                c.napi_quota = 0;
                if let Napi::Queue(q) = napi {
                    self.dev.queues[q as usize].tx_polled = false;
                }
                continue;
            }
            let c = &mut self.cpus[cpu];
            match napi {
                Napi::Queue(q) => {
                    // `ixgbe_poll`: the vector's TX ring first, outside the RX budget (`net/core/tx.rs`).
                    if c.napi_quota == 0 && !self.dev.queues[q as usize].tx_polled {
                        self.dev.queues[q as usize].tx_polled = true;
                        if self.tx_poll_next(cpu, q as usize) {
                            return;
                        }
                    }
                    let Some(pkt) = self.dev.queues[q as usize].ring.pop_front() else {
                        let nq = &mut self.dev.queues[q as usize];
                        if let Some(g) = &mut nq.gro {
                            if !g.is_empty() {
                                // napi_complete → napi_gro_flush: every held aggregate goes up
                                // first (newest first), then the instance completes.
                                let mut up = Vec::new();
                                g.flush(&mut up);
                                self.stats.gro_aggregates += up.len() as u64;
                                nq.gro_up.extend(up);
                                continue;
                            }
                        }
                        // napi_complete: off the list, interrupts back on; TX frames completed
                        // since the clean-up are a pending cause. The re-enabled vector may
                        // assert at once (ITR interval already over), but the interrupt reaches
                        // this CPU only after net_rx_action's own bookkeeping: it is delivered
                        // as an event at this instant, never raised from inside this loop (that
                        // pushed a hard-IRQ frame under the pass's feet and lost the interrupt).
                        // veth_poll: `if (stats.xdp_redirect > 0) xdp_do_flush();` before
                        // napi_complete_done.
                        self.cpumap_flush(cpu);
                        let c = &mut self.cpus[cpu];
                        c.poll_list.pop_front();
                        c.napi_quota = 0;
                        self.napi_complete_queue(q as usize);
                        continue;
                    };
                    let c = &mut self.cpus[cpu];
                    c.sirq_budget -= 1;
                    c.napi_quota += 1;
                    self.poll_rx_counters(q as usize, pkt);
                    let nq = &self.dev.queues[q as usize];
                    let mut driver = self.cfg.profile.costs.driver_rx_frame_ns;
                    if nq.rsc.is_some() && self.skb.has_frags(pkt) {
                        // Each descriptor of an RSC aggregate is the driver's work (unmap, page
                        // reference, frag append); only the layers above see one skb.
                        driver *= u64::from(self.skb.agg_size(pkt).1);
                    }
                    if self.net.xdp.attached() {
                        // The program runs on the frame before anything else sees it.
                        driver += self.cfg.profile.mechanisms.xdp_run_ns;
                        if self.net.xdp.redirects() {
                            // XDP_REDIRECT to the CPU map: `bq_enqueue` (`net/core/cpumap.rs`).
                            driver += self.cfg.profile.mechanisms.cpumap_enqueue_ns;
                            self.next_unit(cpu, Work::XdpRedirect { pkt }, CpuState::Softirq, driver);
                            return;
                        }
                        if self.xdp_mech_verdict(pkt) == Verdict::Drop {
                            self.next_unit(cpu, Work::XdpDrop { pkt }, CpuState::Softirq, driver);
                            return;
                        }
                        driver += self.cfg.profile.mechanisms.xdp_skb_build_ns;
                    }
                    if self.dev.queues[q as usize].gro.is_some() {
                        if let Some(seg) = self.gro_seg(pkt) {
                            // napi_gro_receive: the driver's work now; what GRO completes goes
                            // up in the following units (`gro_up`).
                            let mut up = Vec::new();
                            let nq = &mut self.dev.queues[q as usize];
                            let g = nq.gro.as_mut().expect("checked above");
                            let r = g.receive(seg, &mut self.skb.frag_next, &mut up);
                            if r == crate::net::core::gro::GroResult::Merged {
                                self.stats.gro_merged += 1;
                            }
                            self.stats.gro_aggregates += up.len() as u64;
                            nq.gro_up.extend(up);
                            self.next_unit(cpu, Work::GroRx, CpuState::Softirq, driver);
                            return;
                        }
                    }
                    return self.napi_pass_up(cpu, pkt, driver);
                }
                Napi::Backlog => {
                    let Some(pkt) = self.cpus[cpu].backlog.dequeue() else {
                        let c = &mut self.cpus[cpu];
                        c.poll_list.pop_front();
                        c.napi_quota = 0;
                        c.backlog_scheduled = false;
                        continue;
                    };
                    let c = &mut self.cpus[cpu];
                    c.input_queue_head += 1;
                    c.sirq_budget -= 1;
                    c.napi_quota += 1;
                    self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
                    let mut cost = self.proto_begin(pkt);
                    if let Backlog::Mech(b) = &self.cpus[cpu].backlog {
                        cost += b.dequeue_cost_ns(); // the policy's work (PBQ: the branch, at high load the bitmap)
                    }
                    self.next_unit(cpu, Work::Proto { pkt }, CpuState::Softirq, cost);
                    return;
                }
            }
        }
    }

    /// A pass ended: restart, hand over to ksoftirqd, or return to what was interrupted.
    ///
    /// 2.4 (2.4.18-14 kernel/softirq.c `do_softirq`): restart only for softirqs newly raised
    /// during the pass (`if (pending & mask)`, `mask = ~pending` at entry), so a NET_RX that
    /// `net_rx_action` re-raised at `softnet_break` is left to `wakeup_softirqd(cpu)`, whose
    /// ksoftirqd_CPUn runs at nice 19 bound to this CPU (`ksoftirqd`: `set_user_nice(current, 19)`):
    /// `softirq_restart_max = 0`, `ksoftirqd_nice = 19`.
    fn softirq_end(&mut self, cpu: usize) {
        let f = self.pop_frame(cpu);
        debug_assert_eq!(f.map(|f| f.level()), Some(Level::Softirq));
        let under_ksoftirqd = self.cpus[cpu].sirq_ksoftirqd;
        if self.cpus[cpu].softirq_pending && !under_ksoftirqd {
            let c = &self.cpus[cpu];
            let k = &self.cfg.kernel;
            if c.sirq_restarts < k.softirq_restart_max
                && self.now().since(c.sirq_start) < Time::from_us(k.softirq_time_max_us)
            {
                self.cpus[cpu].sirq_restarts += 1;
                return self.softirq_begin(cpu);
            }
            self.wakeup_softirqd(cpu);
        }
        self.resume(cpu);
    }

    /// The driver takes frame `pkt` from queue `q`'s ring in a NAPI poll (in NET_RX or in the
    /// queue's kthread, `net/core/napi_thread.rs`): an RSC aggregate closes, the interrupt
    /// moderation's counters count it.
    pub fn poll_rx_counters(&mut self, q: usize, pkt: PktId) {
        let nq = &mut self.dev.queues[q];
        if let Some(r) = &mut nq.rsc {
            // The driver reads an RSC aggregate: it closes; its other descriptors
            // are freed with it (`drivers/net/rsc.rs`).
            r.close_head(pkt);
            if self.skb.has_frags(pkt) {
                nq.rsc_desc -= self.skb.agg_size(pkt).1 - 1;
            }
        }
        if let Some(d) = &mut nq.dyn_itr {
            // ixgbe_clean_rx_irq's `total_rx_bytes += skb->len` (IP packet: payload + headers).
            let p = &self.skb.pkts[pkt as usize];
            let bytes = if nq.rsc.is_some() { self.skb.agg_size(pkt).0 } else { p.bytes };
            d.rx.total_bytes += u64::from(bytes) + if p.tcp { 40 } else { 28 };
            d.rx.total_packets += 1;
        }
        if let Some(d) = &mut nq.net_dim {
            // The RQ's `stats->packets` and `stats->bytes` (IP packet length here).
            let p = &self.skb.pkts[pkt as usize];
            d.pkts += 1;
            d.bytes += u64::from(p.bytes) + if p.tcp { 40 } else { 28 };
        }
    }

    /// `napi_complete_done` of queue `q`'s NAPI instance (off the poll list or its kthread
    /// going to sleep): interrupts back on; TX frames completed since the clean-up are a
    /// pending cause. The re-enabled vector may assert at once (ITR interval already over), but
    /// the interrupt reaches the CPU only after the poll's own bookkeeping: it is delivered as
    /// an event at this instant, never raised from inside the poll.
    pub fn napi_complete_queue(&mut self, q: usize) {
        let now = self.now();
        let nq = &mut self.dev.queues[q];
        nq.napi_scheduled = false;
        nq.irq_enabled = true;
        nq.tx_polled = false;
        if let Some(d) = &mut nq.dyn_itr {
            // ixgbe_poll: `napi_complete(napi); if (rx_itr_setting & 1) ixgbe_set_itr()`.
            if d.set_itr() {
                nq.itr_ns = d.interval_ns();
            }
        }
        if let Some(d) = &mut nq.net_dim {
            // mlx5e_napi_poll: after napi_complete_done, `mlx5e_handle_rx_dim`.
            let s =
                crate::drivers::net::dim::Sample { time_ns: now.ns(), events: d.events, pkts: d.pkts, bytes: d.bytes };
            d.dim.sample(s);
        }
        if nq.tx.has_done(now) {
            self.post(now, Ev::TxIrq { q: q as u32 });
        }
    }

    pub fn wakeup_softirqd(&mut self, cpu: usize) {
        let k = self.cpus[cpu].ksoftirqd;
        if self.procs[k as usize].state == ProcState::KsoftirqdIdle {
            self.wake_up(k, cpu, true);
        }
    }

    /// A mechanism's program at the driver's entry point decides frame `pkt` (`Xdp::Mech`; the
    /// kernel's own programs pass every frame).
    #[inline]
    pub fn xdp_mech_verdict(&mut self, pkt: PktId) -> Verdict {
        if self.net.xdp != Xdp::Mech {
            return Verdict::Pass;
        }
        let level = if self.mech.xdp_needs_priority() { self.packet_level(pkt) as u8 } else { 0 };
        let now = self.now().ns();
        self.mech.xdp_verdict(now, level)
    }
}
