//! `kawai-interval` (paper 004: Kawai, Kadobayashi & Yamaguchi, interval control of I/O
//! multiplexing with real-time scheduling): the policy an event loop's thread follows between
//! two passes of its main loop, and the loop's control steps as a state machine
//! ([`LoopControl`]) that a program drives.
//!
//! Hook: the main loop of an event-driven program (the accelerator's I/O and retrieve threads,
//! `accel.rs`), between `prepare_conn_list` and the I/O (Fig. 5), chosen by
//! `[process.accelerator] interval_control`. Baseline it changes: the uncontrolled loop (`none`,
//! a blocking poll() at SCHED_OTHER) and reference [8]'s non-real-time control (`old`); the
//! paper's proposal is `static` and `dynamic`. This is a program's behaviour, not the kernel's:
//! the kernel side (poll(), nanosleep(), sched_setscheduler(), the scheduler) is unchanged.
//!
//! The main loop measures its own duration with gettimeofday() and, when the loop was shorter
//! than a cycle, blocks in nanosleep() for the rest, so that poll() runs at most once per cycle
//! and finds more ready descriptors per call. Four policies, selected by configuration:
//!
//! - `none` — no control (the paper's "0 ms", Fig. 1(a)): `for(;;){ prepare; poll(-1); I/O }`
//!   at SCHED_OTHER, blocking in poll() until a descriptor is ready (notes 004 §6.7).
//! - `old` — the non-real-time control of the paper's reference [8] (paper Fig. 2): measure
//!   `ptime = now - prev`; if `ptime < min_cycle` sleep `min_cycle - ptime` and take `prev` after
//!   the sleep, else `prev = now`; poll(0) and I/O; `sched_yield()` if it did not sleep. All at
//!   SCHED_OTHER, so other threads' time between the two timestamps counts as loop time.
//! - `static` — the paper's proposal (Fig. 5 with `STATIC_MIN_CYCLE`): the loop runs at
//!   SCHED_FIFO; if `ptime < min_cycle` it switches to SCHED_OTHER, sleeps `min_cycle - ptime`
//!   and switches back, else `sched_yield()`; `prev` is taken after the block, so `ptime`
//!   excludes the sleep.
//! - `dynamic` — Fig. 5 without `STATIC_MIN_CYCLE`: the sleep is `ptime × ratio`. The paper's
//!   "k×" interval is `ratio = k − 1` (§4.1.2: at 2× the thread blocks as long as it processed).
//!   Its `min_cycle` is not given; the text describes the interval as always proportional, so
//!   dynamic control always sleeps (`min_cycle` = ∞, notes 004 §6.5).
//!
//! What the paper leaves open and is chosen here (notes 004 §6): poll() never blocks under
//! control (timeout 0: the loop blocks in nanosleep, §6.8); the SCHED_FIFO priority is a
//! parameter (`fifo_priority`, I/O and retrieve threads share it, §6.11).

use crate::program::{Action, Outcome};
use hostsim_options::options;
use serde::{Deserialize, Serialize};

/// Which interval control an accelerator's loop threads use.
#[options]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalControl {
    /// No control ("0 ms"): a blocking poll() at SCHED_OTHER.
    #[default]
    None,
    /// Reference [8]'s non-real-time control (paper Fig. 2).
    Old,
    /// The paper's static control (Fig. 5, `STATIC_MIN_CYCLE`): cycle = `min_cycle`.
    Static,
    /// The paper's dynamic control (Fig. 5): sleep = loop time × `ratio`.
    Dynamic,
}

/// The policy and its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalPolicy {
    pub kind: IntervalControl,
    /// `old`/`static`: the cycle; a loop shorter than this sleeps for the rest.
    pub min_cycle_ns: u64,
    /// `dynamic`: sleep = loop time × ratio.
    pub ratio: f64,
}

/// What the loop does after measuring itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// nanosleep() for this long.
    Sleep { ns: u64 },
    /// Do not block (`old`: no sleep, `sched_yield()` after the I/O; `static`: `sched_yield()`).
    NoSleep,
}

impl IntervalPolicy {
    /// Does the loop switch to SCHED_FIFO for its I/O (the paper's proposal)?
    pub fn realtime(&self) -> bool {
        matches!(self.kind, IntervalControl::Static | IntervalControl::Dynamic)
    }

    /// Does poll() block (only without control)?
    pub fn blocking_poll(&self) -> bool {
        self.kind == IntervalControl::None
    }

    /// The loop's decision after measuring `ptime_ns` (Fig. 2 / Fig. 5 `if (ptime < min_cycle)`).
    pub fn decide(&self, ptime_ns: u64) -> Decision {
        match self.kind {
            IntervalControl::None => Decision::NoSleep,
            IntervalControl::Old | IntervalControl::Static => {
                if ptime_ns < self.min_cycle_ns {
                    Decision::Sleep { ns: self.min_cycle_ns - ptime_ns }
                } else {
                    Decision::NoSleep
                }
            }
            IntervalControl::Dynamic => {
                // set_time(&stime, ptime * ratio), with min_cycle taken as infinite.
                Decision::Sleep { ns: (ptime_ns as f64 * self.ratio).round() as u64 }
            }
        }
    }
}

/// Where a loop thread is in the interval-control part of its pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ControlStep {
    Start,
    /// Initial realtime_priority() done (static/dynamic).
    Fifo,
    /// The first gettimeofday(&prev).
    FirstPrev,
    /// gettimeofday(&now) done.
    Measured,
    /// normalize_priority() done: sleep next.
    Normalized,
    /// nanosleep() done.
    Slept,
    /// realtime_priority() after the sleep done.
    Realtime,
    /// sched_yield() done (static/dynamic: before gettimeofday(&prev)).
    Yielded,
    /// gettimeofday(&prev) done: poll next.
    Prev,
    /// old: gettimeofday(&prev) after the sleep.
    OldPrev,
    /// old: the trailing sched_yield() done.
    TailYield,
    /// Not in control: the program runs its own steps (prepare_conn_list, poll, I/O).
    Out,
}

/// What the loop does next, as [`LoopControl`] decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Issue this system call and give its outcome to [`LoopControl::step`].
    Call(Action),
    /// Control is done: the top of the pass (`prepare_conn_list`).
    Top,
    /// Control is done: a blocking poll() (no control: `poll(-1)`) and the I/O.
    BlockingPoll,
    /// Control is done: `if (!empty(&conn_list)) proc_conns(&conn_list)`: a non-blocking poll()
    /// and the I/O, or the end of the pass when nothing is watched.
    ProcConns,
}

/// One loop thread's interval control (Fig. 2 for `old`, Fig. 5 for `static`/`dynamic`): the
/// program calls [`start`](Self::start) when the thread starts, [`control`](Self::control)
/// between `prepare_conn_list` and the I/O, [`step`](Self::step) with each outcome of a call it
/// asked for, and [`end_pass`](Self::end_pass) after the I/O.
#[derive(Clone, Debug)]
pub struct LoopControl {
    policy: IntervalPolicy,
    fifo_priority: u8,
    /// Does the loop raise itself to SCHED_FIFO (see [`LoopControl::with_fifo`])?
    fifo: bool,
    step: ControlStep,
    prev_ns: u64,
    /// old: this pass slept (no trailing sched_yield()).
    slept: bool,
    /// static/dynamic: the sleep decided before normalize_priority().
    sleep_ns: u64,
    /// nanosleep()s and sched_yield()s decided so far.
    pub sleeps: u64,
    pub yields: u64,
}

impl LoopControl {
    pub fn new(policy: IntervalPolicy, fifo_priority: u8) -> LoopControl {
        Self::with_fifo(policy, fifo_priority, policy.realtime())
    }

    /// A loop whose SCHED_FIFO use is chosen rather than the paper's (`new`: static and dynamic
    /// raise it around the I/O, `none` and `old` never). With `fifo` false a static or dynamic
    /// loop sleeps and polls at SCHED_OTHER throughout (no `normalize_priority()` /
    /// `realtime_priority()` calls); with `fifo` true an uncontrolled loop is raised once at its
    /// start and stays at SCHED_FIFO, blocking poll() included. These are the live experiment's
    /// `-nofifo` and `none-fifo` variants (`crates/live/src/kawai_interval/interval.rs`), which separate
    /// the real-time part of the paper's proposal from its interval rule; `old` keeps its own
    /// rule (Fig. 2) and ignores `fifo`.
    pub fn with_fifo(policy: IntervalPolicy, fifo_priority: u8, fifo: bool) -> LoopControl {
        let fifo = fifo && policy.kind != IntervalControl::Old;
        LoopControl {
            policy,
            fifo_priority,
            fifo,
            step: ControlStep::Start,
            prev_ns: 0,
            slept: false,
            sleep_ns: 0,
            sleeps: 0,
            yields: 0,
        }
    }

    /// The thread starts: a SCHED_FIFO loop (static/dynamic as the paper's) is raised, then
    /// every policy takes `prev`.
    pub fn start(&mut self) -> Next {
        if self.fifo {
            self.step = ControlStep::Fifo;
            return Next::Call(Action::SetScheduler { fifo: Some(self.fifo_priority) });
        }
        self.step = ControlStep::FirstPrev;
        Next::Call(Action::GetTime)
    }

    /// Between prepare_conn_list and the I/O: measure the pass, unless there is no control.
    pub fn control(&mut self) -> Next {
        if self.policy.kind == IntervalControl::None {
            self.step = ControlStep::Out;
            return Next::BlockingPoll;
        }
        self.step = ControlStep::Measured;
        Next::Call(Action::GetTime)
    }

    /// After the I/O: `old` yields if it did not sleep; then the next pass.
    pub fn end_pass(&mut self) -> Next {
        if self.policy.kind == IntervalControl::Old && !self.slept {
            self.yields += 1;
            self.step = ControlStep::TailYield;
            return Next::Call(Action::Yield);
        }
        self.step = ControlStep::Out;
        Next::Top
    }

    /// Is the loop in a control step (its next outcome goes to [`step`](Self::step))?
    pub fn active(&self) -> bool {
        self.step != ControlStep::Out
    }

    /// The outcome of the call the control asked for.
    pub fn step(&mut self, outcome: Outcome) -> Next {
        use ControlStep::*;
        let policy = self.policy;
        match (self.step, outcome) {
            (Start, _) => self.start(),
            (Fifo, _) => {
                self.step = FirstPrev;
                Next::Call(Action::GetTime)
            }
            (FirstPrev, Outcome::Time { ns }) => {
                self.prev_ns = ns;
                self.step = Out;
                Next::Top
            }
            (Measured, Outcome::Time { ns }) => {
                let ptime = ns.saturating_sub(self.prev_ns);
                match (policy.kind, policy.decide(ptime)) {
                    (IntervalControl::Old, Decision::Sleep { ns: s }) => {
                        self.slept = true;
                        self.sleeps += 1;
                        self.step = Slept;
                        Next::Call(Action::Sleep { ns: s })
                    }
                    (IntervalControl::Old, Decision::NoSleep) => {
                        self.slept = false;
                        self.prev_ns = ns;
                        self.step = Out;
                        Next::ProcConns
                    }
                    (_, Decision::Sleep { ns: s }) if self.fifo => {
                        self.sleeps += 1;
                        self.sleep_ns = s;
                        self.step = Normalized;
                        Next::Call(Action::SetScheduler { fifo: None })
                    }
                    (_, Decision::Sleep { ns: s }) => {
                        self.sleeps += 1;
                        self.sleep_ns = s;
                        self.step = Slept;
                        Next::Call(Action::Sleep { ns: s })
                    }
                    (_, Decision::NoSleep) => {
                        self.yields += 1;
                        self.step = Yielded;
                        Next::Call(Action::Yield)
                    }
                }
            }
            (Normalized, _) => {
                self.step = Slept;
                Next::Call(Action::Sleep { ns: self.sleep_ns })
            }
            (Slept, _) => {
                if policy.kind == IntervalControl::Old {
                    self.step = OldPrev;
                    return Next::Call(Action::GetTime);
                }
                if !self.fifo {
                    self.step = Prev;
                    return Next::Call(Action::GetTime);
                }
                self.step = Realtime;
                Next::Call(Action::SetScheduler { fifo: Some(self.fifo_priority) })
            }
            (Realtime, _) | (Yielded, _) => {
                self.step = Prev;
                Next::Call(Action::GetTime)
            }
            (Prev, Outcome::Time { ns }) | (OldPrev, Outcome::Time { ns }) => {
                self.prev_ns = ns;
                self.step = Out;
                Next::ProcConns
            }
            (TailYield, _) => {
                self.step = Out;
                Next::Top
            }
            (s, o) => unreachable!("interval control at {s:?} got {o:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kind: IntervalControl, min_cycle_ms: u64, ratio: f64) -> IntervalPolicy {
        IntervalPolicy { kind, min_cycle_ns: min_cycle_ms * 1_000_000, ratio }
    }

    #[test]
    fn static_sleeps_the_rest_of_the_cycle_or_yields() {
        let s = p(IntervalControl::Static, 20, 0.0);
        assert_eq!(s.decide(3_000_000), Decision::Sleep { ns: 17_000_000 });
        assert_eq!(s.decide(20_000_000), Decision::NoSleep, "ptime == min_cycle is not shorter");
        assert_eq!(s.decide(25_000_000), Decision::NoSleep);
        assert!(s.realtime() && !s.blocking_poll());
    }

    #[test]
    fn dynamic_sleeps_in_proportion_and_2x_means_ratio_1() {
        // The paper's "2x" interval: block as long as the loop processed (ratio = k - 1 = 1).
        let d = p(IntervalControl::Dynamic, 0, 1.0);
        assert_eq!(d.decide(4_000_000), Decision::Sleep { ns: 4_000_000 });
        let d3 = p(IntervalControl::Dynamic, 0, 2.0);
        assert_eq!(d3.decide(4_000_000), Decision::Sleep { ns: 8_000_000 });
        assert!(d.realtime());
    }

    #[test]
    fn old_control_is_not_realtime_and_none_blocks_in_poll() {
        let o = p(IntervalControl::Old, 20, 0.0);
        assert_eq!(o.decide(5_000_000), Decision::Sleep { ns: 15_000_000 });
        assert!(!o.realtime() && !o.blocking_poll());
        let n = p(IntervalControl::None, 0, 0.0);
        assert_eq!(n.decide(1), Decision::NoSleep);
        assert!(n.blocking_poll() && !n.realtime());
    }

    /// The calls the first pass of a loop makes, from the thread's start to the I/O; each call's
    /// outcome is the one it would get, the clock at 0 at the start and at `now_ns` afterwards.
    fn pass(c: &mut LoopControl, now_ns: u64) -> Vec<Action> {
        let mut calls = Vec::new();
        let mut times = 0;
        let mut next = c.start();
        loop {
            match next {
                Next::Call(a) => {
                    calls.push(a);
                    let o = match a {
                        Action::GetTime => {
                            times += 1;
                            Outcome::Time { ns: if times == 1 { 0 } else { now_ns } }
                        }
                        Action::SetScheduler { .. } => Outcome::SchedulerSet,
                        Action::Sleep { .. } => Outcome::Slept,
                        _ => Outcome::Yielded,
                    };
                    next = c.step(o);
                }
                Next::Top => next = c.control(),
                other => {
                    assert!(matches!(other, Next::ProcConns | Next::BlockingPoll));
                    return calls;
                }
            }
        }
    }

    #[test]
    fn fifo_can_be_taken_off_a_controlled_loop_and_put_on_an_uncontrolled_one() {
        let fifo = |a: &Action| matches!(a, Action::SetScheduler { .. });
        // The paper's static loop: raised at start, lowered before the sleep, raised after it.
        let s = p(IntervalControl::Static, 20, 0.0);
        let paper = pass(&mut LoopControl::new(s, 50), 5_000_000);
        assert_eq!(paper.iter().filter(|a| fifo(a)).count(), 3, "{paper:?}");
        assert!(paper.contains(&Action::Sleep { ns: 15_000_000 }));
        // -nofifo: the same sleep, no scheduling call at all.
        let nofifo = pass(&mut LoopControl::with_fifo(s, 50, false), 5_000_000);
        assert!(!nofifo.iter().any(fifo), "{nofifo:?}");
        assert!(nofifo.contains(&Action::Sleep { ns: 15_000_000 }));
        // none-fifo: raised once, then the blocking poll; plain none never raises.
        let n = p(IntervalControl::None, 0, 0.0);
        assert_eq!(pass(&mut LoopControl::with_fifo(n, 50, true), 0)[0], Action::SetScheduler { fifo: Some(50) });
        assert!(!pass(&mut LoopControl::new(n, 50), 0).iter().any(fifo));
        // old keeps Fig. 2's rule whatever is asked.
        let o = p(IntervalControl::Old, 20, 0.0);
        assert!(!pass(&mut LoopControl::with_fifo(o, 50, true), 5_000_000).iter().any(fifo));
    }
}
