//! Interrupt suppression, live (paper 000 §3.3; issue 28 item 5).
//!
//! **The paper's rule.** At each context switch, when the incoming process has a high priority,
//! its socket holds data and the receive path is in high load, the CPU is taken out of the NICs'
//! IRQ affinity, so the flood's interrupts no longer preempt the process while it drains its
//! socket; at the next switch the CPU is given back if that no longer holds. The model runs that
//! rule at the switch (`crates/host/src/mechanisms/ozaki_pbq/suppress.rs`).
//!
//! **The live stand-in.** With threaded NAPI the receive work of the server's veths runs in
//! kthreads (`napi/<dev>-<id>`), which the experiment pins to the server's CPU at SCHED_FIFO
//! (placement `threaded`): they preempt the server processes as 2.4's interrupts did. Two knobs
//! stand for the rule's two halves ([`Knob`]):
//! - **affinity** stands for the IRQ affinity write: the kthreads are moved off the server's
//!   CPU to the others, so the receive work runs elsewhere while bw drains its socket;
//! - **priority** stands for "no interrupt on this CPU while the process runs": the kthreads
//!   stay on the server's CPU but drop from SCHED_FIFO to SCHED_OTHER (nice 0), so the
//!   scheduler runs bw (nice −19) before them instead of them preempting bw.
//!
//! **What differs.** A user-space agent cannot act at the context switch: it polls every
//! `check_ms` (1 ms by default) and reacts within that plus a `sched_setaffinity` /
//! `sched_setscheduler` call (tens of µs), so the suppression lags the switch by up to a few
//! milliseconds and stays on across the switches in between. "Data waiting" is the top-level
//! sockets' `rx_queue` (bytes charged, `/proc/net/udp` of the server's namespace) above
//! `queued_bytes_min`; the paper's test is a buffer over half full, the model's too; the live
//! default is any data (0), because a 1-ms poll sees a draining socket rarely and late. High
//! load is the agent's detector's (`agent.rs`), on the run's own counters only.
//!
//! Every kthread it touches was recorded in the run's ledger (its affinity and policy before
//! the run changed them) before the first change, so clean-up puts it back whatever state a
//! signal leaves it in; on release, on [`Suppressor::restore`] and when dropped it puts the
//! kthreads back to the placement's state (`home_cpus`, SCHED_FIFO `fifo_prio`).

use std::time::Instant;

crate::named_values! {
    /// Which half of the rule a change stands for (module doc).
    pub enum Knob {
        /// The NAPI kthreads moved off the server's CPU (the IRQ affinity write).
        Affinity = "affinity",
        /// SCHED_FIFO to SCHED_OTHER on the server's CPU (no interrupt while the process runs).
        Priority = "priority",
        /// Both.
        Both = "both",
    }
}

impl Knob {
    fn moves(self) -> bool {
        matches!(self, Knob::Affinity | Knob::Both)
    }

    fn lowers(self) -> bool {
        matches!(self, Knob::Priority | Knob::Both)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuppressConfig {
    /// The threaded-NAPI kthreads (tids), each already recorded in the run's ledger.
    pub tids: Vec<u32>,
    /// Where they run normally (the server's CPU) and where suppression moves them.
    pub home_cpus: Vec<usize>,
    pub away_cpus: Vec<usize>,
    /// Their SCHED_FIFO priority when not suppressed.
    pub fifo_prio: i32,
    pub knob: Knob,
    pub check_ms: u64,
    /// Suppress while the top-level sockets hold more than this (bytes).
    pub queued_bytes_min: u64,
}

/// The rule, as a pure function: suppress while the receive path is in high load and the
/// highest-priority process has more than `queued_bytes_min` waiting in its socket.
pub fn wanted(high_load: bool, top_queued_bytes: u64, queued_bytes_min: u64) -> bool {
    high_load && top_queued_bytes > queued_bytes_min
}

/// The suppression's state, its counters, and the calls that change the kthreads.
pub struct Suppressor {
    pub cfg: SuppressConfig,
    on: bool,
    since: Option<Instant>,
    /// Changes made (suppress + release), time spent suppressed, failed calls.
    pub changes: u64,
    pub suppressed_ns: u64,
    pub errors: u64,
}

impl Suppressor {
    pub fn new(cfg: SuppressConfig) -> Suppressor {
        Suppressor { cfg, on: false, since: None, changes: 0, suppressed_ns: 0, errors: 0 }
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Time suppressed so far, counting the current stretch.
    pub fn suppressed_ns_now(&self) -> u64 {
        self.suppressed_ns + self.since.map_or(0, |t| t.elapsed().as_nanos() as u64)
    }

    /// Move to the wanted state (a no-op when already there).
    pub fn set(&mut self, want: bool) {
        if want == self.on {
            return;
        }
        self.apply(want);
        self.on = want;
        self.changes += 1;
        match (want, self.since.take()) {
            (true, _) => self.since = Some(Instant::now()),
            (false, Some(t)) => self.suppressed_ns += t.elapsed().as_nanos() as u64,
            (false, None) => {}
        }
    }

    /// Put the kthreads back as the placement has them, whatever the state.
    pub fn restore(&mut self) {
        self.set(false);
    }

    fn apply(&mut self, suppressed: bool) {
        let k = self.cfg.knob;
        for &tid in &self.cfg.tids {
            let t = tid as libc::pid_t;
            // Order: lower before moving away, and come home before raising, so a kthread never
            // runs at SCHED_FIFO on the CPU it is being taken off.
            let r = if suppressed {
                (if k.lowers() { crate::sys::set_sched(t, libc::SCHED_OTHER, 0) } else { Ok(()) }).and_then(|()| {
                    if k.moves() {
                        crate::sys::set_affinity(t, &self.cfg.away_cpus)
                    } else {
                        Ok(())
                    }
                })
            } else {
                (if k.moves() { crate::sys::set_affinity(t, &self.cfg.home_cpus) } else { Ok(()) }).and_then(|()| {
                    if k.lowers() {
                        crate::sys::set_sched(t, libc::SCHED_FIFO, self.cfg.fifo_prio)
                    } else {
                        Ok(())
                    }
                })
            };
            if r.is_err() {
                self.errors += 1;
            }
        }
    }
}

impl Drop for Suppressor {
    fn drop(&mut self) {
        self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppresses_only_under_high_load_with_data_waiting() {
        assert!(wanted(true, 1, 0));
        assert!(!wanted(false, 1 << 20, 0), "no high load: never");
        assert!(!wanted(true, 0, 0), "nothing waiting: never");
        assert!(!wanted(true, 4096, 4096), "at the threshold: not yet");
        assert!(wanted(true, 4097, 4096));
    }

    #[test]
    fn knobs_parse_and_say_what_they_change() {
        for k in [Knob::Affinity, Knob::Priority, Knob::Both] {
            assert_eq!(Knob::parse(k.name()), Some(k));
        }
        assert_eq!(Knob::parse("irq"), None);
        assert!(Knob::Affinity.moves() && !Knob::Affinity.lowers());
        assert!(!Knob::Priority.moves() && Knob::Priority.lowers());
        assert!(Knob::Both.moves() && Knob::Both.lowers());
    }

    /// On this thread (no root needed: a thread may change its own affinity): suppress moves
    /// it to the away CPUs and counts the change; release and drop bring it home.
    #[test]
    fn affinity_knob_moves_and_restores_the_thread() {
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
        if ncpu < 2 {
            eprintln!("SKIPPED: needs 2 CPUs");
            return;
        }
        let tid = unsafe { libc::gettid() } as u32;
        let before = crate::sys::affinity(0).unwrap();
        let cfg = SuppressConfig {
            tids: vec![tid],
            home_cpus: vec![0],
            away_cpus: vec![1],
            fifo_prio: 1,
            knob: Knob::Affinity,
            check_ms: 1,
            queued_bytes_min: 0,
        };
        {
            let mut s = Suppressor::new(cfg);
            s.set(true);
            assert_eq!(crate::sys::affinity(0).unwrap(), vec![1]);
            s.set(true);
            assert_eq!(s.changes, 1, "a no-op is not a change");
            s.set(false);
            assert_eq!(crate::sys::affinity(0).unwrap(), vec![0]);
            s.set(true);
            assert!(s.is_on());
        }
        assert_eq!(crate::sys::affinity(0).unwrap(), vec![0], "dropped while suppressed: home again");
        crate::sys::set_affinity(0, &before).unwrap();
    }
}
