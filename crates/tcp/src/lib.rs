//! # hostsim-tcp: TCP as pure state machines
//!
//! One TCP for every sender the simulator has: the host's in-host programs (hostsim-host's
//! `net/ipv4/tcp_output.rs` drives it with system-call costs, the device and timers) and, in
//! time, the external sources of hostsim-workload. Nothing here knows the host or the wire: every
//! call takes `now` and answers with what to send, so either side can run it.
//!
//! - [`TcpSnd`] (`sender.rs`): the sending side of one connection: send buffer, segmentation,
//!   windows (Reno's slow start, congestion avoidance, fast retransmit and recovery), Nagle,
//!   the retransmission timer (RFC 6298) and restart after idle, after Linux 2.4's sender.

mod sender;

pub use sender::{AckEffect, Segmentation, TcpSnd, TxSeg, RTO_INIT_NS, RTO_MAX_NS, RTO_MIN_NS};
