//! `takeuchi-symbiose` (paper 003: Takeuchi et al., HiTactix/Symbiose, 1999): one OS per CPU,
//! functions split across the CPUs, buffers exchanged between them in bulk every 5 ms instead of
//! per-packet locking (§2-§3, Fig. 2).
//!
//! Baseline it changes: a UNIX whose kernel "can run in kernel mode on at most one CPU at a time"
//! (§4 C), modelled as one big kernel lock (`kernel/locking/spinlock.rs`, `kernel.concurrency =
//! "bkl"`). Hook: the kernel-concurrency model (`policies::Concurrency`, `needs_lock`), chosen by
//! `kernel.concurrency = "functional"`, plus per-CPU kernel threads (`threads.rs`).
//!
//! The model, `functional`: HiTactix/Symbiose on 2 CPUs (paper 003 §2, §3 and Fig. 2). The Ethernet
//! driver and ARP run on `driver_cpu`, IP on `ip_cpu`. A buffer handed from one stage to the
//! other goes into the handing CPU's local queue (no lock); every `exchange_period_us` each
//! CPU's bulk-send thread moves its whole local output queue into the global queue of the
//! destination CPU, and its polling thread moves its whole global input queue into its local
//! input queue, where the CPU's stage thread (a kernel thread below the two periodic ones)
//! processes it: one spin-locked splice per periodic thread per period, "2 per 5 ms"
//! per OS (notes 003 §6.4 read the paper's count per OS), and no inter-processor interrupt
//! (the receiver finds work by polling). The global queues are under one spin lock (paper
//! §2 3)); each splice costs `lock_acquire_ns` (+ `lock_line_transfer_ns` when the lock was last
//! held by the other CPU) + `symbiose_splice_ns`. Buffers come from a shared pool of
//! `pool_buffers`; a frame that finds the pool empty is dropped (`buffer_pool`).
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
//! - `queues`: the rules as plain data (the local and global queues, the exchanges, the pool).
//! - `threads`: the mechanism (`TakeuchiSymbiose`, one line of the registry): the kernel lock it
//!   gives the lock gate (`kernel/locking/gate.rs`: an exchange needs it), the kernel threads it
//!   adds to each CPU and their steps, the driver's receive, its counters.

pub mod options;
pub mod queues;
pub mod threads;

pub use queues::{Stage, Symbiose, SymbioseThread};
pub use threads::TakeuchiSymbiose;
