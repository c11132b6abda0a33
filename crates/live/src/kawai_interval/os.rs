//! The system calls the accelerator, the origin and the clients are made of: epoll, poll,
//! clocks, sleeps, scheduling policy, non-blocking sockets. Thin and checked; no framework, so
//! that each pass of the Fig. 5 loop is exactly the calls it shows.

use std::io;
use std::os::fd::RawFd;

fn cvt(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

/// CLOCK_MONOTONIC in ns (vDSO: no system call), the loop's `gettimeofday()`.
pub use crate::sys::monotonic_ns as now_ns;

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long }
}

/// nanosleep() for `ns` (returns early on a signal; the loop goes on either way).
pub fn sleep_ns(ns: u64) {
    let t = timespec(ns);
    // SAFETY: valid pointers.
    unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
}

/// Sleep until CLOCK_MONOTONIC reaches `at_ns`.
pub fn sleep_until_ns(at_ns: u64) {
    let t = timespec(at_ns);
    // SAFETY: valid pointers.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &t, std::ptr::null_mut()) };
}

pub fn sched_yield() {
    // SAFETY: no arguments.
    unsafe { libc::sched_yield() };
}

/// The calling thread to SCHED_FIFO at `prio` (`realtime_priority()`), or back to SCHED_OTHER
/// (`normalize_priority()`) with `None`.
pub fn set_fifo(prio: Option<i32>) -> io::Result<()> {
    let (policy, p) = match prio {
        Some(p) => (libc::SCHED_FIFO, p),
        None => (libc::SCHED_OTHER, 0),
    };
    let param = libc::sched_param { sched_priority: p };
    // SAFETY: thread 0 = the caller; valid parameter.
    cvt(unsafe { libc::sched_setscheduler(0, policy, &param) }, "sched_setscheduler").map(|_| ())
}

/// This thread's id (for /proc/PID/task/TID).
pub fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::gettid() }
}

/// Name the calling thread (`/proc/PID/task/TID/comm`, 15 bytes at most).
pub fn set_thread_name(name: &str) {
    let c = std::ffi::CString::new(name.as_bytes().iter().take(15).copied().collect::<Vec<u8>>()).expect("no NUL");
    // SAFETY: valid C string.
    unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Raise the soft RLIMIT_NOFILE to `need` descriptors, within the hard limit (raising that
/// needs CAP_SYS_RESOURCE, which a container's root may lack); an error if `need` does not fit.
pub fn raise_nofile(need: u64) -> io::Result<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid pointer.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, "getrlimit(RLIMIT_NOFILE)")?;
    if r.rlim_max < need {
        return Err(io::Error::other(format!(
            "{need} descriptors needed; the hard RLIMIT_NOFILE is {} (ulimit -Hn)",
            r.rlim_max
        )));
    }
    if r.rlim_cur < need {
        r.rlim_cur = r.rlim_max;
        // SAFETY: valid pointer.
        cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) }, "setrlimit(RLIMIT_NOFILE)")?;
    }
    Ok(r.rlim_cur)
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let fl = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) }, "fcntl")?;
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) }, "fcntl").map(|_| ())
}

pub fn set_nodelay(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: valid option pointer.
    unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&one as *const libc::c_int).cast(), 4) };
}

pub fn close(fd: RawFd) {
    // SAFETY: a descriptor we own and forget after this.
    unsafe { libc::close(fd) };
}

/// read(); Ok(0) at EOF; Err(WouldBlock) when nothing is there.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: writes at most buf.len() bytes into buf.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// write(); Err(WouldBlock) when the socket buffer is full.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: reads buf.len() bytes from buf. MSG_NOSIGNAL: a peer gone is an error, not SIGPIPE.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// An eventfd: how a thread blocked in its gathering is told of work (the model's pipe).
pub fn eventfd() -> io::Result<RawFd> {
    // SAFETY: plain system call.
    cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) }, "eventfd")
}

pub fn notify(efd: RawFd) {
    let one: u64 = 1;
    // SAFETY: 8 bytes from a u64.
    unsafe { libc::write(efd, (&one as *const u64).cast(), 8) };
}

pub fn drain_eventfd(efd: RawFd) {
    let mut v: u64 = 0;
    // SAFETY: 8 bytes into a u64.
    unsafe { libc::read(efd, (&mut v as *mut u64).cast(), 8) };
}

/// An epoll instance (level-triggered registrations).
pub struct Epoll {
    pub fd: RawFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new(max_events: usize) -> io::Result<Epoll> {
        // SAFETY: plain system call.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }, "epoll_create1")?;
        Ok(Epoll { fd, events: vec![libc::epoll_event { events: 0, u64: 0 }; max_events.max(1)] })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: fd as u64 };
        // SAFETY: valid event pointer.
        cvt(unsafe { libc::epoll_ctl(self.fd, op, fd, &mut ev) }, "epoll_ctl").map(|_| ())
    }

    pub fn add(&self, fd: RawFd, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events)
    }

    pub fn modify(&self, fd: RawFd, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events)
    }

    /// epoll_wait with a timeout in ms (−1: block; 0: never); the ready (fd, events).
    pub fn wait(&mut self, timeout_ms: i32, out: &mut Vec<(RawFd, u32)>) {
        out.clear();
        // SAFETY: the buffer holds events.len() entries.
        let n = unsafe { libc::epoll_wait(self.fd, self.events.as_mut_ptr(), self.events.len() as i32, timeout_ms) };
        for ev in &self.events[..n.max(0) as usize] {
            out.push((ev.u64 as RawFd, ev.events));
        }
    }

    /// epoll_pwait2 with a timeout in ns (Linux 5.11+): the clients' arrival clock.
    pub fn wait_ns(&mut self, timeout_ns: u64, out: &mut Vec<(RawFd, u32)>) {
        out.clear();
        let t = timespec(timeout_ns);
        // SAFETY: the buffer holds events.len() entries; a valid timespec; no signal mask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.fd,
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                &t as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        for ev in &self.events[..n.max(0) as usize] {
            out.push((ev.u64 as RawFd, ev.events));
        }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        close(self.fd);
    }
}

/// poll(list, n, 0) over `fds`; the number ready (their `revents` set).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> usize {
    // SAFETY: a valid array of fds.len() entries.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    n.max(0) as usize
}

/// A TCP listening socket on `port` (all addresses), blocking (the listen thread blocks in it).
pub fn listen(port: u16, backlog: i32) -> io::Result<RawFd> {
    let l = std::net::TcpListener::bind(("0.0.0.0", port))?;
    use std::os::fd::IntoRawFd;
    let fd = l.into_raw_fd();
    // SAFETY: our socket; re-listen with the backlog we want.
    cvt(unsafe { libc::listen(fd, backlog) }, "listen")?;
    Ok(fd)
}

/// accept() blocking; the new descriptor non-blocking.
pub fn accept(lfd: RawFd) -> io::Result<RawFd> {
    // SAFETY: null address pointers are allowed.
    cvt(
        unsafe {
            libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        },
        "accept4",
    )
}

/// A non-blocking TCP connect to `addr:port`: the descriptor (connecting; writable once done).
pub fn connect_nb(addr: std::net::Ipv4Addr, port: u16) -> io::Result<RawFd> {
    // SAFETY: plain system calls on our own socket.
    unsafe {
        let fd = cvt(
            libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0),
            "socket",
        )?;
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(addr).to_be() },
            sin_zero: [0; 8],
        };
        let r = libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        );
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                libc::close(fd);
                return Err(io::Error::new(e.kind(), format!("connect {addr}:{port}: {e}")));
            }
        }
        set_nodelay(fd);
        Ok(fd)
    }
}

/// The pending error of a connecting socket (0 = connected).
pub fn so_error(fd: RawFd) -> i32 {
    let mut e: libc::c_int = 0;
    let mut len = 4u32;
    // SAFETY: valid out-pointers.
    unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, (&mut e as *mut libc::c_int).cast(), &mut len) };
    e
}

/// Stop flags and window marks of a worker process, set from its signal handlers
/// (SIGUSR1: window start, SIGUSR2: window end, SIGTERM/SIGINT/SIGHUP/SIGQUIT: stop).
pub mod marks {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    pub static STOP: AtomicBool = AtomicBool::new(false);
    /// 0 before the window, 1 inside, 2 after (bumped by the handlers).
    pub static PHASE: AtomicU32 = AtomicU32::new(0);
    static HOOK: std::sync::OnceLock<fn(u32)> = std::sync::OnceLock::new();

    extern "C" fn on_signal(sig: libc::c_int) {
        match sig {
            libc::SIGUSR1 | libc::SIGUSR2 => {
                let p = if sig == libc::SIGUSR1 { 1 } else { 2 };
                PHASE.store(p, Ordering::SeqCst);
                if let Some(h) = HOOK.get() {
                    h(p);
                }
            }
            _ => STOP.store(true, Ordering::SeqCst),
        }
    }

    /// Install the handlers; `hook(phase)` runs in the handler (atomics only).
    pub fn install(hook: Option<fn(u32)>) {
        if let Some(h) = hook {
            let _ = HOOK.set(h);
        }
        for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            // SAFETY: the handler only touches atomics. SA_RESTART: blocking accept()/epoll_wait
            // in other threads are not disturbed more than needed.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    }

    pub fn stopped() -> bool {
        STOP.load(Ordering::Relaxed)
    }

    pub fn phase() -> u32 {
        PHASE.load(Ordering::Relaxed)
    }
}
