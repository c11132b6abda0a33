//! Wake-up placement policies: `select_task_rq`, the CPU a woken task is queued on.
//!
//! `Linux` follows `select_task_rq_fair` of Linux 3.2 (kernel/sched_fair.c) with SD_WAKE_AFFINE:
//! a task whose affinity doesn't include the waking CPU stays on its previous CPU. Otherwise the
//! waking CPU is the target if it is the previous CPU or `wake_affine` agrees, else the previous
//! CPU; then `select_idle_sibling` keeps the target if it is idle, else takes the first core of
//! the target's LLC domain whose threads are all idle (groups walked from the target's own core),
//! else an idle SMT sibling of the target. `wake_affine` uses the loads of the two CPUs; a wake-up
//! from a socket (`sock_def_readable` → `wake_up_interruptible_sync_poll`) is WF_SYNC, so the
//! weight of the task the softirq interrupted is first subtracted from the waking CPU's load, and
//! a load that is then not positive is always "balanced": the task is pulled to the waking CPU.
//! Real-time tasks stay on their previous CPU when allowed (`select_task_rq_rt` with no
//! higher-priority task there).
//!
//! `GodaRfs` (paper 001, in `mechanisms/goda_rfs.rs`) wraps `Linux`. The closed enum that selects a
//! policy is `policies::WakePlacement`.
//!
//! A placement policy reads the scheduler's state only through [`WakeView`], which `Host`
//! implements in `kernel/sched/core.rs`; so this file and the policies beside it depend on `types` and this
//! hook, never on the `Host` hub.

use crate::types::{Pid, NICE_0_WEIGHT};

/// What a task's wake-up placement needs to know about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// CPUs it may run on (`cpus_allowed`).
    pub allowed: u128,
    /// A real-time (SCHED_FIFO) task.
    pub rt: bool,
    /// Its load weight (from nice).
    pub weight: u64,
    /// The wake-up is WF_SYNC: data arriving on a socket wakes its reader
    /// (`sock_def_readable` → `wake_up_interruptible_sync_poll`); a timer wake-up is not.
    pub sync_wakeup: bool,
}

/// The scheduler state a wake-up placement policy may read (`Host` implements it in `kernel/sched/core.rs`).
pub trait WakeView {
    fn nr_cpus(&self) -> usize;
    /// SMT threads per core; CPUs are numbered core by core.
    fn threads_per_core(&self) -> usize;
    fn core_of(&self, cpu: usize) -> u32;
    /// The last-level-cache domain of `cpu`.
    fn llc_of(&self, cpu: usize) -> u32;
    /// `weighted_cpuload`: the fair-class weight queued on `cpu`, running task included.
    fn cpu_load(&self, cpu: usize) -> u64;
    /// `idle_cpu`: nothing running or queued.
    fn cpu_idle(&self, cpu: usize) -> bool;
    /// Bit c set when `cpu_idle(c)`.
    fn idle_mask(&self) -> u128 {
        (0..self.nr_cpus()).filter(|&c| self.cpu_idle(c)).fold(0u128, |m, c| m | 1u128 << c)
    }
    /// The CPUs sharing `cpu`'s last-level cache (`sched_domain_span(sd_llc)`), `cpu` included.
    fn llc_mask(&self, cpu: usize) -> u128 {
        let llc = self.llc_of(cpu);
        (0..self.nr_cpus()).filter(|&c| self.llc_of(c) == llc).fold(0u128, |m, c| m | 1u128 << c)
    }
    /// How many CPUs share `cpu`'s last-level cache (`sd_llc_size`).
    fn llc_weight(&self, cpu: usize) -> u32 {
        self.llc_mask(cpu).count_ones()
    }
    /// The first thread of every core (CPUs are numbered core by core).
    fn core_firsts(&self) -> u128 {
        (0..self.nr_cpus()).step_by(self.threads_per_core()).fold(0u128, |m, c| m | 1u128 << c)
    }
    /// `rq->nr_running`: tasks of every class on `cpu`, the running one included.
    fn nr_running(&self, cpu: usize) -> usize;
    /// The task running on `cpu` (`current`; `None` for the idle task).
    fn curr_pid(&self, cpu: usize) -> Option<Pid>;
    /// `jiffies` and `HZ`.
    fn jiffies(&self) -> u64;
    fn hz(&self) -> u32;
    /// SIS_UTIL's `sd_llc_shared->nr_idle_scan` of `cpu`'s LLC (Linux 6.x era only; `None`
    /// where the era has no such limit).
    fn nr_idle_scan(&self, _cpu: usize) -> Option<u32> {
        None
    }
    /// Fair-class tasks on `cpu`, running one included (`rq->nr_running` without RT).
    fn nr_fair_running(&self, cpu: usize) -> usize;
    /// Load weight of the task running on `cpu` (`current`), if any.
    fn curr_weight(&self, cpu: usize) -> Option<u64>;
    fn task(&self, pid: Pid) -> TaskInfo;
    /// SD_WAKE_AFFINE on the domain (`kernel.wake_affine`).
    fn wake_affine_enabled(&self) -> bool;
    /// `sd->imbalance_pct` of the MC domain (`kernel.imbalance_pct`).
    fn imbalance_pct(&self) -> u32;
}

fn allowed(h: &impl WakeView, pid: Pid, cpu: usize) -> bool {
    h.task(pid).allowed & (1u128 << cpu) != 0
}

pub fn linux_select_task_rq(h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> usize {
    let p = h.task(pid);
    let prev = if allowed(h, pid, prev) { prev } else { p.allowed.trailing_zeros() as usize };
    // One allowed CPU: `is_power_of_two`, not a software popcount (see `SchedMasks`).
    if p.rt || p.allowed.is_power_of_two() || !allowed(h, pid, waker) {
        // No SD_WAKE_AFFINE domain (want_affine = 0) and no SD_BALANCE_WAKE domain: prev_cpu.
        return prev;
    }
    let affine = h.wake_affine_enabled() && (waker == prev || wake_affine(h, pid, prev, waker));
    select_idle_sibling(h, pid, if affine { waker } else { prev })
}

/// `wake_affine` of Linux 3.2 without group scheduling (`effective_load` returns its `wl`) and
/// with `wake_idx` 0 (the SMT and MC domains' default), so loads are `weighted_cpuload`.
fn wake_affine(h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> bool {
    let p = h.task(pid);
    // Data arriving on a socket wakes its reader with WF_SYNC; a timer wake-up does not.
    let sync = p.sync_wakeup;
    let mut this_load = h.cpu_load(waker) as i64;
    let load = h.cpu_load(prev) as i64;
    if sync {
        // `current` is whatever the softirq interrupted (the idle task also weighs NICE_0).
        let curr_weight = h.curr_weight(waker).unwrap_or(NICE_0_WEIGHT);
        this_load -= curr_weight as i64;
    }
    let weight = p.weight as i64;
    let balanced = this_load <= 0 || {
        // The SMT domain (siblings) has imbalance_pct 110; the MC domain the kernel's setting.
        let imb = if h.core_of(waker) == h.core_of(prev) { 110 } else { i64::from(h.imbalance_pct()) };
        100 * (this_load + weight) <= (100 + (imb - 100) / 2) * load
    };
    if sync && balanced {
        return true;
    }
    // cpu_avg_load_per_task(this_cpu): the waking CPU's load over its runnable tasks.
    let nr = h.nr_fair_running(waker);
    let tl_per_task = if nr == 0 { 0 } else { h.cpu_load(waker) as i64 / nr as i64 };
    balanced || (this_load <= load && this_load + load <= tl_per_task)
}

/// `select_idle_sibling` of Linux 3.2: an idle target stays; else, from the LLC domain down, the
/// first group (core, then SMT thread) whose CPUs are all idle, walking the groups from the
/// target's own; else the target. (Checked against 3.2.41's kernel/sched_fair.c: the MC domain's
/// groups first, skipping the SMT domain, then `goto again` with `smt = 1` for the siblings; the
/// target is always the waking or the previous CPU, so `idle_cpu(target)` is its first two tests.)
///
/// Computed on CPU bitmasks (one pass over the CPUs for the idle set) rather than by asking each
/// core in turn: the same CPU comes out, in O(CPUs) simple steps instead of O(cores × threads)
/// calls, which matters on a 64-CPU host where most wake-ups find no idle core.
pub fn select_idle_sibling(h: &impl WakeView, pid: Pid, target: usize) -> usize {
    if h.cpu_idle(target) {
        return target;
    }
    let allowed_mask = h.task(pid).allowed;
    let idle = h.idle_mask();
    // CPUs are numbered core by core (`Host::new`), so a core's threads are a contiguous range.
    let tpc = h.threads_per_core();
    let core_bits = |first: usize| if tpc >= 128 { u128::MAX } else { ((1u128 << tpc) - 1) << first };
    // LLC (MC) level: groups are cores, in CPU order starting at the target's core. A core
    // qualifies when all its threads are idle: mark such cores at their first thread.
    let mut whole_core_idle = idle;
    for j in 1..tpc {
        whole_core_idle &= idle >> j;
    }
    let firsts = h.core_firsts();
    let same_llc = h.llc_mask(target);
    let candidates = whole_core_idle & firsts & same_llc;
    let tfirst = target / tpc * tpc;
    let from_target = candidates & (u128::MAX << tfirst);
    for part in [from_target, candidates & !from_target] {
        let mut m = part;
        while m != 0 {
            let first = m.trailing_zeros() as usize;
            let ok = allowed_mask & core_bits(first);
            if ok != 0 {
                return ok.trailing_zeros() as usize;
            }
            m &= m - 1;
        }
    }
    // SMT level: groups are the target core's threads, starting after the target.
    (target + 1..tfirst + tpc)
        .chain(tfirst..target)
        .find(|&c| allowed_mask & (1u128 << c) != 0 && idle & (1u128 << c) != 0)
        .unwrap_or(target)
}
