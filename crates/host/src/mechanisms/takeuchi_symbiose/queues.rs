//! The functional split's rules as plain data (paper 003 §2-§3, Fig. 2; the model is described in
//! `mod.rs`): each CPU's local queues (no lock), the global queues between the OSes under one
//! spin lock, the bulk moves between them, and the shared buffer pool.

use crate::kernel::locking::spinlock::SpinLock;
use crate::types::{PktId, NONE};
use std::collections::VecDeque;

/// Which stage a buffer waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// IP input and the forwarding decision (or local delivery), on `ip_cpu`.
    Ip,
    /// ARP and the driver's transmit, on `driver_cpu`.
    Xmit,
}

/// The Symbiose kernel threads of each CPU: the two periodic threads of Fig. 2 and the OS's
/// own protocol work on the buffers its polling thread brought in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbioseThread {
    /// Periodic: moves the CPU's global input queue into its local input queue, and wakes the
    /// CPU's stage thread if that brought buffers.
    Poll,
    /// Periodic: moves the CPU's local output queue into the global queues of its destinations.
    Send,
    /// Runs each buffer of the local input queue through this CPU's stage, below the periodic
    /// threads (notes 003 §6.10: the exchange threads run above packet work), so that a long
    /// batch never holds up the next period's bulk send.
    Stages,
}

/// The functional split's queues and buffer pool (paper 003 §2-§3, Fig. 2).
#[derive(Clone, Debug)]
pub struct Symbiose {
    pub driver_cpu: usize,
    pub ip_cpu: usize,
    pub period_ns: u64,
    /// Per CPU: buffers handed on by this CPU, waiting for its bulk-send thread (no lock).
    local_out: Vec<VecDeque<(PktId, Stage)>>,
    /// Per CPU: buffers its polling thread took from the global queue, waiting to be processed.
    local_in: Vec<VecDeque<(PktId, Stage)>>,
    /// Per destination CPU: the global queues shared between the OSes (under `lock`).
    global: Vec<VecDeque<(PktId, Stage)>>,
    pub lock: SpinLock,
    pool_max: u32,
    pool_used: u32,
    /// Splices done by each CPU's threads (both kinds).
    pub exchanges: Vec<u64>,
    /// Per CPU: its stage thread (`SymbioseThread::Stages`), set when the host is built.
    pub stage_thread: Vec<u32>,
}

impl Symbiose {
    pub fn new(
        ncpu: usize,
        driver_cpu: usize,
        ip_cpu: usize,
        period_ns: u64,
        pool_buffers: u32,
        lock: SpinLock,
    ) -> Symbiose {
        let q = || (0..ncpu).map(|_| VecDeque::with_capacity(1024)).collect::<Vec<_>>();
        Symbiose {
            driver_cpu,
            ip_cpu,
            period_ns,
            local_out: q(),
            local_in: q(),
            global: q(),
            lock,
            pool_max: pool_buffers,
            pool_used: 0,
            exchanges: vec![0; ncpu],
            stage_thread: vec![NONE; ncpu],
        }
    }

    /// The CPU that runs `stage`.
    pub fn stage_cpu(&self, stage: Stage) -> usize {
        match stage {
            Stage::Ip => self.ip_cpu,
            Stage::Xmit => self.driver_cpu,
        }
    }

    /// Take a buffer from the shared pool; false if it is empty.
    pub fn pool_alloc(&mut self) -> bool {
        if self.pool_used >= self.pool_max {
            return false;
        }
        self.pool_used += 1;
        true
    }

    /// Return a buffer to the pool.
    pub fn pool_free(&mut self) {
        debug_assert!(self.pool_used > 0, "buffer pool underflow");
        self.pool_used -= 1;
    }

    pub fn pool_used(&self) -> u32 {
        self.pool_used
    }

    /// A stage on `cpu` hands a buffer on to `stage` (local queue: no lock, no IPI).
    pub fn hand_on(&mut self, cpu: usize, pkt: PktId, stage: Stage) {
        self.local_out[cpu].push_back((pkt, stage));
    }

    /// The bulk-send thread of `cpu`: its whole local output queue into the global queues, in
    /// one operation. Returns the number of buffers moved.
    pub fn bulk_send(&mut self, cpu: usize) -> usize {
        self.exchanges[cpu] += 1;
        let n = self.local_out[cpu].len();
        while let Some((pkt, stage)) = self.local_out[cpu].pop_front() {
            let dest = self.stage_cpu(stage);
            self.global[dest].push_back((pkt, stage));
        }
        n
    }

    /// The polling thread of `cpu`: its whole global input queue into its local input queue.
    pub fn poll(&mut self, cpu: usize) -> usize {
        self.exchanges[cpu] += 1;
        let n = self.global[cpu].len();
        let (g, l) = (&mut self.global[cpu], &mut self.local_in[cpu]);
        l.extend(g.drain(..));
        n
    }

    /// Buffers waiting in `cpu`'s local input queue for its stage thread.
    pub fn input_waiting(&self, cpu: usize) -> bool {
        !self.local_in[cpu].is_empty()
    }

    /// The next buffer the stage thread of `cpu` processes.
    pub fn next_in(&mut self, cpu: usize) -> Option<(PktId, Stage)> {
        self.local_in[cpu].pop_front()
    }

    /// Buffers anywhere in the queues.
    pub fn queued(&self) -> usize {
        let sum = |v: &Vec<VecDeque<(PktId, Stage)>>| v.iter().map(|q| q.len()).sum::<usize>();
        sum(&self.local_out) + sum(&self.local_in) + sum(&self.global)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exchange_moves_everything_in_one_operation() {
        let mut s = Symbiose::new(2, 1, 0, 5_000_000, 3, SpinLock::new(0, 0));
        assert!(s.pool_alloc() && s.pool_alloc() && s.pool_alloc());
        assert!(!s.pool_alloc());
        for p in 0..3 {
            s.hand_on(1, p, Stage::Ip);
        }
        assert_eq!(s.poll(0), 0);
        assert_eq!(s.bulk_send(1), 3);
        assert_eq!(s.poll(0), 3);
        assert_eq!(s.next_in(0), Some((0, Stage::Ip)));
        s.hand_on(0, 0, Stage::Xmit);
        assert_eq!(s.bulk_send(0), 1);
        assert_eq!(s.poll(1), 1);
        assert_eq!(s.next_in(1), Some((0, Stage::Xmit)));
        assert_eq!(s.queued(), 2);
        assert_eq!(s.exchanges, vec![3, 2]);
    }

    proptest! {
        /// Whatever the order of hand-ons and exchanges, buffers keep their order per path and
        /// none is lost: a splice moves a queue, never reorders or drops it.
        #[test]
        fn splices_keep_order_and_lose_nothing(ops in proptest::collection::vec(0u8..4, 1..200)) {
            let mut s = Symbiose::new(2, 1, 0, 1, u32::MAX, SpinLock::new(0, 0));
            let (mut next, mut seen) = (0u32, Vec::new());
            for op in ops {
                match op {
                    0 => { s.hand_on(1, next, Stage::Ip); next += 1; }
                    1 => { s.bulk_send(1); }
                    2 => { s.poll(0); }
                    _ => { while let Some((p, _)) = s.next_in(0) { seen.push(p); } }
                }
            }
            prop_assert_eq!(seen.len() + s.queued(), next as usize);
            prop_assert!(seen.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
