//! A sending TCP connection's place in the host: the pure sender of the `hostsim-tcp` crate
//! ([`TcpSnd`]) plus what the host keeps around it: the far end, the writer blocked in send(),
//! the retransmission timer and the CPU that armed it, and the segments whose unit of work has
//! not completed yet.

use hostsim_engine::Timer;
use hostsim_tcp::{TcpSnd, TxSeg};
use std::collections::VecDeque;

/// One sending connection of the host: the TCP state plus what the host needs around it.
pub struct Conn {
    pub snd: TcpSnd,
    /// The far end: an external source (`Host::srcs` index) and its flow number.
    pub dst: u32,
    pub flow: u32,
    /// A process blocked in send() on this connection (NONE: none).
    pub writer: u32,
    /// Retransmission timer: armed only while data is outstanding.
    pub timer: Timer,
    /// The CPU that armed `timer` (its callback sends from there, `Host::xmit_cpu`).
    pub timer_cpu: u32,
    /// Segments marked sent by a unit of work that has not completed yet, in the order they
    /// were marked: each completing unit hands its count of them, oldest first, to the device,
    /// so the wire sees them in sequence whichever context (send(), ACK softirq) completes first.
    pub pending: VecDeque<TxSeg>,
    /// Payload bytes given to the device, retransmissions included.
    pub tx_bytes: u64,
}
