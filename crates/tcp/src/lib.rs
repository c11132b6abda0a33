//! # hostsim-tcp: TCP as pure state machines
//!
//! One TCP for every sender the simulator has: the host's in-host programs (hostsim-host's
//! `net/ipv4/tcp_output.rs` drives it with system-call costs, the device and timers) and, in
//! time, the external sources of hostsim-workload. Nothing here knows the host or the wire: every
//! call takes `now` and answers with what to send, so either side can run it.
//!
//! - [`TcpSnd`] (`sender.rs`): the sending side of one connection: send buffer, segmentation,
//!   windows, fast retransmit and NewReno recovery, Nagle, the retransmission timer (RFC 6298)
//!   and restart after idle, after Linux 2.4's sender.
//! - Congestion control (`cc/`): a policy per algorithm, as Linux's `tcp_congestion_ops`:
//!   [`CcKind::Reno`] (2.4's `tcp_cong_avoid`, 3.2's `tcp_reno_cong_avoid`) and
//!   [`CcKind::Cubic`] (3.2's CUBIC with HyStart), with the era's rules around them ([`Era`]).

pub mod cc;
mod sender;

pub use cc::{CcKind, Era};
pub use sender::{AckEffect, Segmentation, TcpSnd, TxSeg, RTO_INIT_NS, RTO_MAX_NS, RTO_MIN_NS};
