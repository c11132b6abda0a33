//! # hostsim-workload: what runs against the host and inside it
//!
//! Two kinds of state machine, both free of any knowledge of the host's internals:
//!
//! - [`Source`]: an external traffic generator that only sees the wire. The host calls
//!   [`Source::wake`] at the times the source asks for and [`Source::feedback`] when a frame from the
//!   host (a reply, a TCP ACK) reaches it; the source answers with frames to emit ([`Emit`]) and the
//!   time it next wants to be woken. Kinds: constant rate, Poisson, ping-pong (RTT) and
//!   window-limited TCP senders with many flows.
//! - [`Program`]: an in-host program, a small state machine that issues system calls. The host
//!   executes each [`Action`] with its kernel semantics and costs, then reports the [`Outcome`].
//!   Kinds: UDP sink, UDP echo, TCP stream receiver, CPU spinner.
//!
//! Configuration structs derive `serde::Deserialize` but this crate reads no files.

mod program;
mod source;

pub use program::{Action, Outcome, Program, ProgramConfig, ProgramKind, WorkDist};
pub use source::{
    Emit, Feedback, SinkStats, Source, SourceConfig, SourceKind, SourceStats, GAP_BINS, GAP_BIN_NS, SHORT_GAP_NS,
    SIZE_BINS,
};
