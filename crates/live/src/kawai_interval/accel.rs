//! The accelerator: paper 004's Chamomile (§2.1, Fig. 3) as a real HTTP/1.1 server on poll(2),
//! one process of three threads, run as `hostsim live-worker kawai-accel`.
//!
//! ```text
//!  listen:   for(;;){ fd = accept(); hand fd to I/O; }                       SCHED_OTHER
//!  I/O:      realtime_priority();                                            (Fig. 5)
//!            for(;;){ prepare_conn_list:  take new connections and fetched objects;
//!                                         conn_list = the connections with work
//!                     if (controlled) { ptime = now − prev;
//!                                       sleep (normalize_priority … realtime_priority) or yield;
//!                                       prev = now }
//!                     if (!empty(conn_list)) proc_conns: poll(conn_list, n, 0);
//!                                       read requests → hit: write the response
//!                                                     → miss: queue for retrieve
//!                                       writable: write the rest; EOF: close }
//!  retrieve: the same loop over the persistent origin connections: prepare sends queued misses
//!            on idle connections; proc_conns reads responses and hands them to I/O.
//! ```
//!
//! **Which connections a pass polls** is the reading of Fig. 5 that issue 27 settled for the
//! model (`crates/workload/src/accel.rs`, `ConnList::WithWork`, where this loop is written down
//! as the live accelerator's): `prepare_conn_list` gathers the connections *with work* (input or
//! a close to read, output pending, a notification) with `epoll_wait(epfd, ev, n, 0)` over every
//! connection registered level-triggered (EPOLLIN, plus EPOLLOUT while output is pending) and
//! turns its events into the `struct pollfd` array; after the interval control, `if
//! (!empty(&conn_list))` it calls `poll(list, n, 0)` and does the I/O on what poll() reports.
//! The list is prepared *before* the block, as Fig. 5 orders it: a connection that gets work
//! during the sleep is in the next pass's list. Without control (`none`, the paper's 0 ms) the
//! gathering blocks (`epoll_wait(…, -1)`, woken every 100 ms to notice a stop) and the other
//! threads' hand-offs write to the loop's eventfd; under control nobody needs waking.
//!
//! SCHED_FIFO (priority 50, `interval::FIFO_PRIORITY`) only around the I/O: the loop thread
//! raises itself at start and, before each sleep, returns to SCHED_OTHER and back after it, as
//! Fig. 5 does; `-nofifo` variants skip those calls. A failed `sched_setscheduler` (EPERM in a
//! cgroup without an RT budget) stops the server with that error rather than measuring
//! something else. The counters (`counters.rs`) are the model's names: passes (`loops`), sleeps,
//! yields, poll() calls and their time (CLOCK_MONOTONIC around the call: at SCHED_FIFO nothing
//! but interrupts and softirqs can run inside it).

use super::counters::{self, Loop, Proc};
use super::http;
use super::interval::{Block, Control, FIFO_PRIORITY};
use super::os::{self, marks, Epoll};
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Descriptors wanted: the clients' connections (thousands) and the origin's (the soft limit is
/// raised to the hard one; a client connection refused with EMFILE is retried by the listen thread).
const NOFILE_NEED: u64 = 16384;

/// How the accelerator runs (`hostsim live-worker kawai-accel`'s arguments).
#[derive(Clone, Debug)]
pub struct AccelArgs {
    pub port: u16,
    pub origin: Ipv4Addr,
    pub origin_port: u16,
    /// Persistent connections to the origin, opened at start.
    pub origin_conns: u32,
    pub control: Control,
    /// The server stops by itself after this long.
    pub secs: f64,
}

/// The largest request or response buffered per connection before it is refused.
const BUF_MAX: usize = http::OBJECT_BYTES_MAX as usize + 2 * http::HEAD_BYTES_MAX;
/// Bytes asked for per read() (the model's `read_bytes`).
const READ_BYTES: usize = 65536;
/// How long a blocking gathering waits before it looks at the stop flag.
const GATHER_BLOCK_MS: i32 = 100;

const IN: u32 = libc::EPOLLIN as u32;
const OUT: u32 = libc::EPOLLOUT as u32;

struct Fetch {
    client: RawFd,
    gen: u32,
    id: u64,
    bytes: u32,
}

struct Done {
    client: RawFd,
    gen: u32,
    response: Vec<u8>,
}

/// What the threads hand each other.
struct Shared {
    new_conns: Mutex<Vec<RawFd>>,
    fetches: Mutex<VecDeque<Fetch>>,
    done: Mutex<Vec<Done>>,
    efd_io: RawFd,
    efd_retrieve: RawFd,
    /// Without control the loops block in their gathering and must be woken.
    wake: bool,
    stop: AtomicBool,
}

/// Run the accelerator until SIGTERM or `secs`; print the counters' JSON on stdout.
pub fn run(a: &AccelArgs) -> std::io::Result<()> {
    marks::install(Some(counters::mark));
    os::raise_nofile(NOFILE_NEED)?;
    let lfd = os::listen(a.port, 4096)?;
    let origin = connect_all(a.origin, a.origin_port, a.origin_conns)?;
    let sh = Arc::new(Shared {
        new_conns: Mutex::new(Vec::new()),
        fetches: Mutex::new(VecDeque::new()),
        done: Mutex::new(Vec::new()),
        efd_io: os::eventfd()?,
        efd_retrieve: os::eventfd()?,
        wake: !a.control.controlled(),
        stop: AtomicBool::new(false),
    });
    let ctl = a.control;
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let spawn = |name: &'static str, f: Box<dyn FnOnce() -> std::io::Result<()> + Send>| {
        let errs = Arc::clone(&errors);
        let sh = Arc::clone(&sh);
        std::thread::Builder::new().name(name.into()).spawn(move || {
            if let Err(e) = f() {
                errs.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{name}: {e}"));
                sh.stop.store(true, Ordering::SeqCst);
            }
        })
    };
    let (s1, s2, s3) = (Arc::clone(&sh), Arc::clone(&sh), Arc::clone(&sh));
    let threads = vec![
        spawn("io", Box::new(move || io_thread(&s1, ctl)))?,
        spawn("retrieve", Box::new(move || retrieve_thread(&s2, ctl, origin)))?,
        spawn("listen", Box::new(move || listen_thread(&s3, lfd)))?,
    ];
    os::set_thread_name("accel-ready");
    let deadline = Instant::now() + Duration::from_secs_f64(a.secs);
    while !marks::stopped() && !sh.stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    sh.stop.store(true, Ordering::SeqCst);
    // SAFETY: wakes the listen thread's accept() with an error.
    unsafe { libc::shutdown(lfd, libc::SHUT_RDWR) };
    os::notify(sh.efd_io);
    os::notify(sh.efd_retrieve);
    for t in threads {
        let _ = t.join();
    }
    let errs = errors.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut j = counters::report();
    j["errors"] = errs.clone().into();
    println!("{j}");
    if let Some(e) = errs.first() {
        return Err(std::io::Error::other(e.clone()));
    }
    Ok(())
}

/// Open `n` connections to the origin and wait (≤ 10 s) until all are established.
fn connect_all(addr: Ipv4Addr, port: u16, n: u32) -> std::io::Result<Vec<RawFd>> {
    let fds: Vec<RawFd> = (0..n).map(|_| os::connect_nb(addr, port)).collect::<Result<_, _>>()?;
    let mut pending: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLOUT, revents: 0 }).collect();
    let end = Instant::now() + Duration::from_secs(10);
    while !pending.is_empty() {
        if Instant::now() > end {
            return Err(std::io::Error::other(format!(
                "{} of {n} origin connections not established within 10 s",
                pending.len()
            )));
        }
        os::poll(&mut pending, 100);
        for p in &pending {
            if p.revents != 0 && os::so_error(p.fd) != 0 {
                return Err(std::io::Error::other(format!(
                    "origin connection: {}",
                    std::io::Error::from_raw_os_error(os::so_error(p.fd))
                )));
            }
        }
        pending.retain(|p| p.revents == 0);
    }
    Ok(fds)
}

fn listen_thread(sh: &Shared, lfd: RawFd) -> std::io::Result<()> {
    while !sh.stop.load(Ordering::Relaxed) {
        match os::accept(lfd) {
            Ok(fd) => {
                os::set_nodelay(fd);
                sh.new_conns.lock().unwrap_or_else(|p| p.into_inner()).push(fd);
                counters::add_proc(Proc::Accepted, 1);
                if sh.wake {
                    os::notify(sh.efd_io);
                }
            }
            Err(_) if sh.stop.load(Ordering::Relaxed) => break,
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::EINTR | libc::ECONNABORTED | libc::EMFILE | libc::ENFILE)) =>
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The Fig. 5 steps both loop threads share: the interval control between `prepare_conn_list`
/// and the I/O, the poll() over the list, and the counters.
struct Pass {
    t: usize,
    ctl: Control,
    prev: u64,
    ep: Epoll,
    ready: Vec<(RawFd, u32)>,
    list: Vec<libc::pollfd>,
}

impl Pass {
    fn new(t: usize, ctl: Control) -> std::io::Result<Pass> {
        if ctl.fifo {
            os::set_fifo(Some(FIFO_PRIORITY))?; // realtime_priority()
        }
        Ok(Pass { t, ctl, prev: os::now_ns(), ep: Epoll::new(65536)?, ready: Vec::new(), list: Vec::new() })
    }

    fn sched(&self, prio: Option<i32>) -> std::io::Result<()> {
        let t0 = os::now_ns();
        os::set_fifo(prio)?;
        counters::add(self.t, Loop::SchedCalls, 1);
        counters::add(self.t, Loop::SchedNs, os::now_ns() - t0);
        Ok(())
    }

    /// The end of prepare_conn_list: the connections with work become the pollfd list.
    /// `want_out(fd)`: does the connection have output pending?
    fn gather(&mut self, want_out: impl Fn(RawFd) -> bool) {
        let t0 = os::now_ns();
        let timeout = if self.ctl.controlled() { 0 } else { GATHER_BLOCK_MS };
        self.ep.wait(timeout, &mut self.ready);
        counters::add(self.t, Loop::Gathers, 1);
        counters::add(self.t, Loop::GatherNs, os::now_ns() - t0);
        counters::add(self.t, Loop::Gathered, self.ready.len() as u64);
        self.list.clear();
        for &(fd, _) in &self.ready {
            let ev = libc::POLLIN | if want_out(fd) { libc::POLLOUT } else { 0 };
            self.list.push(libc::pollfd { fd, events: ev, revents: 0 });
        }
    }

    /// Fig. 5 between the list and the I/O: measure, sleep or yield, take `prev`.
    fn control(&mut self) -> std::io::Result<()> {
        counters::add(self.t, Loop::Passes, 1);
        if !self.ctl.controlled() {
            return Ok(());
        }
        let now = os::now_ns();
        match self.ctl.block(now, now - self.prev) {
            Block::Yield => {
                counters::add(self.t, Loop::Yields, 1);
                os::sched_yield();
            }
            b => {
                if self.ctl.fifo {
                    self.sched(None)?; // normalize_priority()
                }
                let t0 = os::now_ns();
                let req = match b {
                    Block::For { ns } => {
                        os::sleep_ns(ns);
                        ns
                    }
                    Block::Until { at_ns } => {
                        os::sleep_until_ns(at_ns);
                        at_ns.saturating_sub(t0)
                    }
                    Block::Yield => unreachable!(),
                };
                counters::add(self.t, Loop::Sleeps, 1);
                counters::add(self.t, Loop::SleepReqNs, req);
                counters::add(self.t, Loop::SleptNs, os::now_ns() - t0);
                if self.ctl.fifo {
                    self.sched(Some(FIFO_PRIORITY))?; // realtime_priority()
                }
            }
        }
        self.prev = os::now_ns();
        Ok(())
    }

    /// `if (!empty(&conn_list))`: poll(list, n, 0); the entries with revents.
    fn poll(&mut self) -> bool {
        if self.list.is_empty() {
            return false;
        }
        let t0 = os::now_ns();
        let n = os::poll(&mut self.list, 0);
        counters::add(self.t, Loop::Polls, 1);
        counters::add(self.t, Loop::PollNs, os::now_ns() - t0);
        counters::add(self.t, Loop::PollFds, self.list.len() as u64);
        counters::add(self.t, Loop::PollReady, n as u64);
        true
    }

    /// The entries this pass's poll() reported, in the list's order; the thread's own eventfd
    /// (`efd`, its wake-up from the other threads) is drained and left out.
    fn reported(&self, efd: RawFd) -> impl Iterator<Item = libc::pollfd> + '_ {
        self.list.iter().copied().filter(move |pf| {
            if pf.revents == 0 {
                return false;
            }
            if pf.fd == efd {
                os::drain_eventfd(efd);
                return false;
            }
            true
        })
    }
}

struct Client {
    gen: u32,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    out_off: usize,
    /// EPOLLOUT is registered (output is pending).
    want_out: bool,
}

fn io_thread(sh: &Shared, ctl: Control) -> std::io::Result<()> {
    let mut p = Pass::new(0, ctl)?;
    p.ep.add(sh.efd_io, IN)?;
    let mut conns: Vec<Option<Client>> = Vec::new();
    let mut gens: Vec<u32> = Vec::new();
    let mut buf = vec![0u8; READ_BYTES];
    let mut new = Vec::new();
    let mut done = Vec::new();
    while !sh.stop.load(Ordering::Relaxed) {
        // prepare_conn_list: the listen thread's connections, the retrieve thread's objects.
        std::mem::swap(&mut new, &mut *sh.new_conns.lock().unwrap_or_else(|e| e.into_inner()));
        for fd in new.drain(..) {
            let i = fd as usize;
            if conns.len() <= i {
                conns.resize_with(i + 1, || None);
                gens.resize(i + 1, 0);
            }
            gens[i] = gens[i].wrapping_add(1);
            conns[i] = Some(Client { gen: gens[i], inbuf: Vec::new(), out: Vec::new(), out_off: 0, want_out: false });
            p.ep.add(fd, IN)?;
        }
        std::mem::swap(&mut done, &mut *sh.done.lock().unwrap_or_else(|e| e.into_inner()));
        for d in done.drain(..) {
            if let Some(Some(c)) = conns.get_mut(d.client as usize) {
                if c.gen == d.gen {
                    c.out.extend_from_slice(&d.response);
                    if !c.want_out {
                        c.want_out = true;
                        p.ep.modify(d.client, IN | OUT)?;
                    }
                }
            }
        }
        p.gather(|fd| conns.get(fd as usize).and_then(|c| c.as_ref()).is_some_and(|c| c.want_out));
        p.control()?;
        if !p.poll() {
            continue;
        }
        for pf in p.reported(sh.efd_io) {
            serve_client(sh, &p.ep, &mut conns, pf, &mut buf)?;
        }
    }
    Ok(())
}

/// The I/O on one client connection poll() reported.
fn serve_client(
    sh: &Shared,
    ep: &Epoll,
    conns: &mut [Option<Client>],
    pf: libc::pollfd,
    buf: &mut [u8],
) -> std::io::Result<()> {
    let fd = pf.fd;
    let Some(c) = conns.get_mut(fd as usize).and_then(|c| c.as_mut()) else { return Ok(()) };
    let mut close = false;
    if pf.revents & libc::POLLOUT != 0 && c.out_off < c.out.len() {
        close |= flush(ep, fd, c)?;
    }
    if pf.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && !close {
        match os::read(fd, buf) {
            Ok(0) => close = true,
            Ok(n) => {
                c.inbuf.extend_from_slice(&buf[..n]);
                close |= requests(sh, ep, fd, c)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => close = true,
        }
    }
    if close {
        conns[fd as usize] = None;
        os::close(fd); // leaves the epoll set with it
        counters::add_proc(Proc::Closed, 1);
    }
    Ok(())
}

/// Serve every complete request in the connection's buffer; true = close it (not ours).
fn requests(sh: &Shared, ep: &Epoll, fd: RawFd, c: &mut Client) -> std::io::Result<bool> {
    let mut used = 0;
    loop {
        match http::parse_request(&c.inbuf[used..]) {
            Ok(None) => break,
            Ok(Some(r)) => {
                used += r.len;
                counters::add_proc(Proc::Requests, 1);
                if r.hit {
                    counters::add_proc(Proc::Hits, 1);
                    http::write_response_head(&mut c.out, r.id, r.bytes);
                    c.out.extend_from_slice(http::body(r.id, r.bytes));
                } else {
                    counters::add_proc(Proc::Misses, 1);
                    sh.fetches.lock().unwrap_or_else(|e| e.into_inner()).push_back(Fetch {
                        client: fd,
                        gen: c.gen,
                        id: r.id,
                        bytes: r.bytes,
                    });
                    if sh.wake {
                        os::notify(sh.efd_retrieve);
                    }
                }
            }
            Err(_) => {
                counters::add_proc(Proc::Bad, 1);
                return Ok(true);
            }
        }
    }
    c.inbuf.drain(..used);
    if c.inbuf.len() > BUF_MAX {
        counters::add_proc(Proc::Bad, 1);
        return Ok(true);
    }
    if c.out_off < c.out.len() {
        // A hit is written at once (the model's Responding); the rest waits for POLLOUT.
        if flush(ep, fd, c)? {
            return Ok(true);
        }
        if !c.want_out && c.out_off < c.out.len() {
            c.want_out = true;
            ep.modify(fd, IN | OUT)?;
        }
    }
    Ok(false)
}

/// Write what is pending; interest back to EPOLLIN once all is written. True = the peer is gone.
fn flush(ep: &Epoll, fd: RawFd, c: &mut Client) -> std::io::Result<bool> {
    while c.out_off < c.out.len() {
        match os::write(fd, &c.out[c.out_off..]) {
            Ok(n) => {
                c.out_off += n;
                counters::add_proc(Proc::BytesOut, n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(true),
        }
    }
    c.out.clear();
    c.out_off = 0;
    if c.want_out {
        c.want_out = false;
        ep.modify(fd, IN)?;
    }
    Ok(false)
}

struct Origin {
    fd: RawFd,
    fetch: Option<Fetch>,
    inbuf: Vec<u8>,
    head: Option<http::ResponseHead>,
}

fn retrieve_thread(sh: &Shared, ctl: Control, fds: Vec<RawFd>) -> std::io::Result<()> {
    let mut p = Pass::new(1, ctl)?;
    p.ep.add(sh.efd_retrieve, IN)?;
    let mut conns: Vec<Origin> = Vec::with_capacity(fds.len());
    let mut by_fd: Vec<usize> = Vec::new();
    for (i, &fd) in fds.iter().enumerate() {
        p.ep.add(fd, IN)?;
        if by_fd.len() <= fd as usize {
            by_fd.resize(fd as usize + 1, usize::MAX);
        }
        by_fd[fd as usize] = i;
        conns.push(Origin { fd, fetch: None, inbuf: Vec::new(), head: None });
    }
    let mut idle: Vec<usize> = (0..conns.len()).rev().collect();
    let mut buf = vec![0u8; READ_BYTES];
    let mut req = Vec::with_capacity(512);
    while !sh.stop.load(Ordering::Relaxed) {
        // prepare_conn_list: queued misses go out on idle connections first.
        {
            let mut q = sh.fetches.lock().unwrap_or_else(|e| e.into_inner());
            while !q.is_empty() {
                let Some(i) = idle.pop() else {
                    counters::add_proc(Proc::FetchWaits, q.len() as u64);
                    break;
                };
                let f = q.pop_front().expect("non-empty");
                req.clear();
                http::write_request(&mut req, f.id, f.bytes, false);
                // ~300 bytes into an idle connection's empty send buffer: written whole.
                if os::write(conns[i].fd, &req).map_or(true, |n| n != req.len()) {
                    return Err(std::io::Error::other("an origin connection refused a request"));
                }
                conns[i].fetch = Some(f);
            }
        }
        p.gather(|_| false);
        p.control()?;
        if !p.poll() {
            continue;
        }
        for pf in p.reported(sh.efd_retrieve) {
            let i = by_fd[pf.fd as usize];
            let o = &mut conns[i];
            match os::read(o.fd, &mut buf) {
                Ok(0) => return Err(std::io::Error::other("the origin closed a connection")),
                Ok(n) => o.inbuf.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {
                    continue
                }
                Err(e) => return Err(e),
            }
            if o.head.is_none() {
                o.head = http::parse_response_head(&o.inbuf).map_err(std::io::Error::other)?;
            }
            let Some(h) = o.head else { continue };
            let total = h.len + h.bytes as usize;
            if o.inbuf.len() < total {
                continue;
            }
            let f =
                o.fetch.take().ok_or_else(|| std::io::Error::other("a response from the origin nobody asked for"))?;
            if h.id != f.id || o.inbuf.len() != total {
                return Err(std::io::Error::other(format!(
                    "the origin answered id {} ({} bytes) for {}",
                    h.id,
                    o.inbuf.len(),
                    f.id
                )));
            }
            let response = std::mem::take(&mut o.inbuf);
            o.head = None;
            idle.push(i);
            counters::add_proc(Proc::Fetched, 1);
            sh.done.lock().unwrap_or_else(|e| e.into_inner()).push(Done { client: f.client, gen: f.gen, response });
            if sh.wake {
                os::notify(sh.efd_io);
            }
        }
    }
    Ok(())
}
