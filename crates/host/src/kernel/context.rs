//! Execution contexts: what a CPU runs, nested, with preemption and exact time accounting (the
//! CPU's state is `kernel/cpu.rs`).
//!
//! Each CPU has a stack of frames: at most one process frame at the bottom, then at most one
//! softirq frame, then hard-IRQ frames (one at a time: an interrupt arriving during a handler
//! waits in `pending_irqs`, as a masked local APIC would hold it). Only the top frame runs. A
//! frame executes *units* of work with a cost in ns; the unit's effect (a packet enqueued, a
//! process woken, …) happens when the unit completes. An interrupt pauses the top frame, keeping
//! its remaining cost, and the frame resumes when the interrupt returns.
//!
//! Accounting: at every change of what runs, the time since the last change is added to the
//! state of what ran (`hardirq`, `softirq`, `system`, `user`, `spin`, `idle`), so the states sum
//! exactly to elapsed time on every CPU.

use crate::kernel::cpu::{Cpu, Frame, Work};
use crate::kernel::task::{Pending, ProcState};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;

impl<M: Mechanisms> Host<M> {
    /// Close the current accounting segment of `cpu` at `now`.
    #[inline(always)]
    pub fn account(&mut self, cpu: usize) {
        let now = self.now();
        let c = &mut self.cpus[cpu];
        let dt = now.since(c.seg_start).ns();
        if dt == 0 {
            return;
        }
        c.acct_ns[c.acct_state as usize] += dt;
        let state = c.acct_state;
        let curr = c.curr;
        let seg_start = c.seg_start;
        c.seg_start = now;
        if let Some(pid) = curr {
            self.account_task(cpu, pid, state, dt, seg_start);
        }
    }

    /// `account`'s share for the task on `cpu` (out of line: the CPU-state part above runs at
    /// every change of what runs and is inlined; this part only with a task on the CPU).
    #[inline(never)]
    fn account_task(&mut self, cpu: usize, pid: Pid, state: CpuState, dt: u64, seg_start: Time) {
        let top = self.cpus[cpu].stack.last().map(|f| f.level());
        let ksoftirqd_work = state == CpuState::Softirq && self.cpus[cpu].sirq_ksoftirqd;
        if top == Some(Level::Process) || ksoftirqd_work {
            // Task context: the process's own time (ksoftirqd running softirqs is a task).
            self.charge_process(pid, dt, true);
            if state == CpuState::System && self.in_poll(cpu, pid) {
                // Kernel time by function, as a profiler sees it: poll()'s share.
                self.stats.poll_ns += dt;
            }
            if top == Some(Level::Process) {
                self.mech_account(pid, seg_start);
            }
        } else if !self.cfg.kernel.irq_time_accounting {
            // Without CONFIG_IRQ_TIME_ACCOUNTING the interrupted task's clock includes the
            // interrupt's time: it advances vruntime but is not the task's CPU time.
            self.charge_process(pid, dt, false);
        }
    }

    /// A mechanism's rule about a task's own time (paper 002: only in its slots). Out of line:
    /// inlined, the registry's hooks made `account_task` save and restore more registers on every
    /// segment (callgrind, livelock-150k: ~0.5 M instructions).
    #[inline(never)]
    fn mech_account(&mut self, pid: Pid, seg_start: Time) {
        let now = self.now();
        self.mech.account(pid, seg_start, now);
    }

    /// Start (or resume) the top frame of `cpu`, or go idle. Under a kernel lock (`kernel/locking/gate.rs`)
    /// the frame may first have to take the lock (its cost is added to the unit) or spin.
    pub fn start_top(&mut self, cpu: usize) {
        self.start_top_inline(cpu);
    }

    /// `start_top`'s body, inlined into `next_unit`, which every packet's units go through
    /// (callgrind, livelock-400k: the call's register saves and restores were ~16 instructions
    /// per unit).
    #[inline(always)]
    fn start_top_inline(&mut self, cpu: usize) {
        self.account(cpu);
        // Without a kernel lock the gate is always open at no cost (`lock_gate`'s first test,
        // done here: the call cost ~17 instructions per unit, callgrind livelock-400k).
        debug_assert_eq!(self.conc.has_lock(), self.kernel_lock().is_some());
        let extra = if !self.conc.has_lock() {
            0
        } else {
            match self.lock_gate(cpu) {
                Some(extra) => extra,
                None => return self.spin(cpu),
            }
        };
        let now = self.now();
        let c = &mut self.cpus[cpu];
        let Some(f) = c.stack.last_mut() else {
            c.acct_state = CpuState::Idle;
            c.done.cancel();
            return;
        };
        f.remaining += extra;
        let (state, remaining) = (f.state, f.remaining);
        run_top(&mut self.q, c, cpu, now, state, remaining);
    }

    /// Pause the running top frame (its remaining cost shrinks by what it ran). A spinning CPU
    /// stops spinning (its frame has not started).
    pub fn pause_top(&mut self, cpu: usize) {
        if self.cpus[cpu].spinning {
            return self.stop_spin(cpu);
        }
        let ran = self.now().since(self.cpus[cpu].run_start).ns();
        self.account(cpu);
        let c = &mut self.cpus[cpu];
        if let Some(f) = c.stack.last_mut() {
            f.remaining = f.remaining.saturating_sub(ran);
        }
        c.done.cancel();
    }

    /// Replace the top frame's unit (it has completed) with a new one and run it.
    pub fn next_unit(&mut self, cpu: usize, work: Work, state: CpuState, cost: u64) {
        if self.quick_start(cpu, Frame { work, state, remaining: cost }, false) {
            return;
        }
        self.trace_end_top(cpu);
        let f = self.cpus[cpu].stack.last_mut().expect("next_unit on an empty stack");
        f.work = work;
        f.state = state;
        f.remaining = cost;
        self.trace_begin_top(cpu);
        self.start_top_inline(cpu);
    }

    /// A kernel thread's next unit of system time (`pending` says what it finishes): run it
    /// on `cpu`, or, when a reschedule is pending there, leave it as the thread's saved unit and
    /// switch (the XDP CPU map's and threaded NAPI's kthreads check `need_resched` between
    /// frames, as their Linux loops call `cond_resched`).
    pub fn kthread_unit(&mut self, cpu: usize, pid: Pid, pending: Pending, cost: u64) {
        self.procs[pid as usize].pending = pending;
        if self.cpus[cpu].need_resched {
            let p = &mut self.procs[pid as usize];
            p.unit_state = CpuState::System;
            p.unit_remaining = cost;
            self.trace_end_top(cpu);
            let f = self.cpus[cpu].stack.last_mut().expect("frame");
            *f = Frame { work: Work::ProcUnit, state: CpuState::System, remaining: cost };
            return self.schedule(cpu);
        }
        self.next_unit(cpu, Work::ProcUnit, CpuState::System, cost);
    }

    /// Push a new frame on top (the current top must already be paused) and run it.
    pub fn push_frame(&mut self, cpu: usize, work: Work, state: CpuState, cost: u64) {
        if self.quick_start(cpu, Frame { work, state, remaining: cost }, true) {
            return;
        }
        self.cpus[cpu].stack.push(Frame { work, state, remaining: cost });
        self.trace_begin_top(cpu);
        self.start_top(cpu);
    }

    /// Put `f` on top of `cpu` (`push`: as a new frame, else in place of the top frame) and
    /// start it, if that needs nothing of `start_top`'s general path: no trace to write, no
    /// kernel lock to take, and the CPU's time already accounted up to now (the unit that
    /// completed or the frame that was paused closed the segment at this instant, so `account`
    /// would do nothing). Returns false, having done nothing, otherwise. Callgrind,
    /// livelock-400k: the general path re-tested the trace twice, reloaded the CPU and its
    /// frame around `account` and added the lock's zero cost with an overflow check, ~30
    /// instructions per unit.
    #[inline(always)]
    fn quick_start(&mut self, cpu: usize, f: Frame, push: bool) -> bool {
        if self.trace.is_some() || self.conc.has_lock() {
            return false;
        }
        let now = self.now();
        let c = &mut self.cpus[cpu];
        if now.since(c.seg_start).ns() != 0 {
            return false;
        }
        if push {
            c.stack.push(f);
        } else {
            *c.stack.last_mut().expect("next_unit on an empty stack") = f;
        }
        run_top(&mut self.q, c, cpu, now, f.state, f.remaining);
        true
    }

    /// Pop the top frame (its unit completed, or its process leaves the CPU).
    pub fn pop_frame(&mut self, cpu: usize) -> Option<Frame> {
        self.trace_end_top(cpu);
        self.cpus[cpu].stack.pop()
    }

    /// The trace's label of the unit `work` on `cpu` (see `trace_labels`).
    pub(crate) fn trace_label(&self, cpu: usize, work: Work) -> u32 {
        let nq = self.dev.queues.len() as u32;
        let nn = self.dev.nics.len() as u32;
        match work {
            Work::IrqEntry(IrqSrc::Tick) => 0,
            Work::IrqEntry(IrqSrc::Ipi) => 1,
            Work::SoftirqEntry
            | Work::Poll { .. }
            | Work::Proto { .. }
            | Work::TxPoll { .. }
            | Work::XdpDrop { .. }
            | Work::XdpRedirect { .. }
            | Work::GroRx => 2,
            Work::IrqEntry(IrqSrc::Nic(q)) | Work::IrqFrame { q, .. } => 3 + q,
            Work::IrqEntry(IrqSrc::NicTx(q)) | Work::TxCleanIrq { q, .. } => 3 + nq + self.dev.queues[q as usize].nic,
            Work::Switch | Work::ProcUnit => match self.cpus[cpu].curr {
                Some(pid) => 3 + nq + nn + pid,
                None => 3 + nq + nn + self.procs.len() as u32,
            },
        }
    }

    /// The labels a trace slice can have, indexed by `trace_label`.
    pub fn trace_labels(&self) -> Vec<String> {
        let mut l = vec!["tick".to_string(), "ipi".to_string(), "NET_RX".to_string()];
        for nq in &self.dev.queues {
            let nic = &self.dev.nics[nq.nic as usize];
            l.push(format!("irq {}-q{}", nic.cfg.name, l.len() as u32 - 3 - nic.first_queue));
        }
        l.extend(self.dev.nics.iter().map(|n| format!("irq {}-tx", n.cfg.name)));
        l.extend(self.procs.iter().map(|p| p.name.clone()));
        l.push("?".to_string());
        l
    }

    /// Trace: the top frame's unit starts now.
    #[inline]
    pub fn trace_begin_top(&mut self, cpu: usize) {
        if self.trace.is_some() {
            self.trace_begin_top_traced(cpu);
        }
    }

    /// `trace_begin_top` with a trace (out of line: an untraced run only tests `self.trace`).
    #[cold]
    #[inline(never)]
    fn trace_begin_top_traced(&mut self, cpu: usize) {
        let depth = self.cpus[cpu].stack.len();
        let f = *self.cpus[cpu].stack.last().expect("a frame to trace");
        let label = self.trace_label(cpu, f.work);
        let now = self.now();
        self.trace.as_mut().expect("checked").begin(cpu, depth, now, label, f.state as u8);
    }

    /// Trace: the top frame's unit ends now (completed, or leaving the CPU).
    #[inline]
    pub fn trace_end_top(&mut self, cpu: usize) {
        let now = self.now();
        if let Some(tr) = self.trace.as_mut() {
            tr.end(cpu, self.cpus[cpu].stack.len(), now);
        }
    }

    pub fn top_level(&self, cpu: usize) -> Option<Level> {
        self.cpus[cpu].stack.last().map(|f| f.level())
    }

    pub fn in_softirq(&self, cpu: usize) -> bool {
        self.cpus[cpu].stack.iter().any(|f| f.level() == Level::Softirq)
    }

    /// Deliver an interrupt to `cpu`: run it now unless a handler is already running there.
    ///
    /// Linux 2.4 (Red Hat 2.4.18-14 arch/i386/kernel/irq.c `do_IRQ`): one IRQ line's handler runs
    /// on one CPU at a time (IRQ_INPROGRESS; a level-triggered IO-APIC line is not re-delivered
    /// before the EOI in `end_level_ioapic_irq`), so a NIC's hard-IRQ work never exceeds one CPU.
    /// `handle_IRQ_event` re-enables interrupts for handlers without SA_INTERRUPT (e1000), but the
    /// local APIC still holds vectors of the in-service priority class or lower (the timer's
    /// vector is the lowest); the model holds every interrupt until the handler returns.
    pub fn raise_irq(&mut self, cpu: usize, src: IrqSrc) {
        if self.top_level(cpu) == Some(Level::Hardirq) {
            if !self.cpus[cpu].pending_irqs.contains(&src) {
                self.cpus[cpu].pending_irqs.push_back(src);
            }
            return;
        }
        self.pause_top(cpu);
        self.enter_irq(cpu, src);
    }

    fn enter_irq(&mut self, cpu: usize, src: IrqSrc) {
        self.cpus[cpu].irqs += 1;
        let cost = match src {
            IrqSrc::Tick => self.cfg.profile.costs.tick_ns,
            // Receiving an IPI costs about what sending one does; the NIC entry cost includes
            // the driver's register reads, which an IPI doesn't do.
            IrqSrc::Ipi => self.cfg.profile.costs.ipi_ns,
            IrqSrc::Nic(_) | IrqSrc::NicTx(_) => self.cfg.profile.costs.hardirq_entry_ns + self.smp_irq_entry_ns(),
        };
        self.push_frame(cpu, Work::IrqEntry(src), CpuState::Hardirq, cost);
    }

    /// The top frame's unit has completed.
    pub fn cpu_done(&mut self, cpu: usize, gen: u32) {
        if !self.cpus[cpu].done.fires(gen) {
            return;
        }
        self.account(cpu);
        self.net.xmit_cpu = cpu as u32;
        let work = self.cpus[cpu].stack.last().expect("CpuDone with an empty stack").work;
        match work {
            Work::IrqEntry(IrqSrc::Tick) => {
                self.scheduler_tick(cpu);
                self.irq_exit(cpu);
            }
            Work::IrqEntry(IrqSrc::Ipi) => {
                self.cpus[cpu].softirq_pending = true;
                self.irq_exit(cpu);
            }
            Work::IrqEntry(IrqSrc::Nic(q)) => self.nic_irq_handler(cpu, q as usize),
            Work::IrqEntry(IrqSrc::NicTx(q)) => self.nic_tx_irq_handler(cpu, q as usize),
            Work::TxCleanIrq { q, n, rx } => self.tx_clean_irq_done(cpu, q as usize, n, rx),
            Work::TxPoll { q, n } => {
                self.tx_clean(q as usize, n);
                self.softirq_next(cpu);
            }
            Work::IrqFrame { q, pkt } => {
                self.netif_rx_from_irq(cpu, pkt);
                self.cpus[cpu].irq_frames += 1;
                self.legacy_irq_next(cpu, q as usize);
            }
            Work::SoftirqEntry => self.softirq_next(cpu),
            Work::Poll { pkt, proto } => {
                if proto {
                    if self.tcp_prequeue_reader_left(cpu, pkt) {
                        return;
                    }
                    self.protocol_deliver(cpu, pkt);
                } else {
                    self.receive_skb(cpu, pkt);
                }
                self.softirq_next(cpu);
            }
            Work::Proto { pkt } => {
                if self.tcp_prequeue_reader_left(cpu, pkt) {
                    return;
                }
                self.protocol_deliver(cpu, pkt);
                self.softirq_next(cpu);
            }
            Work::XdpDrop { pkt } => {
                self.drop_pkt(pkt, DropPlace::Xdp);
                self.softirq_next(cpu);
            }
            Work::XdpRedirect { pkt } => {
                self.cpumap_enqueue(cpu, pkt);
                self.softirq_next(cpu);
            }
            Work::GroRx => self.softirq_next(cpu),
            Work::Switch | Work::ProcUnit => self.proc_unit_done(cpu),
        }
    }

    /// A hard-IRQ handler finished: pop it, run the next pending interrupt, else softirqs, else
    /// resume what was interrupted.
    ///
    /// 2.4 (2.4.18-14 `do_IRQ`): `if (softirq_pending(cpu)) do_softirq();` after the handler, on
    /// the same CPU; `do_softirq` returns at once when `in_interrupt()` (a softirq this IRQ
    /// interrupted continues instead). NET_RX is raised on the CPU whose `netif_rx` queued the
    /// frame (`this_cpu`), i.e. the CPU that took the IRQ.
    pub fn irq_exit(&mut self, cpu: usize) {
        let f = self.pop_frame(cpu);
        debug_assert_eq!(f.map(|f| f.level()), Some(Level::Hardirq));
        if let Some(src) = self.cpus[cpu].pending_irqs.pop_front() {
            self.enter_irq(cpu, src);
            return;
        }
        if self.cpus[cpu].softirq_pending && !self.in_softirq(cpu) && !self.defer_to_ksoftirqd(cpu) {
            self.cpus[cpu].sirq_ksoftirqd = false;
            self.cpus[cpu].sirq_start = self.now();
            self.cpus[cpu].sirq_restarts = 0;
            self.softirq_begin(cpu);
            return;
        }
        self.resume(cpu);
    }

    /// Continue whatever is now on top, honouring a pending reschedule at process level.
    pub fn resume(&mut self, cpu: usize) {
        match self.top_level(cpu) {
            Some(Level::Process) | None if self.cpus[cpu].need_resched => self.schedule(cpu),
            None => self.schedule(cpu),
            _ => self.start_top(cpu),
        }
    }

    fn defer_to_ksoftirqd(&self, cpu: usize) -> bool {
        if !self.cfg.kernel.softirq_defer_to_ksoftirqd {
            return false;
        }
        let k = self.cpus[cpu].ksoftirqd as usize;
        self.procs[k].state == ProcState::Runnable
    }
}

impl<M: Mechanisms> Host<M> {
    /// Is `pid`'s current unit on `cpu` the kernel work of a poll() (`fs/select.rs`)?
    fn in_poll(&self, cpu: usize, pid: Pid) -> bool {
        use crate::kernel::app_state::AppPending;
        self.cpus[cpu].stack.last().is_some_and(|f| f.work == Work::ProcUnit)
            && matches!(
                self.procs[pid as usize].pending,
                Pending::App(AppPending::PollPass { .. } | AppPending::Polled { .. })
            )
    }
}

/// CPU `cpu`'s top frame (in state `state`, `remaining` ns of work) runs from `now`: the CPU is
/// accounted in its state and the frame's completion is scheduled (`start_top`, `quick_start`).
/// It takes the CPU and the queue apart so that its callers keep the CPU they already looked up:
/// as a method that looked it up again it cost +0.5-0.7% instructions (callgrind, all bench
/// cases).
#[inline(always)]
fn run_top(
    q: &mut hostsim_engine::EventQueue<Ev>,
    c: &mut Cpu,
    cpu: usize,
    now: Time,
    state: CpuState,
    remaining: u64,
) {
    c.acct_state = state;
    c.run_start = now;
    let gen = c.done.arm();
    q.schedule(now + Time(remaining), Ev::CpuDone { cpu: cpu as u16, gen });
}
