//! Linux 6.x CFS placement and balancing (`kernel.scheduler = "cfs6"`): what a today's server
//! kernel does where `kernel/sched/wake.rs` and `kernel/sched/core.rs` follow Linux 3.2.
//!
//! Read from kernel/sched/fair.c of the pre-EEVDF 6.x series (a v6.2–v6.5 tree,
//! gregkh/linux 000c9ee; v6.1 LTS has the same `select_task_rq_fair`, `wake_wide`,
//! `wake_affine`, `select_idle_sibling`, `select_idle_cpu` with SIS_UTIL and the 5.16+
//! `newidle_balance` gate used here). Function names below are the kernel's.
//!
//! **Wake-up placement** (`select_task_rq_fair` with WF_TTWU):
//! 1. `record_wakee(p)` on the waker's `current`, then `want_affine = !wake_wide(p)`: a waker
//!    that keeps switching between many wakees (`wakee_flips`, halved once a second) at least
//!    `sd_llc_size` times more than the wakee flips its own is "wide" and does not pull.
//!    `current` of a softirq is the task it interrupted: the CPU's idle task when it came in
//!    on an idle CPU, whose flips are counted too (one idle task per CPU).
//! 2. `wake_affine` on the lowest domain holding both CPUs: `wake_affine_idle` (an idle waking
//!    CPU sharing the cache with prev: prev if prev is idle, else the waking CPU; a sync wake-up
//!    from a CPU whose only task is the waker: the waking CPU; an idle prev: prev), then
//!    `wake_affine_weight` (the loads with WA_BIAS: `100 * (this - current + p) <
//!    (100 + (imbalance_pct - 100) / 2) * prev (+1 when sync)`).
//! 3. `select_idle_sibling(p, prev, target)`: an idle target; an idle prev sharing the target's
//!    cache; `p->recent_used_cpu` when idle and cache-sharing (it becomes prev); with SMT, an
//!    idle core of the LLC (`select_idle_core`) or an idle sibling of prev; else
//!    `select_idle_cpu`: the LLC from `target + 1` around, at most SIS_UTIL's `nr_idle_scan`
//!    CPUs, the first idle one; else the target.
//!
//! `available_idle_cpu(cpu)` is `idle_cpu()`: the idle task current and nothing queued. A CPU
//! running a softirq on top of its idle task is idle to the placement, as in Linux (`cpu_idle`
//! in this model counts no interrupt work).
//!
//! **New-idle balancing** (`newidle_balance`, 5.16+): a CPU about to go idle stamps
//! `idle_stamp`; it balances only when the root domain is overloaded (some run queue had two
//! tasks since the last top-level balance cleared the flag) and its `avg_idle` (the mean of its
//! idle periods ended by a wake-up, `update_avg` by 1/8, capped at twice
//! `max_idle_balance_cost`) is at least the domain's `max_newidle_lb_cost`; it walks the domains
//! from the LLC up while `avg_idle` covers the cost spent so far plus the next domain's, and
//! pulls one task from the busiest run queue with at least two tasks, never a cache-hot one
//! (`task_hot`: it ran less than `sysctl_sched_migration_cost` ago) unless this domain's
//! periodic balance has failed more than `cache_nice_tries` (1) times in a row.
//!
//! **Periodic balancing** runs per CPU every `sd->balance_interval` (`sd_init`: the domain's
//! CPU count in ms, times `busy_factor` 16 while the CPU runs a task), walking the LLC domain
//! then the whole machine; there it updates SIS_UTIL's `nr_idle_scan` for its LLC
//! (`update_idle_cpu_scan`) and the root domain's overload flag.
//!
//! **Simplifications (stated):** loads are the instantaneous queued weights of `kernel/sched/wake.rs`
//! (`weighted_cpuload`), not PELT's decayed averages: `task_h_load(p)` is `p`'s weight, a
//! sleeping task adds nothing to its prev CPU (so prev's load "minus p" is prev's load), the
//! idle task weighs 0. `cpu_util_cfs` for SIS_UTIL is an exponential average of each CPU's
//! task-context time (user + system) with PELT's 32 ms half-life, sampled at the CPU's tick
//! (softirq time run in ksoftirqd is left out). `has_idle_cores` is exact rather than a hint.
//! `max_newidle_lb_cost` is the profile's `newidle_balance_per_cpu_ns` times the domain's CPU
//! count, not a measured decaying maximum; balancing charges no CPU time (as in `balance.rs`).
//! The periodic pull keeps `balance.rs`'s weighted-load rule (6.x's group classification,
//! `migrate_util`/`migrate_task` and NUMA imbalance allowance are not modelled) with
//! `can_migrate_task`'s cache-hot test added. The per-CPU-kthread stacking rule of
//! `select_idle_sibling` never applies here (network wake-ups come from softirq context,
//! where `in_task()` is false).

use crate::kernel::sched::wake::WakeView;
use crate::types::{Pid, NONE};
use std::cell::Cell;

/// `cache_nice_tries` by domain level (`sd_init`): SMT and MC 1, the NUMA level spanning both
/// packages of a 2-socket machine 2.
pub const CACHE_NICE_TRIES: [u32; 3] = [1, 1, 2];
/// `busy_factor` of every domain (`sd_init`).
pub const BUSY_FACTOR: u64 = 16;
/// `SCHED_CAPACITY_SCALE`.
const CAPACITY_SCALE: u64 = 1024;

/// Per-waker state of `record_wakee` (a task, or a CPU's idle task).
#[derive(Clone, Debug)]
struct Wakee {
    flips: Cell<u32>,
    decay_jiffies: Cell<u64>,
    last: Cell<u32>,
}

impl Wakee {
    fn new() -> Wakee {
        Wakee { flips: Cell::new(0), decay_jiffies: Cell::new(0), last: Cell::new(NONE) }
    }
}

/// The placement's per-task state (fields Linux keeps in `task_struct`). Cells: the kernel
/// updates them inside `select_task_rq_fair`, which the model calls through `&self`.
#[derive(Clone, Debug)]
pub struct Cfs6Wake {
    /// Per task, then one per CPU for its idle task (index `nprocs + cpu`).
    wakee: Vec<Wakee>,
    nprocs: usize,
    /// `p->recent_used_cpu` (`NONE` before the first wake-up).
    recent_used_cpu: Vec<Cell<u32>>,
}

impl Cfs6Wake {
    pub fn new(nprocs: usize, ncpu: usize) -> Cfs6Wake {
        Cfs6Wake {
            wakee: (0..nprocs + ncpu).map(|_| Wakee::new()).collect(),
            nprocs,
            recent_used_cpu: (0..nprocs).map(|_| Cell::new(NONE)).collect(),
        }
    }

    /// `record_wakee(p)` by `current` of `waker`.
    fn record_wakee(&self, h: &impl WakeView, pid: Pid, waker: usize) -> usize {
        let cur = h.curr_pid(waker).map_or(self.nprocs + waker, |c| c as usize);
        let w = &self.wakee[cur];
        let jiffies = h.jiffies();
        // time_after(jiffies, decay_ts + HZ): decay once, whatever the time since.
        if jiffies > w.decay_jiffies.get() + u64::from(h.hz()) {
            w.flips.set(w.flips.get() >> 1);
            w.decay_jiffies.set(jiffies);
        }
        if w.last.get() != pid {
            w.last.set(pid);
            w.flips.set(w.flips.get().saturating_add(1));
        }
        cur
    }

    /// `wake_wide(p)`: the waker (`cur`) and the wakee flip among many partners.
    fn wake_wide(&self, h: &impl WakeView, pid: Pid, cur: usize, waker: usize) -> bool {
        let (mut master, mut slave) = (self.wakee[cur].flips.get(), self.wakee[pid as usize].flips.get());
        let factor = h.llc_weight(waker);
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || u64::from(master) < u64::from(slave) * u64::from(factor))
    }

    /// `select_task_rq_fair(p, prev_cpu, WF_TTWU [| WF_SYNC])` from `waker`.
    pub fn select_task_rq(&self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> usize {
        let p = h.task(pid);
        let prev = if p.allowed & (1u128 << prev) != 0 { prev } else { p.allowed.trailing_zeros() as usize };
        // One allowed CPU (`is_power_of_two`, not a software popcount: see `SchedMasks`).
        if p.rt || p.allowed.is_power_of_two() {
            // select_task_rq_rt keeps an RT task where it is when nothing higher runs there;
            // a task bound to one CPU is not placed at all.
            return prev;
        }
        let cur = self.record_wakee(h, pid, waker);
        let want_affine = !self.wake_wide(h, pid, cur, waker) && p.allowed & (1u128 << waker) != 0;
        // Every domain has SD_WAKE_AFFINE (sd_init; a 2-socket NUMA distance is below
        // node_reclaim_distance), and the top one spans every CPU: the loop stops at the
        // lowest domain holding both CPUs.
        let mut target = prev;
        if want_affine && h.wake_affine_enabled() && waker != prev {
            target = self.wake_affine(h, pid, prev, waker);
        }
        self.select_idle_sibling(h, pid, prev, target)
    }

    /// `wake_affine`: WA_IDLE, then WA_WEIGHT; prev when neither picks.
    fn wake_affine(&self, h: &impl WakeView, pid: Pid, prev: usize, this: usize) -> usize {
        let sync = h.task(pid).sync_wakeup;
        let shares = h.llc_of(this) == h.llc_of(prev);
        // wake_affine_idle
        if h.cpu_idle(this) && shares {
            return if h.cpu_idle(prev) { prev } else { this };
        }
        if sync && h.nr_running(this) == 1 {
            return this;
        }
        if h.cpu_idle(prev) {
            return prev;
        }
        // wake_affine_weight, on the lowest domain spanning both: SMT (imbalance_pct 110) for
        // siblings, else the MC/package domains' `kernel.imbalance_pct` (6.x sd_init: 117).
        let mut this_eff = h.cpu_load(this) as i64;
        if sync {
            // task_h_load(current): the idle task (and an RT task) has no fair load.
            let current_load = match h.curr_pid(this) {
                Some(c) if !h.task(c).rt => h.task(c).weight as i64,
                _ => 0,
            };
            if current_load > this_eff {
                return this;
            }
            this_eff -= current_load;
        }
        let task_load = h.task(pid).weight as i64;
        this_eff = (this_eff + task_load) * 100;
        let imb = if h.core_of(this) == h.core_of(prev) { 110 } else { i64::from(h.imbalance_pct()) };
        let mut prev_eff = h.cpu_load(prev) as i64 * (100 + (imb - 100) / 2);
        if sync {
            prev_eff += 1;
        }
        if this_eff < prev_eff {
            this
        } else {
            prev
        }
    }

    /// `select_idle_sibling(p, prev, target)`.
    fn select_idle_sibling(&self, h: &impl WakeView, pid: Pid, prev: usize, target: usize) -> usize {
        if h.cpu_idle(target) {
            return target;
        }
        let llc = h.llc_mask(target);
        let shares = |c: usize| llc & (1u128 << c) != 0;
        if prev != target && shares(prev) && h.cpu_idle(prev) {
            return prev;
        }
        let allowed = h.task(pid).allowed;
        let recent = self.recent_used_cpu[pid as usize].replace(prev as u32);
        if recent != NONE {
            let r = recent as usize;
            if r != prev && r != target && shares(r) && h.cpu_idle(r) && allowed & (1u128 << r) != 0 {
                return r;
            }
        }
        let idle = h.idle_mask();
        let tpc = h.threads_per_core();
        let mut has_idle_core = false;
        if tpc > 1 {
            // test_idle_cores(target), exact here: some core of the LLC has every thread idle.
            has_idle_core = whole_idle_cores(idle, tpc, h.nr_cpus()) & llc != 0;
            if !has_idle_core && shares(prev) {
                // select_idle_smt(p, prev): an idle allowed sibling of prev in the LLC.
                let first = prev / tpc * tpc;
                let sib = core_bits(first, tpc) & !(1u128 << prev) & allowed & llc & idle;
                if sib != 0 {
                    return sib.trailing_zeros() as usize;
                }
            }
        }
        select_idle_cpu(h, llc & allowed, idle, tpc, has_idle_core, target).unwrap_or(target)
    }
}

/// The bits of the core whose first thread is `first`.
fn core_bits(first: usize, tpc: usize) -> u128 {
    if tpc >= 128 {
        u128::MAX
    } else {
        ((1u128 << tpc) - 1) << first
    }
}

/// Every thread of every core whose threads are all idle.
fn whole_idle_cores(idle: u128, tpc: usize, ncpu: usize) -> u128 {
    (0..ncpu).step_by(tpc).map(|f| core_bits(f, tpc)).filter(|&b| idle & b == b).fold(0, |m, b| m | b)
}

/// `cpus` in `for_each_cpu_wrap(cpu, cpus, start)` order, as two ascending runs.
fn wrap_runs(cpus: u128, start: usize) -> [u128; 2] {
    let hi = if start >= 128 { 0 } else { cpus & (u128::MAX << start) };
    [hi, cpus & !hi]
}

/// `select_idle_cpu(p, sd_llc, has_idle_core, target)` on bitmasks: `cpus` is the LLC's span
/// and `p`'s affinity, visited from `target + 1` around.
fn select_idle_cpu(
    h: &impl WakeView,
    cpus: u128,
    idle: u128,
    tpc: usize,
    has_idle_core: bool,
    target: usize,
) -> Option<usize> {
    let runs = wrap_runs(cpus, target + 1);
    if has_idle_core {
        // select_idle_core on each core as first met: the met CPU of the first core whose
        // threads are all idle; else the first idle allowed thread of the first core met that
        // has one (`*idle_cpu`). No scan limit.
        let whole = whole_idle_cores(idle, tpc, h.nr_cpus());
        let mut seen_cores = 0u128;
        let mut idle_cpu = None;
        for run in runs {
            let mut m = run;
            while m != 0 {
                let c = m.trailing_zeros() as usize;
                m &= m - 1;
                let core = core_bits(c / tpc * tpc, tpc);
                if seen_cores & core != 0 {
                    continue;
                }
                seen_cores |= core;
                if whole & (1u128 << c) != 0 {
                    return Some(c);
                }
                if idle_cpu.is_none() {
                    let ok = core & idle & cpus;
                    if ok != 0 {
                        idle_cpu = Some(ok.trailing_zeros() as usize);
                    }
                }
            }
        }
        return idle_cpu;
    }
    // SIS_UTIL: `nr = nr_idle_scan + 1`, stop when `!--nr`: at most nr_idle_scan CPUs looked at.
    let limit = match h.nr_idle_scan(target) {
        Some(0) => return None,
        Some(n) => n,
        None => u32::MAX,
    };
    let mut before = 0u32;
    for run in runs {
        let found = run & idle;
        if found != 0 {
            let c = found.trailing_zeros() as usize;
            let pos = before + (run & ((1u128 << c) - 1)).count_ones();
            return (pos < limit).then_some(c);
        }
        before += run.count_ones();
        if before >= limit {
            return None;
        }
    }
    None
}

/// The 6.x balancer's state (`struct rq` and `sched_domain` fields it reads).
#[derive(Clone, Debug)]
pub struct Cfs6Balance {
    /// `rq->avg_idle`, ns.
    pub avg_idle_ns: Vec<u64>,
    /// `rq->idle_stamp`: when the CPU last entered `newidle_balance` (None once a wake-up or
    /// a pull ended that idle period).
    pub idle_stamp: Vec<Option<u64>>,
    /// `rq->max_idle_balance_cost`, ns.
    pub max_idle_balance_cost_ns: Vec<u64>,
    /// `rd->overload`.
    pub overload: bool,
    /// Per CPU and domain level (0 = SMT, 1 = LLC, 2 = machine): `sd->nr_balance_failed`,
    /// `sd->balance_interval` (ms) and when the level is next balanced (`sd->last_balance` +
    /// interval).
    pub nr_balance_failed: Vec<[u32; 3]>,
    pub interval_ms: Vec<[u64; 3]>,
    pub next_balance_ns: Vec<[u64; 3]>,
    /// Per CPU: the modelled `cpu_util_cfs` (0..=1024) and the task time and clock it was
    /// last sampled at.
    pub util: Vec<f64>,
    pub util_sample: Vec<(u64, u64)>,
    /// Per LLC id: SIS_UTIL's `nr_idle_scan` (0 until the first periodic balance sets it, as
    /// the kernel's zeroed `sched_domain_shared`).
    pub nr_idle_scan: Vec<u32>,
}

impl Cfs6Balance {
    pub fn new(ncpu: usize, nllc: usize, migration_cost_ns: u64) -> Cfs6Balance {
        Cfs6Balance {
            // sched_init: avg_idle = 2 * sysctl_sched_migration_cost, max_idle_balance_cost =
            // sysctl_sched_migration_cost.
            avg_idle_ns: vec![2 * migration_cost_ns; ncpu],
            idle_stamp: vec![None; ncpu],
            max_idle_balance_cost_ns: vec![migration_cost_ns; ncpu],
            overload: false,
            nr_balance_failed: vec![[0; 3]; ncpu],
            interval_ms: vec![[0; 3]; ncpu],
            next_balance_ns: vec![[0; 3]; ncpu],
            util: vec![0.0; ncpu],
            util_sample: vec![(0, 0); ncpu],
            nr_idle_scan: vec![0; nllc],
        }
    }

    /// `ttwu_do_wakeup` on `cpu`'s run queue: an idle period ends; fold it into `avg_idle`.
    pub fn ttwu_idle_end(&mut self, cpu: usize, now_ns: u64) {
        if let Some(stamp) = self.idle_stamp[cpu].take() {
            let delta = now_ns.saturating_sub(stamp) as i64;
            let avg = self.avg_idle_ns[cpu] as i64;
            // update_avg: avg += (sample - avg) / 8 (s64 division truncates toward zero).
            let new = (avg + (delta - avg) / 8).max(0) as u64;
            self.avg_idle_ns[cpu] = new.min(2 * self.max_idle_balance_cost_ns[cpu]);
        }
    }

    /// PELT-like utilisation of `cpu` from its cumulative task-context time `task_ns` at
    /// `now_ns`: an exponential average with a 32 ms half-life (y^32 = 1/2 per ms period).
    pub fn sample_util(&mut self, cpu: usize, task_ns: u64, now_ns: u64) {
        let (t0, n0) = self.util_sample[cpu];
        let dt = now_ns.saturating_sub(n0);
        if dt == 0 {
            return;
        }
        let share = (task_ns.saturating_sub(t0) as f64 / dt as f64).min(1.0);
        let decay = (-(dt as f64) / 32_000_000.0).exp2();
        self.util[cpu] = self.util[cpu] * decay + share * CAPACITY_SCALE as f64 * (1.0 - decay);
        self.util_sample[cpu] = (task_ns, now_ns);
    }

    /// `update_idle_cpu_scan` for the LLC `llc` spanning `cpus` with `imbalance_pct`.
    pub fn update_idle_cpu_scan(&mut self, llc: usize, cpus: u128, imbalance_pct: u32) {
        let weight = u64::from(cpus.count_ones());
        let mut sum_util = 0u64;
        let mut m = cpus;
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            sum_util += self.util[c].min(CAPACITY_SCALE as f64) as u64;
        }
        // x = sum_util / llc_weight; y = SCALE - x^2 * pct^2 / (10000 * SCALE); nr = y * w / SCALE.
        let x = sum_util / weight.max(1);
        let pct = u64::from(imbalance_pct);
        let tmp = (x * x * pct * pct / (10_000 * CAPACITY_SCALE)).min(CAPACITY_SCALE);
        let y = CAPACITY_SCALE - tmp;
        self.nr_idle_scan[llc] = (y * weight / CAPACITY_SCALE) as u32;
    }
}

/// `can_migrate_task`'s cache test: `task_hot` (it last ran less than the migration cost ago)
/// lifted once the domain's balancing failed more than its `cache_nice_tries` times in a row.
pub fn can_migrate_hot(
    last_ran_ns: u64,
    now_ns: u64,
    migration_cost_ns: u64,
    nr_balance_failed: u32,
    cache_nice_tries: u32,
) -> bool {
    let hot = migration_cost_ns > 0 && now_ns.saturating_sub(last_ran_ns) < migration_cost_ns;
    !hot || nr_balance_failed > cache_nice_tries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_order_starts_after_the_target() {
        let [hi, lo] = wrap_runs(0b1111_0000, 6);
        assert_eq!((hi, lo), (0b1100_0000, 0b0011_0000));
    }

    #[test]
    fn avg_idle_moves_by_an_eighth_and_is_capped() {
        let mut b = Cfs6Balance::new(1, 1, 500_000);
        assert_eq!(b.avg_idle_ns[0], 1_000_000);
        b.idle_stamp[0] = Some(0);
        b.ttwu_idle_end(0, 200_000);
        assert_eq!(b.avg_idle_ns[0], 1_000_000 - 800_000 / 8);
        b.ttwu_idle_end(0, 900_000); // no stamp: no sample
        assert_eq!(b.avg_idle_ns[0], 900_000);
        b.idle_stamp[0] = Some(0);
        b.ttwu_idle_end(0, 100_000_000);
        assert_eq!(b.avg_idle_ns[0], 1_000_000, "capped at 2 * max_idle_balance_cost");
    }

    #[test]
    fn sis_util_scans_all_when_idle_and_nothing_past_85_percent() {
        let mut b = Cfs6Balance::new(4, 1, 500_000);
        b.update_idle_cpu_scan(0, 0b1111, 117);
        assert_eq!(b.nr_idle_scan[0], 4);
        b.util = vec![900.0; 4]; // 88% busy: 900^2 * 117^2 / (10^4 * 1024) > 1024
        b.update_idle_cpu_scan(0, 0b1111, 117);
        assert_eq!(b.nr_idle_scan[0], 0);
        b.util = vec![512.0; 4]; // half busy: 1024 - 512^2*13689/10240000 = 1024 - 350 = 674
        b.update_idle_cpu_scan(0, 0b1111, 117);
        assert_eq!(b.nr_idle_scan[0], 674 * 4 / 1024);
    }

    #[test]
    fn hot_tasks_stay_until_balancing_failed_twice() {
        assert!(!can_migrate_hot(1_000, 1_200, 500, 0, 1));
        assert!(can_migrate_hot(1_000, 1_600, 500, 0, 1));
        assert!(!can_migrate_hot(1_000, 1_200, 500, 1, 1));
        assert!(can_migrate_hot(1_000, 1_200, 500, 2, 1));
        assert!(can_migrate_hot(1_000, 1_200, 0, 0, 1), "migration cost 0: nothing is hot");
    }
}
