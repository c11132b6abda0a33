//! tabata-speed's slot regulator on today's Linux (paper 002 §2, Tender's execution-speed
//! regulation): a thread at SCHED_FIFO wakes on absolute slot boundaries and lets the target
//! run in n of every T slots, the i-th allocated slot at ⌊T·(i−1)/n⌋ (the model's rule, shared:
//! `hostsim_host::mechanisms::tabata_speed::slots::SlotPlan`).
//!
//! How it stops the target ([`Gate`]): cgroup v2's `cgroup.freeze` (kernel/cgroup/freezer.c,
//! Linux 6.18: the write sets JOBCTL_TRAP_FREEZE on every task and wakes it, and each task
//! parks itself in `do_freezer_trap` on its way back to user space), or SIGSTOP/SIGCONT where
//! no cgroup v2 hierarchy is mounted. Both act on the whole process at its next return to user
//! space, as Tender's dispatcher acted on the program; the probes of issue 30 found off-gaps of
//! 1.00–1.25 ms with either. CFS bandwidth control cannot do it (its quota is enforced at the
//! 4 ms tick on this kernel, HZ = 250).
//!
//! What the paper's Tender had that this does not: its dispatcher *was* the scheduler, so a
//! slot began exactly at its boundary. Here the regulator wakes from `clock_nanosleep`
//! (TIMER_ABSTIME on CLOCK_MONOTONIC, an hrtimer) some microseconds late, and the target runs
//! on until the freeze reaches it. Both are measured, per slot: the wake-up's lateness and the
//! target's CPU time (`clock_getcpuclockid`, read at each wake-up before the gate is touched,
//! so the time the target ran past a boundary before the gate closed counts against the
//! regulator) inside and outside its allocated slots.
//!
//! A woken target resumes at once inside an allocated slot (the model's `immediate` dispatch
//! rule, `kernel.speed_dispatch`): a thawed task that a socket wakes mid-slot runs then.

use hostsim_host::mechanisms::tabata_speed::slots::SlotPlan;
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Lets the target run or stops it.
pub trait Gate: Send {
    fn set(&mut self, run: bool) -> io::Result<()>;
    fn name(&self) -> &'static str;
}

/// cgroup v2 freezer: the group's `cgroup.freeze`, kept open (one write per transition).
pub struct FreezeGate(pub File);

impl Gate for FreezeGate {
    fn set(&mut self, run: bool) -> io::Result<()> {
        self.0.write_all(if run { b"0" } else { b"1" })
    }
    fn name(&self) -> &'static str {
        "cgroup.freeze"
    }
}

/// SIGSTOP / SIGCONT to one process.
pub struct SignalGate(pub u32);

impl Gate for SignalGate {
    fn set(&mut self, run: bool) -> io::Result<()> {
        // SAFETY: kill on the run's own worker.
        if unsafe { libc::kill(self.0 as libc::pid_t, if run { libc::SIGCONT } else { libc::SIGSTOP }) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "SIGSTOP/SIGCONT"
    }
}

#[derive(Clone, Debug)]
pub struct RegulatorConfig {
    pub speed_pct: u32,
    /// Paper 002 §3.1: 1 ms slots, 1 s blocks.
    pub slot_ns: u64,
    pub block_ns: u64,
    /// The CPU to run on (the target's, so that the regulator preempts it as Tender's
    /// dispatcher did); None: anywhere.
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority; None: stay at the caller's policy (tests without privileges).
    pub fifo_prio: Option<i32>,
    /// The most slots one run may take (a bound on the loop).
    pub slots_max: u64,
}

impl RegulatorConfig {
    pub fn plan(&self) -> SlotPlan {
        SlotPlan::new(self.speed_pct, self.slot_ns, self.block_ns, 0)
    }
}

/// One slot boundary as the regulator lived it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotRecord {
    /// Slot number since the origin.
    pub k: u64,
    /// The gate's state for this slot (set at its start).
    pub allocated: bool,
    /// How late the regulator woke, ns.
    pub late_ns: u64,
    /// From the boundary to the gate's write having returned, ns (= late_ns when unchanged).
    pub done_ns: u64,
    /// The target's CPU time at the wake-up (before the gate), ns.
    pub runtime_ns: u64,
}

/// What a regulated run did.
#[derive(Clone, Debug, Default)]
pub struct Regulation {
    /// CLOCK_MONOTONIC ns of slot 0's start.
    pub origin_ns: u64,
    /// The gate's state when the regulator took the target over (before slot 0's record).
    pub open_at_start: bool,
    /// The target's CPU time when the regulator took it over, ns: what it ran between then and
    /// the first record counts against the gate's state at the start.
    pub runtime_start_ns: u64,
    pub slots: Vec<SlotRecord>,
    pub gate_errors: u64,
}

pub use crate::sys::monotonic_ns;
use crate::sys::sleep_until_ns as sleep_until;

/// The CPU-time clock of process `pid` (`clock_getcpuclockid`: the sum over its threads,
/// brought up to date for a thread that is running, kernel/time/posix-cpu-timers.c).
pub fn cpu_clock(pid: u32) -> io::Result<libc::clockid_t> {
    let mut c: libc::clockid_t = 0;
    // SAFETY: valid out-pointer.
    let r = unsafe { libc::clock_getcpuclockid(pid as libc::pid_t, &mut c) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(c)
}

fn read_clock(c: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out-pointer.
    (unsafe { libc::clock_gettime(c, &mut ts) } == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Make the calling thread the regulator: at SCHED_FIFO `cfg.fifo_prio`, pinned to `cfg.cpu`
/// (the policy first, so that a thread queued behind other work on a loaded machine waits at
/// most once, at its first run, and not again on the target's CPU, where the target may be
/// running at SCHED_OTHER).
pub fn become_regulator(cfg: &RegulatorConfig) -> io::Result<()> {
    if let Some(p) = cfg.fifo_prio {
        let sp = libc::sched_param { sched_priority: p };
        // SAFETY: pid 0 = the calling thread (Linux: sched_setscheduler acts on a thread).
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("sched_setscheduler(SCHED_FIFO, {p}): {e}")));
        }
    }
    if let Some(c) = cfg.cpu {
        crate::sys::set_affinity(0, &[c])?;
    }
    Ok(())
}

/// Regulate process `target` through `gate` from `origin_ns` (a CLOCK_MONOTONIC instant on the
/// slot grid) until `stop` is set or `cfg.slots_max` slots have passed. Runs in the calling
/// thread (which it pins and makes SCHED_FIFO: call it from a thread of its own, which ends
/// with it, so nothing of the policy outlives the run). The gate is open at the start and left
/// open at the end.
pub fn regulate(
    cfg: &RegulatorConfig,
    gate: &mut dyn Gate,
    target: u32,
    origin_ns: u64,
    stop: &AtomicBool,
) -> Result<Regulation, String> {
    become_regulator(cfg).map_err(|e| format!("regulator thread: {e}"))?;
    regulate_slots(cfg, gate, target, origin_ns, true, stop)
}

/// [`regulate`]'s slot loop, for a thread that has already called [`become_regulator`] (the
/// live experiment makes its regulator before it starts the target, so that the regulator is
/// in place when the target's first slot begins). `open_at_start` is the gate's state as the
/// caller left it: a target handed over behind a closed gate runs only once the regulator has
/// opened it, so a regulator that comes late costs the target slots and never lets it run
/// unregulated.
pub fn regulate_slots(
    cfg: &RegulatorConfig,
    gate: &mut dyn Gate,
    target: u32,
    origin_ns: u64,
    open_at_start: bool,
    stop: &AtomicBool,
) -> Result<Regulation, String> {
    let plan = cfg.plan();
    let clock = cpu_clock(target).map_err(|e| format!("CPU clock of pid {target}: {e}"))?;
    let mut reg = Regulation {
        origin_ns,
        open_at_start,
        runtime_start_ns: read_clock(clock).unwrap_or(0),
        slots: Vec::with_capacity(cfg.slots_max.min(1 << 20) as usize),
        gate_errors: 0,
    };
    let mut open = open_at_start;
    for k in 0..cfg.slots_max {
        let target_ns = origin_ns + k * cfg.slot_ns;
        sleep_until(target_ns);
        let woke = monotonic_ns();
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let runtime_ns = read_clock(clock).unwrap_or(u64::MAX);
        let want = plan.allocated(k);
        if want != open {
            if gate.set(want).is_err() {
                reg.gate_errors += 1;
            }
            open = want;
        }
        let done = monotonic_ns();
        reg.slots.push(SlotRecord {
            k,
            allocated: open,
            late_ns: woke.saturating_sub(target_ns),
            done_ns: done.saturating_sub(target_ns),
            runtime_ns,
        });
        if runtime_ns == u64::MAX {
            break; // the target is gone
        }
    }
    if !open && gate.set(true).is_err() {
        reg.gate_errors += 1;
    }
    Ok(reg)
}

/// Summary of a regulation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Accuracy {
    pub slots: u64,
    pub allocated: u64,
    /// Slots whose state differs from the plan's (must be 0).
    pub schedule_errors: u64,
    pub late_us_p50: f64,
    pub late_us_p99: f64,
    pub late_us_max: f64,
    /// Boundary → gate written, for slots where the gate changed.
    pub switch_us_p50: f64,
    pub switch_us_p99: f64,
    /// The target's CPU time in allocated and in unallocated slots, ns.
    pub runtime_in_ns: u64,
    pub runtime_out_ns: u64,
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i] as f64 / 1e3
}

/// Check `reg` against `plan` and summarise it. Runtime between two consecutive wake-ups is
/// charged to the state the first one left the gate in, and runtime before the first wake-up
/// to the gate's state at the start.
pub fn accuracy(reg: &Regulation, plan: &SlotPlan) -> Accuracy {
    let mut a = Accuracy { slots: reg.slots.len() as u64, ..Default::default() };
    let mut late: Vec<u64> = reg.slots.iter().map(|s| s.late_ns).collect();
    late.sort_unstable();
    let mut sw: Vec<u64> = Vec::new();
    let mut prev_state = reg.open_at_start;
    if let Some(first) = reg.slots.first().filter(|f| f.runtime_ns != u64::MAX) {
        let d = first.runtime_ns.saturating_sub(reg.runtime_start_ns);
        if reg.open_at_start {
            a.runtime_in_ns += d;
        } else {
            a.runtime_out_ns += d;
        }
    }
    for (i, s) in reg.slots.iter().enumerate() {
        a.allocated += u64::from(s.allocated);
        if s.allocated != plan.allocated(s.k) {
            a.schedule_errors += 1;
        }
        if s.allocated != prev_state {
            sw.push(s.done_ns);
        }
        prev_state = s.allocated;
        if let Some(n) = reg.slots.get(i + 1) {
            if s.runtime_ns != u64::MAX && n.runtime_ns != u64::MAX {
                let d = n.runtime_ns.saturating_sub(s.runtime_ns);
                if s.allocated {
                    a.runtime_in_ns += d;
                } else {
                    a.runtime_out_ns += d;
                }
            }
        }
    }
    sw.sort_unstable();
    a.late_us_p50 = quantile(&late, 0.5);
    a.late_us_p99 = quantile(&late, 0.99);
    a.late_us_max = late.last().map_or(f64::NAN, |&x| x as f64 / 1e3);
    a.switch_us_p50 = quantile(&sw, 0.5);
    a.switch_us_p99 = quantile(&sw, 0.99);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A gate that writes down when it was set, for checking the schedule.
    struct LogGate(Arc<Mutex<Vec<(u64, bool)>>>);
    impl Gate for LogGate {
        fn set(&mut self, run: bool) -> io::Result<()> {
            self.0.lock().unwrap().push((monotonic_ns(), run));
            Ok(())
        }
        fn name(&self) -> &'static str {
            "log"
        }
    }

    /// The slot rule against a recorded schedule: at 80 % with T = 10 slots of 1 ms, the gate
    /// closes in slots 4 and 9 of each block (⌊10·j/8⌋ = 0,1,2,3,5,6,7,8) and opens at 5 and
    /// 10; every transition the gate saw happens after its boundary, in the slot the plan says.
    #[test]
    fn the_gate_follows_the_slot_rule() {
        let cfg = RegulatorConfig {
            speed_pct: 80,
            slot_ns: 1_000_000,
            block_ns: 10_000_000,
            cpu: None,
            fifo_prio: None,
            slots_max: 40,
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut gate = LogGate(Arc::clone(&log));
        let origin = (monotonic_ns() / 1_000_000 + 2) * 1_000_000;
        let stop = AtomicBool::new(false);
        let reg = regulate(&cfg, &mut gate, std::process::id(), origin, &stop).unwrap();
        assert_eq!(reg.slots.len(), 40);
        let plan = cfg.plan();
        let acc = accuracy(&reg, &plan);
        assert_eq!(acc.schedule_errors, 0);
        assert_eq!(acc.allocated, 32);
        let log = log.lock().unwrap().clone();
        // Closes at 4, 9, …, 39 (8), opens at 5, 10, …, 35 (7), and the gate is opened once
        // more when the regulator ends in a closed slot: 16 writes.
        assert_eq!(log.len(), 16, "{log:?}");
        assert_eq!(log.last().map(|l| l.1), Some(true), "the regulator leaves the gate open");
        // The i-th write is the i-th change of state among the slot records (the gate starts
        // open), made for the slot the plan says and never before that slot's boundary.
        let mut changes = Vec::new();
        let mut open = true;
        for r in &reg.slots {
            if r.allocated != open {
                changes.push(*r);
                open = r.allocated;
            }
        }
        assert_eq!(changes.len() + 1, log.len());
        for (r, (t, run)) in changes.iter().zip(&log) {
            assert_eq!(r.allocated, *run, "slot {}", r.k);
            assert_eq!(plan.allocated(r.k), *run, "slot {}", r.k);
            assert!(*t >= origin + r.k * 1_000_000, "slot {}: the gate moved before the slot began", r.k);
        }
        let closes: Vec<u64> =
            reg.slots.windows(2).filter(|w| w[0].allocated && !w[1].allocated).map(|w| w[1].k % 10).collect();
        assert!(closes.iter().all(|&k| k == 4 || k == 9), "{closes:?}");
    }

    #[test]
    fn runtime_is_charged_to_the_state_of_the_slot_it_ran_in() {
        let s = |k, allocated, runtime_ns| SlotRecord { k, allocated, late_ns: 10_000, done_ns: 12_000, runtime_ns };
        let slots = vec![s(0, true, 0), s(1, false, 900), s(2, true, 950), s(3, true, 1950)];
        let reg = Regulation { origin_ns: 0, open_at_start: true, runtime_start_ns: 0, slots, gate_errors: 0 };
        let plan = SlotPlan::new(50, 1, 4, 0); // slots 0 and 2 of 4
        let a = accuracy(&reg, &plan);
        assert_eq!((a.runtime_in_ns, a.runtime_out_ns), (900 + 1000, 50));
        assert_eq!(a.schedule_errors, 1); // slot 3 is not allocated at 50 %
        assert_eq!(a.allocated, 3);
    }

    /// A target handed over behind a closed gate: what it ran before the regulator's first
    /// wake-up (a regulator that came late) counts as run outside its slots, and opening the
    /// gate at slot 0 is a switch.
    #[test]
    fn runtime_before_the_first_wake_up_counts_against_a_closed_gate() {
        let s = |k, allocated, runtime_ns| SlotRecord { k, allocated, late_ns: 10_000, done_ns: 12_000, runtime_ns };
        let slots = vec![s(0, true, 700), s(1, false, 1600), s(2, true, 1650)];
        let reg = Regulation { origin_ns: 0, open_at_start: false, runtime_start_ns: 200, slots, gate_errors: 0 };
        let a = accuracy(&reg, &SlotPlan::new(50, 1, 4, 0));
        assert_eq!((a.runtime_in_ns, a.runtime_out_ns), (900, 500 + 50));
        assert_eq!(a.switch_us_p50, 12.0, "the switches at slots 0, 1 and 2 each took 12 us");
    }

    /// The gate closed at the start stays closed until the regulator's first allocated slot,
    /// and the regulator's first write opens it.
    #[test]
    fn a_gate_closed_at_the_start_is_opened_by_the_first_allocated_slot() {
        let cfg = RegulatorConfig {
            speed_pct: 50,
            slot_ns: 1_000_000,
            block_ns: 10_000_000,
            cpu: None,
            fifo_prio: None,
            slots_max: 4,
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut gate = LogGate(Arc::clone(&log));
        let origin = (monotonic_ns() / 1_000_000 + 2) * 1_000_000;
        let reg = regulate_slots(&cfg, &mut gate, std::process::id(), origin, false, &AtomicBool::new(false)).unwrap();
        assert!(!reg.open_at_start);
        let runs: Vec<bool> = log.lock().unwrap().iter().map(|l| l.1).collect();
        // 50 % of 10 slots: 0 and 2 run, 1 and 3 do not; the gate is opened once more at the end.
        assert_eq!(runs, [true, false, true, false, true]);
        assert!(log.lock().unwrap()[0].0 >= origin, "opened before slot 0 began");
    }
}
