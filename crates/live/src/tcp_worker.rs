//! tabata-speed's two processes: the paper's bulk TCP sender (1 MB written in units of 1024 or
//! 2048 B with an explicit `SO_SNDBUF`, TCP_NODELAY as the model's sender) and a sink that reads
//! until the end of the stream. Each prints one JSON line when it ends; each stops by itself
//! after `secs` and dies with its parent (PR_SET_PDEATHSIG, set by `worker::spawn`), so no
//! loop outlives the run.
//!
//! The sender waits for an absolute CLOCK_MONOTONIC instant before its first write, so the
//! parent can put it in the regulator's cgroup and start the regulator first. After its last
//! write it waits (bounded by `secs`) until every byte is acknowledged and then reads the
//! kernel's `TCP_INFO` chrono counters (net/ipv4/tcp.c `tcp_get_info_chrono_stats`, Linux 6.18):
//! the time the connection was busy, and how much of it was limited by the receiver's window or
//! by the send buffer — the evidence of which side limited the transfer.

use crate::worker::check_secs;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGTERM, SIGINT, SIGHUP, SIGQUIT end the loop and the report is still written (no
/// SA_RESTART: a blocked read returns EINTR).
fn install_stop_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn last_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn setsockopt_int(fd: i32, level: i32, opt: i32, v: i32, what: &str) -> io::Result<()> {
    // SAFETY: an int option on our socket.
    let r = unsafe { libc::setsockopt(fd, level, opt, (&v as *const i32).cast(), std::mem::size_of::<i32>() as u32) };
    if r < 0 {
        return Err(last_err(what));
    }
    Ok(())
}

fn getsockopt_int(fd: i32, level: i32, opt: i32) -> Option<i32> {
    let mut v: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as u32;
    // SAFETY: an int option of our socket into a local.
    (unsafe { libc::getsockopt(fd, level, opt, (&mut v as *mut i32).cast(), &mut len) } == 0).then_some(v)
}

fn sockaddr(ip: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    }
}

/// The fields of `struct tcp_info` (include/uapi/linux/tcp.h) the experiment reads, by offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    pub snd_mss: u32,
    pub unacked: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub notsent_bytes: u32,
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
}

impl TcpInfo {
    /// Parse the kernel's bytes (at least 192: up to `tcpi_sndbuf_limited`, Linux 4.10+).
    pub fn parse(b: &[u8]) -> Option<TcpInfo> {
        if b.len() < 192 {
            return None;
        }
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        Some(TcpInfo {
            snd_mss: u32_at(16),
            unacked: u32_at(24),
            snd_cwnd: u32_at(80),
            total_retrans: u32_at(100),
            notsent_bytes: u32_at(144),
            busy_us: u64_at(168),
            rwnd_limited_us: u64_at(176),
            sndbuf_limited_us: u64_at(184),
        })
    }

    pub fn read(fd: i32) -> Option<TcpInfo> {
        let mut b = [0u8; 256];
        let mut len = b.len() as u32;
        // SAFETY: TCP_INFO into our buffer, the kernel writes at most `len` bytes.
        if unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, b.as_mut_ptr().cast(), &mut len) } < 0 {
            return None;
        }
        TcpInfo::parse(&b[..len as usize])
    }
}

/// What the sender is asked to do: `hostsim live-worker tcp-send` (its flags are the serde
/// names, [`crate::worker::args`]).
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct SendSpec {
    #[arg(long)]
    pub dst: Ipv4Addr,
    #[arg(long)]
    pub port: u16,
    #[arg(long = "unit")]
    #[serde(rename = "unit")]
    pub unit_bytes: usize,
    #[arg(long = "total")]
    #[serde(rename = "total")]
    pub total_bytes: usize,
    /// Given to SO_SNDBUF (the kernel doubles it, net/core/sock.c `sk_setsockopt`).
    #[arg(long = "sndbuf")]
    #[serde(rename = "sndbuf")]
    pub sndbuf_bytes: i32,
    /// CLOCK_MONOTONIC ns of the first write.
    #[arg(long)]
    pub start_ns: u64,
    #[arg(long)]
    pub secs: f64,
    /// `SO_MAX_PACING_RATE` (bytes/s): TCP's internal pacing (net/ipv4/tcp_output.c, since
    /// 4.13 without the fq qdisc) spreads the flow's segments at this rate. None: unpaced.
    #[arg(long = "pacing")]
    #[serde(rename = "pacing")]
    pub pacing_bytes_per_s: Option<u64>,
}

/// The sink: `hostsim live-worker tcp-sink`.
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct SinkArgs {
    #[arg(long)]
    pub port: u16,
    #[arg(long)]
    pub secs: f64,
}

/// The largest total a sender may be asked for (bytes; goda-wakeups' senders run until their
/// time limit: 1 TiB is never reached) and the unit bounds.
pub const TOTAL_MAX: usize = 1 << 40;
pub const UNIT_MAX: usize = 1 << 20;

/// The sender process.
pub fn run_tcp_sender(s: &SendSpec) -> io::Result<()> {
    check_secs(s.secs)?;
    if !(1..=UNIT_MAX).contains(&s.unit_bytes) || !(1..=TOTAL_MAX).contains(&s.total_bytes) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--unit/--total: expected 1..={UNIT_MAX} and 1..={TOTAL_MAX} bytes"),
        ));
    }
    if !(1024..=1 << 26).contains(&s.sndbuf_bytes) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--sndbuf: expected 1024..=67108864 bytes, got {}", s.sndbuf_bytes),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(s.secs);
    // SAFETY: a new socket we own.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_err("socket"));
    }
    // Before connect, so that the window scale the SYN announces and the buffer match.
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, s.sndbuf_bytes, "SO_SNDBUF")?;
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1, "TCP_NODELAY")?;
    if let Some(rate) = s.pacing_bytes_per_s {
        let v: u64 = rate.max(1);
        // SAFETY: a u64 option of our socket (the kernel takes u32 or u64 by its length).
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_MAX_PACING_RATE,
                (&v as *const u64).cast(),
                std::mem::size_of::<u64>() as u32,
            )
        };
        if r < 0 {
            return Err(last_err("SO_MAX_PACING_RATE"));
        }
    }
    let sa = sockaddr(s.dst, s.port);
    // The sink may still be starting: retry for up to 2 s.
    let connect_end = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: connect with a valid sockaddr_in.
        let r = unsafe {
            libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32)
        };
        if r == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if Instant::now() >= connect_end || e.raw_os_error() != Some(libc::ECONNREFUSED) {
            return Err(io::Error::new(e.kind(), format!("connect {}:{}: {e}", s.dst, s.port)));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let sndbuf_effective = getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF);
    let ts = libc::timespec {
        tv_sec: (s.start_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (s.start_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: absolute sleep until the start instant.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
        == libc::EINTR
    {}
    let t0 = crate::sys::monotonic_ns();
    let buf = vec![0x5au8; s.unit_bytes];
    let (mut sent, mut writes, mut partial) = (0usize, 0u64, 0u64);
    while sent < s.total_bytes && Instant::now() < deadline {
        let want = s.unit_bytes.min(s.total_bytes - sent);
        let mut off = 0;
        while off < want && Instant::now() < deadline {
            // SAFETY: send from our buffer.
            let r = unsafe { libc::send(fd, buf[off..want].as_ptr().cast(), want - off, libc::MSG_NOSIGNAL) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(io::Error::new(e.kind(), format!("send: {e}")));
            }
            writes += 1;
            if (r as usize) < want - off {
                partial += 1;
            }
            off += r as usize;
        }
        sent += off;
    }
    let t_last_write = crate::sys::monotonic_ns();
    // Until everything is acknowledged (the chrono counters then cover the whole transfer).
    let mut info = TcpInfo::read(fd);
    while info.is_some_and(|i| i.unacked > 0 || i.notsent_bytes > 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
        info = TcpInfo::read(fd);
    }
    let i = info.unwrap_or_default();
    // SAFETY: closing our socket (the FIN follows).
    unsafe { libc::close(fd) };
    let j = serde_json::json!({
        "bytes": sent, "writes": writes, "partial_writes": partial, "start_ns": t0, "last_write_ns": t_last_write,
        "sndbuf_effective": sndbuf_effective, "snd_mss": i.snd_mss, "snd_cwnd": i.snd_cwnd,
        "total_retrans": i.total_retrans, "busy_us": i.busy_us, "rwnd_limited_us": i.rwnd_limited_us,
        "sndbuf_limited_us": i.sndbuf_limited_us, "acked": info.is_some_and(|i| i.unacked == 0),
        "cpu_us": own_cpu_us(),
    });
    let _ = writeln!(std::io::stdout().lock(), "{j}");
    Ok(())
}

/// The sink: accept one connection on `port`, read until its end (or `secs`), report.
pub fn run_tcp_sink(a: &SinkArgs) -> io::Result<()> {
    let (port, secs) = (a.port, a.secs);
    check_secs(secs)?;
    install_stop_signals();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let l = std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))?;
    l.set_nonblocking(true)?;
    let mut conn = loop {
        match l.accept() {
            Ok((c, _)) => break c,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    && Instant::now() < deadline
                    && !STOP.load(Ordering::Relaxed) =>
            {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => return Err(io::Error::new(e.kind(), format!("accept on port {port}: {e}"))),
        }
    };
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut buf = vec![0u8; 65536];
    let (mut bytes, mut eof) = (0u64, false);
    while Instant::now() < deadline && !STOP.load(Ordering::Relaxed) {
        match io::Read::read(&mut conn, &mut buf) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => bytes += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("read: {e}"))),
        }
    }
    let cpu_us = own_cpu_us();
    let _ =
        writeln!(std::io::stdout().lock(), "{}", serde_json::json!({ "bytes": bytes, "eof": eof, "cpu_us": cpu_us }));
    Ok(())
}

/// This process's CPU time so far (user + system), µs.
fn own_cpu_us() -> u64 {
    // SAFETY: a plain C struct, all zeroes is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: our own usage into a local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (ru.ru_utime.tv_sec * 1_000_000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1_000_000 + ru.ru_stime.tv_usec) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_info_offsets_are_the_uapi_ones() {
        let mut b = vec![0u8; 232];
        b[16..20].copy_from_slice(&1460u32.to_ne_bytes());
        b[100..104].copy_from_slice(&3u32.to_ne_bytes());
        b[168..176].copy_from_slice(&1000u64.to_ne_bytes());
        b[184..192].copy_from_slice(&250u64.to_ne_bytes());
        let i = TcpInfo::parse(&b).unwrap();
        assert_eq!(
            (i.snd_mss, i.total_retrans, i.busy_us, i.sndbuf_limited_us, i.rwnd_limited_us),
            (1460, 3, 1000, 250, 0)
        );
        assert!(TcpInfo::parse(&b[..100]).is_none());
    }

    /// The offsets against the kernel: a connected socket's MSS and cwnd read sensibly.
    #[test]
    fn tcp_info_reads_a_live_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        use std::os::fd::AsRawFd;
        let i = TcpInfo::read(c.as_raw_fd()).unwrap();
        assert!(i.snd_mss >= 500 && i.snd_mss <= 65536, "{i:?}");
        assert!(i.snd_cwnd >= 1 && i.snd_cwnd <= 100, "{i:?}");
        assert_eq!(i.unacked, 0);
    }

    #[test]
    fn the_tcp_workers_arguments_round_trip() {
        use crate::worker::{args, args_tests::round_trip};
        let dst = Ipv4Addr::new(198, 18, 0, 1);
        let spec = SendSpec {
            dst,
            port: 5001,
            unit_bytes: 1024,
            total_bytes: 1 << 20,
            sndbuf_bytes: 2304,
            start_ns: 123_456_789_012,
            secs: 30.0,
            pacing_bytes_per_s: Some(6_250_000),
        };
        round_trip("tcp-send", spec.clone());
        round_trip("tcp-send", SendSpec { pacing_bytes_per_s: None, ..spec });
        round_trip("tcp-sink", SinkArgs { port: 5001, secs: 35.0 });
        let mut line = args("tcp-sink", &SinkArgs { port: 5001, secs: 35.0 });
        line[1..].sort();
        assert_eq!(line, ["tcp-sink", "--port", "--secs", "35.0", "5001"]);
    }
}
