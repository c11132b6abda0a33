//! # `kawai-interval` on today's Linux: paper 004's interval-controlled event loop, for real
//!
//! Paper 004 (Kawai, Kadobayashi & Yamaguchi) throttles a web accelerator's poll() loop: each
//! pass measures itself and sleeps for the rest of a static cycle or for a multiple of its own
//! length, at SCHED_OTHER, and does its I/O at SCHED_FIFO (Fig. 5). Nothing in it needs a
//! patched kernel, so here it runs on this machine's kernel as a real HTTP/1.1 server, loaded by
//! real clients, and is measured with the model's metric names, so that a model twin can be
//! checked against it (not built yet: this machine's profile `veth-2cpu-linux6` has no costs for
//! poll(), epoll or TCP serving; see the README's `hostsim live kawai-interval` section).
//!
//! ```text
//!   interval.rs     the rules: the model's decision (static / dynamic k×), SCHED_FIFO or not,
//!                   2.5's tick-quantised sleep; the variants
//!   accel.rs        the accelerator: listen, I/O and retrieve threads, the Fig. 5 loop over the
//!                   connections with work (epoll gathers, poll() covers the list)
//!   origin.rs       the origin server: think time norm(300, 100) ms in user space
//!   clients.rs      the load: open-loop Poisson requests over persistent connections, every
//!                   response checked, response time from the scheduled arrival
//!   soak.rs         a SCHED_IDLE spinner on the server's CPU: unused time measured, not lent
//!   http.rs         requests, responses and their bodies on the wire (httparse)
//!   counters.rs     the accelerator's counters and their window marks
//!   os.rs           epoll, poll, clocks, sleeps, sched_setscheduler
//!   experiment.rs   namespaces, RPS, the CPU group and its RT budget, points, metrics
//! ```
//!
//! Where it stands against the model: the loop, the decision and the quantised sleep are the
//! model's (`hostsim_workload::mechanisms::kawai_interval`, `hostsim_host::nanosleep_jiffies`),
//! the reading of Fig. 5's `conn_list` is the model's `ConnList::WithWork` (issue 27; see
//! `accel.rs`), the content mix and draws are the model's `http_clients`. What a run changes on
//! the machine and how it is undone: three namespaces `hsl-<pid>-<n>-{acc,cli,org}` with two
//! veth pairs, RPS masks, two sysctls in the clients' namespace, and a CPU group `hsl-<pid>-<n>`
//! with its `cpu.rt_runtime_us`, all in the run's ledger (`ledger.rs`); workers die with the run
//! and stop by themselves after their time limit.

pub mod accel;
pub mod clients;
pub mod counters;
pub mod experiment;
pub mod http;
pub mod interval;
pub mod origin;
pub mod os;
pub mod soak;

use std::io;
use std::net::Ipv4Addr;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn check_range(name: &str, v: f64, lo: f64, hi: f64) -> io::Result<()> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(invalid(format!("--{name}: expected {lo}..={hi}, got {v}")))
    }
}

/// `hostsim live-worker kawai-accel`: arguments checked, then [`accel::run`].
pub fn worker_accel(
    variant: &str,
    port: u16,
    origin: Ipv4Addr,
    origin_port: u16,
    origin_conns: u32,
    secs: f64,
) -> io::Result<()> {
    check_range("secs", secs, 0.0, crate::worker::SECS_MAX)?;
    check_range("origin-conns", f64::from(origin_conns), 1.0, 10_000.0)?;
    let control = interval::Control::parse(variant).map_err(invalid)?;
    accel::run(&accel::AccelArgs { port, origin, origin_port, origin_conns, control, secs })
}

/// `hostsim live-worker kawai-origin`.
pub fn worker_origin(port: u16, think_ms_mean: f64, think_ms_sd: f64, seed: u64, secs: f64) -> io::Result<()> {
    check_range("secs", secs, 0.0, crate::worker::SECS_MAX)?;
    check_range("think-ms-mean", think_ms_mean, 0.0, 60_000.0)?;
    check_range("think-ms-sd", think_ms_sd, 0.0, 60_000.0)?;
    origin::run(&origin::OriginArgs { port, think_ms_mean, think_ms_sd, seed, secs })
}

/// `hostsim live-worker kawai-clients`.
#[allow(clippy::too_many_arguments)]
pub fn worker_clients(
    dst: Ipv4Addr,
    port: u16,
    conns: u32,
    rate_rps: f64,
    hit_ratio: f64,
    ramp_ms: u64,
    seed: u64,
    secs: f64,
) -> io::Result<()> {
    check_range("secs", secs, 0.0, crate::worker::SECS_MAX)?;
    check_range("conns", f64::from(conns), 1.0, 30_000.0)?;
    check_range("rate-rps", rate_rps, 0.001, 1e6)?;
    check_range("hit-ratio", hit_ratio, 0.0, 1.0)?;
    check_range("ramp-ms", ramp_ms as f64, 0.0, 60_000.0)?;
    clients::run(&clients::ClientArgs {
        dst,
        port,
        conns,
        rate_rps,
        hit_ratio,
        ramp_ms,
        seed,
        secs,
        conn_uses_zipf: 16,
    })
}

/// `hostsim live-worker kawai-soak`.
pub fn worker_soak(secs: f64) -> io::Result<()> {
    check_range("secs", secs, 0.0, crate::worker::SECS_MAX)?;
    soak::run(secs)
}
