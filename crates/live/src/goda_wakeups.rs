//! `hostsim live goda-wakeups`: where this kernel (Linux 6.18, EEVDF) places the wake-ups of
//! TCP stream readers, classified as paper 001's Fig. 2, as ground truth for the model's modern
//! placement (`kernel.scheduler = "cfs6"`, twin: `scenarios/live-goda-wakeups.toml`).
//!
//! ```text
//!  ns cli                                              ns srv
//!  N TCP senders (unpinned)  ── eth0 ═══ veth ═══ eth0 ── N readers (unpinned), one per flow
//!    64 KB writes, each paced     TSO/GSO off: one         no RPS, no RFS
//!    at rate / N                  segment per frame
//!  tp_btf sched_waking / sched_wakeup / sched_migrate_task, filtered to the readers' tgids
//! ```
//!
//! Paper 001 receives iperf flows with RFS on and asks how often waking and running CPU swap.
//! Here RFS stays off (it is switched on by a global sysctl, `rps_sock_flow_entries`, which a
//! run must not change), so this measures the placement the paper's mechanism would wrap, on
//! today's kernel: which CPU wakes a reader (on a veth, the transmitting CPU: `veth_xmit`
//! delivers into the peer's backlog or NAPI on the sender's CPU, and the softirq that runs the
//! receive path there wakes the reader), where the reader was, and where EEVDF's
//! `select_task_rq_fair` puts it. The recorder is `wake.rs`; the classes are the model's.
//!
//! **Load.** Nothing is a mechanism here. The senders are paced (TCP's own pacing,
//! `SO_MAX_PACING_RATE`, per socket: no qdisc, no global setting) to a total rate shared by the
//! flows, so the readers keep up and block between arrivals: every arrival on an empty socket
//! is a wake-up to place. Unpaced, bulk flows over a veth keep their readers always runnable
//! and there is nothing to measure. Senders, readers and the softirqs share both CPUs. The readers' and senders' CPU time and
//! the bytes received are reported per point.
//!
//! **What a run changes, and how it is undone** (all in the run's ledger): two namespaces
//! `hsl-<pid>-<n>-{cli,srv}` holding the veth pair; four tracepoint programs attached through
//! bpf_links (they go with the run's descriptors; the ledger records them); the v1 CPU group
//! of the largest weight holding the workers (removed); the workers (they die with the run and
//! stop by themselves after their time limit). No sysctl, RPS mask or affinity is written.

use crate::cgroup::CpuGroup;
pub use crate::harness::LiveError;
use crate::harness::{failed, LiveRun, Netns, Point};
use crate::netns::Veth;
use crate::wake::{Recorder, Tracker};
use crate::worker::{self, Placement};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The swept key, named as in `scenarios/live-goda-wakeups.toml`.
pub const FLOWS_KEY: &str = "process.reader.instances";
pub const PORT_BASE: u16 = 5001;
pub const SENDER_ADDR: &str = "198.18.6.1";
pub const READER_ADDR: &str = "198.18.6.2";
/// The most flows a point may have (each is two processes on a 2-CPU machine).
pub const FLOWS_MAX: u32 = 64;

#[derive(Clone, Debug)]
pub struct WakeupsConfig {
    pub flows: Vec<u32>,
    pub reps: u32,
    pub warmup_s: f64,
    pub window_s: f64,
    /// All flows together, Mbit/s of payload: each sender paces at rate / flows
    /// (`SO_MAX_PACING_RATE`), so that the readers keep up and sleep between arrivals, as
    /// paper 001's 512 iperf readers sharing 10 GbE did; unpaced, two bulk flows over a veth
    /// keep their readers busy without a single wake-up (the first quick run: 11 Gbit/s, no
    /// wake-up in the window).
    pub rate_mbit: f64,
    /// send() size of the senders (iperf's TCP default length is 128 KB in iperf 3, 8 KB in 2).
    pub unit_bytes: usize,
    /// SO_SNDBUF of the senders (bounded by net.core.wmem_max; the kernel doubles it).
    pub sndbuf_bytes: i32,
    /// Run the workers in a CPU cgroup of the largest weight (see `cgroup.rs`).
    pub cgroup: bool,
    pub worker_exe: PathBuf,
    pub worker_args: Vec<String>,
}

impl WakeupsConfig {
    pub fn new(worker_exe: PathBuf, worker_args: Vec<String>) -> WakeupsConfig {
        WakeupsConfig {
            flows: vec![1, 2, 4, 8],
            reps: 3,
            warmup_s: 1.0,
            window_s: 3.0,
            rate_mbit: 400.0,
            unit_bytes: 65536,
            sndbuf_bytes: 212_992,
            cgroup: true,
            worker_exe,
            worker_args,
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if self.flows.is_empty() || self.flows.iter().any(|&n| !(1..=FLOWS_MAX).contains(&n)) {
            return Err(format!("--flows: each flow count must be in 1..={FLOWS_MAX}"));
        }
        if !(0.0..=30.0).contains(&self.warmup_s) || !(0.2..=60.0).contains(&self.window_s) {
            return Err("warm-up 0..=30 s and window 0.2..=60 s".into());
        }
        if !(1.0..=20_000.0).contains(&self.rate_mbit) {
            return Err("--rate-mbit: expected 1..=20,000 Mbit/s".into());
        }
        Ok(())
    }
}

/// The namespaces, recorder and group of one run.
pub struct Setup {
    pub cli: Netns,
    pub srv: Netns,
    pub recorder: Recorder,
    pub group: Option<CpuGroup>,
    group_procs: Option<File>,
    pub facts: serde_json::Value,
}

fn read_in(ns: &Netns, path: &str) -> String {
    crate::netns::read_in(Some(&ns.name), path).map(|s| s.trim().to_string()).unwrap_or_else(|e| format!("? ({e})"))
}

/// Create the namespaces and the veth, load and attach the recorder, create the group, all
/// through `run` (recorded in its ledger).
pub fn setup(cfg: &WakeupsConfig, run: &LiveRun) -> Result<Setup, LiveError> {
    let (cli, srv) = (run.netns("cli")?, run.netns("srv")?);
    run.veth(&Veth {
        ns_a: cli.name.clone(),
        a: "eth0".into(),
        addr_a: format!("{SENDER_ADDR}/24"),
        ns_b: srv.name.clone(),
        b: "eth0".into(),
        addr_b: format!("{READER_ADDR}/24"),
    })?;
    // One segment per frame, as the model's flows (it has no GSO): no TSO/GSO on the senders'
    // veth (a setting of that device, gone with the namespace).
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &cli.name, "ethtool", "-K", "eth0", "tso", "off", "gso", "off"])
        .output()
        .map_err(|e| failed(format!("ethtool in {}: {e}", cli.name)))?;
    if !out.status.success() {
        return Err(failed(format!(
            "`ethtool -K eth0 tso off gso off` in {}: {} (install ethtool: bash scripts/deps.sh)",
            cli.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut recorder = Recorder::load().map_err(|e| LiveError::Unsupported(e.0))?;
    let links = recorder.attach().map_err(|e| LiveError::Unsupported(e.0))?;
    for (tp, prog_id, link_id) in &links {
        run.record_link(tp, *prog_id, *link_id)?;
    }
    let (group, group_procs) = run.optional_cpu_group(cfg.cgroup)?;
    // RFS and RPS stay as the machine has them (off by default): said, never changed.
    let facts = serde_json::json!({
        "rps_sock_flow_entries": std::fs::read_to_string("/proc/sys/net/core/rps_sock_flow_entries").map(|s| s.trim().to_string()).unwrap_or_default(),
        "srv_eth0_rps_cpus": read_in(&srv, "/sys/class/net/eth0/queues/rx-0/rps_cpus"),
        "srv_eth0_rps_flow_cnt": read_in(&srv, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt"),
        "tracepoints": links.iter().map(|(tp, p, l)| serde_json::json!({ "tracepoint": tp, "prog_id": p, "link_id": l })).collect::<Vec<_>>(),
        "sched_features": std::fs::read_to_string("/sys/kernel/debug/sched/features").map(|s| s.trim().to_string()).unwrap_or_default(),
        "cpu_group": group.as_ref().map(|g| g.path().display().to_string()),
    });
    Ok(Setup { cli, srv, recorder, group, group_procs, facts })
}

fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// Per-CPU busy jiffies (everything but idle and iowait) from /proc/stat: machine-wide, for
/// context only (another session's work is in it).
fn cpu_busy_ticks() -> Vec<u64> {
    let t = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    t.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(|b| b.is_ascii_digit()))
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
            v.iter().sum::<u64>() - v.get(3).copied().unwrap_or(0) - v.get(4).copied().unwrap_or(0)
        })
        .collect()
}

/// One point: `flows` sender → reader pairs for warm-up + window; the readers' wake-ups over
/// the window, classified.
pub fn run_point(
    cfg: &WakeupsConfig,
    run: &LiveRun,
    s: &Setup,
    flows: u32,
) -> Result<BTreeMap<String, f64>, LiveError> {
    let secs = cfg.warmup_s + cfg.window_s;
    let lost0 = s.recorder.lost();
    let _ = s.recorder.drain().map_err(failed)?;
    let (srv, cli) = (s.srv.file()?, s.cli.file()?);
    let cg = s.group_procs.as_ref();
    let mut readers = Vec::new();
    for f in 0..flows {
        let port = PORT_BASE + f as u16;
        let mut args = cfg.worker_args.clone();
        args.extend(["tcp-sink".into(), "--port".into(), port.to_string(), "--secs".into(), format!("{}", secs + 5.0)]);
        let w = worker::spawn(
            &format!("reader{f}"),
            &cfg.worker_exe,
            &args,
            &Placement { netns: &srv, cpu: None, nice: 0, slice_ns: None, cgroup: cg, cgroup2: None },
        )
        .map_err(failed)?;
        s.recorder.watch(w.pid()).map_err(failed)?;
        readers.push(w);
    }
    let start_ns = crate::regulator::monotonic_ns() + 200_000_000;
    let mut senders = Vec::new();
    for f in 0..flows {
        let port = PORT_BASE + f as u16;
        let mut args = cfg.worker_args.clone();
        args.extend([
            "tcp-send".into(),
            "--dst".into(),
            READER_ADDR.into(),
            "--port".into(),
            port.to_string(),
            "--unit".into(),
            cfg.unit_bytes.to_string(),
            "--total".into(),
            crate::tcp_worker::TOTAL_MAX.to_string(),
            "--sndbuf".into(),
            cfg.sndbuf_bytes.to_string(),
            "--start-ns".into(),
            start_ns.to_string(),
            "--secs".into(),
            format!("{secs}"),
            "--pacing".into(),
            format!("{}", (cfg.rate_mbit * 1e6 / 8.0 / f64::from(flows)) as u64),
        ]);
        let w = worker::spawn(
            &format!("sender{f}"),
            &cfg.worker_exe,
            &args,
            &Placement { netns: &cli, cpu: None, nice: 0, slice_ns: None, cgroup: cg, cgroup2: None },
        )
        .map_err(failed)?;
        s.recorder.set_sender(w.pid(), true).map_err(failed)?;
        senders.push(w);
    }
    let mut tracker = Tracker::new();
    let t0 = Instant::now() + Duration::from_nanos(start_ns.saturating_sub(crate::regulator::monotonic_ns()));
    let warm_end = t0 + Duration::from_secs_f64(cfg.warmup_s);
    let end = warm_end + Duration::from_secs_f64(cfg.window_s);
    let mut warm = true;
    let (mut busy0, mut load0) = (Vec::new(), f64::NAN);
    loop {
        run.sleep(Duration::from_millis(50))?;
        for e in s.recorder.drain().map_err(failed)? {
            tracker.feed(&e);
        }
        let now = Instant::now();
        if warm && now >= warm_end {
            tracker.reset();
            busy0 = cpu_busy_ticks();
            load0 = loadavg();
            warm = false;
        }
        if now >= end {
            break;
        }
    }
    let busy1 = cpu_busy_ticks();
    let window_s = cfg.window_s;
    let mut m = tracker.metrics(window_s);
    for w in &readers {
        s.recorder.unwatch(w.pid());
    }
    for w in &senders {
        let _ = s.recorder.set_sender(w.pid(), false);
    }
    let lost = s.recorder.lost() - lost0;
    // The senders end at their time limit (they close: the readers see EOF and end).
    let mut sent = 0.0;
    for w in senders {
        let mut w = w;
        let lim = Instant::now() + Duration::from_secs(5);
        while w.exited().is_none() && Instant::now() < lim {
            run.sleep(Duration::from_millis(10))?;
        }
        let j = w.finish_json(Duration::from_secs(3)).map_err(failed)?;
        sent += j["bytes"].as_f64().unwrap_or(f64::NAN);
    }
    let (mut got, mut reader_cpu_us) = (0.0, 0.0);
    for w in readers {
        let mut w = w;
        let lim = Instant::now() + Duration::from_secs(5);
        while w.exited().is_none() && Instant::now() < lim {
            run.sleep(Duration::from_millis(10))?;
        }
        let j = w.finish_json(Duration::from_secs(3)).map_err(failed)?;
        got += j["bytes"].as_f64().unwrap_or(f64::NAN);
        reader_cpu_us += j["cpu_us"].as_f64().unwrap_or(f64::NAN);
    }
    // Over the readers' whole transfer (warm-up and window: the workers report at their end).
    m.insert("reader_rx_mbps".into(), got * 8e-6 / secs);
    m.insert("sender_bytes".into(), sent);
    m.insert("reader_cpus".into(), reader_cpu_us * 1e-6 / secs);
    let hz = 100.0; // USER_HZ of /proc/stat
    for (c, (b1, b0)) in busy1.iter().zip(&busy0).enumerate() {
        m.insert(format!("machine_cpu{c}_busy_frac"), (b1 - b0) as f64 / hz / window_s);
    }
    m.insert("recorder_lost".into(), lost as f64);
    m.insert("loadavg_1m".into(), load0);
    if lost > 0 {
        return Err(failed(format!(
            "the recorder's ring buffer lost {lost} records: the point's pairs would be wrong"
        )));
    }
    Ok(m)
}

/// A point's key columns: the flow count and `rep`.
pub fn point_keys(flows: u32, rep: u32) -> Vec<(String, String)> {
    vec![("variant".into(), "linux".into()), (FLOWS_KEY.into(), flows.to_string()), ("rep".into(), rep.to_string())]
}

/// One point as a line of progress.
pub fn row_line(flows: u32, rep: u32, m: &BTreeMap<String, f64>) -> String {
    let g = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    format!(
        "rep {rep} flows {flows:>2}: {:>7.0} wake-ups/s (remote {:.2}, in place {:.2}; by sender {:.2} kthread {:.2} idle {:.2})  migrations/s {:>6.0} = wake-up affine {:.0} + other {:.0} + balance {:.0}; unintended {:.0}/s ({:.3}), settle mean {:.2} max {:.0}  wait p50/p90 {:.0}/{:.0} us  rx {:.0} Mbit/s  load {:.2}",
        g("wakeups_per_s"),
        g("wakeups_remote_frac"),
        g("wakeups_on_rq_frac"),
        g("wakeups_by_sender_frac"),
        g("wakeups_by_kthread_frac"),
        g("wakeups_by_idle_frac"),
        g("migrations_per_s"),
        g("migrations_wakeup_affine_per_s"),
        g("migrations_wakeup_other_per_s"),
        g("migrations_balance_per_s"),
        g("migrations_unintended_per_s"),
        g("unintended_fraction"),
        g("settle_mean"),
        g("settle_max"),
        g("wakeup_wait_us_p50"),
        g("wakeup_wait_us_p90"),
        g("reader_rx_mbps"),
        g("loadavg_1m"),
    )
}

/// The whole sweep (repetitions outermost); each point is written to results.csv as measured.
pub fn run(cfg: &WakeupsConfig, run: &mut LiveRun) -> Result<(), LiveError> {
    cfg.check().map_err(failed)?;
    let s = setup(cfg, run)?;
    run.set_info("setup", s.facts.clone());
    for rep in 1..=cfg.reps {
        for &flows in &cfg.flows {
            run.check()?;
            let m = run_point(cfg, run, &s, flows)?;
            run.progress(row_line(flows, rep, &m));
            run.push(Point { keys: point_keys(flows, rep), metrics: m })?;
        }
    }
    run.check()?;
    drop(s);
    Ok(())
}
