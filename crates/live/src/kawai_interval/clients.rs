//! The load generator (`hostsim live-worker kawai-clients`): the model's `http_clients`
//! (`crates/workload/src/http.rs`) as a real program, so that live and model are driven alike.
//!
//! - **Open loop**: requests arrive as a Poisson process at `rate_rps`, whatever the
//!   accelerator does; each goes out on an idle persistent connection drawn at random, and one
//!   that finds none is counted (`no_conn`), never queued. A response's time runs from the
//!   request's *scheduled* arrival to its last byte, so a generator that falls behind cannot
//!   hide the wait (coordinated omission, as wrk2 corrects it); how late requests left is
//!   reported (`lag`), the evidence that the generator was not the bottleneck.
//! - Each connection carries zipf(16) requests (WebAxe-4's `pconn_use_lmt`), then the client
//!   closes it and opens another; the initial connections are opened over `ramp_ms` and requests
//!   start after it.
//! - Object sizes follow WebAxe-4's content mix and hits the hit ratio: the model's own
//!   `object_bytes` and draws, put in the URL (`http.rs`).
//! - Every response is checked whole (status, id, length, every byte: `http::body_ok`).
//!
//! Why not h2load, wrk2 or oha: h2load's `--rps` paces each connection on its own and times a
//! request from when it was sent (a late generator hides its lateness); wrk2 corrects that but is
//! not packaged by Debian, and neither it nor oha draws WebAxe-4's sizes and hits per request,
//! checks bodies, or reports hits and misses apart. This one is the model's source, so the twin
//! is driven by the same process.
//!
//! The window is set by the parent's signals (SIGUSR1 start, SIGUSR2 end, their times taken in
//! the handlers): requests *scheduled* inside it are measured; after it the load goes on until
//! SIGTERM, so that the window's last requests meet the same load.

use super::http;
use super::os::{self, marks, Epoll};
use hostsim_engine::RngStreams;
use hostsim_workload::HttpConfig;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ClientArgs {
    pub dst: Ipv4Addr,
    pub port: u16,
    pub conns: u32,
    pub rate_rps: f64,
    pub hit_ratio: f64,
    pub ramp_ms: u64,
    pub seed: u64,
    pub secs: f64,
    /// Requests per connection: zipf(n) on 1..=n.
    pub conn_uses_zipf: u32,
}

static T_START: AtomicU64 = AtomicU64::new(u64::MAX);
static T_END: AtomicU64 = AtomicU64::new(u64::MAX);

fn on_mark(phase: u32) {
    let t = os::now_ns();
    let _ = if phase == 1 {
        T_START.compare_exchange(u64::MAX, t, Ordering::SeqCst, Ordering::SeqCst)
    } else {
        T_END.compare_exchange(u64::MAX, t, Ordering::SeqCst, Ordering::SeqCst)
    };
}

#[derive(Clone, Copy)]
struct Req {
    id: u64,
    bytes: u32,
    hit: bool,
    /// Scheduled arrival (ns).
    at: u64,
    /// In the measurement window.
    window: bool,
}

enum State {
    Connecting,
    Idle,
    Busy { req: Req, head: Option<http::ResponseHead>, got: usize },
}

struct Conn {
    fd: RawFd,
    state: State,
    uses_left: u32,
    inbuf: Vec<u8>,
    /// Index in `idle` while idle.
    idle_at: usize,
}

#[derive(Default)]
struct Stats {
    offered: u64,
    sent: u64,
    no_conn: u64,
    completed: u64,
    errors: u64,
    reconnects: u64,
    connect_errors: u64,
    resp_us: Vec<u32>,
    hit_us: Vec<u32>,
    miss_us: Vec<u32>,
    lag_us: Vec<u32>,
}

fn quantile(v: &mut [u32], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    f64::from(v[i]) / 1000.0
}

fn mean_ms(v: &[u32]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64 / 1000.0
}

const IN: u32 = libc::EPOLLIN as u32;
const OUT: u32 = libc::EPOLLOUT as u32;

/// Run the clients until SIGTERM or `secs`; print the window's statistics as JSON.
pub fn run(a: &ClientArgs) -> std::io::Result<()> {
    marks::install(Some(on_mark));
    os::raise_nofile(u64::from(a.conns) + 64)?;
    let streams = RngStreams::new(a.seed);
    let mut rng = streams.stream("live/kawai/clients");
    let mut conn_rng = streams.stream("live/kawai/clients/conns");
    let cfg = HttpConfig { hit_ratio: a.hit_ratio, ..HttpConfig::default() };
    let mut ep = Epoll::new(4096)?;
    let mut conns: Vec<Conn> = Vec::with_capacity(a.conns as usize);
    let mut by_fd: Vec<usize> = Vec::new();
    let mut idle: Vec<usize> = Vec::new();
    let mut st = Stats::default();
    let t0 = os::now_ns();
    let ramp_ns = a.ramp_ms * 1_000_000;
    // Connection i opens at t0 + ramp · i / conns.
    let mut opened = 0usize;
    let mut next_at = t0 + ramp_ns;
    let mean_gap_ns = 1e9 / a.rate_rps.max(1e-3);
    let mut next_id: u64 = 1;
    let mut ready = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut reqbuf = Vec::with_capacity(512);
    let deadline = Instant::now() + Duration::from_secs_f64(a.secs);
    let open = |ep: &Epoll,
                conns: &mut Vec<Conn>,
                by_fd: &mut Vec<usize>,
                slot: Option<usize>,
                rng: &mut hostsim_engine::Rng|
     -> std::io::Result<()> {
        let fd = os::connect_nb(a.dst, a.port)?;
        ep.add(fd, IN | OUT)?;
        let uses = hostsim_workload::http::zipf(rng, a.conn_uses_zipf);
        let c = Conn { fd, state: State::Connecting, uses_left: uses, inbuf: Vec::new(), idle_at: usize::MAX };
        let i = match slot {
            Some(i) => {
                conns[i] = c;
                i
            }
            None => {
                conns.push(c);
                conns.len() - 1
            }
        };
        if by_fd.len() <= fd as usize {
            by_fd.resize(fd as usize + 1, usize::MAX);
        }
        by_fd[fd as usize] = i;
        Ok(())
    };
    while !marks::stopped() && Instant::now() < deadline {
        let now = os::now_ns();
        // Open the initial connections along the ramp.
        while opened < a.conns as usize && now >= t0 + ramp_ns * opened as u64 / u64::from(a.conns.max(1)) {
            if open(&ep, &mut conns, &mut by_fd, None, &mut conn_rng).is_err() {
                st.connect_errors += 1;
            }
            opened += 1;
        }
        // Arrivals due.
        let (ws, we) = (T_START.load(Ordering::SeqCst), T_END.load(Ordering::SeqCst));
        while next_at <= now {
            let window = next_at >= ws && next_at < we;
            let bytes = hostsim_workload::http::object_bytes(&cfg, &mut rng).min(http::OBJECT_BYTES_MAX);
            let hit = rng.chance(a.hit_ratio);
            if window {
                st.offered += 1;
            }
            if idle.is_empty() {
                if window {
                    st.no_conn += 1;
                }
            } else {
                let k = rng.below(idle.len() as u64) as usize;
                let i = idle.swap_remove(k);
                if k < idle.len() {
                    conns[idle[k]].idle_at = k;
                }
                let req = Req { id: next_id, bytes, hit, at: next_at, window };
                next_id += 1;
                reqbuf.clear();
                http::write_request(&mut reqbuf, req.id, bytes, hit);
                let c = &mut conns[i];
                c.idle_at = usize::MAX;
                // ~300 bytes into an idle connection: written whole, or the connection is broken.
                if os::write(c.fd, &reqbuf).map_or(true, |n| n != reqbuf.len()) {
                    st.errors += u64::from(window);
                    reconnect(&ep, &mut conns, &mut by_fd, i, &mut st, &open, &mut conn_rng);
                } else {
                    c.state = State::Busy { req, head: None, got: 0 };
                    if window {
                        st.sent += 1;
                        st.lag_us.push(((now - req.at) / 1000).min(u64::from(u32::MAX)) as u32);
                    }
                }
            }
            next_at += rng.exp(mean_gap_ns).max(1.0) as u64;
        }
        let wait = next_at.saturating_sub(os::now_ns()).min(5_000_000);
        ep.wait_ns(wait, &mut ready);
        for &(fd, ev) in &ready {
            let Some(&i) = by_fd.get(fd as usize) else { continue };
            if i >= conns.len() || conns[i].fd != fd {
                continue;
            }
            match conns[i].state {
                State::Connecting => {
                    if ev & (OUT | libc::EPOLLERR as u32 | libc::EPOLLHUP as u32) == 0 {
                        continue;
                    }
                    if os::so_error(fd) != 0 {
                        st.connect_errors += 1;
                        reconnect(&ep, &mut conns, &mut by_fd, i, &mut st, &open, &mut conn_rng);
                        continue;
                    }
                    let _ = ep.modify(fd, IN);
                    conns[i].state = State::Idle;
                    conns[i].idle_at = idle.len();
                    idle.push(i);
                }
                State::Idle => {
                    // Nothing is expected: EOF (the server closed) or an error.
                    match os::read(fd, &mut buf) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        _ => {
                            let k = conns[i].idle_at;
                            idle.swap_remove(k);
                            if k < idle.len() {
                                conns[idle[k]].idle_at = k;
                            }
                            reconnect(&ep, &mut conns, &mut by_fd, i, &mut st, &open, &mut conn_rng);
                        }
                    }
                }
                State::Busy { .. } => {
                    let r = match os::read(fd, &mut buf) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                        Ok(0) | Err(_) => Err(()),
                        Ok(n) => receive(&mut conns[i], &buf[..n]),
                    };
                    match r {
                        Ok(None) => {}
                        Ok(Some(req)) => {
                            if req.window {
                                let us = ((os::now_ns() - req.at) / 1000).min(u64::from(u32::MAX)) as u32;
                                st.completed += 1;
                                st.resp_us.push(us);
                                if req.hit {
                                    st.hit_us.push(us)
                                } else {
                                    st.miss_us.push(us)
                                }
                            }
                            let c = &mut conns[i];
                            c.uses_left = c.uses_left.saturating_sub(1);
                            if c.uses_left == 0 {
                                reconnect(&ep, &mut conns, &mut by_fd, i, &mut st, &open, &mut conn_rng);
                            } else {
                                c.state = State::Idle;
                                c.idle_at = idle.len();
                                idle.push(i);
                            }
                        }
                        Err(()) => {
                            if let State::Busy { req, .. } = conns[i].state {
                                st.errors += u64::from(req.window);
                            }
                            reconnect(&ep, &mut conns, &mut by_fd, i, &mut st, &open, &mut conn_rng);
                        }
                    }
                }
            }
        }
    }
    let window_s = match (T_START.load(Ordering::SeqCst), T_END.load(Ordering::SeqCst)) {
        (s, e) if s != u64::MAX && e != u64::MAX && e > s => (e - s) as f64 * 1e-9,
        _ => f64::NAN,
    };
    let outstanding = conns.iter().filter(|c| matches!(c.state, State::Busy { req, .. } if req.window)).count();
    let open_now = conns.iter().filter(|c| !matches!(c.state, State::Connecting)).count();
    let lag_max = st.lag_us.iter().copied().max().map_or(f64::NAN, |x| f64::from(x) / 1000.0);
    let j = serde_json::json!({
        "window_s": window_s,
        "offered": st.offered, "sent": st.sent, "no_conn": st.no_conn, "completed": st.completed,
        "incomplete": outstanding, "errors": st.errors, "reconnects": st.reconnects,
        "connect_errors": st.connect_errors, "conns_open": open_now,
        "resp_ms_mean": mean_ms(&st.resp_us), "resp_ms_p50": quantile(&mut st.resp_us, 0.5),
        "resp_ms_p90": quantile(&mut st.resp_us, 0.9), "resp_ms_p99": quantile(&mut st.resp_us, 0.99),
        "resp_hit_ms_mean": mean_ms(&st.hit_us), "resp_miss_ms_mean": mean_ms(&st.miss_us),
        "lag_ms_mean": mean_ms(&st.lag_us), "lag_ms_p99": quantile(&mut st.lag_us, 0.99), "lag_ms_max": lag_max,
    });
    println!("{}", j.to_string().replace("NaN", "null"));
    Ok(())
}

/// Bytes of a response arrived: the request it completes, once whole and correct.
fn receive(c: &mut Conn, data: &[u8]) -> Result<Option<Req>, ()> {
    let State::Busy { req, head, got } = &mut c.state else { return Err(()) };
    let mut body = data;
    if head.is_none() {
        c.inbuf.extend_from_slice(data);
        match http::parse_response_head(&c.inbuf) {
            Ok(None) => return Ok(None),
            Err(_) => return Err(()),
            Ok(Some(h)) => {
                if h.id != req.id || h.bytes != req.bytes {
                    return Err(());
                }
                *head = Some(h);
                let rest = c.inbuf.split_off(h.len);
                c.inbuf.clear();
                if !http::body_ok(req.id, 0, &rest) || rest.len() > req.bytes as usize {
                    return Err(());
                }
                *got = rest.len();
                body = &[];
            }
        }
    }
    if !body.is_empty() {
        if *got + body.len() > req.bytes as usize || !http::body_ok(req.id, *got, body) {
            return Err(());
        }
        *got += body.len();
    }
    if *got == req.bytes as usize {
        return Ok(Some(*req));
    }
    Ok(None)
}

/// Close connection `i` and open another in its slot.
fn reconnect(
    ep: &Epoll,
    conns: &mut Vec<Conn>,
    by_fd: &mut Vec<usize>,
    i: usize,
    st: &mut Stats,
    open: &impl Fn(&Epoll, &mut Vec<Conn>, &mut Vec<usize>, Option<usize>, &mut hostsim_engine::Rng) -> std::io::Result<()>,
    rng: &mut hostsim_engine::Rng,
) {
    let fd = conns[i].fd;
    if fd >= 0 {
        if let Some(x) = by_fd.get_mut(fd as usize) {
            *x = usize::MAX;
        }
        os::close(fd);
    }
    st.reconnects += 1;
    if open(ep, conns, by_fd, Some(i), rng).is_err() {
        st.connect_errors += 1;
        conns[i].state = State::Connecting;
        conns[i].fd = -1;
    }
}
