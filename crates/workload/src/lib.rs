//! # hostsim-workload: what runs against the host and inside it
//!
//! Two kinds of state machine, both free of any knowledge of the host's internals:
//!
//! - [`Source`]: an external traffic generator that only sees the wire. The host calls
//!   [`Source::wake`] at the times the source asks for and [`Source::feedback`] when a frame from the
//!   host (a reply, a TCP ACK) reaches it; the source answers with frames to emit ([`Emit`]) and the
//!   time it next wants to be woken. Kinds: constant rate, Poisson, ping-pong (RTT),
//!   window-limited TCP senders with many flows, a TCP receiver, and HTTP clients and origin
//!   servers on persistent connections (`http`).
//! - [`Program`]: an in-host program, a small state machine that issues system calls. The host
//!   executes each [`Action`] with its kernel semantics and costs, then reports the [`Outcome`].
//!   Kinds: UDP sink, UDP echo, TCP stream receiver, CPU spinner, and a multi-threaded web
//!   accelerator with interval-controlled poll() loops (`accel`; paper 004's interval control in
//!   `mechanisms/kawai_interval.rs`).
//!
//! Configuration structs derive `serde::Deserialize` but this crate reads no files.

pub mod accel;
mod frame;
pub mod http;
pub mod mechanisms;
mod program;
mod source;

pub use accel::{Accel, AccelConfig, AccelStats, ConnList, ThreadConfig, ThreadProgram};
pub use frame::{Emit, Feedback};
pub use http::{ContentMix, HttpClients, HttpConfig, HttpOrigin, HttpStats};
pub use mechanisms::kawai_interval::{IntervalControl, IntervalPolicy};
pub use program::{Action, Outcome, PollEvent, Program, ProgramConfig, ProgramKind, WorkDist, POLLIN, POLLOUT};
pub use source::{
    HttpState, SenderTcp, SinkStats, Source, SourceConfig, SourceKind, SourceStats, GAP_BINS, GAP_BIN_NS, SHORT_GAP_NS,
    SIZE_BINS,
};
