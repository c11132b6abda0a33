//! HiTactix/Symbiose's functional split on the host (`kernel.concurrency = "functional"`; rules
//! and sources in `mod.rs`, paper 003 §2-§3 and Fig. 2).
//!
//! - The driver CPU's receive interrupt puts each frame in a buffer from the shared pool and on
//!   its local output queue for the IP stage (`symbiose_rx`, cost: the legacy handler's
//!   `driver_rx_frame_ns + netif_rx_ns`, the latter standing for the local enqueue).
//! - Every `exchange_period_us`, each CPU's polling thread takes the global queue for its CPU
//!   (one locked splice) into its local input queue and wakes the CPU's stage thread; then its
//!   bulk-send thread moves its local output queue into the global queues (one locked splice).
//!   Both are SCHED_FIFO kernel threads pinned to their CPU; a wake costs a context switch.
//! - The stage thread (SCHED_FIFO, below the periodic threads: notes 003 §6.10) runs each
//!   buffer of the local input queue through the CPU's stage, then sleeps until woken again.
//! - IP stage (on `ip_cpu`): `ip_forward_ns` and the local hand-on to the transmit stage
//!   (`netif_rx_ns`), or for a local socket the usual protocol cost and delivery.
//! - Transmit stage (on `driver_cpu`): ARP and the driver's transmit of the frame to its sink.
//! - A stage on a CPU other than the one that last touched the buffer pays `remote_packet_ns`
//!   (the cache model's cost for packet lines written by another CPU), as in the rest of the
//!   model. There is no lock and no IPI per packet.

use crate::kernel::cpu::{Frame, Work};
use crate::kernel::task::{Pending, ProcState};
use crate::mechanisms::takeuchi_symbiose::{Stage, SymbioseThread};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;

impl Host {
    /// Arm the first activation of every periodic thread (period boundaries are multiples of
    /// the period, from 0).
    pub fn symbiose_start(&mut self) {
        for pid in 0..self.procs.len() {
            if matches!(self.procs[pid].symbiose, Some(SymbioseThread::Poll | SymbioseThread::Send)) {
                let gen = self.procs[pid].timer.arm();
                self.q.schedule(Time::ZERO, Ev::ProcTimer { pid: pid as Pid, gen });
            }
        }
    }

    /// The driver CPU's receive interrupt hands a frame to the IP stage (local queue).
    pub fn symbiose_rx(&mut self, cpu: usize, pkt: PktId) {
        let sym = self.conc.symbiose_mut().expect("functional");
        if !sym.pool_alloc() {
            return self.drop_pkt(pkt, DropPlace::BufferPool);
        }
        sym.hand_on(cpu, pkt, Stage::Ip);
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
    }

    /// A Symbiose thread's unit completed (or it was woken): apply the effect, run the next.
    pub fn symbiose_step(&mut self, cpu: usize, pid: Pid, th: SymbioseThread) {
        if th == SymbioseThread::Stages {
            return self.stages_step(cpu, pid);
        }
        let splice_ns = self.cfg.profile.mechanisms.symbiose_splice_ns;
        match self.procs[pid as usize].pending {
            Pending::Slept | Pending::Start => return self.symbiose_unit(cpu, pid, Pending::Exchange, splice_ns),
            Pending::Exchange => {
                let sym = self.conc.symbiose_mut().expect("functional");
                match th {
                    SymbioseThread::Poll => sym.poll(cpu),
                    SymbioseThread::Send => sym.bulk_send(cpu),
                    SymbioseThread::Stages => unreachable!(),
                };
            }
            p => unreachable!("Symbiose periodic thread in state {p:?}"),
        }
        if th == SymbioseThread::Poll {
            let sym = self.conc.symbiose().expect("functional");
            if sym.input_waiting(cpu) {
                let worker = sym.stage_thread[cpu];
                self.wake_up(worker, cpu, true);
            }
        }
        self.symbiose_sleep(cpu, pid);
    }

    /// The stage thread: finish the buffer it ran, then take the next one or sleep until the
    /// polling thread brings more.
    fn stages_step(&mut self, cpu: usize, pid: Pid) {
        match self.procs[pid as usize].pending {
            Pending::Stage { pkt, stage } => self.stage_done(cpu, pkt, stage),
            Pending::Slept | Pending::Start => {}
            p => unreachable!("Symbiose stage thread in state {p:?}"),
        }
        if let Some((pkt, stage)) = self.conc.symbiose_mut().expect("functional").next_in(cpu) {
            let cost = self.stage_cost(cpu, pkt, stage);
            return self.symbiose_unit(cpu, pid, Pending::Stage { pkt, stage }, cost);
        }
        let p = &mut self.procs[pid as usize];
        p.pending = Pending::Slept;
        p.state = ProcState::Sleeping;
        self.schedule(cpu);
    }

    /// Run the thread's next unit (kernel context; `pending` says what it is, and an
    /// `Exchange` unit needs the global-queue lock, see `kernel/locking/gate.rs`).
    fn symbiose_unit(&mut self, cpu: usize, pid: Pid, pending: Pending, cost: u64) {
        self.procs[pid as usize].pending = pending;
        if self.cpus[cpu].need_resched {
            let p = &mut self.procs[pid as usize];
            p.unit_state = CpuState::System;
            p.unit_remaining = cost;
            let f = self.cpus[cpu].stack.last_mut().expect("frame");
            *f = Frame { work: Work::ProcUnit, state: CpuState::System, remaining: cost };
            return self.schedule(cpu);
        }
        self.next_unit(cpu, Work::ProcUnit, CpuState::System, cost);
    }

    /// The activation is over: sleep until the next period boundary, or start the next
    /// activation at once if that boundary has passed (one missed activation is kept).
    fn symbiose_sleep(&mut self, cpu: usize, pid: Pid) {
        let period = self.conc.symbiose().expect("functional").period_ns;
        let next = (self.procs[pid as usize].period_start_ns / period + 1) * period;
        if next <= self.q.now().ns() {
            // Overran: the missed boundaries count as one activation, run now as that of the
            // latest boundary passed (no catching up on every missed one).
            self.procs[pid as usize].period_start_ns = self.q.now().ns() / period * period;
            let splice_ns = self.cfg.profile.mechanisms.symbiose_splice_ns;
            return self.symbiose_unit(cpu, pid, Pending::Exchange, splice_ns);
        }
        let p = &mut self.procs[pid as usize];
        p.period_start_ns = next;
        p.pending = Pending::Slept;
        p.state = ProcState::Sleeping;
        let gen = p.timer.arm();
        self.q.schedule(Time(next), Ev::ProcTimer { pid, gen });
        self.schedule(cpu);
    }

    /// Extra cost of touching a packet last processed on another CPU (cache lines written
    /// there), with the modelled misses.
    fn remote_touch(&mut self, cpu: usize, pkt: PktId) -> u64 {
        let last = self.skb.pkts[pkt as usize].rx_cpu;
        if last == NONE || last as usize == cpu {
            return 0;
        }
        let cache = self.cfg.profile.cache;
        self.stats.llc_load_misses += cache.remote_packet_llc_load_misses;
        self.stats.llc_store_misses += cache.remote_packet_llc_store_misses;
        cache.remote_packet_ns
    }

    fn stage_cost(&mut self, cpu: usize, pkt: PktId, stage: Stage) -> u64 {
        let remote = self.remote_touch(cpu, pkt);
        let c = &self.cfg.profile.costs;
        remote
            + match stage {
                Stage::Ip if self.skb.pkts[pkt as usize].fwd != NONE => c.ip_forward_ns + c.netif_rx_ns,
                Stage::Ip => self.proto_cost(pkt),
                Stage::Xmit => self.xmit_cost(),
            }
    }

    fn stage_done(&mut self, cpu: usize, pkt: PktId, stage: Stage) {
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
        let fwd = self.skb.pkts[pkt as usize].fwd != NONE;
        let sym = self.conc.symbiose_mut().expect("functional");
        match stage {
            Stage::Ip if fwd => sym.hand_on(cpu, pkt, Stage::Xmit),
            Stage::Ip => {
                sym.pool_free();
                self.protocol_deliver(cpu, pkt);
            }
            Stage::Xmit => {
                sym.pool_free();
                self.forward_xmit(pkt);
            }
        }
    }
}
