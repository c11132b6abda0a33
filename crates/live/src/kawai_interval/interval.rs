//! The interval rules of paper 004's Fig. 5 as the live accelerator's loops run them, and the
//! variants of the experiment.
//!
//! The decision itself is the model's ([`IntervalPolicy::decide`],
//! `crates/workload/src/mechanisms/kawai_interval.rs`), so that live and model cannot drift
//! apart: after `prepare_conn_list` the loop measures `ptime = now − prev` (`prev` taken after the
//! previous block, so the sleep is not loop time); **static** sleeps `min_cycle − ptime` when the
//! loop was shorter than the cycle and calls `sched_yield()` otherwise; **dynamic** sleeps
//! `ptime × (k − 1)` for the paper's "k×" (§4.1.2: at 2× the thread blocks as long as it
//! processed), always; **none** (the paper's 0 ms) never measures and blocks in the gathering.
//!
//! What the live side adds to the rule:
//! - **SCHED_FIFO only around the I/O** (Fig. 4/5: `normalize_priority()` just before the
//!   sleep, `realtime_priority()` after it), or not at all (`-nofifo` variants: the same loop at
//!   SCHED_OTHER, to show what the real-time part does on today's scheduler).
//! - **Tick quantisation** (`-hz100` variants): Linux 2.5.17's `sys_nanosleep` slept
//!   `timespec_to_jiffies(t) + 1` jiffies from the current one (HZ = 100 on i386 until 2.5.25),
//!   so a request of a few µs lasted 10–20 ms. Today's nanosleep is a high-resolution timer
//!   (plus the 50 µs default timer slack of a SCHED_OTHER thread). The quantised variants wake at
//!   the jiffy boundary that rule gives, on a virtual jiffy grid at multiples of 1/HZ of
//!   CLOCK_MONOTONIC (`clock_nanosleep(TIMER_ABSTIME)`); the rule is the model's
//!   (`hostsim_host::nanosleep_jiffies`), called as for a SCHED_OTHER task (Fig. 5 normalises
//!   before it sleeps, so 2.5's busy-wait branch for real-time tasks never applies).

use hostsim_workload::mechanisms::kawai_interval::{Decision, IntervalControl, IntervalPolicy};

/// The SCHED_FIFO priority of the loops during I/O (the paper gives none; the model's default).
pub const FIFO_PRIORITY: i32 = 50;

/// One variant of the experiment: the loops' interval control and scheduling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Control {
    /// `None`, `Static` or `Dynamic` (the model's `Old`, paper Fig. 2, is not run live).
    pub policy: IntervalPolicy,
    /// SCHED_FIFO during the I/O (the paper's proposal), else SCHED_OTHER throughout.
    pub fifo: bool,
    /// Sleep as Linux 2.5 did at this HZ (ticks + 1), else as today's kernel does.
    pub quantise_hz: Option<u32>,
}

/// What the loop does after measuring its pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// nanosleep() for this long (today's high-resolution sleep).
    For { ns: u64 },
    /// Sleep until this CLOCK_MONOTONIC time (the quantised rule's jiffy boundary).
    Until { at_ns: u64 },
    /// Do not block: `sched_yield()`.
    Yield,
}

impl Control {
    /// The variant called `name`: `none`, `none-fifo`, `static-N` (N ms), `dynamic-Kx`, each
    /// controlled one optionally followed by `-nofifo` or `-hzH`.
    pub fn parse(name: &str) -> Result<Control, String> {
        let bad = || {
            format!("variant `{name}`: expected none, none-fifo, static-<ms>[-nofifo|-hz<HZ>] or dynamic-<k>x[-nofifo|-hz<HZ>]")
        };
        let mut parts = name.split('-');
        let kind = parts.next().ok_or_else(bad)?;
        let (policy, rest): (IntervalPolicy, Vec<&str>) = match kind {
            "none" => {
                let rest: Vec<&str> = parts.collect();
                let fifo = match rest.as_slice() {
                    [] => false,
                    ["fifo"] => true,
                    _ => return Err(bad()),
                };
                return Ok(Control { policy: policy(IntervalControl::None, 0, 0.0), fifo, quantise_hz: None });
            }
            "static" => {
                let ms: u64 =
                    parts.next().and_then(|s| s.parse().ok()).filter(|&m| (1..=1000).contains(&m)).ok_or_else(bad)?;
                (policy(IntervalControl::Static, ms * 1_000_000, 0.0), parts.collect())
            }
            "dynamic" => {
                let k: u32 = parts
                    .next()
                    .and_then(|s| s.strip_suffix('x'))
                    .and_then(|s| s.parse().ok())
                    .filter(|&k| (1..=100).contains(&k))
                    .ok_or_else(bad)?;
                (policy(IntervalControl::Dynamic, 0, f64::from(k - 1)), parts.collect())
            }
            _ => return Err(bad()),
        };
        let mut c = Control { policy, fifo: true, quantise_hz: None };
        match rest.as_slice() {
            [] => {}
            ["nofifo"] => c.fifo = false,
            [hz] => {
                let h: u32 = hz
                    .strip_prefix("hz")
                    .and_then(|s| s.parse().ok())
                    .filter(|&h| (10..=10_000).contains(&h))
                    .ok_or_else(bad)?;
                c.quantise_hz = Some(h);
            }
            _ => return Err(bad()),
        }
        Ok(c)
    }

    /// Does the loop measure itself and block between passes (anything but `none`)?
    pub fn controlled(&self) -> bool {
        self.policy.kind != IntervalControl::None
    }

    /// After `prepare_conn_list`, at `now_ns` (CLOCK_MONOTONIC), the pass having taken `ptime_ns`
    /// since `prev`: sleep (how) or yield (Fig. 5).
    pub fn block(&self, now_ns: u64, ptime_ns: u64) -> Block {
        match self.policy.decide(ptime_ns) {
            Decision::NoSleep => Block::Yield,
            Decision::Sleep { ns } => match self.quantise_hz {
                None => Block::For { ns },
                Some(hz) => {
                    let tick = 1_000_000_000 / u64::from(hz);
                    match hostsim_host::nanosleep_jiffies(now_ns, ns, tick, false) {
                        hostsim_host::Nanosleep::Until { at_ns } => Block::Until { at_ns },
                        // Only a real-time task busy-waits; Fig. 5 sleeps at SCHED_OTHER.
                        hostsim_host::Nanosleep::BusyWait { ns } => Block::For { ns },
                    }
                }
            },
        }
    }
}

fn policy(kind: IntervalControl, min_cycle_ns: u64, ratio: f64) -> IntervalPolicy {
    IntervalPolicy { kind, min_cycle_ns, ratio }
}

/// The variants of the experiment (paper Figs. 7–10): no control; static 10/20/30 ms and dynamic
/// 2×/3×/4× with SCHED_FIFO during I/O (the paper's) and without; dynamic with 2.5's sleep at
/// HZ = 100; and no control at SCHED_FIFO (the real-time part alone).
pub const VARIANTS: &str = "none,none-fifo,static-10,static-20,static-30,static-10-nofifo,static-20-nofifo,\
static-30-nofifo,dynamic-2x,dynamic-3x,dynamic-4x,dynamic-2x-nofifo,dynamic-3x-nofifo,dynamic-4x-nofifo,\
dynamic-2x-hz100,dynamic-3x-hz100,dynamic-4x-hz100";

/// A variant's name, checked (`--variants`' value parser): the name as given, a loop's
/// (`static-20`) optionally with a receive path of today's kernel after `+` (`none+defer`,
/// `rx.rs`).
pub fn variant_name(s: &str) -> Result<String, String> {
    let (lp, _) = super::rx::split_variant(s)?;
    Control::parse(lp).map(|_| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn static_sleeps_the_rest_of_the_cycle_and_yields_when_the_pass_was_longer() {
        let c = Control::parse("static-20").unwrap();
        assert!(c.fifo && c.controlled() && c.quantise_hz.is_none());
        assert_eq!(c.block(100 * MS, 3 * MS), Block::For { ns: 17 * MS });
        assert_eq!(c.block(100 * MS, 20 * MS), Block::Yield, "a pass as long as the cycle does not sleep");
        assert_eq!(c.block(100 * MS, 25 * MS), Block::Yield);
    }

    #[test]
    fn dynamic_kx_sleeps_k_minus_one_times_the_pass() {
        // §4.1.2: at 2x the thread blocks for as long as it processed.
        assert_eq!(Control::parse("dynamic-2x").unwrap().block(0, 4 * MS), Block::For { ns: 4 * MS });
        assert_eq!(Control::parse("dynamic-4x").unwrap().block(0, 4 * MS), Block::For { ns: 12 * MS });
        // Always proportional: a pass of 30 us sleeps 30 us on today's kernel (the degenerate
        // case the probes found), however long the pass.
        assert_eq!(Control::parse("dynamic-2x").unwrap().block(0, 30_000), Block::For { ns: 30_000 });
        assert_eq!(Control::parse("dynamic-3x").unwrap().block(0, 500 * MS), Block::For { ns: 1000 * MS });
    }

    #[test]
    fn quantised_sleeps_last_ticks_plus_one_from_the_current_jiffy() {
        // HZ = 100: a 30 us request issued 3.5 ms into a jiffy wakes at the second boundary
        // (timespec_to_jiffies(30 us) = 1, + 1): 16.5 ms later.
        let c = Control::parse("dynamic-2x-hz100").unwrap();
        assert_eq!(c.quantise_hz, Some(100));
        let now = 1_000 * MS + 3_500_000;
        assert_eq!(c.block(now, 30_000), Block::Until { at_ns: 1_020 * MS });
        // 7 ms request (7 ms pass at 2x) issued 3.5 ms in: ceil(7/10) + 1 = 2 jiffies too.
        assert_eq!(c.block(now, 7 * MS), Block::Until { at_ns: 1_020 * MS });
        // 12 ms: 2 + 1 jiffies.
        assert_eq!(c.block(now, 12 * MS), Block::Until { at_ns: 1_030 * MS });
        // Static control quantised likewise: the 10 ms cycle becomes 20 ms (notes 004 §6.1).
        let s = Control::parse("static-10-hz100").unwrap();
        assert_eq!(s.block(1_000 * MS, 2 * MS), Block::Until { at_ns: 1_020 * MS });
    }

    #[test]
    fn none_never_measures_and_fifo_is_per_variant() {
        let n = Control::parse("none").unwrap();
        assert!(!n.controlled() && !n.fifo);
        assert!(Control::parse("none-fifo").unwrap().fifo);
        assert!(!Control::parse("static-10-nofifo").unwrap().fifo);
        assert!(!Control::parse("dynamic-3x-nofifo").unwrap().fifo);
        for v in VARIANTS.split(',') {
            assert!(Control::parse(v).is_ok(), "{v}");
        }
        for bad in [
            "",
            "static",
            "static-0",
            "static-x",
            "dynamic-2",
            "dynamic-0x",
            "none-nofifo",
            "static-10-hz",
            "static-10-fast",
            "old-20",
        ] {
            assert!(Control::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
