//! Per-CPU backlog queueing policies (`enqueue`/`dequeue`), chosen by `kernel.backlog`.
//!
//! The baseline is Linux's own FIFO. On the legacy path it carries Linux 2.4's throttle state
//! (`netif_rx` in net/core/dev.c of 2.4.18): once the queue exceeds `netdev_max_backlog` the CPU
//! is *throttled* and every arriving packet is dropped until the queue has drained completely
//! (Red Hat 2.4.18-14 also clears the throttle in `process_backlog`'s `job_done`, when the
//! softirq empties the queue: the same instant for the next enqueue).
//! On the NAPI path it is `enqueue_to_backlog` of 2.6.35+: drop only while over the limit.
//! Priority-aware policies (the `ozaki-pbq` mechanism, `mechanisms/ozaki_pbq/pbq.rs`) and Linux's RPS flow limit
//! (`mechanisms/flow_limit.rs`) implement the same trait beside it; a CPU holds a [`Backlog`]:
//! Linux's FIFO (static dispatch, the common case), or the policy a mechanism gave it when the
//! host was built (`Mechanism::backlog`, behind the trait: only runs that chose one pay the call).

use crate::types::PktId;
use std::collections::VecDeque;

/// Result of offering a packet to the backlog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueue {
    /// Queued; `was_empty` tells the caller to schedule the backlog's NAPI instance.
    Queued { was_empty: bool },
    /// The arriving packet is dropped.
    Dropped,
    /// The arrival is queued and `victim`, already queued, is dropped in its place (PBQ).
    Evicted { victim: PktId },
}

/// A backlog queueing policy. `prio` is the packet's priority where the policy needs one.
pub trait BacklogPolicy {
    fn enqueue(&mut self, pkt: PktId, prio: i32) -> Enqueue;
    fn dequeue(&mut self) -> Option<PktId>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Is the receive path in its high-load state (2.4 throttle)?
    fn high_load(&self) -> bool {
        false
    }
    /// Called on the policy of the CPU that *performs* an enqueue (Linux's `this_cpu` in
    /// `enqueue_to_backlog`; with RPS not the target), before `enqueue` on the target's policy,
    /// with the packet's flow hash and the target backlog's length: `true` drops the packet
    /// there (flow limit's `skb_flow_limit`, see `mechanisms/flow_limit.rs`). Linux's baseline never does.
    fn limit(&mut self, _hash: u32, _target_len: usize) -> bool {
        false
    }
    /// Does the policy need each packet's priority (a port → priority lookup by the caller)?
    fn needs_priority(&self) -> bool {
        false
    }
    /// Can `limit` refuse a packet? (If not, its arguments need not be computed.)
    fn may_limit(&self) -> bool {
        false
    }
    /// Extra ns of an enqueue, charged to the unit that enqueues (computed when it starts).
    fn enqueue_cost_ns(&self) -> u64 {
        0
    }
    /// Extra ns of a dequeue, charged to the unit that processes the packet.
    fn dequeue_cost_ns(&self) -> u64 {
        0
    }
    /// Extra ns of `limit` on this (enqueuing CPU's) policy for a target backlog of
    /// `target_len`, charged to the enqueuing unit.
    fn limit_cost_ns(&self, _target_len: usize) -> u64 {
        0
    }
}

/// A CPU's backlog: Linux's FIFO, or a mechanism's policy.
// `repr(u8)`: an explicit tag byte. By default the compiler hides the tag in a niche of a
// variant's fields (a `VecDeque`'s capacity, a `Box`'s pointer), and every `match` on the policy
// (each backlog enqueue) first decodes it, ~5 instructions more than a byte compare. Layout only.
#[repr(u8)]
pub enum Backlog {
    Fifo(Fifo),
    Mech(Box<dyn BacklogPolicy>),
}

impl Backlog {
    /// The policy (for the calls that are not on every packet's path).
    fn policy_mut(&mut self) -> &mut dyn BacklogPolicy {
        match self {
            Backlog::Fifo(f) => f,
            Backlog::Mech(b) => b.as_mut(),
        }
    }
    /// Inlined for Linux's FIFO (every legacy frame's `netif_rx`); a mechanism's out of line.
    #[inline]
    pub fn enqueue(&mut self, pkt: PktId, prio: i32) -> Enqueue {
        match self {
            Backlog::Fifo(f) => f.enqueue(pkt, prio),
            Backlog::Mech(b) => b.enqueue(pkt, prio),
        }
    }
    #[inline]
    pub fn dequeue(&mut self) -> Option<PktId> {
        match self {
            Backlog::Fifo(f) => f.dequeue(),
            Backlog::Mech(b) => b.dequeue(),
        }
    }
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Backlog::Fifo(f) => f.len(),
            Backlog::Mech(b) => b.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline]
    pub fn high_load(&self) -> bool {
        match self {
            Backlog::Fifo(f) => f.high_load(),
            Backlog::Mech(b) => b.high_load(),
        }
    }
    /// See [`BacklogPolicy::may_limit`] (a tag test for Linux's FIFO).
    #[inline]
    pub fn may_limit(&self) -> bool {
        matches!(self, Backlog::Mech(b) if b.may_limit())
    }
    /// The enqueuing CPU's check before `enqueue` on the target (see `BacklogPolicy::limit`).
    pub fn limit(&mut self, hash: u32, target_len: usize) -> bool {
        self.policy_mut().limit(hash, target_len)
    }
    #[inline]
    pub fn needs_priority(&self) -> bool {
        matches!(self, Backlog::Mech(b) if b.needs_priority())
    }
    #[inline]
    pub fn enqueue_cost_ns(&self) -> u64 {
        match self {
            Backlog::Fifo(_) => 0,
            Backlog::Mech(b) => b.enqueue_cost_ns(),
        }
    }
    #[inline]
    pub fn limit_cost_ns(&self, target_len: usize) -> u64 {
        match self {
            Backlog::Fifo(_) => 0,
            Backlog::Mech(b) => b.limit_cost_ns(target_len),
        }
    }
}

/// Linux's FIFO backlog.
#[derive(Clone, Debug)]
pub struct Fifo {
    q: VecDeque<PktId>,
    max: usize,
    throttle_enabled: bool,
    throttled: bool,
}

impl Fifo {
    pub fn new(max: usize, throttle_enabled: bool) -> Fifo {
        Fifo { q: VecDeque::with_capacity(max + 1), max, throttle_enabled, throttled: false }
    }
}

impl BacklogPolicy for Fifo {
    #[inline]
    fn enqueue(&mut self, pkt: PktId, _prio: i32) -> Enqueue {
        let len = self.q.len();
        if len <= self.max {
            if self.throttle_enabled && self.throttled {
                if len > 0 {
                    return Enqueue::Dropped;
                }
                // Fully drained: leave the throttle state (2.4: `queue->throttle = 0`).
                self.throttled = false;
            }
            self.q.push_back(pkt);
            return Enqueue::Queued { was_empty: len == 0 };
        }
        if self.throttle_enabled {
            self.throttled = true;
        }
        Enqueue::Dropped
    }
    fn dequeue(&mut self) -> Option<PktId> {
        self.q.pop_front()
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn high_load(&self) -> bool {
        self.throttled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_drops_until_drained() {
        let mut f = Fifo::new(3, true);
        for i in 0..4 {
            assert!(matches!(f.enqueue(i, 0), Enqueue::Queued { .. }));
        }
        assert_eq!(f.enqueue(9, 0), Enqueue::Dropped); // over the limit: throttled
        assert!(f.high_load());
        f.dequeue();
        assert_eq!(f.enqueue(10, 0), Enqueue::Dropped, "throttled until fully drained");
        while f.dequeue().is_some() {}
        assert_eq!(f.enqueue(11, 0), Enqueue::Queued { was_empty: true });
        assert!(!f.high_load());
    }

    #[test]
    fn without_throttle_only_over_limit_drops() {
        let mut f = Fifo::new(2, false);
        for i in 0..3 {
            f.enqueue(i, 0);
        }
        assert_eq!(f.enqueue(3, 0), Enqueue::Dropped);
        f.dequeue();
        assert!(matches!(f.enqueue(4, 0), Enqueue::Queued { .. }));
    }
}
