//! State of one transmit queue of a NIC: the device queue (qdisc, `tx_queue_len` frames) and the
//! TX descriptor ring; the wire they feed is the NIC's, shared by all its TX queues (the caller
//! passes its "next free" time). Pure data and arithmetic; the `impl Host` side (queue selection,
//! costs, interrupts, delivery to the far end) is `net/core/tx.rs`.
//!
//! A frame handed to the device (`dev_queue_xmit`) goes onto the ring if a descriptor is free,
//! else waits in the queue, else is dropped and counted. A frame on the ring is serialised on the
//! wire in FIFO order at the port's rate (preamble, SFD and inter-frame gap included, see
//! `nic::wire_bytes`); when its last bit has left, the NIC writes the descriptor back ("done"),
//! but the descriptor stays taken until the driver's TX clean-up frees it (in the TX interrupt
//! handler on the 2.4 path, in the NAPI poll otherwise). Clean-up refills the ring from the queue
//! (2.4: `netif_wake_queue` → `qdisc_run`).
//!
//! TX-done interrupts follow the Linux 2.4 tulip driver (`tulip_start_xmit`,
//! drivers/net/tulip/tulip_core.c): the descriptor that brings the ring's occupancy to
//! `irq_level` (tulip: `TX_RING_SIZE/2`) asks for an interrupt on completion, and the chip also
//! interrupts when it finds no more descriptors to send (`TxNoBuf`), i.e. when the ring drains.

use hostsim_engine::{Time, Timer};
use hostsim_workload::Feedback;
use std::collections::VecDeque;

/// A frame the host sends: to an external source (its far end) with what it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxFrame {
    /// The external source (`Host::srcs` index) the frame is for.
    pub dst: u32,
    pub payload: u32,
    pub tcp: bool,
    /// What the far end learns from it.
    pub fb: Feedback,
}

/// Where a frame handed to the device went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Xmit {
    /// On the ring: its serialisation ends at `done`; `irq` = it asks for a TX-done interrupt.
    Ring { done: Time, start: Time, irq: bool },
    /// Waiting in the device queue for a descriptor.
    Queued,
    /// Ring and queue full: dropped.
    Dropped,
}

/// One NIC's transmit side.
pub struct TxQueue {
    /// Completion time of each frame holding a descriptor, oldest first.
    ring: VecDeque<Time>,
    pub ring_max: u32,
    /// Frames waiting for a descriptor (the qdisc).
    pub queue: VecDeque<TxFrame>,
    pub queue_max: u32,
    /// Ring occupancy at which a descriptor asks for a TX-done interrupt.
    pub irq_level: u32,
    /// Re-armed at every frame put on the ring: fires when the ring drains (TxNoBuf).
    pub drain: Timer,
    /// A TX-done interrupt is raised and its clean-up has not run yet.
    pub irq_active: bool,
    /// A TX-done interrupt cause arrived while one was active: raise again after it.
    pub irq_pending: bool,
    /// Counters: frames handed to the device, put on the wire, dropped, cleaned.
    pub frames: u64,
    pub wire_frames: u64,
    pub wire_bytes: u64,
    pub drops: u64,
    pub cleaned: u64,
}

impl TxQueue {
    pub fn new(ring_max: u32, queue_max: u32, irq_level: Option<u32>) -> TxQueue {
        TxQueue {
            ring: VecDeque::with_capacity(ring_max.min(4096) as usize),
            ring_max,
            queue: VecDeque::new(),
            queue_max,
            irq_level: irq_level.unwrap_or((ring_max / 2).max(1)),
            drain: Timer::new(),
            irq_active: false,
            irq_pending: false,
            frames: 0,
            wire_frames: 0,
            wire_bytes: 0,
            drops: 0,
            cleaned: 0,
        }
    }

    /// Put a frame of `wire_ns` serialisation time on the ring (a descriptor must be free). The
    /// NIC's wire, next free at `*wire_free`, serialises the frames of all its TX queues in the
    /// order they are handed to it.
    fn put_on_ring(&mut self, now: Time, wire_ns: u64, bytes: u64, wire_free: &mut Time) -> Xmit {
        debug_assert!(self.ring.len() < self.ring_max as usize);
        let start = now.max(*wire_free);
        let done = start + Time(wire_ns);
        *wire_free = done;
        self.ring.push_back(done);
        self.wire_frames += 1;
        self.wire_bytes += bytes;
        let irq = self.ring.len() as u32 == self.irq_level;
        Xmit::Ring { done, start, irq }
    }

    /// `dev_queue_xmit`: ring if a descriptor is free and nothing waits before it, else queue,
    /// else drop.
    pub fn xmit(&mut self, now: Time, f: TxFrame, wire_ns: u64, bytes: u64, wire_free: &mut Time) -> Xmit {
        self.frames += 1;
        if self.queue.is_empty() && self.ring.len() < self.ring_max as usize {
            return self.put_on_ring(now, wire_ns, bytes, wire_free);
        }
        if self.queue.len() < self.queue_max as usize {
            self.queue.push_back(f);
            return Xmit::Queued;
        }
        self.drops += 1;
        Xmit::Dropped
    }

    /// Frames whose serialisation has ended by `now` (descriptors written back, not cleaned).
    pub fn done(&self, now: Time) -> u32 {
        self.ring.iter().take_while(|&&t| t <= now).count() as u32
    }

    /// Has any frame's serialisation ended by `now` (`done(now) > 0`, without counting)?
    #[inline]
    pub fn has_done(&self, now: Time) -> bool {
        self.ring.front().is_some_and(|&t| t <= now)
    }

    /// TX clean-up of up to `max` completed frames at `now`; returns how many were freed.
    pub fn clean(&mut self, now: Time, max: u32) -> u32 {
        let mut n = 0;
        while n < max && self.ring.front().is_some_and(|&t| t <= now) {
            self.ring.pop_front();
            n += 1;
        }
        self.cleaned += u64::from(n);
        n
    }

    /// Take the next queued frame if a descriptor is free (`qdisc_restart`); the caller puts it
    /// on the ring with [`TxQueue::ring_queued`].
    pub fn next_queued(&mut self) -> Option<TxFrame> {
        if self.ring.len() < self.ring_max as usize {
            self.queue.pop_front()
        } else {
            None
        }
    }

    /// A frame taken from the queue goes onto the ring.
    pub fn ring_queued(&mut self, now: Time, wire_ns: u64, bytes: u64, wire_free: &mut Time) -> Xmit {
        self.put_on_ring(now, wire_ns, bytes, wire_free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f() -> TxFrame {
        TxFrame { dst: 0, payload: 100, tcp: false, fb: Feedback::Reply { flow: 0, seq: 0 } }
    }

    #[test]
    fn fifo_wire_ring_then_queue_then_drop() {
        let mut q = TxQueue::new(2, 1, None);
        let mut wire = Time::ZERO;
        assert_eq!(q.irq_level, 1);
        let a = q.xmit(Time(0), f(), 100, 10, &mut wire);
        assert_eq!(a, Xmit::Ring { done: Time(100), start: Time(0), irq: true });
        let b = q.xmit(Time(10), f(), 100, 10, &mut wire);
        assert_eq!(b, Xmit::Ring { done: Time(200), start: Time(100), irq: false });
        assert_eq!(q.xmit(Time(20), f(), 100, 10, &mut wire), Xmit::Queued);
        assert_eq!(q.xmit(Time(30), f(), 100, 10, &mut wire), Xmit::Dropped);
        assert_eq!(q.done(Time(150)), 1);
        // Completion alone frees nothing: the clean-up does.
        assert!(q.next_queued().is_none());
        assert_eq!(q.clean(Time(150), u32::MAX), 1);
        assert!(q.next_queued().is_some());
        let c = q.ring_queued(Time(150), 100, 10, &mut wire);
        assert_eq!(c, Xmit::Ring { done: Time(300), start: Time(200), irq: false });
        assert_eq!((q.frames, q.wire_frames, q.drops), (4, 3, 1));
    }

    /// Two TX queues of one NIC share its wire: a frame on the second queue waits for the
    /// first queue's frame to leave.
    #[test]
    fn queues_share_the_wire() {
        let (mut a, mut b) = (TxQueue::new(4, 4, None), TxQueue::new(4, 4, None));
        let mut wire = Time::ZERO;
        let x = a.xmit(Time(0), f(), 100, 10, &mut wire);
        let y = b.xmit(Time(10), f(), 100, 10, &mut wire);
        assert_eq!(x, Xmit::Ring { done: Time(100), start: Time(0), irq: false });
        assert_eq!(y, Xmit::Ring { done: Time(200), start: Time(100), irq: false });
        assert_eq!((a.done(Time(150)), b.done(Time(150))), (1, 0));
    }
}
