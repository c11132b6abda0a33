//! Kernel concurrency models: how one kernel runs on several CPUs (`kernel.concurrency`).
//!
//! Paper 003 (Takeuchi et al., HiTactix/Symbiose, 1999) compares a UNIX whose kernel "can run in
//! kernel mode on at most one CPU at a time" (§4 C) with HiTactix/Symbiose, one OS per CPU split
//! by function (§2) that exchanges buffers between CPUs in bulk every 5 ms (§3, Fig. 2). The four
//! models, one value of `kernel.concurrency` each:
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
//! - `functional`: HiTactix/Symbiose's functional split (paper 003's mechanism), in
//!   `mechanisms/takeuchi_symbiose`; it uses this file's [`SpinLock`] for its global queues.
//!
//! Which UNIX the paper compared against is open; we chose a Linux 2.0-style BKL, the strictest
//! reading of "at most one CPU in kernel mode". Where its interrupts go is a routing choice of the
//! scenario. The hub glue that gates CPUs on the lock is `kernel/locking/gate.rs`.
use crate::types::NONE;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
