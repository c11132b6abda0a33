//! The event queue: a binary min-heap keyed by `(time, sequence)`.
//!
//! **Ordering guarantee.** Every `schedule` call takes the next value of a 64-bit insertion
//! counter. The heap orders entries by time, then by that counter, so events at equal times come
//! out in the order they were scheduled. The order therefore depends only on the sequence of
//! calls, never on heap internals, which makes runs reproducible.
//!
//! **Cost.** `schedule` and `pop` are O(log n). The heap's `Vec` keeps its capacity, so once the
//! queue has reached its largest size no further allocation happens.
//!
//! **Refusing the impossible.** Scheduling an event before the clock is a bug in the model: it
//! panics where it happens, naming the run's seed (never a run that goes on with time running
//! backwards). A run whose clock stops advancing (more than [`EventQueue::stall_limit`] events in
//! a row at one instant) is stopped: `pop` returns `None` and [`EventQueue::stall`] says when and
//! which event was next, so the model can name the likely cause instead of spinning forever.

use crate::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) on top.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Time,
    popped: u64,
    /// Events popped in a row at `now`.
    same_instant: u64,
    stall_limit: u64,
    stall: Option<Stall<E>>,
    seed: Option<u64>,
}

/// Events in a row at one instant after which a run is taken to have stalled: far more than a
/// model of bounded size schedules at one time (every process, CPU, source and queued packet
/// acting once is well under a million), few enough to stop within a second or two.
pub const STALL_EVENTS: u64 = 1 << 22;

/// Why the queue stopped handing out events: simulated time stopped advancing.
#[derive(Clone, Debug)]
pub struct Stall<E> {
    /// The instant time stood still at.
    pub at: Time,
    /// Events popped in a row at that instant.
    pub events: u64,
    /// The next event at that instant (not delivered).
    pub event: E,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            now: Time::ZERO,
            popped: 0,
            same_instant: 0,
            stall_limit: STALL_EVENTS,
            stall: None,
            seed: None,
        }
    }

    /// The run's root seed, named in the panic of a model bug caught here.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = Some(seed);
    }

    /// How many events in a row at one instant stop the run (default [`STALL_EVENTS`]).
    pub fn set_stall_limit(&mut self, events: u64) {
        self.stall_limit = events.max(1);
    }
    pub fn stall_limit(&self) -> u64 {
        self.stall_limit
    }

    /// Set when `pop` stopped because time stopped advancing.
    pub fn stall(&self) -> Option<&Stall<E>> {
        self.stall.as_ref()
    }

    /// The time of the event most recently popped (the simulation clock).
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `event` at absolute time `at`. Scheduling in the past is a model bug: it panics.
    pub fn schedule(&mut self, at: Time, event: E) {
        if at < self.now {
            self.scheduled_in_the_past(at);
        }
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry { time: at, seq, event });
    }

    /// Schedule `event` `delay` after now.
    pub fn schedule_in(&mut self, delay: Time, event: E) {
        self.schedule(self.now + delay, event);
    }

    #[cold]
    #[inline(never)]
    fn scheduled_in_the_past(&self, at: Time) -> ! {
        let seed = self.seed.map_or(String::new(), |s| format!(" (seed {s})"));
        panic!("model bug: event scheduled in the past, at {at:?} while the clock is at {:?}{seed}", self.now);
    }

    /// Remove and return the earliest event, advancing the clock to its time. `None` when the
    /// queue is empty or the run has stalled (see [`EventQueue::stall`]).
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.stall.is_some() {
            return None;
        }
        let e = self.heap.pop()?;
        if e.time == self.now {
            self.same_instant += 1;
            if self.same_instant > self.stall_limit {
                self.stall = Some(Stall { at: e.time, events: self.same_instant - 1, event: e.event });
                return None;
            }
        } else {
            self.same_instant = 1;
        }
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Number of events popped so far (including ones the model found stale).
    pub fn events_popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_come_out_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            q.schedule(Time(u64::from(i % 7)), i);
        }
        let mut last = (Time::ZERO, None::<u32>);
        while let Some((t, e)) = q.pop() {
            assert!(t >= last.0);
            if t == last.0 {
                if let Some(prev) = last.1 {
                    assert!(e > prev, "equal-time events out of insertion order");
                }
            }
            last = (t, Some(e));
        }
    }

    #[test]
    #[should_panic(expected = "event scheduled in the past, at 3ns while the clock is at 10ns (seed 7)")]
    fn scheduling_in_the_past_is_caught_with_the_seed() {
        let mut q = EventQueue::new();
        q.set_seed(7);
        q.schedule(Time(10), ());
        q.pop();
        q.schedule(Time(3), ());
    }

    #[test]
    fn a_clock_that_stops_advancing_stops_the_run() {
        let mut q = EventQueue::new();
        q.set_stall_limit(100);
        q.schedule(Time(5), 0u32);
        let mut n = 0;
        // Every event schedules another at the same instant: time never moves.
        while let Some((t, e)) = q.pop() {
            q.schedule(t, e + 1);
            n += 1;
        }
        assert_eq!(n, 100);
        let s = q.stall().expect("stalled");
        assert_eq!((s.at, s.events, s.event), (Time(5), 100, 100));
        // Events that advance time are never taken for a stall, however many.
        let mut q = EventQueue::new();
        q.set_stall_limit(100);
        q.schedule(Time(0), ());
        for _ in 0..1000 {
            let (t, ()) = q.pop().unwrap();
            q.schedule(t + Time(1), ());
        }
        assert!(q.stall().is_none());
    }

    #[test]
    fn clock_follows_pops() {
        let mut q = EventQueue::new();
        q.schedule(Time(10), ());
        q.schedule_in(Time(3), ());
        assert_eq!(q.pop().unwrap().0, Time(3));
        assert_eq!(q.now(), Time(3));
        q.schedule_in(Time(1), ());
        assert_eq!(q.pop().unwrap().0, Time(4));
        assert_eq!(q.pop().unwrap().0, Time(10));
        assert!(q.pop().is_none());
        assert_eq!(q.events_popped(), 3);
    }
}
