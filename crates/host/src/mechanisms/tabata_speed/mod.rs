//! `tabata-speed` (paper 002: Tabata, Nomura & Taniguchi, bandwidth control by regulating a
//! program's execution speed in the Tender OS).
//!
//! Baseline it changes: a runnable process runs whenever the scheduler picks it
//! (`kernel/sched/core.rs`). Regulated, a process gets n of T time slots per block, evenly spread.
//!
//! - `slots`: the slot arithmetic (which slots of a block are allocated). Pure.
//! - `regulate`: the scheduler side (hooks: admission when a task is woken or starts,
//!   `Mechanism::admit`; a slot timer per task, `Mechanism::poll`, that takes the process off the
//!   CPU at the end of its allocated slots and back at the next; the check that a regulated
//!   process never runs outside its slots, `Mechanism::account`).
//!
//! The mechanism (`TabataSpeed`, one line of the registry) is `regulate.rs`'s: per `[[process]]`
//! entry its `speed_pct`, per task its plan and timer.

pub mod options;
pub mod regulate;
pub mod slots;

pub use regulate::TabataSpeed;
