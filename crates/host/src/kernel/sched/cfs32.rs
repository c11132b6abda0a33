//! Linux 3.2 CFS's gate on new-idle balancing (`kernel.scheduler = "cfs"`): a CPU about to go
//! idle pulls a task only if it has, on average, stayed idle long enough for the pull to pay.
//!
//! Linux 3.2 kernel/sched_fair.c `idle_balance` (the gate came with 2.6.35's "sched: Rate-limit
//! newidle"):
//!
//! ```c
//! this_rq->idle_stamp = this_rq->clock;
//! if (this_rq->avg_idle < sysctl_sched_migration_cost)
//!         return;
//! ... load_balance(..., CPU_NEWLY_IDLE, ...) on each domain; if (pulled_task) { this_rq->idle_stamp = 0; break; }
//! ```
//!
//! and kernel/sched.c `ttwu_do_wakeup`, when a task is woken onto the run queue:
//!
//! ```c
//! if (rq->idle_stamp) {
//!         u64 delta = rq->clock - rq->idle_stamp;
//!         u64 max = 2*sysctl_sched_migration_cost;
//!         if (delta > max) rq->avg_idle = max;
//!         else update_avg(&rq->avg_idle, delta);      /* avg += (s64)(sample - avg) >> 3 */
//!         rq->idle_stamp = 0;
//! }
//! ```
//!
//! with `rq->avg_idle = 2*sysctl_sched_migration_cost` at boot (`sched_init`) and
//! `sysctl_sched_migration_cost` = 500 us (`kernel.sched_migration_cost_us`). So a CPU woken
//! often (short idle periods) stops pulling tasks when it goes idle.

/// Per-CPU `avg_idle` state of the 3.2 era.
#[derive(Clone, Debug)]
pub struct Cfs32Idle {
    /// `rq->avg_idle`, ns.
    pub avg_idle_ns: Vec<u64>,
    /// `rq->idle_stamp` (None = 0): when `idle_balance` last ran without pulling.
    pub idle_stamp: Vec<Option<u64>>,
    /// `sysctl_sched_migration_cost`, ns.
    pub migration_cost_ns: u64,
}

impl Cfs32Idle {
    pub fn new(ncpu: usize, migration_cost_ns: u64) -> Cfs32Idle {
        Cfs32Idle { avg_idle_ns: vec![2 * migration_cost_ns; ncpu], idle_stamp: vec![None; ncpu], migration_cost_ns }
    }

    /// `idle_balance` on `cpu` at `now_ns`: stamp the idle entry; may it balance?
    pub fn enter(&mut self, cpu: usize, now_ns: u64) -> bool {
        self.idle_stamp[cpu] = Some(now_ns);
        self.avg_idle_ns[cpu] >= self.migration_cost_ns
    }

    /// `idle_balance` pulled a task: the CPU is not going idle after all.
    pub fn pulled(&mut self, cpu: usize) {
        self.idle_stamp[cpu] = None;
    }

    /// `ttwu_do_wakeup` onto `cpu`'s run queue at `now_ns`: an idle period ends.
    pub fn wakeup(&mut self, cpu: usize, now_ns: u64) {
        if let Some(stamp) = self.idle_stamp[cpu].take() {
            let delta = now_ns.saturating_sub(stamp);
            let max = 2 * self.migration_cost_ns;
            if delta > max {
                self.avg_idle_ns[cpu] = max;
            } else {
                let avg = self.avg_idle_ns[cpu] as i64;
                // update_avg: `*avg += diff >> 3` (an arithmetic shift: rounds toward -inf).
                self.avg_idle_ns[cpu] = (avg + ((delta as i64 - avg) >> 3)).max(0) as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cfs32Idle;

    #[test]
    fn short_idle_periods_close_the_gate_and_long_ones_reopen_it() {
        let mut g = Cfs32Idle::new(1, 500_000);
        assert_eq!(g.avg_idle_ns[0], 1_000_000);
        // 20 idle periods of 50 us: avg falls by an eighth of the gap each time, below 500 us.
        for i in 0..20u64 {
            assert_eq!(g.enter(0, i * 1_000_000), g.avg_idle_ns[0] >= 500_000);
            g.wakeup(0, i * 1_000_000 + 50_000);
        }
        assert!(g.avg_idle_ns[0] < 500_000, "{}", g.avg_idle_ns[0]);
        assert!(!g.enter(0, 100_000_000));
        // One idle period longer than 2 x migration cost sets avg_idle to that maximum.
        g.wakeup(0, 102_000_000);
        assert_eq!(g.avg_idle_ns[0], 1_000_000);
        assert!(g.enter(0, 103_000_000));
        // A pull clears the stamp: the next wake-up does not count an idle period.
        g.pulled(0);
        g.wakeup(0, 104_000_000);
        assert_eq!(g.avg_idle_ns[0], 1_000_000);
        // update_avg rounds toward -inf: 1,000,000 + (999,999 - 1,000,000) >> 3 = 999,999.
        g.enter(0, 0);
        g.wakeup(0, 999_999);
        assert_eq!(g.avg_idle_ns[0], 999_999);
    }
}
