//! Wake-up placement policies: `select_task_rq`, the CPU a woken task is queued on.
//!
//! `Linux` follows `select_task_rq_fair` of Linux 3.x with SD_WAKE_AFFINE: `wake_affine` pulls
//! the task to the waking CPU when that CPU's load plus the task's weight is no more than the
//! previous CPU's load scaled by half the domain's imbalance percentage; then
//! `select_idle_sibling` keeps the target if it is idle, else looks in the target's LLC domain for
//! a core whose threads are all idle, then for an idle SMT sibling. Real-time tasks stay on their
//! previous CPU when allowed (`select_task_rq_rt` with no higher-priority task there).

use crate::config::WakePolicy;
use crate::sim::*;

#[derive(Clone, Copy, Debug)]
pub enum WakePlacement {
    Linux,
}

impl WakePlacement {
    pub fn new(p: WakePolicy) -> WakePlacement {
        match p {
            WakePolicy::Linux => WakePlacement::Linux,
        }
    }

    /// The CPU to queue `pid` on when `waker` wakes it; `prev` is where it last ran.
    pub fn select_task_rq(&self, h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            WakePlacement::Linux => linux_select_task_rq(h, pid, prev, waker),
        }
    }
}

fn allowed(h: &Host, pid: Pid, cpu: usize) -> bool {
    h.procs[pid as usize].allowed & (1u128 << cpu) != 0
}

fn linux_select_task_rq(h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
    let p = &h.procs[pid as usize];
    let prev = if allowed(h, pid, prev) { prev } else { p.allowed.trailing_zeros() as usize };
    if p.rt.is_some() {
        return prev;
    }
    let mut target = prev;
    if h.cfg.kernel.wake_affine && waker != prev && allowed(h, pid, waker) {
        let this_load = h.cpu_load(waker);
        let prev_load = h.cpu_load(prev);
        let imb = u64::from(h.cfg.kernel.imbalance_pct);
        // wake_affine(): this_eff_load = 100 * (this_load + weight);
        //                prev_eff_load = (100 + (imbalance_pct - 100) / 2) * prev_load.
        if 100 * (this_load + p.weight) <= (100 + (imb - 100) / 2) * prev_load {
            target = waker;
        }
    }
    select_idle_sibling(h, pid, target)
}

/// `select_idle_sibling`: an idle target stays; else a fully idle core in the target's LLC, else
/// an idle SMT sibling of the target.
pub fn select_idle_sibling(h: &Host, pid: Pid, target: usize) -> usize {
    if h.cpu_idle(target) {
        return target;
    }
    let llc = h.cpus[target].llc;
    let ncpu = h.cpus.len();
    // LLC level: groups are cores; a group qualifies when all its threads are idle.
    let mut core = u32::MAX;
    let mut core_idle = true;
    let mut first_allowed = None;
    for c in 0..=ncpu {
        let new_core = c == ncpu || h.cpus[c].core != core;
        if new_core {
            if core != u32::MAX && core_idle {
                if let Some(f) = first_allowed {
                    return f;
                }
            }
            if c == ncpu {
                break;
            }
            core = h.cpus[c].core;
            core_idle = true;
            first_allowed = None;
        }
        if h.cpus[c].llc != llc {
            core_idle = false;
            continue;
        }
        core_idle &= h.cpu_idle(c);
        if first_allowed.is_none() && allowed(h, pid, c) {
            first_allowed = Some(c);
        }
    }
    // SMT level: any idle sibling of the target.
    (0..ncpu)
        .find(|&c| h.cpus[c].core == h.cpus[target].core && allowed(h, pid, c) && h.cpu_idle(c))
        .unwrap_or(target)
}
