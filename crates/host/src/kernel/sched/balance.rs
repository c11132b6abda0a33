//! Load balancing as each era ran it (`kernel.scheduler`): Red Hat 2.4.18's O(1) balancer
//! (`o1.rs` decides, this file applies its pulls), Linux 3.2's periodic and new-idle balancing over
//! one domain spanning all CPUs (gated by `cfs32.rs`), and Linux 6.x's over its scheduling
//! domains (`cfs6.rs`). Every task moved is counted as a migration with its cause.

use crate::kernel::sched::cfs6::CACHE_NICE_TRIES;
use crate::kernel::sched::o1::BalanceView;
use crate::kernel::sched::placement::SchedDomains;
use crate::policies::Balancer;
use crate::sim::*;
use crate::types::*;

impl<M: Mechanisms> Host<M> {
    /// 2.4 O(1) `load_balance(this_rq, idle)`: pull what `sched_o1` chooses to `cpu`. From
    /// `schedule()` (`in_schedule`) the caller picks the next task itself.
    pub(crate) fn o1_balance(&mut self, cpu: usize, idle: bool, in_schedule: bool) {
        // The balancer reads the host (`BalanceView`): take its state out while it does.
        let Balancer::O1(slot) = &mut self.sched.balancer else { return };
        let mut o = std::mem::take(slot);
        let pulls = o.load_balance(self, cpu, idle);
        if let Balancer::O1(slot) = &mut self.sched.balancer {
            *slot = o;
        }
        let cause = if idle { MigrationCause::IdleBalance } else { MigrationCause::LoadBalance };
        for (pid, from) in pulls {
            let c = &mut self.cpus[from];
            let Some(i) = c.rq_cfs.iter().position(|&p| p == pid) else {
                // An RT task: from the RT queue.
                let Some(i) = c.rq_rt.iter().position(|&p| p == pid) else { continue };
                c.rq_rt.remove(i);
                self.sync_idle(from);
                self.migrate(pid, from, cpu, cause);
                self.enqueue(cpu, pid, false);
                if !in_schedule {
                    self.check_preempt(cpu, pid);
                }
                continue;
            };
            c.rq_cfs.swap_remove(i);
            self.sync_idle(from);
            self.migrate(pid, from, cpu, cause);
            self.enqueue(cpu, pid, false);
            if !in_schedule {
                self.check_preempt(cpu, pid);
            }
        }
    }

    /// Find the busiest other CPU and a queued (not running) task on it that `cpu` may run and
    /// whose move does not invert the imbalance.
    fn find_pull(&self, cpu: usize, this_load: u64, need_imbalance: bool) -> Option<(usize, usize)> {
        let imb = u64::from(self.cfg.kernel.imbalance_pct);
        let busiest = (0..self.cpus.len())
            .filter(|&c| c != cpu && !self.cpus[c].rq_cfs.is_empty())
            .max_by_key(|&c| (self.cpu_load(c), std::cmp::Reverse(c)))?;
        let bl = self.cpu_load(busiest);
        if need_imbalance && bl * 100 <= this_load * imb {
            return None;
        }
        let rq = &self.cpus[busiest].rq_cfs;
        let i = (0..rq.len()).find(|&i| {
            let p = &self.procs[rq[i] as usize];
            !p.pinned_kthread && p.allowed & (1u128 << cpu) != 0 && this_load + p.weight <= bl - p.weight
        })?;
        Some((busiest, i))
    }

    pub(crate) fn periodic_balance(&mut self, cpu: usize) {
        let this_load = self.cpu_load(cpu);
        if let Some((busiest, i)) = self.find_pull(cpu, this_load, true) {
            let pid = self.cpus[busiest].rq_cfs.swap_remove(i);
            self.sync_idle(busiest);
            self.migrate(pid, busiest, cpu, MigrationCause::LoadBalance);
            self.enqueue(cpu, pid, false);
            self.check_preempt(cpu, pid);
        }
    }

    /// New-idle balancing: a CPU going idle pulls a waiting task, if its `avg_idle` says
    /// idling here lasts long enough (`kernel/sched/cfs32.rs`).
    pub(crate) fn idle_balance(&mut self, cpu: usize) {
        let now = self.now().ns();
        if let Balancer::Cfs(g) = &mut self.sched.balancer {
            if !g.enter(cpu, now) {
                return;
            }
        }
        if let Some((busiest, i)) = self.find_pull(cpu, 0, false) {
            if let Balancer::Cfs(g) = &mut self.sched.balancer {
                g.pulled(cpu);
            }
            let pid = self.cpus[busiest].rq_cfs.swap_remove(i);
            self.sync_idle(busiest);
            self.migrate(pid, busiest, cpu, MigrationCause::IdleBalance);
            self.enqueue(cpu, pid, false);
        }
    }

    /// The scheduling domains of `cpu` from the lowest up (`SchedDomains::build`, at boot).
    fn cfs6_domains(&self, cpu: usize) -> SchedDomains {
        self.sched.masks.domains[cpu]
    }

    /// A task `cpu` may pull from the run queue with the most tasks (at least two) in `span`
    /// (6.x `find_busiest_queue` for `migrate_task`, then `detach_tasks` from the least
    /// recently run end), subject to `can_migrate_task`: affinity, not a pinned kthread, not
    /// cache-hot unless balancing at this level failed `> cache_nice_tries` times.
    fn cfs6_find_pull(&self, cpu: usize, level: usize, span: u128, failed: u32) -> Option<(usize, usize)> {
        let now = self.now().ns();
        let mig = self.cfg.kernel.sched_migration_cost_us * 1000;
        let mut best: Option<(usize, usize)> = None;
        // Only CPUs with a queued fair task can qualify: walking the queued mask instead of the
        // span and testing each CPU's queue (and `nr_running` only for those) was ~500 of
        // find_pull's ~1,150 instructions a call over 63 CPUs in the 64-CPU bench case.
        let mut m = span & !(1u128 << cpu) & self.queued_mask();
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            let nr = BalanceView::nr_running(self, c);
            if nr >= 2 && best.is_none_or(|(_, b)| nr > b) {
                best = Some((c, nr));
            }
        }
        let (busiest, _) = best?;
        let rq = &self.cpus[busiest].rq_cfs;
        (0..rq.len())
            .filter(|&i| {
                let p = &self.procs[rq[i] as usize];
                !p.pinned_kthread
                    && p.allowed & (1u128 << cpu) != 0
                    && crate::kernel::sched::cfs6::can_migrate_hot(
                        p.left_cpu_at.ns(),
                        now,
                        mig,
                        failed,
                        CACHE_NICE_TRIES[level],
                    )
            })
            .min_by_key(|&i| (self.procs[rq[i] as usize].left_cpu_at, rq[i]))
            .map(|i| (busiest, i))
    }

    /// The CPUs with a queued fair task (`SchedMasks::queued`).
    fn queued_mask(&self) -> u128 {
        debug_assert_eq!(
            self.sched.masks.queued,
            (0..self.cpus.len()).filter(|&c| !self.cpus[c].rq_cfs.is_empty()).fold(0u128, |m, c| m | 1u128 << c),
            "queued mask (seed {})",
            self.cfg.seed
        );
        self.sched.masks.queued
    }

    /// Move queued task `i` of `from` to `cpu`.
    fn cfs6_pull(&mut self, cpu: usize, from: usize, i: usize, cause: MigrationCause) -> Pid {
        let pid = self.cpus[from].rq_cfs.swap_remove(i);
        self.sync_idle(from);
        self.migrate(pid, from, cpu, cause);
        self.enqueue(cpu, pid, false);
        pid
    }

    /// Linux 6.x `newidle_balance` (see `kernel/sched/cfs6.rs`): called from `schedule()` with
    /// nothing to run; the caller picks the next task itself.
    pub(crate) fn cfs6_newidle_balance(&mut self, cpu: usize) {
        let now = self.now().ns();
        let per_cpu_ns = self.cfg.profile.costs.newidle_balance_per_cpu_ns;
        let doms = self.cfs6_domains(cpu);
        let domains = doms.as_slice();
        let Balancer::Cfs6(b) = &mut self.sched.balancer else { return };
        b.idle_stamp[cpu] = Some(now);
        let avg_idle = b.avg_idle_ns[cpu];
        let first_cost = if domains.is_empty() { 0 } else { per_cpu_ns * u64::from(doms.weight(0)) };
        if !b.overload || domains.is_empty() || avg_idle < first_cost {
            return;
        }
        let mut failed = [0u32; 3];
        for (k, &(l, _)) in domains.iter().enumerate() {
            failed[k] = b.nr_balance_failed[cpu][l];
        }
        let mut curr_cost = 0;
        let mut pulled = false;
        for (k, &(level, span)) in domains.iter().enumerate() {
            let cost = per_cpu_ns * u64::from(doms.weight(k));
            if avg_idle < curr_cost + cost {
                break;
            }
            if let Some((from, i)) = self.cfs6_find_pull(cpu, level, span, failed[k]) {
                self.cfs6_pull(cpu, from, i, MigrationCause::IdleBalance);
                pulled = true;
            }
            curr_cost += cost;
            if pulled {
                break;
            }
        }
        if let Balancer::Cfs6(b) = &mut self.sched.balancer {
            if pulled {
                b.idle_stamp[cpu] = None;
            }
            b.max_idle_balance_cost_ns[cpu] = b.max_idle_balance_cost_ns[cpu].max(curr_cost);
        }
    }

    /// Linux 6.x `scheduler_tick` → `trigger_load_balance` → `rebalance_domains` on `cpu`:
    /// each domain whose interval has passed is balanced (see `kernel/sched/cfs6.rs`).
    pub(crate) fn cfs6_tick(&mut self, cpu: usize) {
        let now = self.now().ns();
        let task_ns = {
            let a = &self.cpus[cpu].acct_ns;
            a[CpuState::User as usize] + a[CpuState::System as usize]
        };
        let busy = self.cpus[cpu].curr.is_some();
        let domains = self.cfs6_domains(cpu);
        let top_domain = domains.as_slice().last().map(|&(l, _)| l);
        let imb = self.cfg.kernel.imbalance_pct;
        let llc_id = self.cpus[cpu].llc as usize;
        let Balancer::Cfs6(b) = &mut self.sched.balancer else { return };
        b.sample_util(cpu, task_ns, now);
        let mut due = [false; 3];
        for (k, &(l, _)) in domains.as_slice().iter().enumerate() {
            due[k] = now >= b.next_balance_ns[cpu][l];
        }
        for (k, &(level, span)) in domains.as_slice().iter().enumerate() {
            if !due[k] {
                continue;
            }
            let Balancer::Cfs6(b) = &mut self.sched.balancer else { return };
            if span == self.sched.masks.llc[cpu] {
                b.update_idle_cpu_scan(llc_id, span, imb);
            }
            if Some(level) == top_domain {
                // update_sd_lb_stats at the top domain: rd->overload = some rq has > 1 task.
                let over = (0..self.cpus.len()).any(|c| BalanceView::nr_running(self, c) >= 2);
                if let Balancer::Cfs6(b) = &mut self.sched.balancer {
                    b.overload = over;
                }
            }
            let moved = self.cfs6_periodic(cpu, level, span);
            let Balancer::Cfs6(b) = &mut self.sched.balancer else { return };
            // sd->balance_interval: back to min_interval (the span's CPU count in ms) after a
            // move, else doubled up to max_interval; times busy_factor while busy.
            let min_ms = u64::from(span.count_ones());
            let iv = &mut b.interval_ms[cpu][level];
            *iv = if moved { min_ms } else { ((*iv).max(min_ms) * 2).min(2 * min_ms) };
            let ms = if busy { *iv * crate::kernel::sched::cfs6::BUSY_FACTOR } else { *iv };
            b.next_balance_ns[cpu][level] = now + ms * 1_000_000;
        }
    }

    /// One periodic `load_balance` of `span` at `level` for `cpu`. An idle `cpu` (its group
    /// `group_has_spare`) pulls from the run queue with the most tasks, at least two, as
    /// `cfs6_find_pull` (6.x `calculate_imbalance` fills spare capacity from an overloaded
    /// group). A busy one keeps the 3.2 weighted-load pull (`find_pull`) (busiest queue above
    /// `imbalance_pct`, no inversion). Both obey `can_migrate_task`'s cache-hot rule;
    /// `nr_balance_failed` counts imbalances that moved nothing.
    fn cfs6_periodic(&mut self, cpu: usize, level: usize, span: u128) -> bool {
        let now = self.now().ns();
        let mig = self.cfg.kernel.sched_migration_cost_us * 1000;
        let Balancer::Cfs6(b) = &self.sched.balancer else { return false };
        let failed = b.nr_balance_failed[cpu][level];
        if self.cpu_idle(cpu) {
            let imbalanced = {
                let mut m = span & !(1u128 << cpu) & self.queued_mask();
                let mut any = false;
                while m != 0 {
                    let c = m.trailing_zeros() as usize;
                    m &= m - 1;
                    if BalanceView::nr_running(self, c) >= 2 {
                        any = true;
                        break;
                    }
                }
                any
            };
            let found = self.cfs6_find_pull(cpu, level, span, failed);
            if let Some((from, i)) = found {
                let pid = self.cfs6_pull(cpu, from, i, MigrationCause::LoadBalance);
                self.check_preempt(cpu, pid);
            }
            if let Balancer::Cfs6(b) = &mut self.sched.balancer {
                let f = &mut b.nr_balance_failed[cpu][level];
                *f = if imbalanced && found.is_none() { f.saturating_add(1) } else { 0 };
            }
            return found.is_some();
        }
        let this_load = self.cpu_load(cpu);
        let imb = u64::from(self.cfg.kernel.imbalance_pct);
        let mut best: Option<(usize, u64)> = None;
        let mut m = span & !(1u128 << cpu) & self.queued_mask();
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            let l = self.cpu_load(c);
            if best.is_none_or(|(_, bl)| l > bl) {
                best = Some((c, l));
            }
        }
        let result = match best {
            Some((busiest, bl)) if bl * 100 > this_load * imb => {
                let rq = &self.cpus[busiest].rq_cfs;
                let pick = (0..rq.len()).find(|&i| {
                    let p = &self.procs[rq[i] as usize];
                    !p.pinned_kthread
                        && p.allowed & (1u128 << cpu) != 0
                        && this_load + p.weight <= bl - p.weight
                        && crate::kernel::sched::cfs6::can_migrate_hot(
                            p.left_cpu_at.ns(),
                            now,
                            mig,
                            failed,
                            CACHE_NICE_TRIES[level],
                        )
                });
                Some(pick.map(|i| (busiest, i)))
            }
            _ => None, // balanced
        };
        let moved = match result {
            Some(Some((from, i))) => {
                let pid = self.cfs6_pull(cpu, from, i, MigrationCause::LoadBalance);
                self.check_preempt(cpu, pid);
                true
            }
            _ => false,
        };
        if let Balancer::Cfs6(b) = &mut self.sched.balancer {
            let f = &mut b.nr_balance_failed[cpu][level];
            *f = match result {
                Some(None) => f.saturating_add(1),
                _ => 0,
            };
        }
        moved
    }
}
