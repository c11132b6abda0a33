//! `hostsim live ozaki-pbq`: paper 000's Fig. 5 experiment on this machine's kernel, with the
//! receiver, not the sender, as the bottleneck.
//!
//! ```text
//!  ns cli (CPU 1, the live-frames generator at SCHED_FIFO)      ns srv                    CPU 0
//!  bw    34k pkt/s  ── eth0 ═veth═ eth0 ┐ XDP pbq_xdp → (rps: RPS to CPU 0 │ threaded:   ┌ bw    :5000 nice -19
//!  flood rate pkt/s ── eth1 ═veth═ eth1 ┘  NAPI kthread on CPU 0, FIFO) → IP/UDP → socket └ flood :6000-6003 nice 19
//! ```
//!
//! **The overload.** Both streams come from the kernel-side generator of `gen.rs`
//! (`BPF_PROG_RUN` with live frames, paced): the offered rate is the one asked for whatever the
//! receiver does, so off and on are compared at the same offered load, and a point whose
//! generator did not reach `valid_frac` of its rate in the window is marked invalid
//! (`valid` = 0). Two placements of the receive work (`placement`):
//! - `rps`: the server veths' NAPI poll (and the program) runs where the generator transmits
//!   (CPU 1); RPS moves the protocol work to CPU 0's backlog, where its softirq competes with the
//!   server processes, as the paper's interrupts did.
//! - `threaded`: threaded NAPI on the server veths, their kthreads pinned to CPU 0 at
//!   SCHED_FIFO: the whole receive path (program, IP/UDP, socket) preempts the server processes
//!   on their CPU, as hard IRQ + softirq did on 2.4.
//!
//! The default flood rates (200,000–1,000,000 pkt/s) go past what the server's CPU takes in
//! (~470,000 pkt/s of flood here), as the paper's Fig. 5 swept its flood past its server's
//! capacity to livelock. The sockets keep this machine's `rmem_default`: with the paper's
//! 65,535 bytes ([`RCVBUF_2_4_BYTES`], ~14 of this path's ~4.4 KB frames against 2.4's ~28)
//! bw lost as much at 1,000 pkt/s of flood as at 300,000, to other processes on its CPU, so
//! the set-up would measure the machine's neighbours, not the flood (the docs book's ozaki-pbq page, docs/src/live/ozaki-pbq.md: results).
//!
//! **Variants** ([`Variant`]): `off` (the program counts only), `on` (the priority drop),
//! `supp` (interrupt suppression, `suppress.rs`: the agent moves or lowers the threaded-NAPI
//! kthreads while bw has data waiting under high load) and `both`; the last two only in the
//! `threaded` placement.
//!
//! **What is measured.** Every frame carries its stream's sequence number; each sink counts the
//! frames of the window's sequence range (`warmup_s·rate ..(warmup_s + window_s)·rate`) that
//! reached it, whenever it reads them, so bw's loss is exact: `bw_loss_frac = 1 − received /
//! sent` over the window's frames. Drops by place come from the run's own counters (the
//! program's per-level counts, the server veths' `rx_dropped` = ring full, the namespace's UDP
//! counters); `drop_backlog_pps` is the only machine-wide one (`/proc/net/softnet_stat`, every
//! namespace's) and is reported, never used.
//!
//! **The detector's capacity** comes from the mechanism-off points only: the largest delivered
//! rate of a valid `off` point of the same placement whose receiver lost packets (delivered <
//! `valid_frac` × offered). The sweep runs each placement's `off` points before its `on` points,
//! so an `on` point's threshold never depends on how `on` points turn out. `--capacity-pps`
//! fixes it instead.

use super::agent::{Agent, PortSource, Ports, Snapshot};
use super::suppress::SuppressConfig;
use super::xdp::{level_of_nice, LEVELS};
use super::{Options, RxPlacement, Variant};
use crate::cgroup::CpuGroup;
use crate::command::{Common, Experiment};
use crate::gen::{self, Generator, Pacing, Stream, Udp4};
pub use crate::harness::LiveError;
use crate::harness::{failed, LiveRun, Netns, Point, Shown};
use crate::netns::Veth;
use crate::procfs::{self, CpuTimes};
use crate::worker::{self, Placement, Worker, WorkerReport};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::time::{Duration, Instant};

/// The swept key, named as in the model scenario so the two overlay.
pub const RATE_KEY: &str = "traffic.floodclients.rate_pps";
pub const BW_PORT: u16 = 5000;
pub const FLOOD_PORTS: [u16; 4] = [6000, 6001, 6002, 6003];
pub const BW_NICE: i32 = -19;
/// bw's stream is sent in 1 ms quanta (34 frames at its 34,000 pkt/s, which its socket holds)
/// whatever the flood's quantum: every call counts against the page-pool pitfall (gen.rs).
pub const BW_QUANTUM_US: f64 = 1000.0;
pub const FLOOD_NICE: i32 = 19;
/// Linux 2.4's `net.core.rmem_default` (`SK_RMEM_MAX`, 65,535 bytes): every socket of the
/// paper's server had this receive limit.
pub const RCVBUF_2_4_BYTES: u32 = 65_535;

/// The namespaces, agent, generator and CPU group of one run. Everything here is recorded in
/// the run's ledger; dropping the agent and the generator detaches their programs, and
/// [`LiveRun::finish`] removes the rest.
pub struct Setup {
    pub agent: Agent,
    pub gen: Generator,
    pub srv: Netns,
    pub cli: Netns,
    pub group: Option<CpuGroup>,
    /// The group's `cgroup.procs`, open for the workers to join.
    group_procs: Option<File>,
    /// The hooks' cgroup2 group's `cgroup.procs` (with `Options::hooks`).
    hook_procs: Option<File>,
    /// The two streams' template frames (bw, flood).
    frames: (Vec<u8>, Vec<u8>),
    /// The threaded-NAPI kthreads of the current `threaded` placement (recorded in the ledger).
    napi_tids: Vec<u32>,
    /// The placement in force.
    placed: Option<RxPlacement>,
}

/// Create the namespaces and veths, start the agent (loading and attaching the program) and
/// load the generator, all through `run` (recorded in its ledger).
pub fn setup(cfg: &Options, run: &LiveRun) -> Result<Setup, LiveError> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cfg.server_cpu >= ncpu || cfg.client_cpu >= ncpu {
        return Err(LiveError::Unsupported(format!(
            "needs CPUs {} and {}; this machine has {ncpu}",
            cfg.server_cpu, cfg.client_cpu
        )));
    }
    if cfg.payload_bytes < 8 {
        return Err(failed(format!(
            "the payload must hold the 8-byte sequence number, got {} bytes",
            cfg.payload_bytes
        )));
    }
    let (srv, cli) = (run.netns("srv")?, run.netns("cli")?);
    let (group, group_procs) = run.optional_cpu_group(cfg.cgroup)?;
    for (dev, n) in [("eth0", 0), ("eth1", 1)] {
        run.veth(&Veth {
            ns_a: srv.name.clone(),
            a: dev.into(),
            addr_a: format!("198.18.{n}.1/24"),
            ns_b: cli.name.clone(),
            b: dev.into(),
            addr_b: format!("198.18.{n}.2/24"),
        })?;
    }
    let tasks = group.as_ref().map(|g| g.path().join("tasks"));
    let mut acfg = cfg.agent.clone();
    let mut hook_procs = None;
    if cfg.ports == Ports::Hooks {
        // The sinks join this group before they exec, so the hooks see their binds, and only
        // theirs (and only in the server namespace).
        let path = run.v2_group("hooks", "for the bind hooks; `--ports proc` runs without")?;
        let procs = path.join("cgroup.procs");
        hook_procs = Some(
            std::fs::OpenOptions::new()
                .write(true)
                .open(&procs)
                .map_err(|e| failed(format!("{}: {e}", procs.display())))?,
        );
        acfg.ports = PortSource::Hooks { cgroup: path, netns_only: true };
    }
    let agent = Agent::start(srv.file()?, vec!["eth0".into(), "eth1".into()], acfg, tasks)
        .map_err(|e| LiveError::Unsupported(e.0))?;
    for a in agent.attachments() {
        run.record_xdp(Some(&srv), &a.iface, a.prog_id, a.link_id)?;
    }
    for (what, prog_id, link_id) in agent.hook_links() {
        run.record_link(&format!("{what} of {}-hooks", run.name()), *prog_id, *link_id)?;
    }
    let gen = Generator::load(run, &cli)?;
    let frame = |dev: &str, n: u8, port: u16| -> Result<Vec<u8>, LiveError> {
        Ok(gen::udp4_frame(&Udp4 {
            src_mac: gen::mac_of(&cli, dev)?,
            dst_mac: gen::mac_of(&srv, dev)?,
            src_ip: [198, 18, n, 2],
            dst_ip: [198, 18, n, 1],
            src_port: 40000,
            dst_port: port,
            payload: cfg.payload_bytes,
        }))
    };
    let frames = (frame("eth0", 0, BW_PORT)?, frame("eth1", 1, FLOOD_PORTS[0])?);
    Ok(Setup { agent, gen, srv, cli, group, group_procs, hook_procs, frames, napi_tids: Vec::new(), placed: None })
}

/// Threaded NAPI on or off for `dev` in the server namespace. Not a ledger entry: the device
/// is the run's own, created and destroyed with its namespace (which the ledger records), and
/// once the agent has detached the program the veth has no NAPI left, so writing the old value
/// back at clean-up fails (EIO) where deleting the namespace cannot.
fn set_threaded(s: &Setup, dev: &str, on: bool) -> Result<(), LiveError> {
    let path = format!("/sys/class/net/{dev}/threaded");
    crate::netns::write_in(Some(&s.srv.name), &path, if on { "1" } else { "0" })
        .map_err(|e| LiveError::Unsupported(format!("threaded NAPI on a veth ({path}): {e}")))
}

/// Put the server veths' receive work where `p` says (every change to something the run did
/// not create recorded in the ledger: the kthreads' affinity and policy).
fn place_rx(cfg: &Options, run: &LiveRun, s: &mut Setup, p: RxPlacement) -> Result<(), LiveError> {
    s.agent.suppress(None);
    if s.placed == Some(p) {
        // Already so (one placement, several repetitions): writing `threaded` = 1 again
        // creates no kthreads to find, and the pinned ones are still pinned.
        return Ok(());
    }
    s.napi_tids.clear();
    s.placed = Some(p);
    match p {
        RxPlacement::Rps => {
            for dev in ["eth0", "eth1"] {
                set_threaded(s, dev, false)?;
                run.set_rps(&s.srv, dev, 1 << cfg.server_cpu)?;
            }
            Ok(())
        }
        RxPlacement::Threaded => {
            let before = napi_threads();
            for dev in ["eth0", "eth1"] {
                run.set_rps(&s.srv, dev, 0)?;
                set_threaded(s, dev, true)?;
            }
            // The kthreads `napi/<dev>-<napi id>` that appeared: ours (the devices' names are
            // common, the new threads are not; none of another run is touched).
            let end = Instant::now() + Duration::from_secs(2);
            let ours = loop {
                let new: Vec<(u32, String)> = napi_threads().into_iter().filter(|t| !before.contains(t)).collect();
                let found = |d: &str| new.iter().any(|(_, c)| c.starts_with(&format!("napi/{d}-")));
                if found("eth0") && found("eth1") {
                    break new;
                }
                if Instant::now() > end {
                    return Err(LiveError::Unsupported(format!(
                        "threaded NAPI: no kthreads napi/eth0-*, napi/eth1-* appeared (new: {new:?})"
                    )));
                }
                run.sleep(Duration::from_millis(20))?;
            };
            for (tid, _) in ours.iter().filter(|(_, c)| c.starts_with("napi/eth0-") || c.starts_with("napi/eth1-")) {
                run.set_affinity(*tid, &[cfg.server_cpu])?;
                run.set_sched(*tid, libc::SCHED_FIFO, cfg.napi_fifo_prio)?;
                s.napi_tids.push(*tid); // recorded above: suppression may change them
            }
            Ok(())
        }
    }
}

/// Threads named `napi/*` (tid, comm): the threaded-NAPI kthreads.
fn napi_threads() -> BTreeSet<(u32, String)> {
    let mut out = BTreeSet::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            if c.starts_with("napi/") {
                out.insert((pid, c.trim().to_string()));
            }
        }
    }
    out
}

/// Counters at one instant.
struct Snap {
    t: Instant,
    stat: Vec<CpuTimes>,
    softnet_dropped: u64,
    /// Packets the RPS flow limit dropped, every CPU's (machine-wide, as `softnet_dropped`).
    flow_limit_count: u64,
    agent: Snapshot,
    /// Frames each generator stream has built (its next sequence number).
    gen_seq: Vec<u64>,
    /// CPU ticks of each sink process.
    proc_ticks: BTreeMap<u32, u64>,
    /// bw's `/proc/PID/schedstat`: time runnable but waiting for a CPU (ns), and its number of
    /// turns on a CPU (the scheduler's own accounting of how long bw waited to run).
    bw_sched: Option<(u64, u64)>,
}

/// `/proc/PID/schedstat`: (run_delay ns, pcount).
fn read_schedstat(pid: u32) -> Option<(u64, u64)> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    let mut f = t.split_whitespace().skip(1).map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// `gen_seq` read at `t` (the generator's counters and the clock together: the achieved rate
/// must not include how long the agent took to answer).
fn snap(agent: &Agent, sinks: &[Worker], (t, gen_seq): (Instant, Vec<u64>)) -> Snap {
    let mut proc_ticks = BTreeMap::new();
    for w in sinks {
        if let Some(s) = procfs::read_pid_stat(w.pid()) {
            proc_ticks.insert(w.pid(), s.utime + s.stime);
        }
    }
    let bw_sched = sinks.iter().find(|w| w.name == "bw").and_then(|w| read_schedstat(w.pid()));
    let softnet = procfs::read_softnet().unwrap_or_default();
    Snap {
        bw_sched,
        t,
        stat: procfs::read_stat().unwrap_or_default(),
        softnet_dropped: softnet.iter().map(|x| x.dropped).sum(),
        flow_limit_count: softnet.iter().map(|x| x.flow_limit_count).sum(),
        agent: agent.snapshot(),
        gen_seq,
        proc_ticks,
    }
}

fn sink_args(cfg: &Options, port: u16, secs: f64, seq: (u64, u64)) -> Vec<String> {
    // SO_RCVBUF is doubled by the kernel (net/core/sock.c, sk_setsockopt): ask for half.
    let rcvbuf = (cfg.rcvbuf_bytes > 0).then(|| (cfg.rcvbuf_bytes / 2).max(1) as i32);
    worker::args("sink", &worker::SinkArgs { port, secs, seq_lo: Some(seq.0), seq_hi: Some(seq.1), rcvbuf })
}

/// Wait until the agent's table holds every server port at its owner's level (≤ 10 s: a
/// machine at load 20 takes seconds to start five processes).
fn wait_ports_mapped(run: &LiveRun, agent: &Agent) -> Result<(), LiveError> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let s = agent.snapshot();
        let ok = s.ports.get(&BW_PORT).map(|o| o.level) == Some(level_of_nice(BW_NICE))
            && FLOOD_PORTS.iter().all(|p| s.ports.get(p).map(|o| o.level) == Some(level_of_nice(FLOOD_NICE)));
        if ok {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(failed(format!("the agent did not map the server ports within 10 s: {:?}", s.ports)));
        }
        run.sleep(Duration::from_millis(20))?;
    }
}

/// The sequence numbers of a stream's window: frames built in `warmup_s..warmup_s + window_s`.
fn seq_window(cfg: &Options, rate_pps: f64) -> (u64, u64) {
    ((cfg.warmup_s * rate_pps).round() as u64, ((cfg.warmup_s + cfg.window_s) * rate_pps).round() as u64)
}

fn loadavg_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// One point: returns its metrics. `capacity_pps` is the detector's (0: unknown).
pub fn run_point(
    cfg: &Options,
    run: &LiveRun,
    s: &Setup,
    rate_pps: f64,
    variant: Variant,
    capacity_pps: f64,
) -> Result<BTreeMap<String, f64>, LiveError> {
    let agent = &s.agent;
    if cfg.variants.iter().any(|v| v.limits_flows()) {
        super::flow_limit::set(run, variant.limits_flows())?;
    }
    agent.enable(variant.drops());
    agent.set_capacity(capacity_pps);
    if variant.suppresses() {
        if s.napi_tids.is_empty() {
            return Err(failed(format!(
                "variant {}: no threaded-NAPI kthreads to suppress (placement rps)",
                variant.name()
            )));
        }
        let away: Vec<usize> =
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).filter(|&c| c != cfg.server_cpu).collect();
        agent.suppress(Some(SuppressConfig {
            tids: s.napi_tids.clone(),
            home_cpus: vec![cfg.server_cpu],
            away_cpus: away,
            fifo_prio: cfg.napi_fifo_prio,
            knob: cfg.supp_knob,
            check_ms: cfg.supp_check_ms,
            queued_bytes_min: 0,
        }));
    } else {
        agent.suppress(None);
    }
    let gen_secs = cfg.warmup_s + cfg.window_s + 0.2;
    let secs = gen_secs + 5.0; // the sinks' own time limit
    let srv = s.srv.file()?;
    let cg = s.group_procs.as_ref();
    let on_server = |nice, slice_ns| Placement {
        netns: &srv,
        cpu: Some(cfg.server_cpu),
        nice,
        slice_ns,
        cgroup: cg,
        cgroup2: s.hook_procs.as_ref(),
    };
    let (bw_win, flood_win) = (seq_window(cfg, cfg.bw_rate_pps), seq_window(cfg, rate_pps));
    let mut sinks = Vec::new();
    sinks.push(
        worker::spawn(
            "bw",
            &cfg.worker,
            &sink_args(cfg, BW_PORT, secs, bw_win),
            &on_server(BW_NICE, cfg.bw_slice_ns()),
        )
        .map_err(failed)?,
    );
    for (i, &p) in FLOOD_PORTS.iter().enumerate() {
        let w = worker::spawn(
            &format!("flood-{i}"),
            &cfg.worker,
            &sink_args(cfg, p, secs, flood_win),
            &on_server(FLOOD_NICE, None),
        )
        .map_err(failed)?;
        sinks.push(w);
    }
    wait_ports_mapped(run, agent)?;
    let load_start = loadavg_1m();
    let streams = vec![
        Stream::new("bw", "eth0", s.frames.0.clone(), cfg.bw_rate_pps)
            .seq_at(gen::UDP4_PAYLOAD_OFF)
            .quantum_us(BW_QUANTUM_US),
        {
            let flood = Stream::new("flood", "eth1", s.frames.1.clone(), rate_pps)
                .rotate(gen::UDP4_DST_PORT_OFF, FLOOD_PORTS[..usize::from(cfg.flood_flows)].to_vec())
                .seq_at(gen::UDP4_PAYLOAD_OFF);
            if cfg.gen_spread > 0.0 {
                flood.spread(cfg.gen_spread)
            } else {
                flood
            }
        },
    ];
    let pacing = Pacing {
        cpu: Some(cfg.client_cpu),
        fifo_prio: cfg.gen_fifo_prio,
        secs: gen_secs,
        quantum_us: cfg.gen_quantum_us,
        batch_max: cfg.gen_batch,
        call_frames_max: cfg.gen_call_frames_max,
        ..Pacing::default()
    };
    let running = s.gen.start(&s.cli, streams, &pacing)?;
    let waited = run.sleep(Duration::from_secs_f64(cfg.warmup_s));
    let a = snap(agent, &sinks, (Instant::now(), running.seq()));
    let waited = waited.and_then(|_| run.sleep(Duration::from_secs_f64(cfg.window_s)));
    let b = snap(agent, &sinks, (Instant::now(), running.seq()));
    let end = Instant::now() + Duration::from_secs_f64(gen_secs + 2.0);
    while waited.is_ok() && !running.finished() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let gen_seq_end = running.seq();
    let report = running.stop();
    agent.suppress(None);
    waited?;
    if let Some(e) = &report.setup_error {
        return Err(failed(format!("the generator could not start: {e}")));
    }
    for r in report.streams.iter().filter(|r| r.errors > 0) {
        run.progress(format!(
            "generator stream {}: {} of {} BPF_PROG_RUN calls failed, the first with: {}",
            r.name,
            r.errors,
            r.calls,
            r.first_error.as_deref().unwrap_or("?")
        ));
    }
    run.sleep(Duration::from_millis(200))?; // what is still in the receive path arrives
    let sink_pids: Vec<(String, u32)> = sinks.iter().map(|w| (w.name.clone(), w.pid())).collect();
    let mut got = BTreeMap::new();
    for w in sinks {
        let name = w.name.clone();
        got.insert(name, w.finish(Duration::from_secs(3)).map_err(failed)?);
    }
    let mut m = metrics(cfg, &a, &b, &got, &sink_pids);
    // The generator: offered (asked) and achieved (built) rates, in the window and overall.
    let win_s = b.t.duration_since(a.t).as_secs_f64().max(1e-9);
    let achieved = |i: usize| b.gen_seq[i].saturating_sub(a.gen_seq[i]) as f64 / win_s;
    let (bw_ach, fl_ach) = (achieved(0), achieved(1));
    m.insert("bwclient_offered_pps".into(), cfg.bw_rate_pps);
    m.insert("floodclients_offered_pps".into(), rate_pps);
    m.insert("offered_pps".into(), cfg.bw_rate_pps + rate_pps);
    m.insert("bwclient_sent_pps".into(), bw_ach);
    m.insert("floodclients_sent_pps".into(), fl_ach);
    m.insert("achieved_pps".into(), bw_ach + fl_ach);
    let frac = |ach: f64, off: f64| if off > 0.0 { ach / off } else { 1.0 };
    let achieved_frac = frac(bw_ach, cfg.bw_rate_pps).min(frac(fl_ach, rate_pps));
    let skipped: u64 = report.streams.iter().map(|r| r.skipped).sum();
    let errors: u64 = report.streams.iter().map(|r| r.errors).sum();
    // Valid: both streams at their rate in the window, and every window frame built.
    let built =
        gen_seq_end.first().is_some_and(|&q| q >= bw_win.1) && gen_seq_end.get(1).is_some_and(|&q| q >= flood_win.1);
    let valid = achieved_frac >= cfg.valid_frac && errors == 0 && built;
    m.insert("achieved_frac".into(), achieved_frac);
    m.insert("gen_skipped".into(), skipped as f64);
    m.insert("gen_errors".into(), errors as f64);
    // The flood stream's spreading (0: back to back) and the generator's time inside its calls
    // over the whole run (a spread stream's includes the spin): its CPU's share.
    m.insert("gen_spread".into(), cfg.gen_spread);
    m.insert("gen_call_frac".into(), report.streams.iter().map(|r| r.call_s).sum::<f64>() / report.elapsed_s.max(1e-9));
    m.insert("valid".into(), if valid { 1.0 } else { 0.0 });
    // bw's loss over the window's frames, exact (sequence numbers).
    let bw_sent = (bw_win.1 - bw_win.0) as f64;
    let bw_got = got.get("bw").and_then(|r| r.seq_in).unwrap_or(0) as f64;
    let flood_sent = (flood_win.1 - flood_win.0) as f64;
    let flood_got: u64 = got.iter().filter(|(n, _)| n.starts_with("flood")).map(|(_, r)| r.seq_in.unwrap_or(0)).sum();
    m.insert("bwclient_sent_count".into(), bw_sent);
    m.insert("bw_rx_count".into(), bw_got);
    m.insert("floodclients_sent_count".into(), flood_sent);
    m.insert("flood_rx_count".into(), flood_got as f64);
    m.insert("bw_loss_frac".into(), if bw_sent > 0.0 { 1.0 - bw_got / bw_sent } else { f64::NAN });
    m.insert("flood_loss_frac".into(), if flood_sent > 0.0 { 1.0 - flood_got as f64 / flood_sent } else { f64::NAN });
    m.insert("bw_rx_pps".into(), bw_got / cfg.window_s);
    m.insert("flood_rx_pps".into(), flood_got as f64 / cfg.window_s);
    m.insert("delivered_pps".into(), (bw_got + flood_got as f64) / cfg.window_s);
    // Whole run (the sinks drained their sockets): frames built and received.
    m.insert("bwclient_sent_total".into(), gen_seq_end.first().copied().unwrap_or(0) as f64);
    m.insert("bw_rx_total".into(), got.get("bw").map_or(0, |r| r.count) as f64);
    m.insert("floodclients_sent_total".into(), gen_seq_end.get(1).copied().unwrap_or(0) as f64);
    m.insert(
        "flood_rx_total".into(),
        got.iter().filter(|(n, _)| n.starts_with("flood")).map(|(_, r)| r.count).sum::<u64>() as f64,
    );
    // The socket limit bw actually had (getsockopt), so a row says which set-up it measured.
    m.insert("bw_rcvbuf_bytes".into(), got.get("bw").and_then(|r| r.rcvbuf_bytes).map_or(f64::NAN, |b| b as f64));
    m.insert("capacity_pps".into(), capacity_pps);
    m.insert("flood_flows".into(), f64::from(cfg.flood_flows));
    m.insert("flow_limit_on".into(), if variant.limits_flows() { 1.0 } else { 0.0 });
    m.insert("loadavg_1m_start".into(), load_start);
    m.insert("loadavg_1m_end".into(), loadavg_1m());
    Ok(m)
}

fn metrics(
    cfg: &Options,
    a: &Snap,
    b: &Snap,
    got: &BTreeMap<String, WorkerReport>,
    sink_pids: &[(String, u32)],
) -> BTreeMap<String, f64> {
    let secs = b.t.duration_since(a.t).as_secs_f64().max(1e-9);
    let mut m = BTreeMap::new();
    // Drops by place, in the model's names (crates/host/src/types.rs DROP_NAMES) plus `xdp`.
    let d = |f: &dyn Fn(&Snap) -> u64| f(b).saturating_sub(f(a)) as f64 / secs;
    let udp = |k: &'static str| move |s: &Snap| s.agent.udp.get(k).copied().unwrap_or(0);
    m.insert("drop_xdp_pps".into(), d(&|s: &Snap| s.agent.xdp.iter().map(|l| l.drop).sum()));
    // Machine-wide (every namespace's backlog): reported, never used by the detector.
    m.insert("drop_backlog_pps".into(), d(&|s: &Snap| s.softnet_dropped));
    // The RPS flow limit's drops (machine-wide too; part of drop_backlog_pps): today's
    // counterpart's own counter, 0 wherever it cannot act.
    m.insert("flow_limit_pps".into(), d(&|s: &Snap| s.flow_limit_count));
    m.insert("drop_socket_pps".into(), d(&udp("RcvbufErrors")));
    m.insert("drop_no_socket_pps".into(), d(&udp("NoPorts")));
    // A veth's ring (VETH_RING_SIZE, 256) stands where the NIC's RX ring does: a frame the
    // generator's ndo_xdp_xmit could not put there counts in the receiving end's rx_dropped
    // (veth_get_stats64: peer_tq_xdp_xmit_err).
    let ring = |dev: &'static str| move |s: &Snap| s.agent.devs.get(dev).map_or(0, |c| c.rx_dropped);
    m.insert("drop_nic_ring_pps".into(), d(&ring("eth0")) + d(&ring("eth1")));
    m.insert("bw_drop_nic_ring_pps".into(), d(&ring("eth0")));
    let lvl =
        |l: u8, f: fn(&super::xdp::LevelStats) -> u64| d(&move |s: &Snap| s.agent.xdp.get(l as usize).map_or(0, f));
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
    // CPU shares from /proc/stat: mean over CPUs (the model's cpu_<state>_frac) and per CPU;
    // `steal` is the hypervisor's share given to other guests.
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
    let ticks = |pid: u32| {
        b.proc_ticks.get(&pid).copied().unwrap_or(0).saturating_sub(a.proc_ticks.get(&pid).copied().unwrap_or(0))
    };
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
    // How long bw waited for CPU 0 once runnable (the rps-on anomaly's evidence: docs/src/live/ozaki-pbq.md).
    if let (Some((d0, n0)), Some((d1, n1))) = (a.bw_sched, b.bw_sched) {
        let (d, n) = (d1.saturating_sub(d0) as f64, n1.saturating_sub(n0) as f64);
        m.insert("bw_run_delay_frac".into(), d * 1e-9 / secs);
        m.insert("bw_wait_us_mean".into(), if n > 0.0 { d / n / 1e3 } else { f64::NAN });
        m.insert("bw_switches_per_s".into(), n / secs);
    }
    let _ = (cfg, got);
    let hl = b.agent.high_load_ns.saturating_sub(a.agent.high_load_ns) as f64 * 1e-9 / secs;
    m.insert("high_load_frac".into(), hl.min(1.0));
    m.insert("high_load_entries".into(), b.agent.high_load_entries.saturating_sub(a.agent.high_load_entries) as f64);
    // Interrupt suppression (0 in the variants without it): share of the window suppressed,
    // changes per second (each a sched_setaffinity/sched_setscheduler per kthread), failures.
    m.insert("supp_frac".into(), (b.agent.supp_ns.saturating_sub(a.agent.supp_ns) as f64 * 1e-9 / secs).min(1.0));
    m.insert("supp_changes_per_s".into(), b.agent.supp_changes.saturating_sub(a.agent.supp_changes) as f64 / secs);
    m.insert("supp_errors".into(), b.agent.supp_errors.saturating_sub(a.agent.supp_errors) as f64);
    m.insert("window_s".into(), secs);
    m
}

/// The capacity an `off` point shows (module doc): its delivered rate if it was valid and its
/// receiver lost packets, else None.
pub fn capacity_of(cfg: &Options, m: &BTreeMap<String, f64>) -> Option<f64> {
    let g = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    (g("valid") == 1.0 && g("delivered_pps") < cfg.valid_frac * g("offered_pps")).then(|| g("delivered_pps"))
}

/// The whole sweep: repetitions outermost (a drift of the machine spreads over all points),
/// then placements, then every rate `off` before every rate `on` (so the detector's capacity
/// comes from `off` points only), each point written to `results.csv` as it is measured. The
/// caller ends `run` ([`LiveRun::finish`]).
pub fn run(cfg: &Options, run: &mut LiveRun) -> Result<(), LiveError> {
    let mut s = setup(cfg, run)?;
    // Native or generic, as the kernel reports it: the program runs inside the veth's NAPI
    // poll only in native mode (docs/src/live/ozaki-pbq.md: the rps-on anomaly).
    let modes: Vec<serde_json::Value> =
        s.agent.attachments().iter().map(|a| serde_json::json!({ "iface": a.iface, "mode": a.mode })).collect();
    run.set_info("xdp_attachments", modes.into());
    if cfg.variants.iter().any(|v| v.limits_flows()) {
        run.set_info("flow_limit_before", super::flow_limit::before()?);
    }
    let mut capacity: BTreeMap<RxPlacement, f64> = BTreeMap::new();
    for rep in 1..=cfg.common.reps {
        for &placement in &cfg.placements {
            place_rx(cfg, run, &mut s, placement)?;
            for variant in cfg.variants_in(placement) {
                for &rate in &cfg.rates_pps {
                    run.check()?;
                    let cap = cfg.capacity_pps.unwrap_or_else(|| capacity.get(&placement).copied().unwrap_or(0.0));
                    let metrics = run_point(cfg, run, &s, rate, variant, cap)?;
                    if variant == Variant::Off {
                        if let Some(c) = capacity_of(cfg, &metrics) {
                            let e = capacity.entry(placement).or_insert(0.0);
                            *e = e.max(c);
                        }
                    }
                    let p = point(variant, placement, rate, rep, metrics);
                    run.progress(p.line(SHOWN));
                    run.push(p)?;
                }
            }
        }
    }
    drop(s);
    Ok(())
}

/// A point of results.csv: `variant`, `placement`, the swept key, `rep`, then every metric.
pub fn point(variant: Variant, placement: RxPlacement, rate_pps: f64, rep: u32, m: BTreeMap<String, f64>) -> Point {
    let keys = [
        ("variant", variant.name().to_string()),
        ("placement", placement.name().to_string()),
        (RATE_KEY, format!("{rate_pps}")),
        ("rep", rep.to_string()),
    ];
    Point::new(&keys, m)
}

/// What a point's progress line shows.
const SHOWN: &[Shown] = &[
    ("flood sent", "floodclients_sent_pps", 0),
    ("bw sent", "bwclient_sent_pps", 0),
    ("achieved", "achieved_frac", 3),
    ("bw loss", "bw_loss_frac", 4),
    ("flood rx", "flood_rx_pps", 0),
    ("drops xdp", "drop_xdp_pps", 0),
    ("ring", "drop_nic_ring_pps", 0),
    ("socket", "drop_socket_pps", 0),
    ("cpu0 softirq", "cpu0_softirq_frac", 2),
    ("idle", "cpu0_idle_frac", 2),
    ("steal", "cpu_steal_frac", 2),
    ("high load", "high_load_frac", 2),
    ("capacity", "capacity_pps", 0),
    ("supp", "supp_frac", 2),
    ("bw wait us", "bw_wait_us_mean", 0),
    ("flow limit", "flow_limit_pps", 0),
    ("load", "loadavg_1m_start", 1),
];

/// The command: its options, its plan, and this experiment as its run.
impl Experiment for Options {
    const NAME: &'static str = "ozaki-pbq";

    fn common(&self) -> &Common {
        &self.common
    }

    fn points(&self) -> usize {
        let per_rate: usize = self.placements.iter().map(|&p| self.variants_in(p).len()).sum();
        self.rates_pps.len() * per_rate * self.common.reps as usize
    }

    fn plan(&self) -> String {
        format!(
            "each {:.1} s (+{:.1} s warm-up), server CPU {}, generator CPU {}",
            self.window_s, self.warmup_s, self.server_cpu, self.client_cpu
        )
    }

    fn run(&self, run: &mut LiveRun) -> Result<(), LiveError> {
        self::run(self, run)
    }
}
