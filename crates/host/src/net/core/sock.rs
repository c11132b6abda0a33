//! Socket state (Linux `net/core/sock.c`, `include/net/sock.h`). Pure data: this module does not
//! import the `Host` hub.
//!
//! - [`Sock`]: a socket bound to a port by a simple program (UDP, or a TCP stream receiver): its
//!   receive queue and buffer accounting, its readers, the per-flow TCP receive state, and the
//!   priority level that paper 000's port → priority table keeps (`kernel::task::sock_level`).
//! - The sockets of event-driven programs (`net/ipv4/endpoint.rs` is their protocol side,
//!   `fs/select.rs` poll(), `kernel/app.rs` the programs' system calls): connected sockets, poll
//!   sets, listening sockets, and the table that finds a socket from a segment's (source, flow).

use crate::net::ipv4::tcp_rcv_window::RcvWindow;
use crate::types::*;
use hostsim_engine::Time;
use hostsim_engine::Timer;
use std::collections::{BTreeMap, VecDeque};

/// Per-flow TCP receive state.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpFlowState {
    pub rcv_nxt: u64,
    pub unacked_segs: u32,
    /// The window last advertised (`rcv_wnd`) and `rcv_nxt` then (`rcv_wup`): what is still
    /// open of it is `rcv_wup + rcv_wnd - rcv_nxt` (`tcp_receive_window`).
    pub rcv_wnd: u32,
    pub rcv_wup: u64,
}

// Field order (`repr(C)`, 64-byte aligned): what every datagram's enqueue and read touch comes
// first, in two cache lines (the default layout used all three of a `Sock`'s lines), the TCP-only
// state after. Layout only: no behaviour depends on it.
#[repr(C, align(64))]
pub struct Sock {
    // -- line 0: the receive queue and its accounting
    pub queue: VecDeque<PktId>,
    pub rcvbuf: u32,
    pub used: u32,
    /// Bytes of the head segment already read (stream sockets).
    pub head_off: u32,
    pub hash: u32,
    pub port: u16,
    pub tcp: bool,
    /// Priority level (19 − nice) of the highest-priority process bound to the socket: the
    /// port → priority table of `ozaki-pbq`, filled at bind() and updated at nice().
    pub level: u8,
    pub len_changed: Time,
    // -- line 1: readers and statistics
    pub waiters: VecDeque<Pid>,
    pub len_area: u128,
    /// Packets dropped at this socket (receive buffer full).
    pub drops: u64,
    pub enqueued: u64,
    // -- TCP
    pub delack: Timer,
    /// The CPU that armed `delack` (its callback sends from there, `Host::xmit_cpu`).
    pub delack_cpu: u32,
    pub flows: BTreeMap<(u32, u32), TcpFlowState>,
    /// The advertised window's state (`kernel.tcp_receiver = "linux"`), None without it.
    pub rwin: Option<Box<RcvWindow>>,
    /// The Linux receiver's out-of-order queue: segments above a hole by (source, flow, seq).
    pub ooo: BTreeMap<(u32, u32, u64), PktId>,
    /// Sending connections of this socket by (source, flow) of their far end.
    pub conns: BTreeMap<(u32, u32), u32>,
    /// TCP prequeue (`kernel.tcp_prequeue`, `net/ipv4/tcp_prequeue.rs`): the reader blocked in
    /// recvmsg (`tp->ucopy.task`, NONE when none), the segments queued for it and their truesize
    /// (`tp->ucopy.prequeue`, `tp->ucopy.memory`).
    pub ucopy_task: u32,
    pub prequeue: VecDeque<PktId>,
    pub prequeue_mem: u32,
}

impl Sock {
    /// An empty socket bound to `port` with a receive buffer of `rcvbuf` bytes.
    pub fn new(port: u16, tcp: bool, rcvbuf: u32) -> Self {
        Sock {
            port,
            tcp,
            rcvbuf,
            used: 0,
            queue: VecDeque::new(),
            head_off: 0,
            waiters: VecDeque::new(),
            hash: 0,
            flows: BTreeMap::new(),
            rwin: None,
            ooo: BTreeMap::new(),
            level: 0,
            drops: 0,
            delack: Timer::new(),
            delack_cpu: 0,
            conns: BTreeMap::new(),
            ucopy_task: NONE,
            prequeue: VecDeque::new(),
            prequeue_mem: 0,
            enqueued: 0,
            len_area: 0,
            len_changed: Time::ZERO,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpKind {
    /// Accepted from a listening socket (a client's connection).
    Accepted,
    /// Opened by the program (to an origin server).
    Connected,
    /// The read end of a pipe.
    Pipe,
}

pub struct Endpoint {
    pub kind: EpKind,
    pub live: bool,
    /// The far end (`Host::srcs` index, flow) and the socket whose table holds the connection.
    pub src: u32,
    pub flow: u32,
    pub sock: u32,
    /// The sending TCP (`Host::conns`), NONE for pipes.
    pub conn: u32,
    /// Received segments not yet read, the bytes of the head one already read, their truesize.
    pub rx: VecDeque<PktId>,
    pub head_off: u32,
    pub rx_used: u32,
    pub rcv_nxt: u64,
    pub unacked: u32,
    pub delack: Timer,
    /// The CPU that armed `delack` (its callback sends from there, `Host::xmit_cpu`).
    pub delack_cpu: u32,
    /// The peer has closed (FIN received).
    pub eof: bool,
    /// Pipe: a byte is waiting.
    pub notified: bool,
    /// The poll set it is in (NONE: none), the events asked for, and whether it is on the set's
    /// ready list.
    pub set: u32,
    pub events: u8,
    pub in_ready: bool,
    /// Its owner (`Host::apps`) and descriptor there.
    pub app: u32,
    pub fd: u32,
    /// Ends of messages written with a label (stream offset of the last byte + 1, label).
    pub tx_marks: VecDeque<(u64, u64)>,
}

/// A poll set: the descriptors one thread polls.
pub struct PollSet {
    pub nfds: u32,
    /// Endpoints that may be ready (each at most once, `Endpoint::in_ready`).
    pub ready: Vec<u32>,
    /// A thread blocked in poll() on this set (NONE: none).
    pub waiter: u32,
}

pub struct Listener {
    pub sock: u32,
    pub backlog: u32,
    /// Established connections waiting for accept().
    pub queue: VecDeque<u32>,
    /// A thread blocked in accept() (NONE: none).
    pub waiter: u32,
    pub syns: u64,
    pub syn_drops: u64,
}

/// What a port of an event-driven program is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortUse {
    Listen(u32),
    /// Connections the program opened (their data and ACKs arrive here).
    Connect,
}

/// All sockets of event-driven programs.
#[derive(Default)]
pub struct Endpoints {
    pub eps: Vec<Endpoint>,
    free: Vec<u32>,
    map: BTreeMap<(u32, u32), u32>,
    pub sets: Vec<PollSet>,
    pub listeners: Vec<Listener>,
    pub ports: BTreeMap<u16, PortUse>,
    /// The endpoint of each sending connection (`Host::conns` index), NONE if none.
    pub conn_ep: Vec<u32>,
    /// Connections accepted and closed (whole run).
    pub accepted: u64,
    pub closed: u64,
}

impl Endpoints {
    pub fn has_flow(&self, src: u32, flow: u32) -> bool {
        self.map.contains_key(&(src, flow))
    }

    pub fn flow_ep(&self, src: u32, flow: u32) -> Option<u32> {
        self.map.get(&(src, flow)).copied()
    }

    pub fn forget_flow(&mut self, src: u32, flow: u32) {
        self.map.remove(&(src, flow));
    }

    /// A closed endpoint's slot, for reuse.
    pub fn release(&mut self, ep: u32) {
        self.free.push(ep);
    }

    pub fn live(&self) -> u64 {
        self.eps.iter().filter(|e| e.live && e.kind != EpKind::Pipe).count() as u64
    }

    pub fn new_set(&mut self) -> u32 {
        self.sets.push(PollSet { nfds: 0, ready: Vec::new(), waiter: NONE });
        (self.sets.len() - 1) as u32
    }

    pub fn alloc(&mut self, kind: EpKind, src: u32, flow: u32, sock: u32, conn: u32) -> u32 {
        let ep = Endpoint {
            kind,
            live: true,
            src,
            flow,
            sock,
            conn,
            rx: VecDeque::new(),
            head_off: 0,
            rx_used: 0,
            rcv_nxt: 0,
            unacked: 0,
            delack: Timer::new(),
            delack_cpu: 0,
            eof: false,
            notified: false,
            set: NONE,
            events: 0,
            in_ready: false,
            app: NONE,
            fd: NONE,
            tx_marks: VecDeque::new(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                // Keep the old timer's generation: a stale delayed-ACK event cannot fire.
                let mut t = self.eps[id as usize].delack;
                t.cancel();
                let mut rx = std::mem::take(&mut self.eps[id as usize].rx);
                rx.clear();
                self.eps[id as usize] = Endpoint { delack: t, rx, ..ep };
                id
            }
            None => {
                self.eps.push(ep);
                (self.eps.len() - 1) as u32
            }
        };
        if kind != EpKind::Pipe {
            self.map.insert((src, flow), id);
            if conn != NONE {
                if self.conn_ep.len() <= conn as usize {
                    self.conn_ep.resize(conn as usize + 1, NONE);
                }
                self.conn_ep[conn as usize] = id;
            }
        }
        id
    }
}
