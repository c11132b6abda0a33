//! `tabata-speed` (paper 002: Tabata, Nomura & Taniguchi, bandwidth control by regulating a
//! program's execution speed in the Tender OS).
//!
//! Baseline it changes: a runnable process runs whenever the scheduler picks it
//! (`kernel/sched/core.rs`). Regulated, a process gets n of T time slots per block, evenly spread.
//!
//! - `slots`: the slot arithmetic (which slots of a block are allocated). Pure.
//! - `regulate`: the scheduler side (hooks: admission in `wake_up` and `proc_start`, a slot timer
//!   that takes the process off the CPU at the end of its allocated slots and back at the next).

pub mod regulate;
pub mod slots;
