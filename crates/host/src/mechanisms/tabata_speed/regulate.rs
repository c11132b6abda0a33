//! Tender's execution-speed regulation (paper 002) in the scheduler: a regulated process is
//! queued only during its allocated slots (`mechanisms/tabata_speed/slots.rs`). A timer at the end of each run of
//! allocated slots takes it off the CPU (or its run queue); a timer at the start of the next
//! allocated slot puts it back. A regulated process that is blocked has no timer: it is
//! admitted (or throttled until its next slot) when woken, so an idle regulated process and
//! every unregulated one cost no events.
//!
//! The paper does not say whether a regulated process woken in the middle of an allocated slot
//! runs at once; `kernel.speed_dispatch` chooses (notes 002 §2 and §5.4: `slot_boundary`, the
//! slot-locked burst/wait that the paper's 1/4 rule needs, is inferred, not stated).
//! Interrupts, softirqs and other processes run in the unallocated slots: the paper regulates
//! the program, not the kernel's protocol work (notes 002 §6.6).

use crate::config::SpeedDispatch;
use crate::kernel::task::ProcState;
use crate::mechanisms::tabata_speed::slots::SlotPlan;
use crate::sim::*;
use crate::types::*;

impl Host {
    /// The process starts: set up its slot plan (blocks from its start, on the slot grid).
    pub fn speed_init(&mut self, pid: Pid) {
        let group = self.procs[pid as usize].group;
        if group == NONE {
            return;
        }
        if let Some(s) = self.cfg.processes[group as usize].speed_pct {
            let k = &self.cfg.kernel;
            let plan = SlotPlan::new(s, k.speed_slot_us * 1000, k.speed_block_ms * 1_000_000, self.q.now().ns());
            self.procs[pid as usize].speed = Some(plan);
        }
    }

    /// `pid` wants to become runnable now (`woken`: from a wake-up, not its start). True if it
    /// may be queued now; else it is throttled until its next allocated slot.
    pub fn speed_admit(&mut self, pid: Pid, woken: bool) -> bool {
        let Some(plan) = self.procs[pid as usize].speed else { return true };
        let now = self.q.now();
        let k = plan.slot_of(now);
        let in_slot = plan.allocated_at(now);
        let boundary = now == plan.slot_start(k);
        let wait_boundary = woken && self.cfg.kernel.speed_dispatch == SpeedDispatch::SlotBoundary && !boundary;
        if in_slot && !wait_boundary {
            self.speed_arm_end(pid, k);
            return true;
        }
        let from = if now.ns() < plan.origin {
            0
        } else if in_slot {
            k + 1
        } else {
            k
        };
        let next = plan.next_allocated(from);
        self.procs[pid as usize].state = ProcState::Throttled;
        let gen = self.procs[pid as usize].slot_timer.arm();
        self.q.schedule(plan.slot_start(next), Ev::SlotTimer { pid, gen });
        false
    }

    /// Arm the timer that ends the run of allocated slots containing slot `k`.
    fn speed_arm_end(&mut self, pid: Pid, k: u64) {
        let plan = self.procs[pid as usize].speed.expect("regulated");
        let p = &mut self.procs[pid as usize];
        match plan.run_end(k) {
            Some(end) => {
                let gen = p.slot_timer.arm();
                self.q.schedule(plan.slot_start(end), Ev::SlotTimer { pid, gen });
            }
            None => p.slot_timer.cancel(),
        }
    }

    /// A regulated process's slot timer fired.
    pub fn slot_timer(&mut self, pid: Pid) {
        match self.procs[pid as usize].state {
            ProcState::Throttled => {
                // Its allocated slot begins.
                self.procs[pid as usize].state = ProcState::Runnable;
                let plan = self.procs[pid as usize].speed.expect("regulated");
                self.speed_arm_end(pid, plan.slot_of(self.q.now()));
                let cpu = self.procs[pid as usize].cpu as usize;
                if self.cpus[cpu].curr != Some(pid) {
                    self.enqueue_woken(pid);
                }
                // Else it was throttled while an interrupt held its CPU and has not been
                // switched out yet: being runnable again, schedule() keeps it queued.
            }
            ProcState::Runnable => {
                // Its run of allocated slots ends: off the CPU or out of its run queue.
                let cpu = self.procs[pid as usize].cpu as usize;
                self.procs[pid as usize].state = ProcState::Throttled;
                if self.cpus[cpu].curr == Some(pid) {
                    self.resched(cpu);
                } else {
                    self.dequeue(cpu, pid);
                }
                let plan = self.procs[pid as usize].speed.expect("regulated");
                let next = plan.next_allocated(plan.slot_of(self.q.now()));
                let gen = self.procs[pid as usize].slot_timer.arm();
                self.q.schedule(plan.slot_start(next), Ev::SlotTimer { pid, gen });
            }
            // Blocked or exited: it is admitted again when woken.
            _ => {}
        }
    }

    /// Property check: the process-level time of a regulated process from `from` to now lies
    /// inside one run of its allocated slots.
    pub fn speed_check(&mut self, pid: Pid, from: hostsim_engine::Time) {
        let Some(plan) = self.procs[pid as usize].speed else { return };
        let k = plan.slot_of(from);
        let ok = plan.allocated_at(from) && plan.run_end(k).is_none_or(|e| self.q.now() <= plan.slot_start(e));
        if !ok {
            self.stats.speed_violations += 1;
        }
    }
}
