//! The O(1) scheduler's wake-up placement and load balancing, as shipped in Red Hat's 2.4.18
//! kernels (`kernel.scheduler = "o1"`): the kernel of `ozaki-pbq` (paper 000 Table 1: RedHat 8.0,
//! 2.4.18-18.8.0). Red Hat's 2.4.18 carries Ingo Molnar's O(1) scheduler (kernel/sched.c of
//! 2.4.18-14: "2002-01-04 New ultra-scalable O(1) scheduler by Ingo Molnar ... per-CPU
//! runqueues"), not mainline 2.4's `goodness()`/`reschedule_idle()` over one global run queue;
//! paper 000 §3.4.2 itself points at "the same method as Linux's O(1) scheduler" for its bitmap.
//!
//! Wake-up (`try_to_wake_up(p, sync)`): a blocked task is activated on the run queue of the CPU
//! it last ran on. Only a *sync* wake-up whose waker may run the task "fast-migrates" it to the
//! waking CPU. A socket's wake-up is not sync in 2.4: `sock_def_readable` calls
//! `wake_up_interruptible(sk->sleep)` (net/core/sock.c), and timer wake-ups never are. So in this
//! model no wake-up moves a task: placement is the previous CPU (the first allowed one if that is
//! not allowed any more).
//!
//! Balancing (`load_balance(this_rq, idle)`), run when a CPU's run queue is empty in `schedule()`
//! (idle = 1), on every tick of an idle CPU (`IDLE_REBALANCE_TICK` = HZ/1000, at least 1 tick) and
//! every `BUSY_REBALANCE_TICK` = HZ/4 ticks of a busy one (idle = 0):
//! - loads are run-queue lengths (`nr_running`, the running task included), smoothed by
//!   `prev_nr_running`: the busy case takes the smaller of the current and the previously seen
//!   length of a remote queue, and the larger of its own (so only stable imbalances move tasks);
//! - the busiest queue must hold more than one task (`max_load` starts at 1) and more than this
//!   queue + 1; when busy, `imbalance = (max_load - nr_running) / 2` must be at least
//!   `(max_load + 3) / 4` ("at least ~25%");
//! - candidates are searched from the highest priority down, the expired array first (with
//!   `kernel.o1_runqueue`; without it every task counts as active), each priority list from its tail (the most recently queued
//!   first); a task moves only if it is not running, may run here (`cpus_allowed`) and is not
//!   cache-hot: `jiffies - p->sleep_timestamp > cache_decay_ticks`, where `sleep_timestamp` is the
//!   jiffy it last left a CPU. `cache_decay_ticks` = cacheflush_time / cpu_khz × HZ / 1000 (i386
//!   smpboot.c, Jan 2002 patch "load-balancer improvements, 2.5.3-pre5"): 0 ticks for a 512 KB L2
//!   at 500 MHz and HZ = 100, i.e. "at least 1 tick of cache-hot status, ie. 10 msecs" (Molnar);
//! - idle: one task; busy: up to `imbalance` tasks.
//!
//! The per-CPU choice of the next task is the CFS-like one of `kernel/sched/core.rs` (which for
//! the nice values of paper 000, −19 against 19, orders tasks the same way), or with
//! `kernel.o1_runqueue` the O(1) run queue itself (`o1_rq.rs`: active/expired arrays, the
//! `sleep_avg` bonus, timeslices).

use crate::types::Pid;

/// A task queued (not running) on a CPU, as `load_balance` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub pid: Pid,
    /// O(1) priority: lower is higher; RT tasks below 100, nice n at 120 + n.
    pub prio: i32,
    /// Insertion order into the run queue (larger = queued later).
    pub enq_seq: u64,
    /// In its run queue's expired array (only with `kernel.o1_runqueue`; else every task counts
    /// as active).
    pub expired: bool,
    /// The jiffy it last left a CPU (`sleep_timestamp`).
    pub sleep_jiffy: u64,
    pub allowed: u128,
    /// A per-CPU kernel thread (never migrated).
    pub pinned: bool,
}

/// What the O(1) balancer reads (`Host` implements it in `core.rs`; `balance.rs` applies its pulls).
pub trait BalanceView {
    fn nr_cpus(&self) -> usize;
    /// `rq->nr_running`: runnable tasks on `cpu`, the running one included.
    fn nr_running(&self, cpu: usize) -> usize;
    /// Tasks queued on `cpu`, not running.
    fn queued(&self, cpu: usize) -> Vec<Queued>;
    fn jiffies(&self) -> u64;
    fn hz(&self) -> u32;
}

/// `cache_decay_ticks` for HZ = 100 on the machines the O(1) era is used with (see above).
pub const CACHE_DECAY_TICKS: u64 = 0;

/// Balancer state: `this_rq->prev_nr_running[cpu]` for every pair.
#[derive(Clone, Debug, Default)]
pub struct O1Balance {
    prev_nr_running: Vec<Vec<usize>>,
}

impl O1Balance {
    pub fn new(ncpu: usize) -> O1Balance {
        O1Balance { prev_nr_running: vec![vec![0; ncpu]; ncpu] }
    }

    /// `IDLE_REBALANCE_TICK` / `BUSY_REBALANCE_TICK`: should this tick balance, and as idle?
    pub fn tick_due(h: &impl BalanceView, cpu_idle: bool) -> Option<bool> {
        let hz = u64::from(h.hz());
        let every = if cpu_idle { (hz / 1000).max(1) } else { (hz / 4).max(1) };
        h.jiffies().is_multiple_of(every).then_some(cpu_idle)
    }

    /// `load_balance(this_rq, idle)`: the tasks to pull to `this_cpu`, each with its CPU.
    pub fn load_balance(&mut self, h: &impl BalanceView, this_cpu: usize, idle: bool) -> Vec<(Pid, usize)> {
        let n = h.nr_cpus();
        let this_now = h.nr_running(this_cpu);
        let prev = &mut self.prev_nr_running[this_cpu];
        let nr_running = if idle || this_now > prev[this_cpu] { this_now } else { prev[this_cpu] };
        let mut busiest = None;
        let mut max_load = 1;
        for (cpu, seen) in prev.iter_mut().enumerate().take(n) {
            let now = h.nr_running(cpu);
            let load = if idle || now < *seen { now } else { *seen };
            *seen = now;
            if load > max_load && cpu != this_cpu {
                busiest = Some(cpu);
                max_load = load;
            }
        }
        let Some(busiest) = busiest else {
            return Vec::new();
        };
        let mut imbalance = max_load.saturating_sub(nr_running) / 2;
        if !idle && imbalance < max_load.div_ceil(4) {
            return Vec::new();
        }
        if h.nr_running(busiest) <= nr_running + 1 {
            return Vec::new();
        }
        let mut cands = h.queued(busiest);
        // "We first consider expired tasks": the expired array, then the active one.
        cands.sort_by_key(|q| (!q.expired, q.prio, std::cmp::Reverse(q.enq_seq)));
        let jiffies = h.jiffies();
        let mut out = Vec::new();
        for q in cands {
            let can_migrate = jiffies.saturating_sub(q.sleep_jiffy) > CACHE_DECAY_TICKS
                && !q.pinned
                && q.allowed & (1u128 << this_cpu) != 0;
            if !can_migrate {
                continue;
            }
            out.push((q.pid, busiest));
            if idle {
                break;
            }
            imbalance -= 1;
            if imbalance == 0 {
                break;
            }
        }
        out
    }
}

/// `try_to_wake_up` placement: the previous CPU (socket and timer wake-ups are not sync in 2.4).
pub fn o1_select_task_rq(allowed: u128, prev: usize) -> usize {
    if allowed & (1u128 << prev) != 0 {
        prev
    } else {
        allowed.trailing_zeros() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct View {
        nr: Vec<usize>,
        queued: Vec<Vec<Queued>>,
        jiffies: u64,
    }

    impl BalanceView for View {
        fn nr_cpus(&self) -> usize {
            self.nr.len()
        }
        fn nr_running(&self, cpu: usize) -> usize {
            self.nr[cpu]
        }
        fn queued(&self, cpu: usize) -> Vec<Queued> {
            self.queued[cpu].clone()
        }
        fn jiffies(&self) -> u64 {
            self.jiffies
        }
        fn hz(&self) -> u32 {
            100
        }
    }

    fn task(pid: Pid, prio: i32, seq: u64, sleep_jiffy: u64) -> Queued {
        Queued { pid, prio, enq_seq: seq, expired: false, sleep_jiffy, allowed: u128::MAX, pinned: false }
    }

    #[test]
    fn idle_cpu_pulls_the_highest_priority_cache_cold_task() {
        // CPU 1 runs one task and has three queued: pid 3 is cache-hot (left a CPU this jiffy),
        // pid 4 is the highest priority among the cold ones.
        let v = View {
            nr: vec![0, 4],
            queued: vec![vec![], vec![task(2, 139, 1, 5), task(3, 101, 2, 10), task(4, 120, 3, 5)]],
            jiffies: 10,
        };
        let mut b = O1Balance::new(2);
        assert_eq!(b.load_balance(&v, 0, true), vec![(4, 1)]);
    }

    #[test]
    fn a_single_task_is_never_pulled_and_busy_balancing_wants_25_percent() {
        let one = View { nr: vec![0, 1], queued: vec![vec![], vec![]], jiffies: 10 };
        assert!(O1Balance::new(2).load_balance(&one, 0, true).is_empty());
        // Busy: 3 vs 2 is below the 25% threshold; 6 vs 1 moves imbalance = 2 tasks, but only
        // once the imbalance has been seen twice (prev_nr_running smoothing).
        let q: Vec<Queued> = (0..5).map(|i| task(10 + i, 120, u64::from(i), 0)).collect();
        let small = View { nr: vec![2, 3], queued: vec![vec![], q.clone()], jiffies: 10 };
        let mut b = O1Balance::new(2);
        assert!(b.load_balance(&small, 0, false).is_empty());
        let big = View { nr: vec![1, 6], queued: vec![vec![], q], jiffies: 10 };
        let mut b = O1Balance::new(2);
        assert!(b.load_balance(&big, 0, false).is_empty(), "first sight of the imbalance");
        assert_eq!(b.load_balance(&big, 0, false).len(), 2);
    }

    #[test]
    fn wake_up_stays_on_the_previous_cpu() {
        assert_eq!(o1_select_task_rq(0b1111, 2), 2);
        assert_eq!(o1_select_task_rq(0b1000, 2), 3);
    }

    #[test]
    fn rebalance_ticks() {
        let v = |j| View { nr: vec![0], queued: vec![vec![]], jiffies: j };
        assert_eq!(O1Balance::tick_due(&v(7), true), Some(true));
        assert_eq!(O1Balance::tick_due(&v(7), false), None);
        assert_eq!(O1Balance::tick_due(&v(50), false), Some(false));
    }
}
