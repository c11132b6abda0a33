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

use crate::sim::{Host, Pid};
use crate::wake::linux_select_task_rq;

#[derive(Clone, Debug)]
pub struct GodaRfs {
    /// Per task: it moved, and no wake-up has come from its new CPU yet.
    awaiting_irq: Vec<bool>,
}

impl GodaRfs {
    pub fn new(nprocs: usize) -> GodaRfs {
        GodaRfs { awaiting_irq: vec![false; nprocs] }
    }

    pub fn select_task_rq(&self, h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
        if self.awaiting_irq[pid as usize] && waker != prev {
            return prev;
        }
        linux_select_task_rq(h, pid, prev, waker)
    }

    pub fn task_woken(&mut self, pid: Pid, waker: usize, prev: usize) {
        if waker == prev {
            self.awaiting_irq[pid as usize] = false;
        }
    }

    pub fn task_migrated(&mut self, pid: Pid) {
        self.awaiting_irq[pid as usize] = true;
    }
}

#[cfg(test)]
mod tests {
    use crate::config::WakePolicy;
    use crate::sim::*;
    use crate::wake::tests::{busy, host};
    use crate::wake::WakePlacement;

    /// Paper 001 Fig. 2 step by step on the i7-980X topology (CPU 2k and 2k+1 are SMT siblings).
    /// Every core but core 0 runs a task on its first thread. The reader (pid 0) is blocked in
    /// recv(), so its wake-ups are WF_SYNC. CPU 0 alternates between running a task (#1) and
    /// only taking the flow's softirq (#2, #4); RFS moves the flow to CPU 1 late (#3).
    /// Returns (waker, running CPU, chosen CPU) per wake-up and the migration classes.
    fn fig2(policy: WakePolicy) -> (Vec<(usize, usize, usize)>, crate::migration_class::ClassCounts) {
        let mut h = host(vec![]);
        h.wake = WakePlacement::new(policy, h.procs.len());
        for c in (2..12).step_by(2) {
            busy(&mut h, c, 2);
        }
        h.procs[2].state = ProcState::Runnable;
        h.procs[0].state = ProcState::BlockedRecv;
        h.procs[0].cpu = 0;
        let mut steps = Vec::new();
        // (waking CPU, does CPU 0 run a task at that moment)
        for (waker, cpu0_busy) in [(0, true), (0, false), (1, false), (0, false), (0, false)] {
            h.cpus[0].curr = if cpu0_busy { Some(1) } else { None };
            h.procs[1].state = ProcState::Runnable;
            let prev = h.procs[0].cpu as usize;
            let target = h.wake.select_task_rq(&h, 0, prev, waker);
            h.wake.task_woken(0, waker, prev);
            h.stats.record_wakeup(h.now, 0, waker, prev, target);
            if target != prev {
                h.wake.task_migrated(0);
                h.procs[0].cpu = target as u32;
            }
            steps.push((waker, prev, target));
        }
        (steps, h.stats.class.counts.clone())
    }

    #[test]
    fn linux_ping_pongs_as_in_fig2() {
        let (steps, c) = fig2(WakePolicy::Linux);
        assert_eq!(steps, vec![(0, 0, 1), (0, 1, 0), (1, 0, 1), (0, 1, 0), (0, 0, 0)]);
        assert_eq!((c.wakeup_affine, c.wakeup_other, c.unintended), (3, 1, 3));
        assert_eq!((c.settle_episodes, c.settle_wakeups_max), (1, 3));
    }

    #[test]
    fn goda_rfs_keeps_the_task_until_the_interrupt_follows() {
        let (steps, c) = fig2(WakePolicy::GodaRfs);
        // #1 moves it to the idle sibling; #2 (the interrupt still on CPU 0) keeps it on CPU 1;
        // #3 comes from CPU 1: they agree, placement is free again and CPU 1 is idle.
        assert_eq!(steps[..3], [(0, 0, 1), (0, 1, 1), (1, 1, 1)]);
        // #4 comes from CPU 0 after they agreed: placement is free again and it moves, a new
        // intended move (the previous wake-up did not move it), which the ban then protects.
        assert_eq!(steps[3..], [(0, 1, 0), (0, 0, 0)]);
        assert_eq!(c.unintended, 0);
        assert_eq!(c.wakeup_affine + c.wakeup_other, 2);
    }
}
