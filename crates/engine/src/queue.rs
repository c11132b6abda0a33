//! The event queue: a calendar of short time buckets for the near future in front of a 4-ary
//! min-heap for the rest, all keyed by `(time, sequence)`.
//!
//! **Ordering guarantee.** Every `schedule` call takes the next value of a 64-bit insertion
//! counter. Entries are ordered by time, then by that counter, so events at equal times come out
//! in the order they were scheduled. The order therefore depends only on the sequence of calls,
//! never on the structure's internals, which makes runs reproducible.
//!
//! **Structure and cost.** The key `(time, seq)` is packed into one `u128` (time in the high
//! half), so comparing two entries is one wide integer comparison. A host model schedules most
//! events a little after now (the end of the unit of work a CPU just started: 0.1–4 µs; a frame
//! on the wire) and pops them soon; far events (timer ticks, samples) are few. So:
//!
//! ```text
//!   time ─▶  now                                  now + BUCKETS × 2^BUCKET_SHIFT ns (16 µs)
//!            │ b0 │ b1 │ b2 │ ... │ b255 │ (ring of buckets, 64 ns each; a bitmap marks the
//!            └─ unsorted lists of entries ─┘  non-empty ones)       │ later: 4-ary heap
//! ```
//!
//! `schedule` of an event within the calendar's horizon links it into its bucket's list, kept in
//! key order (an index computation and a walk past the bucket's earlier entries: a few); a later
//! one goes into the heap. `pop` finds the first non-empty bucket from now's bucket with the
//! bitmap, takes that bucket's head, and compares it with the heap's minimum. (Unsorted buckets
//! with a scan for the minimum at every pop cost more: a pop walks the whole list, a schedule
//! only the entries before its key; callgrind, modern-64c.) Every entry in the calendar lies in
//! `[now's bucket, now's bucket + BUCKETS)`, so the ring's indices are unambiguous; an entry of the
//! heap may be earlier than the calendar's (it was far when it was scheduled), which the
//! comparison handles. Nodes are recycled through a free list and the heap keeps its capacity,
//! so once the queue has reached its largest size no further allocation happens.
//!
//! **Refusing the impossible.** Scheduling an event before the clock is a bug in the model: it
//! panics where it happens, naming the run's seed (never a run that goes on with time running
//! backwards). A run whose clock stops advancing (more than [`EventQueue::stall_limit`] events in
//! a row at one instant) is stopped: `pop` returns `None` and [`EventQueue::stall`] says when and
//! which event was next, so the model can name the likely cause instead of spinning forever.
//!
//! Measured on recorded schedule/pop sequences of the bench cases (`hostsim bench`), against
//! `std::collections::BinaryHeap` of (time, seq, event): about 1.4× fewer instructions and
//! mispredicted branches with a handful of pending events (1-CPU livelock), and ~1.5× with ~120
//! (64-CPU host). The bucket width and count are fixed, not tuned per run: a run whose events
//! are sparser simply uses the heap more.

use crate::Time;

/// log2 of a bucket's width in ns.
const BUCKET_SHIFT: u32 = 6;
/// Buckets in the ring (a power of two, a multiple of 64).
const BUCKETS: usize = 256;
const NIL: u32 = u32::MAX;

/// A calendar entry. `event` is `None` only while the node is on the free list.
struct Node<E> {
    key: u128,
    next: u32,
    event: Option<E>,
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    /// First node of each bucket's list (NIL if empty).
    heads: [u32; BUCKETS],
    /// Bit i set when bucket i is non-empty.
    occupied: [u64; BUCKETS / 64],
    nodes: Vec<Node<E>>,
    free: u32,
    /// Entries in the calendar (the heap has its own count).
    in_calendar: usize,
    /// Bucket number (time >> BUCKET_SHIFT) of `now`.
    cur: u64,
    far: Heap<E>,
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

#[inline]
fn key(at: Time, seq: u64) -> u128 {
    (u128::from(at.0) << 64) | u128::from(seq)
}

#[inline]
fn key_time(k: u128) -> Time {
    Time((k >> 64) as u64)
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heads: [NIL; BUCKETS],
            occupied: [0; BUCKETS / 64],
            nodes: Vec::with_capacity(1024),
            free: NIL,
            in_calendar: 0,
            cur: 0,
            far: Heap::new(),
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

    /// Move the clock forward to `to` without an event: for a caller that drives time itself (a
    /// unit test stepping a model by hand). Moving it back, or past a pending event, is a bug: it
    /// panics.
    pub fn advance(&mut self, to: Time) {
        if to < self.now {
            self.scheduled_in_the_past(to);
        }
        assert!(self.peek_time().is_none_or(|t| t >= to), "advance to {to:?} past a pending event");
        self.now = to;
        self.cur = to.0 >> BUCKET_SHIFT;
    }

    /// Schedule `event` at absolute time `at`. Scheduling in the past is a model bug: it panics.
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, event: E) {
        if at < self.now {
            self.scheduled_in_the_past(at);
        }
        let seq = self.seq;
        // Wrapping adds for the counters here and in `pop`/`insert`/`unlink_head`: none can
        // overflow (2^64 events take millennia; the calendar holds fewer entries than its u32
        // node ids), and the release build's overflow checks cost a compare and branch each on
        // every event (callgrind, livelock-400k: ~9 instructions per event for the four).
        self.seq = seq.wrapping_add(1);
        self.insert(key(at, seq), event);
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
    // Always inlined: called from the model's one event loop, and a call's register saves are a
    // fair part of a pop's cost (measured with callgrind on the bench cases).
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.stall.is_some() {
            return None;
        }
        let far_min = self.far.min;
        let (k, event) = match self.calendar_min() {
            Some((bucket, node, k)) if k < far_min => (k, self.unlink_head(bucket, node)),
            _ => self.far.pop_min()?,
        };
        let t = key_time(k);
        if t == self.now {
            self.same_instant += 1;
            if self.same_instant > self.stall_limit {
                self.stall = Some(Stall { at: t, events: self.same_instant - 1, event });
                return None;
            }
        } else {
            self.same_instant = 1;
        }
        self.now = t;
        self.cur = t.0 >> BUCKET_SHIFT;
        self.popped = self.popped.wrapping_add(1);
        Some((t, event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Time> {
        let cal = self.calendar_min().map(|(_, _, k)| k);
        match (cal, (self.far.min != NO_KEY).then_some(self.far.min)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(key_time)
    }

    pub fn len(&self) -> usize {
        self.in_calendar + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of events popped so far (including ones the model found stale).
    pub fn events_popped(&self) -> u64 {
        self.popped
    }

    #[inline(always)]
    fn insert(&mut self, k: u128, event: E) {
        // Events in the past are refused by `schedule`, so b >= cur. (Were it not, the wrapped
        // difference would send the entry to the heap, still in order. A `max` with cur and a
        // checked subtraction cost 4 instructions per schedule: callgrind, livelock-400k.)
        let b = key_time(k).0 >> BUCKET_SHIFT;
        if b.wrapping_sub(self.cur) >= BUCKETS as u64 {
            return self.far.push(k, event);
        }
        let i = b as usize & (BUCKETS - 1);
        // The bucket's list is kept in key order: find the entry to link after (NIL: the head).
        // Every pending entry was scheduled before this one, so has a smaller sequence number:
        // the new entry goes after exactly the entries whose time is at most its own, and the
        // walk compares times (the keys' high halves), not whole keys. `get` folds the end of
        // the list into the bounds check (NIL is beyond every node's index). (Callgrind,
        // modern-64c, whose buckets hold a few entries each: with the get_mut lookups below and
        // pop's bitmap test, 903 -> 883 M instructions, -2.3 %; legacy cases -1 %.)
        let t = key_time(k);
        let mut prev = NIL;
        let mut next = self.heads[i];
        while let Some(n) = self.nodes.get(next as usize) {
            if key_time(n.key) > t {
                break;
            }
            prev = next;
            next = n.next;
        }
        // A free node if there is one (`get_mut` of NIL is None, as above), else a new one.
        let n = match self.nodes.get_mut(self.free as usize) {
            Some(node) => {
                let n = self.free;
                self.free = node.next;
                *node = Node { key: k, next, event: Some(event) };
                n
            }
            None => {
                self.nodes.push(Node { key: k, next, event: Some(event) });
                (self.nodes.len() - 1) as u32
            }
        };
        match self.nodes.get_mut(prev as usize) {
            Some(p) => p.next = n,
            None => self.heads[i] = n,
        }
        self.occupied[i / 64] |= 1 << (i % 64);
        self.in_calendar = self.in_calendar.wrapping_add(1);
    }

    /// The calendar's earliest entry: (bucket, node, key), the head of the first non-empty
    /// bucket (each bucket's list is in key order).
    #[inline]
    fn calendar_min(&self) -> Option<(usize, u32, u128)> {
        let bucket = self.first_occupied()?;
        let node = self.heads[bucket];
        Some((bucket, node, self.nodes[node as usize].key))
    }

    /// The first non-empty bucket at or after now's, going round the ring; None when the
    /// calendar is empty. (The bitmap is the emptiness test: a separate test of `in_calendar`
    /// cost every pop a load and a branch.)
    #[inline]
    fn first_occupied(&self) -> Option<usize> {
        let start = self.cur as usize & (BUCKETS - 1);
        let w0 = start / 64;
        let m = self.occupied[w0] & (u64::MAX << (start % 64));
        if m != 0 {
            return Some(w0 * 64 + m.trailing_zeros() as usize);
        }
        self.first_occupied_wrapped(w0)
    }

    /// `first_occupied` past the start word: the remaining words, wrapping round; the start
    /// word's low bits come last.
    #[inline]
    fn first_occupied_wrapped(&self, w0: usize) -> Option<usize> {
        for j in 1..=BUCKETS / 64 {
            let w = (w0 + j) % (BUCKETS / 64);
            let m = self.occupied[w];
            if m != 0 {
                return Some(w * 64 + m.trailing_zeros() as usize);
            }
        }
        None
    }

    /// Remove `node`, the head of `bucket`'s list, and return its event.
    #[inline]
    fn unlink_head(&mut self, bucket: usize, node: u32) -> E {
        let n = &mut self.nodes[node as usize];
        let next = n.next;
        n.next = self.free;
        let event = n.event.take().expect("a linked node holds an event");
        self.free = node;
        self.heads[bucket] = next;
        if next == NIL {
            self.occupied[bucket / 64] &= !(1 << (bucket % 64));
        }
        self.in_calendar = self.in_calendar.wrapping_sub(1);
        event
    }
}

/// A 4-ary min-heap of `(key, event)`. The keys are in their own array, so the four children of
/// a node are 64 contiguous bytes (one cache line) and sifting compares keys without touching the
/// events; keys move through a hole and the events follow by swaps (no copying, no unsafe code).
struct Heap<E> {
    keys: Vec<u128>,
    events: Vec<E>,
    /// The root's key, NO_KEY when empty: `pop` compares it with the calendar's minimum on
    /// every event, and a field is one load where `keys.first()` was a length test, a branch
    /// and the load (callgrind, livelock-400k: 2 instructions per pop).
    min: u128,
}

/// `Heap::min` of an empty heap (above every real key: the sequence never reaches `u64::MAX`).
const NO_KEY: u128 = u128::MAX;

const ARITY: usize = 4;

impl<E> Heap<E> {
    fn new() -> Self {
        Heap { keys: Vec::with_capacity(1024), events: Vec::with_capacity(1024), min: NO_KEY }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// The pushes are inlined into `schedule` and only the sift is a call: an event passed by
    /// value to an out-of-line function must be in memory, so the compiler built every
    /// scheduled event on the stack (its fields as 4-byte stores) and copied it into the
    /// calendar node as 8 + 4 bytes, a load the CPU cannot forward from those stores (a
    /// store-forwarding stall on every `schedule`; `perf annotate`: half of `switch_forward`'s
    /// samples on that copy). Pushed here, the event is written in place.
    #[inline(always)]
    fn push(&mut self, k: u128, event: E) {
        self.keys.push(k);
        self.events.push(event);
        self.sift_up();
    }

    /// Move the last entry up to its place.
    #[inline(never)]
    fn sift_up(&mut self) {
        let mut i = self.keys.len() - 1;
        let k = self.keys[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pk = self.keys[parent];
            if pk <= k {
                break;
            }
            self.keys[i] = pk;
            self.events.swap(i, parent);
            i = parent;
        }
        self.keys[i] = k;
        self.min = self.keys[0];
    }

    #[inline(never)]
    fn pop_min(&mut self) -> Option<(u128, E)> {
        let top = *self.keys.first()?;
        let last = self.keys.pop().expect("non-empty");
        // The root's event goes out; the last event fills its slot and sifts down with its key.
        let event = self.events.swap_remove(0);
        let n = self.keys.len();
        if n == 0 {
            self.min = NO_KEY;
            return Some((top, event));
        }
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let children = &self.keys[first..(first + ARITY).min(n)];
            let mut m = 0;
            let mut mk = children[0];
            for (c, &ck) in children.iter().enumerate().skip(1) {
                if ck < mk {
                    m = c;
                    mk = ck;
                }
            }
            if mk >= last {
                break;
            }
            let m = first + m;
            self.keys[i] = mk;
            self.events.swap(i, m);
            i = m;
        }
        self.keys[i] = last;
        self.min = self.keys[0];
        Some((top, event))
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

    /// Same order as a reference implementation (a sort by (time, insertion index)) for random
    /// interleavings of schedules and pops, including many equal times.
    #[test]
    fn matches_reference_order() {
        let mut rng = crate::RngStreams::new(11).stream("queue");
        for round in 0..200 {
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, u64)> = Vec::new(); // (time, id)
            let mut id = 0u64;
            let span = 1 + rng.below(50);
            for _ in 0..rng.below(400) {
                if rng.chance(0.6) || reference.is_empty() {
                    let t = q.now().ns() + rng.below(span);
                    q.schedule(Time(t), id);
                    reference.push((t, id));
                    id += 1;
                } else {
                    let (i, _) = reference.iter().enumerate().min_by_key(|(_, &(t, k))| (t, k)).unwrap();
                    let want = reference.remove(i);
                    let got = q.pop().map(|(t, e)| (t.ns(), e));
                    assert_eq!(got, Some(want), "round {round}");
                    assert_eq!(q.len(), reference.len());
                }
            }
            reference.sort();
            let rest: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.ns(), e))).collect();
            assert_eq!(rest, reference, "round {round}");
        }
    }

    /// Many pending events, near (calendar) and far (heap) mixed, with bursts, idle gaps longer
    /// than the calendar's horizon and equal times: the order stays exact.
    #[test]
    fn large_queues_spill_to_the_heap_in_order() {
        let mut rng = crate::RngStreams::new(5).stream("queue-large");
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut id = 0u64;
        for step in 0..20_000u64 {
            let n = if step % 1000 < 500 { 3 } else { 1 };
            for _ in 0..n {
                let far = rng.chance(0.3);
                let t = q.now().ns() + if far { 1_000 + rng.below(100_000) } else { rng.below(200) / 50 * 50 };
                q.schedule(Time(t), id);
                reference.insert((t, id));
                id += 1;
            }
            let want = reference.pop_first().unwrap();
            assert_eq!(q.pop().map(|(t, e)| (t.ns(), e)), Some(want), "step {step}");
            assert_eq!(q.len(), reference.len());
        }
        assert!(id > 20_000);
    }

    #[test]
    fn events_that_are_not_copy() {
        let mut q = EventQueue::new();
        for i in (0..100u64).rev() {
            q.schedule(Time(i / 3), format!("e{i}"));
        }
        assert_eq!(q.peek_time(), Some(Time(0)));
        let first: Vec<String> = (0..4).map(|_| q.pop().unwrap().1).collect();
        assert_eq!(first, ["e2", "e1", "e0", "e5"]);
        assert_eq!(q.len(), 96);
        assert_eq!(q.peek_time(), Some(Time(1)));
        q.schedule(Time(1), "late".to_string()); // equal time: after the earlier ones
        let next: Vec<String> = (0..3).map(|_| q.pop().unwrap().1).collect();
        assert_eq!(next, ["e4", "e3", "late"]);
    }
}
