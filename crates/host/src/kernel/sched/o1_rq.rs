//! The O(1) scheduler's per-CPU run queue as Linux 2.5 shipped it up to 2.5.21
//! (`kernel.o1_runqueue = true`, with `scheduler = "o1"`): the kernel of `kawai-interval`
//! (paper 004 Table 1: Linux 2.5.17). The rules below are kernel/sched.c's of that series,
//! function by function; 2.5.17 lies between the two texts they were read from: a 2.5 sched.c
//! with `thread_info` (2.5.4+) and kernel preemption, and the 2.5.21-final lines that Ingo
//! Molnar's patch "Re: Question about sched_yield()" (lkml, 16 Jun 2002, against vanilla
//! 2.5.21) removes. Both have the same `sys_sched_yield`, `scheduler_tick`, `activate_task`,
//! `effective_prio` and `setscheduler`; the "give up timeslices one by one" yield came with that
//! patch (after 2.5.21), the move-to-expired yield in 2.5.27+.
//!
//! - **Priorities** (`prio`, lower is better): real-time tasks `99 - rt_priority`; a normal
//!   task's `static_prio = 120 + nice` and its dynamic `prio = effective_prio(p)`:
//!   `static_prio - bonus`, `bonus = 40 × 25 × sleep_avg / MAX_SLEEP_AVG / 100 - 5` (integer
//!   arithmetic, −5..+5), clamped to 100..139.
//! - **sleep_avg** (jiffies, 0..`MAX_SLEEP_AVG` = 2·HZ): `activate_task` adds the jiffies since
//!   the task last left a CPU in `schedule()` (`sleep_timestamp`) and recomputes `prio`;
//!   `scheduler_tick` takes one off per tick the task was running.
//! - **Timeslices** (`TASK_TIMESLICE`): `MIN_TIMESLICE + (MAX_TIMESLICE - MIN_TIMESLICE) ×
//!   (139 - static_prio) / 39` jiffies, 10..300 ms (150 ms at nice 0).
//! - **Arrays**: each CPU's run queue has an *active* and an *expired* priority array;
//!   `schedule()` runs the first task of the highest-priority non-empty list of the active array,
//!   and swaps the arrays when the active one is empty. A task woken (`activate_task`) goes to
//!   the tail of its list in the active array.
//! - **Expiry** (`scheduler_tick`): when a normal task's slice runs out it gets a new slice and
//!   priority and goes to the expired array, unless it is interactive (`TASK_INTERACTIVE`: `prio
//!   <= static_prio - DELTA`, `DELTA = nice × 10 / 40 + 2`) and the expired tasks are not
//!   starving (`EXPIRED_STARVING`: the first expired task has waited `STARVATION_LIMIT ×
//!   nr_running + 1` jiffies, `STARVATION_LIMIT` = 2·HZ), in which case it goes back to the tail
//!   of the active array. SCHED_FIFO tasks have no slice.
//! - **Wake-up preemption** (`try_to_wake_up`): the woken task preempts the running one only if
//!   its `prio` is strictly better.
//! - **`sys_sched_yield`**: a normal task's `prio` goes one worse (unless it is already 139; the
//!   loss is recovered when its slice expires) and it moves to the tail of that list in the
//!   *active* array; a real-time task moves to the tail of its list; then `schedule()`.
//! - **`setscheduler`**: `deactivate_task`, the new policy and `prio` (`99 - rt_priority`, or
//!   `static_prio`), `activate_task` (a normal task gets the sleep credit again: the jiffies since
//!   its `sleep_timestamp`, which for a running task include the time it ran); no reschedule.
//! - A task preempted while running keeps its place in its list (it never left the array); one
//!   whose slice expired or that yielded goes to the tail.
//!
//! A task's state here is [`O1Task`]; the hub (`core.rs`) keeps the lists (each CPU's `rq_cfs`,
//! ordered by `(prio, enq_seq)` within the active array) and calls these rules.

/// `MAX_RT_PRIO`: priorities below are real-time.
pub const MAX_RT_PRIO: i32 = 100;
/// `MAX_PRIO`.
pub const MAX_PRIO: i32 = 140;
const MAX_USER_PRIO: i32 = 40;
const PRIO_BONUS_RATIO: i32 = 25;
const INTERACTIVE_DELTA: i32 = 2;
/// `CHILD_PENALTY`: a forked task starts with this % of its parent's `sleep_avg`.
const CHILD_PENALTY: u64 = 95;

/// `NICE_TO_PRIO`.
pub fn nice_to_prio(nice: i8) -> i32 {
    MAX_RT_PRIO + i32::from(nice) + 20
}

/// `MAX_SLEEP_AVG` = 2·HZ jiffies.
pub fn max_sleep_avg(hz: u32) -> u64 {
    2 * u64::from(hz)
}

/// `STARVATION_LIMIT` = 2·HZ jiffies.
pub fn starvation_limit(hz: u32) -> u64 {
    2 * u64::from(hz)
}

/// `TASK_TIMESLICE(p)` in jiffies: `MIN_TIMESLICE` (10 ms) to `MAX_TIMESLICE` (300 ms) by
/// static priority.
pub fn task_timeslice(static_prio: i32, hz: u32) -> u32 {
    let min = (10 * hz / 1000).max(1) as i32;
    let max = (300 * hz / 1000).max(1) as i32;
    (min + (max - min) * (MAX_PRIO - 1 - static_prio) / 39) as u32
}

/// `effective_prio(p)`: the static priority with the −5..+5 `sleep_avg` bonus, clamped to the
/// normal range.
pub fn effective_prio(static_prio: i32, sleep_avg: u64, hz: u32) -> i32 {
    let sa = sleep_avg.min(max_sleep_avg(hz)) as i64;
    let scaled = i64::from(MAX_USER_PRIO * PRIO_BONUS_RATIO) * sa / max_sleep_avg(hz) as i64 / 100;
    let bonus = scaled as i32 - MAX_USER_PRIO * PRIO_BONUS_RATIO / 100 / 2;
    (static_prio - bonus).clamp(MAX_RT_PRIO, MAX_PRIO - 1)
}

/// `TASK_INTERACTIVE(p)`: `prio <= static_prio - DELTA(p)`, `DELTA = nice × 10 / 40 + 2` (C
/// division, truncating towards zero).
pub fn task_interactive(prio: i32, static_prio: i32) -> bool {
    let nice = static_prio - MAX_RT_PRIO - 20;
    let delta = nice * (MAX_USER_PRIO * PRIO_BONUS_RATIO / 100) / 40 + INTERACTIVE_DELTA;
    prio <= static_prio - delta
}

/// `EXPIRED_STARVING(rq)`: the first task put in the expired array (at jiffy `expired_ts`, 0 =
/// none) has waited `STARVATION_LIMIT × nr_running + 1` jiffies.
pub fn expired_starving(expired_ts: u64, jiffies: u64, nr_running: usize, hz: u32) -> bool {
    expired_ts != 0 && jiffies.saturating_sub(expired_ts) > starvation_limit(hz) * nr_running as u64
}

/// A normal task's O(1) state (`task_struct` fields `static_prio`, `prio`, `sleep_avg`,
/// `time_slice`, `array`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct O1Task {
    pub static_prio: i32,
    /// The dynamic priority of a normal task (a real-time task's is `99 - rt_priority`).
    pub prio: i32,
    /// Jiffies, 0..`MAX_SLEEP_AVG`.
    pub sleep_avg: u64,
    /// Jiffies left of the slice.
    pub time_slice: u32,
    /// Which of its CPU's two arrays it is in (compared with the CPU's active one).
    pub array: u8,
    /// Its next enqueue goes to the tail of its list (slice expired, or yielded); else a task
    /// put back after preemption keeps its place.
    pub requeue: bool,
}

/// What `scheduler_tick` did to the running normal task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// Its slice goes on.
    Runs,
    /// Its slice ran out: reschedule; it goes to the tail of the expired array (`true`) or of the
    /// active one (`false`, interactive).
    Expired { to_expired: bool },
}

impl O1Task {
    /// A task at `nice` when it starts. `wake_up_forked_process` gives a child
    /// `CHILD_PENALTY` % of its parent's `sleep_avg`; the programs here are started from an
    /// interactive shell (or by a parent that sleeps like one), taken at `MAX_SLEEP_AVG`. The
    /// slice is a full one (a child gets half its parent's; the parent's is unknown).
    pub fn new(nice: i8, hz: u32) -> O1Task {
        let static_prio = nice_to_prio(nice);
        let sleep_avg = max_sleep_avg(hz) * CHILD_PENALTY / 100;
        O1Task {
            static_prio,
            prio: effective_prio(static_prio, sleep_avg, hz),
            sleep_avg,
            time_slice: task_timeslice(static_prio, hz),
            array: 0,
            requeue: false,
        }
    }

    /// `activate_task` of a normal task that last left a CPU `slept_jiffies` ago: the sleep
    /// credit (none for 0 jiffies) and the new priority.
    pub fn activate(&mut self, slept_jiffies: u64, hz: u32) {
        if slept_jiffies > 0 {
            self.sleep_avg = (self.sleep_avg + slept_jiffies).min(max_sleep_avg(hz));
            self.prio = effective_prio(self.static_prio, self.sleep_avg, hz);
        }
    }

    /// `scheduler_tick` for the running normal task (in the active array): `sleep_avg` and the
    /// slice lose a jiffy; at the slice's end a new slice and priority, and where it goes.
    pub fn tick(&mut self, expired_starving: bool, hz: u32) -> Tick {
        self.sleep_avg = self.sleep_avg.saturating_sub(1);
        self.time_slice = self.time_slice.saturating_sub(1);
        if self.time_slice > 0 {
            return Tick::Runs;
        }
        self.prio = effective_prio(self.static_prio, self.sleep_avg, hz);
        self.time_slice = task_timeslice(self.static_prio, hz);
        self.requeue = true;
        Tick::Expired { to_expired: !task_interactive(self.prio, self.static_prio) || expired_starving }
    }

    /// `sys_sched_yield` of a normal task: one priority level worse unless at the lowest, then
    /// the tail of that list (the active array).
    pub fn sched_yield(&mut self) {
        if self.prio < MAX_PRIO - 1 {
            self.prio += 1;
        }
        self.requeue = true;
    }

    /// `set_user_nice`: the new static priority, `prio` = it (no bonus until the next
    /// `effective_prio`).
    pub fn set_nice(&mut self, nice: i8) {
        self.static_prio = nice_to_prio(nice);
        self.prio = self.static_prio;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeslices_by_nice_at_hz_100_and_1000() {
        // kernel/sched.c: "Minimum timeslice is 10 msecs, default timeslice is 150 msecs,
        // maximum timeslice is 300 msecs".
        assert_eq!(task_timeslice(nice_to_prio(-20), 100), 30);
        assert_eq!(task_timeslice(nice_to_prio(0), 100), 15);
        assert_eq!(task_timeslice(nice_to_prio(19), 100), 1);
        assert_eq!(task_timeslice(nice_to_prio(0), 1000), 151);
        assert_eq!(task_timeslice(nice_to_prio(19), 1000), 10);
    }

    #[test]
    fn sleep_avg_gives_minus_5_to_plus_5() {
        let hz = 100;
        assert_eq!(effective_prio(120, 0, hz), 125);
        assert_eq!(effective_prio(120, 100, hz), 120);
        assert_eq!(effective_prio(120, 200, hz), 115);
        assert_eq!(effective_prio(120, 10_000, hz), 115, "capped at MAX_SLEEP_AVG");
        assert_eq!(effective_prio(100, 200, hz), 100, "clamped to MAX_RT_PRIO");
        assert_eq!(effective_prio(139, 0, hz), 139, "clamped to MAX_PRIO - 1");
    }

    #[test]
    fn interactivity_follows_the_kernel_table() {
        // The comment's table TASK_INTERACTIVE(0): [1,1,1,1,0,0,0,0,0,0,0] over bonus +5..-5.
        let row = |nice: i8| -> Vec<bool> {
            let sp = nice_to_prio(nice);
            (-5..=5).rev().map(|b| task_interactive((sp - b).clamp(100, 139), sp)).collect()
        };
        assert_eq!(row(0), [true, true, true, true, false, false, false, false, false, false, false]);
        assert_eq!(row(-20), [true, true, true, true, true, true, true, true, true, false, false]);
        assert_eq!(row(19), [false; 11]);
    }

    #[test]
    fn a_task_that_sleeps_gains_a_bonus_and_one_that_runs_loses_it() {
        let hz = 100;
        let mut t = O1Task::new(0, hz);
        t.sleep_avg = 0;
        t.prio = effective_prio(120, 0, hz);
        assert_eq!(t.prio, 125);
        t.activate(150, hz);
        assert_eq!((t.sleep_avg, t.prio), (150, 118));
        t.activate(100, hz);
        assert_eq!((t.sleep_avg, t.prio), (200, 115), "capped at MAX_SLEEP_AVG");
        // Running: one jiffy of sleep_avg per tick; the priority changes only at the slice's end.
        for _ in 0..14 {
            assert_eq!(t.tick(false, hz), Tick::Runs);
        }
        assert_eq!(t.prio, 115);
        assert_eq!(t.tick(false, hz), Tick::Expired { to_expired: false }, "116 <= 120 - 2: interactive, stays active");
        assert_eq!((t.sleep_avg, t.prio, t.time_slice), (185, 116, 15));
        // Starving expired tasks override interactivity.
        t.time_slice = 1;
        assert_eq!(t.tick(true, hz), Tick::Expired { to_expired: true });
        // A CPU hog ends its slices in the expired array.
        let mut hog = O1Task { sleep_avg: 0, prio: 125, ..O1Task::new(0, hz) };
        hog.time_slice = 1;
        assert_eq!(hog.tick(false, hz), Tick::Expired { to_expired: true });
    }

    #[test]
    fn yield_costs_one_level_down_to_the_lowest() {
        let mut t = O1Task { prio: 137, ..O1Task::new(0, 100) };
        t.sched_yield();
        assert_eq!(t.prio, 138);
        t.sched_yield();
        t.sched_yield();
        assert_eq!(t.prio, 139);
        assert!(t.requeue);
    }

    #[test]
    fn starvation_needs_two_seconds_per_runnable_task() {
        assert!(!expired_starving(0, 1000, 1, 100), "nothing expired");
        assert!(!expired_starving(100, 300, 1, 100));
        assert!(expired_starving(100, 301, 1, 100));
        assert!(!expired_starving(100, 500, 2, 100));
    }
}
