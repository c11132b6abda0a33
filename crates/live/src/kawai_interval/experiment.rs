//! `hostsim live kawai-interval`: paper 004's Figs. 7–10 on this machine's kernel.
//!
//! ```text
//!  ns cli (CPU 1)                  ns acc (CPU 0)                              ns org (CPU 1)
//!  clients: C persistent conns ─veth─ eth0 ┐ accelerator: listen, I/O, retrieve ┌ eth1 ─veth─ origin:
//!  Poisson requests, open loop              └ (Fig. 5 loops)  + idle soaker      ┘      think norm(300,100) ms
//! ```
//!
//! The accelerator is pinned to CPU 0, the clients and the origin (which stand for the paper's
//! client and server PCs) to CPU 1. A veth delivers on the CPU that transmits, so RPS on each
//! namespace's veth sends receive processing to its own side's CPU: the accelerator's CPU does
//! the accelerator's protocol work, as the paper's one-CPU machine did. Every process is in the
//! run's CPU group (largest weight; `cgroup.rs`), which also gets the real-time budget that its
//! SCHED_FIFO loops need (see [`rt_budget`]). Each point starts an origin, an accelerator of the
//! point's variant, the soaker (`soak.rs`) and the clients afresh, waits for the connections
//! and a warm-up, measures a window marked by signals in every process while snapshotting
//! `/proc`, lets the window's last requests finish under the same load, and stops everything.
//! Results use the model's metric names (`crates/host/src/metrics/app.rs`), with the accelerator
//! named `chamomile` and the clients `clients`, as in the kawai scenarios.

use super::rx::{self, RxKnobs, RxPath, RxState};
use super::{AccelCmd, ClientsCmd, Options, OriginCmd, SoakCmd};
use crate::cgroup::CpuGroup;
use crate::command::{Common, Experiment};
use crate::harness::{failed, LiveError, LiveRun, Netns, Point, Shown};
use crate::netns::Veth;
use crate::procfs::{self, CpuTimes};
use crate::worker::{self, Placement, Worker};
use std::collections::BTreeMap;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

/// The swept key, named as in the model scenarios so the two overlay.
pub const RATE_KEY: &str = "traffic.clients.http.rate_rps";
pub const HTTP_PORT: u16 = 80;
pub const ORIGIN_PORT: u16 = 3128;
const ACC_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 2, 1);
const ORG_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 3, 2);
/// The largest share of each rt_period the run's group takes for its SCHED_FIFO threads.
pub const RT_SHARE_MAX: f64 = 0.9;
/// How long the RT budget write is retried while a removed group's budget is being released.
const RT_RETRY_S: u64 = 5;

/// The namespaces and CPU group of one run (recorded in its ledger; `LiveRun::finish` removes them).
pub struct Setup {
    pub acc: Netns,
    pub cli: Netns,
    pub org: Netns,
    pub group: Option<CpuGroup>,
    group_procs: Option<File>,
    /// What the group was given: `rt_runtime_us` of `rt_period_us` (None: no RT budget files).
    pub rt: Option<(u64, u64)>,
}

/// The real-time budget that fits: cgroup v1 RT group scheduling gives a child group no RT time
/// unless `cpu.rt_runtime_us` is set (SCHED_FIFO then fails with EPERM), and a child's
/// runtime/period must fit, with its siblings', within its parent's. The group takes what is free
/// under its parent, at most `RT_SHARE_MAX` of each period (so that, as the kernel's own 95 %
/// throttle does for the root, a runaway FIFO loop leaves the CPU's other tasks 10 %).
/// Returns the runtime to write, or why there is none.
pub fn rt_budget(
    parent_runtime_us: i64,
    parent_period_us: u64,
    siblings: &[(i64, u64)],
    period_us: u64,
) -> Result<u64, String> {
    // The kernel's own arithmetic (kernel/sched/rt.c `tg_rt_schedulable`, `to_ratio`):
    // ratio = runtime << 20 / period, children's ratios summed against the parent's.
    const BW_SHIFT: u32 = 20;
    let ratio = |runtime: i64, period: u64| -> u64 {
        if runtime < 0 {
            1 << BW_SHIFT
        } else {
            ((runtime as u64) << BW_SHIFT) / period.max(1)
        }
    };
    let parent = ratio(parent_runtime_us, parent_period_us);
    let used: u64 = siblings.iter().map(|&(r, p)| ratio(r.max(0), p)).sum();
    let cap = (RT_SHARE_MAX * f64::from(1u32 << BW_SHIFT)) as u64;
    let free = parent.saturating_sub(used).min(cap);
    // floor(free × period): its own ratio is then at most `free`.
    let us = ((u128::from(free) * u128::from(period_us)) >> BW_SHIFT) as u64;
    if us == 0 {
        let f = |r: u64| r as f64 / f64::from(1u32 << BW_SHIFT);
        return Err(format!(
            "no real-time budget left under the parent group ({:.3} of each period, siblings use {:.3})",
            f(parent),
            f(used)
        ));
    }
    Ok(us)
}

fn read_num(p: &Path) -> Option<i64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Give `group` the real-time budget that fits under its parent (see [`rt_budget`]).
fn give_rt_budget(group: &CpuGroup) -> Result<Option<(u64, u64)>, LiveError> {
    let path = group.path();
    let file = path.join("cpu.rt_runtime_us");
    if !file.exists() {
        return Ok(None); // no RT group scheduling here: SCHED_FIFO is not limited by groups
    }
    let parent = path.parent().ok_or_else(|| failed("the CPU group has no parent"))?;
    let pr = read_num(&parent.join("cpu.rt_runtime_us"))
        .ok_or_else(|| failed(format!("{}: unreadable", parent.join("cpu.rt_runtime_us").display())))?;
    let pp = read_num(&parent.join("cpu.rt_period_us")).unwrap_or(1_000_000) as u64;
    let mut sib = Vec::new();
    for e in std::fs::read_dir(parent).map_err(|e| failed(format!("{}: {e}", parent.display())))?.flatten() {
        if e.path() != path && e.path().is_dir() {
            if let (Some(r), Some(p)) =
                (read_num(&e.path().join("cpu.rt_runtime_us")), read_num(&e.path().join("cpu.rt_period_us")))
            {
                sib.push((r, p as u64));
            }
        }
    }
    let period = read_num(&path.join("cpu.rt_period_us")).unwrap_or(1_000_000) as u64;
    let us = rt_budget(pr, pp, &sib, period).map_err(LiveError::Unsupported)?;
    // A group removed a moment ago (the last run's, or another experiment's) keeps its budget in
    // its parent's sum until its release, which the kernel does after rmdir returns (css release
    // work): EINVAL until then. Retry for a while rather than take less.
    let end = Instant::now() + Duration::from_secs(RT_RETRY_S);
    loop {
        match std::fs::write(&file, us.to_string()) {
            Ok(()) => return Ok(Some((us, period))),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => {
                return Err(failed(format!(
                    "{}: {e} (writing {us} of {period} us; the parent's budget is taken by groups not listed in {})",
                    file.display(),
                    parent.display()
                )))
            }
        }
    }
}

/// Create the namespaces, veths, RPS masks, the clients' port range, and the CPU group with its
/// real-time budget, all through `run` (recorded in its ledger).
pub fn setup(cfg: &Options, run: &mut LiveRun) -> Result<Setup, LiveError> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cfg.server_cpu >= ncpu || cfg.client_cpu >= ncpu || cfg.server_cpu == cfg.client_cpu {
        return Err(LiveError::Unsupported(format!(
            "needs two CPUs ({} and {}); this machine has {ncpu}",
            cfg.server_cpu, cfg.client_cpu
        )));
    }
    let (acc, cli, org) = (run.netns("acc")?, run.netns("cli")?, run.netns("org")?);
    run.veth(&Veth {
        ns_a: acc.name.clone(),
        a: "eth0".into(),
        addr_a: format!("{ACC_ADDR}/24"),
        ns_b: cli.name.clone(),
        b: "eth0".into(),
        addr_b: "198.18.2.2/24".into(),
    })?;
    run.veth(&Veth {
        ns_a: acc.name.clone(),
        a: "eth1".into(),
        addr_a: "198.18.3.1/24".into(),
        ns_b: org.name.clone(),
        b: "eth0".into(),
        addr_b: format!("{ORG_ADDR}/24"),
    })?;
    for (ns, dev, cpu) in [
        (&acc, "eth0", cfg.server_cpu),
        (&acc, "eth1", cfg.server_cpu),
        (&cli, "eth0", cfg.client_cpu),
        (&org, "eth0", cfg.client_cpu),
    ] {
        run.set_rps(ns, dev, 1 << cpu)?;
    }
    // The clients close a connection after zipf(16) requests and open another: ~1,000 a second
    // at the top rates, each leaving a TIME_WAIT on the client side for 60 s. Reusing them
    // (tcp_tw_reuse = 1, timestamps decide) and the whole port range keep connect() working.
    run.write_value(Some(&cli), "/proc/sys/net/ipv4/ip_local_port_range", "1024 65535")?;
    run.write_value(Some(&cli), "/proc/sys/net/ipv4/tcp_tw_reuse", "1")?;
    let group = match run.cpu_group() {
        Ok(g) => Some(g),
        Err(LiveError::Unsupported(e)) => {
            run.progress(format!("hostsim live: running without a CPU cgroup: {e}"));
            None
        }
        Err(e) => return Err(e),
    };
    let rt = match &group {
        Some(g) => give_rt_budget(g)?,
        None => None,
    };
    if let Some((us, p)) = rt {
        run.set_info(
            "rt_budget",
            serde_json::json!({ "group_rt_runtime_us": us, "group_rt_period_us": p, "share_max": RT_SHARE_MAX }),
        );
    }
    let group_procs = match &group {
        Some(g) => Some(
            std::fs::OpenOptions::new()
                .write(true)
                .open(g.procs_file())
                .map_err(|e| failed(format!("{}: {e}", g.procs_file().display())))?,
        ),
        None => None,
    };
    Ok(Setup { acc, cli, org, group, group_procs, rt })
}

/// Wait (≤ `secs`) until process `w` names itself `name` (its set-up is done), or fail if it exits.
fn wait_ready(run: &LiveRun, w: &mut Worker, name: &str, secs: f64) -> Result<(), LiveError> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    loop {
        if std::fs::read_to_string(format!("/proc/{}/comm", w.pid())).is_ok_and(|c| c.trim() == name) {
            return Ok(());
        }
        if let Some(s) = w.exited() {
            return Err(failed(format!("{} exited during its set-up ({s}); its error is above", w.name)));
        }
        if Instant::now() > end {
            return Err(failed(format!("{} was not ready within {secs} s", w.name)));
        }
        run.sleep(Duration::from_millis(10))?;
    }
}

/// CPU time (ns) of every thread of `pid`, by thread name (summed over threads of one name).
fn thread_ns(pid: u32) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return m };
    for e in rd.flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default().trim().to_string();
        let ns: u64 = std::fs::read_to_string(p.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        *m.entry(comm).or_insert(0) += ns;
    }
    m
}

struct Snap {
    t: Instant,
    stat: Vec<CpuTimes>,
    accel: BTreeMap<String, u64>,
    accel_ticks: (u64, u64),
    soak_ns: u64,
    /// The soaker's user ticks (/proc/PID/stat): its spinning alone; a tick that lands in a
    /// softirq run on top of it counts as system time (no IRQ time accounting here).
    soak_utime: u64,
    clients_ns: u64,
    origin_ns: u64,
}

fn snap(accel: u32, soak: Option<u32>, clients: u32, origin: u32) -> Snap {
    let total = |pid: u32| thread_ns(pid).values().sum::<u64>();
    let st = procfs::read_pid_stat(accel);
    Snap {
        t: Instant::now(),
        stat: procfs::read_stat().unwrap_or_default(),
        accel: thread_ns(accel),
        accel_ticks: st.map_or((0, 0), |s| (s.utime, s.stime)),
        soak_ns: soak.map_or(0, total),
        soak_utime: soak.and_then(procfs::read_pid_stat).map_or(0, |s| s.utime),
        clients_ns: total(clients),
        origin_ns: total(origin),
    }
}

/// One point: the metrics of variant `variant` at `rate` (repetition `rep` seeds the draws).
/// The variant's receive path (`rx.rs`, after a `+`) is put in place first, through `rxs`.
pub fn run_point(
    cfg: &Options,
    run: &LiveRun,
    s: &Setup,
    rxs: &mut RxState,
    variant: &str,
    rate: f64,
    rep: u32,
) -> Result<BTreeMap<String, f64>, LiveError> {
    let (lp, rx_path) = rx::split_variant(variant).map_err(failed)?;
    let knobs = RxKnobs {
        defer_hard_irqs: cfg.defer_hard_irqs,
        gro_flush_timeout_ns: cfg.gro_flush_timeout_ns,
        busy_poll_us: cfg.busy_poll_us,
    };
    // The accelerator's veths' peers: the clients' and the origin's ends.
    rxs.apply(run, &s.acc, &[(&s.cli, "eth0"), (&s.org, "eth0")], rx_path, &knobs)?;
    let secs = cfg.ramp_ms as f64 / 1e3 + cfg.warmup_s + cfg.window_s + cfg.drain_s + 30.0; // each worker's own limit
    let seed = cfg.seed.wrapping_mul(1_000_003).wrapping_add(u64::from(rep) * 7919).wrapping_add(rate as u64);
    let (acc, cli, org) = (s.acc.file()?, s.cli.file()?, s.org.file()?);
    let cg = s.group_procs.as_ref();
    let place = |ns, cpu| Placement { netns: ns, cpu: Some(cpu), nice: 0, slice_ns: None, cgroup: cg, cgroup2: None };
    let mut origin = worker::spawn(
        "origin",
        &cfg.worker,
        &worker::args(
            "kawai-origin",
            &OriginCmd {
                port: ORIGIN_PORT,
                think_ms_mean: cfg.think_ms_mean,
                think_ms_sd: cfg.think_ms_sd,
                seed,
                secs,
            },
        ),
        &place(&org, cfg.client_cpu),
    )
    .map_err(failed)?;
    wait_ready(run, &mut origin, "origin-ready", 5.0)?;
    let mut accel = worker::spawn(
        "accelerator",
        &cfg.worker,
        &worker::args(
            "kawai-accel",
            &AccelCmd {
                variant: lp.to_string(),
                port: HTTP_PORT,
                origin: ORG_ADDR,
                origin_port: ORIGIN_PORT,
                origin_conns: cfg.origin_conns,
                secs,
            },
        ),
        &place(&acc, cfg.server_cpu),
    )
    .map_err(failed)?;
    wait_ready(run, &mut accel, "accel-ready", 15.0)?;
    let soak = if !cfg.no_soak {
        Some(
            worker::spawn(
                "soaker",
                &cfg.worker,
                &worker::args("kawai-soak", &SoakCmd { secs }),
                &place(&acc, cfg.server_cpu),
            )
            .map_err(failed)?,
        )
    } else {
        None
    };
    let clients = worker::spawn(
        "clients",
        &cfg.worker,
        &worker::args(
            "kawai-clients",
            &ClientsCmd {
                dst: ACC_ADDR,
                port: HTTP_PORT,
                conns: cfg.conns,
                rate_rps: rate,
                hit_ratio: cfg.hit_ratio,
                ramp_ms: cfg.ramp_ms,
                seed,
                secs,
            },
        ),
        &place(&cli, cfg.client_cpu),
    )
    .map_err(failed)?;
    run.sleep(Duration::from_secs_f64(cfg.ramp_ms as f64 / 1e3 + cfg.warmup_s))?;
    let soak_pid = soak.as_ref().map(Worker::pid);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    for w in [&accel, &clients] {
        w.signal(libc::SIGUSR1);
    }
    let a = snap(accel.pid(), soak_pid, clients.pid(), origin.pid());
    let rx_a = rx::counters(&s.acc, &acc);
    run.sleep(Duration::from_secs_f64(cfg.window_s))?;
    for w in [&accel, &clients] {
        w.signal(libc::SIGUSR2);
    }
    let b = snap(accel.pid(), soak_pid, clients.pid(), origin.pid());
    let rx_b = rx::counters(&s.acc, &acc);
    run.sleep(Duration::from_secs_f64(cfg.drain_s))?;
    let grace = Duration::from_secs(5);
    let cj = clients.finish_json(grace).map_err(failed)?;
    let aj = accel.finish_json(grace).map_err(failed)?;
    let oj = origin.finish_json(grace).map_err(failed)?;
    if let Some(w) = soak {
        w.finish_json(grace).map_err(failed)?;
    }
    let mut m = metrics(&a, &b, &cj, &aj, &oj, cfg.server_cpu, cfg.client_cpu, soak_pid.is_some());
    m.insert("loadavg_1m".into(), load.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(f64::NAN));
    m.insert("target_rps".into(), rate);
    rx::metrics(&rx_a, &rx_b, b.t.duration_since(a.t).as_secs_f64().max(1e-9), rx_path, &mut m);
    Ok(m)
}

#[allow(clippy::too_many_arguments)]
fn metrics(
    a: &Snap,
    b: &Snap,
    cj: &serde_json::Value,
    aj: &serde_json::Value,
    oj: &serde_json::Value,
    scpu: usize,
    ccpu: usize,
    soaked: bool,
) -> BTreeMap<String, f64> {
    let w = b.t.duration_since(a.t).as_secs_f64().max(1e-9);
    let mut m = BTreeMap::new();
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    // The clients (their own window, from the same signals).
    let cw = num(&cj["window_s"]);
    let c = |k: &str| num(&cj[k]);
    m.insert("clients_offered_rps".into(), c("offered") / cw);
    m.insert("clients_completed_rps".into(), c("completed") / cw);
    m.insert("clients_completed_frac".into(), c("completed") / c("offered"));
    m.insert("clients_no_conn_per_s".into(), c("no_conn") / cw);
    for k in [
        "resp_ms_mean",
        "resp_ms_p50",
        "resp_ms_p90",
        "resp_ms_p99",
        "resp_hit_ms_mean",
        "resp_miss_ms_mean",
        "lag_ms_mean",
        "lag_ms_p99",
        "lag_ms_max",
        "conns_open",
    ] {
        m.insert(format!("clients_{k}"), c(k));
    }
    for k in ["errors", "incomplete", "completed", "offered", "connect_errors"] {
        m.insert(format!("clients_{k}_count"), c(k));
    }
    m.insert("origin_served_total".into(), num(&oj["served"]));
    m.insert("origin_errors_count".into(), num(&oj["errors"]));
    // The accelerator's counters over the window.
    let d = |k: &str| num(&aj["end"][k]) - num(&aj["start"][k]);
    for k in ["requests", "hits", "misses", "fetched", "accepted", "closed", "fetch_waits"] {
        m.insert(format!("chamomile_{k}_per_s"), d(k) / w);
    }
    m.insert("chamomile_bad_count".into(), d("bad"));
    let (mut polls, mut poll_ns, mut ready, mut fds, mut gather_ns, mut sched_ns) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for t in super::counters::THREADS {
        let g = |k: &str| d(&format!("{t}_{k}"));
        m.insert(format!("chamomile_{t}_loops_per_s"), g("loops") / w);
        m.insert(format!("chamomile_{t}_sleeps_per_s"), g("sleeps") / w);
        m.insert(format!("chamomile_{t}_yields_per_s"), g("yields") / w);
        m.insert(format!("chamomile_{t}_polls_per_s"), g("polls") / w);
        m.insert(format!("chamomile_{t}_sleep_req_ms_mean"), g("sleep_req_ns") / g("sleeps") / 1e6);
        m.insert(format!("chamomile_{t}_slept_ms_mean"), g("slept_ns") / g("sleeps") / 1e6);
        m.insert(format!("chamomile_{t}_poll_fds_mean"), g("poll_fds") / g("polls"));
        polls += g("polls");
        poll_ns += g("poll_ns");
        ready += g("poll_ready");
        fds += g("poll_fds");
        gather_ns += g("gather_ns");
        sched_ns += g("sched_ns");
    }
    m.insert("polls_per_s".into(), polls / w);
    m.insert("poll_ready_mean".into(), ready / polls);
    m.insert("poll_fds_mean".into(), fds / polls);
    // poll()'s time over the window, from the server's own clock around each call.
    m.insert("cpu_poll_frac".into(), poll_ns * 1e-9 / w);
    m.insert("gather_frac".into(), gather_ns * 1e-9 / w);
    m.insert("chamomile_sched_frac".into(), sched_ns * 1e-9 / w);
    // CPU time of the processes (schedstat: ns, with the interrupts and softirqs that ran on
    // top of them).
    let tn = |s: &Snap, k: &str| s.accel.get(k).copied().unwrap_or(0) as f64;
    let mut accel_total = 0.0;
    for (t, key) in [("io", "io"), ("retrieve", "retrieve"), ("listen", "listen"), ("main", "accel-ready")] {
        let f = (tn(b, key) - tn(a, key)) * 1e-9 / w;
        m.insert(format!("chamomile_{t}_cpu_frac"), f);
        accel_total += f;
    }
    m.insert("chamomile_cpu_frac".into(), accel_total);
    let (du, ds) = (
        b.accel_ticks.0.saturating_sub(a.accel_ticks.0) as f64,
        b.accel_ticks.1.saturating_sub(a.accel_ticks.1) as f64,
    );
    if du + ds > 0.0 {
        m.insert("chamomile_user_frac".into(), accel_total * du / (du + ds));
        m.insert("chamomile_system_frac".into(), accel_total * ds / (du + ds));
    }
    let soak = b.soak_ns.saturating_sub(a.soak_ns) as f64 * 1e-9 / w;
    m.insert("soak_cpu_frac".into(), if soaked { soak } else { f64::NAN });
    m.insert("clients_cpu_frac".into(), b.clients_ns.saturating_sub(a.clients_ns) as f64 * 1e-9 / w);
    m.insert("origin_cpu_frac".into(), b.origin_ns.saturating_sub(a.origin_ns) as f64 * 1e-9 / w);
    // Per-CPU states (/proc/stat, tick-sampled at HZ).
    let mut share = |cpu: usize| -> BTreeMap<&'static str, f64> {
        let mut s = BTreeMap::new();
        if let (Some(x), Some(y)) = (b.stat.get(cpu), a.stat.get(cpu)) {
            for (state, v) in x.since(y).shares() {
                m.insert(format!("cpu{cpu}_{state}_frac"), v);
                s.insert(state, v);
            }
        }
        s
    };
    let s0 = share(scpu);
    let s1 = share(ccpu);
    // The accelerator's CPU in the model's names (the model's host is this one CPU), all from
    // the same tick samples: busy = everything but idle, steal and the soaker's own spinning
    // (its user ticks; the softirqs that ran on top of it are the accelerator's network work and
    // count); kernel = system + softirq + hardirq. (The soaker's run time from schedstat,
    // `soak_cpu_frac`, includes those softirqs, so 1 − it would undercount.)
    let g0 = |k: &str| s0.get(k).copied().unwrap_or(f64::NAN);
    let soak_user = match (b.stat.get(scpu), a.stat.get(scpu)) {
        (Some(x), Some(y)) if soaked => {
            b.soak_utime.saturating_sub(a.soak_utime) as f64 / x.since(y).total().max(1) as f64
        }
        _ => 0.0,
    };
    let util = 1.0 - g0("idle") - g0("steal") - soak_user;
    let kernel = g0("system") + g0("softirq") + g0("hardirq");
    m.insert("soak_user_frac".into(), if soaked { soak_user } else { f64::NAN });
    m.insert("cpu_util".into(), util);
    m.insert("cpu_kernel_frac".into(), kernel);
    m.insert("cpu_user_frac".into(), (util - kernel).max(0.0));
    for k in ["system", "softirq", "hardirq", "steal"] {
        m.insert(format!("cpu_{k}_frac"), g0(k));
    }
    m.insert("poll_kernel_share".into(), if kernel > 0.0 { poll_ns * 1e-9 / w / kernel } else { f64::NAN });
    // The other side: the clients and the origin must not be what limits the load.
    let g1 = |k: &str| s1.get(k).copied().unwrap_or(f64::NAN);
    m.insert("client_cpu_util".into(), 1.0 - g1("idle"));
    m.insert("window_s".into(), w);
    m
}

/// The whole sweep: repetitions outermost (a drift of the machine spreads over every point),
/// then rates, then variants; each point written to `results.csv` as it is measured.
pub fn run(cfg: &Options, run: &mut LiveRun) -> Result<(), LiveError> {
    let s = setup(cfg, run)?;
    // What the loops' sleeps and SCHED_FIFO depend on, besides the options.
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    run.set_info(
        "scheduling",
        serde_json::json!({
            "timer_slack_ns": read("/proc/self/timerslack_ns").and_then(|s| s.parse::<u64>().ok()),
            "sched_rt_runtime_us": read("/proc/sys/kernel/sched_rt_runtime_us"),
            "fifo_priority": super::interval::FIFO_PRIORITY,
            "load_generator": "hostsim live-worker kawai-clients (open-loop Poisson, crates/live/src/kawai_interval/clients.rs)",
        }),
    );
    let paths: Vec<RxPath> = cfg.variants.iter().filter_map(|v| rx::split_variant(v).ok()).map(|(_, r)| r).collect();
    if paths.iter().any(|&r| r != RxPath::Plain) {
        let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
        run.set_info(
            "rx_paths",
            serde_json::json!({
                "defer_hard_irqs": cfg.defer_hard_irqs, "gro_flush_timeout_ns": cfg.gro_flush_timeout_ns,
                "busy_poll_us": cfg.busy_poll_us,
                "busy_poll_before": read(rx::BUSY_POLL), "busy_read_before": read(rx::BUSY_READ),
            }),
        );
    }
    let mut rxs = RxState::new(paths);
    for rep in 1..=cfg.common.reps {
        for &rate in &cfg.rates_rps {
            for v in &cfg.variants {
                run.check()?;
                let metrics = run_point(cfg, run, &s, &mut rxs, v, rate, rep)?;
                let keys = [("variant", v.clone()), (RATE_KEY, format!("{rate}")), ("rep", rep.to_string())];
                let p = Point::new(&keys, metrics);
                run.progress(p.line(SHOWN));
                run.push(p)?;
            }
        }
    }
    Ok(())
}

/// What a point's progress line shows.
const SHOWN: &[Shown] = &[
    ("offered", "clients_offered_rps", 0),
    ("done", "clients_completed_rps", 0),
    ("frac", "clients_completed_frac", 3),
    ("resp mean ms", "clients_resp_ms_mean", 2),
    ("p99", "clients_resp_ms_p99", 2),
    ("cpu", "cpu_util", 3),
    ("kernel", "cpu_kernel_frac", 3),
    ("accel", "chamomile_cpu_frac", 3),
    ("loops/s", "chamomile_io_loops_per_s", 0),
    ("polls/s", "polls_per_s", 0),
    ("lag p99 ms", "clients_lag_ms_p99", 2),
    ("client cpu", "clients_cpu_frac", 2),
    ("rx napi pps", "rx_napi_pps", 0),
    ("busy pps", "busy_poll_rx_pps", 0),
    ("errors", "clients_errors_count", 0),
    ("load", "loadavg_1m", 2),
];

/// The command: its options, its plan, and this experiment as its run.
impl Experiment for Options {
    const NAME: &'static str = "kawai-interval";

    fn common(&self) -> &Common {
        &self.common
    }

    fn points(&self) -> usize {
        self.rates_rps.len() * self.variants.len() * self.common.reps as usize
    }

    fn plan(&self) -> String {
        format!(
            "each {:.1} s (+{:.1} s ramp and warm-up), accelerator on CPU {}, clients and origin on CPU {}",
            self.window_s,
            self.ramp_ms as f64 / 1e3 + self.warmup_s,
            self.server_cpu,
            self.client_cpu
        )
    }

    fn run(&self, run: &mut LiveRun) -> Result<(), LiveError> {
        self::run(self, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rt_budget_fits_the_parent_with_its_siblings() {
        let ratio = |r: u64, p: u64| (r << 20) / p;
        // The root's 950,000 of 1,000,000 and no sibling: 0.9 of the period (the cap).
        let us = rt_budget(950_000, 1_000_000, &[], 1_000_000).unwrap();
        assert!((899_990..=900_000).contains(&us), "{us}");
        // A sibling holding 0.5: what is left of 0.95, and the sum fits as the kernel checks it.
        let us = rt_budget(950_000, 1_000_000, &[(500_000, 1_000_000)], 1_000_000).unwrap();
        assert!((449_990..=450_000).contains(&us), "{us}");
        assert!(ratio(us, 1_000_000) + ratio(500_000, 1_000_000) <= ratio(950_000, 1_000_000));
        // Nothing left: refused with the reason.
        assert!(rt_budget(950_000, 1_000_000, &[(950_000, 1_000_000)], 1_000_000).is_err());
        // Unlimited parent (-1), another period.
        let us = rt_budget(-1, 1_000_000, &[], 100_000).unwrap();
        assert!((89_990..=90_000).contains(&us), "{us}");
        assert!(ratio(us, 100_000) <= ratio(900_000, 1_000_000));
    }
}
