//! `tabata-speed`'s keys (paper 002's regulation): its `[kernel]` keys and its `[[process]]` key,
//! each declared once, and what it checks that a key's bound cannot.

use crate::config::HostConfig;
use hostsim_options::{int, options, Fault};
use serde::{Deserialize, Serialize};

/// Paper 002's keys of `[kernel]`.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TabataOptions {
    /// Tender speed regulation (paper 002): slot length.
    #[option(default = 1000, bound = int(1, 1_000_000), why = "us per Tender slot; at most 1 s")]
    pub speed_slot_us: u64,
    /// Tender speed regulation: block length (T = block / slot slots per block).
    #[option(default = 1000, bound = int(1, 3_600_000), why = "ms per Tender block; at most an hour, so slots per block stay below 2^32 and slots.rs's products fit in u64")]
    pub speed_block_ms: u64,
    /// When a regulated process woken mid-slot runs again: `slot_boundary` (only at the start
    /// of its next allocated slot) or `immediate` (at once if the current slot is allocated).
    #[option(default = SpeedDispatch::SlotBoundary)]
    pub speed_dispatch: SpeedDispatch,
}

/// Paper 002's key of a `[[process]]`.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TabataTask {
    /// Tender execution-speed regulation (paper 002), 1..=100 percent: the process runs only
    /// in its n = round(speed × T / 100) allocated slots of each block. Absent = unregulated.
    #[option(default = None, bound = int(1, 100), why = "a speed in percent, Tender's regulation")]
    pub speed_pct: Option<u32>,
}

/// Dispatch of a woken speed-regulated process (paper 002 does not say; notes 002 §5.4).
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SpeedDispatch {
    SlotBoundary,
    Immediate,
}

/// What the keys' bounds cannot say: a block of whole slots, and for each regulated process a
/// speed that is exactly n of the T slots of a block (with 1 ms blocks of 1 ms slots, 1 %, 33 %
/// and 100 % would all be 1 of 1), with slots long enough to hold the context switches into and
/// out of them many times over (1 us slots charged CPU and made no progress).
pub fn check(c: &HostConfig, o: &TabataOptions, tasks: &[TabataTask]) -> Result<(), Fault> {
    if o.speed_block_ms.saturating_mul(1000) < o.speed_slot_us {
        return Err(Fault::at(
            &["kernel", "speed_block_ms"],
            format!("expected a block of at least one slot ({} us), in ms >= 1", o.speed_slot_us),
        ));
    }
    for (i, s) in tasks.iter().enumerate().filter_map(|(i, t)| Some((i, t.speed_pct?))) {
        speed(c, o, i, s)?;
    }
    Ok(())
}

/// Process `i`'s speed `s`.
fn speed(c: &HostConfig, o: &TabataOptions, i: usize, s: u32) -> Result<(), Fault> {
    // Bounds: slot <= 1e6 us, block <= 3.6e6 ms: these products fit in u64.
    let (slot_us, block_us) = (o.speed_slot_us.max(1), o.speed_block_ms.saturating_mul(1000));
    if block_us % slot_us != 0 {
        return Err(Fault::at(
            &["kernel", "speed_block_ms"],
            format!(
                "expected a block of a whole number of slots: {} ms is not a multiple of speed_slot_us = {slot_us} us",
                o.speed_block_ms
            ),
        ));
    }
    let t = block_us / slot_us;
    if u64::from(s) * t % 100 != 0 {
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let step = 100 / gcd(t, 100);
        return Err(Fault::elem(
            "process",
            i,
            "speed_pct",
            format!(
                "{s} % is not n of T = {t} slots per block exactly ({:.2} slots); with {t} slots per block the speeds are the multiples of {step} %: choose one, or more slots per block (kernel.speed_block_ms, speed_slot_us)",
                u64::from(s) as f64 * t as f64 / 100.0
            ),
        ));
    }
    let ctx_ns = c.profile.costs.context_switch_ns;
    let min_us = (ctx_ns * 10).div_ceil(1000);
    if slot_us * 1000 < ctx_ns * 10 {
        return Err(Fault::at(
            &["kernel", "speed_slot_us"],
            format!(
                "expected a slot of at least {min_us} us, 10 context switches of this profile ({ctx_ns} ns each): a regulated process switched in and out of every slot would spend a fifth of it or more switching"
            ),
        ));
    }
    Ok(())
}
