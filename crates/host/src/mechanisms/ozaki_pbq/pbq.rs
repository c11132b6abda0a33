//! Priority-Based Queues (PBQs), the backlog policy of `ozaki-pbq` (paper 000, §3.2, Figs. 3–4).
//!
//! The per-CPU backlog keeps Linux's original FIFO (`Q_orig`) for low load. When the backlog
//! overflows (the 2.4 throttle condition: more than `netdev_max_backlog` packets) the CPU enters
//! the high-load state and arrivals go to one queue per priority instead. The PBQs are a
//! structure of their own beside `Q_orig` (Fig. 2), holding up to `netdev_max_backlog` packets
//! (the paper gives no size; we use the backlog's). When the PBQs are full (Fig. 3: "PBQs が満杯")
//! an arrival evicts the tail of a randomly chosen *lower*-priority non-empty queue, unless that
//! queue holds no more than its minimum (smaller for lower priorities), in which case the
//! arrival is dropped. Dequeue takes `Q_orig` first, then the highest non-empty priority found
//! with a bitmap (`find_first_bit`, O(1)). The high-load state ends when everything has drained,
//! as 2.4's throttle does.
//!
//! Priorities are levels 0..=39 = 19 − nice (higher = more important), looked up from the
//! port → priority table that bind() and nice() maintain (see `Host::sock_priority`).
//!
//! On the NAPI/RPS path (Linux 2.6.35+ `enqueue_to_backlog`, no throttle state) the same rules
//! apply to the per-CPU backlog that RPS enqueues onto, with the high-load state defined as in
//! 2.4 but without the throttle: it begins when an arrival finds the backlog over
//! `netdev_max_backlog` (the moment `enqueue_to_backlog` would drop) and ends when the backlog
//! has drained empty (when its backlog NAPI instance would complete, `process_backlog`'s
//! `napi_complete`). The priority lookup runs on the enqueuing CPU, in the NAPI poll that steers
//! the packet (`net/core/rx.rs`). This NAPI-era trigger is our definition; the paper only had 2.4.

use crate::net::core::backlog::{BacklogPolicy, Enqueue};
use crate::types::{PktId, LEVELS};
use hostsim_engine::Rng;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Pbq {
    orig: VecDeque<PktId>,
    queues: Vec<VecDeque<PktId>>,
    /// Bit `l` set ⇔ queue `l` is non-empty.
    bitmap: u64,
    /// Packets in `orig` and the PBQs together.
    total: usize,
    /// Packets in the PBQs alone (their fill decides "full").
    pbq_len: usize,
    max: usize,
    high_load: bool,
    /// Minimum packets kept in the top-priority queue; level l keeps min_top·(l+1)/40.
    min_top: usize,
    rng: Rng,
    costs: PbqCosts,
}

/// What the PBQs add to the receive path's work (the profile's `[mechanisms]`, ns): the branch
/// on every enqueue and dequeue, the classification (header parse, port → priority lookup) of
/// an enqueue at high load, the per-priority dequeue (`find_first_bit`) at high load.
#[derive(Clone, Copy, Debug, Default)]
pub struct PbqCosts {
    pub branch_ns: u64,
    pub classify_ns: u64,
    pub dequeue_ns: u64,
}

impl Pbq {
    pub fn new(max: usize, min_top: usize, rng: Rng) -> Pbq {
        Pbq {
            orig: VecDeque::with_capacity(max + 1),
            queues: (0..LEVELS).map(|_| VecDeque::new()).collect(),
            bitmap: 0,
            total: 0,
            pbq_len: 0,
            max,
            high_load: false,
            min_top,
            rng,
            costs: PbqCosts::default(),
        }
    }

    /// With the work the PBQs add to the receive path.
    pub fn with_costs(mut self, costs: PbqCosts) -> Pbq {
        self.costs = costs;
        self
    }

    /// The minimum a queue of `level` keeps before its packets may be evicted.
    pub fn min_len(&self, level: usize) -> usize {
        self.min_top * (level + 1) / LEVELS
    }

    fn push(&mut self, level: usize, pkt: PktId) {
        self.queues[level].push_back(pkt);
        self.bitmap |= 1 << level;
        self.total += 1;
        self.pbq_len += 1;
    }

    fn pbq_enqueue(&mut self, pkt: PktId, level: usize) -> Enqueue {
        if self.pbq_len >= self.max {
            let lower = self.bitmap & ((1u64 << level) - 1);
            if lower == 0 {
                return Enqueue::Dropped;
            }
            // A random lower-priority non-empty queue.
            let n = lower.count_ones() as u64;
            let mut pick = self.rng.below(n);
            let mut bits = lower;
            let mut sac = bits.trailing_zeros() as usize;
            while pick > 0 {
                bits &= bits - 1;
                sac = bits.trailing_zeros() as usize;
                pick -= 1;
            }
            if self.queues[sac].len() <= self.min_len(sac) {
                return Enqueue::Dropped;
            }
            let victim = self.queues[sac].pop_back().expect("non-empty by bitmap");
            if self.queues[sac].is_empty() {
                self.bitmap &= !(1 << sac);
            }
            self.total -= 1;
            self.pbq_len -= 1;
            self.push(level, pkt);
            return Enqueue::Evicted { victim };
        }
        self.push(level, pkt);
        Enqueue::Queued { was_empty: self.total == 1 }
    }
}

impl BacklogPolicy for Pbq {
    fn enqueue(&mut self, pkt: PktId, prio: i32) -> Enqueue {
        let level = prio.clamp(0, LEVELS as i32 - 1) as usize;
        if self.high_load && self.total == 0 {
            self.high_load = false; // drained: back to the original queue
        }
        if !self.high_load {
            if self.total <= self.max {
                self.orig.push_back(pkt);
                self.total += 1;
                return Enqueue::Queued { was_empty: self.total == 1 };
            }
            self.high_load = true;
        }
        self.pbq_enqueue(pkt, level)
    }

    fn dequeue(&mut self) -> Option<PktId> {
        if let Some(p) = self.orig.pop_front() {
            self.total -= 1;
            return Some(p);
        }
        if self.bitmap == 0 {
            return None;
        }
        let level = 63 - self.bitmap.leading_zeros() as usize;
        let p = self.queues[level].pop_front().expect("non-empty by bitmap");
        if self.queues[level].is_empty() {
            self.bitmap &= !(1 << level);
        }
        self.total -= 1;
        self.pbq_len -= 1;
        Some(p)
    }

    fn len(&self) -> usize {
        self.total
    }

    fn high_load(&self) -> bool {
        self.high_load
    }

    /// The branch, and at high load the classification (computed when the enqueuing unit starts).
    fn needs_priority(&self) -> bool {
        true
    }

    fn enqueue_cost_ns(&self) -> u64 {
        self.costs.branch_ns + if self.high_load { self.costs.classify_ns } else { 0 }
    }

    fn dequeue_cost_ns(&self) -> u64 {
        self.costs.branch_ns + if self.high_load { self.costs.dequeue_ns } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::level_of_nice;
    use hostsim_engine::RngStreams;

    fn pbq(max: usize, min_top: usize) -> Pbq {
        Pbq::new(max, min_top, RngStreams::new(1).stream("pbq"))
    }

    /// Fill to overflow with low-priority packets so the backlog is in its high-load state.
    fn overload(q: &mut Pbq, level: i32, first_id: u32) {
        for i in 0..=q.max as u32 {
            assert!(matches!(q.enqueue(first_id + i, level), Enqueue::Queued { .. }));
        }
        assert!(!q.high_load());
        q.enqueue(first_id + 1000, level);
        assert!(q.high_load(), "overflow enters high load");
    }

    #[test]
    fn unused_below_high_load() {
        let mut q = pbq(10, 4);
        for i in 0..5 {
            q.enqueue(i, (i % 3) as i32 * 10);
        }
        assert!(!q.high_load());
        assert_eq!(q.bitmap, 0, "no priority queue touched at low load");
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue()).collect();
        assert_eq!(order, [0, 1, 2, 3, 4], "plain FIFO at low load");
    }

    #[test]
    fn dequeue_order_is_original_then_by_priority() {
        let mut q = pbq(4, 0);
        for i in 0..5 {
            q.enqueue(i, 0); // ids 0..4 go to Q_orig (len 5 > max 4 after)
        }
        q.enqueue(100, 5); // overflow → high load: into PBQ level 5
        assert!(q.high_load());
        // Drain Q_orig partly, then add mixed priorities into the PBQs.
        assert_eq!(q.dequeue(), Some(0));
        assert_eq!(q.dequeue(), Some(1));
        assert_eq!(q.dequeue(), Some(2));
        q.enqueue(200, 39);
        q.enqueue(201, 10);
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue()).collect();
        assert_eq!(order, [3, 4, 200, 201, 100], "Q_orig first, then highest priority first");
    }

    /// Overload so the backlog is in high load, then fill the PBQs with `n` level-`low`
    /// packets (ids 500..) and up to capacity with level-0 packets (ids 900..).
    fn full_with_low(q: &mut Pbq, low: i32, n: usize) {
        overload(q, low, 0);
        for i in 0..n as u32 {
            assert!(!matches!(q.enqueue(500 + i, low), Enqueue::Dropped));
        }
        let mut i = 0;
        while q.pbq_len < q.max {
            assert!(!matches!(q.enqueue(900 + i, 0), Enqueue::Dropped));
            i += 1;
        }
    }

    #[test]
    fn eviction_honours_per_priority_minimums() {
        // max 20, top minimum 40 → level 0 keeps 1, level 9 keeps 10, level 39 keeps 40.
        let mut q = pbq(20, 40);
        assert_eq!(q.min_len(0), 1);
        assert_eq!(q.min_len(9), 10);
        assert!(q.min_len(0) < q.min_len(20), "lower priorities have smaller minimums");
        full_with_low(&mut q, 0, 5);
        assert_eq!(q.pbq_len, 20, "PBQs full (their own capacity, Q_orig aside)");
        // A high-priority arrival evicts the tail of the (only) lower queue, level 0.
        match q.enqueue(700, 30) {
            // The overflowing packet and 500..504 took 6 places, 900..913 the other 14.
            Enqueue::Evicted { victim } => assert_eq!(victim, 913, "the sacrifice queue's tail"),
            other => panic!("expected an eviction, got {other:?}"),
        }
        // An arrival with no lower non-empty queue is dropped.
        assert_eq!(q.enqueue(701, 0), Enqueue::Dropped);
        // High priority is served before the low queue.
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue()).collect();
        let pos = |id| order.iter().position(|&x| x == id).unwrap();
        assert!(pos(700) < pos(500), "level 30 before level 0");
    }

    #[test]
    fn arrival_dropped_when_victim_queue_at_its_minimum() {
        // Level 1 keeps 6. Fill the PBQs with level-1 packets only, then lower the count of
        // level 1 to its minimum by serving it (Q_orig is served first, then level 1).
        let mut q = pbq(10, 40 * 3);
        overload(&mut q, 1, 0);
        for i in 0..10 {
            q.enqueue(500 + i, 1);
        }
        assert_eq!(q.pbq_len, 10);
        assert!(q.queues[1].len() > q.min_len(1));
        match q.enqueue(98, 39) {
            Enqueue::Evicted { .. } => {}
            other => panic!("above its minimum level 1 gives a packet up, got {other:?}"),
        }
        while q.queues[1].len() > q.min_len(1) {
            q.enqueue(97, 39); // each evicts one more level-1 packet
        }
        assert_eq!(q.enqueue(99, 39), Enqueue::Dropped, "victim at its minimum: drop the arrival");
    }

    #[test]
    fn high_load_ends_when_drained() {
        let mut q = pbq(2, 0);
        overload(&mut q, 3, 0);
        while q.dequeue().is_some() {}
        assert!(matches!(q.enqueue(9, 3), Enqueue::Queued { was_empty: true }));
        assert!(!q.high_load());
    }

    #[test]
    fn nice_levels() {
        assert_eq!(level_of_nice(-20), 39);
        assert_eq!(level_of_nice(19), 0);
        assert_eq!(level_of_nice(0), 19);
    }
}
