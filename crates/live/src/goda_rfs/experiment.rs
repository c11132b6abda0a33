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

use super::wake::{Recorder, Tracker};
use super::Options;
use crate::cgroup::CpuGroup;
pub use crate::harness::LiveError;
use crate::harness::{failed, LiveRun, Netns, Point, Shown};
use crate::netns::Veth;
use crate::tcp_worker::{SendSpec, SinkArgs};
use crate::worker::{self, Placement};
use std::collections::BTreeMap;
use std::fs::File;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// The swept key, named as in `scenarios/live-goda-wakeups.toml`.
pub const FLOWS_KEY: &str = "process.reader.instances";
pub const PORT_BASE: u16 = 5001;
pub const SENDER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 6, 1);
pub const READER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 6, 2);
/// The most flows a point may have (each is two processes on a 2-CPU machine).
pub const FLOWS_MAX: u32 = 64;

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
pub fn setup(cfg: &Options, run: &LiveRun) -> Result<Setup, LiveError> {
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
pub fn run_point(cfg: &Options, run: &LiveRun, s: &Setup, flows: u32) -> Result<BTreeMap<String, f64>, LiveError> {
    let secs = cfg.warmup_s + cfg.window_s;
    let lost0 = s.recorder.lost();
    let _ = s.recorder.drain().map_err(failed)?;
    let (srv, cli) = (s.srv.file()?, s.cli.file()?);
    let cg = s.group_procs.as_ref();
    let mut readers = Vec::new();
    for f in 0..flows {
        let port = PORT_BASE + f as u16;
        let args = worker::args("tcp-sink", &SinkArgs { port, secs: secs + 5.0 });
        let w = worker::spawn(
            &format!("reader{f}"),
            &cfg.worker,
            &args,
            &Placement { netns: &srv, cpu: None, nice: 0, slice_ns: None, cgroup: cg, cgroup2: None },
        )
        .map_err(failed)?;
        s.recorder.watch(w.pid()).map_err(failed)?;
        readers.push(w);
    }
    let start_ns = crate::sys::monotonic_ns() + 200_000_000;
    let mut senders = Vec::new();
    for f in 0..flows {
        let port = PORT_BASE + f as u16;
        let spec = SendSpec {
            dst: READER_ADDR,
            port,
            unit_bytes: cfg.unit_bytes,
            total_bytes: crate::tcp_worker::TOTAL_MAX,
            sndbuf_bytes: cfg.sndbuf_bytes,
            start_ns,
            secs,
            pacing_bytes_per_s: Some((cfg.rate_mbit * 1e6 / 8.0 / f64::from(flows)) as u64),
        };
        let args = worker::args("tcp-send", &spec);
        let w = worker::spawn(
            &format!("sender{f}"),
            &cfg.worker,
            &args,
            &Placement { netns: &cli, cpu: None, nice: 0, slice_ns: None, cgroup: cg, cgroup2: None },
        )
        .map_err(failed)?;
        s.recorder.set_sender(w.pid(), true).map_err(failed)?;
        senders.push(w);
    }
    let mut tracker = Tracker::new();
    let t0 = Instant::now() + Duration::from_nanos(start_ns.saturating_sub(crate::sys::monotonic_ns()));
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

/// A point of results.csv: `variant` (`linux`), the flow count, `rep`, then every metric.
pub fn point(flows: u32, rep: u32, m: BTreeMap<String, f64>) -> Point {
    Point::new(&[("variant", "linux".to_string()), (FLOWS_KEY, flows.to_string()), ("rep", rep.to_string())], m)
}

/// What a point's progress line shows.
const SHOWN: &[Shown] = &[
    ("wake-ups/s", "wakeups_per_s", 0),
    ("remote", "wakeups_remote_frac", 2),
    ("in place", "wakeups_on_rq_frac", 2),
    ("by sender", "wakeups_by_sender_frac", 2),
    ("kthread", "wakeups_by_kthread_frac", 2),
    ("idle", "wakeups_by_idle_frac", 2),
    ("migrations/s", "migrations_per_s", 0),
    ("wake-up affine", "migrations_wakeup_affine_per_s", 0),
    ("other", "migrations_wakeup_other_per_s", 0),
    ("balance", "migrations_balance_per_s", 0),
    ("unintended/s", "migrations_unintended_per_s", 0),
    ("fraction", "unintended_fraction", 3),
    ("settle mean", "settle_mean", 2),
    ("max", "settle_max", 0),
    ("wait p50 us", "wakeup_wait_us_p50", 0),
    ("p90", "wakeup_wait_us_p90", 0),
    ("rx Mbit/s", "reader_rx_mbps", 0),
    ("load", "loadavg_1m", 2),
];

/// The whole sweep (repetitions outermost); each point is written to results.csv as measured.
pub fn run(cfg: &Options, run: &mut LiveRun) -> Result<(), LiveError> {
    let s = setup(cfg, run)?;
    run.set_info("setup", s.facts.clone());
    for rep in 1..=cfg.common.reps {
        for &flows in &cfg.flows {
            run.check()?;
            let m = run_point(cfg, run, &s, flows)?;
            let p = point(flows, rep, m);
            run.progress(p.line(SHOWN));
            run.push(p)?;
        }
    }
    run.check()?;
    drop(s);
    Ok(())
}
