//! XDP redirect into a CPU map (`BPF_MAP_TYPE_CPUMAP`, Linux >= 4.15; this file follows Linux
//! 6.x kernel/bpf/cpumap.c): the program at the driver's entry point (`kernel.xdp = "cpumap"`)
//! redirects every frame to the map entry of `kernel.cpumap_cpu`, so that the driver's half of
//! the receive path stays in the NAPI poll of the receiving CPU and the rest (skb build, IP,
//! forwarding, transmit) runs in the entry's kernel thread on the other CPU.
//!
//! - `bq_enqueue` (on the polling CPU, per frame): the frame goes into that CPU's bulk queue of
//!   the entry (`CPU_MAP_BULK_SIZE` = 8 frames); a full bulk queue is first flushed
//!   (`bq_flush_to_queue`), with no wake-up.
//! - `bq_flush_to_queue`: the bulk queue into the entry's `ptr_ring` (`qsize` frames) under the
//!   ring's producer lock; a frame that finds the ring full is dropped (`xdp_return_frame`).
//! - `__cpu_map_flush` (from `xdp_do_flush`, which the driver calls at the end of its NAPI poll
//!   when it redirected something, e.g. drivers/net/veth.c `veth_poll`): every bulk queue of
//!   this CPU is flushed, then `wake_up_process(kthread)`. There is no per-frame IPI: the only
//!   cross-CPU signal is that wake-up, once per poll.
//! - `cpu_map_kthread_run` (the entry's kthread, bound to its CPU): while the ring has frames,
//!   take up to `CPUMAP_BATCH` = 8 (`__ptr_ring_consume_batched`), build an skb for each
//!   (`__xdp_build_skb_from_frame`) and pass them up (`netif_receive_skb_list`: IP, forwarding,
//!   the output device's transmit); when the ring is empty, sleep (`schedule()` in
//!   TASK_INTERRUPTIBLE) until the next flush wakes it.
//!
//! Costs: the polling CPU pays `driver_rx_frame_ns` + `xdp_run_ns` + `cpumap_enqueue_ns` per
//! frame (the redirect, `bq_enqueue`, and the flush's share of one frame); the kthread pays
//! `xdp_skb_build_ns` per frame (the skb build from the frame, which a passed frame pays in the
//! poll instead) plus the packet's protocol cost (`ip_forward_ns` and the
//! driver's transmit for a forwarded packet) and `remote_packet_ns` (the frame's lines were
//! written on the polling CPU). The kthread is a SCHED_FIFO task (`kernel.cpumap_rt_prio`; Linux
//! starts it SCHED_OTHER, `hostsim live takeuchi-symbiose` raises it) in the CPU's system state.
//!
//! This file holds the queues as plain data ([`Cpumap`]); the host glue (the redirect, the flush,
//! the kthread's steps) is `cpumap_kthread.rs`, the kthread's creation `kernel/task.rs`.

use crate::types::*;
use std::collections::VecDeque;

/// kernel/bpf/cpumap.c `CPU_MAP_BULK_SIZE` (6.x: `XDP_BATCH_SIZE`): frames per bulk queue.
pub const BULK_SIZE: usize = 8;
/// kernel/bpf/cpumap.c `CPUMAP_BATCH`: frames the kthread takes from the ring at a time.
pub const BATCH: usize = 8;

/// One CPU map entry (the one the program redirects to): its per-CPU bulk queues, its ring and
/// its kthread's current batch.
#[derive(Clone, Debug)]
pub struct Cpumap {
    qsize: usize,
    /// Per polling CPU: `xdp_bulk_queue`.
    bulk: Vec<Vec<PktId>>,
    /// `rcpu->queue` (`ptr_ring`).
    ring: VecDeque<PktId>,
    /// Frames the kthread took in its last `__ptr_ring_consume_batched`, not yet processed.
    batch: VecDeque<PktId>,
    /// The kthread (set when the host is built).
    pub kthread: Pid,
    /// Frames that reached the ring, and bulk flushes.
    pub enqueued: u64,
    pub flushes: u64,
}

impl Cpumap {
    /// The entry for a host of `ncpu` CPUs, its ring of `qsize` frames.
    pub fn new(ncpu: usize, qsize: u32) -> Cpumap {
        Cpumap {
            qsize: qsize.max(1) as usize,
            bulk: vec![Vec::with_capacity(BULK_SIZE); ncpu],
            ring: VecDeque::with_capacity(qsize as usize),
            batch: VecDeque::with_capacity(BATCH),
            kthread: NONE,
            enqueued: 0,
            flushes: 0,
        }
    }

    /// `bq_enqueue` on `from`: a full bulk queue is flushed first. Returns the frames that
    /// flush dropped (the ring was full).
    pub fn enqueue(&mut self, from: usize, pkt: PktId) -> Vec<PktId> {
        let dropped = if self.bulk[from].len() == BULK_SIZE { self.flush_bulk(from) } else { Vec::new() };
        self.bulk[from].push(pkt);
        dropped
    }

    /// `bq_flush_to_queue` of `from`'s bulk queue: into the ring while it has room; the rest
    /// dropped (returned).
    pub fn flush_bulk(&mut self, from: usize) -> Vec<PktId> {
        if self.bulk[from].is_empty() {
            return Vec::new();
        }
        self.flushes += 1;
        let mut dropped = Vec::new();
        for pkt in self.bulk[from].drain(..) {
            if self.ring.len() < self.qsize {
                self.ring.push_back(pkt);
                self.enqueued += 1;
            } else {
                dropped.push(pkt);
            }
        }
        dropped
    }

    /// Frames waiting in `from`'s bulk queue.
    pub fn bulk_len(&self, from: usize) -> usize {
        self.bulk[from].len()
    }

    #[cfg(test)]
    pub fn ring_len(&self) -> usize {
        self.ring.len()
    }

    /// The kthread's next frame: from its batch, or a new batch of up to [`BATCH`] from the
    /// ring; None when both are empty (it sleeps).
    pub fn next_frame(&mut self) -> Option<PktId> {
        if self.batch.is_empty() {
            let n = self.ring.len().min(BATCH);
            self.batch.extend(self.ring.drain(..n));
        }
        self.batch.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bulk_of_eight_reaches_the_ring_only_when_full_or_flushed() {
        let mut c = Cpumap::new(2, 2048);
        for p in 0..8 {
            assert!(c.enqueue(0, p).is_empty());
        }
        // Eight in the bulk queue, none in the ring: bq_enqueue flushes a full queue only
        // when the ninth frame comes.
        assert_eq!((c.bulk_len(0), c.ring_len()), (8, 0));
        assert!(c.enqueue(0, 8).is_empty());
        assert_eq!((c.bulk_len(0), c.ring_len(), c.flushes), (1, 8, 1));
        // The end of the poll flushes the rest.
        assert!(c.flush_bulk(0).is_empty());
        assert_eq!((c.bulk_len(0), c.ring_len(), c.flushes), (0, 9, 2));
        // An empty bulk queue is not a flush.
        assert!(c.flush_bulk(0).is_empty());
        assert_eq!(c.flushes, 2);
    }

    #[test]
    fn kthread_takes_batches_of_eight_in_order() {
        let mut c = Cpumap::new(2, 2048);
        for p in 0..20 {
            c.enqueue(0, p);
        }
        c.flush_bulk(0);
        assert_eq!(c.next_frame(), Some(0));
        // The first batch took 8 of the 20: 12 left in the ring.
        assert_eq!(c.ring_len(), 12);
        let rest: Vec<_> = std::iter::from_fn(|| c.next_frame()).collect();
        assert_eq!(rest, (1..20).collect::<Vec<_>>());
        assert_eq!(c.next_frame(), None);
    }

    #[test]
    fn a_full_ring_drops_what_does_not_fit() {
        let mut c = Cpumap::new(2, 10);
        for p in 0..16 {
            c.enqueue(0, p);
        }
        let dropped = c.flush_bulk(0);
        assert_eq!(c.ring_len(), 10);
        assert_eq!(dropped, (10..16).collect::<Vec<_>>());
        assert_eq!(c.enqueued, 10);
    }

    proptest! {
        /// Whatever the order of enqueues, flushes and kthread takes, every frame is taken in
        /// order, dropped, or still queued; none is lost or duplicated.
        #[test]
        fn frames_are_kept_in_order_or_dropped(ops in proptest::collection::vec(0u8..3, 1..300), qsize in 1u32..40) {
            let mut c = Cpumap::new(1, qsize);
            let (mut next, mut seen, mut dropped) = (0u32, Vec::new(), 0usize);
            for op in ops {
                match op {
                    0 => { dropped += c.enqueue(0, next).len(); next += 1; }
                    1 => { dropped += c.flush_bulk(0).len(); }
                    _ => { if let Some(p) = c.next_frame() { seen.push(p); } }
                }
            }
            let queued = c.bulk_len(0) + c.ring_len() + c.batch.len();
            prop_assert_eq!(seen.len() + dropped + queued, next as usize);
            prop_assert!(seen.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(c.ring_len() <= qsize as usize);
        }
    }
}
