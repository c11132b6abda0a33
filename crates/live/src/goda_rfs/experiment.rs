//! `hostsim live goda-wakeups`: where this kernel (Linux 6.18, EEVDF) places the wake-ups of
//! TCP stream readers, classified as paper 001's Fig. 2, as ground truth for the model's modern
//! placement (`kernel.scheduler = "cfs6"`, twin: `scenarios/live-goda-wakeups.toml`).
//!
//! ```text
//!  ns cli                                              ns srv
//!  N TCP senders (unpinned)  ── eth0 ═══ veth ═══ eth0 ── N readers (unpinned), one per flow
//!    64 KB writes, each paced     TSO/GSO off: TCP's GSO   no RPS; RFS only in `rfs`
//!    at rate / N                  skbs split in software   points
//!  tp_btf sched_waking / sched_wakeup / sched_migrate_task / sched_switch (the readers' tgids)
//!  tp_btf net_dev_queue (skbs) / netif_receive_skb (frames) / tcp_pace_kick's expiry (trains.rs)
//! ```
//!
//! Paper 001 receives iperf flows with RFS on and asks how often waking and running CPU swap.
//! The `linux` variant keeps RFS off and measures the placement the paper's mechanism would wrap,
//! on today's kernel; the `rfs` variant switches RFS on for its points (`rfs.rs`: a global sysctl
//! and the readers' veth queues, restored through the run's ledger), paper 001's own setting:
//! which CPU wakes a reader (on a veth, the transmitting CPU: `veth_xmit`
//! delivers into the peer's backlog or NAPI on the sender's CPU, and the softirq that runs the
//! receive path there wakes the reader), where the reader was, and where EEVDF's
//! `select_task_rq_fair` puts it. The recorder is `wake.rs`; the classes are the model's.
//!
//! **Load.** Nothing of paper 001's mechanism runs here. The senders are paced (TCP's own pacing,
//! `SO_MAX_PACING_RATE`, per socket: no qdisc, no global setting) to a total rate shared by the
//! flows, so the readers keep up and block between arrivals: every arrival on an empty socket
//! is a wake-up to place. Unpaced, bulk flows over a veth keep their readers always runnable
//! and there is nothing to measure. Senders, readers and the softirqs share both CPUs. The readers' and senders' CPU time and
//! the bytes received are reported per point.
//!
//! **Trains** (issue 42, "trace first"). Beside the wake-ups, `trains.rs` records every TCP skb
//! the senders' TCP hands to their veth (before GSO splits it), every frame entering the
//! readers' stack and every expiry of a sender's pacing timer, and writes a per-flow summary to
//! `trains.csv`: what batches the arrivals a reader wakes for. The `per-segment` variant sets the
//! senders' veth's `gso_max_segs` to 1 for its points (a device setting of the run's own
//! namespace), so that TCP's pacing sends one segment per expiry: the control.
//!
//! **What a run changes, and how it is undone** (all in the run's ledger): two namespaces
//! `hsl-<pid>-<n>-{cli,srv}` holding the veth pair (its offload and GSO settings go with them);
//! ten tracepoint programs attached through bpf_links (they go with the run's descriptors; the
//! ledger records them); the v1 CPU group of the largest weight holding the workers (removed);
//! the workers (they die with the run and stop by themselves after their time limit); with the
//! `rfs` variant, `net.core.rps_sock_flow_entries` and the readers' veth's `rps_flow_cnt`
//! (values before the run recorded first, written back on every ending and by `hostsim live
//! clean`). No RPS mask or affinity is written.

use super::rfs::Rfs;
use super::trains::{self, ReaderTimes, TsoRule};
use super::wake::{Kind, Recorder, Tracker};
use super::{Options, Variant, FLOWS_MAX};
use crate::cgroup::CpuGroup;
use crate::command::{Common, Experiment};
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
/// The namespaces, recorder and group of one run.
pub struct Setup {
    pub cli: Netns,
    pub srv: Netns,
    pub recorder: Recorder,
    pub trains: trains::Recorder,
    /// RFS's settings, recorded when a variant switches it on.
    pub rfs: Option<Rfs>,
    /// The senders' namespace's TCP rule for skb sizes.
    pub tso_rule: TsoRule,
    /// The senders' veth's `gso_max_segs` as created (put back after a `per-segment` point).
    pub gso_max_segs: u32,
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
    let mut links = recorder.attach().map_err(|e| LiveError::Unsupported(e.0))?;
    let devices = trains::Devices {
        tx_netns: netns_inode(&cli)?,
        tx_ifindex: ifindex_in(&cli, "eth0")?,
        rx_netns: netns_inode(&srv)?,
        rx_ifindex: ifindex_in(&srv, "eth0")?,
        port_lo: PORT_BASE,
        port_hi: PORT_BASE + FLOWS_MAX as u16 - 1,
    };
    let mut train_rec = trains::Recorder::load(&devices).map_err(|e| LiveError::Unsupported(e.0))?;
    links.extend(train_rec.attach().map_err(|e| LiveError::Unsupported(e.0))?);
    for (tp, prog_id, link_id) in &links {
        run.record_link(tp, *prog_id, *link_id)?;
    }
    let (group, group_procs) = run.optional_cpu_group(cfg.cgroup)?;
    let rfs = if cfg.variants.contains(&Variant::Rfs) { Some(Rfs::record(run, &srv, "eth0")?) } else { None };
    let sysctl = |name: &str| -> Result<u32, LiveError> {
        let path = format!("/proc/sys/net/ipv4/{name}");
        let v = crate::netns::read_in(Some(&cli.name), &path).map_err(failed)?;
        v.trim().parse().map_err(|e| failed(format!("{path} in {}: {e}", cli.name)))
    };
    let tso_rule = TsoRule { tso_rtt_log: sysctl("tcp_tso_rtt_log")?, min_tso_segs: sysctl("tcp_min_tso_segs")? };
    let gso_max_segs = read_in(&cli, "/sys/class/net/eth0/gso_max_segs").parse().unwrap_or(65_535);
    // RPS stays as the machine has it (off by default): said, never changed; RFS is off except
    // in the `rfs` points.
    let facts = serde_json::json!({
        "devices": devices,
        "tso_rule": tso_rule,
        "senders_gso_max_segs": gso_max_segs,
        "rfs_sock_flow_entries_before": rfs.as_ref().map(Rfs::global_before),
        "delayed_dequeue": sched_features(),
        "rps_sock_flow_entries": std::fs::read_to_string("/proc/sys/net/core/rps_sock_flow_entries").map(|s| s.trim().to_string()).unwrap_or_default(),
        "srv_eth0_rps_cpus": read_in(&srv, "/sys/class/net/eth0/queues/rx-0/rps_cpus"),
        "srv_eth0_rps_flow_cnt": read_in(&srv, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt"),
        "tracepoints": links.iter().map(|(tp, p, l)| serde_json::json!({ "tracepoint": tp, "prog_id": p, "link_id": l })).collect::<Vec<_>>(),
        "cpu_group": group.as_ref().map(|g| g.path().display().to_string()),
    });
    Ok(Setup { cli, srv, recorder, trains: train_rec, rfs, tso_rule, gso_max_segs, group, group_procs, facts })
}

/// The inode of namespace `ns` (`ns.inum` in the kernel: what the train recorder filters on).
fn netns_inode(ns: &Netns) -> Result<u32, LiveError> {
    use std::os::unix::fs::MetadataExt;
    let m = ns.file()?.metadata().map_err(|e| failed(format!("namespace {}: {e}", ns.name)))?;
    Ok(m.ino() as u32)
}

fn ifindex_in(ns: &Netns, dev: &str) -> Result<u32, LiveError> {
    crate::sys::in_netns(&ns.file()?, || crate::sys::ifindex(dev))
        .map_err(|e| failed(format!("{dev} in {}: {e}", ns.name)))
}

/// EEVDF's delayed dequeue is a scheduler feature (`DELAY_DEQUEUE` in
/// /sys/kernel/debug/sched/features, machine-wide): measured through the recorder's
/// `wakeups_delayed_frac`, never toggled. Whether debugfs shows the switch is recorded: read
/// where debugfs is mounted, else in a private mount namespace (`unshare -m`, which changes no
/// mount of the machine).
fn sched_features() -> serde_json::Value {
    const FEATURES: &str = "/sys/kernel/debug/sched/features";
    if let Ok(t) = std::fs::read_to_string(FEATURES) {
        return serde_json::json!({ "debugfs": "mounted", "features": t.trim() });
    }
    let script = format!("mount -t debugfs none /sys/kernel/debug && cat {FEATURES}");
    match std::process::Command::new("unshare").args(["-m", "sh", "-c", &script]).output() {
        Ok(o) if o.status.success() => serde_json::json!({
            "debugfs": "not mounted; read in a private mount namespace",
            "features": String::from_utf8_lossy(&o.stdout).trim(),
        }),
        Ok(o) => serde_json::json!({
            "debugfs": "not mounted; read in a private mount namespace",
            "features": null,
            "error": String::from_utf8_lossy(&o.stderr).trim(),
        }),
        Err(e) => serde_json::json!({ "debugfs": "not mounted", "features": null, "error": e.to_string() }),
    }
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

/// The metrics of one point and, per flow, its train summary.
pub struct Measured {
    pub metrics: BTreeMap<String, f64>,
    /// (reader's port, the flow's summary), by port.
    pub flows: Vec<(u16, BTreeMap<String, f64>)>,
}

/// The per-flow columns averaged over a point's flows into results.csv.
const FLOW_MEANS: &[&str] = &[
    "emit_segs_mean",
    "emit_at_rule_frac",
    "emit_from_pacing_timer_frac",
    "emit_over_sender_frac",
    "rx_train_segs_mean",
    "rx_train_bytes_mean",
    "rx_on_emit_cpu_frac",
    "rx_delay_us_p50",
    "wakeups_per_train",
    "trains_read_in_parts_frac",
    "pacing_timer_late_us_p50",
];

/// The gap that ends a train at the readers' veth: half the time one full frame (1,514 bytes on
/// the wire without FCS) takes at one flow's paced rate. Segments paced one by one arrive that
/// far apart or further; closer frames left together.
pub fn train_gap_ns(rate_mbit: f64, flows: u32) -> u64 {
    let per_flow_bps = rate_mbit * 1e6 / f64::from(flows);
    (1514.0 * 8.0 / per_flow_bps * 1e9 / 2.0) as u64
}

/// Keep a reader's wake-up (`sched_waking`) or start of run (`sched_switch` to it) if it falls
/// in the window `[win.0, win.1)`, under its flow's port.
fn note_reader(
    times: &mut BTreeMap<u16, ReaderTimes>,
    port_of: &BTreeMap<u32, u16>,
    e: &super::wake::Event,
    win: (u64, u64),
) {
    let Some(&port) = port_of.get(&e.pid) else { return };
    if e.ts_ns < win.0 || e.ts_ns >= win.1 {
        return;
    }
    let r = times.entry(port).or_default();
    match e.kind {
        Kind::Waking => r.woken_ns.push(e.ts_ns),
        Kind::SwitchIn => r.run_ns.push(e.ts_ns),
        _ => {}
    }
}

/// One point: `flows` sender → reader pairs for warm-up + window (the variant's settings are in
/// place: see `run`); the readers'
/// wake-ups over the window, classified, and the flows' trains.
pub fn run_point(cfg: &Options, run: &LiveRun, s: &Setup, flows: u32) -> Result<Measured, LiveError> {
    let secs = cfg.warmup_s + cfg.window_s;
    let (lost0, tlost0) = (s.recorder.lost(), s.trains.lost());
    let _ = s.recorder.drain().map_err(failed)?;
    let _ = s.trains.drain().map_err(failed)?;
    let (srv, cli) = (s.srv.file()?, s.cli.file()?);
    let cg = s.group_procs.as_ref();
    let mut readers = Vec::new();
    let mut port_of = BTreeMap::new();
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
        s.trains.set_task(w.pid(), Some(trains::WHO_READER)).map_err(failed)?;
        port_of.insert(w.pid(), port);
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
        s.trains.set_task(w.pid(), Some(trains::WHO_SENDER)).map_err(failed)?;
        senders.push(w);
    }
    let mut tracker = Tracker::new();
    let t0 = Instant::now() + Duration::from_nanos(start_ns.saturating_sub(crate::sys::monotonic_ns()));
    let warm_end = t0 + Duration::from_secs_f64(cfg.warmup_s);
    let end = warm_end + Duration::from_secs_f64(cfg.window_s);
    let mut warm = true;
    let (mut busy0, mut load0) = (Vec::new(), f64::NAN);
    // The window in CLOCK_MONOTONIC ns (the programs' clock), its train records and the readers'
    // wake-up and run times.
    let (mut win0, mut win1) = (u64::MAX, u64::MAX);
    let mut train_events: Vec<trains::Event> = Vec::new();
    let mut reader_times: BTreeMap<u16, ReaderTimes> = BTreeMap::new();
    loop {
        run.sleep(Duration::from_millis(50))?;
        for e in s.recorder.drain().map_err(failed)? {
            tracker.feed(&e);
            note_reader(&mut reader_times, &port_of, &e, (win0, win1));
        }
        train_events
            .extend(s.trains.drain().map_err(failed)?.into_iter().filter(|e| e.ts_ns >= win0 && e.ts_ns < win1));
        let now = Instant::now();
        if warm && now >= warm_end {
            tracker.reset();
            win0 = crate::sys::monotonic_ns();
            busy0 = cpu_busy_ticks();
            load0 = loadavg();
            warm = false;
        }
        if now >= end {
            win1 = crate::sys::monotonic_ns();
            break;
        }
    }
    let busy1 = cpu_busy_ticks();
    let window_s = cfg.window_s;
    let mut m = tracker.metrics(window_s);
    // The records still in the rings belong to the window's last 50 ms.
    train_events.extend(s.trains.drain().map_err(failed)?.into_iter().filter(|e| e.ts_ns >= win0 && e.ts_ns < win1));
    for e in s.recorder.drain().map_err(failed)? {
        note_reader(&mut reader_times, &port_of, &e, (win0, win1));
    }
    for w in &readers {
        s.recorder.unwatch(w.pid());
        let _ = s.trains.set_task(w.pid(), None);
    }
    for w in &senders {
        let _ = s.recorder.set_sender(w.pid(), false);
        let _ = s.trains.set_task(w.pid(), None);
    }
    let lost = s.recorder.lost() - lost0;
    let tlost = s.trains.lost() - tlost0;
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
    m.insert("trains_recorder_lost".into(), tlost as f64);
    m.insert("loadavg_1m".into(), load0);
    if lost > 0 || tlost > 0 {
        return Err(failed(format!(
            "the recorders' ring buffers lost {lost} wake-up and {tlost} train records: the point would be wrong"
        )));
    }
    // Per flow: its records, its reader's times, the summary; their mean over flows.
    let gap_ns = train_gap_ns(cfg.rate_mbit, flows);
    let mut per_flow = Vec::new();
    for f in 0..flows {
        let port = PORT_BASE + f as u16;
        let ev: Vec<trains::Event> = train_events.iter().filter(|e| e.port == port).copied().collect();
        let times = reader_times.remove(&port).unwrap_or_default();
        per_flow.push((port, trains::flow_summary(&ev, &times, &s.tso_rule, gap_ns, window_s)));
    }
    for k in FLOW_MEANS {
        let v: Vec<f64> = per_flow.iter().map(|(_, fm)| fm[*k]).filter(|x| x.is_finite()).collect();
        m.insert((*k).to_string(), if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 });
    }
    m.insert("train_gap_threshold_us".into(), gap_ns as f64 / 1e3);
    m.insert("train_records".into(), train_events.len() as f64);
    Ok(Measured { metrics: m, flows: per_flow })
}

/// The keys of a point: `variant`, the flow count, `rep`.
fn keys(variant: Variant, flows: u32, rep: u32) -> Vec<(&'static str, String)> {
    vec![("variant", variant.name().to_string()), (FLOWS_KEY, flows.to_string()), ("rep", rep.to_string())]
}

/// A point of results.csv: `variant`, the flow count, `rep`, then every metric.
pub fn point(variant: Variant, flows: u32, rep: u32, m: BTreeMap<String, f64>) -> Point {
    Point::new(&keys(variant, flows, rep), m)
}

/// The rows of trains.csv for one point: its keys, then `flow` (0-based) and `port`, then the
/// flow's summary.
pub fn flow_rows(variant: Variant, flows: u32, rep: u32, per_flow: &[(u16, BTreeMap<String, f64>)]) -> Vec<Point> {
    per_flow
        .iter()
        .map(|(port, m)| {
            let mut k = keys(variant, flows, rep);
            k.push(("flow", (port - PORT_BASE).to_string()));
            k.push(("port", port.to_string()));
            Point::new(&k, m.clone())
        })
        .collect()
}

/// What a point's progress line shows.
const SHOWN: &[Shown] = &[
    ("wake-ups/s", "wakeups_per_s", 0),
    ("remote", "wakeups_remote_frac", 2),
    ("on waker", "wakeups_on_waker_frac", 2),
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
    ("segs/skb", "emit_segs_mean", 1),
    ("segs/train", "rx_train_segs_mean", 1),
    ("wake-ups/train", "wakeups_per_train", 2),
    ("rx Mbit/s", "reader_rx_mbps", 0),
    ("load", "loadavg_1m", 2),
];

/// Put a variant's settings in place for a point (`on`) or back: RFS, or the senders' veth's
/// gso_max_segs. Returns the settings as the kernel shows them, for the point's row.
fn variant_settings(s: &Setup, variant: Variant, on: bool) -> Result<BTreeMap<String, f64>, LiveError> {
    match variant {
        Variant::Linux => {}
        Variant::Rfs => s.rfs.as_ref().expect("recorded at setup when a variant needs it").set(on)?,
        Variant::PerSegment => {
            let segs = if on { "1".to_string() } else { s.gso_max_segs.to_string() };
            crate::netns::ip(&["-n", &s.cli.name, "link", "set", "eth0", "gso_max_segs", &segs]).map_err(failed)?;
        }
    }
    let mut m = BTreeMap::new();
    let segs = read_in(&s.cli, "/sys/class/net/eth0/gso_max_segs").parse().unwrap_or(f64::NAN);
    m.insert("senders_gso_max_segs".into(), segs);
    let queue = read_in(&s.srv, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt").parse().unwrap_or(f64::NAN);
    m.insert("rps_flow_cnt".into(), queue);
    let global = std::fs::read_to_string(super::rfs::SOCK_FLOW_ENTRIES).ok().and_then(|t| t.trim().parse().ok());
    m.insert("rps_sock_flow_entries".into(), global.unwrap_or(f64::NAN));
    Ok(m)
}

/// The whole sweep (repetitions outermost, then flow counts, each measured in every variant one
/// after another); each point is written to results.csv, its flows to trains.csv, as measured.
pub fn run(cfg: &Options, run: &mut LiveRun) -> Result<(), LiveError> {
    let s = setup(cfg, run)?;
    run.set_info("setup", s.facts.clone());
    let mut flow_points = Vec::new();
    for rep in 1..=cfg.common.reps {
        for &flows in &cfg.flows {
            for &variant in &cfg.variants {
                run.check()?;
                let settings = variant_settings(&s, variant, true)?;
                let measured = run_point(cfg, run, &s, flows);
                variant_settings(&s, variant, false)?;
                let Measured { mut metrics, flows: per_flow } = measured?;
                metrics.extend(settings);
                let p = point(variant, flows, rep, metrics);
                run.progress(p.line(SHOWN));
                run.push(p)?;
                flow_points.extend(flow_rows(variant, flows, rep, &per_flow));
                let csv = crate::harness::results_csv(&flow_points);
                crate::harness::write_atomic(run.out(), "trains.csv", csv.as_bytes()).map_err(failed)?;
            }
        }
    }
    run.check()?;
    drop(s);
    Ok(())
}

/// The command: its options, its plan, and this experiment as its run.
impl Experiment for Options {
    const NAME: &'static str = "goda-wakeups";

    fn common(&self) -> &Common {
        &self.common
    }

    fn points(&self) -> usize {
        self.flows.len() * self.variants.len() * self.common.reps as usize
    }

    fn plan(&self) -> String {
        let v: Vec<&str> = self.variants.iter().map(|v| v.name()).collect();
        format!("each {:.1} s (+{:.1} s warm-up), flows {:?}, variants {v:?}", self.window_s, self.warmup_s, self.flows)
    }

    fn run(&self, run: &mut LiveRun) -> Result<(), LiveError> {
        self::run(self, run)
    }
}
