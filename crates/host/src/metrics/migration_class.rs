//! Classifying migrations (paper 001 §3.3): which wake-up migrations are *unintended*, and how
//! many wake-ups it takes until the waking CPU and the running CPU agree again.
//!
//! Paper 001 Fig. 2 (waking CPU, CPU the task ran on → CPU chosen):
//!
//! ```text
//!   #1  0, 0 → 1    the scheduler moves the task (intended)
//!   #2  0, 1 → 0    RFS has not followed: the wake-up still comes from CPU 0, wake-affine pulls
//!   #3  1, 0 → 1    now RFS has followed to CPU 1 and pulls the task back there
//!   #4  0, 1 → 0    ... waking and running CPU swap on every wake-up
//! ```
//!
//! A wake-up migration is **unintended** when it moves the task to the waking CPU and the task's
//! previous wake-up moved it away from that same CPU (#2, #3, #4: the swap). An unintended
//! migration opens an *episode* (unless one is open); every later wake-up whose waking CPU
//! differs from the task's CPU extends it, and the first wake-up where they agree closes it. Its
//! **settling** count is the number of wake-ups from the episode's first unintended migration up
//! to (not including) that agreeing one: Fig. 2 followed by a wake-up from CPU 0 settles in 3.
//! Episodes still open when the run ends are not counted.
//!
//! Classes partition all migrations: wake-up to the waking CPU (`wakeup_affine`, of which some
//! are unintended), wake-up elsewhere (`wakeup_other`: previous CPU's or an idle sibling), and
//! the balancer's causes. State is two words per task: O(1) per wake-up, no allocation.

use crate::types::{Pid, NONE};

#[derive(Clone, Copy, Debug)]
struct Track {
    /// The CPU the task's previous wake-up moved it away from (NONE if it did not move it).
    left: u32,
    /// Wake-ups so far in the open episode (0 = no episode open).
    episode_wakeups: u32,
}

/// Counters since the last `reset`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassCounts {
    pub wakeup_affine: u64,
    pub wakeup_other: u64,
    pub unintended: u64,
    pub settle_episodes: u64,
    pub settle_wakeups_sum: u64,
    pub settle_wakeups_max: u64,
}

#[derive(Clone, Debug)]
pub struct MigrationClass {
    tasks: Vec<Track>,
    pub counts: ClassCounts,
}

impl MigrationClass {
    pub fn new(nprocs: usize) -> MigrationClass {
        MigrationClass { tasks: vec![Track { left: NONE, episode_wakeups: 0 }; nprocs], counts: ClassCounts::default() }
    }

    /// Start counting afresh (end of warm-up); the per-task history is kept.
    pub fn reset(&mut self) {
        self.counts = ClassCounts::default();
    }

    /// A wake-up of `pid` by `waker`: it last ran on `prev` and is queued on `target`.
    pub fn wakeup(&mut self, pid: Pid, waker: usize, prev: usize, target: usize) {
        let t = &mut self.tasks[pid as usize];
        let c = &mut self.counts;
        if t.episode_wakeups > 0 {
            if waker == prev {
                c.settle_episodes += 1;
                c.settle_wakeups_sum += u64::from(t.episode_wakeups);
                c.settle_wakeups_max = c.settle_wakeups_max.max(u64::from(t.episode_wakeups));
                t.episode_wakeups = 0;
            } else {
                t.episode_wakeups += 1;
            }
        }
        if target == prev {
            t.left = NONE;
            return;
        }
        if target == waker {
            c.wakeup_affine += 1;
            if t.left == waker as u32 {
                c.unintended += 1;
                if t.episode_wakeups == 0 {
                    t.episode_wakeups = 1;
                }
            }
        } else {
            c.wakeup_other += 1;
        }
        t.left = prev as u32;
    }

    /// A migration by the load balancer breaks the wake-up sequence.
    pub fn balanced(&mut self, pid: Pid) {
        self.tasks[pid as usize].left = NONE;
    }
}

/// The classes as metrics over a window of `window_s` seconds, `migrations` being every
/// migration of the window (all causes): the model's summary and the live wake-up recorder
/// (crates/live/src/goda_rfs/wake.rs) both write them with this.
pub fn insert(m: &mut std::collections::BTreeMap<String, f64>, c: &ClassCounts, migrations: u64, window_s: f64) {
    m.insert("migrations_wakeup_affine_per_s".into(), c.wakeup_affine as f64 / window_s);
    m.insert("migrations_wakeup_other_per_s".into(), c.wakeup_other as f64 / window_s);
    m.insert("migrations_unintended_per_s".into(), c.unintended as f64 / window_s);
    let frac = if migrations == 0 { 0.0 } else { c.unintended as f64 / migrations as f64 };
    m.insert("unintended_fraction".into(), frac);
    m.insert("settle_episodes".into(), c.settle_episodes as f64);
    // No episode, no mean: NaN (an empty cell), never a made-up 0.
    let mean = if c.settle_episodes == 0 { f64::NAN } else { c.settle_wakeups_sum as f64 / c.settle_episodes as f64 };
    m.insert("settle_mean".into(), mean);
    m.insert("settle_max".into(), c.settle_wakeups_max as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fig2_sequence_is_unintended_from_the_second_wakeup_and_settles_in_three() {
        let mut m = MigrationClass::new(1);
        for (waker, prev, target) in [(0, 0, 1), (0, 1, 0), (1, 0, 1), (0, 1, 0), (0, 0, 0)] {
            m.wakeup(0, waker, prev, target);
        }
        let c = &m.counts;
        assert_eq!((c.wakeup_affine, c.wakeup_other, c.unintended), (3, 1, 3));
        assert_eq!((c.settle_episodes, c.settle_wakeups_sum, c.settle_wakeups_max), (1, 3, 3));
    }

    #[test]
    fn a_pull_to_a_third_cpu_is_not_a_swap() {
        let mut m = MigrationClass::new(1);
        m.wakeup(0, 0, 0, 1); // moved 0 -> 1
        m.wakeup(0, 2, 1, 2); // pulled to 2: not back to where it came from
        m.wakeup(0, 1, 2, 2); // stays
        m.wakeup(0, 2, 2, 2);
        assert_eq!(m.counts.unintended, 0);
        assert_eq!(m.counts.settle_episodes, 0);
    }
}
