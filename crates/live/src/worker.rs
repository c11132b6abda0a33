//! The live experiment's processes: a UDP sink (the paper's `bw` counter and the `flood` servers)
//! and a rate-controlled UDP sender (`sendmmsg`; this kernel has no pktgen). Each runs as its own
//! process, started by [`spawn`] inside a namespace with its nice value and CPU, so that the
//! agent finds it in `/proc` like any server and the scheduler treats it like one.
//!
//! Protocol with the parent: SIGUSR1 marks the start of the measurement window, SIGUSR2 its end
//! (each records the packet count at that instant, from the signal handler, so the window is
//! exact whatever the process is doing); SIGTERM ends it. On exit it prints one JSON line
//! `{"count": N, "marks": [start, end], "errors": E, ...}` (a sink adds `socket_drops`, a sender
//! `dev_tx_dropped`; a sink drains its socket after the stop, so `count` is the whole run's). Every worker also stops by itself after
//! `secs` seconds (and a sender after `count_max` packets) and dies with its parent
//! (PR_SET_PDEATHSIG), so no loop outlives the run.

use crate::sys;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

static COUNT: AtomicU64 = AtomicU64::new(0);
/// A sink's datagrams whose sequence number (the live-frames generator's, `gen.rs`) lies in its
/// `--seq-lo..--seq-hi`: the frames of the measurement window that arrived, whenever read.
static SEQ_IN: AtomicU64 = AtomicU64::new(0);
static MARK_START: AtomicU64 = AtomicU64::new(u64::MAX);
static MARK_END: AtomicU64 = AtomicU64::new(u64::MAX);
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    let c = COUNT.load(Ordering::Relaxed);
    match sig {
        libc::SIGUSR1 => MARK_START.store(c, Ordering::Relaxed),
        libc::SIGUSR2 => MARK_END.store(c, Ordering::Relaxed),
        _ => STOP.store(true, Ordering::Relaxed),
    }
}

fn install_worker_signals() {
    for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: the handler only touches atomics. No SA_RESTART: a blocked recv returns EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// `extra`: worker-specific whole-run fields (a sink's socket drops, a sender's device drops).
fn report(errors: u64, extra: serde_json::Value) {
    let m = |a: &AtomicU64| {
        let v = a.load(Ordering::Relaxed);
        if v == u64::MAX {
            serde_json::Value::Null
        } else {
            v.into()
        }
    };
    let mut j = serde_json::json!({
        "count": COUNT.load(Ordering::Relaxed),
        "marks": [m(&MARK_START), m(&MARK_END)],
        "errors": errors,
    });
    if let (Some(o), serde_json::Value::Object(e)) = (j.as_object_mut(), extra) {
        o.extend(e);
    }
    // The parent reads this line; if it has gone there is no one to tell (and no panic).
    let _ = writeln!(std::io::stdout().lock(), "{j}");
}

/// The longest a worker runs (its `--secs`), seconds.
pub const SECS_MAX: f64 = 600.0;
/// The fastest a sender may be asked to send, packets per second (far above what one CPU can).
pub const RATE_PPS_MAX: f64 = 1e8;
/// The largest UDP payload of one unfragmented Ethernet frame.
pub const PAYLOAD_MAX: usize = 1472;

/// A worker's refusal of an argument (exit 1, `live-worker: --<flag>: ...`).
pub(crate) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// A worker's number argument `--<name>` in `lo..=hi` (finite).
pub(crate) fn check_range(name: &str, v: f64, lo: f64, hi: f64) -> io::Result<()> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(invalid(format!("--{name}: expected {lo}..={hi}, got {v}")))
    }
}

/// Every worker's time limit, `--secs`.
pub(crate) fn check_secs(secs: f64) -> io::Result<()> {
    check_range("secs", secs, 0.0, SECS_MAX)
}

/// `hostsim live-worker sink`: the UDP sink ([`run_sink`]).
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct SinkArgs {
    #[arg(long)]
    pub port: u16,
    #[arg(long)]
    pub secs: f64,
    /// Also count datagrams whose sequence number (first 8 payload bytes, little-endian) is at
    /// least this ...
    #[arg(long, requires = "seq_hi")]
    pub seq_lo: Option<u64>,
    /// ... and below this.
    #[arg(long, requires = "seq_lo")]
    pub seq_hi: Option<u64>,
    /// SO_RCVBUF, bytes, set before bind (the kernel doubles it); default: rmem_default.
    #[arg(long)]
    pub rcvbuf: Option<i32>,
}

/// `hostsim live-worker send`: the sendmmsg sender ([`run_sender`]).
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct SendArgs {
    #[arg(long)]
    pub dst: Ipv4Addr,
    #[arg(long, value_delimiter = ',')]
    pub ports: Vec<u16>,
    #[arg(long)]
    pub rate_pps: f64,
    #[arg(long, default_value_t = 18)]
    pub payload: usize,
    #[arg(long)]
    pub secs: f64,
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
}

/// A worker's command line from its arguments struct: `sub`, then `--<field> <value>` for each
/// field under its serde name in kebab case (the flag clap derives from it), a list joined by
/// commas, `None` left out, `true` as the flag alone. The struct is the one the worker parses,
/// so the two cannot differ (tests: each worker's arguments round-trip).
pub fn args<T: serde::Serialize>(sub: &str, a: &T) -> Vec<String> {
    let mut out = vec![sub.to_string()];
    let serde_json::Value::Object(fields) = serde_json::to_value(a).expect("worker arguments serialise") else {
        panic!("worker arguments are a struct");
    };
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (k, v) in &fields {
        let flag = format!("--{}", k.replace('_', "-"));
        match v {
            serde_json::Value::Null | serde_json::Value::Bool(false) => {}
            serde_json::Value::Bool(true) => out.push(flag),
            serde_json::Value::Array(xs) => {
                out.push(flag);
                out.push(xs.iter().map(text).collect::<Vec<_>>().join(","));
            }
            v => {
                out.push(flag);
                out.push(text(v));
            }
        }
    }
    out
}

/// The sink: bind `port` on all addresses, receive one datagram per recv() (as the model's
/// `udp_sink`), count, until SIGTERM or `secs`. With `seq`, also count the datagrams whose
/// first 8 payload bytes (a little-endian sequence number) lie in `seq.0..seq.1`. With
/// `rcvbuf`, SO_RCVBUF is set to it before the bind (the kernel doubles the value asked, so the
/// socket's limit, `sk_rcvbuf`, is 2 × `rcvbuf`; the report's `rcvbuf_bytes` is what
/// getsockopt reads back, that limit).
pub fn run_sink(a: &SinkArgs) -> io::Result<()> {
    let (port, secs, seq, rcvbuf) = (a.port, a.secs, a.seq_lo.zip(a.seq_hi), a.rcvbuf);
    check_secs(secs)?;
    if let Some(b) = rcvbuf {
        if !(1..=RCVBUF_MAX).contains(&b) {
            return Err(invalid(format!("--rcvbuf: expected 1..={RCVBUF_MAX} bytes, got {b}")));
        }
    }
    install_worker_signals();
    let sock = bind_udp(port, rcvbuf)?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut buf = [0u8; 2048];
    let fd = sock.as_raw_fd();
    let mut errors = 0;
    while !STOP.load(Ordering::Relaxed) && Instant::now() < deadline {
        // SAFETY: recv into our buffer.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 {
            COUNT.fetch_add(1, Ordering::Relaxed);
            count_seq(&buf[..n as usize], seq);
        } else {
            let e = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if e != libc::EINTR && e != libc::EAGAIN {
                errors += 1;
            }
        }
    }
    // Drain: what reached the socket before the stop is counted in the whole-run total (the
    // window marks are already taken), until 50 ms pass without a datagram (at most 1 s), so
    // that sent − received over the whole run is exactly what the path dropped.
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let drain_end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < drain_end {
        // SAFETY: recv into our buffer.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if e == libc::EINTR {
                continue;
            }
            break;
        }
        COUNT.fetch_add(1, Ordering::Relaxed);
        count_seq(&buf[..n as usize], seq);
    }
    // The socket's own drop count (receive buffer full) over its life = this run, from the
    // namespace's /proc/net/udp, read while the socket is still open.
    let drops = std::fs::read_to_string("/proc/thread-self/net/udp")
        .map(|t| {
            crate::procfs::parse_net_socks(&t, true).iter().filter(|l| l.port == port).map(|l| l.drops).sum::<u64>()
        })
        .ok();
    let seq_in = seq.map(|_| SEQ_IN.load(Ordering::Relaxed));
    let rcvbuf_bytes = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).ok();
    report(errors, serde_json::json!({ "socket_drops": drops, "seq_in": seq_in, "rcvbuf_bytes": rcvbuf_bytes }));
    Ok(())
}

/// The largest `--rcvbuf` a sink accepts (the kernel caps it at `net.core.rmem_max` anyway).
pub const RCVBUF_MAX: i32 = 64 << 20;

/// A UDP socket bound to `port` on all addresses, SO_RCVBUF set first when asked.
fn bind_udp(port: u16, rcvbuf: Option<i32>) -> io::Result<UdpSocket> {
    // SAFETY: a new socket; its descriptor is owned by the UdpSocket built from it below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a socket we own.
    let sock = unsafe { <UdpSocket as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    if let Some(b) = rcvbuf {
        sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, b)?;
    }
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: 0 },
        sin_zero: [0; 8],
    };
    // SAFETY: binding our socket to a sockaddr_in of the right size.
    let r = unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sock)
}

fn count_seq(d: &[u8], seq: Option<(u64, u64)>) {
    if let (Some((lo, hi)), Some(b)) = (seq, d.get(..8)) {
        let q = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        if (lo..hi).contains(&q) {
            SEQ_IN.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Transmit drops of this namespace's `eth0` (a veth: its peer's ring was full).
fn eth0_tx_dropped() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
    crate::procfs::parse_net_dev(&t).get("eth0").map(|d| d.tx_dropped)
}

/// The sender: `rate_pps` datagrams of `payload` bytes per second to `dst` at `ports` in turn,
/// in `sendmmsg` batches of at most `batch`, paced against the monotonic clock. When the CPU
/// cannot keep up it skips what it owes beyond 1 ms of packets rather than bursting, so its
/// achieved rate (the count) is what it could send. Stops after `secs` or `count_max` packets.
pub fn run_sender(a: &SendArgs) -> io::Result<()> {
    let (dst, ports, rate_pps, payload, secs, batch) = (a.dst, &a.ports[..], a.rate_pps, a.payload, a.secs, a.batch);
    check_secs(secs)?;
    if !(rate_pps.is_finite() && rate_pps > 0.0 && rate_pps <= RATE_PPS_MAX) {
        return Err(invalid(format!(
            "--rate-pps: expected a rate above 0 and at most {RATE_PPS_MAX:e} pkt/s, got {rate_pps}"
        )));
    }
    if ports.is_empty() || ports.len() > 1024 || ports.contains(&0) {
        return Err(invalid(format!("--ports: expected 1..=1024 ports in 1..=65535, got {ports:?}")));
    }
    if payload > PAYLOAD_MAX {
        return Err(invalid(format!("--payload: expected at most {PAYLOAD_MAX} bytes, got {payload}")));
    }
    if !(1..=64).contains(&batch) {
        return Err(invalid(format!("--batch: expected 1..=64 packets per sendmmsg, got {batch}")));
    }
    install_worker_signals();
    // SAFETY: timer slack of 1 ns makes nanosleep wake on time (default 50 us).
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
    }
    let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
    let fd = sock.as_raw_fd();
    // At most 1e8 pkt/s × 600 s × 1.05: well inside u64.
    let count_max = (rate_pps * secs * 1.05) as u64 + 1;
    let addrs: Vec<libc::sockaddr_in> = ports
        .iter()
        .map(|&p| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: p.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(dst).to_be() },
            sin_zero: [0; 8],
        })
        .collect();
    let payload_buf = vec![0x5au8; payload.max(1)];
    let mut iov: Vec<libc::iovec> =
        (0..batch).map(|_| libc::iovec { iov_base: payload_buf.as_ptr() as *mut _, iov_len: payload }).collect();
    // SAFETY: zeroed mmsghdr is a valid empty header.
    let mut msgs: Vec<libc::mmsghdr> = (0..batch).map(|_| unsafe { std::mem::zeroed() }).collect();
    let lag_max = (rate_pps / 1000.0).max(batch as f64) as u64;
    let dev_dropped0 = eth0_tx_dropped();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    let (mut sent, mut skipped, mut errors, mut next_port) = (0u64, 0u64, 0u64, 0usize);
    while !STOP.load(Ordering::Relaxed) && sent < count_max {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let due = (now.duration_since(t0).as_secs_f64() * rate_pps) as u64;
        let mut owed = due.saturating_sub(sent + skipped);
        if owed > lag_max {
            skipped += owed - lag_max;
            owed = lag_max;
        }
        if owed == 0 {
            // Until the next packet is due (at least 20 us: a sleep costs a few us itself).
            let next_s = (sent + skipped + 1) as f64 / rate_pps;
            let wait = (t0 + Duration::from_secs_f64(next_s)).saturating_duration_since(now);
            std::thread::sleep(wait.max(Duration::from_micros(20)));
            continue;
        }
        let n = (owed as usize).min(batch);
        for i in 0..n {
            let a = &addrs[next_port % addrs.len()];
            next_port += 1;
            msgs[i].msg_hdr.msg_name = a as *const _ as *mut _;
            msgs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: n initialised headers pointing at live buffers.
        let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as u32, 0) };
        if r > 0 {
            sent += r as u64;
            COUNT.store(sent, Ordering::Relaxed);
        } else {
            errors += 1;
            skipped += n as u64; // ENOBUFS etc.: those packets were not sent
        }
    }
    // Packets sendmmsg() accepted that the veth dropped (its peer's ring full): whole run.
    let dev_dropped = eth0_tx_dropped().zip(dev_dropped0).map(|(b, a)| b.saturating_sub(a));
    report(errors, serde_json::json!({ "dev_tx_dropped": dev_dropped }));
    Ok(())
}

/// Where and how to start a worker process.
pub struct Placement<'a> {
    /// Network namespace file to enter.
    pub netns: &'a File,
    pub cpu: Option<usize>,
    pub nice: i32,
    /// The EEVDF slice the worker asks for, ns (None: the kernel's base slice). Since Linux
    /// 6.12 a SCHED_OTHER task may ask for its own slice with `sched_setattr`'s
    /// `sched_runtime` (kernel/sched/syscalls.c `__setparam_fair`, 6.18: clamped to 0.1–100
    /// ms), and a waking task of a shorter slice preempts the running one at once
    /// (kernel/sched/fair.c `check_preempt_wakeup_fair`, the PREEMPT_SHORT feature); otherwise
    /// the running task keeps its protected slice (RUN_TO_PARITY, ~0.75–1.5 ms here) whatever
    /// the woken task's nice.
    pub slice_ns: Option<u64>,
    /// A cgroup's `cgroup.procs`, opened for writing: the worker joins it.
    pub cgroup: Option<&'a File>,
    /// Another hierarchy's group to join the same way (the cgroup2 group of ozaki-pbq's bind
    /// hooks, `ozaki_pbq/hooks.rs`: joined before exec, so every socket the worker creates is seen).
    pub cgroup2: Option<&'a File>,
}

/// A running worker.
pub struct Worker {
    pub name: String,
    child: Child,
}

/// What a worker reported at exit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerReport {
    pub count: u64,
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub errors: u64,
    /// A sink's socket drops over the run (None where /proc could not say).
    pub socket_drops: Option<u64>,
    /// A sender's device transmit drops over the run.
    pub dev_tx_dropped: Option<u64>,
    /// A sink's datagrams in its sequence-number window (`run_sink`'s `seq`).
    pub seq_in: Option<u64>,
    /// A sink's SO_RCVBUF as getsockopt read it back (the socket's limit, `sk_rcvbuf`).
    pub rcvbuf_bytes: Option<u64>,
}

impl WorkerReport {
    /// Packets within the measurement window.
    pub fn in_window(&self) -> Option<u64> {
        Some(self.end?.saturating_sub(self.start?))
    }
}

/// The program a run starts its workers with: this binary (`hostsim`), `live-worker`, then the
/// worker's own arguments. Not an option of any experiment (`#[arg(skip)]`, not in run.json).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerExe {
    /// None: the running program (`std::env::current_exe`).
    pub exe: Option<PathBuf>,
    /// Arguments before the worker's own.
    pub prefix: Vec<String>,
}

impl Default for WorkerExe {
    fn default() -> WorkerExe {
        WorkerExe { exe: None, prefix: vec!["live-worker".into()] }
    }
}

impl WorkerExe {
    fn command(&self, args: &[String]) -> Result<Command, String> {
        let exe = match &self.exe {
            Some(e) => e.clone(),
            None => std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?,
        };
        let mut cmd = Command::new(exe);
        cmd.args(&self.prefix).args(args);
        Ok(cmd)
    }
}

/// Start `exe ARGS` as a worker: in `place.netns`, pinned, at `place.nice`, dying with us.
pub fn spawn(name: &str, exe: &WorkerExe, args: &[String], place: &Placement) -> Result<Worker, String> {
    let ns_fd = place.netns.as_raw_fd();
    let cpu = place.cpu;
    let nice = place.nice;
    let slice_ns = place.slice_ns;
    let cg_fds = [place.cgroup.map(|f| f.as_raw_fd()), place.cgroup2.map(|f| f.as_raw_fd())];
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = exe.command(args)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    // SAFETY: only async-signal-safe system calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns_fd, libc::CLONE_NEWNET) < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            // A parent that died before the prctl above sends no signal: the worker would
            // outlive the run (prctl(2)). Then its parent is another process already.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(c) = cpu {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(c, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::setpriority(libc::PRIO_PROCESS, 0, nice) < 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(ns) = slice_ns {
                let mut attr: libc::sched_attr = std::mem::zeroed();
                attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
                attr.sched_policy = libc::SCHED_OTHER as u32;
                attr.sched_nice = nice;
                attr.sched_runtime = ns;
                if libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const libc::sched_attr, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for fd in cg_fds.into_iter().flatten() {
                if libc::write(fd, b"0".as_ptr().cast(), 1) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| format!("starting worker {name}: {e}"))?;
    Ok(Worker { name: name.to_string(), child })
}

impl Worker {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, sig: libc::c_int) {
        sys::send_signal(self.child.id(), sig);
    }

    /// SIGTERM, then wait (SIGKILL after `grace`) and parse the report.
    pub fn finish(mut self, grace: Duration) -> Result<WorkerReport, String> {
        self.signal(libc::SIGTERM);
        let end = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!("worker {} did not stop within {grace:?}", self.name));
                }
            }
        }
        let out = self.child.stdout.take().ok_or("worker stdout")?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).map_err(|e| e.to_string())?;
        let v: serde_json::Value = serde_json::from_str(line.trim())
            .map_err(|e| format!("worker {} report `{}`: {e}", self.name, line.trim()))?;
        let mark = |i: usize| v["marks"][i].as_u64();
        Ok(WorkerReport {
            count: v["count"].as_u64().unwrap_or(0),
            start: mark(0),
            end: mark(1),
            errors: v["errors"].as_u64().unwrap_or(0),
            socket_drops: v["socket_drops"].as_u64(),
            dev_tx_dropped: v["dev_tx_dropped"].as_u64(),
            seq_in: v["seq_in"].as_u64(),
            rcvbuf_bytes: v["rcvbuf_bytes"].as_u64(),
        })
    }
}

impl Worker {
    /// Has it exited, and with what status (it is reaped then; its report waits on its stdout)?
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Its report as JSON, for workers with their own fields (tabata-speed's TCP sender and
    /// sink, the kawai-interval workers): SIGTERM if it still runs, wait (SIGKILL after
    /// `grace`), parse its one line.
    pub fn finish_json(mut self, grace: Duration) -> Result<serde_json::Value, String> {
        if self.exited().is_none() {
            self.signal(libc::SIGTERM);
        }
        let end = Instant::now() + grace;
        while self.exited().is_none() {
            if Instant::now() >= end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("worker {} did not stop within {grace:?}", self.name));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = self.child.stdout.take().ok_or("worker stdout")?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).map_err(|e| e.to_string())?;
        serde_json::from_str(line.trim())
            .map_err(|e| format!("worker {} report `{}`: {e} (its errors are on stderr above)", self.name, line.trim()))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Reached on error paths (finish() consumes the worker): never leave a child behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
pub(crate) mod args_tests {
    use super::*;

    /// Each worker's arguments, written by [`args`] and parsed as the worker parses them, come
    /// back unchanged.
    pub(crate) fn round_trip<T: clap::Args + clap::FromArgMatches + serde::Serialize + PartialEq + std::fmt::Debug>(
        sub: &str,
        a: T,
    ) {
        let line = args(sub, &a);
        assert_eq!(line[0], sub);
        let words: Vec<&str> = line[1..].iter().map(String::as_str).collect();
        let back: T = crate::command::parse(&words).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert_eq!(back, a, "{line:?}");
    }

    #[test]
    fn worker_arguments_round_trip() {
        round_trip("sink", SinkArgs { port: 5000, secs: 3.7, seq_lo: Some(10), seq_hi: Some(20), rcvbuf: None });
        round_trip("sink", SinkArgs { port: 9, secs: 1.0, seq_lo: None, seq_hi: None, rcvbuf: Some(32_768) });
        let dst = Ipv4Addr::new(198, 18, 0, 1);
        round_trip("send", SendArgs { dst, ports: vec![6000, 6001], rate_pps: 1e5, payload: 18, secs: 2.5, batch: 32 });
    }
}
