//! # hostsim-engine: the discrete-event kernel
//!
//! Everything hostsim simulates runs on this small kernel. It has no domain knowledge: it orders
//! events in time, hands out random numbers, and collects statistics.
//!
//! ```text
//!   model (host crate)                      engine
//!   ─────────────────                      ──────────────────────────────────────────
//!   schedule(at, Event) ───────────────▶   EventQueue<E>: 4-ary heap keyed (time, seq)
//!   loop { pop() → handle(event) } ◀────   pop(): earliest time, FIFO among equal times
//!   Timer::arm() → generation g            a stale (time, g) event is skipped on pop by
//!   Timer::cancel()                        the model comparing g with the live generation
//!   RngStreams::stream("nic0")             one root seed → independent named streams
//!   Histogram / TimeSeries / Counter       statistics with fixed memory
//! ```
//!
//! Public: [`Time`], [`EventQueue`] (and its [`Stall`]), [`Timer`], [`RngStreams`] / [`Rng`],
//! [`Histogram`], [`TimeSeries`], [`Counter`], and [`round_u64`] (exact fast rounding for hot
//! paths). Nothing else is exported.
//!
//! Guarantees:
//! - Events are delivered in non-decreasing time; events with equal time are delivered in the
//!   order they were scheduled (a global insertion sequence breaks ties). Same inputs → same order.
//! - The queue allocates only when it grows past its high-water mark: steady state allocates
//!   nothing per event.
//! - Random streams depend only on (root seed, stream name), so adding a component does not
//!   change the numbers another component draws.
//! - Time never runs backwards: scheduling before the clock panics (a model bug, with the seed),
//!   `Time` arithmetic saturates instead of wrapping, and a clock that stops advancing stops the
//!   run ([`Stall`]) instead of spinning.
//!
//! ```
//! use hostsim_engine::{EventQueue, Time};
//! let mut q = EventQueue::new();
//! q.schedule(Time::from_us(5), "b");
//! q.schedule(Time::from_us(1), "a");
//! q.schedule(Time::from_us(5), "c"); // same time as "b": delivered after it
//! let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
//! assert_eq!(order, ["a", "b", "c"]);
//! ```

mod num;
mod queue;
mod rng;
mod stats;
mod time;
mod timer;

pub use num::round_u64;
pub use queue::{EventQueue, Stall, STALL_EVENTS};
pub use rng::{Rng, RngStreams};
pub use stats::{Counter, Histogram, TimeSeries};
pub use time::Time;
pub use timer::Timer;
