//! `hostsim live ozaki-pbq`: paper 000's Fig. 5 experiment on this machine's kernel.
//!
//! ```text
//!  ns bwc (CPU 1)                 ns srv                                   CPU 0
//!  sender 34k pkt/s ──veth── eth0 ┐ XDP pbq_xdp (veth NAPI, on the        ┌ bw    :5000 nice -19
//!                                  ├ sender's CPU) → RPS → backlog CPU 0 → ┤
//!  sender flood ──────veth── eth1 ┘  → IP/UDP → socket                     └ flood :6000-6003 nice 19
//!  ns fld (CPU 1)
//! ```
//!
//! A veth delivers on the CPU that transmits, so the senders' CPU plays the NIC and its driver;
//! RPS on the server's veths moves protocol processing to the server's CPU, where it competes
//! with the server processes, as the NIC interrupts did in the paper. The XDP program is
//! attached in every run; with the mechanism off it only counts, so both curves use the same
//! data path. Each point: start the five sinks, wait until the agent has mapped their ports,
//! start the senders, warm up, mark the window in every process (signals) while snapshotting
//! the kernel's counters, and stop everything. Results use the model's metric names.

use crate::agent::{Agent, AgentConfig, Snapshot};
use crate::cgroup::CpuGroup;
pub use crate::harness::LiveError;
use crate::harness::{failed, LiveRun, Netns, Point};
use crate::netns::Veth;
use crate::procfs::{self, CpuTimes, Softnet};
use crate::worker::{self, Placement, Worker, WorkerReport};
use std::fs::File;
use crate::xdp::{level_of_nice, LEVELS};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The swept key, named as in the model scenario so the two overlay.
pub const RATE_KEY: &str = "traffic.floodclients.rate_pps";
pub const BW_PORT: u16 = 5000;
pub const FLOOD_PORTS: [u16; 4] = [6000, 6001, 6002, 6003];
pub const BW_NICE: i32 = -19;
pub const FLOOD_NICE: i32 = 19;

#[derive(Clone, Debug)]
pub struct OzakiConfig {
    /// Total flood rate of the four flows, per point.
    pub rates_pps: Vec<f64>,
    pub reps: u32,
    /// Mechanism settings to run at each point: false = off (count only), true = on.
    pub modes: Vec<bool>,
    pub bw_rate_pps: f64,
    pub payload_bytes: usize,
    pub warmup_s: f64,
    pub window_s: f64,
    pub server_cpu: usize,
    pub client_cpu: usize,
    pub agent: AgentConfig,
    /// Run the workers in a CPU cgroup of the largest weight (see `cgroup.rs`).
    pub cgroup: bool,
    /// The program to run as a worker (`hostsim`) and the arguments before the worker's own.
    pub worker_exe: PathBuf,
    pub worker_args: Vec<String>,
}

impl OzakiConfig {
    pub fn new(worker_exe: PathBuf, worker_args: Vec<String>) -> OzakiConfig {
        OzakiConfig {
            // Flood rates: the server's CPU saturates near 100,000 pkt/s with the mechanism off;
            // past ~150,000 the flood sender's own CPU (shared with both veths' receive polls)
            // limits what it achieves (floodclients_sent_pps).
            rates_pps: vec![1_000.0, 25_000.0, 50_000.0, 75_000.0, 100_000.0, 150_000.0, 200_000.0, 400_000.0],
            reps: 3,
            modes: vec![false, true],
            bw_rate_pps: 34_000.0,
            payload_bytes: 18,
            warmup_s: 0.5,
            window_s: 2.0,
            server_cpu: 0,
            client_cpu: 1,
            agent: AgentConfig::default(),
            cgroup: true,
            worker_exe,
            worker_args,
        }
    }
}

/// One row of results.csv: the point, the variant and the metrics.
#[derive(Clone, Debug)]
pub struct Row {
    pub rate_pps: f64,
    pub variant: &'static str,
    pub rep: u32,
    pub metrics: BTreeMap<String, f64>,
}

pub fn variant_name(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// The namespaces, agent and CPU group of one run. Everything here is recorded in the run's
/// ledger; dropping the agent detaches the program, and [`LiveRun::finish`] removes the rest.
pub struct Setup {
    pub agent: Agent,
    pub srv: Netns,
    pub bwc: Netns,
    pub fld: Netns,
    pub group: Option<CpuGroup>,
    /// The group's `cgroup.procs`, open for the workers to join.
    group_procs: Option<File>,
}

/// Create the namespaces and veths, set RPS, start the agent (loading and attaching the
/// program), all through `run` (recorded in its ledger).
pub fn setup(cfg: &OzakiConfig, run: &LiveRun) -> Result<Setup, LiveError> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cfg.server_cpu >= ncpu || cfg.client_cpu >= ncpu {
        return Err(LiveError::Unsupported(format!(
            "needs CPUs {} and {}; this machine has {ncpu}",
            cfg.server_cpu, cfg.client_cpu
        )));
    }
    let (srv, bwc, fld) = (run.netns("srv")?, run.netns("bwc")?, run.netns("fld")?);
    let group = if cfg.cgroup {
        match run.cpu_group() {
            Ok(g) => Some(g),
            Err(LiveError::Unsupported(e)) => {
                run.progress(format!("hostsim live: running without a CPU cgroup: {e}"));
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let group_procs = match &group {
        Some(g) => Some(std::fs::OpenOptions::new().write(true).open(g.procs_file()).map_err(|e| failed(format!("{}: {e}", g.procs_file().display())))?),
        None => None,
    };
    for (ns_b, a, n) in [(&bwc, "eth0", 0), (&fld, "eth1", 1)] {
        run.veth(&Veth {
            ns_a: srv.name.clone(),
            a: a.into(),
            addr_a: format!("198.18.{n}.1/24"),
            ns_b: ns_b.name.clone(),
            b: "eth0".into(),
            addr_b: format!("198.18.{n}.2/24"),
        })?;
        run.set_rps(&srv, a, 1 << cfg.server_cpu)?;
    }
    let tasks = group.as_ref().map(|g| g.path().join("tasks"));
    let agent = Agent::start(srv.file()?, vec!["eth0".into(), "eth1".into()], cfg.agent.clone(), tasks)
        .map_err(|e| LiveError::Unsupported(e.0))?;
    for a in agent.attachments() {
        run.record_xdp(Some(&srv), &a.iface, a.prog_id, a.link_id)?;
    }
    Ok(Setup { agent, srv, bwc, fld, group, group_procs })
}

/// Counters at one instant.
struct Snap {
    t: Instant,
    stat: Vec<CpuTimes>,
    softnet: Vec<Softnet>,
    agent: Snapshot,
    /// CPU ticks of each sink process.
    proc_ticks: BTreeMap<u32, u64>,
    /// Client-side devices (by namespace role): tx dropped.
    client_tx_dropped: u64,
}

fn snap(agent: &Agent, sinks: &[Worker], senders: &[Worker]) -> Snap {
    let mut proc_ticks = BTreeMap::new();
    for w in sinks {
        if let Some(s) = procfs::read_pid_stat(w.pid()) {
            proc_ticks.insert(w.pid(), s.utime + s.stime);
        }
    }
    let mut client_tx_dropped = 0;
    for w in senders {
        // /proc/PID/net shows the namespace of PID: the sender's own.
        if let Ok(t) = std::fs::read_to_string(format!("/proc/{}/net/dev", w.pid())) {
            client_tx_dropped += procfs::parse_net_dev(&t).get("eth0").map_or(0, |d| d.tx_dropped);
        }
    }
    Snap {
        t: Instant::now(),
        stat: procfs::read_stat().unwrap_or_default(),
        softnet: procfs::read_softnet().unwrap_or_default(),
        agent: agent.snapshot(),
        proc_ticks,
        client_tx_dropped,
    }
}

fn sink_args(cfg: &OzakiConfig, port: u16, secs: f64) -> Vec<String> {
    let mut a = cfg.worker_args.clone();
    a.extend(["sink".into(), "--port".into(), port.to_string(), "--secs".into(), format!("{secs}")]);
    a
}

fn sender_args(cfg: &OzakiConfig, dst: &str, ports: &[u16], rate: f64, secs: f64) -> Vec<String> {
    let mut a = cfg.worker_args.clone();
    let ports = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",");
    a.extend([
        "send".into(),
        "--dst".into(),
        dst.into(),
        "--ports".into(),
        ports,
        "--rate-pps".into(),
        format!("{rate}"),
        "--payload".into(),
        cfg.payload_bytes.to_string(),
        "--secs".into(),
        format!("{secs}"),
    ]);
    a
}

/// Wait until the agent's table holds every server port at its owner's level (≤ 3 s).
fn wait_ports_mapped(run: &LiveRun, agent: &Agent) -> Result<(), LiveError> {
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let s = agent.snapshot();
        let ok = s.ports.get(&BW_PORT).map(|o| o.level) == Some(level_of_nice(BW_NICE))
            && FLOOD_PORTS.iter().all(|p| s.ports.get(p).map(|o| o.level) == Some(level_of_nice(FLOOD_NICE)));
        if ok {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(failed(format!("the agent did not map the server ports within 3 s: {:?}", s.ports)));
        }
        run.sleep(Duration::from_millis(20))?;
    }
}

/// One point: returns its metrics.
pub fn run_point(cfg: &OzakiConfig, run: &LiveRun, s: &Setup, rate_pps: f64, on: bool) -> Result<BTreeMap<String, f64>, LiveError> {
    let agent = &s.agent;
    agent.enable(on);
    let secs = cfg.warmup_s + cfg.window_s + 5.0; // the workers' own time limit
    let srv = s.srv.file()?;
    let cg = s.group_procs.as_ref();
    let on_server = |nice| Placement { netns: &srv, cpu: Some(cfg.server_cpu), nice, cgroup: cg };
    let mut sinks = Vec::new();
    sinks.push(worker::spawn("bw", &cfg.worker_exe, &sink_args(cfg, BW_PORT, secs), &on_server(BW_NICE)).map_err(failed)?);
    for (i, &p) in FLOOD_PORTS.iter().enumerate() {
        let w = worker::spawn(&format!("flood-{i}"), &cfg.worker_exe, &sink_args(cfg, p, secs), &on_server(FLOOD_NICE))
            .map_err(failed)?;
        sinks.push(w);
    }
    wait_ports_mapped(run, agent)?;
    let bwc = s.bwc.file()?;
    let fld = s.fld.file()?;
    let mut senders = Vec::new();
    // Backlog drops over the whole run (softnet counts are global: any drop on the machine).
    let backlog_dropped = || procfs::read_softnet().unwrap_or_default().iter().map(|x| x.dropped).sum::<u64>();
    let backlog0 = backlog_dropped();
    let client = |f, nice| Placement { netns: f, cpu: Some(cfg.client_cpu), nice, cgroup: cg };
    // The bw client stands for the paper's separate measurement machine: here it shares CPU 1
    // with the flood client and with both veths' receive polls (whose softirq time the
    // scheduler charges to whichever sender is running), so at nice 0 the flood would starve
    // it and bw would lose packets before they exist. At nice -19 it sends its rate whatever
    // the flood does, and what bw loses is lost at the server.
    senders.push(
        worker::spawn("bwclient", &cfg.worker_exe, &sender_args(cfg, "198.18.0.1", &[BW_PORT], cfg.bw_rate_pps, secs), &client(&bwc, BW_NICE))
            .map_err(failed)?,
    );
    if rate_pps > 0.0 {
        senders.push(
            worker::spawn("floodclients", &cfg.worker_exe, &sender_args(cfg, "198.18.1.1", &FLOOD_PORTS, rate_pps, secs), &client(&fld, 0))
                .map_err(failed)?,
        );
    }
    run.sleep(Duration::from_secs_f64(cfg.warmup_s))?;
    for w in senders.iter().chain(sinks.iter()) {
        w.signal(libc::SIGUSR1);
    }
    let a = snap(agent, &sinks, &senders);
    run.sleep(Duration::from_secs_f64(cfg.window_s))?;
    for w in senders.iter().chain(sinks.iter()) {
        w.signal(libc::SIGUSR2);
    }
    let b = snap(agent, &sinks, &senders);
    let sink_pids: Vec<(String, u32)> = sinks.iter().map(|w| (w.name.clone(), w.pid())).collect();
    let mut sent = BTreeMap::new();
    for w in senders {
        let name = w.name.clone();
        sent.insert(name, w.finish(Duration::from_secs(3)).map_err(failed)?);
    }
    let backlog_total = backlog_dropped().saturating_sub(backlog0) as f64;
    let mut got = BTreeMap::new();
    for w in sinks {
        let name = w.name.clone();
        got.insert(name, w.finish(Duration::from_secs(3)).map_err(failed)?);
    }
    let mut m = metrics(&a, &b, &sent, &got, &sink_pids);
    // Whole-run accounting of bw's packets, free of the window marks' timing: sent − received
    // is what the path dropped, and the places are counted (its veth's ring, its socket, the
    // program's bw level, and the backlog, the only one not per flow).
    let (bs, bg) = (sent.get("bwclient").copied().unwrap_or_default(), got.get("bw").copied().unwrap_or_default());
    m.insert("bwclient_sent_total".into(), bs.count as f64);
    m.insert("bw_rx_total".into(), bg.count as f64);
    m.insert("bw_drop_nic_ring_total".into(), bs.dev_tx_dropped.map_or(f64::NAN, |x| x as f64));
    m.insert("bw_drop_socket_total".into(), bg.socket_drops.map_or(f64::NAN, |x| x as f64));
    m.insert("drop_backlog_total".into(), backlog_total);
    // The flood's whole run likewise (its sinks drain their sockets too): whether the flood was
    // cut at all is read here, not from the window, whose late marks can count more received
    // than sent when the flood loses little.
    let flood_got: u64 = got.iter().filter(|(n, _)| n.starts_with("flood")).map(|(_, r)| r.count).sum();
    m.insert("floodclients_sent_total".into(), sent.get("floodclients").map_or(0.0, |r| r.count as f64));
    m.insert("flood_rx_total".into(), flood_got as f64);
    Ok(m)
}

fn metrics(
    a: &Snap,
    b: &Snap,
    sent: &BTreeMap<String, WorkerReport>,
    got: &BTreeMap<String, WorkerReport>,
    sink_pids: &[(String, u32)],
) -> BTreeMap<String, f64> {
    let secs = b.t.duration_since(a.t).as_secs_f64().max(1e-9);
    let mut m = BTreeMap::new();
    let win = |r: &WorkerReport| r.in_window().unwrap_or(0) as f64 / secs;
    let bw_sent = sent.get("bwclient").map_or(0.0, win);
    let flood_sent = sent.get("floodclients").map_or(0.0, win);
    let bw_rx = got.get("bw").map_or(0.0, win);
    let flood_rx: f64 = got.iter().filter(|(n, _)| n.starts_with("flood")).map(|(_, r)| win(r)).sum();
    let count = |r: Option<&WorkerReport>| r.and_then(WorkerReport::in_window).unwrap_or(0) as f64;
    m.insert("bwclient_sent_count".into(), count(sent.get("bwclient")));
    m.insert("floodclients_sent_count".into(), count(sent.get("floodclients")));
    m.insert("bw_rx_count".into(), count(got.get("bw")));
    m.insert("flood_rx_count".into(), got.iter().filter(|(n, _)| n.starts_with("flood")).map(|(_, r)| count(Some(r))).sum());
    m.insert("bwclient_sent_pps".into(), bw_sent);
    m.insert("floodclients_sent_pps".into(), flood_sent);
    m.insert("offered_pps".into(), bw_sent + flood_sent);
    m.insert("bw_rx_pps".into(), bw_rx);
    m.insert("flood_rx_pps".into(), flood_rx);
    m.insert("delivered_pps".into(), bw_rx + flood_rx);
    // Drops by place, in the model's names (crates/host/src/types.rs DROP_NAMES) plus `xdp`.
    let d = |f: &dyn Fn(&Snap) -> u64| f(b).saturating_sub(f(a)) as f64 / secs;
    let backlog = d(&|s: &Snap| s.softnet.iter().map(|x| x.dropped).sum());
    let udp = |k: &'static str| move |s: &Snap| s.agent.udp.get(k).copied().unwrap_or(0);
    let xdp_drop = d(&|s: &Snap| s.agent.xdp.iter().map(|l| l.drop).sum());
    m.insert("drop_xdp_pps".into(), xdp_drop);
    m.insert("drop_backlog_pps".into(), backlog);
    m.insert("drop_socket_pps".into(), d(&udp("RcvbufErrors")));
    m.insert("drop_no_socket_pps".into(), d(&udp("NoPorts")));
    // A veth's ring (VETH_RING_SIZE) stands where the NIC's RX ring does: its overflow is
    // counted on the transmitting end.
    m.insert("drop_nic_ring_pps".into(), d(&|s: &Snap| s.client_tx_dropped));
    // The same two places as counts over the window: where the program cannot protect anyone
    // (before it: the veth ring; after its XDP_PASS: the backlog, shared with the flood's
    // minimum share), so a test can check that bw's losses are all explained by them.
    let n = |f: &dyn Fn(&Snap) -> u64| f(b).saturating_sub(f(a)) as f64;
    m.insert("drop_backlog_count".into(), n(&|s: &Snap| s.softnet.iter().map(|x| x.dropped).sum()));
    m.insert("drop_nic_ring_count".into(), n(&|s: &Snap| s.client_tx_dropped));
    let lvl = |l: u8, f: fn(&crate::xdp::LevelStats) -> u64| {
        d(&move |s: &Snap| s.agent.xdp.get(l as usize).map_or(0, f))
    };
    let (bw_l, fl_l) = (level_of_nice(BW_NICE), level_of_nice(FLOOD_NICE));
    m.insert("bw_drop_xdp_pps".into(), lvl(bw_l, |x| x.drop));
    m.insert("flood_drop_xdp_pps".into(), lvl(fl_l, |x| x.drop));
    m.insert("flood_share_pass_pps".into(), lvl(fl_l, |x| x.share_pass));
    m.insert("xdp_rx_pps".into(), d(&|s: &Snap| s.agent.xdp.iter().take(LEVELS).map(|l| l.rx).sum()));
    let sock = |ports: &'static [u16]| {
        move |s: &Snap| ports.iter().map(|p| s.agent.sock_drops.get(p).copied().unwrap_or(0)).sum::<u64>()
    };
    m.insert("bw_drop_socket_pps".into(), d(&sock(&[BW_PORT])));
    m.insert("flood_drop_socket_pps".into(), d(&sock(&FLOOD_PORTS)));
    // CPU shares from /proc/stat: mean over CPUs (the model's cpu_<state>_frac) and per CPU.
    let n = b.stat.len().min(a.stat.len());
    let mut mean: BTreeMap<&str, f64> = BTreeMap::new();
    for c in 0..n {
        for (state, v) in b.stat[c].since(&a.stat[c]).shares() {
            m.insert(format!("cpu{c}_{state}_frac"), v);
            *mean.entry(state).or_default() += v / n as f64;
        }
    }
    for (state, v) in &mean {
        m.insert(format!("cpu_{state}_frac"), *v);
    }
    m.insert("cpu_spin_frac".into(), 0.0);
    m.insert("cpu_util".into(), 1.0 - mean.get("idle").copied().unwrap_or(1.0));
    // Per-process CPU (fraction of one CPU), as the model's <process>_cpu_frac.
    let hz = procfs::ticks_per_s();
    let ticks = |pid: u32| b.proc_ticks.get(&pid).copied().unwrap_or(0).saturating_sub(a.proc_ticks.get(&pid).copied().unwrap_or(0));
    let mut flood_cpu = 0.0;
    for (name, pid) in sink_pids {
        let f = ticks(*pid) as f64 / hz / secs;
        if name == "bw" {
            m.insert("bw_cpu_frac".into(), f);
        } else {
            flood_cpu += f;
        }
    }
    m.insert("flood_cpu_frac".into(), flood_cpu);
    let hl = b.agent.high_load_ns.saturating_sub(a.agent.high_load_ns) as f64 * 1e-9 / secs;
    m.insert("high_load_frac".into(), hl.min(1.0));
    m.insert("high_load_entries".into(), b.agent.high_load_entries.saturating_sub(a.agent.high_load_entries) as f64);
    m.insert("window_s".into(), secs);
    m
}

/// The whole sweep: every rate × mode × repetition (repetitions outermost, so a drift of the
/// machine during the run spreads over all points), each point written to `results.csv` as it
/// is measured. The caller ends `run` ([`LiveRun::finish`]).
pub fn run(cfg: &OzakiConfig, run: &mut LiveRun) -> Result<(), LiveError> {
    let s = setup(cfg, run)?;
    for rep in 1..=cfg.reps {
        for &rate in &cfg.rates_pps {
            for &on in &cfg.modes {
                run.check()?;
                let metrics = run_point(cfg, run, &s, rate, on)?;
                let row = Row { rate_pps: rate, variant: variant_name(on), rep, metrics };
                run.progress(row_line(&row));
                run.push(row.point())?;
            }
        }
    }
    drop(s);
    Ok(())
}

impl Row {
    /// As a point of results.csv: `variant`, the swept key, `rep`, then every metric.
    pub fn point(&self) -> Point {
        Point {
            keys: vec![
                ("variant".into(), self.variant.into()),
                (RATE_KEY.into(), format!("{}", self.rate_pps)),
                ("rep".into(), self.rep.to_string()),
            ],
            metrics: self.metrics.clone(),
        }
    }
}

/// One point as a line of progress.
pub fn row_line(r: &Row) -> String {
    let g = |k: &str| r.metrics.get(k).copied().unwrap_or(f64::NAN);
    format!(
        "rep {} flood {:>8.0} {:>3}: flood sent {:>8.0}  bw sent {:>6.0} rx {:>6.0}  flood rx {:>7.0}  drops xdp {:>7.0} backlog {:>7.0} socket {:>7.0}  cpu0 softirq {:>4.2} idle {:>4.2}  high load {:.2}",
        r.rep,
        r.rate_pps,
        r.variant,
        g("floodclients_sent_pps"),
        g("bwclient_sent_pps"),
        g("bw_rx_pps"),
        g("flood_rx_pps"),
        g("drop_xdp_pps"),
        g("drop_backlog_pps"),
        g("drop_socket_pps"),
        g("cpu0_softirq_frac"),
        g("cpu0_idle_frac"),
        g("high_load_frac"),
    )
}
