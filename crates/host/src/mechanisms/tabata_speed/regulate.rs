//! Tender's execution-speed regulation (paper 002) in the scheduler: a regulated process is
//! queued only during its allocated slots (`mechanisms/tabata_speed/slots.rs`). A timer at the end
//! of each run of allocated slots takes it off the CPU (or its run queue); a timer at the start of
//! the next allocated slot puts it back (one timer per task, the mechanism's, polled through the
//! host's `Ev::Mech`). A regulated process that is blocked has no timer: it is
//! admitted (or throttled until its next slot) when woken, so an idle regulated process and
//! every unregulated one cost no events.
//!
//! The paper does not say whether a regulated process woken in the middle of an allocated slot
//! runs at once; `kernel.speed_dispatch` chooses (notes 002 §2 and §5.4: `slot_boundary`, the
//! slot-locked burst/wait that the paper's 1/4 rule needs, is inferred, not stated).
//! Interrupts, softirqs and other processes run in the unallocated slots: the paper regulates
//! the program, not the kernel's protocol work (notes 002 §6.6).

use super::options::{SpeedDispatch, TabataOptions, TabataTask};
use super::slots::SlotPlan;
use crate::config::HostConfig;
use crate::hooks::{me, timer_id, Boot, Mechanism, Packets, Project, Reach, Tasks, Timers};
use crate::kernel::task::ProcState;
use crate::metrics::summary::{SpeedSummary, Summary};
use crate::types::*;
use hostsim_engine::{Time, Timer};
use hostsim_options::Fault;

/// Paper 002's regulation of the processes that set `speed_pct`.
pub struct TabataSpeed {
    /// Per `[[process]]` entry: its speed in percent, None if unregulated.
    speed_pct: Vec<Option<u32>>,
    /// `kernel.speed_slot_us`, `kernel.speed_block_ms` in ns; `kernel.speed_dispatch`.
    slot_ns: u64,
    block_ns: u64,
    dispatch: SpeedDispatch,
    /// Per task: its plan (None: unregulated) and its slot timer. Empty when no process is
    /// regulated, so that every other run's accounting only tests a length.
    plans: Vec<Option<SlotPlan>>,
    timers: Vec<Timer>,
    /// Times a regulated process ran outside its allocated slots (must stay 0).
    violations: u64,
}

impl Mechanism for TabataSpeed {
    type Options = TabataOptions;
    type TaskOptions = TabataTask;

    fn check(cfg: &HostConfig, o: &TabataOptions, tasks: &[TabataTask]) -> Result<(), Fault> {
        super::options::check(cfg, o, tasks)
    }

    fn new(boot: &Boot) -> Self {
        let k: TabataOptions = boot.options();
        TabataSpeed {
            speed_pct: boot.task_options::<TabataTask>().iter().map(|p| p.speed_pct).collect(),
            slot_ns: k.speed_slot_us * 1000,
            block_ns: k.speed_block_ms * 1_000_000,
            dispatch: k.speed_dispatch,
            plans: Vec::new(),
            timers: Vec::new(),
            violations: 0,
        }
    }

    fn booted(&mut self, _kthreads: &[Pid], nprocs: usize) {
        if self.speed_pct.iter().any(Option::is_some) {
            self.plans = vec![None; nprocs];
            self.timers = vec![Timer::new(); nprocs];
        }
    }

    #[inline]
    fn task_started<M: Project<Self>, H: Reach<M> + Tasks + Timers>(h: &mut H, pid: Pid) {
        if !h.mechs_ref().project_ref().plans.is_empty() {
            init::<M, H>(h, pid);
        }
    }

    #[inline]
    fn admit<M: Project<Self>, H: Reach<M> + Tasks + Timers>(h: &mut H, pid: Pid, woken: bool) -> bool {
        h.mechs_ref().project_ref().plans.is_empty() || admit::<M, H>(h, pid, woken)
    }

    fn poll<M: Project<Self>, H: Reach<M> + Tasks + Packets + Timers>(h: &mut H, local: u32, gen: u32) {
        slot_timer::<M, H>(h, local, gen);
    }

    #[inline]
    fn account(&mut self, pid: Pid, from: Time, now: Time) {
        self.check(pid, from, now);
    }

    fn summary(&self, s: &mut Summary) {
        for (p, plan) in s.processes.iter_mut().zip(&self.plans) {
            p.speed = plan.map(|s| SpeedSummary {
                slots_per_block: s.n,
                block_slots: s.t,
                slot_ns: s.slot_ns,
                speed_pct: 100.0 * s.n as f64 / s.t as f64,
            });
        }
        s.speed_violations = self.violations;
    }
}

/// The task starts: its slot plan (blocks from its start, on the slot grid).
pub fn init<M: Project<TabataSpeed>, H: Reach<M> + Tasks + Timers>(h: &mut H, pid: Pid) {
    let Some(group) = h.task_group(pid) else { return };
    let now = h.now();
    let t = me::<TabataSpeed, M>(h);
    if let Some(s) = t.speed_pct.get(group).copied().flatten() {
        t.plans[pid as usize] = Some(SlotPlan::new(s, t.slot_ns, t.block_ns, now.ns()));
    }
}

/// `pid` wants to become runnable now (`woken`: from a wake-up, not its start). True if it may
/// be queued now; else it is throttled until its next allocated slot.
pub fn admit<M: Project<TabataSpeed>, H: Reach<M> + Tasks + Timers>(h: &mut H, pid: Pid, woken: bool) -> bool {
    let t = me::<TabataSpeed, M>(h);
    let Some(Some(plan)) = t.plans.get(pid as usize).copied() else { return true };
    let dispatch = t.dispatch;
    let now = h.now();
    let k = plan.slot_of(now);
    let in_slot = plan.allocated_at(now);
    let boundary = now == plan.slot_start(k);
    let wait_boundary = woken && dispatch == SpeedDispatch::SlotBoundary && !boundary;
    if in_slot && !wait_boundary {
        arm_end::<M, H>(h, pid, plan, k);
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
    h.set_task_state(pid, ProcState::Throttled);
    poll_at::<M, H>(h, pid, plan.slot_start(next));
    false
}

/// Poll the task's slot timer at `at` (re-armed: an earlier poll of it will not fire).
fn poll_at<M: Project<TabataSpeed>, H: Reach<M> + Timers>(h: &mut H, pid: Pid, at: Time) {
    let gen = me::<TabataSpeed, M>(h).timers[pid as usize].arm();
    h.poll_at(timer_id::<TabataSpeed, M>(pid), gen, at);
}

/// Arm the timer that ends the run of allocated slots containing slot `k`.
fn arm_end<M: Project<TabataSpeed>, H: Reach<M> + Timers>(h: &mut H, pid: Pid, plan: SlotPlan, k: u64) {
    match plan.run_end(k) {
        Some(end) => poll_at::<M, H>(h, pid, plan.slot_start(end)),
        None => me::<TabataSpeed, M>(h).timers[pid as usize].cancel(),
    }
}

/// A regulated process's slot timer fired.
pub fn slot_timer<M: Project<TabataSpeed>, H: Reach<M> + Tasks + Timers>(h: &mut H, pid: Pid, gen: u32) {
    let t = me::<TabataSpeed, M>(h);
    if !t.timers[pid as usize].fires(gen) {
        return;
    }
    let plan = t.plans[pid as usize].expect("regulated");
    let now = h.now();
    match h.task_state(pid) {
        ProcState::Throttled => {
            // Its allocated slot begins.
            h.set_task_state(pid, ProcState::Runnable);
            arm_end::<M, H>(h, pid, plan, plan.slot_of(now));
            let cpu = h.task_cpu(pid);
            if h.curr(cpu) != Some(pid) {
                h.enqueue_woken(pid);
            }
            // Else it was throttled while an interrupt held its CPU and has not been
            // switched out yet: being runnable again, schedule() keeps it queued.
        }
        ProcState::Runnable => {
            // Its run of allocated slots ends: off the CPU or out of its run queue.
            let cpu = h.task_cpu(pid);
            h.set_task_state(pid, ProcState::Throttled);
            if h.curr(cpu) == Some(pid) {
                h.resched(cpu);
            } else {
                h.dequeue(cpu, pid);
            }
            let next = plan.next_allocated(plan.slot_of(now));
            poll_at::<M, H>(h, pid, plan.slot_start(next));
        }
        // Blocked or exited: it is admitted again when woken.
        _ => {}
    }
}

impl TabataSpeed {
    /// Property check: the process-level time of a regulated process from `from` to `now` lies
    /// inside one run of its allocated slots.
    #[inline]
    pub fn check(&mut self, pid: Pid, from: Time, now: Time) {
        let Some(Some(plan)) = self.plans.get(pid as usize) else { return };
        let k = plan.slot_of(from);
        let ok = plan.allocated_at(from) && plan.run_end(k).is_none_or(|e| now <= plan.slot_start(e));
        if !ok {
            self.violations += 1;
        }
    }
}
