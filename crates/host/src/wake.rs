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
//! `GodaRfs` (paper 001, in `wake_goda.rs`) wraps `Linux`.

use crate::config::WakePolicy;
use crate::sim::*;
use crate::wake_goda::GodaRfs;

#[derive(Clone, Debug)]
pub enum WakePlacement {
    Linux,
    GodaRfs(GodaRfs),
}

impl WakePlacement {
    pub fn new(p: WakePolicy, nprocs: usize) -> WakePlacement {
        match p {
            WakePolicy::Linux => WakePlacement::Linux,
            WakePolicy::GodaRfs => WakePlacement::GodaRfs(GodaRfs::new(nprocs)),
        }
    }

    /// The CPU to queue `pid` on when `waker` wakes it; `prev` is where it last ran.
    pub fn select_task_rq(&self, h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            WakePlacement::Linux => linux_select_task_rq(h, pid, prev, waker),
            WakePlacement::GodaRfs(g) => g.select_task_rq(h, pid, prev, waker),
        }
    }

    /// `pid` was woken by `waker` while its CPU was `prev` (after `select_task_rq`).
    pub fn task_woken(&mut self, pid: Pid, waker: usize, prev: usize) {
        if let WakePlacement::GodaRfs(g) = self {
            g.task_woken(pid, waker, prev);
        }
    }

    /// `pid` moved to another CPU (any cause).
    pub fn task_migrated(&mut self, pid: Pid) {
        if let WakePlacement::GodaRfs(g) = self {
            g.task_migrated(pid);
        }
    }
}

fn allowed(h: &Host, pid: Pid, cpu: usize) -> bool {
    h.procs[pid as usize].allowed & (1u128 << cpu) != 0
}

pub fn linux_select_task_rq(h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
    let p = &h.procs[pid as usize];
    let prev = if allowed(h, pid, prev) { prev } else { p.allowed.trailing_zeros() as usize };
    if p.rt.is_some() || p.allowed.count_ones() == 1 || !allowed(h, pid, waker) {
        // No SD_WAKE_AFFINE domain (want_affine = 0) and no SD_BALANCE_WAKE domain: prev_cpu.
        return prev;
    }
    let affine = h.cfg.kernel.wake_affine && (waker == prev || wake_affine(h, pid, prev, waker));
    select_idle_sibling(h, pid, if affine { waker } else { prev })
}

/// `wake_affine` of Linux 3.2 without group scheduling (`effective_load` returns its `wl`) and
/// with `wake_idx` 0 (the SMT and MC domains' default), so loads are `weighted_cpuload`.
fn wake_affine(h: &Host, pid: Pid, prev: usize, waker: usize) -> bool {
    let p = &h.procs[pid as usize];
    // Data arriving on a socket wakes its reader with WF_SYNC; a timer wake-up does not.
    let sync = p.state == ProcState::BlockedRecv;
    let mut this_load = h.cpu_load(waker) as i64;
    let load = h.cpu_load(prev) as i64;
    if sync {
        // `current` is whatever the softirq interrupted (the idle task also weighs NICE_0).
        let curr_weight = h.cpus[waker].curr.map_or(NICE_0_WEIGHT, |c| h.procs[c as usize].weight);
        this_load -= curr_weight as i64;
    }
    let weight = p.weight as i64;
    let balanced = this_load <= 0 || {
        // The SMT domain (siblings) has imbalance_pct 110; the MC domain the kernel's setting.
        let imb = if h.cpus[waker].core == h.cpus[prev].core { 110 } else { i64::from(h.cfg.kernel.imbalance_pct) };
        100 * (this_load + weight) <= (100 + (imb - 100) / 2) * load
    };
    if sync && balanced {
        return true;
    }
    // cpu_avg_load_per_task(this_cpu): the waking CPU's load over its runnable tasks.
    let c = &h.cpus[waker];
    let nr = c.rq_cfs.len() + usize::from(c.curr.is_some_and(|q| h.procs[q as usize].rt.is_none()));
    let tl_per_task = if nr == 0 { 0 } else { h.cpu_load(waker) as i64 / nr as i64 };
    balanced || (this_load <= load && this_load + load <= tl_per_task)
}

/// `select_idle_sibling` of Linux 3.2: an idle target stays; else, from the LLC domain down, the
/// first group (core, then SMT thread) whose CPUs are all idle, walking the groups from the
/// target's own; else the target.
pub fn select_idle_sibling(h: &Host, pid: Pid, target: usize) -> usize {
    if h.cpu_idle(target) {
        return target;
    }
    let llc = h.cpus[target].llc;
    let ncpu = h.cpus.len();
    let allowed_mask = h.procs[pid as usize].allowed;
    // LLC (MC) level: groups are cores, in CPU order starting at the target's core. CPUs are
    // numbered core by core (`Host::new`), so a core's threads are a contiguous range.
    let tpc = h.cfg.profile.topology.threads_per_core as usize;
    let ncores = ncpu / tpc;
    let tcore = target / tpc;
    for i in 0..ncores {
        let first = (tcore + i) % ncores * tpc;
        if h.cpus[first].llc != llc {
            continue;
        }
        let threads = first..first + tpc;
        if threads.clone().all(|c| h.cpu_idle(c)) {
            if let Some(c) = threads.clone().find(|&c| allowed_mask & (1u128 << c) != 0) {
                return c;
            }
        }
    }
    // SMT level: groups are the target core's threads, starting after the target.
    (1..ncpu)
        .map(|i| (target + i) % ncpu)
        .find(|&c| h.cpus[c].core == h.cpus[target].core && allowed(h, pid, c) && h.cpu_idle(c))
        .unwrap_or(target)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::*;
    use crate::testutil::sink;

    /// A Core i7-980X-like topology: 1 package, 6 cores, 2 threads each (CPU 2k and 2k+1 are
    /// siblings), shared LLC; four sleeping processes, the first allowed on `allowed`.
    pub(crate) fn host(allowed: Vec<u32>) -> Host {
        let topo = Topology { packages: 1, cores_per_package: 6, threads_per_core: 2, llc: LlcScope::PerPackage };
        let mut woken = sink("woken", 1, 0);
        woken.cpus = allowed;
        let procs = vec![woken, sink("a", 1, 0), sink("b", 1, 0), sink("c", 1, 0)];
        crate::testutil::host_with(topo, KernelConfig::default(), vec![], procs)
    }

    /// Make `cpu` busy with process `pid` (its current task).
    pub(crate) fn busy(h: &mut Host, cpu: usize, pid: Pid) {
        h.cpus[cpu].curr = Some(pid);
        h.procs[pid as usize].state = ProcState::Runnable;
    }

    fn place(h: &Host, prev: usize, waker: usize) -> usize {
        WakePlacement::Linux.select_task_rq(h, 0, prev, waker)
    }

    #[test]
    fn idle_previous_cpu_keeps_the_task() {
        let mut h = host(vec![]);
        busy(&mut h, 4, 1); // the waker runs something; prev (CPU 0) is idle
        assert_eq!(place(&h, 0, 4), 0);
    }

    #[test]
    fn idle_waker_pulls_the_task_from_a_busy_previous_cpu() {
        let mut h = host(vec![]);
        busy(&mut h, 0, 1);
        assert_eq!(place(&h, 0, 4), 4, "wake_affine: waker idle, prev loaded");
    }

    #[test]
    fn busy_target_goes_to_a_fully_idle_core_in_the_llc() {
        let mut h = host(vec![]);
        // Cores 0 and 1 (CPUs 0-3) are half busy; core 2 (CPUs 4, 5) is fully idle.
        busy(&mut h, 0, 1);
        busy(&mut h, 2, 2);
        busy(&mut h, 6, 3);
        for c in [8, 10] {
            h.cpus[c].rq_cfs.push(3); // make cores 4 and 5 look busy too
        }
        assert_eq!(place(&h, 0, 2), 4, "first thread of the first fully idle core");
    }

    #[test]
    fn no_idle_core_falls_back_to_an_idle_smt_sibling() {
        let mut h = host(vec![]);
        for c in (0..12).step_by(2) {
            h.cpus[c].rq_cfs.push(1); // every core has one busy thread
        }
        busy(&mut h, 0, 2);
        assert_eq!(place(&h, 0, 0), 1, "the idle sibling of the target");
    }

    #[test]
    fn everything_busy_keeps_the_affine_choice() {
        let mut h = host(vec![]);
        for c in 0..12 {
            h.cpus[c].rq_cfs.push(1);
        }
        // Equal loads: 100 * (1024 + 1024) > 112 * 1024, so not affine: stays on prev.
        assert_eq!(place(&h, 3, 7), 3);
    }

    #[test]
    fn affinity_is_honoured() {
        let mut h = host(vec![5]);
        busy(&mut h, 5, 1);
        assert_eq!(place(&h, 5, 0), 5, "only CPU 5 allowed, even though it is busy");
    }

    #[test]
    fn realtime_tasks_stay_on_their_cpu() {
        let mut h = host(vec![]);
        h.procs[0].rt = Some(50);
        busy(&mut h, 2, 1);
        assert_eq!(place(&h, 2, 8), 2);
    }
}
