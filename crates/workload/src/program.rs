//! In-host programs: system-call state machines.

use hostsim_engine::Rng;
use hostsim_options::options;
use serde::{Deserialize, Serialize};

/// Which program a process runs.
#[options]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgramKind {
    /// `for (;;) { recv(); work(); }` on a UDP socket (lmbench `bw`-style counter, flood server).
    UdpSink,
    /// `for (;;) { recv(); work(); send(reply to sender); }` (lmbench `lat_udp` server).
    UdpEcho,
    /// `for (;;) { recv(read_bytes); work(); }` on a TCP connection (iperf / `bw_tcp` receiver).
    TcpStream,
    /// `for (;;) { recv(); work(); send(reply); }` on a TCP connection (lmbench `lat_tcp` server).
    TcpEcho,
    /// Pure user-mode computation in bursts of `work_ns` (a CPU hog for scheduler experiments).
    Spin,
    /// `for (;;) { work(); nanosleep(sleep_ns); }` (a periodic task; exercises timer granularity).
    Periodic,
    /// `for (;;) { work(); sched_yield(); }` (exercises sched_yield's rules).
    Yielder,
    /// A multi-threaded event-driven web accelerator (paper 004's Chamomile): a listen thread,
    /// an I/O thread and a retrieve thread (`[[process.thread]]`), its poll() loops under an
    /// interval-control policy (`[process.accelerator]`). See `accel.rs`.
    Accelerator,
    /// `while (sent < total_bytes) sent += send(unit_bytes);` then exit: a bulk TCP sender on a
    /// connection to an external receiver (paper 002's sender, ttcp/netperf-like).
    StreamSend,
}

/// Distribution of the per-iteration user work.
#[options]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkDist {
    /// Exactly `work_ns` every time.
    #[default]
    Fixed,
    /// Exponentially distributed with mean `work_ns` (for M/M/1-style checks).
    Exp,
}

/// Parameters of a program (all have defaults; which ones matter depends on the kind).
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramConfig {
    pub kind: ProgramKind,
    /// User-mode work per received message (or per burst for `spin`), ns.
    pub work_ns: u64,
    pub work_dist: WorkDist,
    /// Bytes asked for per recv() on a stream socket.
    pub read_bytes: u32,
    /// Reply payload for `udp_echo`; 0 = same size as the request.
    pub reply_bytes: u32,
    /// `periodic`: nanosleep length after each burst.
    pub sleep_ns: u64,
    /// `stream_send`: bytes per send() call.
    pub unit_bytes: u32,
    /// `stream_send`: bytes to send in all; the program exits after the last send() returns.
    pub total_bytes: u64,
}

/// A system call or computation a program asks the host to perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run in user mode for `user_ns`.
    Compute { user_ns: u64 },
    /// Blocking receive of up to `max_bytes` (datagram sockets return one datagram).
    Recv { max_bytes: u32 },
    /// Send `bytes` of payload back to the sender of the last received message.
    Reply { bytes: u32 },
    /// Blocking send() of `bytes` on the process's connected stream socket: returns once all
    /// of it is in the socket's send buffer.
    Send { bytes: u32 },
    /// nanosleep(ns).
    Sleep { ns: u64 },
    /// sched_yield().
    Yield,
    /// nice(value) — sets the absolute nice value.
    SetNice { nice: i8 },
    /// The program ends; the process exits.
    Exit,
    /// gettimeofday(): the outcome carries the time.
    GetTime,
    /// sched_setscheduler() on itself: SCHED_FIFO at this priority, or SCHED_OTHER (None).
    SetScheduler { fifo: Option<u8> },
    /// poll() over the thread's descriptor set (kept by the host from the program's
    /// `poll_changes`); `timeout_ms` < 0 blocks until a descriptor is ready, 0 never blocks.
    /// The ready descriptors go into the program's poll buffer.
    Poll { timeout_ms: i32 },
    /// `prepare_conn_list` under `conn_list = "with_work"` (paper 004 Fig. 5): collect the
    /// connections of the thread's set that have work now (input, a close, output room for
    /// pending output, a notification), which the next `Poll` then covers; `timeout_ms` < 0
    /// blocks until there is one.
    Gather { timeout_ms: i32 },
    /// accept() on the process's listening socket: blocks while its queue is empty.
    Accept,
    /// Non-blocking read of up to `max_bytes` from descriptor `fd`.
    Read { fd: u32, max_bytes: u32 },
    /// Non-blocking write of up to `bytes` to descriptor `fd` (what fits in the send buffer);
    /// `tag` labels the message for the far end (what its header would say).
    Write { fd: u32, bytes: u32, tag: u64 },
    /// close(fd).
    Close { fd: u32 },
    /// Wake thread `thread` of the same process if it is blocked in poll(): a byte written to
    /// that thread's notification pipe (a descriptor in its poll set).
    Notify { thread: u8 },
}

/// poll() event bits (Linux values).
pub const POLLIN: u8 = 0x01;
pub const POLLOUT: u8 = 0x04;

/// What the previous action produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// First call after the process starts.
    Start,
    Computed,
    Received {
        bytes: u32,
    },
    Replied,
    Sent {
        bytes: u32,
    },
    Slept,
    Yielded,
    NiceSet,
    /// gettimeofday() returned this time (ns).
    Time {
        ns: u64,
    },
    SchedulerSet,
    /// poll() returned with this many ready descriptors (in the program's poll buffer).
    Polled {
        ready: u32,
    },
    /// `Gather` found this many connections with work (the list the next poll() covers).
    Gathered {
        n: u32,
    },
    /// accept() returned a new descriptor.
    Accepted {
        fd: u32,
    },
    /// read() returned `bytes`; `tag` = the label of a message that ended in them (0: none);
    /// `eof` = the peer has closed and everything was read.
    Read {
        bytes: u32,
        tag: u64,
        eof: bool,
    },
    /// write() took `bytes`.
    Wrote {
        bytes: u32,
    },
    Closed,
    Notified,
}

/// One ready descriptor of a poll() result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollEvent {
    pub fd: u32,
    pub revents: u8,
}

/// A running program.
#[derive(Clone, Debug)]
pub struct Program {
    cfg: ProgramConfig,
    last_rx_bytes: u32,
    sent_bytes: u64,
}

impl Program {
    pub fn new(cfg: ProgramConfig) -> Self {
        Program { cfg, last_rx_bytes: 0, sent_bytes: 0 }
    }
    pub fn config(&self) -> &ProgramConfig {
        &self.cfg
    }
    /// Does this program use a TCP socket?
    pub fn is_tcp(&self) -> bool {
        matches!(self.cfg.kind, ProgramKind::TcpStream | ProgramKind::TcpEcho | ProgramKind::StreamSend)
    }

    /// Payload bytes this program has sent with `Send`.
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }
    /// Does this program read from a socket?
    pub fn uses_socket(&self) -> bool {
        // (stream_send binds a socket too: its port receives the connection's ACKs.)
        !matches!(
            self.cfg.kind,
            ProgramKind::Spin | ProgramKind::Periodic | ProgramKind::Yielder | ProgramKind::Accelerator
        )
    }

    fn work(&self, rng: &mut Rng) -> u64 {
        match self.cfg.work_dist {
            WorkDist::Fixed => self.cfg.work_ns,
            WorkDist::Exp => rng.exp(self.cfg.work_ns as f64).round() as u64,
        }
    }

    fn recv(&self) -> Action {
        let max_bytes = match self.cfg.kind {
            ProgramKind::TcpStream | ProgramKind::TcpEcho => self.cfg.read_bytes,
            _ => u32::MAX,
        };
        Action::Recv { max_bytes }
    }

    /// The next action, given the outcome of the previous one.
    pub fn next(&mut self, outcome: Outcome, rng: &mut Rng) -> Action {
        use ProgramKind::*;
        match (self.cfg.kind, outcome) {
            (StreamSend, o) => {
                if let Outcome::Sent { bytes } = o {
                    self.sent_bytes += u64::from(bytes);
                }
                let left = self.cfg.total_bytes.saturating_sub(self.sent_bytes);
                if left == 0 {
                    Action::Exit
                } else {
                    Action::Send { bytes: left.min(u64::from(self.cfg.unit_bytes.max(1))) as u32 }
                }
            }
            (Spin, _) => Action::Compute { user_ns: self.work(rng).max(1) },
            (Periodic, Outcome::Computed) => Action::Sleep { ns: self.cfg.sleep_ns },
            (Yielder, Outcome::Computed) => Action::Yield,
            (Yielder, _) => Action::Compute { user_ns: self.work(rng).max(1) },
            (Periodic, _) => Action::Compute { user_ns: self.work(rng).max(1) },
            (_, Outcome::Received { bytes }) => {
                self.last_rx_bytes = bytes;
                let w = self.work(rng);
                if w > 0 {
                    Action::Compute { user_ns: w }
                } else {
                    self.after_work()
                }
            }
            (_, Outcome::Computed) => self.after_work(),
            _ => self.recv(),
        }
    }

    fn after_work(&self) -> Action {
        match self.cfg.kind {
            ProgramKind::UdpEcho | ProgramKind::TcpEcho => {
                let bytes = if self.cfg.reply_bytes == 0 { self.last_rx_bytes } else { self.cfg.reply_bytes };
                Action::Reply { bytes }
            }
            _ => self.recv(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostsim_engine::RngStreams;

    fn cfg(kind: ProgramKind, work_ns: u64) -> ProgramConfig {
        ProgramConfig {
            kind,
            work_ns,
            work_dist: WorkDist::Fixed,
            read_bytes: 65536,
            reply_bytes: 0,
            sleep_ns: 0,
            unit_bytes: 0,
            total_bytes: 0,
        }
    }

    #[test]
    fn echo_cycle() {
        let mut r = RngStreams::new(1).stream("p");
        let mut p = Program::new(cfg(ProgramKind::UdpEcho, 0));
        assert!(matches!(p.next(Outcome::Start, &mut r), Action::Recv { .. }));
        assert_eq!(p.next(Outcome::Received { bytes: 4 }, &mut r), Action::Reply { bytes: 4 });
        assert!(matches!(p.next(Outcome::Replied, &mut r), Action::Recv { .. }));
    }

    #[test]
    fn stream_send_sends_units_then_exits() {
        let mut r = RngStreams::new(1).stream("p");
        let mut c = cfg(ProgramKind::StreamSend, 0);
        c.unit_bytes = 1024;
        c.total_bytes = 2500;
        let mut p = Program::new(c);
        assert_eq!(p.next(Outcome::Start, &mut r), Action::Send { bytes: 1024 });
        assert_eq!(p.next(Outcome::Sent { bytes: 1024 }, &mut r), Action::Send { bytes: 1024 });
        assert_eq!(p.next(Outcome::Sent { bytes: 1024 }, &mut r), Action::Send { bytes: 452 });
        assert_eq!(p.next(Outcome::Sent { bytes: 452 }, &mut r), Action::Exit);
        assert_eq!(p.sent_bytes(), 2500);
    }

    #[test]
    fn sink_with_work() {
        let mut r = RngStreams::new(1).stream("p");
        let mut p = Program::new(cfg(ProgramKind::UdpSink, 500));
        p.next(Outcome::Start, &mut r);
        assert_eq!(p.next(Outcome::Received { bytes: 18 }, &mut r), Action::Compute { user_ns: 500 });
        assert!(matches!(p.next(Outcome::Computed, &mut r), Action::Recv { .. }));
    }
}
