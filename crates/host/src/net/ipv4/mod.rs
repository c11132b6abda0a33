//! IPv4 protocols (Linux `net/ipv4/`).
//!
//! - `input`: UDP and TCP input to sockets, delayed ACKs, recvmsg (`udp.c`, `tcp_input.c`).
//! - `tcp_conn`: a sending connection's place in the host (its writer, timer, pending segments)
//!   around the pure TCP sender of the `hostsim-tcp` crate.
//! - `tcp_output`: the sending TCP of in-host programs: send(), ACK input, retransmission timer.
//! - `endpoint`: the connections of event-driven servers (accept queues, connected sockets, pipes).
//! - `forward`: IP forwarding to a route's output device (`ip_forward.c`).
//! - `tcp_rcv_window`: the receiving TCP's advertised window and buffer autotuning (Linux 3.2).
//! - `tcp_prequeue`: segments for a reader blocked in recvmsg, processed in its context (Linux
//!   3.2 `tcp_prequeue`, `tcp_prequeue_process`; `kernel.tcp_prequeue`).

pub mod endpoint;
pub mod forward;
pub mod input;
pub mod tcp_conn;
pub mod tcp_output;
pub mod tcp_prequeue;
pub mod tcp_rcv_window;
