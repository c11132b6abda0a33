//! What crosses the wire between a source and the host: the frames a source emits ([`Emit`])
//! and the frames from the host that reach it ([`Feedback`]). Every kind of source speaks these
//! (`source.rs`, `http.rs`); the host carries them (hostsim-host's `wire/`).

/// A frame the source puts on its link now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emit {
    pub flow: u32,
    /// Datagram sequence number (udp) or first byte's sequence number (tcp).
    pub seq: u64,
    pub payload_bytes: u32,
    pub tcp: bool,
    /// A TCP acknowledgement: every byte below this has arrived.
    pub ack: Option<u64>,
    /// Receive window advertised with an ACK, bytes.
    pub win: u32,
    /// TCP flags beyond ACK (`http::FLAG_SYN`, `FLAG_FIN`, `FLAG_HANDSHAKE`).
    pub flags: u8,
    /// The application's label of the message this segment carries (an HTTP request's object:
    /// `http::request_tag`), 0 = none.
    pub tag: u64,
}

/// A frame from the host reaching the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feedback {
    /// A datagram reply echoing request `seq`.
    Reply { flow: u32, seq: u64 },
    /// A cumulative TCP acknowledgement: every byte below `ack` has arrived; `win`: the receive
    /// window it advertises, bytes (`u32::MAX`: the host models no receive window).
    Ack { flow: u32, ack: u64, win: u32 },
    /// A packet the host forwarded (IP routing): datagram `seq` of flow `flow` of its sender.
    Forwarded { flow: u32, seq: u64 },
    /// A TCP data segment of the host's sender: payload `len` bytes from `seq`, a frame of
    /// `frame_bytes` (Ethernet header to FCS).
    Data { flow: u32, seq: u64, len: u32, frame_bytes: u32, tag: u64 },
    /// The host's SYN-ACK to a connection request.
    SynAck { flow: u32 },
    /// The host closed the connection (its FIN).
    Fin { flow: u32 },
}

impl Feedback {
    /// The flow (connection) the frame belongs to.
    pub fn flow(&self) -> u32 {
        match *self {
            Feedback::Reply { flow, .. }
            | Feedback::Ack { flow, .. }
            | Feedback::Forwarded { flow, .. }
            | Feedback::Data { flow, .. }
            | Feedback::SynAck { flow }
            | Feedback::Fin { flow } => flow,
        }
    }
}
