//! A web accelerator (reverse proxy) as three threads of one process, after paper 004's
//! Chamomile (§2.1, Fig. 3): a **listen** thread calling accept(), an **I/O** thread serving
//! the clients' requests from a poll() loop, and a **retrieve** thread fetching misses from the
//! origin servers from a poll() loop of its own. The two loops follow the interval-control
//! policy (`mechanisms/kawai_interval.rs`; paper Fig. 2 and Fig. 5).
//!
//! ```text
//!  listen:   for(;;){ fd = accept(); hand fd to I/O; }
//!  I/O:      loop (Fig. 5) { prepare_conn_list; [interval control]; poll(conns);
//!                            for each ready fd: read request → hit: write response
//!                                                            → miss: hand to retrieve
//!                                               writable: write the rest; EOF: close }
//!  retrieve: loop (Fig. 5) { prepare (send queued misses on idle origin connections);
//!                            [interval control]; poll(origin conns);
//!                            for each ready fd: read → complete: hand object to I/O }
//! ```
//!
//! The process's state lives here (its fd table, the queues between threads); the host runs
//! each thread as a task and executes the system calls it asks for, with their kernel costs.
//! The threads' own user-mode work is charged as computation:
//! - `loop_base_ns + user_per_fd_ns × fds` per pass of a loop: building the pollfd array from
//!   the connection list (`prepare_conn_list`) and scanning the returned `revents`;
//! - `request_ns` per request (parse, cache lookup, response header) in the I/O thread;
//! - `fetch_ns` per miss in the retrieve thread (request, response header, cache insert).
//!
//! What the paper leaves open and is chosen here (notes 004 §6): a thread blocked in poll()
//! (only without control) is woken by a byte on a notification pipe in its poll set when
//! another thread hands it work; the I/O thread writes fetched objects to the client when
//! poll() reports the socket writable; a connection's bytes are read `read_bytes` at a time.

use crate::http::{request_tag, tag_bytes, tag_hit};
use crate::mechanisms::kawai_interval::{IntervalControl, IntervalPolicy, LoopControl, Next};
use crate::program::{Action, Outcome, PollEvent, POLLIN, POLLOUT};
use hostsim_options::{float, int, len, options, CPU_ID, PORT};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `[process.accelerator]`: the accelerator's policy and user-mode costs.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccelConfig {
    /// The loops' interval control (`none` = the paper's "0 ms").
    #[option(default = IntervalControl::None)]
    pub interval_control: IntervalControl,
    /// `old`/`static`: the loop's cycle in ms (the paper's poll() interval: 10, 20, 30 ms).
    #[option(default = 0.0, bound = float(0.0, 60_000.0), why = "ms per interval-control cycle (paper 004: 10..=100); at most a minute")]
    pub min_cycle_ms: f64,
    /// `dynamic`: sleep = loop time × ratio (the paper's "k×" interval is ratio = k − 1).
    #[option(default = 1.0, bound = float(0.0, 1_000.0), why = "the paper's k-times interval is ratio = k - 1 (paper 004: up to 4); 1,000 is far past any")]
    pub ratio: f64,
    /// SCHED_FIFO priority of the loops during I/O (not in the paper; 1..=99).
    #[option(default = 50, bound = int(1, 99), why = "SCHED_FIFO priorities are 1..=99")]
    pub fifo_priority: u8,
    /// Whether the loops use SCHED_FIFO at all. Absent: the paper's rule (static and dynamic
    /// around the I/O, `none` and `old` never). `false`: never (the live `-nofifo` variants);
    /// `true` with `none`: the uncontrolled loop at SCHED_FIFO throughout (the live `none-fifo`).
    /// See `LoopControl::with_fifo`.
    #[option(default = None)]
    pub fifo: Option<bool>,
    /// The `[[traffic]]` of kind `http_origin` that answers misses.
    #[option(default = String::new())]
    pub origin: String,
    /// Persistent connections to the origins, opened at the start (inferred: Little's law on
    /// the miss rate × origin delay at the highest rate, with headroom).
    #[option(default = 64, bound = int(1, 65_535), why = "connections to the origins, one client port each")]
    pub origin_conns: u32,
    /// Local port of the origin connections (their ACKs and data arrive there).
    #[option(default = 3128, bound = int(1, 65_535), why = PORT)]
    pub origin_port: u16,
    /// Bytes of a request to an origin.
    #[option(default = 300, bound = int(1, 1_460), why = "bytes; a request is one TCP segment")]
    pub origin_request_bytes: u32,
    /// Bytes asked for per read() (64 KB: one read drains what an origin's 64 KB window can
    /// have queued).
    #[option(default = 65536, bound = int(1, 1 << 30), why = "bytes per read(), at most a receive buffer")]
    pub read_bytes: u32,
    /// User time per loop pass (estimate, see profiles/README.md and the scenario).
    #[option(default = 2000, bound = int(0, 1_000_000_000), why = "ns; user work costing more than 1 s per step is a hang, not a cost")]
    pub loop_base_ns: u64,
    /// User time per descriptor per loop pass (building the pollfd array, scanning revents).
    #[option(default = 200, bound = int(0, 1_000_000_000), why = "ns; user work costing more than 1 s per step is a hang, not a cost")]
    pub user_per_fd_ns: u64,
    /// User time per client request (I/O thread).
    #[option(default = 15_000, bound = int(0, 1_000_000_000), why = "ns; user work costing more than 1 s per step is a hang, not a cost")]
    pub request_ns: u64,
    /// User time per fetched miss (retrieve thread).
    #[option(default = 15_000, bound = int(0, 1_000_000_000), why = "ns; user work costing more than 1 s per step is a hang, not a cost")]
    pub fetch_ns: u64,
    /// Kernel time per client request beyond the system calls the model charges with their own
    /// costs (charged in the read() that completes the request). 0 by default; paper 004's
    /// scenarios calibrate it (`[[calibrate]]`, bounds from an independent measurement of that
    /// era's hardware serving HTTP).
    #[option(default = 0, bound = int(0, 1_000_000_000), why = "ns; user work costing more than 1 s per step is a hang, not a cost")]
    pub request_kernel_ns: u64,
    /// listen() backlog: completed connections waiting for accept().
    #[option(default = 1024, bound = int(1, 65_535), why = "connections; Linux's somaxconn is at most 65,535 (a u16 before 4.1)")]
    pub listen_backlog: u32,
    /// What `prepare_conn_list` puts in the list that poll() covers (see [`ConnList`]).
    #[option(default = ConnList::All)]
    pub conn_list: ConnList,
}

/// What the loop's `conn_list` holds (paper 004 Fig. 5: `prepare_conn_list(&conn_list)` at the
/// top of the pass, and after the interval control `if (!empty(&conn_list)) proc_conns(&conn_list)`,
/// the poll() and the I/O over that list).
///
/// The paper does not say what the list holds. Two readings:
/// - `with_work` (the scenarios'): the connections that have work when the pass begins — input
///   or a close to read, room for output still pending, a notification. Fig. 5 tests the list
///   for emptiness, and with ~7,000 persistent connections open a list of all of them would
///   never be empty. The list is prepared *before* the block, as Fig. 5 orders it, so a
///   connection that gets work while the thread sleeps is in the next pass's list. How
///   Chamomile learned which connections had work is not published (2.5.17 has no epoll); the
///   model charges one system call, poll()'s per-call cost and its per-descriptor cost for
///   each connection returned, and without control (`none`) the gathering blocks until there is
///   one. **The live accelerator's loop (`hostsim live kawai-interval`) is this reading**:
///   `prepare_conn_list` = `epoll_wait(epfd, ev, n, 0)` (`-1` without control) over every
///   connection registered level-triggered (EPOLLIN, plus EPOLLOUT while output is pending),
///   its events become the `struct pollfd` array, then the interval control, then `poll(list,
///   n, 0)` and the I/O on what it reports.
/// - `all`: every open connection of the thread (and its pipe) is polled each pass, so poll()
///   costs O(7,000) whatever the load (the model's earlier reading).
#[options]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnList {
    #[default]
    All,
    WithWork,
}

impl AccelConfig {
    pub fn policy(&self) -> IntervalPolicy {
        IntervalPolicy {
            kind: self.interval_control,
            min_cycle_ns: (self.min_cycle_ms.max(0.0) * 1e6).round() as u64,
            ratio: self.ratio.max(0.0),
        }
    }
}

/// What a thread of the accelerator runs.
#[options]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadProgram {
    /// accept() loop.
    Listen,
    /// The clients' poll() loop.
    Io,
    /// The origins' poll() loop.
    Retrieve,
}

/// `[[process.thread]]`: one thread of a multi-threaded program.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadConfig {
    /// The thread's name: its task is `<process>/<thread>`.
    pub name: String,
    /// What it runs (required: a thread without a program is an error).
    #[option(default = None)]
    pub program: Option<ThreadProgram>,
    /// Allowed CPUs (empty = the process's).
    #[option(default = Vec::new(), bound = len(128), why = "CPUs", each = int(0, 127), each_why = CPU_ID, gen = hostsim_options::Gen::Cpus)]
    pub cpus: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fd {
    Free,
    /// A client connection: bytes of responses still to write.
    Client {
        gen: u32,
        out: u32,
    },
    /// An origin connection and the fetch it carries (bytes still expected).
    Origin {
        fetch: Option<Fetch>,
        left: u32,
    },
    /// A thread's notification pipe.
    Pipe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fetch {
    client: u32,
    gen: u32,
    bytes: u32,
}

/// Where a thread is in its pass (a loop thread's interval-control steps are its
/// [`LoopControl`]'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Start,
    /// In an interval-control step: the outcome goes to the thread's `LoopControl`.
    Control,
    /// prepare_conn_list's computation done.
    Prepared,
    /// `with_work`: prepare_conn_list gathering the connections with work.
    Gathering,
    /// `with_work`: a queued request written to an origin before the gathering.
    PreWrite,
    /// Retrieve: a queued request written to an origin.
    FetchWritten,
    /// poll() returned: serve the ready descriptors.
    Polled,
    /// Serving descriptor `cursor`: waiting for a write.
    Writing,
    Reading,
    /// request_ns / fetch_ns done.
    Computed,
    /// A response write after a request.
    Responding,
    Closing,
    Notifying,
    // listen thread
    Accepting,
    HandingOff,
}

#[derive(Clone, Debug)]
struct Thread {
    role: ThreadProgram,
    step: Step,
    /// A loop thread's interval control.
    ctl: LoopControl,
    /// Descriptors in its poll set.
    nfds: u32,
    /// Its notification pipe (NONE until the host gives one).
    pipe: u32,
    /// Changes of its pollfd array since the last poll(): (fd, events; 0 = removed).
    changes: Vec<(u32, u8)>,
    /// The last poll()'s ready descriptors and the one being served.
    ready: Vec<PollEvent>,
    cursor: usize,
    /// The request just read (I/O thread), the object fetched (retrieve thread).
    pending_tag: u64,
    /// Retrieve: requests to write to origins before the control step.
    writes: VecDeque<(u32, u32, u64)>,
    /// Listen: the descriptor just accepted.
    accepted: u32,
    /// `with_work`: connections in this pass's list.
    list_len: u32,
}

const NONE: u32 = u32::MAX;

/// Counters of what the accelerator did.
#[derive(Clone, Debug, Default)]
pub struct AccelStats {
    pub accepted: u64,
    pub closed: u64,
    pub requests: u64,
    pub hits: u64,
    pub misses: u64,
    pub fetched: u64,
    /// Misses that found no idle origin connection at once (they wait in the queue).
    pub fetch_waits: u64,
    /// Per thread: loop passes, sleeps, yields.
    pub loops: Vec<u64>,
    pub sleeps: Vec<u64>,
    pub yields: Vec<u64>,
}

/// The accelerator's state machine.
#[derive(Clone, Debug)]
pub struct Accel {
    cfg: AccelConfig,
    policy: IntervalPolicy,
    threads: Vec<Thread>,
    io: usize,
    retrieve: usize,
    fds: Vec<Fd>,
    client_gen: Vec<u32>,
    new_conns: VecDeque<u32>,
    fetches: VecDeque<Fetch>,
    done: VecDeque<Fetch>,
    idle_origin: Vec<u32>,
    pub stats: AccelStats,
}

impl Accel {
    /// `roles[i]`: what thread i runs (validated: exactly one of each).
    pub fn new(cfg: AccelConfig, roles: &[ThreadProgram]) -> Accel {
        let find = |r| roles.iter().position(|&x| x == r).expect("validated: one thread of each program");
        let threads = roles
            .iter()
            .map(|&role| Thread {
                role,
                step: Step::Start,
                ctl: LoopControl::with_fifo(
                    cfg.policy(),
                    cfg.fifo_priority,
                    cfg.fifo.unwrap_or(cfg.policy().realtime()),
                ),
                nfds: 0,
                pipe: NONE,
                changes: Vec::new(),
                ready: Vec::new(),
                cursor: 0,
                pending_tag: 0,
                writes: VecDeque::new(),
                accepted: NONE,
                list_len: 0,
            })
            .collect::<Vec<_>>();
        let n = threads.len();
        Accel {
            policy: cfg.policy(),
            io: find(ThreadProgram::Io),
            retrieve: find(ThreadProgram::Retrieve),
            threads,
            fds: Vec::new(),
            client_gen: Vec::new(),
            new_conns: VecDeque::new(),
            fetches: VecDeque::new(),
            done: VecDeque::new(),
            idle_origin: Vec::new(),
            stats: AccelStats { loops: vec![0; n], sleeps: vec![0; n], yields: vec![0; n], ..Default::default() },
            cfg,
        }
    }

    pub fn config(&self) -> &AccelConfig {
        &self.cfg
    }

    pub fn role(&self, thread: usize) -> ThreadProgram {
        self.threads[thread].role
    }

    fn set_fd(&mut self, fd: u32, v: Fd) {
        let i = fd as usize;
        if self.fds.len() <= i {
            self.fds.resize(i + 1, Fd::Free);
            self.client_gen.resize(i + 1, 0);
        }
        self.fds[i] = v;
    }

    fn watch(&mut self, thread: usize, fd: u32, events: u8) {
        self.threads[thread].changes.push((fd, events));
    }

    /// The host gives thread `thread` its notification pipe (read end `fd`, in its poll set).
    pub fn add_pipe(&mut self, thread: usize, fd: u32) {
        self.set_fd(fd, Fd::Pipe);
        self.threads[thread].pipe = fd;
        self.threads[thread].nfds += 1;
        self.watch(thread, fd, POLLIN);
    }

    /// The host opened an origin connection on descriptor `fd`.
    pub fn add_origin(&mut self, fd: u32) {
        self.set_fd(fd, Fd::Origin { fetch: None, left: 0 });
        self.idle_origin.push(fd);
        let r = self.retrieve;
        self.threads[r].nfds += 1;
        self.watch(r, fd, POLLIN);
    }

    /// Pollfd changes since the thread's last poll() (the host applies them at the call).
    pub fn take_changes(&mut self, thread: usize) -> Vec<(u32, u8)> {
        std::mem::take(&mut self.threads[thread].changes)
    }

    /// Give back a drained change buffer (keeps its allocation).
    pub fn return_changes(&mut self, thread: usize, mut v: Vec<(u32, u8)>) {
        v.clear();
        if self.threads[thread].changes.is_empty() {
            self.threads[thread].changes = v;
        }
    }

    /// The buffer poll() writes its ready descriptors into.
    pub fn poll_buffer(&mut self, thread: usize) -> &mut Vec<PollEvent> {
        &mut self.threads[thread].ready
    }

    /// Descriptors in thread `thread`'s poll set.
    pub fn nfds(&self, thread: usize) -> u32 {
        self.threads[thread].nfds
    }

    /// Requests waiting for an origin connection; objects waiting for the I/O thread.
    pub fn queued(&self) -> (usize, usize) {
        (self.fetches.len(), self.done.len())
    }

    fn blocks_in_poll(&self) -> bool {
        self.policy.blocking_poll()
    }

    /// The next system call of thread `t`, given what the previous one returned.
    pub fn next(&mut self, t: usize, outcome: Outcome) -> Action {
        match self.threads[t].role {
            ThreadProgram::Listen => self.listen_next(t, outcome),
            _ => self.loop_next(t, outcome),
        }
    }

    // ------------------------------------------------------------ listen thread

    fn listen_next(&mut self, t: usize, outcome: Outcome) -> Action {
        if let Outcome::Accepted { fd } = outcome {
            self.stats.accepted += 1;
            let gen = self.client_gen.get(fd as usize).copied().unwrap_or(0).wrapping_add(1);
            self.set_fd(fd, Fd::Client { gen, out: 0 });
            self.client_gen[fd as usize] = gen;
            self.new_conns.push_back(fd);
            self.threads[t].accepted = fd;
            if self.blocks_in_poll() {
                self.threads[t].step = Step::HandingOff;
                return Action::Notify { thread: self.io as u8 };
            }
        }
        self.threads[t].step = Step::Accepting;
        Action::Accept
    }

    // ------------------------------------------------------------ loop threads

    fn loop_next(&mut self, t: usize, outcome: Outcome) -> Action {
        use Step::*;
        let step = self.threads[t].step;
        match (step, outcome) {
            (Start, _) => {
                let next = self.threads[t].ctl.start();
                self.follow(t, next)
            }
            (Control, o) => {
                let next = self.threads[t].ctl.step(o);
                self.follow(t, next)
            }
            (PreWrite, _) => self.write_then_gather(t),
            (Gathering, Outcome::Gathered { n }) => {
                self.threads[t].list_len = n;
                self.threads[t].step = Prepared;
                let user = self.cfg.loop_base_ns + self.cfg.user_per_fd_ns * u64::from(n);
                Action::Compute { user_ns: user.max(1) }
            }
            (Prepared, _) | (FetchWritten, _) => {
                if let Some((fd, bytes, tag)) = self.threads[t].writes.pop_front() {
                    self.threads[t].step = FetchWritten;
                    return Action::Write { fd, bytes, tag };
                }
                let next = self.threads[t].ctl.control();
                self.follow(t, next)
            }
            (Polled, Outcome::Polled { .. }) => {
                self.threads[t].cursor = 0;
                self.serve(t)
            }
            (Writing, Outcome::Wrote { bytes }) => {
                self.wrote(t, bytes);
                self.after_write(t)
            }
            (Responding, Outcome::Wrote { bytes }) => {
                self.wrote(t, bytes);
                self.next_event(t)
            }
            (Reading, Outcome::Read { bytes, tag, eof }) => self.read_done(t, bytes, tag, eof),
            (Computed, _) => self.computed(t),
            (Closing, _) | (Notifying, _) => self.next_event(t),
            (s, o) => unreachable!("accelerator thread {t} at {s:?} got {o:?}"),
        }
    }

    /// Top of the main loop: prepare_conn_list (take the other threads' hand-offs; user time).
    fn loop_top(&mut self, t: usize) -> Action {
        self.stats.loops[t] += 1;
        if t == self.io {
            while let Some(fd) = self.new_conns.pop_front() {
                if matches!(self.fds[fd as usize], Fd::Client { .. }) {
                    self.threads[t].nfds += 1;
                    self.watch(t, fd, POLLIN);
                }
            }
            while let Some(f) = self.done.pop_front() {
                if let Fd::Client { gen, out } = self.fds[f.client as usize] {
                    if gen == f.gen {
                        self.fds[f.client as usize] = Fd::Client { gen, out: out + f.bytes };
                        self.watch(t, f.client, POLLIN | POLLOUT);
                    }
                }
            }
        } else if t == self.retrieve {
            while !self.fetches.is_empty() && !self.idle_origin.is_empty() {
                let f = self.fetches.pop_front().expect("non-empty");
                let ofd = self.idle_origin.pop().expect("non-empty");
                self.fds[ofd as usize] = Fd::Origin { fetch: Some(f), left: f.bytes };
                self.threads[t].writes.push_back((ofd, self.cfg.origin_request_bytes, request_tag(false, f.bytes)));
            }
        }
        if self.cfg.conn_list == ConnList::WithWork {
            return self.write_then_gather(t);
        }
        self.threads[t].step = Step::Prepared;
        let user = self.cfg.loop_base_ns + self.cfg.user_per_fd_ns * u64::from(self.threads[t].nfds);
        Action::Compute { user_ns: user.max(1) }
    }

    /// `with_work`: the retrieve thread's queued requests go out first (a blocking gathering
    /// would otherwise wait for the answers to requests not yet sent), then the gathering.
    fn write_then_gather(&mut self, t: usize) -> Action {
        if let Some((fd, bytes, tag)) = self.threads[t].writes.pop_front() {
            self.threads[t].step = Step::PreWrite;
            return Action::Write { fd, bytes, tag };
        }
        self.threads[t].step = Step::Gathering;
        Action::Gather { timeout_ms: if self.blocks_in_poll() { -1 } else { 0 } }
    }

    /// Carry out what the interval control decided, counting its sleeps and yields.
    fn follow(&mut self, t: usize, next: Next) -> Action {
        let ctl = &self.threads[t].ctl;
        (self.stats.sleeps[t], self.stats.yields[t]) = (ctl.sleeps, ctl.yields);
        match next {
            Next::Call(a) => {
                self.threads[t].step = Step::Control;
                a
            }
            Next::Top => self.loop_top(t),
            // `with_work`: the gathering blocked until the list had work; poll() covers it.
            Next::BlockingPoll if self.cfg.conn_list == ConnList::WithWork => self.proc_conns(t),
            Next::BlockingPoll => self.poll(t, -1),
            Next::ProcConns => self.proc_conns(t),
        }
    }

    /// `if (!empty(&conn_list)) proc_conns(&conn_list);` (poll and I/O), else the next pass.
    fn proc_conns(&mut self, t: usize) -> Action {
        let list =
            if self.cfg.conn_list == ConnList::WithWork { self.threads[t].list_len } else { self.threads[t].nfds };
        if list == 0 {
            return self.end_pass(t);
        }
        self.poll(t, 0)
    }

    fn poll(&mut self, t: usize, timeout_ms: i32) -> Action {
        self.threads[t].step = Step::Polled;
        self.threads[t].ready.clear();
        Action::Poll { timeout_ms }
    }

    /// After the I/O: the interval control's end of pass, then the next pass.
    fn end_pass(&mut self, t: usize) -> Action {
        let next = self.threads[t].ctl.end_pass();
        self.follow(t, next)
    }

    fn next_event(&mut self, t: usize) -> Action {
        self.threads[t].cursor += 1;
        self.serve(t)
    }

    /// Serve ready descriptor number `cursor`, or end the pass.
    fn serve(&mut self, t: usize) -> Action {
        loop {
            let th = &self.threads[t];
            let Some(&ev) = th.ready.get(th.cursor) else { return self.end_pass(t) };
            let fd = ev.fd;
            match self.fds.get(fd as usize).copied().unwrap_or(Fd::Free) {
                Fd::Pipe if ev.revents & POLLIN != 0 => {
                    self.threads[t].step = Step::Reading;
                    return Action::Read { fd, max_bytes: 64 };
                }
                Fd::Client { out, .. } if ev.revents & POLLOUT != 0 && out > 0 => {
                    self.threads[t].step = Step::Writing;
                    return Action::Write { fd, bytes: out, tag: 0 };
                }
                Fd::Client { .. } | Fd::Origin { .. } if ev.revents & POLLIN != 0 => {
                    self.threads[t].step = Step::Reading;
                    return Action::Read { fd, max_bytes: self.cfg.read_bytes };
                }
                _ => self.threads[t].cursor += 1,
            }
        }
    }

    fn current_fd(&self, t: usize) -> u32 {
        let th = &self.threads[t];
        th.ready[th.cursor].fd
    }

    /// A client write took `bytes`: the rest stays pending with POLLOUT interest.
    fn wrote(&mut self, t: usize, bytes: u32) {
        let fd = self.current_fd(t);
        if let Fd::Client { gen, out } = self.fds[fd as usize] {
            let left = out.saturating_sub(bytes);
            self.fds[fd as usize] = Fd::Client { gen, out: left };
            let want = if left > 0 { POLLIN | POLLOUT } else { POLLIN };
            self.watch(t, fd, want);
        }
    }

    /// After a POLLOUT write: read too if the descriptor is also readable.
    fn after_write(&mut self, t: usize) -> Action {
        let th = &self.threads[t];
        let ev = th.ready[th.cursor];
        if ev.revents & POLLIN != 0 {
            self.threads[t].step = Step::Reading;
            return Action::Read { fd: ev.fd, max_bytes: self.cfg.read_bytes };
        }
        self.next_event(t)
    }

    fn read_done(&mut self, t: usize, bytes: u32, tag: u64, eof: bool) -> Action {
        let fd = self.current_fd(t);
        match self.fds[fd as usize] {
            Fd::Pipe => self.next_event(t),
            Fd::Client { .. } => {
                if tag != 0 {
                    self.stats.requests += 1;
                    self.threads[t].pending_tag = tag;
                    self.threads[t].step = Step::Computed;
                    return Action::Compute { user_ns: self.cfg.request_ns.max(1) };
                }
                if eof && bytes == 0 {
                    // The client closed: close our end, drop it from the poll set.
                    self.stats.closed += 1;
                    self.fds[fd as usize] = Fd::Free;
                    self.threads[t].nfds -= 1;
                    self.watch(t, fd, 0);
                    self.threads[t].step = Step::Closing;
                    return Action::Close { fd };
                }
                self.next_event(t)
            }
            Fd::Origin { fetch, left } => {
                let left = left.saturating_sub(bytes);
                self.fds[fd as usize] = Fd::Origin { fetch, left };
                if fetch.is_some() && left == 0 {
                    self.threads[t].step = Step::Computed;
                    return Action::Compute { user_ns: self.cfg.fetch_ns.max(1) };
                }
                self.next_event(t)
            }
            Fd::Free => self.next_event(t),
        }
    }

    /// The user work on a request (I/O) or a fetched object (retrieve) is done.
    fn computed(&mut self, t: usize) -> Action {
        let fd = self.current_fd(t);
        match self.fds[fd as usize] {
            Fd::Client { gen, out } => {
                let tag = self.threads[t].pending_tag;
                let bytes = tag_bytes(tag);
                if tag_hit(tag) {
                    self.stats.hits += 1;
                    self.fds[fd as usize] = Fd::Client { gen, out: out + bytes };
                    self.threads[t].step = Step::Responding;
                    return Action::Write { fd, bytes: out + bytes, tag: 0 };
                }
                self.stats.misses += 1;
                if self.idle_origin.is_empty() {
                    self.stats.fetch_waits += 1;
                }
                self.fetches.push_back(Fetch { client: fd, gen, bytes });
                if self.blocks_in_poll() {
                    self.threads[t].step = Step::Notifying;
                    return Action::Notify { thread: self.retrieve as u8 };
                }
                self.next_event(t)
            }
            Fd::Origin { fetch: Some(f), .. } => {
                self.stats.fetched += 1;
                self.fds[fd as usize] = Fd::Origin { fetch: None, left: 0 };
                self.idle_origin.push(fd);
                self.done.push_back(f);
                if self.blocks_in_poll() {
                    self.threads[t].step = Step::Notifying;
                    return Action::Notify { thread: self.io as u8 };
                }
                self.next_event(t)
            }
            _ => self.next_event(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request_tag;

    fn accel(kind: IntervalControl, cycle_ms: f64, ratio: f64) -> Accel {
        let cfg = AccelConfig { interval_control: kind, min_cycle_ms: cycle_ms, ratio, ..Default::default() };
        let mut a = Accel::new(cfg, &[ThreadProgram::Listen, ThreadProgram::Io, ThreadProgram::Retrieve]);
        a.add_pipe(1, 3);
        a.add_pipe(2, 4);
        a.add_origin(5);
        a
    }

    #[test]
    fn static_loop_follows_fig5() {
        let mut a = accel(IntervalControl::Static, 20.0, 0.0);
        let io = 1;
        // The listen thread accepts fd 7 first: no pipe under control.
        assert_eq!(a.next(0, Outcome::Start), Action::Accept);
        assert_eq!(a.next(0, Outcome::Accepted { fd: 7 }), Action::Accept);
        assert_eq!(a.next(io, Outcome::Start), Action::SetScheduler { fifo: Some(50) });
        assert_eq!(a.next(io, Outcome::SchedulerSet), Action::GetTime);
        assert!(matches!(a.next(io, Outcome::Time { ns: 1_000_000 }), Action::Compute { .. }));
        assert_eq!(a.next(io, Outcome::Computed), Action::GetTime);
        // 3 ms after prev: sleep the 17 ms left, at SCHED_OTHER.
        assert_eq!(a.next(io, Outcome::Time { ns: 4_000_000 }), Action::SetScheduler { fifo: None });
        assert_eq!(a.next(io, Outcome::SchedulerSet), Action::Sleep { ns: 17_000_000 });
        assert_eq!(a.next(io, Outcome::Slept), Action::SetScheduler { fifo: Some(50) });
        assert_eq!(a.next(io, Outcome::SchedulerSet), Action::GetTime);
        assert_eq!(a.next(io, Outcome::Time { ns: 30_000_000 }), Action::Poll { timeout_ms: 0 });
        // prepare_conn_list put fd 7 in the set (pipe 3 first).
        assert_eq!(a.take_changes(io), vec![(3, POLLIN), (7, POLLIN)]);
        assert_eq!(a.nfds(io), 2);
        // A request on fd 7: read, parse, write the hit.
        a.poll_buffer(io).push(PollEvent { fd: 7, revents: POLLIN });
        assert_eq!(a.next(io, Outcome::Polled { ready: 1 }), Action::Read { fd: 7, max_bytes: 65536 });
        assert!(matches!(
            a.next(io, Outcome::Read { bytes: 300, tag: request_tag(true, 5000), eof: false }),
            Action::Compute { .. }
        ));
        assert_eq!(a.next(io, Outcome::Computed), Action::Write { fd: 7, bytes: 5000, tag: 0 });
        // Partial write: the rest waits for POLLOUT; the pass ends with the next prepare.
        assert!(matches!(a.next(io, Outcome::Wrote { bytes: 3000 }), Action::Compute { .. }));
        assert_eq!(a.take_changes(io).last(), Some(&(7, POLLIN | POLLOUT)));
        // 25 ms loop: no sleep, sched_yield.
        assert_eq!(a.next(io, Outcome::Computed), Action::GetTime);
        assert_eq!(a.next(io, Outcome::Time { ns: 55_000_000 }), Action::Yield);
        assert_eq!(a.stats.requests, 1);
    }

    #[test]
    fn with_work_gathers_before_the_block_and_skips_poll_on_an_empty_list() {
        // Fig. 5 order: prepare_conn_list (the gathering) at the top of the pass, then the
        // interval control, then `if (!empty(&conn_list))` poll() over that list.
        let cfg = AccelConfig {
            interval_control: IntervalControl::Static,
            min_cycle_ms: 20.0,
            conn_list: ConnList::WithWork,
            ..Default::default()
        };
        let mut a = Accel::new(cfg, &[ThreadProgram::Listen, ThreadProgram::Io, ThreadProgram::Retrieve]);
        a.add_pipe(1, 3);
        let io = 1;
        a.next(io, Outcome::Start);
        a.next(io, Outcome::SchedulerSet);
        assert_eq!(a.next(io, Outcome::Time { ns: 0 }), Action::Gather { timeout_ms: 0 });
        assert_eq!(
            a.next(io, Outcome::Gathered { n: 0 }),
            Action::Compute { user_ns: 2000 },
            "loop_base only: an empty list"
        );
        a.next(io, Outcome::Computed);
        assert_eq!(a.next(io, Outcome::Time { ns: 3_000_000 }), Action::SetScheduler { fifo: None });
        a.next(io, Outcome::SchedulerSet);
        a.next(io, Outcome::Slept);
        a.next(io, Outcome::SchedulerSet);
        // Empty list: no poll(); the next pass gathers again.
        assert_eq!(a.next(io, Outcome::Time { ns: 20_000_000 }), Action::Gather { timeout_ms: 0 });
        assert_eq!(a.next(io, Outcome::Gathered { n: 2 }), Action::Compute { user_ns: 2000 + 2 * 200 });
        a.next(io, Outcome::Computed);
        a.next(io, Outcome::Time { ns: 21_000_000 });
        a.next(io, Outcome::SchedulerSet);
        a.next(io, Outcome::Slept);
        a.next(io, Outcome::SchedulerSet);
        assert_eq!(a.next(io, Outcome::Time { ns: 40_000_000 }), Action::Poll { timeout_ms: 0 });
        // Without control the gathering blocks; poll() then never does.
        let cfg = AccelConfig { conn_list: ConnList::WithWork, ..Default::default() };
        let mut n = Accel::new(cfg, &[ThreadProgram::Listen, ThreadProgram::Io, ThreadProgram::Retrieve]);
        n.add_pipe(1, 3);
        n.next(1, Outcome::Start);
        assert_eq!(n.next(1, Outcome::Time { ns: 0 }), Action::Gather { timeout_ms: -1 });
        n.next(1, Outcome::Gathered { n: 1 });
        assert_eq!(n.next(1, Outcome::Computed), Action::Poll { timeout_ms: 0 });
    }

    #[test]
    fn dynamic_sleeps_ratio_times_the_loop_and_old_yields_after_io() {
        let mut a = accel(IntervalControl::Dynamic, 0.0, 2.0);
        a.next(1, Outcome::Start);
        a.next(1, Outcome::SchedulerSet);
        a.next(1, Outcome::Time { ns: 0 });
        a.next(1, Outcome::Computed);
        assert_eq!(a.next(1, Outcome::Time { ns: 3_000_000 }), Action::SetScheduler { fifo: None });
        assert_eq!(a.next(1, Outcome::SchedulerSet), Action::Sleep { ns: 6_000_000 });

        let mut o = accel(IntervalControl::Old, 20.0, 0.0);
        assert_eq!(o.next(1, Outcome::Start), Action::GetTime, "old control stays SCHED_OTHER");
        o.next(1, Outcome::Time { ns: 0 });
        o.next(1, Outcome::Computed);
        // 25 ms: no sleep; prev = now; poll; after the I/O a sched_yield.
        assert_eq!(o.next(1, Outcome::Time { ns: 25_000_000 }), Action::Poll { timeout_ms: 0 });
        assert_eq!(o.next(1, Outcome::Polled { ready: 0 }), Action::Yield);
        assert!(matches!(o.next(1, Outcome::Yielded), Action::Compute { .. }));
    }

    #[test]
    fn misses_go_through_the_retrieve_thread_and_back() {
        let mut a = accel(IntervalControl::None, 0.0, 0.0);
        a.next(0, Outcome::Start);
        assert_eq!(a.next(0, Outcome::Accepted { fd: 9 }), Action::Notify { thread: 1 }, "wake the blocked I/O thread");
        // I/O: prepare takes fd 9, blocking poll.
        a.next(1, Outcome::Start);
        a.next(1, Outcome::Time { ns: 0 });
        assert_eq!(a.next(1, Outcome::Computed), Action::Poll { timeout_ms: -1 });
        a.poll_buffer(1).push(PollEvent { fd: 9, revents: POLLIN });
        a.next(1, Outcome::Polled { ready: 1 });
        a.next(1, Outcome::Read { bytes: 300, tag: request_tag(false, 4000), eof: false });
        assert_eq!(a.next(1, Outcome::Computed), Action::Notify { thread: 2 }, "a miss wakes retrieve");
        // Retrieve: prepare sends the request on the idle origin connection 5.
        a.next(2, Outcome::Start);
        a.next(2, Outcome::Time { ns: 0 });
        assert_eq!(a.next(2, Outcome::Computed), Action::Write { fd: 5, bytes: 300, tag: request_tag(false, 4000) });
        assert_eq!(a.next(2, Outcome::Wrote { bytes: 300 }), Action::Poll { timeout_ms: -1 });
        a.poll_buffer(2).push(PollEvent { fd: 5, revents: POLLIN });
        a.next(2, Outcome::Polled { ready: 1 });
        assert!(matches!(a.next(2, Outcome::Read { bytes: 4000, tag: 0, eof: false }), Action::Compute { .. }));
        assert_eq!(a.next(2, Outcome::Computed), Action::Notify { thread: 1 });
        // I/O's next pass: the object is queued for fd 9 with POLLOUT interest.
        a.next(1, Outcome::Notified);
        assert_eq!(a.take_changes(1).last(), Some(&(9, POLLIN | POLLOUT)));
        assert_eq!(a.stats.fetched, 1);
    }
}
