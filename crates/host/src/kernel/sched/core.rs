//! The process scheduler: per-CPU run queues with a CFS-like fair class (Linux's nice→weight
//! table, vruntime, targeted latency and minimum granularity, wake-up preemption with
//! `sched_wakeup_granularity`, sleeper placement at `min_vruntime - latency/2`) below a SCHED_FIFO
//! class; the HZ tick; wake-up placement through the `select_task_rq` policy; nice and
//! sched_yield. Load balancing is in `balance.rs`. Every migration is counted by cause.

use crate::kernel::cpu::{Frame, Work};
use crate::kernel::sched::o1::{BalanceView, O1Balance, Queued};
use crate::kernel::task::sock_level;
use crate::kernel::task::ProcState;
use crate::policies::Balancer;
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;

impl<M: Mechanisms> Host<M> {
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

    pub(crate) fn enqueue(&mut self, cpu: usize, pid: Pid, wakeup: bool) {
        let tick = self.tick_ns();
        self.update_min_vruntime(cpu);
        self.sched.enq_seq += 1;
        let seq = self.sched.enq_seq;
        let latency = self.cfg.kernel.sched_latency_us * 1000;
        let minv = self.cpus[cpu].min_vruntime;
        debug_assert!(
            self.cpus[cpu].curr != Some(pid)
                && !self.cpus[cpu].rq_cfs.contains(&pid)
                && !self.cpus[cpu].rq_rt.contains(&pid),
            "task {pid} queued twice on cpu {cpu} (seed {})",
            self.cfg.seed
        );
        let o1 = self.cfg.kernel.o1_runqueue.then(|| (self.jiffies(), self.cfg.kernel.hz, self.cpus[cpu].o1_active));
        let p = &mut self.procs[pid as usize];
        p.enq_seq = seq;
        p.cpu = cpu as u32;
        if let Some((jiffies, hz, active)) = o1 {
            // activate_task / pull_task (2.5 kernel/sched.c): the tail of its list in the
            // active array; a woken normal task gets its sleep credit first.
            if wakeup && p.rt.is_none() {
                p.o1.activate(jiffies.saturating_sub(p.left_cpu_at.ns() / tick), hz);
            }
            p.o1.array = active;
            p.o1.requeue = false;
        }
        if p.rt.is_some() {
            self.cpus[cpu].rq_rt.push(pid);
        } else {
            if wakeup {
                // place_entity() with GENTLE_FAIR_SLEEPERS: credit at most half a latency period.
                p.vruntime = p.vruntime.max(minv.saturating_sub(latency / 2));
            }
            self.cpus[cpu].rq_cfs.push(pid);
            self.sched.masks.set_queued(cpu, true);
        }
        self.sched.masks.set_idle(cpu, false);
        // add_nr_running (Linux 6.x): a second runnable task sets the root domain's overload.
        if matches!(&self.sched.balancer, Balancer::Cfs6(b) if !b.overload) && BalanceView::nr_running(self, cpu) >= 2 {
            if let Balancer::Cfs6(b) = &mut self.sched.balancer {
                b.overload = true;
            }
        }
    }

    /// `schedule()` puts the task that was running back on `cpu`'s run queue. Under
    /// `kernel.o1_runqueue` it never left its array: a preempted task keeps its place in its
    /// list (`enq_seq`) and array; one whose slice expired or that yielded (`o1.requeue`) goes to
    /// the tail of the list its tick or yield chose.
    fn enqueue_prev(&mut self, cpu: usize, pid: Pid) {
        if !self.cfg.kernel.o1_runqueue {
            return self.enqueue(cpu, pid, false);
        }
        self.update_min_vruntime(cpu);
        let p = &mut self.procs[pid as usize];
        if p.o1.requeue {
            self.sched.enq_seq += 1;
            p.enq_seq = self.sched.enq_seq;
            p.o1.requeue = false;
        }
        if p.rt.is_some() {
            self.cpus[cpu].rq_rt.push(pid);
        } else {
            self.cpus[cpu].rq_cfs.push(pid);
            self.sched.masks.set_queued(cpu, true);
        }
        self.sched.masks.set_idle(cpu, false);
    }

    /// Bring the idle-CPU and queued-CPU masks up to date for `cpu` after its run queue or
    /// `curr` changed.
    pub(crate) fn sync_idle(&mut self, cpu: usize) {
        let idle = self.cpu_idle(cpu);
        self.sched.masks.set_idle(cpu, idle);
        let queued = !self.cpus[cpu].rq_cfs.is_empty();
        self.sched.masks.set_queued(cpu, queued);
    }

    /// Move a (not running) task's home from `from` to `to`, renormalising its vruntime.
    pub(crate) fn migrate(&mut self, pid: Pid, from: usize, to: usize, cause: MigrationCause) {
        let (fm, tm) = (self.cpus[from].min_vruntime, self.cpus[to].min_vruntime);
        let p = &mut self.procs[pid as usize];
        p.vruntime = (p.vruntime + tm).saturating_sub(fm);
        p.cpu = to as u32;
        p.migrations += 1;
        self.mech.task_migrated(pid);
        self.stats.migrations[cause as usize] += 1;
        self.stats.record_migration(self.now(), pid, from, to, cause);
    }

    /// `try_to_wake_up`: place the task with the wake policy, queue it, maybe preempt.
    pub fn wake_up(&mut self, pid: Pid, waker: usize, _kthread: bool) {
        let st = self.procs[pid as usize].state;
        if !matches!(
            st,
            ProcState::BlockedRecv | ProcState::BlockedSend | ProcState::Sleeping | ProcState::KsoftirqdIdle
        ) {
            return;
        }
        if !M::admit(self, pid, true) {
            return; // held back by a mechanism (paper 002: queued at its next allocated slot)
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
        let now = self.now();
        let prev = self.procs[pid as usize].cpu as usize;
        let target = if self.procs[pid as usize].pinned_kthread {
            prev
        } else {
            self.mech.select_task_rq(self, pid, prev, waker, &self.sched.wake)
        };
        self.mech.task_woken(pid, waker, prev);
        self.stats.record_wakeup(now, pid, waker, prev, target);
        if target != prev {
            self.migrate(pid, prev, target, MigrationCause::Wakeup);
        }
        self.procs[pid as usize].state = ProcState::Runnable;
        self.enqueue(target, pid, true);
        match &mut self.sched.balancer {
            Balancer::Cfs6(b) => b.ttwu_idle_end(target, now.ns()),
            Balancer::Cfs(g) => g.wakeup(target, now.ns()),
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
        M::task_started(self, pid);
        if !M::admit(self, pid, false) {
            return;
        }
        self.enqueue(cpu, pid, false);
        self.check_preempt(cpu, pid);
    }

    /// `check_preempt_curr` after `pid` was queued on `cpu`.
    pub(crate) fn check_preempt(&mut self, cpu: usize, pid: Pid) {
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
            // 2.5 try_to_wake_up: `if (p->prio < rq->curr->prio) resched_task(rq->curr)`.
            (None, None) if self.cfg.kernel.o1_runqueue => p.o1.prio < c.o1.prio,
            (None, None) => {
                let gran = self.cfg.kernel.sched_wakeup_granularity_us * 1000 * NICE_0_WEIGHT / p.weight;
                c.vruntime > p.vruntime + gran
            }
        };
        if preempt || c.state != ProcState::Runnable {
            self.resched(cpu);
        }
    }

    /// Set need_resched; act at once if the CPU is at process level or idle, unless the current
    /// task is in its own step (then at the step's end).
    pub fn resched(&mut self, cpu: usize) {
        self.cpus[cpu].need_resched = true;
        if self.cpus[cpu].in_step {
            return; // the stepping task is switched out when its step ends (proc_step_and_run)
        }
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
            // schedule(): `if (!rq->nr_running) ... rq->expired_timestamp = 0`.
            c.o1_expired_ts = 0;
            return None;
        }
        if self.cfg.kernel.o1_runqueue {
            return Some(self.o1_pick_next(cpu));
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
        self.sched.masks.set_queued(cpu, queued);
        Some(pid)
    }

    /// 2.5 `schedule()`'s pick from a non-empty normal run queue: the first task of the
    /// highest-priority list of the active array (`(prio, enq_seq)`), switching the arrays first
    /// if the active one is empty.
    fn o1_pick_next(&mut self, cpu: usize) -> Pid {
        let c = &mut self.cpus[cpu];
        let procs = &self.procs;
        let best = |active: u8| {
            (0..c.rq_cfs.len()).filter(|&i| procs[c.rq_cfs[i] as usize].o1.array == active).min_by_key(|&i| {
                let p = &procs[c.rq_cfs[i] as usize];
                (p.o1.prio, p.enq_seq)
            })
        };
        let i = match best(c.o1_active) {
            Some(i) => i,
            None => {
                // "Switch the active and expired arrays."
                c.o1_active ^= 1;
                c.o1_expired_ts = 0;
                best(c.o1_active).expect("non-empty run queue: every task is in one of the arrays")
            }
        };
        let pid = c.rq_cfs.swap_remove(i);
        let queued = !c.rq_cfs.is_empty();
        self.sched.masks.set_queued(cpu, queued);
        pid
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
            self.procs[pid as usize].left_cpu_at = self.now();
            if self.procs[pid as usize].state == ProcState::Runnable {
                self.enqueue_prev(cpu, pid);
            }
        }
        self.update_min_vruntime(cpu);
        let mut next = self.pick_next(cpu);
        if next.is_none() {
            match self.sched.balancer {
                Balancer::Cfs(_) => self.idle_balance(cpu),
                Balancer::O1(_) => self.o1_balance(cpu, true, true),
                Balancer::Cfs6(_) => self.cfs6_newidle_balance(cpu),
            }
            next = self.pick_next(cpu);
        }
        let hook_ns = M::context_switch(self, cpu, next);
        let Some(pid) = next else {
            if prev.is_some() {
                self.cpus[cpu].idle_since = self.now();
            }
            self.sync_idle(cpu);
            self.start_top(cpu);
            return;
        };
        self.cpus[cpu].curr = Some(pid);
        self.sched.masks.set_idle(cpu, false);
        self.cpus[cpu].curr_since = self.now();
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
        if self.cfg.kernel.o1_runqueue {
            self.o1_tick(cpu);
        } else if let Some(cur) = self.cpus[cpu].curr {
            let p = &self.procs[cur as usize];
            if p.rt.is_none() && !self.cpus[cpu].rq_cfs.is_empty() {
                let k = &self.cfg.kernel;
                let nr = self.cpus[cpu].rq_cfs.len() as u64 + 1;
                let min_gran = k.sched_min_granularity_us * 1000;
                let period = (k.sched_latency_us * 1000).max(nr * min_gran);
                let total = self.cpu_load(cpu).max(1);
                let slice = (period * p.weight / total).max(min_gran);
                let ran = self.now().since(self.cpus[cpu].curr_since).ns();
                let leftmost =
                    self.cpus[cpu].rq_cfs.iter().map(|&q| self.procs[q as usize].vruntime).min().unwrap_or(u64::MAX);
                if ran > slice || p.vruntime.saturating_sub(leftmost) > slice {
                    self.cpus[cpu].need_resched = true;
                }
            }
        }
        match self.sched.balancer {
            Balancer::Cfs(_) => {
                if self.now() >= self.cpus[cpu].next_balance {
                    self.cpus[cpu].next_balance = self.now() + Time::from_ms(self.cfg.kernel.balance_interval_ms);
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

    /// 2.5 `scheduler_tick` for the running normal task under `kernel.o1_runqueue`
    /// (`sched/o1_rq.rs`): one jiffy off its `sleep_avg` and slice; at the slice's end a new one,
    /// a reschedule, and the expired array unless it is interactive and the expired tasks are not
    /// starving. A task already moved to the expired array is rescheduled. SCHED_FIFO tasks have
    /// no slice.
    fn o1_tick(&mut self, cpu: usize) {
        let Some(cur) = self.cpus[cpu].curr else { return };
        let p = &self.procs[cur as usize];
        if p.rt.is_some() || p.state != ProcState::Runnable {
            return;
        }
        let active = self.cpus[cpu].o1_active;
        if p.o1.array != active {
            self.cpus[cpu].need_resched = true;
            return;
        }
        let (jiffies, hz) = (self.jiffies(), self.cfg.kernel.hz);
        let starving = crate::kernel::sched::o1_rq::expired_starving(
            self.cpus[cpu].o1_expired_ts,
            jiffies,
            BalanceView::nr_running(self, cpu),
            hz,
        );
        if let crate::kernel::sched::o1_rq::Tick::Expired { to_expired } =
            self.procs[cur as usize].o1.tick(starving, hz)
        {
            self.cpus[cpu].need_resched = true;
            if to_expired {
                if self.cpus[cpu].o1_expired_ts == 0 {
                    self.cpus[cpu].o1_expired_ts = jiffies;
                }
                self.procs[cur as usize].o1.array = active ^ 1;
            }
        }
    }

    /// `set_user_nice()`: the new weight applies from the next accounting on; priority-aware
    /// policies that keep per-socket priorities update them here.
    pub fn set_nice(&mut self, pid: Pid, nice: i8) {
        let p = &mut self.procs[pid as usize];
        p.nice = nice;
        p.weight = nice_weight(nice);
        p.o1.set_nice(nice);
        let s = p.sock;
        if s != NONE {
            self.net.socks[s as usize].level = sock_level(&self.procs, s);
        }
    }

    /// sched_yield(): to the back of the fair queue (or of its FIFO priority level).
    pub fn yield_curr(&mut self, cpu: usize, pid: Pid) {
        if self.cfg.kernel.o1_runqueue {
            // 2.5 sys_sched_yield (up to 2.5.21): a normal task one level worse, then the tail
            // of its list in the active array; a real-time task the tail of its list.
            let p = &mut self.procs[pid as usize];
            if p.rt.is_none() {
                p.o1.sched_yield();
            } else {
                p.o1.requeue = true;
            }
            self.cpus[cpu].need_resched = true;
            return;
        }
        let maxv = self.cpus[cpu].rq_cfs.iter().map(|&q| self.procs[q as usize].vruntime).max();
        self.sched.enq_seq += 1;
        let p = &mut self.procs[pid as usize];
        if p.rt.is_none() {
            if let Some(m) = maxv {
                p.vruntime = p.vruntime.max(m);
            }
        }
        p.enq_seq = self.sched.enq_seq;
        self.cpus[cpu].need_resched = true;
    }
}

/// What wake-up placement policies may read (`wake::WakeView`).
impl<M: Mechanisms> crate::kernel::sched::wake::WakeView for Host<M> {
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
        Host::<M>::cpu_load(self, cpu)
    }
    fn cpu_idle(&self, cpu: usize) -> bool {
        debug_assert_eq!(
            self.sched.masks.idle >> cpu & 1 != 0,
            Host::<M>::cpu_idle(self, cpu),
            "idle mask of cpu {cpu} (seed {})",
            self.cfg.seed
        );
        self.sched.masks.idle >> cpu & 1 != 0
    }
    fn idle_mask(&self) -> u128 {
        debug_assert_eq!(
            self.sched.masks.idle,
            (0..self.cpus.len()).filter(|&c| Host::<M>::cpu_idle(self, c)).fold(0u128, |m, c| m | 1u128 << c),
            "idle mask (seed {})",
            self.cfg.seed
        );
        self.sched.masks.idle
    }
    fn llc_mask(&self, cpu: usize) -> u128 {
        self.sched.masks.llc[cpu]
    }
    fn llc_weight(&self, cpu: usize) -> u32 {
        self.sched.masks.llc_weight[cpu]
    }
    fn core_firsts(&self) -> u128 {
        self.sched.masks.core_firsts
    }
    fn nr_running(&self, cpu: usize) -> usize {
        BalanceView::nr_running(self, cpu)
    }
    fn curr_pid(&self, cpu: usize) -> Option<Pid> {
        self.cpus[cpu].curr
    }
    fn jiffies(&self) -> u64 {
        self.jiffies()
    }
    fn hz(&self) -> u32 {
        self.cfg.kernel.hz
    }
    fn nr_idle_scan(&self, cpu: usize) -> Option<u32> {
        match &self.sched.balancer {
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
    fn task(&self, pid: Pid) -> crate::kernel::sched::wake::TaskInfo {
        let p = &self.procs[pid as usize];
        crate::kernel::sched::wake::TaskInfo {
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

/// What the 2.4 O(1) balancer may read (`o1::BalanceView`).
impl<M: Mechanisms> BalanceView for Host<M> {
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
                    prio: p
                        .rt
                        .map_or(if self.cfg.kernel.o1_runqueue { p.o1.prio } else { 120 + i32::from(p.nice) }, |r| {
                            99 - i32::from(r)
                        }),
                    expired: self.cfg.kernel.o1_runqueue && p.rt.is_none() && p.o1.array != c.o1_active,
                    enq_seq: p.enq_seq,
                    sleep_jiffy: p.left_cpu_at.ns() / self.tick_ns(),
                    allowed: p.allowed,
                    pinned: p.pinned_kthread,
                }
            })
            .collect()
    }
    fn jiffies(&self) -> u64 {
        self.jiffies()
    }
    fn hz(&self) -> u32 {
        self.cfg.kernel.hz
    }
}
