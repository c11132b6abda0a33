//! The kernel's own wake-up placement, by era (`kernel.scheduler`): Linux 3.2's
//! `select_task_rq_fair` (`wake.rs`) or 2.4 O(1)'s `try_to_wake_up` (`sched_o1.rs`). Paper
//! mechanisms that change placement (`wake_goda.rs`) wrap it.

use crate::sched_o1::o1_select_task_rq;
use crate::types::Pid;
use crate::wake::{linux_select_task_rq, WakeView};

/// The kernel's own wake-up placement, by era (`kernel.scheduler`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BasePlacement {
    /// Linux 3.2 `select_task_rq_fair` (`wake.rs`).
    Cfs,
    /// 2.4 O(1) `try_to_wake_up` (`sched_o1.rs`).
    O1,
}

impl BasePlacement {
    pub fn select_task_rq(self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            BasePlacement::Cfs => linux_select_task_rq(h, pid, prev, waker),
            BasePlacement::O1 => o1_select_task_rq(h.task(pid).allowed, prev),
        }
    }
}

