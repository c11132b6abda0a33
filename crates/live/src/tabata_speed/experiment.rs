//! The experiment (see the module page, `mod.rs`): set-up, points, the sweep.

use super::arrivals::{Arrival, Recorder};
use super::counterparts;
use super::regulator::{self, FreezeGate, Gate, Regulation, RegulatorConfig, SignalGate};
use super::{GateKind, Options, Via};
use crate::cgroup::CpuGroup;
use crate::command::{Common, Experiment};
pub use crate::harness::LiveError;
use crate::harness::{failed, LiveRun, Netns, Point, Shown};
use crate::netns::Veth;
use crate::tcp_worker::{SendSpec, SinkArgs};
use crate::worker::{self, Placement};
use hostsim_workload::{SinkStats, GAP_BINS, GAP_BIN_NS, SHORT_GAP_NS, SIZE_BINS};
use std::collections::BTreeMap;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// The swept keys, named as in `scenarios/tabata-speed-bandwidth.toml`.
pub const SPEED_KEY: &str = "process.sender.speed_pct";
pub const UNIT_KEY: &str = "process.sender.unit_bytes";
pub const PORT: u16 = 5001;
pub const SENDER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 2, 1);
pub const SINK_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 2, 2);
/// Ethernet's per-frame bytes on the wire besides the frame tbf sees (skb->len): FCS 4,
/// preamble + SFD 8, inter-frame gap 12 (IEEE 802.3).
pub const WIRE_OVERHEAD_BYTES: u32 = 24;
/// FCS, added to skb->len for the model's frame size (`wire_bytes` − 20, crates/host/src/wire.rs).
pub const FCS_BYTES: u16 = 4;

/// A point whose sender was limited by the receiver's window for more than this share of its
/// busy time is measured again (the receiver, not the regulated sender, set its pace).
pub const RWND_LIMITED_MAX: f64 = 0.05;
/// At most this many attempts per point.
pub const ATTEMPTS_MAX: u32 = 3;

/// Run a command in namespace `ns` (`ip netns exec`), its stderr as the error.
fn ns_cmd(ns: &Netns, args: &[&str]) -> Result<String, LiveError> {
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.name])
        .args(args)
        .output()
        .map_err(|e| failed(format!("running `ip netns exec {} {}`: {e}", ns.name, args.join(" "))))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let hint = if err.contains("No such file") || (out.status.code() == Some(255) && err.is_empty()) {
            " (install it: bash scripts/deps.sh)"
        } else {
            ""
        };
        return Err(failed(format!("`{}` in {}: {}{hint}", args.join(" "), ns.name, err.trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The namespaces, shaper, recorder and groups of one run.
pub struct Setup {
    pub snd: Netns,
    pub rcv: Netns,
    pub recorder: Recorder,
    /// The freezer group (gate `freeze`).
    pub freeze: Option<PathBuf>,
    pub group: Option<CpuGroup>,
    group_procs: Option<File>,
    /// Variant `cfs`: the sender's CPU group (a child of `group`) and its `cgroup.procs`.
    pub cfs: Option<(CpuGroup, File)>,
    /// The shaper's rate now, kbit/s (variant `tbf` changes it for its points).
    tbf_kbit: std::cell::Cell<u64>,
    /// What the setup found, for run.json: offloads, qdisc.
    pub facts: serde_json::Value,
}

/// The sender veth's tbf at `kbit` kbit/s. tbf sends a frame once the bucket holds its length
/// (+ overhead), so with a bucket of one full frame a frame leaves the time of its *own* length
/// after the previous one when they queue: the gap a receiver timestamping at the end of each
/// frame sees on a wire. A bucket of two frames (the first try) let full frames arrive back to
/// back, gaps a wire cannot make. 1600 B: one 1538 B frame plus tc's rounding of the burst to
/// time (net/sched/sch_tbf.c drops a frame above the bucket's size). The queue limit is far above
/// the send buffer: the shaper delays and never drops.
fn shape(snd: &Netns, kbit: u64) -> Result<(), LiveError> {
    let rate = format!("{kbit}kbit");
    let overhead = WIRE_OVERHEAD_BYTES.to_string();
    let tbf = [
        "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", &rate, "burst", "1600", "limit", "4194304",
        "overhead", &overhead,
    ];
    ns_cmd(snd, &tbf).map(|_| ())
}

/// Create the namespaces and the shaped veth, turn offloads off, attach the recorder, create the
/// groups, all through `run` (recorded in its ledger).
pub fn setup(cfg: &Options, run: &LiveRun) -> Result<Setup, LiveError> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cfg.sender_cpu >= ncpu || cfg.sink_cpu >= ncpu {
        return Err(LiveError::Unsupported(format!(
            "needs CPUs {} and {}; this machine has {ncpu}",
            cfg.sender_cpu, cfg.sink_cpu
        )));
    }
    let (snd, rcv) = (run.netns("snd")?, run.netns("rcv")?);
    run.veth(&Veth {
        ns_a: snd.name.clone(),
        a: "eth0".into(),
        addr_a: format!("{SENDER_ADDR}/24"),
        ns_b: rcv.name.clone(),
        b: "eth0".into(),
        addr_b: format!("{SINK_ADDR}/24"),
    })?;
    // The paper's MSS (1460: no TCP options on the wire besides the SYN's).
    run.write_value(Some(&snd), "/proc/sys/net/ipv4/tcp_timestamps", "0")?;
    // One segment per frame: no TSO/GSO on the sender's veth, no GRO on the sink's.
    ns_cmd(&snd, &["ethtool", "-K", "eth0", "tso", "off", "gso", "off"])?;
    ns_cmd(&rcv, &["ethtool", "-K", "eth0", "gro", "off"])?;
    let feature = |ns: &Netns, name: &str| -> Result<String, LiveError> {
        let text = ns_cmd(ns, &["ethtool", "-k", "eth0"])?;
        Ok(text
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}:")).map(|v| v.trim().to_string()))
            .unwrap_or_default())
    };
    let (tso, gso, gro) = (
        feature(&snd, "tcp-segmentation-offload")?,
        feature(&snd, "generic-segmentation-offload")?,
        feature(&rcv, "generic-receive-offload")?,
    );
    if !tso.starts_with("off") || !gso.starts_with("off") {
        return Err(failed(format!("the sender's veth kept its offloads (tso {tso}, gso {gso})")));
    }
    // The wire: 100 Mbit/s (see `shape`).
    let wire_kbit = u64::from(cfg.rate_mbit) * 1000;
    shape(&snd, wire_kbit)?;
    let qdisc = ns_cmd(&snd, &["tc", "qdisc", "show", "dev", "eth0"])?.trim().to_string();
    let mut recorder = Recorder::load(PORT).map_err(|e| LiveError::Unsupported(e.0))?;
    let (prog_id, link_id) = recorder.attach(&rcv.file()?, "eth0").map_err(|e| LiveError::Unsupported(e.0))?;
    run.record_tcx(Some(&rcv), "eth0", prog_id, link_id)?;
    let freeze = match cfg.gate {
        GateKind::Freeze => Some(run.freeze_group("sender")?),
        GateKind::Signal => None,
    };
    let (group, group_procs) = run.optional_cpu_group(cfg.cgroup)?;
    let cfs = if cfg.variants.contains(&Via::Cfs) {
        let g = counterparts::cfs_group(run, group.as_ref())?;
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(g.procs_file())
            .map_err(|e| failed(format!("{}: {e}", g.procs_file().display())))?;
        Some((g, procs))
    } else {
        None
    };
    let facts = serde_json::json!({
        "sender_veth": { "tcp-segmentation-offload": tso, "generic-segmentation-offload": gso, "qdisc": qdisc },
        "sink_veth": { "generic-receive-offload": gro, "tcx_ingress_prog_id": prog_id },
        "sender_tcp_timestamps": 0,
    });
    Ok(Setup { snd, rcv, recorder, freeze, group, group_procs, cfs, tbf_kbit: wire_kbit.into(), facts })
}

/// The regulator's thread. It is made (SCHED_FIFO, on the sender's CPU) before the sender is
/// started, so that it is in place when the sender's first slot begins, and is handed its gate
/// and target once the sender is in its group. Dropping it stops it (and so opens the gate) on
/// every path.
///
/// Why before: a thread spawned after the sender, on a loaded machine, may first run tens of
/// milliseconds later (its SCHED_OTHER wake-up queued on a busy CPU), and until it runs the
/// sender runs unregulated: on a 1 MB transfer that is most of it at full speed, a 20 % point
/// measured at 66.8 Mbit/s, while the slots the regulator did record were all correct.
struct RegThread {
    stop: Arc<AtomicBool>,
    job: Option<mpsc::Sender<(Box<dyn Gate>, u32)>>,
    ready: mpsc::Receiver<Result<(), String>>,
    handle: Option<JoinHandle<Result<Option<Regulation>, String>>>,
}

impl RegThread {
    fn start(cfg: RegulatorConfig, origin_ns: u64) -> RegThread {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let (job_tx, job_rx) = mpsc::channel::<(Box<dyn Gate>, u32)>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("regulator".into())
            .spawn(move || {
                let made = regulator::become_regulator(&cfg).map_err(|e| format!("regulator thread: {e}"));
                let _ = ready_tx.send(made.clone());
                made?;
                // The gate and the target, or nothing if the point ends first (channel closed).
                let Ok((mut gate, target)) = job_rx.recv() else { return Ok(None) };
                regulator::regulate_slots(&cfg, gate.as_mut(), target, origin_ns, false, &s).map(Some)
            })
            .expect("spawning the regulator thread");
        RegThread { stop, job: Some(job_tx), ready: ready_rx, handle: Some(handle) }
    }

    /// Give the regulator its gate, closed, and target.
    fn hand_over(&mut self, gate: Box<dyn Gate>, target: u32) {
        if let Some(j) = self.job.take() {
            let _ = j.send((gate, target));
        }
    }

    /// Whether the thread had become the regulator by `deadline_ns` (CLOCK_MONOTONIC), waiting
    /// until then at most; an error if it could not become it at all.
    fn ready_by(&self, deadline_ns: u64) -> Result<bool, String> {
        let wait = Duration::from_nanos(deadline_ns.saturating_sub(regulator::monotonic_ns()));
        match self.ready.recv_timeout(wait) {
            Ok(r) => r.map(|()| true),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(false),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err("the regulator thread ended before it was ready".into()),
        }
    }

    fn finish(mut self) -> Result<Option<Regulation>, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.job.take();
        self.handle.take().expect("joined once").join().map_err(|_| "the regulator thread panicked".to_string())?
    }
}

impl Drop for RegThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.job.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The model's stream-sink statistics from the frames the receiver's kernel recorded: data
/// frames only (payload > 0), in arrival order; bytes in order; a frame at or below the highest
/// sequence seen is a retransmission (`out_of_order`), as `SinkStats` counts them.
pub fn sink_stats(frames: &[Arrival]) -> SinkStats {
    let mut s = SinkStats { gaps: vec![0; GAP_BINS], short_gap_sizes: vec![0; SIZE_BINS], ..Default::default() };
    let mut prev: Option<u64> = None;
    let mut high: Option<u32> = None;
    for f in frames.iter().filter(|f| f.payload > 0) {
        let frame_bytes = u64::from(f.len) + u64::from(FCS_BYTES);
        s.frames += 1;
        s.frame_bytes += frame_bytes;
        s.first_ns.get_or_insert(f.ts_ns);
        s.last_ns = f.ts_ns;
        if let Some(p) = prev {
            let gap = f.ts_ns.saturating_sub(p);
            s.gaps[((gap / GAP_BIN_NS) as usize).min(GAP_BINS - 1)] += 1;
            if gap < SHORT_GAP_NS {
                s.short_gap_sizes[((frame_bytes / 100) as usize).min(SIZE_BINS - 1)] += 1;
            }
        }
        prev = Some(f.ts_ns);
        let end = f.seq.wrapping_add(u32::from(f.payload));
        match high {
            // Sequence arithmetic (RFC 793): `end` after `h`.
            Some(h) if (end.wrapping_sub(h) as i32) <= 0 => s.out_of_order += 1,
            Some(h) => {
                s.bytes += u64::from(end.wrapping_sub(h).min(u32::from(f.payload)));
                high = Some(end);
            }
            None => {
                s.bytes += u64::from(f.payload);
                high = Some(end);
            }
        }
    }
    s
}

fn loadavg() -> (f64, String) {
    let t = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    (t.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(f64::NAN), t.trim().to_string())
}

/// One point; `speed_pct` None = the unregulated sender (variant `off`).
/// What one point measured: its metrics, the frames the receiver's kernel recorded, and the
/// slot grid's origin (CLOCK_MONOTONIC ns) the frames' times are read against.
pub struct PointResult {
    pub metrics: BTreeMap<String, f64>,
    pub frames: Vec<Arrival>,
    pub origin_ns: u64,
}

/// How far ahead of now a point's slot grid starts at its first attempt: time to start the sink
/// and the sender and put the sender in its group. An attempt that could not do that in time is
/// measured again with twice the lead.
pub const START_LEAD_MS: u64 = 150;

/// One point: the sender regulated `via` at `speed_pct` (None: unregulated, variant `off`).
/// `Ok(None)`: the sender could not be started and put in its group within `lead_ms` (an
/// overloaded machine): nothing was measured; the caller measures it again with a longer lead.
#[allow(clippy::too_many_arguments)]
pub fn run_point(
    cfg: &Options,
    run: &LiveRun,
    s: &Setup,
    via: Via,
    speed_pct: Option<u32>,
    unit: usize,
    rep: u32,
    lead_ms: u64,
) -> Result<Option<PointResult>, LiveError> {
    let secs = cfg.point_timeout_s;
    let _ = s.recorder.drain().map_err(failed)?; // anything left from before: not this point's
    let lost0 = s.recorder.lost();
    // Today's counterparts: the shaper's rate, the sender's quota and socket option.
    let wire_kbit = u64::from(cfg.rate_mbit) * 1000;
    let kbit = match (via, speed_pct) {
        (Via::Tbf, Some(sp)) => counterparts::tbf_rate_kbit(cfg.rate_mbit, sp),
        _ => wire_kbit,
    };
    if s.tbf_kbit.get() != kbit {
        shape(&s.snd, kbit)?;
        s.tbf_kbit.set(kbit);
    }
    let mut cfs_quota = None;
    if let (Via::Cfs, Some(sp), Some((g, _))) = (via, speed_pct, s.cfs.as_ref()) {
        let q = counterparts::cfs_quota_us(cfg.cfs_period_us, sp).map_err(failed)?;
        counterparts::set_quota(run, g, q, cfg.cfs_period_us)?;
        cfs_quota = Some((q, counterparts::cfs_stat(g)?));
    }
    let pacing = match (via, speed_pct) {
        (Via::Pacing, Some(sp)) => Some(counterparts::pacing_bytes_per_s(cfg.rate_mbit, sp)),
        _ => None,
    };
    let cg = s.group_procs.as_ref();
    let sender_cg = match (cfs_quota, s.cfs.as_ref()) {
        (Some(_), Some((_, procs))) => Some(procs),
        _ => cg,
    };
    let rcv = s.rcv.file()?;
    let snd = s.snd.file()?;
    let args = worker::args("tcp-sink", &SinkArgs { port: PORT, secs });
    let sink = worker::spawn(
        "sink",
        &cfg.worker,
        &args,
        &Placement { netns: &rcv, cpu: Some(cfg.sink_cpu), nice: 0, slice_ns: None, cgroup: cg, cgroup2: None },
    )
    .map_err(failed)?;
    let slot_ns = cfg.slot_us * 1000;
    // The grid starts `lead_ms` ahead (time to start the sender and put it in its group); the
    // sender's first write falls at a phase of the slot that differs per repetition (the model's
    // start_jitter_us: the paper's runs differ in it).
    let now = regulator::monotonic_ns();
    let origin = (now + lead_ms * 1_000_000).div_ceil(slot_ns) * slot_ns;
    let phase_ns = (u64::from(rep - 1) * 370_000) % slot_ns;
    let start = origin + phase_ns;
    let reg_cfg = RegulatorConfig {
        speed_pct: speed_pct.unwrap_or(100),
        slot_ns,
        block_ns: cfg.block_ms * 1_000_000,
        cpu: Some(cfg.sender_cpu),
        fifo_prio: Some(cfg.fifo_prio),
        slots_max: (secs * 1e9) as u64 / slot_ns + 1000,
    };
    // The regulator first (see RegThread), the sender after it.
    let mut reg = speed_pct.filter(|_| via == Via::Regulated).map(|_| RegThread::start(reg_cfg.clone(), origin));
    let spec = SendSpec {
        dst: SINK_ADDR,
        port: PORT,
        unit_bytes: unit,
        total_bytes: cfg.total_bytes,
        sndbuf_bytes: cfg.sndbuf_bytes,
        start_ns: start,
        secs,
        pacing_bytes_per_s: pacing,
    };
    let args = worker::args("tcp-send", &spec);
    let mut sender = worker::spawn(
        "sender",
        &cfg.worker,
        &args,
        &Placement {
            netns: &snd,
            cpu: Some(cfg.sender_cpu),
            nice: 0,
            slice_ns: None,
            cgroup: sender_cg,
            cgroup2: None,
        },
    )
    .map_err(failed)?;
    let pid = sender.pid();
    // A regulated sender is behind a closed gate before it is in the freezer group (the group is
    // frozen while still empty, and a task moved into a frozen group freezes: Linux 6.18
    // kernel/cgroup/freezer.c cgroup_freezer_migrate_task), so it runs only once the regulator
    // has opened the gate at its first allocated slot. A regulator that comes late then costs
    // the sender slots; it can never let it run unregulated. With the gate open at the start, a
    // regulator thread run late was the way left for that (the inferred cause of a 20 % point
    // measured at 66.8 Mbit/s once, in CI, with every slot the regulator recorded right).
    let gate: Option<Box<dyn Gate>> = if reg.is_some() {
        let mut g: Box<dyn Gate> = match &s.freeze {
            Some(f) => match std::fs::OpenOptions::new().write(true).open(f.join("cgroup.freeze")) {
                Ok(file) => Box::new(FreezeGate(file)),
                Err(_) => Box::new(SignalGate(pid)),
            },
            None => Box::new(SignalGate(pid)),
        };
        g.set(false).map_err(|e| failed(format!("closing the gate ({}) before the start: {e}", g.name())))?;
        Some(g)
    } else {
        None
    };
    if let Some(f) = &s.freeze {
        let p = f.join("cgroup.procs");
        std::fs::write(&p, pid.to_string()).map_err(|e| failed(format!("{}: {e}", p.display())))?;
    }
    if regulator::monotonic_ns() >= start {
        // Its start has passed before it was behind the gate: it may have sent unregulated.
        // Dropping the workers ends them; the next attempt starts from a clean slate.
        return Ok(None);
    }
    // Whether the regulator was in place before the sender's start: if not, the sender lost the
    // slots before the regulator's first wake-up and the point does not measure the regulation
    // as planned (`run` measures it again).
    let mut ready = true;
    if let (Some(t), Some(g)) = (reg.as_mut(), gate) {
        t.hand_over(g, pid);
        ready = t.ready_by(start).map_err(failed)?;
    }
    // Until the sender has sent everything and seen it acknowledged (it exits then), bounded
    // by its own time limit plus a margin.
    let end = std::time::Instant::now() + Duration::from_secs_f64(secs + 5.0);
    while sender.exited().is_none() {
        if std::time::Instant::now() > end {
            return Err(failed(format!("the sender did not finish within {} s", secs + 5.0)));
        }
        run.sleep(Duration::from_millis(5))?;
    }
    let regulation = match reg {
        Some(t) => t.finish().map_err(failed)?,
        None => None,
    };
    let sent = sender.finish_json(Duration::from_secs(3)).map_err(failed)?;
    // The sink ends at the stream's end (the sender's FIN, which follows its close): give it
    // that time rather than stopping it first.
    let mut sink = sink;
    // A starved sink (a neighbour's softirq load on its CPU) may take seconds: up to the
    // point's own limit.
    let sink_end = std::time::Instant::now() + Duration::from_secs_f64(secs);
    while sink.exited().is_none() && std::time::Instant::now() < sink_end {
        run.sleep(Duration::from_millis(5))?;
    }
    let got = sink.finish_json(Duration::from_secs(3)).map_err(failed)?;
    if got["eof"].as_bool() != Some(true) {
        return Err(failed(format!(
            "the sink did not see the end of the stream within {secs} s of the sender's exit: {got}"
        )));
    }
    let mut frames = s.recorder.drain().map_err(failed)?;
    frames.sort_by_key(|f| f.ts_ns);
    let lost = s.recorder.lost() - lost0;
    let mut m = BTreeMap::new();
    let st = sink_stats(&frames);
    hostsim_host::insert_sink_metrics(&mut m, "receiver", &st);
    m.insert("bw_mbps".into(), m["receiver_bw_mbps"]);
    let num = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let busy = num(&sent, "busy_us");
    m.insert("sender_bytes".into(), num(&sent, "bytes"));
    m.insert("sender_busy_us".into(), busy);
    m.insert("sender_rwnd_limited_frac".into(), num(&sent, "rwnd_limited_us") / busy);
    m.insert("sender_sndbuf_limited_frac".into(), num(&sent, "sndbuf_limited_us") / busy);
    m.insert("sender_retransmits".into(), num(&sent, "total_retrans"));
    m.insert("sender_partial_writes".into(), num(&sent, "partial_writes"));
    m.insert("sender_sndbuf_bytes".into(), num(&sent, "sndbuf_effective"));
    m.insert("sender_mss_bytes".into(), num(&sent, "snd_mss"));
    m.insert("sender_acked".into(), if sent["acked"].as_bool() == Some(true) { 1.0 } else { 0.0 });
    // The sender's own CPU time, start to exit (the cost side of every variant).
    m.insert("sender_cpu_ms".into(), num(&sent, "cpu_us") / 1e3);
    m.insert("tbf_rate_mbit".into(), kbit as f64 / 1e3);
    m.insert("pacing_mbit".into(), pacing.map_or(f64::NAN, |b| b as f64 * 8.0 / 1e6));
    if let (Some((q, (p0, t0, ns0))), Some((g, _))) = (cfs_quota, s.cfs.as_ref()) {
        let (p1, t1, ns1) = counterparts::cfs_stat(g)?;
        m.insert("cfs_quota_us".into(), q as f64);
        m.insert("cfs_period_us".into(), cfg.cfs_period_us as f64);
        m.insert("cfs_periods".into(), p1.saturating_sub(p0) as f64);
        m.insert("cfs_throttled_periods".into(), t1.saturating_sub(t0) as f64);
        m.insert("cfs_throttled_ms".into(), ns1.saturating_sub(ns0) as f64 / 1e6);
    }
    let span_s = st.first_ns.map_or(f64::NAN, |f| (st.last_ns - f) as f64 * 1e-9);
    m.insert("receiver_span_ms".into(), span_s * 1e3);
    m.insert("sink_bytes".into(), num(&got, "bytes"));
    m.insert("sink_cpu_frac".into(), num(&got, "cpu_us") * 1e-6 / span_s);
    m.insert("arrivals_lost".into(), lost as f64);
    m.insert("start_phase_us".into(), phase_ns as f64 / 1e3);
    m.insert("loadavg_1m".into(), loadavg().0);
    if let Some(r) = &regulation {
        m.insert("regulator_ready".into(), if ready { 1.0 } else { 0.0 });
        let acc = regulator::accuracy(r, &reg_cfg.plan());
        m.insert("regulator_slots".into(), acc.slots as f64);
        m.insert("regulator_allocated_frac".into(), acc.allocated as f64 / acc.slots.max(1) as f64);
        m.insert("regulator_schedule_errors".into(), acc.schedule_errors as f64);
        m.insert("regulator_gate_errors".into(), r.gate_errors as f64);
        m.insert("regulator_late_us_p50".into(), acc.late_us_p50);
        m.insert("regulator_late_us_p99".into(), acc.late_us_p99);
        m.insert("regulator_late_us_max".into(), acc.late_us_max);
        m.insert("regulator_switch_us_p50".into(), acc.switch_us_p50);
        m.insert("regulator_switch_us_p99".into(), acc.switch_us_p99);
        let total = (acc.runtime_in_ns + acc.runtime_out_ns) as f64;
        m.insert("sender_runtime_ms".into(), total / 1e6);
        m.insert(
            "sender_runtime_out_frac".into(),
            if total > 0.0 { acc.runtime_out_ns as f64 / total } else { f64::NAN },
        );
    }
    if lost > 0 {
        return Err(failed(format!("the recorder's ring buffer lost {lost} frames: the point's gaps would be wrong")));
    }
    Ok(Some(PointResult { metrics: m, frames, origin_ns: origin }))
}

/// A point of results.csv: `variant`, speed, unit, `rep` (the model's names), then its metrics.
pub fn point(variant: &str, speed: u32, unit: usize, rep: u32, m: BTreeMap<String, f64>) -> Point {
    let keys = [
        ("variant", variant.to_string()),
        (SPEED_KEY, speed.to_string()),
        (UNIT_KEY, unit.to_string()),
        ("rep", rep.to_string()),
    ];
    Point::new(&keys, m)
}

fn frames_csv(frames: &[Arrival], origin_ns: u64) -> String {
    let mut t = String::from("t_us,len_bytes,payload_bytes,seq\n");
    for f in frames {
        t += &format!("{:.3},{},{},{}\n", (f.ts_ns as f64 - origin_ns as f64) / 1e3, f.len, f.payload, f.seq);
    }
    t
}

/// The whole sweep (repetitions outermost, so a drift of the machine spreads over all points);
/// each point is written to results.csv as it is measured. The caller ends `run`.
pub fn run(cfg: &Options, run: &mut LiveRun) -> Result<(), LiveError> {
    if cfg.variants.contains(&Via::Cfs) {
        // Every speed's quota fits the kernel's bounds, before anything is created.
        for &sp in &cfg.speeds_pct {
            counterparts::cfs_quota_us(cfg.cfs_period_us, sp).map_err(failed)?;
        }
    }
    let s = setup(cfg, run)?;
    run.set_info("setup", s.facts.clone());
    let frames_dir = run.out().join("frames");
    if cfg.frames {
        std::fs::create_dir_all(&frames_dir).map_err(|e| failed(format!("{}: {e}", frames_dir.display())))?;
    }
    for rep in 1..=cfg.common.reps {
        for &unit in &cfg.units_bytes {
            let mut plan: Vec<(Via, Option<u32>)> = Vec::new();
            if !cfg.no_off {
                plan.push((Via::Regulated, None));
            }
            for &via in &cfg.variants {
                plan.extend(cfg.speeds_pct.iter().map(|&v| (via, Some(v))));
            }
            for (via, speed) in plan {
                run.check()?;
                // A point the receiver limited (its window closed for more than
                // RWND_LIMITED_MAX of the busy time: the sink starved of CPU by other work on
                // the machine) does not measure the sender's regulation, nor does one whose
                // regulator was not in place before the sender's first write (a thread that a
                // loaded machine did not run in the lead it had, `regulator_ready` 0): measured
                // again, at most ATTEMPTS_MAX times; the attempts are a column, and the last is
                // kept. A point whose sender could not even be started within its lead is
                // measured again with twice the lead (it measured nothing).
                let mut attempt = 1;
                let mut lead_ms = START_LEAD_MS;
                let PointResult { metrics: mut m, frames, origin_ns: origin } = loop {
                    let Some(r) = run_point(cfg, run, &s, via, speed, unit, rep, lead_ms)? else {
                        if attempt >= ATTEMPTS_MAX {
                            return Err(failed(format!(
                                "the sender could not be started within the {lead_ms} ms before its start in {attempt} attempts (an overloaded machine)"
                            )));
                        }
                        run.progress(format!(
                            "  (the sender could not be started within {lead_ms} ms: measured again with {} ms)",
                            2 * lead_ms
                        ));
                        lead_ms *= 2;
                        attempt += 1;
                        continue;
                    };
                    let limited = r.metrics.get("sender_rwnd_limited_frac").is_some_and(|&x| x > RWND_LIMITED_MAX);
                    let late = r.metrics.get("regulator_ready").is_some_and(|&x| x < 1.0);
                    if !(limited || late) || attempt >= ATTEMPTS_MAX {
                        break r;
                    }
                    let why = if late {
                        "the regulator was not in place before the sender's start"
                    } else {
                        "receiver-limited"
                    };
                    let again = point("", speed.unwrap_or(100), unit, rep, r.metrics);
                    run.progress(format!("  ({why}: measured again) {}", again.line(SHOWN)));
                    attempt += 1;
                };
                m.insert("attempts".into(), f64::from(attempt));
                let variant = if speed.is_some() { via.name() } else { "off" };
                let sp = speed.unwrap_or(100);
                if cfg.frames {
                    let p = frames_path(run.out(), variant, unit, sp, rep);
                    let name = p.file_name().expect("a file name").to_string_lossy();
                    crate::harness::write_atomic(&frames_dir, &name, frames_csv(&frames, origin).as_bytes())
                        .map_err(failed)?;
                }
                let p = point(variant, sp, unit, rep, m);
                run.progress(p.line(SHOWN));
                run.push(p)?;
            }
        }
    }
    // A stop signal during the last point (a transfer does not poll for one in every phase)
    // still ends the run as interrupted, never as complete.
    run.check()?;
    drop(s);
    Ok(())
}

/// What a point's progress line shows.
const SHOWN: &[Shown] = &[
    ("Mbit/s", "bw_mbps", 2),
    ("frames", "receiver_frames", 0),
    ("gaps>=400us", "receiver_long_gaps", 0),
    (">=1ms", "receiver_lengthened_gaps", 0),
    ("rwnd-lim", "sender_rwnd_limited_frac", 3),
    ("sndbuf-lim", "sender_sndbuf_limited_frac", 2),
    ("late p50 us", "regulator_late_us_p50", 0),
    ("p99", "regulator_late_us_p99", 0),
    ("run outside slots", "sender_runtime_out_frac", 3),
    ("sender cpu ms", "sender_cpu_ms", 1),
    ("throttled", "cfs_throttled_periods", 0),
    ("load", "loadavg_1m", 2),
];

/// Where the frames of a point are written.
pub fn frames_path(out: &Path, variant: &str, unit: usize, speed: u32, rep: u32) -> PathBuf {
    out.join("frames").join(format!("{variant}-{unit}-{speed}-{rep}.csv"))
}

/// The command: its options, its plan, and this experiment as its run.
impl Experiment for Options {
    const NAME: &'static str = "tabata-speed";

    fn common(&self) -> &Common {
        &self.common
    }

    fn points(&self) -> usize {
        (self.speeds_pct.len() * self.variants.len() + usize::from(!self.no_off))
            * self.units_bytes.len()
            * self.common.reps as usize
    }

    fn plan(&self) -> String {
        format!(
            "1 MB each over {} Mbit/s, sender CPU {}, sink CPU {}, gate {}",
            self.rate_mbit,
            self.sender_cpu,
            self.sink_cpu,
            self.gate.name()
        )
    }

    fn run(&self, run: &mut LiveRun) -> Result<(), LiveError> {
        self::run(self, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(ts_us: u64, seq: u32, payload: u16) -> Arrival {
        Arrival { ts_ns: ts_us * 1000, seq, len: payload + 54, payload }
    }

    /// A gate that counts its writes.
    struct CountGate(Arc<std::sync::atomic::AtomicU64>);
    impl Gate for CountGate {
        fn set(&mut self, _run: bool) -> std::io::Result<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        fn name(&self) -> &'static str {
            "count"
        }
    }

    /// The regulator thread is made before it has a target (it says when it is ready), then
    /// regulates the target it is handed from the slot grid's origin; one that is never handed a
    /// target ends when dropped.
    #[test]
    fn the_regulator_is_ready_before_its_target_is_handed_over() {
        let cfg = RegulatorConfig {
            speed_pct: 50,
            slot_ns: 1_000_000,
            block_ns: 10_000_000,
            cpu: None,
            fifo_prio: None,
            slots_max: 6,
        };
        let now = regulator::monotonic_ns();
        let origin = (now / 1_000_000 + 200) * 1_000_000;
        let mut t = RegThread::start(cfg.clone(), origin);
        assert_eq!(t.ready_by(now + 10_000_000_000), Ok(true), "a regulator thread not ready in 10 s");
        let writes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        t.hand_over(Box::new(CountGate(Arc::clone(&writes))), std::process::id());
        std::thread::sleep(Duration::from_nanos((origin + 20_000_000).saturating_sub(regulator::monotonic_ns())));
        let reg = t.finish().unwrap().expect("a regulation");
        assert_eq!(reg.slots.len(), 6);
        assert_eq!(reg.origin_ns, origin);
        // 50 % of 10 slots: slots 0, 2, 4 run, 1, 3, 5 do not. The gate is handed over closed:
        // opened at 0, 2, 4, closed at 1, 3, 5, and opened once more at the end.
        assert_eq!(writes.load(Ordering::Relaxed), 7);
        let idle = RegThread::start(cfg, origin);
        drop(idle);
    }

    #[test]
    fn sink_stats_count_gaps_sizes_and_retransmissions_as_the_model() {
        // SYN (no payload), 3 full frames 123 us apart, a remainder 40 us later, a 1 ms gap, a
        // retransmission of the first frame.
        let f = [
            a(0, 0, 0),
            a(10, 1, 1460),
            a(133, 1461, 1460),
            a(256, 2921, 1460),
            a(296, 4381, 588),
            a(1296, 4969, 1460),
            a(1400, 1, 1460),
        ];
        let s = sink_stats(&f);
        assert_eq!(s.frames, 6);
        assert_eq!(s.bytes, 1460 * 4 + 588);
        assert_eq!(s.out_of_order, 1);
        assert_eq!((s.first_ns, s.last_ns), (Some(10_000), 1_400_000));
        assert_eq!(s.gaps[12], 2); // 123 us
        assert_eq!(s.gaps[4], 1); // 40 us
        assert_eq!(s.gaps[100], 1); // 1000 us
        assert_eq!(s.gaps[10], 1); // 104 us
        assert_eq!(s.short_gap_sizes[(588 + 54 + 4) / 100], 1);
        let mut m = BTreeMap::new();
        hostsim_host::insert_sink_metrics(&mut m, "receiver", &s);
        assert_eq!(m["receiver_lengthened_gaps"], 1.0);
        assert_eq!(m["receiver_long_gaps"], 1.0);
    }
}
