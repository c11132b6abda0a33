//! The process scheduler: per-CPU run queues with a CFS-like fair class (Linux's nice→weight
//! table, vruntime, targeted latency and minimum granularity, wake-up preemption with
//! `sched_wakeup_granularity`, sleeper placement at `min_vruntime - latency/2`) below a SCHED_FIFO
//! class; the HZ tick; wake-up placement through the `select_task_rq` policy; periodic and
//! new-idle load balancing over one domain spanning all CPUs. Every migration is counted by cause.

use crate::placement::SchedDomains;
use crate::policies::Balancer;
use crate::sched_cfs6::CACHE_NICE_TRIES;
use crate::sched_o1::{BalanceView, O1Balance, Queued};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;

impl Host {
    /// Charge `dt` ns to `pid`'s vruntime, and to its CPU time if `own` (task context).
    pub fn charge_process(&mut self, pid: Pid, dt: u64, own: bool) {
        let p = &mut self.procs[pid as usize];
        if own {
            p.cpu_ns += dt;
        }
        if p.rt.is_none() {
            // A nice-0 task's vruntime advances by `dt` itself (the division is exact then; below
            // 2^54 ns the product cannot overflow either), skipping a 64-bit division per call.
            p.vruntime += if p.weight == NICE_0_WEIGHT && dt < 1 << 54 { dt } else { dt * NICE_0_WEIGHT / p.weight };
        }
    }

    /// `weighted_cpuload`: the fair-class weight queued on `cpu` (running task included).
    pub fn cpu_load(&self, cpu: usize) -> u64 {
        let c = &self.cpus[cpu];
        let mut load: u64 = c.rq_cfs.iter().map(|&p| self.procs[p as usize].weight).sum();
        if let Some(cur) = c.curr {
            let p = &self.procs[cur as usize];
            if p.rt.is_none() && p.state == ProcState::Runnable {
                load += p.weight;
            }
        }
        load
    }

    /// `idle_cpu`: nothing running or queued (interrupt handlers don't count).
    pub fn cpu_idle(&self, cpu: usize) -> bool {
        let c = &self.cpus[cpu];
        c.curr.is_none() && c.rq_cfs.is_empty() && c.rq_rt.is_empty()
    }

    fn update_min_vruntime(&mut self, cpu: usize) {
        let c = &self.cpus[cpu];
        let mut m = u64::MAX;
        if let Some(cur) = c.curr {
            if self.procs[cur as usize].rt.is_none() {
                m = self.procs[cur as usize].vruntime;
            }
        }
        for &p in &c.rq_cfs {
            m = m.min(self.procs[p as usize].vruntime);
        }
        if m != u64::MAX {
            let c = &mut self.cpus[cpu];
            c.min_vruntime = c.min_vruntime.max(m);
        }
    }

    fn enqueue(&mut self, cpu: usize, pid: Pid, wakeup: bool) {
        self.update_min_vruntime(cpu);
        self.enq_seq += 1;
        let seq = self.enq_seq;
        let latency = self.cfg.kernel.sched_latency_us * 1000;
        let minv = self.cpus[cpu].min_vruntime;
        debug_assert!(
            self.cpus[cpu].curr != Some(pid) && !self.cpus[cpu].rq_cfs.contains(&pid) && !self.cpus[cpu].rq_rt.contains(&pid),
            "task {pid} queued twice on cpu {cpu} (seed {})",
            self.cfg.seed
        );
        let p = &mut self.procs[pid as usize];
        p.enq_seq = seq;
        p.cpu = cpu as u32;
        if p.rt.is_some() {
            self.cpus[cpu].rq_rt.push(pid);
        } else {
            if wakeup {
                // place_entity() with GENTLE_FAIR_SLEEPERS: credit at most half a latency period.
                p.vruntime = p.vruntime.max(minv.saturating_sub(latency / 2));
            }
            self.cpus[cpu].rq_cfs.push(pid);
            self.masks.set_queued(cpu, true);
        }
        self.masks.set_idle(cpu, false);
        // add_nr_running (Linux 6.x): a second runnable task sets the root domain's overload.
        if matches!(&self.balancer, Balancer::Cfs6(b) if !b.overload) && BalanceView::nr_running(self, cpu) >= 2 {
            if let Balancer::Cfs6(b) = &mut self.balancer {
                b.overload = true;
            }
        }
    }

    /// Bring the idle-CPU and queued-CPU masks up to date for `cpu` after its run queue or
    /// `curr` changed.
    fn sync_idle(&mut self, cpu: usize) {
        let idle = self.cpu_idle(cpu);
        self.masks.set_idle(cpu, idle);
        let queued = !self.cpus[cpu].rq_cfs.is_empty();
        self.masks.set_queued(cpu, queued);
    }

    /// Move a (not running) task's home from `from` to `to`, renormalising its vruntime.
    fn migrate(&mut self, pid: Pid, from: usize, to: usize, cause: MigrationCause) {
        let (fm, tm) = (self.cpus[from].min_vruntime, self.cpus[to].min_vruntime);
        let p = &mut self.procs[pid as usize];
        p.vruntime = (p.vruntime + tm).saturating_sub(fm);
        p.cpu = to as u32;
        p.migrations += 1;
        self.wake.task_migrated(pid);
        self.stats.migrations[cause as usize] += 1;
        self.stats.record_migration(self.now, pid, from, to, cause);
    }

    /// `try_to_wake_up`: place the task with the wake policy, queue it, maybe preempt.
    pub fn wake_up(&mut self, pid: Pid, waker: usize, _kthread: bool) {
        let st = self.procs[pid as usize].state;
        if !matches!(st, ProcState::BlockedRecv | ProcState::BlockedSend | ProcState::Sleeping | ProcState::KsoftirqdIdle) {
            return;
        }
        if !self.speed_admit(pid, true) {
            return; // speed-regulated: queued at its next allocated slot (regulate.rs)
        }
        self.wake_up_admitted(pid, waker);
    }

    /// A throttled regulated process's slot begins: queue it as a wake-up from its own CPU.
    pub fn enqueue_woken(&mut self, pid: Pid) {
        let cpu = self.procs[pid as usize].cpu as usize;
        self.wake_up_admitted(pid, cpu);
    }

    /// Remove a queued (not running) task from `cpu`'s run queue.
    pub fn dequeue(&mut self, cpu: usize, pid: Pid) {
        let c = &mut self.cpus[cpu];
        if let Some(i) = c.rq_cfs.iter().position(|&p| p == pid) {
            c.rq_cfs.swap_remove(i);
        } else if let Some(i) = c.rq_rt.iter().position(|&p| p == pid) {
            c.rq_rt.remove(i);
        }
        self.sync_idle(cpu);
    }

    fn wake_up_admitted(&mut self, pid: Pid, waker: usize) {
        let prev = self.procs[pid as usize].cpu as usize;
        let target = if self.procs[pid as usize].pinned_kthread {
            prev
        } else {
            self.wake.select_task_rq(self, pid, prev, waker)
        };
        self.wake.task_woken(pid, waker, prev);
        self.stats.record_wakeup(self.now, pid, waker, prev, target);
        if target != prev {
            self.migrate(pid, prev, target, MigrationCause::Wakeup);
        }
        self.procs[pid as usize].state = ProcState::Runnable;
        self.enqueue(target, pid, true);
        match &mut self.balancer {
            Balancer::Cfs6(b) => b.ttwu_idle_end(target, self.now.ns()),
            Balancer::Cfs(g) => g.wakeup(target, self.now.ns()),
            Balancer::O1(_) => {}
        }
        self.check_preempt(target, pid);
    }

    /// A process becomes runnable for the first time (fork placement: an idle allowed CPU, else
    /// the least loaded one).
    pub fn proc_start(&mut self, pid: Pid) {
        let allowed = self.procs[pid as usize].allowed;
        let n = self.cpus.len();
        let cpu = (0..n)
            .filter(|&c| allowed & (1u128 << c) != 0)
            .min_by_key(|&c| (!self.cpu_idle(c), self.cpu_load(c), c))
            .expect("validated: at least one allowed CPU");
        self.procs[pid as usize].state = ProcState::Runnable;
        self.procs[pid as usize].cpu = cpu as u32;
        self.procs[pid as usize].vruntime = self.cpus[cpu].min_vruntime;
        self.speed_init(pid);
        if !self.speed_admit(pid, false) {
            return;
        }
        self.enqueue(cpu, pid, false);
        self.check_preempt(cpu, pid);
    }

    /// `check_preempt_curr` after `pid` was queued on `cpu`.
    fn check_preempt(&mut self, cpu: usize, pid: Pid) {
        let Some(cur) = self.cpus[cpu].curr else {
            return self.resched(cpu);
        };
        if self.top_level(cpu) == Some(Level::Process) {
            self.account(cpu); // bring curr's vruntime up to date
        }
        let (p, c) = (&self.procs[pid as usize], &self.procs[cur as usize]);
        let preempt = match (p.rt, c.rt) {
            (Some(a), Some(b)) => a > b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => {
                let gran = self.cfg.kernel.sched_wakeup_granularity_us * 1000 * NICE_0_WEIGHT / p.weight;
                c.vruntime > p.vruntime + gran
            }
        };
        if preempt || c.state != ProcState::Runnable {
            self.resched(cpu);
        }
    }

    /// Set need_resched; act at once if the CPU is at process level or idle.
    pub fn resched(&mut self, cpu: usize) {
        self.cpus[cpu].need_resched = true;
        match self.top_level(cpu) {
            None => self.schedule(cpu),
            Some(Level::Process) => self.schedule(cpu),
            _ => {}
        }
    }

    fn pick_next(&mut self, cpu: usize) -> Option<Pid> {
        let c = &mut self.cpus[cpu];
        if !c.rq_rt.is_empty() {
            let procs = &self.procs;
            let i = (0..c.rq_rt.len())
                .max_by_key(|&i| {
                    let p = &procs[c.rq_rt[i] as usize];
                    (p.rt, std::cmp::Reverse(p.enq_seq))
                })
                .expect("non-empty");
            return Some(c.rq_rt.remove(i));
        }
        if c.rq_cfs.is_empty() {
            return None;
        }
        let procs = &self.procs;
        let i = (0..c.rq_cfs.len())
            .min_by_key(|&i| {
                let p = &procs[c.rq_cfs[i] as usize];
                (p.vruntime, p.enq_seq)
            })
            .expect("non-empty");
        let pid = c.rq_cfs.swap_remove(i);
        let queued = !c.rq_cfs.is_empty();
        self.masks.set_queued(cpu, queued);
        Some(pid)
    }

    /// `schedule()`: switch the CPU to the best runnable task (or idle). Must be called at
    /// process level or with an empty stack.
    pub fn schedule(&mut self, cpu: usize) {
        self.cpus[cpu].need_resched = false;
        let prev = self.cpus[cpu].curr;
        match self.top_level(cpu) {
            Some(Level::Process) => {
                self.pause_top(cpu);
                let f = self.pop_frame(cpu).expect("process frame");
                let pid = prev.expect("process frame without curr");
                if f.work == Work::ProcUnit {
                    let p = &mut self.procs[pid as usize];
                    p.unit_remaining = f.remaining;
                    p.unit_state = f.state;
                }
            }
            None => self.account(cpu),
            Some(l) => panic!("schedule() at {l:?} level on cpu {cpu} (seed {})", self.cfg.seed),
        }
        debug_assert!(self.cpus[cpu].stack.is_empty());
        self.cpus[cpu].curr = None;
        if let Some(pid) = prev {
            self.procs[pid as usize].left_cpu_at = self.now;
            if self.procs[pid as usize].state == ProcState::Runnable {
                self.enqueue(cpu, pid, false);
            }
        }
        self.update_min_vruntime(cpu);
        let mut next = self.pick_next(cpu);
        if next.is_none() {
            match self.balancer {
                Balancer::Cfs(_) => self.idle_balance(cpu),
                Balancer::O1(_) => self.o1_balance(cpu, true, true),
                Balancer::Cfs6(_) => self.cfs6_newidle_balance(cpu),
            }
            next = self.pick_next(cpu);
        }
        let hook_ns = self.switch_hook(cpu, next);
        let Some(pid) = next else {
            if prev.is_some() {
                self.cpus[cpu].idle_since = self.now;
            }
            self.sync_idle(cpu);
            self.start_top(cpu);
            return;
        };
        self.cpus[cpu].curr = Some(pid);
        self.masks.set_idle(cpu, false);
        self.cpus[cpu].curr_since = self.now;
        let mut cost = hook_ns + if prev != Some(pid) { self.cfg.profile.costs.context_switch_ns } else { 0 };
        let p = &mut self.procs[pid as usize];
        if p.last_ran.is_some_and(|l| l as usize != cpu) {
            // Cold caches and TLB on a CPU the task didn't run on last.
            let cache = &self.cfg.profile.cache;
            cost += cache.migrate_warmup_ns;
            self.stats.llc_load_misses += cache.migrate_llc_load_misses;
            self.stats.llc_store_misses += cache.migrate_llc_store_misses;
            self.stats.dtlb_load_misses += cache.migrate_dtlb_load_misses;
            self.stats.dtlb_store_misses += cache.migrate_dtlb_store_misses;
        }
        p.last_ran = Some(cpu as u32);
        if cost > 0 {
            self.push_frame(cpu, Work::Switch, CpuState::System, cost);
        } else {
            self.load_proc_unit(cpu, pid);
        }
    }

    /// Put `pid`'s saved unit on the CPU (or step its program if the unit is finished).
    pub fn load_proc_unit(&mut self, cpu: usize, pid: Pid) {
        let p = &self.procs[pid as usize];
        let (state, remaining) = (p.unit_state, p.unit_remaining);
        if self.cpus[cpu].stack.is_empty() {
            self.cpus[cpu].stack.push(Frame { work: Work::ProcUnit, state, remaining });
        } else {
            self.trace_end_top(cpu);
            let f = self.cpus[cpu].stack.last_mut().expect("frame");
            *f = Frame { work: Work::ProcUnit, state, remaining };
        }
        self.trace_begin_top(cpu);
        if remaining == 0 {
            self.account(cpu);
            self.proc_step_and_run(cpu, pid);
        } else {
            self.start_top(cpu);
        }
    }

    /// Timer tick: fair-class slice expiry and periodic load balancing.
    pub fn scheduler_tick(&mut self, cpu: usize) {
        if let Some(cur) = self.cpus[cpu].curr {
            let p = &self.procs[cur as usize];
            if p.rt.is_none() && !self.cpus[cpu].rq_cfs.is_empty() {
                let k = &self.cfg.kernel;
                let nr = self.cpus[cpu].rq_cfs.len() as u64 + 1;
                let min_gran = k.sched_min_granularity_us * 1000;
                let period = (k.sched_latency_us * 1000).max(nr * min_gran);
                let total = self.cpu_load(cpu).max(1);
                let slice = (period * p.weight / total).max(min_gran);
                let ran = self.now.since(self.cpus[cpu].curr_since).ns();
                let leftmost = self.cpus[cpu]
                    .rq_cfs
                    .iter()
                    .map(|&q| self.procs[q as usize].vruntime)
                    .min()
                    .unwrap_or(u64::MAX);
                if ran > slice || p.vruntime.saturating_sub(leftmost) > slice {
                    self.cpus[cpu].need_resched = true;
                }
            }
        }
        match self.balancer {
            Balancer::Cfs(_) => {
                if self.now >= self.cpus[cpu].next_balance {
                    self.cpus[cpu].next_balance = self.now + Time::from_ms(self.cfg.kernel.balance_interval_ms);
                    self.periodic_balance(cpu);
                }
            }
            Balancer::O1(_) => {
                // idle_tick() / the end of scheduler_tick() (2.4 O(1) kernel/sched.c).
                let idle = self.cpus[cpu].curr.is_none();
                if let Some(idle) = O1Balance::tick_due(self, idle) {
                    self.o1_balance(cpu, idle, false);
                }
            }
            Balancer::Cfs6(_) => self.cfs6_tick(cpu),
        }
    }

    /// 2.4 O(1) `load_balance(this_rq, idle)`: pull what `sched_o1` chooses to `cpu`. From
    /// `schedule()` (`in_schedule`) the caller picks the next task itself.
    fn o1_balance(&mut self, cpu: usize, idle: bool, in_schedule: bool) {
        // The balancer reads the host (`BalanceView`): take its state out while it does.
        let Balancer::O1(slot) = &mut self.balancer else { return };
        let mut o = std::mem::take(slot);
        let pulls = o.load_balance(self, cpu, idle);
        if let Balancer::O1(slot) = &mut self.balancer {
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

    fn periodic_balance(&mut self, cpu: usize) {
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
    /// idling here lasts long enough (`sched_cfs32.rs`).
    fn idle_balance(&mut self, cpu: usize) {
        let now = self.now.ns();
        if let Balancer::Cfs(g) = &mut self.balancer {
            if !g.enter(cpu, now) {
                return;
            }
        }
        if let Some((busiest, i)) = self.find_pull(cpu, 0, false) {
            if let Balancer::Cfs(g) = &mut self.balancer {
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
        self.masks.domains[cpu]
    }

    /// A task `cpu` may pull from the run queue with the most tasks (at least two) in `span`
    /// (6.x `find_busiest_queue` for `migrate_task`, then `detach_tasks` from the least
    /// recently run end), subject to `can_migrate_task`: affinity, not a pinned kthread, not
    /// cache-hot unless balancing at this level failed `> cache_nice_tries` times.
    fn cfs6_find_pull(&self, cpu: usize, level: usize, span: u128, failed: u32) -> Option<(usize, usize)> {
        let now = self.now.ns();
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
                    && crate::sched_cfs6::can_migrate_hot(p.left_cpu_at.ns(), now, mig, failed, CACHE_NICE_TRIES[level])
            })
            .min_by_key(|&i| (self.procs[rq[i] as usize].left_cpu_at, rq[i]))
            .map(|i| (busiest, i))
    }

    /// The CPUs with a queued fair task (`SchedMasks::queued`).
    fn queued_mask(&self) -> u128 {
        debug_assert_eq!(
            self.masks.queued,
            (0..self.cpus.len()).filter(|&c| !self.cpus[c].rq_cfs.is_empty()).fold(0u128, |m, c| m | 1u128 << c),
            "queued mask (seed {})",
            self.cfg.seed
        );
        self.masks.queued
    }

    /// Move queued task `i` of `from` to `cpu`.
    fn cfs6_pull(&mut self, cpu: usize, from: usize, i: usize, cause: MigrationCause) -> Pid {
        let pid = self.cpus[from].rq_cfs.swap_remove(i);
        self.sync_idle(from);
        self.migrate(pid, from, cpu, cause);
        self.enqueue(cpu, pid, false);
        pid
    }

    /// Linux 6.x `newidle_balance` (see `sched_cfs6.rs`): called from `schedule()` with
    /// nothing to run; the caller picks the next task itself.
    fn cfs6_newidle_balance(&mut self, cpu: usize) {
        let now = self.now.ns();
        let per_cpu_ns = self.cfg.profile.costs.newidle_balance_per_cpu_ns;
        let doms = self.cfs6_domains(cpu);
        let domains = doms.as_slice();
        let Balancer::Cfs6(b) = &mut self.balancer else { return };
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
        if let Balancer::Cfs6(b) = &mut self.balancer {
            if pulled {
                b.idle_stamp[cpu] = None;
            }
            b.max_idle_balance_cost_ns[cpu] = b.max_idle_balance_cost_ns[cpu].max(curr_cost);
        }
    }

    /// Linux 6.x `scheduler_tick` → `trigger_load_balance` → `rebalance_domains` on `cpu`:
    /// each domain whose interval has passed is balanced (see `sched_cfs6.rs`).
    fn cfs6_tick(&mut self, cpu: usize) {
        let now = self.now.ns();
        let task_ns = {
            let a = &self.cpus[cpu].acct_ns;
            a[CpuState::User as usize] + a[CpuState::System as usize]
        };
        let busy = self.cpus[cpu].curr.is_some();
        let domains = self.cfs6_domains(cpu);
        let top_domain = domains.as_slice().last().map(|&(l, _)| l);
        let imb = self.cfg.kernel.imbalance_pct;
        let llc_id = self.cpus[cpu].llc as usize;
        let Balancer::Cfs6(b) = &mut self.balancer else { return };
        b.sample_util(cpu, task_ns, now);
        let mut due = [false; 3];
        for (k, &(l, _)) in domains.as_slice().iter().enumerate() {
            due[k] = now >= b.next_balance_ns[cpu][l];
        }
        for (k, &(level, span)) in domains.as_slice().iter().enumerate() {
            if !due[k] {
                continue;
            }
            let Balancer::Cfs6(b) = &mut self.balancer else { return };
            if span == self.masks.llc[cpu] {
                b.update_idle_cpu_scan(llc_id, span, imb);
            }
            if Some(level) == top_domain {
                // update_sd_lb_stats at the top domain: rd->overload = some rq has > 1 task.
                let over = (0..self.cpus.len()).any(|c| BalanceView::nr_running(self, c) >= 2);
                if let Balancer::Cfs6(b) = &mut self.balancer {
                    b.overload = over;
                }
            }
            let moved = self.cfs6_periodic(cpu, level, span);
            let Balancer::Cfs6(b) = &mut self.balancer else { return };
            // sd->balance_interval: back to min_interval (the span's CPU count in ms) after a
            // move, else doubled up to max_interval; times busy_factor while busy.
            let min_ms = u64::from(span.count_ones());
            let iv = &mut b.interval_ms[cpu][level];
            *iv = if moved { min_ms } else { ((*iv).max(min_ms) * 2).min(2 * min_ms) };
            let ms = if busy { *iv * crate::sched_cfs6::BUSY_FACTOR } else { *iv };
            b.next_balance_ns[cpu][level] = now + ms * 1_000_000;
        }
    }

    /// One periodic `load_balance` of `span` at `level` for `cpu`. An idle `cpu` (its group
    /// `group_has_spare`) pulls from the run queue with the most tasks, at least two, as
    /// `cfs6_find_pull` (6.x `calculate_imbalance` fills spare capacity from an overloaded
    /// group). A busy one keeps `sched.rs`'s weighted-load pull (busiest queue above
    /// `imbalance_pct`, no inversion). Both obey `can_migrate_task`'s cache-hot rule;
    /// `nr_balance_failed` counts imbalances that moved nothing.
    fn cfs6_periodic(&mut self, cpu: usize, level: usize, span: u128) -> bool {
        let now = self.now.ns();
        let mig = self.cfg.kernel.sched_migration_cost_us * 1000;
        let Balancer::Cfs6(b) = &self.balancer else { return false };
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
            if let Balancer::Cfs6(b) = &mut self.balancer {
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
                        && crate::sched_cfs6::can_migrate_hot(p.left_cpu_at.ns(), now, mig, failed, CACHE_NICE_TRIES[level])
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
        if let Balancer::Cfs6(b) = &mut self.balancer {
            let f = &mut b.nr_balance_failed[cpu][level];
            *f = match result {
                Some(None) => f.saturating_add(1),
                _ => 0,
            };
        }
        moved
    }

    /// `set_user_nice()`: the new weight applies from the next accounting on; priority-aware
    /// policies that keep per-socket priorities update them here.
    pub fn set_nice(&mut self, pid: Pid, nice: i8) {
        let p = &mut self.procs[pid as usize];
        p.nice = nice;
        p.weight = nice_weight(nice);
        let s = p.sock;
        if s != NONE {
            self.socks[s as usize].level = sock_level(&self.procs, s);
        }
    }

    /// sched_yield(): to the back of the fair queue (or of its FIFO priority level).
    pub fn yield_curr(&mut self, cpu: usize, pid: Pid) {
        let maxv = self.cpus[cpu].rq_cfs.iter().map(|&q| self.procs[q as usize].vruntime).max();
        self.enq_seq += 1;
        let p = &mut self.procs[pid as usize];
        if p.rt.is_none() {
            if let Some(m) = maxv {
                p.vruntime = p.vruntime.max(m);
            }
        }
        p.enq_seq = self.enq_seq;
        self.cpus[cpu].need_resched = true;
    }
}

/// What wake-up placement policies may read (`wake::WakeView`).
impl crate::wake::WakeView for Host {
    fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }
    fn threads_per_core(&self) -> usize {
        self.cfg.profile.topology.threads_per_core as usize
    }
    fn core_of(&self, cpu: usize) -> u32 {
        self.cpus[cpu].core
    }
    fn llc_of(&self, cpu: usize) -> u32 {
        self.cpus[cpu].llc
    }
    fn cpu_load(&self, cpu: usize) -> u64 {
        Host::cpu_load(self, cpu)
    }
    fn cpu_idle(&self, cpu: usize) -> bool {
        debug_assert_eq!(self.masks.idle >> cpu & 1 != 0, Host::cpu_idle(self, cpu), "idle mask of cpu {cpu} (seed {})", self.cfg.seed);
        self.masks.idle >> cpu & 1 != 0
    }
    fn idle_mask(&self) -> u128 {
        debug_assert_eq!(
            self.masks.idle,
            (0..self.cpus.len()).filter(|&c| Host::cpu_idle(self, c)).fold(0u128, |m, c| m | 1u128 << c),
            "idle mask (seed {})",
            self.cfg.seed
        );
        self.masks.idle
    }
    fn llc_mask(&self, cpu: usize) -> u128 {
        self.masks.llc[cpu]
    }
    fn llc_weight(&self, cpu: usize) -> u32 {
        self.masks.llc_weight[cpu]
    }
    fn core_firsts(&self) -> u128 {
        self.masks.core_firsts
    }
    fn nr_running(&self, cpu: usize) -> usize {
        BalanceView::nr_running(self, cpu)
    }
    fn curr_pid(&self, cpu: usize) -> Option<Pid> {
        self.cpus[cpu].curr
    }
    fn jiffies(&self) -> u64 {
        self.now.ns() / self.tick_ns
    }
    fn hz(&self) -> u32 {
        self.cfg.kernel.hz
    }
    fn nr_idle_scan(&self, cpu: usize) -> Option<u32> {
        match &self.balancer {
            Balancer::Cfs6(b) => Some(b.nr_idle_scan[self.cpus[cpu].llc as usize]),
            _ => None,
        }
    }
    fn nr_fair_running(&self, cpu: usize) -> usize {
        let c = &self.cpus[cpu];
        c.rq_cfs.len() + usize::from(c.curr.is_some_and(|q| self.procs[q as usize].rt.is_none()))
    }
    fn curr_weight(&self, cpu: usize) -> Option<u64> {
        self.cpus[cpu].curr.map(|c| self.procs[c as usize].weight)
    }
    fn task(&self, pid: Pid) -> crate::wake::TaskInfo {
        let p = &self.procs[pid as usize];
        crate::wake::TaskInfo {
            allowed: p.allowed,
            rt: p.rt.is_some(),
            weight: p.weight,
            sync_wakeup: p.state == ProcState::BlockedRecv,
        }
    }
    fn wake_affine_enabled(&self) -> bool {
        self.cfg.kernel.wake_affine
    }
    fn imbalance_pct(&self) -> u32 {
        self.cfg.kernel.imbalance_pct
    }
}

/// What the 2.4 O(1) balancer may read (`sched_o1::BalanceView`).
impl BalanceView for Host {
    fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }
    fn nr_running(&self, cpu: usize) -> usize {
        let c = &self.cpus[cpu];
        let running = c.curr.is_some_and(|p| self.procs[p as usize].state == ProcState::Runnable);
        c.rq_cfs.len() + c.rq_rt.len() + usize::from(running)
    }
    fn queued(&self, cpu: usize) -> Vec<Queued> {
        let c = &self.cpus[cpu];
        c.rq_rt
            .iter()
            .chain(c.rq_cfs.iter())
            .map(|&pid| {
                let p = &self.procs[pid as usize];
                Queued {
                    pid,
                    // MAX_RT_PRIO - 1 - rt_priority for RT tasks, 120 + nice otherwise.
                    prio: p.rt.map_or(120 + i32::from(p.nice), |r| 99 - i32::from(r)),
                    enq_seq: p.enq_seq,
                    sleep_jiffy: p.left_cpu_at.ns() / self.tick_ns,
                    allowed: p.allowed,
                    pinned: p.pinned_kthread,
                }
            })
            .collect()
    }
    fn jiffies(&self) -> u64 {
        self.now.ns() / self.tick_ns
    }
    fn hz(&self) -> u32 {
        self.cfg.kernel.hz
    }
}
