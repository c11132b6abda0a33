//! nanosleep(): how long a sleep really lasts.
//!
//! With `kernel.timer_tick_sleep` the rule is Linux 2.4/2.5's `sys_nanosleep` (kernel/timer.c;
//! read in 2.5.17, the kernel of paper 004, and the same in 2.4.18):
//!
//! ```c
//! if (t.tv_sec == 0 && t.tv_nsec <= 2000000L && current->policy != SCHED_OTHER) {
//!         udelay((t.tv_nsec + 999) / 1000);       /* busy-wait, real-time tasks only */
//!         return 0;
//! }
//! expire = timespec_to_jiffies(&t) + (t.tv_sec || t.tv_nsec);
//! current->state = TASK_INTERRUPTIBLE;
//! expire = schedule_timeout(expire);
//! ```
//!
//! `timespec_to_jiffies` (include/linux/time.h) rounds up to whole jiffies; the `+ 1` covers the
//! partial jiffy already under way; `schedule_timeout` arms a timer `expire` jiffies after the
//! *current* jiffy, which fires in the timer interrupt that makes `jiffies` reach it (CPU 0's
//! tick, at multiples of the tick here). So a sleep of `ns` issued `f` into a jiffy lasts
//! `(ceil(ns / tick) + 1) · tick − f`: between 1 and 2 ticks for anything up to one tick.
//!
//! Without `timer_tick_sleep` the sleep is high-resolution: `ns + timer_slack_ns`.

use crate::kernel::task::{Pending, ProcState};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Time;

/// Requests up to this long from a task that is not SCHED_OTHER are busy-waited (2.4/2.5).
pub const RT_BUSY_WAIT_MAX_NS: u64 = 2_000_000;

/// What a nanosleep() does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nanosleep {
    /// `udelay()`: the task spins in the kernel for this long.
    BusyWait { ns: u64 },
    /// The task blocks until the timer interrupt at `at_ns`.
    Until { at_ns: u64 },
}

/// `timespec_to_jiffies` of 2.4/2.5: whole jiffies, rounded up.
pub fn timespec_to_jiffies(ns: u64, tick_ns: u64) -> u64 {
    ns.div_ceil(tick_ns)
}

/// 2.4/2.5 `sys_nanosleep` of `req_ns` at `now_ns` (jiffy boundaries at multiples of `tick_ns`),
/// by a real-time (`SCHED_FIFO`/`SCHED_RR`) task or not.
pub fn nanosleep_jiffies(now_ns: u64, req_ns: u64, tick_ns: u64, realtime: bool) -> Nanosleep {
    if req_ns <= RT_BUSY_WAIT_MAX_NS && realtime {
        // udelay((tv_nsec + 999) / 1000): whole microseconds, rounded up.
        return Nanosleep::BusyWait { ns: req_ns.div_ceil(1000) * 1000 };
    }
    let expire = timespec_to_jiffies(req_ns, tick_ns) + u64::from(req_ns > 0);
    let jiffies = now_ns / tick_ns;
    let mut at = (jiffies + expire) * tick_ns;
    if at <= now_ns {
        // A zero-length sleep: the timer is already due and runs at the next tick.
        at = (jiffies + 1) * tick_ns;
    }
    Nanosleep::Until { at_ns: at }
}

impl<M: Mechanisms> Host<M> {
    /// nanosleep(`ns`) by `pid`: returns the busy-wait unit, or None after putting it to sleep.
    pub fn nanosleep(&mut self, pid: Pid, ns: u64) -> Option<(CpuState, u64)> {
        let now = self.now();
        let tick = self.tick_ns();
        let p = &mut self.procs[pid as usize];
        p.pending = Pending::Slept;
        let wake = if self.cfg.kernel.timer_tick_sleep {
            match nanosleep_jiffies(now.ns(), ns, tick, p.rt.is_some()) {
                Nanosleep::BusyWait { ns } => return Some((CpuState::System, ns)),
                Nanosleep::Until { at_ns } => Time(at_ns),
            }
        } else {
            now + Time(ns + self.cfg.kernel.timer_slack_ns)
        };
        p.state = ProcState::Sleeping;
        let gen = p.timer.arm();
        self.post(wake, Ev::ProcTimer { pid, gen });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn jiffy_rounding_plus_one_at_hz_100() {
        let tick = 10 * MS;
        // notes 004 §5.7: a 7 ms sleep 3.5 ms into a jiffy wakes at the start of jiffy +2.
        assert_eq!(nanosleep_jiffies(3_500_000, 7 * MS, tick, false), Nanosleep::Until { at_ns: 20 * MS });
        // Anything up to one tick sleeps to the second tick boundary: 1-2 ticks.
        assert_eq!(nanosleep_jiffies(100_000, MS, tick, false), Nanosleep::Until { at_ns: 20 * MS });
        assert_eq!(nanosleep_jiffies(9_999_999, 1, tick, false), Nanosleep::Until { at_ns: 20 * MS });
        // A whole number of ticks still gets the + 1.
        assert_eq!(nanosleep_jiffies(0, 10 * MS, tick, false), Nanosleep::Until { at_ns: 20 * MS });
        assert_eq!(nanosleep_jiffies(25 * MS, 17 * MS, tick, false), Nanosleep::Until { at_ns: 50 * MS });
        // The static 10 ms cycle with 3 ms of work: a 7 ms request from the start of a jiffy
        // lasts 2 ticks, so the real cycle is ~20 ms, not 10 (notes 004 §5.7).
        assert_eq!(nanosleep_jiffies(30 * MS, 7 * MS, tick, false), Nanosleep::Until { at_ns: 50 * MS });
    }

    #[test]
    fn realtime_tasks_busy_wait_short_sleeps() {
        let tick = 10 * MS;
        assert_eq!(nanosleep_jiffies(0, 1_500_000, tick, true), Nanosleep::BusyWait { ns: 1_500_000 });
        assert_eq!(nanosleep_jiffies(0, 1_500_001, tick, true), Nanosleep::BusyWait { ns: 1_501_000 });
        assert_eq!(nanosleep_jiffies(0, 2 * MS, tick, true), Nanosleep::BusyWait { ns: 2 * MS });
        // Over 2 ms, or SCHED_OTHER: the jiffy timer.
        assert_eq!(nanosleep_jiffies(0, 2 * MS + 1, tick, true), Nanosleep::Until { at_ns: 20 * MS });
        assert_eq!(nanosleep_jiffies(0, MS, tick, false), Nanosleep::Until { at_ns: 20 * MS });
    }

    #[test]
    fn hz_1000_and_zero() {
        let tick = MS;
        assert_eq!(nanosleep_jiffies(300_000, 2_500_000, tick, false), Nanosleep::Until { at_ns: 4 * MS });
        assert_eq!(nanosleep_jiffies(300_000, 0, tick, false), Nanosleep::Until { at_ns: MS });
    }
}
