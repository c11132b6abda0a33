//! The event queue: a binary min-heap keyed by `(time, sequence)`.
//!
//! **Ordering guarantee.** Every `schedule` call takes the next value of a 64-bit insertion
//! counter. The heap orders entries by time, then by that counter, so events at equal times come
//! out in the order they were scheduled. The order therefore depends only on the sequence of
//! calls, never on heap internals, which makes runs reproducible.
//!
//! **Cost.** `schedule` and `pop` are O(log n). The heap's `Vec` keeps its capacity, so once the
//! queue has reached its largest size no further allocation happens.

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
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), seq: 0, now: Time::ZERO, popped: 0 }
    }

    /// The time of the event most recently popped (the simulation clock).
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `event` at absolute time `at`. Scheduling in the past is a model bug.
    pub fn schedule(&mut self, at: Time, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past: {at:?} < {:?}", self.now);
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry { time: at, seq, event });
    }

    /// Schedule `event` `delay` after now.
    pub fn schedule_in(&mut self, delay: Time, event: E) {
        self.schedule(self.now + delay, event);
    }

    /// Remove and return the earliest event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
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
