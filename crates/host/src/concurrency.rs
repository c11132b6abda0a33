//! Kernel concurrency models: how one kernel runs on several CPUs (`kernel.concurrency`).
//!
//! Paper 003 (Takeuchi et al., HiTactix/Symbiose, 1999) compares a UNIX whose kernel "can run in
//! kernel mode on at most one CPU at a time" (§4 C) with HiTactix/Symbiose, one OS per CPU split
//! by function (§2) that exchanges buffers between CPUs in bulk every 5 ms (§3, Fig. 2). The four
//! models, one value of [`crate::config::ConcurrencyKind`] each:
//!
//! - `smp`: today's fine-grained SMP. No global lock; the locking cost is the profile's
//!   `smp_lock_factor` on the locking-sensitive costs (applied once, when the host is built).
//! - `up`: a uniprocessor kernel. Only CPU 0 is online (`HostConfig::online_cpus`); no locks.
//! - `bkl`: one big kernel lock, as Linux 2.0's SMP kernel (`include/asm-i386/irq.h`,
//!   `ENTER_KERNEL`/`LEAVE_KERNEL`: every interrupt entry spins with `lock btsl` on
//!   `kernel_flag` unless this CPU is already `active_kernel_processor`, in which case it only
//!   counts the nesting in `kernel_counter`; system calls take it in `entry.S`; the idle task runs
//!   "in task 0 user space", without it, `arch/i386/kernel/process.c` `cpu_idle`). Here: a CPU
//!   holds the lock while any frame of its stack is kernel context (hard IRQ, softirq, a system
//!   call or context switch at process level) and releases it when it returns to user mode or
//!   idles. A CPU whose next unit is kernel context while another CPU holds the lock spins (CPU
//!   state `spin`, interrupts that arrive meanwhile wait behind a spinning hard IRQ as they do
//!   behind `ENTER_KERNEL`'s `cli`). Waiters get the lock in the order they started spinning
//!   (2.0's test-and-set lock has no order; with two CPUs there is at most one waiter).
//!   Taking it costs `lock_acquire_ns`; when the previous holder was another CPU, also
//!   `lock_line_transfer_ns + bkl_data_transfer_ns` (the lock's line and the kernel data it
//!   guards move to the new holder's cache).
//! - `functional`: HiTactix/Symbiose on 2 CPUs (paper 003 §2, §3 and Fig. 2). The Ethernet
//!   driver and ARP run on `driver_cpu`, IP on `ip_cpu`. A buffer handed from one stage to the
//!   other goes into the handing CPU's local queue (no lock); every `exchange_period_us` each
//!   CPU's bulk-send thread moves its whole local output queue into the global queue of the
//!   destination CPU, and its polling thread moves its whole global input queue into its local
//!   input queue, where the CPU's stage thread (a kernel thread below the two periodic ones)
//!   processes it: one spin-locked splice per periodic thread per period, "2 per 5 ms"
//!   per OS (notes 003 §6.4 read the paper's count per OS), and no inter-processor interrupt
//!   (the receiver finds work by polling). The global queues are under one spin lock (paper
//!   §2 3)); each splice costs `lock_acquire_ns` (+ `lock_line_transfer_ns` when the lock was last
//!   held by the other CPU) + `symbiose_splice_ns`. Buffers come from a shared pool of
//!   `pool_buffers`; a frame that finds the pool empty is dropped (`buffer_pool`).
//!
//! What the paper leaves open and what we chose: which UNIX (a Linux 2.0-style BKL, the
//! strictest reading of "at most one CPU in kernel mode"); where the UNIX's interrupts go (a
//! routing choice of the scenario); who runs the stage work on the polled buffers (a per-CPU
//! stage thread below the periodic threads, woken by the polling thread, as notes 003 §6.10 put
//! the periodic threads above packet work. With the work in the polling thread itself, a long
//! batch held up the same CPU's bulk send of equal priority: from 55,000 pkt/s on the two CPUs'
//! stages ran by turns instead of in parallel, batches grew period after period and the pool
//! overflowed with the IP CPU 40% idle); the pool size (a parameter); the relative phase of the
//! threads (all wake at multiples of the period, the polling thread first). A periodic thread
//! still busy at its next period boundary runs again as soon as it finishes (one missed
//! activation is kept, not several).
//!
//! This file holds the rules (the lock, the queues, the pool) as plain data; the hub glue that
//! gates CPUs on the lock is `klock.rs`, the threads and stages `symbiose.rs`.

use crate::types::{PktId, NONE};
use std::collections::VecDeque;

/// What a CPU's next unit is, as far as locking is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// User code, or nothing (idle).
    User,
    /// Kernel context: hard IRQ, softirq, system call, context switch, kernel thread.
    Kernel,
    /// A Symbiose splice of a local and a global queue (kernel context holding the global lock).
    Exchange,
}

/// The result of trying to take a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// This CPU already holds it (nested entry: free).
    Held,
    /// Taken now; this costs `cost_ns` of the unit that needed it.
    Acquired { cost_ns: u64 },
    /// Another CPU holds it: spin.
    Busy,
}

/// A spin lock held by at most one CPU. Waiters are kept in the order they began spinning.
#[derive(Clone, Debug)]
pub struct SpinLock {
    owner: u32,
    last_owner: u32,
    waiters: VecDeque<u32>,
    acquire_ns: u64,
    transfer_ns: u64,
    /// Acquisitions (from not held; nested entries are not counted).
    pub acquisitions: u64,
    /// Acquisitions whose previous holder was another CPU.
    pub transfers: u64,
}

impl SpinLock {
    /// A free lock: taking it costs `acquire_ns`, plus `transfer_ns` when it comes from
    /// another CPU.
    pub fn new(acquire_ns: u64, transfer_ns: u64) -> SpinLock {
        SpinLock {
            owner: NONE,
            last_owner: NONE,
            waiters: VecDeque::with_capacity(8),
            acquire_ns,
            transfer_ns,
            acquisitions: 0,
            transfers: 0,
        }
    }

    pub fn owner(&self) -> Option<usize> {
        (self.owner != NONE).then_some(self.owner as usize)
    }

    pub fn try_acquire(&mut self, cpu: usize) -> Acquire {
        let c = cpu as u32;
        if self.owner == c {
            return Acquire::Held;
        }
        if self.owner != NONE {
            return Acquire::Busy;
        }
        self.owner = c;
        self.acquisitions += 1;
        let mut cost_ns = self.acquire_ns;
        if self.last_owner != NONE && self.last_owner != c {
            self.transfers += 1;
            cost_ns += self.transfer_ns;
        }
        self.last_owner = c;
        Acquire::Acquired { cost_ns }
    }

    /// `cpu` starts spinning (once: a CPU already waiting keeps its place).
    pub fn wait(&mut self, cpu: usize) {
        if !self.waiters.contains(&(cpu as u32)) {
            self.waiters.push_back(cpu as u32);
        }
    }

    /// `cpu` stops spinning (an interrupt took it away, or its unit went away).
    pub fn cancel_wait(&mut self, cpu: usize) {
        self.waiters.retain(|&w| w != cpu as u32);
    }

    /// `cpu` releases the lock; returns the first waiter, which should now take it.
    pub fn release(&mut self, cpu: usize) -> Option<usize> {
        debug_assert_eq!(self.owner, cpu as u32, "release by a CPU that does not hold the lock");
        self.owner = NONE;
        self.waiters.pop_front().map(|w| w as usize)
    }

    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }
}

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
    pub fn new(ncpu: usize, driver_cpu: usize, ip_cpu: usize, period_ns: u64, pool_buffers: u32, lock: SpinLock) -> Symbiose {
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
    fn lock_nesting_transfer_and_fifo_waiters() {
        let mut l = SpinLock::new(10, 100);
        assert_eq!(l.try_acquire(0), Acquire::Acquired { cost_ns: 10 });
        assert_eq!(l.try_acquire(0), Acquire::Held);
        assert_eq!(l.try_acquire(1), Acquire::Busy);
        l.wait(1);
        assert_eq!(l.try_acquire(2), Acquire::Busy);
        l.wait(2);
        l.wait(1);
        assert_eq!(l.waiting(), 2);
        assert_eq!(l.release(0), Some(1));
        assert_eq!(l.try_acquire(1), Acquire::Acquired { cost_ns: 110 });
        assert_eq!(l.release(1), Some(2));
        l.cancel_wait(2);
        assert_eq!(l.try_acquire(1), Acquire::Acquired { cost_ns: 10 });
        assert_eq!((l.acquisitions, l.transfers), (3, 1));
    }

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
