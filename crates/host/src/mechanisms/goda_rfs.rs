//! `goda_rfs`: wake-up placement that waits for the interrupt to follow (paper 001, Goda & Tago,
//! "プロセス追跡型割り込みを考慮したプロセス起床時ロードバランス機構の改善", §4.1).
//!
//! With RFS, a flow's receive processing (and so the wake-up of its reader) runs on the CPU where
//! the reader last called recvmsg, and moves only after the reader has run on its new CPU and
//! the old CPU's backlog has passed the flow's last packet. So right after the scheduler moves a
//! reader, its next wake-ups still come from the old CPU, and Linux's wake-affine placement pulls
//! it back there: waking and running CPU swap on successive wake-ups (paper Fig. 2).
//!
//! The proposal: once a task has moved, forbid moving it at wake-up while the CPU doing the
//! wake-up is not the task's CPU, i.e. until the interrupt has followed it. The first wake-up from
//! the task's own CPU lifts the ban, and placement is Linux's again. Per task this is one flag
//! (a field the patch would add to `task_struct`): O(1) per wake-up and per migration.

use crate::hooks::{Boot, Mechanism, NoOptions};
use crate::kernel::sched::placement::BasePlacement;
use crate::kernel::sched::wake::WakeView;
use crate::types::Pid;

/// The mechanism (`kernel.wake_policy = "goda_rfs"`): its rule wraps the kernel's placement.
#[derive(Clone, Debug)]
pub struct GodaRfs {
    on: bool,
    /// Per task: it moved, and no wake-up has come from its new CPU yet.
    awaiting_irq: Vec<bool>,
}

impl GodaRfs {
    /// The rule for `nprocs` tasks.
    pub fn new(nprocs: usize) -> GodaRfs {
        GodaRfs { on: true, awaiting_irq: vec![false; nprocs] }
    }

    /// `base` is the kernel's own placement, which this wraps.
    pub fn place(&self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize, base: &BasePlacement) -> usize {
        if self.awaiting_irq[pid as usize] && waker != prev {
            return prev;
        }
        base.select_task_rq(h, pid, prev, waker)
    }
}

impl Mechanism for GodaRfs {
    type Options = NoOptions;
    type TaskOptions = NoOptions;
    const POLICIES: &'static [(&'static str, &'static str, &'static str)] = &[(
        "wake_policy",
        "goda_rfs",
        "Paper 001's placement (`mechanisms/goda_rfs.rs`): a task that moved stays on its previous CPU until a wake-up comes from that CPU's interrupt, then the kernel's own placement.",
    )];

    fn new(boot: &Boot) -> Self {
        GodaRfs { on: boot.cfg.kernel.wake_policy.is("goda_rfs"), awaiting_irq: Vec::new() }
    }

    fn booted(&mut self, _kthreads: &[Pid], nprocs: usize) {
        if self.on {
            self.awaiting_irq = vec![false; nprocs];
        }
    }

    #[inline]
    fn select_task_rq(
        &self,
        h: &impl WakeView,
        pid: Pid,
        prev: usize,
        waker: usize,
        base: &BasePlacement,
    ) -> Option<usize> {
        self.on.then(|| self.place(h, pid, prev, waker, base))
    }

    #[inline]
    fn task_woken(&mut self, pid: Pid, waker: usize, prev: usize) {
        if self.on && waker == prev {
            self.awaiting_irq[pid as usize] = false;
        }
    }

    #[inline]
    fn task_migrated(&mut self, pid: Pid) {
        if self.on {
            self.awaiting_irq[pid as usize] = true;
        }
    }
}
