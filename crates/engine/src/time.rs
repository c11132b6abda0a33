//! Simulated time: integer nanoseconds since the start of the run.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time (or a duration), in integer nanoseconds.
///
/// `u64` nanoseconds cover 584 years, far beyond any run (scenario validation limits every time
/// to a simulated day). Arithmetic saturates: a sum or conversion past 584 years is `Time::MAX`
/// ("never"), not a wrap to a time in the past; subtraction saturates at zero so a "time until"
/// never underflows.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_ns(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_us(us: u64) -> Time {
        Time(us.saturating_mul(1_000))
    }
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms.saturating_mul(1_000_000))
    }
    pub const fn from_s(s: u64) -> Time {
        Time(s.saturating_mul(1_000_000_000))
    }
    pub const fn ns(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn since(self, earlier: Time) -> Time {
        Time(self.0.saturating_sub(earlier.0))
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, o: Time) -> Time {
        Time(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, o: Time) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, o: Time) -> Time {
        self.since(o)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns >= 1_000_000_000 {
            write!(f, "{:.6}s", ns as f64 * 1e-9)
        } else if ns >= 1_000_000 {
            write!(f, "{:.3}ms", ns as f64 * 1e-6)
        } else if ns >= 1_000 {
            write!(f, "{:.3}us", ns as f64 * 1e-3)
        } else {
            write!(f, "{ns}ns")
        }
    }
}
