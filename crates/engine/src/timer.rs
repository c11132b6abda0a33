//! Cancellable, re-armable timers by generation counter.
//!
//! A component owns a [`Timer`]. Arming it bumps its generation and returns the new value, which
//! the component puts inside the event it schedules. Cancelling bumps the generation too. When the
//! event is popped the component asks [`Timer::fires`]: a stale generation means the timer was
//! cancelled or re-armed since, and the event is ignored. Cancel and re-arm are O(1) and never
//! search the queue; the stale entry costs one pop later.

/// A single re-armable timer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    gen: u32,
    armed: bool,
}

impl Timer {
    pub const fn new() -> Timer {
        Timer { gen: 0, armed: false }
    }
    /// Arm (or re-arm) the timer; returns the generation to carry in the scheduled event.
    pub fn arm(&mut self) -> u32 {
        self.gen = self.gen.wrapping_add(1);
        self.armed = true;
        self.gen
    }
    /// Cancel: any event carrying an older generation will not fire.
    pub fn cancel(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        self.armed = false;
    }
    pub fn is_armed(&self) -> bool {
        self.armed
    }
    /// Called when an event carrying `gen` is popped: true (and the timer disarms) if it is live.
    pub fn fires(&mut self, gen: u32) -> bool {
        if self.armed && gen == self.gen {
            self.armed = false;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventQueue, Time};

    #[test]
    fn cancel_and_rearm() {
        let mut t = Timer::new();
        let mut q = EventQueue::new();
        let g1 = t.arm();
        q.schedule(Time(10), g1);
        let g2 = t.arm(); // re-arm later: the first event becomes stale
        q.schedule(Time(20), g2);
        let (_, g) = q.pop().unwrap();
        assert!(!t.fires(g));
        let (_, g) = q.pop().unwrap();
        assert!(t.fires(g));
        assert!(!t.is_armed());

        let g3 = t.arm();
        t.cancel();
        assert!(!t.fires(g3));
    }
}
