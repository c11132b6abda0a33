//! The origin server (`hostsim live-worker kawai-origin`): answers the accelerator's misses
//! after a think time drawn from norm(mean, sd) (WebAxe-4's server `xact_think = norm(0.3 s,
//! 0.1 s)`, the model's `http_origin`; negative draws are 0), in user space: this kernel has no
//! netem, and the delay is the server's, not the network's. One thread, epoll, a heap of due
//! responses; on the clients' CPU, so that the accelerator's CPU does the accelerator's work only.

use super::http;
use super::os::{self, marks, Epoll};
use hostsim_engine::RngStreams;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// A response the origin owes: (due ns, fd, the connection's generation, request id, bytes).
type Due = (u64, RawFd, u32, u64, u32);

/// Descriptors wanted (the accelerator's origin connections, up to 10,000).
const NOFILE_NEED: u64 = 10_064;

#[derive(Clone, Debug)]
pub struct OriginArgs {
    pub port: u16,
    pub think_ms_mean: f64,
    pub think_ms_sd: f64,
    pub seed: u64,
    pub secs: f64,
}

struct Conn {
    gen: u32,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    out_off: usize,
    /// EPOLLOUT is registered (a write was left over).
    want_out: bool,
}

/// Serve until SIGTERM or `secs`; print `{"served": N, "errors": E}`.
pub fn run(a: &OriginArgs) -> std::io::Result<()> {
    marks::install(None);
    os::raise_nofile(NOFILE_NEED)?;
    let lfd = os::listen(a.port, 4096)?;
    os::set_nonblocking(lfd)?;
    let mut ep = Epoll::new(4096)?;
    ep.add(lfd, libc::EPOLLIN as u32)?;
    let mut rng = RngStreams::new(a.seed).stream("live/kawai/origin");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut gens: Vec<u32> = Vec::new();
    let mut due: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
    let (mut served, mut errors) = (0u64, 0u64);
    let mut ready = Vec::new();
    let mut buf = vec![0u8; 65536];
    os::set_thread_name("origin-ready");
    let deadline = Instant::now() + Duration::from_secs_f64(a.secs);
    while !marks::stopped() && Instant::now() < deadline {
        let now = os::now_ns();
        while let Some(&Reverse((t, fd, gen, id, bytes))) = due.peek() {
            if t > now {
                break;
            }
            due.pop();
            if let Some(Some(c)) = conns.get_mut(fd as usize) {
                if c.gen == gen {
                    http::write_response_head(&mut c.out, id, bytes);
                    c.out.extend_from_slice(http::body(id, bytes));
                    served += 1;
                    if flush(&ep, fd, c) {
                        drop_conn(&mut conns, fd);
                    }
                }
            }
        }
        let wait = due.peek().map_or(10_000_000, |Reverse((t, ..))| t.saturating_sub(now).min(10_000_000));
        ep.wait_ns(wait, &mut ready);
        for &(fd, ev) in &ready {
            if fd == lfd {
                while let Ok(c) = os::accept(lfd) {
                    let i = c as usize;
                    if conns.len() <= i {
                        conns.resize_with(i + 1, || None);
                        gens.resize(i + 1, 0);
                    }
                    gens[i] = gens[i].wrapping_add(1);
                    conns[i] =
                        Some(Conn { gen: gens[i], inbuf: Vec::new(), out: Vec::new(), out_off: 0, want_out: false });
                    os::set_nodelay(c);
                    ep.add(c, libc::EPOLLIN as u32)?;
                }
                continue;
            }
            let Some(Some(c)) = conns.get_mut(fd as usize) else { continue };
            let mut gone = false;
            if ev & libc::EPOLLOUT as u32 != 0 {
                gone |= flush(&ep, fd, c);
            }
            if ev & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 && !gone {
                match os::read(fd, &mut buf) {
                    Ok(0) => gone = true,
                    Ok(n) => {
                        c.inbuf.extend_from_slice(&buf[..n]);
                        let mut used = 0;
                        loop {
                            match http::parse_request(&c.inbuf[used..]) {
                                Ok(Some(r)) => {
                                    used += r.len;
                                    let think = (a.think_ms_mean
                                        + a.think_ms_sd * hostsim_workload::http::normal(&mut rng))
                                    .max(0.0);
                                    due.push(Reverse((os::now_ns() + (think * 1e6) as u64, fd, c.gen, r.id, r.bytes)));
                                }
                                Ok(None) => break,
                                Err(_) => {
                                    errors += 1;
                                    gone = true;
                                    break;
                                }
                            }
                        }
                        c.inbuf.drain(..used.min(c.inbuf.len()));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => gone = true,
                }
            }
            if gone {
                drop_conn(&mut conns, fd);
            }
        }
    }
    println!("{}", serde_json::json!({ "served": served, "errors": errors }));
    Ok(())
}

fn drop_conn(conns: &mut [Option<Conn>], fd: RawFd) {
    conns[fd as usize] = None;
    os::close(fd);
}

/// Write what is pending (EPOLLOUT interest while some is left). True = the peer is gone.
fn flush(ep: &Epoll, fd: RawFd, c: &mut Conn) -> bool {
    while c.out_off < c.out.len() {
        match os::write(fd, &c.out[c.out_off..]) {
            Ok(n) => c.out_off += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !c.want_out {
                    c.want_out = true;
                    let _ = ep.modify(fd, (libc::EPOLLIN | libc::EPOLLOUT) as u32);
                }
                return false;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
    c.out.clear();
    c.out_off = 0;
    if c.want_out {
        c.want_out = false;
        let _ = ep.modify(fd, libc::EPOLLIN as u32);
    }
    false
}
