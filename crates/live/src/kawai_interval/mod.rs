//! # `kawai-interval` on today's Linux: paper 004's interval-controlled event loop, for real
//!
//! Paper 004 (Kawai, Kadobayashi & Yamaguchi) throttles a web accelerator's poll() loop: each
//! pass measures itself and sleeps for the rest of a static cycle or for a multiple of its own
//! length, at SCHED_OTHER, and does its I/O at SCHED_FIFO (Fig. 5). Nothing in it needs a
//! patched kernel, so here it runs on this machine's kernel as a real HTTP/1.1 server, loaded by
//! real clients, and is measured with the model's metric names, so that a model twin can be
//! checked against it (not built yet: this machine's profile `veth-2cpu-linux6` has no costs for
//! poll(), epoll or TCP serving; see the docs book's page `docs/src/live/kawai-interval.md`).
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
//!   rx.rs           today's counterparts on the receive path (issue 45): GRO/NAPI on the veths,
//!                   napi_defer_hard_irqs + gro_flush_timeout, busy polling (variants `<loop>+<rx>`)
//!   experiment.rs   namespaces, RPS, the CPU group and its RT budget, points, metrics
//!   (mod.rs)        the command's options, and the workers' entry points (`hostsim live-worker kawai-*`)
//! ```
//!
//! Where it stands against the model: the loop, the decision and the quantised sleep are the
//! model's (`hostsim_workload::mechanisms::kawai_interval`, `hostsim_host::nanosleep_jiffies`),
//! the reading of Fig. 5's `conn_list` is the model's `ConnList::WithWork` (issue 27; see
//! `accel.rs`), the content mix and draws are the model's `http_clients`. What a run changes on
//! the machine and how it is undone: three namespaces `hsl-<pid>-<n>-{acc,cli,org}` with two
//! veth pairs, RPS masks, two sysctls in the clients' namespace, and a CPU group `hsl-<pid>-<n>`
//! with its `cpu.rt_runtime_us`, all in the run's ledger (`ledger.rs`); a variant with a receive
//! path of today's kernel (`+defer`, `+busy`…, `rx.rs`) also the accelerator veths' deferral
//! files and the machine-wide `net.core.busy_poll` / `busy_read`, through the same ledger;
//! workers die with the run and stop by themselves after their time limit.

pub mod accel;
pub mod clients;
pub mod counters;
pub mod experiment;
pub mod http;
pub mod interval;
pub mod origin;
pub mod os;
pub mod rx;
pub mod soak;

use crate::command::{f64_in, positive_up_to, Common};
use crate::worker::{check_range, check_secs, invalid, WorkerExe};
use std::io;
use std::net::Ipv4Addr;

/// Paper 004's Figs. 7-10 on this kernel: an HTTP accelerator's poll() loop under interval control.
///
/// A real HTTP/1.1
/// accelerator (listen, I/O and retrieve threads; the Fig. 5 loop) under open-loop clients with
/// an origin, request rate swept past saturation, interval control none / static / dynamic,
/// with and without SCHED_FIFO and with 2.5's tick-quantised sleep, 3 repetitions. Writes
/// DIR/results.csv (the model's metric names) and DIR/run.json.
#[derive(clap::Args, Clone, Debug, serde::Serialize)]
pub struct Options {
    #[command(flatten)]
    #[serde(flatten)]
    pub common: Common,
    /// Request rates, req/s, comma-separated: past saturation on the 2-vCPU machine of
    /// scenarios/live/kawai-interval.csv (~14,000 req/s without control; dynamic control
    /// saturates from 6,000) [--quick: 300].
    #[arg(long = "rates", value_name = "RPS", value_delimiter = ',', default_value = "2000,6000,10000,14000,17000",
          default_value_if("quick", "true", "300"), value_parser = f64_in(1.0, 200_000.0, "req/s"))]
    pub rates_rps: Vec<f64>,
    /// Variants, comma-separated: none, none-fifo, static-N[-nofifo|-hzH], dynamic-Kx[-nofifo|-hzH]
    /// (interval.rs), each optionally `+RX`, a receive path of today's kernel: defer-plain, gro,
    /// defer, busy-plain, busy (rx.rs; issue 45) [--quick: static-20].
    #[arg(long, value_delimiter = ',', default_value = interval::VARIANTS,
          default_value_if("quick", "true", "static-20"), value_parser = interval::variant_name)]
    pub variants: Vec<String>,
    /// Client connections held open: the paper's "about 7,000 sockets" with `--origin-conns`
    /// [--quick: 200].
    #[arg(long, default_value_t = 6000, default_value_if("quick", "true", "200"),
          value_parser = clap::value_parser!(u32).range(1..=30_000))]
    pub conns: u32,
    /// Accelerator-to-origin connections [--quick: 100].
    #[arg(long, default_value_t = 1000, default_value_if("quick", "true", "100"),
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub origin_conns: u32,
    /// The clients open their connections over this long, ms [--quick: 300].
    #[arg(long, default_value_t = 1000, default_value_if("quick", "true", "300"),
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub ramp_ms: u64,
    /// Warm-up after the ramp, before the window, seconds [--quick: 0.7].
    #[arg(long, default_value_t = 1.5, default_value_if("quick", "true", "0.7"), value_parser = f64_in(0.0, 60.0, "s"))]
    pub warmup_s: f64,
    /// Measurement window per point, seconds [--quick: 1.5].
    #[arg(long, default_value_t = 3.0, default_value_if("quick", "true", "1.5"), value_parser = f64_in(0.2, 120.0, "s"))]
    pub window_s: f64,
    /// After the window the load goes on while the window's requests finish, seconds [--quick: 2].
    #[arg(long, default_value_t = 1.0, default_value_if("quick", "true", "2"), value_parser = positive_up_to(60.0, "s"))]
    pub drain_s: f64,
    /// Variants `+defer`, `+defer-plain`: each accelerator veth's `napi_defer_hard_irqs` (rx.rs;
    /// the kernel's example in Documentation/networking/napi.rst: 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub defer_hard_irqs: u32,
    /// Variants `+defer`, `+defer-plain`: each accelerator veth's `gro_flush_timeout`, ns (the
    /// kernel's example in Documentation/networking/napi.rst: 200,000).
    #[arg(long, value_name = "NS", default_value_t = 200_000,
          value_parser = clap::value_parser!(u64).range(1000..=100_000_000))]
    pub gro_flush_timeout_ns: u64,
    /// Variants `+busy`, `+busy-plain`: `net.core.busy_poll` and `busy_read`, µs (the value
    /// Documentation/admin-guide/sysctl/net.rst recommends: 50).
    #[arg(long, value_name = "US", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub busy_poll_us: u32,
    /// No idle soaker on the accelerator's CPU (soak.rs).
    #[arg(long)]
    pub no_soak: bool,
    /// The model scenarios' WebAxe-4 values: hit ratio 0.72, origin think norm(300, 100) ms.
    #[arg(skip = 0.72)]
    pub hit_ratio: f64,
    #[arg(skip = 300.0)]
    pub think_ms_mean: f64,
    #[arg(skip = 100.0)]
    pub think_ms_sd: f64,
    /// The accelerator's CPU, and the clients' and the origin's.
    #[arg(skip = 0usize)]
    pub server_cpu: usize,
    #[arg(skip = 1usize)]
    pub client_cpu: usize,
    /// The root of the workers' random streams (each point's: this, the repetition, the rate).
    #[arg(skip = 1u64)]
    pub seed: u64,
    #[arg(skip)]
    #[serde(skip)]
    pub worker: WorkerExe,
}

/// `hostsim live-worker kawai-accel`: the accelerator of one point.
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct AccelCmd {
    #[arg(long)]
    pub variant: String,
    #[arg(long, default_value_t = 80)]
    pub port: u16,
    #[arg(long)]
    pub origin: Ipv4Addr,
    #[arg(long, default_value_t = 3128)]
    pub origin_port: u16,
    #[arg(long)]
    pub origin_conns: u32,
    #[arg(long)]
    pub secs: f64,
}

/// `hostsim live-worker kawai-origin`: the origin server.
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct OriginCmd {
    #[arg(long, default_value_t = 3128)]
    pub port: u16,
    #[arg(long)]
    pub think_ms_mean: f64,
    #[arg(long)]
    pub think_ms_sd: f64,
    #[arg(long)]
    pub seed: u64,
    #[arg(long)]
    pub secs: f64,
}

/// `hostsim live-worker kawai-clients`: the open-loop clients.
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct ClientsCmd {
    #[arg(long)]
    pub dst: Ipv4Addr,
    #[arg(long, default_value_t = 80)]
    pub port: u16,
    #[arg(long)]
    pub conns: u32,
    #[arg(long)]
    pub rate_rps: f64,
    #[arg(long)]
    pub hit_ratio: f64,
    #[arg(long, default_value_t = 1000)]
    pub ramp_ms: u64,
    #[arg(long)]
    pub seed: u64,
    #[arg(long)]
    pub secs: f64,
}

/// `hostsim live-worker kawai-soak`: the idle soaker.
#[derive(clap::Args, serde::Serialize, Clone, Debug, PartialEq)]
pub struct SoakCmd {
    #[arg(long)]
    pub secs: f64,
}

/// `hostsim live-worker kawai-accel`: arguments checked, then [`accel::run`].
pub fn worker_accel(a: &AccelCmd) -> io::Result<()> {
    check_secs(a.secs)?;
    check_range("origin-conns", f64::from(a.origin_conns), 1.0, 10_000.0)?;
    let control = interval::Control::parse(&a.variant).map_err(invalid)?;
    let AccelCmd { port, origin, origin_port, origin_conns, secs, .. } = *a;
    accel::run(&accel::AccelArgs { port, origin, origin_port, origin_conns, control, secs })
}

/// `hostsim live-worker kawai-origin`.
pub fn worker_origin(a: &OriginCmd) -> io::Result<()> {
    check_secs(a.secs)?;
    check_range("think-ms-mean", a.think_ms_mean, 0.0, 60_000.0)?;
    check_range("think-ms-sd", a.think_ms_sd, 0.0, 60_000.0)?;
    let OriginCmd { port, think_ms_mean, think_ms_sd, seed, secs } = *a;
    origin::run(&origin::OriginArgs { port, think_ms_mean, think_ms_sd, seed, secs })
}

/// `hostsim live-worker kawai-clients`.
pub fn worker_clients(a: &ClientsCmd) -> io::Result<()> {
    check_secs(a.secs)?;
    check_range("conns", f64::from(a.conns), 1.0, 30_000.0)?;
    check_range("rate-rps", a.rate_rps, 0.001, 1e6)?;
    check_range("hit-ratio", a.hit_ratio, 0.0, 1.0)?;
    check_range("ramp-ms", a.ramp_ms as f64, 0.0, 60_000.0)?;
    let ClientsCmd { dst, port, conns, rate_rps, hit_ratio, ramp_ms, seed, secs } = *a;
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
pub fn worker_soak(a: &SoakCmd) -> io::Result<()> {
    check_secs(a.secs)?;
    soak::run(a.secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::testing::{assert_refused, options};
    use crate::command::Experiment;

    #[test]
    fn the_options_are_the_experiments_configuration() {
        let o: Options = options(&[]).unwrap();
        assert_eq!((o.variants.len(), o.conns, o.origin_conns, o.points()), (17, 6000, 1000, 5 * 17 * 3));
        let q: Options = options(&["--quick"]).unwrap();
        assert_eq!((q.rates_rps.as_slice(), q.variants.as_slice()), (&[300.0][..], &["static-20".to_string()][..]));
        let got = (q.conns, q.origin_conns, q.ramp_ms, q.warmup_s, q.window_s, q.drain_s);
        assert_eq!(got, (200, 100, 300, 0.7, 1.5, 2.0));
        let e = options::<Options>(&["--variants", "static-20,static"]).unwrap_err();
        assert!(e.contains("variant `static`: expected none, none-fifo"), "{e}");
        let bad: [&[&str]; 9] = [
            &["--conns", "0"],
            &["--origin-conns", "10001"],
            &["--rates", "0.5"],
            &["--window-s", "0.1"],
            &["--defer-hard-irqs", "0"],
            &["--gro-flush-timeout-ns", "999"],
            &["--busy-poll-us", "0"],
            &["--variants", "none+fast"],
            &["--variants", "stat+defer"],
        ];
        assert_refused::<Options>(&bad);
    }

    /// Today's receive paths ride on a loop's variant; their knobs default to the kernel
    /// documentation's examples.
    #[test]
    fn a_variant_may_name_a_receive_path_of_todays_kernel() {
        let o: Options = options(&["--variants", "none,none+gro,none+defer,dynamic-2x+busy"]).unwrap();
        assert_eq!(o.variants.len(), 4);
        assert_eq!((o.defer_hard_irqs, o.gro_flush_timeout_ns, o.busy_poll_us), (2, 200_000, 50));
        let e = options::<Options>(&["--variants", "none+plain"]).unwrap_err();
        assert!(e.contains("the receive path after `+` is one of defer-plain, gro, defer, busy-plain, busy"), "{e}");
    }
}
