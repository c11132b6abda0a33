//! The papers' mechanisms that are a program's behaviour rather than the kernel's, one entry per
//! paper id (the kernel's are in hostsim-host's `mechanisms/`).
//!
//! - `kawai_interval`: paper 004's interval control of an event loop's poll(), with SCHED_FIFO
//!   only while the loop does I/O.

pub mod kawai_interval;
