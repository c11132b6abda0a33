//! The kernel's own wake-up placement, by era (`kernel.scheduler`): Linux 3.2's
//! `select_task_rq_fair` (`wake.rs`), Linux 6.x's (`sched_cfs6.rs`) or 2.4 O(1)'s
//! `try_to_wake_up` (`sched_o1.rs`). Paper mechanisms that change placement (`wake_goda.rs`)
//! wrap it.

use crate::sched_cfs6::Cfs6Wake;
use crate::sched_o1::o1_select_task_rq;
use crate::types::Pid;
use crate::wake::{linux_select_task_rq, WakeView};

/// The kernel's own wake-up placement, by era (`kernel.scheduler`).
#[derive(Clone, Debug)]
pub enum BasePlacement {
    /// Linux 3.2 `select_task_rq_fair` (`wake.rs`).
    Cfs,
    /// Linux 6.x `select_task_rq_fair` with its per-task state (`sched_cfs6.rs`).
    Cfs6(Box<Cfs6Wake>),
    /// 2.4 O(1) `try_to_wake_up` (`sched_o1.rs`).
    O1,
}

impl BasePlacement {
    pub fn select_task_rq(&self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            BasePlacement::Cfs => linux_select_task_rq(h, pid, prev, waker),
            BasePlacement::Cfs6(c) => c.select_task_rq(h, pid, prev, waker),
            BasePlacement::O1 => o1_select_task_rq(h.task(pid).allowed, prev),
        }
    }
}

/// CPU sets the placement reads on every wake-up, kept as bitmasks so that a wake-up costs a
/// few word operations instead of a pass over every CPU: each CPU's LLC span and the first
/// thread of every core (fixed at boot, as the kernel's `sd_llc` masks), and the idle CPUs
/// (`idle_cpu()`), which `sched.rs` updates whenever a run queue or `curr` changes.
#[derive(Clone, Debug)]
pub struct SchedMasks {
    pub llc: Vec<u128>,
    pub core_firsts: u128,
    pub idle: u128,
}

impl SchedMasks {
    /// `llc_ids[c]`: CPU c's last-level-cache domain. Every CPU starts idle.
    pub fn new(llc_ids: &[u32], threads_per_core: usize) -> SchedMasks {
        let n = llc_ids.len();
        let llc = (0..n).map(|c| (0..n).filter(|&d| llc_ids[d] == llc_ids[c]).fold(0u128, |m, d| m | 1u128 << d)).collect();
        let core_firsts = (0..n).step_by(threads_per_core.max(1)).fold(0u128, |m, c| m | 1u128 << c);
        let idle = (0..n).fold(0u128, |m, c| m | 1u128 << c);
        SchedMasks { llc, core_firsts, idle }
    }

    pub fn set_idle(&mut self, cpu: usize, idle: bool) {
        if idle {
            self.idle |= 1u128 << cpu;
        } else {
            self.idle &= !(1u128 << cpu);
        }
    }
}
