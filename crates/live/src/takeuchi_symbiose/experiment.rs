//! The experiment (see the module page, `mod.rs`): set-up, variants, points, the sweep.

use super::{Options, Variant};
use crate::command::{Common, Experiment};
use crate::gen::{self, Generator, Pacing, Stream, Udp4};
pub use crate::harness::LiveError;
use crate::harness::{failed, LiveRun, Netns, Point, Shown};
use crate::netns::Veth;
use crate::procfs::{self, CpuTimes, DevCounters};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

#[allow(clippy::all, dead_code, unused_imports, non_camel_case_types)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/symb.skel.rs"));
}
use skel::{SymbSkel, SymbSkelBuilder};

/// The swept key, named as in the model scenario (scenarios/takeuchi-symbiose-routing.toml).
pub const RATE_KEY: &str = "traffic.load.rate_pps";
/// The flows' UDP source ports (16 flows, so that RPS spreads them over both CPUs) and the
/// destination port (discard; nothing listens: the sink is an XDP program).
pub const SRC_PORTS: std::ops::Range<u16> = 40000..40016;
pub const DST_PORT: u16 = 9;
/// Router kthreads whose in-context softirq is told apart (`SYMB_KTIDS_MAX`).
const KTIDS_MAX: usize = 4;

/// The router's and the sink's programs, and their links (dropping detaches them).
pub struct Progs {
    skel: SymbSkel<'static>,
    links: Vec<Link>,
}

impl Progs {
    fn load() -> Result<Progs, LiveError> {
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = SymbSkelBuilder::default()
            .open(obj)
            .map_err(|e| LiveError::Unsupported(format!("opening the router's BPF object: {e}")))?;
        let skel = open.load().map_err(|e| {
            LiveError::Unsupported(format!(
                "loading the router's BPF programs (needs root, BPF, XDP, cpumap, tp_btf): {e}"
            ))
        })?;
        Ok(Progs { skel, links: Vec::new() })
    }

    /// The input program's mode: `SYMB_PASS`, `SYMB_CPUMAP` (to `cpu`) or `SYMB_XSK` (symb.h).
    fn set_ctl(&mut self, mode: u32, cpu: usize) {
        let bss = self.skel.maps.bss_data.as_deref_mut().expect("the program has a .bss");
        let v = skel::types::symb_ctl { redirect: mode, cpu: cpu as u32 };
        // SAFETY: the mmapped .bss, valid while the skeleton lives; the program reads it volatile.
        unsafe { std::ptr::write_volatile(&mut bss.ctl, v) };
    }

    fn set_window(&mut self, seq_off: usize, lo: u64, hi: u64) {
        let bss = self.skel.maps.bss_data.as_deref_mut().expect("the program has a .bss");
        let v = skel::types::symb_sink_ctl { seq_off: seq_off as u32, pad: 0, seq_lo: lo, seq_hi: hi };
        // SAFETY: as in set_ctl.
        unsafe { std::ptr::write_volatile(&mut bss.sink_ctl, v) };
    }

    fn set_ktids(&mut self, tids: &[u32]) {
        let bss = self.skel.maps.bss_data.as_deref_mut().expect("the program has a .bss");
        let mut a = [0u32; KTIDS_MAX];
        for (i, t) in tids.iter().take(KTIDS_MAX).enumerate() {
            a[i] = *t;
        }
        // SAFETY: as in set_ctl.
        unsafe { std::ptr::write_volatile(&mut bss.ktids, a) };
    }

    /// Per-CPU values of a one-entry per-CPU array, as u64 words.
    fn percpu(map: &libbpf_rs::Map, words: usize) -> Vec<Vec<u64>> {
        map.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .unwrap_or_default()
            .iter()
            .map(|v| {
                (0..words)
                    .map(|i| v.get(i * 8..i * 8 + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))))
                    .collect()
            })
            .collect()
    }

    fn counters(&self) -> Counters {
        let rtr = Progs::percpu(&self.skel.maps.rtr_stats, 3);
        let sink = Progs::percpu(&self.skel.maps.sink_stats, 7);
        let soft = Progs::percpu(&self.skel.maps.softirq_time, 4);
        let sum = |v: &[Vec<u64>], i: usize| v.iter().map(|c| c[i]).sum::<u64>();
        Counters {
            rtr_rx: sum(&rtr, 0),
            rtr_rx_cpu: rtr.iter().map(|c| c[0]).collect(),
            redirected: sum(&rtr, 1),
            redirect_failed: sum(&rtr, 2),
            sink: SinkCounts {
                frames: sum(&sink, 0),
                valid: sum(&sink, 1),
                bad_ip: sum(&sink, 2),
                bad_udp: sum(&sink, 3),
                no_csum: sum(&sink, 4),
                other: sum(&sink, 5),
                in_window: sum(&sink, 6),
            },
            net_rx_ns: soft.iter().map(|c| c[1]).collect(),
            net_rx_in_kthread_ns: soft.iter().map(|c| c[2]).collect(),
            net_rx_count: sum(&soft, 3),
        }
    }
}

/// The sink's counts (whole run; `struct symb_sink_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkCounts {
    pub frames: u64,
    pub valid: u64,
    pub bad_ip: u64,
    pub bad_udp: u64,
    pub no_csum: u64,
    pub other: u64,
    pub in_window: u64,
}

impl SinkCounts {
    /// Frames that arrived with a wrong or missing checksum.
    pub fn invalid(&self) -> u64 {
        self.bad_ip + self.bad_udp + self.no_csum
    }

    pub fn since(&self, a: &SinkCounts) -> SinkCounts {
        SinkCounts {
            frames: self.frames - a.frames,
            valid: self.valid - a.valid,
            bad_ip: self.bad_ip - a.bad_ip,
            bad_udp: self.bad_udp - a.bad_udp,
            no_csum: self.no_csum - a.no_csum,
            other: self.other - a.other,
            in_window: self.in_window - a.in_window,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Counters {
    rtr_rx: u64,
    rtr_rx_cpu: Vec<u64>,
    redirected: u64,
    redirect_failed: u64,
    sink: SinkCounts,
    net_rx_ns: Vec<u64>,
    net_rx_in_kthread_ns: Vec<u64>,
    net_rx_count: u64,
}

/// The input program's modes (symb.h).
const SYMB_PASS: u32 = 0;
const SYMB_CPUMAP: u32 = 1;
const SYMB_XSK: u32 = 2;

/// The run's kthreads and threads whose CPU time is measured, with their CPU.
#[derive(Clone, Debug, Default)]
struct Threads {
    /// (role, tid, cpu): `driver` (napi/in0-*), `ip` (cpumap/<cpu>/...), `sink` (napi/snk0-*),
    /// and while split-afxdp runs, its user-space threads `xsk_driver` and `xsk_ip`.
    kthreads: Vec<(&'static str, u32, usize)>,
}

pub struct Setup {
    progs: Progs,
    gen: Generator,
    gen_ns: Netns,
    rtr: Netns,
    /// The template frame (gen0 → in0, to the sink's address).
    frame: Vec<u8>,
    threads: Threads,
    xdp_modes: Vec<(String, String)>,
    rps_mask: Option<u64>,
    /// split-afxdp's forwarder while that variant runs, and its output route.
    fwd: Option<super::afxdp::Forwarder>,
    route: super::afxdp::Route,
}

/// Threads (any process) whose name starts with `prefix`: (tid, comm). Kthreads are processes
/// of their own, listed at the top of /proc.
fn threads_named(prefix: &str) -> BTreeSet<(u32, String)> {
    let mut out = BTreeSet::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            if c.starts_with(prefix) {
                out.insert((pid, c.trim().to_string()));
            }
        }
    }
    out
}

/// Wait (≤ 2 s) for a thread named `prefix`* that was not in `before`.
fn new_thread(run: &LiveRun, prefix: &str, before: &BTreeSet<(u32, String)>, what: &str) -> Result<u32, LiveError> {
    let end = Instant::now() + Duration::from_secs(2);
    loop {
        if let Some((tid, _)) = threads_named(prefix).into_iter().find(|t| !before.contains(t)) {
            return Ok(tid);
        }
        if Instant::now() > end {
            return Err(LiveError::Unsupported(format!("{what}: no kthread {prefix}* appeared")));
        }
        run.sleep(Duration::from_millis(20))?;
    }
}

/// Threaded NAPI on `dev` in `ns` (a device of the run's own namespace, gone with it: not a
/// ledger entry, as in ozaki_pbq/experiment.rs), its new kthread pinned to `cpu` at SCHED_FIFO `prio`
/// (recorded).
fn threaded_napi(run: &LiveRun, ns: &Netns, dev: &str, cpu: usize, prio: i32) -> Result<u32, LiveError> {
    let prefix = format!("napi/{dev}-");
    let before = threads_named(&prefix);
    let path = format!("/sys/class/net/{dev}/threaded");
    crate::netns::write_in(Some(&ns.name), &path, "1")
        .map_err(|e| LiveError::Unsupported(format!("threaded NAPI on a veth ({path}): {e}")))?;
    let tid = new_thread(run, &prefix, &before, &format!("threaded NAPI on {dev}"))?;
    run.set_affinity(tid, &[cpu])?;
    run.set_sched(tid, libc::SCHED_FIFO, prio)?;
    Ok(tid)
}

fn attach_xdp(run: &LiveRun, progs: &mut Progs, ns: &Netns, dev: &str, sink: bool) -> Result<String, LiveError> {
    let p = if sink { &progs.skel.progs.symb_sink } else { &progs.skel.progs.symb_rtr };
    let (link, mode) = crate::sys::in_netns(&ns.file()?, || {
        let idx = crate::sys::ifindex(dev)?;
        let link = p.attach_xdp(idx as i32).map_err(std::io::Error::other)?;
        let mode = crate::bpf::xdp_attached(idx)?.map_or("none", |(_, m)| m);
        Ok((link, mode))
    })
    .map_err(|e| LiveError::Unsupported(format!("attaching XDP to {dev} in {}: {e}", ns.name)))?;
    let prog_id = libbpf_rs::Program::id_from_fd(p.as_fd()).unwrap_or(0);
    run.record_xdp(Some(ns), dev, prog_id, link.info().ok().map(|i| i.id))?;
    progs.links.push(link);
    Ok(mode.to_string())
}

/// Create the namespaces, veths, routes; load and attach the programs; the cpumap entry; the
/// kthreads; the generator. Everything through `run` (its ledger).
pub fn setup(cfg: &Options, run: &mut LiveRun) -> Result<Setup, LiveError> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cfg.driver_cpu >= ncpu || cfg.other_cpu >= ncpu || cfg.driver_cpu == cfg.other_cpu {
        return Err(LiveError::Unsupported(format!(
            "needs two CPUs ({} and {}); this machine has {ncpu}",
            cfg.driver_cpu, cfg.other_cpu
        )));
    }
    if cfg.payload_bytes < 8 {
        return Err(failed(format!(
            "the payload must hold the 8-byte sequence number, got {} bytes",
            cfg.payload_bytes
        )));
    }
    let mut progs = Progs::load()?;
    let (gen_ns, rtr, snk) = (run.netns("gen")?, run.netns("rtr")?, run.netns("snk")?);
    // No IPv6 on the run's veths: their router solicitations and MLD reports would reach the
    // sink as frames that are not the generator's.
    for ns in [&gen_ns, &rtr, &snk] {
        for conf in ["all", "default"] {
            run.write_value(Some(ns), &format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6"), "1")?;
        }
    }
    run.veth(&Veth {
        ns_a: rtr.name.clone(),
        a: "in0".into(),
        addr_a: "198.18.0.1/24".into(),
        ns_b: gen_ns.name.clone(),
        b: "gen0".into(),
        addr_b: "198.18.0.2/24".into(),
    })?;
    run.veth(&Veth {
        ns_a: rtr.name.clone(),
        a: "out0".into(),
        addr_a: "198.18.1.1/24".into(),
        ns_b: snk.name.clone(),
        b: "snk0".into(),
        addr_b: "198.18.1.2/24".into(),
    })?;
    run.write_value(Some(&rtr), "/proc/sys/net/ipv4/ip_forward", "1")?;
    // The sink answers no ARP (its program drops everything): a permanent neighbour entry.
    let snk_mac = gen::mac_of(&snk, "snk0")?;
    let mac = snk_mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    crate::netns::ip(&[
        "-n",
        &rtr.name,
        "neigh",
        "replace",
        "198.18.1.2",
        "lladdr",
        &mac,
        "dev",
        "out0",
        "nud",
        "permanent",
    ])
    .map_err(failed)?;
    let mut xdp_modes = Vec::new();
    // The sink first (its veth gets NAPI with the program), then the router's input.
    xdp_modes.push(("snk0".to_string(), attach_xdp(run, &mut progs, &snk, "snk0", true)?));
    let sink_tid = threaded_napi(run, &snk, "snk0", cfg.other_cpu, cfg.sink_fifo_prio)?;
    xdp_modes.push(("in0".to_string(), attach_xdp(run, &mut progs, &rtr, "in0", false)?));
    let driver_tid = threaded_napi(run, &rtr, "in0", cfg.driver_cpu, cfg.router_fifo_prio)?;
    // The cpumap entry of the IP half's CPU: its kthread (cpumap/<cpu>/map:<id>) is bound there
    // by the kernel (kthread_bind), so only its policy is set.
    let prefix = format!("cpumap/{}/", cfg.other_cpu);
    let before = threads_named(&prefix);
    let mut val = [0u8; 8]; // struct bpf_cpumap_val { __u32 qsize; union { int fd; __u32 id; } bpf_prog; }
    val[0..4].copy_from_slice(&cfg.cpumap_qsize.to_ne_bytes());
    progs
        .skel
        .maps
        .cpu_map
        .update(&(cfg.other_cpu as u32).to_ne_bytes(), &val, MapFlags::ANY)
        .map_err(|e| LiveError::Unsupported(format!("a cpumap entry for CPU {}: {e}", cfg.other_cpu)))?;
    let ip_tid = new_thread(run, &prefix, &before, "the cpumap entry")?;
    run.set_sched(ip_tid, libc::SCHED_FIFO, cfg.router_fifo_prio)?;
    progs.set_ktids(&[driver_tid, ip_tid]);
    // NET_RX softirq clock (tracepoints, bpf_links recorded).
    for (name, p) in [
        ("tp_btf/softirq_entry", &progs.skel.progs.symb_softirq_entry),
        ("tp_btf/softirq_exit", &progs.skel.progs.symb_softirq_exit),
    ] {
        let link = p.attach().map_err(|e| LiveError::Unsupported(format!("attaching {name}: {e}")))?;
        let prog_id = libbpf_rs::Program::id_from_fd(p.as_fd()).unwrap_or(0);
        run.record_link(name, prog_id, link.info().map_err(|e| failed(format!("{name}: {e}")))?.id)?;
        progs.links.push(link);
    }
    let gen = Generator::load(run, &gen_ns)?;
    let frame = gen::udp4_frame(&Udp4 {
        src_mac: gen::mac_of(&gen_ns, "gen0")?,
        dst_mac: gen::mac_of(&rtr, "in0")?,
        src_ip: [198, 18, 0, 2],
        dst_ip: [198, 18, 1, 2],
        src_port: SRC_PORTS.start,
        dst_port: DST_PORT,
        payload: cfg.payload_bytes,
    });
    let threads = Threads {
        kthreads: vec![
            ("driver", driver_tid, cfg.driver_cpu),
            ("ip", ip_tid, cfg.other_cpu),
            ("sink", sink_tid, cfg.other_cpu),
        ],
    };
    let route =
        super::afxdp::Route { net: [198, 18, 1, 0], prefix: 24, src_mac: gen::mac_of(&rtr, "out0")?, dst_mac: snk_mac };
    Ok(Setup { progs, gen, gen_ns, rtr, frame, threads, xdp_modes, rps_mask: None, fwd: None, route })
}

/// split-afxdp on: the forwarder's sockets (created in the router's namespace, bound to in0's
/// and out0's queue 0), its threads, the XSKMAP entry, then the input program's mode.
fn afxdp_on(cfg: &Options, s: &mut Setup) -> Result<(), LiveError> {
    if s.fwd.is_some() {
        return Ok(());
    }
    let fc = super::afxdp::AfxdpConfig {
        period: Duration::from_secs_f64(cfg.period_ms / 1e3),
        driver_cpu: cfg.driver_cpu,
        ip_cpu: cfg.other_cpu,
        fifo_prio: cfg.router_fifo_prio,
        frames: cfg.umem_frames,
        ring: cfg.ring_entries,
    };
    let route = s.route;
    let (fwd, fd) = crate::sys::in_netns(&s.rtr.file()?, || {
        let (i, o) = (crate::sys::ifindex("in0")?, crate::sys::ifindex("out0")?);
        super::afxdp::Forwarder::start(&fc, i, o, route)
    })
    .map_err(|e| LiveError::Unsupported(format!("split-afxdp: AF_XDP sockets on the router's veths: {e}")))?;
    s.progs
        .skel
        .maps
        .xsk_map
        .update(&0u32.to_ne_bytes(), &(fd as u32).to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| LiveError::Unsupported(format!("split-afxdp: the XSKMAP entry of in0's queue 0: {e}")))?;
    s.threads.kthreads.push(("xsk_driver", fwd.tids.0, cfg.driver_cpu));
    s.threads.kthreads.push(("xsk_ip", fwd.tids.1, cfg.other_cpu));
    s.fwd = Some(fwd);
    let tids: Vec<u32> = s.threads.kthreads.iter().filter(|(r, _, _)| *r != "sink").map(|(_, t, _)| *t).collect();
    s.progs.set_ktids(&tids);
    s.progs.set_ctl(SYMB_XSK, cfg.other_cpu);
    Ok(())
}

/// split-afxdp off (the input program already in another mode): the threads stop, the sockets
/// close (the kernel removes the XSKMAP entry with the socket).
fn afxdp_off(s: &mut Setup) {
    if let Some(f) = s.fwd.take() {
        drop(f);
        s.threads.kthreads.retain(|(r, _, _)| !r.starts_with("xsk_"));
        let tids: Vec<u32> = s.threads.kthreads.iter().filter(|(r, _, _)| *r != "sink").map(|(_, t, _)| *t).collect();
        s.progs.set_ktids(&tids);
    }
}

/// Put the router in variant `v`: the program's mode and the input veth's RPS mask.
fn place(cfg: &Options, run: &LiveRun, s: &mut Setup, v: Variant) -> Result<(), LiveError> {
    match v {
        Variant::SplitAfxdp => afxdp_on(cfg, s)?,
        _ => {
            s.progs.set_ctl(if v == Variant::SplitCpumap { SYMB_CPUMAP } else { SYMB_PASS }, cfg.other_cpu);
            afxdp_off(s);
        }
    }
    let mask = match v {
        Variant::KernelRps => (1u64 << cfg.driver_cpu) | (1u64 << cfg.other_cpu),
        Variant::KernelSplit => 1u64 << cfg.other_cpu,
        _ => 0,
    };
    if s.rps_mask != Some(mask) {
        run.set_rps(&s.rtr, "in0", mask)?;
        s.rps_mask = Some(mask);
    }
    run.sleep(Duration::from_millis(200))
}

/// `/proc/PID/schedstat`'s first field: time on a CPU, ns (`sum_exec_runtime`).
fn runtime_ns(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.split_whitespace().next()?.parse().ok()
}

/// The generator thread of this process (`hostsim-gen`).
fn gen_tid() -> Option<u32> {
    let rd = std::fs::read_dir("/proc/self/task").ok()?;
    rd.flatten().find_map(|e| {
        let tid: u32 = e.file_name().to_str()?.parse().ok()?;
        let c = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (c.trim() == "hostsim-gen").then_some(tid)
    })
}

/// Counters of the router's namespace, read from a thread that entered it
/// (`/proc/thread-self/net/*` shows the calling thread's namespace).
fn ns_counters(ns: &File) -> (BTreeMap<String, u64>, BTreeMap<String, DevCounters>) {
    std::thread::scope(|sc| {
        sc.spawn(|| {
            if crate::sys::enter_netns(ns).is_err() {
                return Default::default();
            }
            let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
            let dev = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap_or_default();
            (procfs::parse_snmp(&snmp, "Ip:"), procfs::parse_net_dev(&dev))
        })
        .join()
        .unwrap_or_default()
    })
}

struct Snap {
    t: Instant,
    gen_seq: u64,
    c: Counters,
    stat: Vec<CpuTimes>,
    /// Runtime (ns) of each measured thread, by role (`driver`, `ip`, `sink`, `gen`).
    run_ns: BTreeMap<&'static str, u64>,
    softnet_dropped: u64,
    ip: BTreeMap<String, u64>,
    dev: BTreeMap<String, DevCounters>,
    /// split-afxdp's forwarder (zero when it is not running).
    xsk: super::afxdp::Counts,
}

fn snap(s: &Setup, rtr: &File, gen_seq: u64, gen_tid: Option<u32>) -> Snap {
    let t = Instant::now();
    let c = s.progs.counters();
    let mut run_ns = BTreeMap::new();
    for (role, tid, _) in &s.threads.kthreads {
        run_ns.insert(*role, runtime_ns(&format!("/proc/{tid}/schedstat")).unwrap_or(0));
    }
    if let Some(g) = gen_tid {
        run_ns.insert("gen", runtime_ns(&format!("/proc/self/task/{g}/schedstat")).unwrap_or(0));
    }
    let stat = procfs::read_stat().unwrap_or_default();
    let (ip, dev) = ns_counters(rtr);
    let xsk = s.fwd.as_ref().map(|f| f.counts()).unwrap_or_default();
    Snap {
        t,
        gen_seq,
        c,
        stat,
        run_ns,
        softnet_dropped: procfs::read_softnet().unwrap_or_default().iter().map(|x| x.dropped).sum(),
        ip,
        dev,
        xsk,
    }
}

fn loadavg_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The sequence numbers of the window: frames built in `warmup_s..warmup_s + window_s`.
pub fn seq_window(warmup_s: f64, window_s: f64, rate_pps: f64) -> (u64, u64) {
    ((warmup_s * rate_pps).round() as u64, ((warmup_s + window_s) * rate_pps).round() as u64)
}

/// One point's metrics.
pub fn run_point(
    cfg: &Options,
    run: &LiveRun,
    s: &mut Setup,
    v: Variant,
    rate_pps: f64,
) -> Result<BTreeMap<String, f64>, LiveError> {
    let (lo, hi) = seq_window(cfg.warmup_s, cfg.window_s, rate_pps);
    s.progs.set_window(gen::UDP4_PAYLOAD_OFF, lo, hi);
    let rtr = s.rtr.file()?;
    let z = snap(s, &rtr, 0, None);
    let load_start = loadavg_1m();
    let stream = Stream::new("load", "gen0", s.frame.clone(), rate_pps)
        .rotate(gen::UDP4_SRC_PORT_OFF, SRC_PORTS.collect())
        .seq_at(gen::UDP4_PAYLOAD_OFF)
        .udp_csum();
    let gen_secs = cfg.warmup_s + cfg.window_s + 0.2;
    let pacing = Pacing {
        cpu: Some(cfg.other_cpu),
        fifo_prio: Some(cfg.gen_fifo_prio),
        secs: gen_secs,
        quantum_us: cfg.gen_quantum_us,
        call_frames_max: cfg.gen_call_frames_max,
        batch_max: cfg.gen_batch,
        ..Pacing::default()
    };
    let (a, b, report, seq_end) = {
        let running = s.gen.start(&s.gen_ns, vec![stream], &pacing)?;
        let waited = run.sleep(Duration::from_secs_f64(cfg.warmup_s));
        let gtid = gen_tid();
        let a = snap(s, &rtr, running.seq()[0], gtid);
        let waited = waited.and_then(|_| run.sleep(Duration::from_secs_f64(cfg.window_s)));
        let b = snap(s, &rtr, running.seq()[0], gtid);
        let end = Instant::now() + Duration::from_secs_f64(gen_secs + 2.0);
        while waited.is_ok() && !running.finished() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let seq_end = running.seq()[0];
        let report = running.stop();
        waited?;
        (a, b, report, seq_end)
    };
    if let Some(e) = &report.setup_error {
        return Err(failed(format!("the generator could not start: {e}")));
    }
    for r in report.streams.iter().filter(|r| r.errors > 0) {
        run.progress(format!(
            "generator: {} of {} BPF_PROG_RUN calls failed, the first with: {}",
            r.errors,
            r.calls,
            r.first_error.as_deref().unwrap_or("?")
        ));
    }
    run.sleep(Duration::from_millis(300))?; // what is still in the router's queues arrives
    let c = snap(s, &rtr, seq_end, None);
    let mut m = metrics(v, &a, &b, &z, &c, s);
    let win = b.t.duration_since(a.t).as_secs_f64().max(1e-9);
    let achieved = b.gen_seq.saturating_sub(a.gen_seq) as f64 / win;
    let errors: u64 = report.streams.iter().map(|r| r.errors).sum();
    let skipped: u64 = report.streams.iter().map(|r| r.skipped).sum();
    let achieved_frac = if rate_pps > 0.0 { achieved / rate_pps } else { 1.0 };
    let valid = achieved_frac >= cfg.valid_frac && errors == 0 && seq_end >= hi;
    m.insert("offered_pps".into(), rate_pps);
    m.insert("achieved_pps".into(), achieved);
    m.insert("achieved_frac".into(), achieved_frac);
    m.insert("gen_skipped".into(), skipped as f64);
    m.insert("gen_errors".into(), errors as f64);
    m.insert("valid".into(), if valid { 1.0 } else { 0.0 });
    m.insert("window_sent_count".into(), (hi - lo) as f64);
    m.insert("gen_sent_total".into(), seq_end as f64);
    m.insert(
        "out_window_frac".into(),
        if hi > lo {
            c.c.sink.in_window.saturating_sub(z.c.sink.in_window) as f64 / (hi - lo) as f64
        } else {
            f64::NAN
        },
    );
    m.insert("loadavg_1m_start".into(), load_start);
    m.insert("loadavg_1m_end".into(), loadavg_1m());
    Ok(m)
}

/// The metrics of a window (`a`..`b`) and of the whole point (`z`..`c`).
fn metrics(v: Variant, a: &Snap, b: &Snap, z: &Snap, c: &Snap, s: &Setup) -> BTreeMap<String, f64> {
    let win = b.t.duration_since(a.t).as_secs_f64().max(1e-9);
    let win_ns = win * 1e9;
    let mut m = BTreeMap::new();
    let rate = |x: u64, y: u64| x.saturating_sub(y) as f64 / win;
    m.insert("rtr_rx_pps".into(), rate(b.c.rtr_rx, a.c.rtr_rx));
    m.insert("redirected_pps".into(), rate(b.c.redirected, a.c.redirected));
    m.insert("redirect_failed_pps".into(), rate(b.c.redirect_failed, a.c.redirect_failed));
    let ipc = |s: &Snap, k: &str| s.ip.get(k).copied().unwrap_or(0);
    // split-afxdp forwards in user space: its forwarded frames are those its IP thread posted
    // to the output socket's TX ring (the router's ForwDatagrams stays 0).
    let forwarded = if v == Variant::SplitAfxdp {
        rate(b.xsk.forwarded, a.xsk.forwarded)
    } else {
        rate(ipc(b, "ForwDatagrams"), ipc(a, "ForwDatagrams"))
    };
    m.insert("forwarded_pps".into(), forwarded);
    m.insert("ip_in_receives_pps".into(), rate(ipc(b, "InReceives"), ipc(a, "InReceives")));
    m.insert("ip_out_discards_pps".into(), rate(ipc(b, "OutDiscards"), ipc(a, "OutDiscards")));
    let sink = b.c.sink.since(&a.c.sink);
    m.insert("out_rx_pps".into(), sink.valid as f64 / win);
    let whole = c.c.sink.since(&z.c.sink);
    m.insert("sink_frames_count".into(), whole.frames as f64);
    m.insert("sink_valid_count".into(), whole.valid as f64);
    m.insert("sink_invalid_count".into(), whole.invalid() as f64);
    m.insert("sink_bad_ip_count".into(), whole.bad_ip as f64);
    m.insert("sink_bad_udp_count".into(), whole.bad_udp as f64);
    m.insert("sink_no_csum_count".into(), whole.no_csum as f64);
    m.insert("sink_other_count".into(), whole.other as f64);
    // Drops by place (the model's names, crates/host/src/types.rs DROP_NAMES, plus cpumap/out_ring).
    let dev = |s: &Snap, d: &str, f: fn(&DevCounters) -> u64| s.dev.get(d).map_or(0, f);
    m.insert("drop_nic_ring_pps".into(), rate(dev(b, "in0", |d| d.rx_dropped), dev(a, "in0", |d| d.rx_dropped)));
    m.insert("drop_out_ring_pps".into(), rate(dev(b, "out0", |d| d.tx_dropped), dev(a, "out0", |d| d.tx_dropped)));
    let cpumap_lost = (b.c.redirected - a.c.redirected) as f64 - (ipc(b, "InReceives") - ipc(a, "InReceives")) as f64;
    m.insert("drop_cpumap_pps".into(), if v == Variant::SplitCpumap { cpumap_lost.max(0.0) / win } else { 0.0 });
    m.insert("drop_backlog_pps".into(), rate(b.softnet_dropped, a.softnet_dropped));
    // split-afxdp's own counters (0 in the other variants).
    let (xa, xb, xz, xc) = (&a.xsk, &b.xsk, &z.xsk, &c.xsk);
    m.insert("xsk_rx_pps".into(), rate(xb.rx, xa.rx));
    m.insert(
        "drop_xsk_pps".into(),
        rate(xb.xsk_rx_dropped + xb.xsk_rx_ring_full, xa.xsk_rx_dropped + xa.xsk_rx_ring_full),
    );
    m.insert("drop_xsk_tx_ring_pps".into(), rate(xb.tx_ring_full, xa.tx_ring_full));
    m.insert("xsk_completed_pps".into(), rate(xb.completed, xa.completed));
    m.insert("xsk_queue_ops_per_s".into(), rate(xb.queue_ops, xa.queue_ops));
    m.insert(
        "xsk_batch_mean".into(),
        if xb.ip_wakes > xa.ip_wakes {
            (xb.handed - xa.handed) as f64 / (xb.ip_wakes - xa.ip_wakes) as f64
        } else {
            0.0
        },
    );
    m.insert("xsk_batch_max".into(), xc.max_batch as f64);
    m.insert("xsk_driver_wakes_per_s".into(), rate(xb.driver_wakes, xa.driver_wakes));
    m.insert("xsk_ip_wakes_per_s".into(), rate(xb.ip_wakes, xa.ip_wakes));
    m.insert(
        "xsk_periods_skipped_count".into(),
        ((xc.driver_missed + xc.ip_missed) - (xz.driver_missed + xz.ip_missed)) as f64,
    );
    m.insert(
        "xsk_dropped_ip_count".into(),
        ((xc.ttl_expired + xc.no_route + xc.not_ipv4) - (xz.ttl_expired + xz.no_route + xz.not_ipv4)) as f64,
    );
    m.insert("xsk_kick_errors_count".into(), (xc.kick_errors - xz.kick_errors) as f64);
    m.insert("xsk_tx_invalid_count".into(), (xc.xsk_tx_invalid - xz.xsk_tx_invalid) as f64);
    // Per-CPU load: softirq (tracepoints) and the router's kthreads (schedstat) apart.
    let ncpu = b.stat.len().min(a.stat.len()).max(b.c.net_rx_ns.len());
    let d = |x: &[u64], y: &[u64], i: usize| {
        x.get(i).copied().unwrap_or(0).saturating_sub(y.get(i).copied().unwrap_or(0)) as f64
    };
    let th = |role: &str| {
        b.run_ns.get(role).copied().unwrap_or(0).saturating_sub(a.run_ns.get(role).copied().unwrap_or(0)) as f64
    };
    let (mut router_sum, mut router_max, mut soft_sum, mut kth_sum) = (0.0, 0.0f64, 0.0, 0.0);
    let mut mean: BTreeMap<&str, f64> = BTreeMap::new();
    for cpu in 0..ncpu {
        let softirq = d(&b.c.net_rx_ns, &a.c.net_rx_ns, cpu) / win_ns;
        let in_k = d(&b.c.net_rx_in_kthread_ns, &a.c.net_rx_in_kthread_ns, cpu);
        let k_ns: f64 =
            s.threads.kthreads.iter().filter(|(r, _, c)| *r != "sink" && *c == cpu).map(|(r, _, _)| th(r)).sum();
        let kthread = (k_ns - in_k).max(0.0) / win_ns;
        let (softirq, kthread) = (softirq.min(1.0), kthread.min(1.0));
        m.insert(format!("cpu{cpu}_softirq_frac"), softirq);
        m.insert(format!("cpu{cpu}_kthread_frac"), kthread);
        m.insert(format!("cpu{cpu}_router_frac"), (softirq + kthread).min(1.0));
        m.insert(format!("rtr_rx_cpu{cpu}_pps"), d(&b.c.rtr_rx_cpu, &a.c.rtr_rx_cpu, cpu) / win);
        router_sum += (softirq + kthread).min(1.0);
        router_max = router_max.max((softirq + kthread).min(1.0));
        soft_sum += softirq;
        kth_sum += kthread;
        if let (Some(x), Some(y)) = (b.stat.get(cpu), a.stat.get(cpu)) {
            let sh = x.since(y).shares();
            for (state, f) in sh {
                m.insert(format!("machine_cpu{cpu}_{state}_frac"), f);
                *mean.entry(state).or_default() += f / ncpu as f64;
            }
            let busy = 1.0 - sh[4].1 - sh[5].1;
            m.insert(format!("machine_cpu{cpu}_busy_frac"), busy);
        }
    }
    for (state, f) in mean {
        m.insert(format!("machine_{state}_frac"), f);
    }
    let online = v.router_cpus() as f64;
    m.insert("online_cpus".into(), online);
    m.insert("cpu_busy_frac".into(), router_sum / online);
    m.insert("machine_busy_frac".into(), router_sum / ncpu.max(1) as f64);
    m.insert("cpu_busy_max_frac".into(), router_max);
    m.insert("cpu_softirq_frac".into(), soft_sum / ncpu.max(1) as f64);
    m.insert("cpu_kthread_frac".into(), kth_sum / ncpu.max(1) as f64);
    m.insert("driver_kthread_frac".into(), th("driver") / win_ns);
    m.insert("ip_kthread_frac".into(), th("ip") / win_ns);
    m.insert("xsk_driver_thread_frac".into(), th("xsk_driver") / win_ns);
    m.insert("xsk_ip_thread_frac".into(), th("xsk_ip") / win_ns);
    m.insert("sink_cpu_frac".into(), th("sink") / win_ns);
    m.insert("gen_cpu_frac".into(), th("gen") / win_ns);
    m.insert("net_rx_softirqs_per_s".into(), b.c.net_rx_count.saturating_sub(a.c.net_rx_count) as f64 / win);
    m.insert("window_s".into(), win);
    m
}

/// A point of results.csv: `variant`, `model_variant`, the swept key, `rep`, then every metric.
pub fn point(variant: Variant, rate_pps: f64, rep: u32, m: BTreeMap<String, f64>) -> Point {
    let keys = [
        ("variant", variant.name().to_string()),
        ("model_variant", variant.model_variant().to_string()),
        (RATE_KEY, format!("{rate_pps}")),
        ("rep", rep.to_string()),
    ];
    Point::new(&keys, m)
}

/// What a point's progress line shows.
const SHOWN: &[Shown] = &[
    ("achieved", "achieved_pps", 0),
    ("frac", "achieved_frac", 3),
    ("rtr rx", "rtr_rx_pps", 0),
    ("fwd", "forwarded_pps", 0),
    ("out", "out_rx_pps", 0),
    ("window", "out_window_frac", 3),
    ("invalid", "sink_invalid_count", 0),
    ("drops ring", "drop_nic_ring_pps", 0),
    ("cpumap", "drop_cpumap_pps", 0),
    ("xsk", "drop_xsk_pps", 0),
    ("backlog", "drop_backlog_pps", 0),
    ("out ring", "drop_out_ring_pps", 0),
    ("cpu0 sirq", "cpu0_softirq_frac", 2),
    ("kth", "cpu0_kthread_frac", 2),
    ("cpu1 sirq", "cpu1_softirq_frac", 2),
    ("kth", "cpu1_kthread_frac", 2),
    ("gen", "gen_cpu_frac", 2),
    ("sink", "sink_cpu_frac", 2),
    ("xsk drv", "xsk_driver_thread_frac", 2),
    ("ip", "xsk_ip_thread_frac", 2),
    ("steal", "machine_steal_frac", 2),
    ("load", "loadavg_1m_start", 1),
];

/// The whole sweep: repetitions outermost, then variants, then rates; each point written to
/// results.csv as it is measured. The caller ends `run` ([`LiveRun::finish`]).
pub fn run(cfg: &Options, run: &mut LiveRun) -> Result<(), LiveError> {
    let mut s = setup(cfg, run)?;
    run.set_info(
        "xdp_attachments",
        s.xdp_modes.iter().map(|(d, m)| serde_json::json!({ "iface": d, "mode": m })).collect::<Vec<_>>().into(),
    );
    run.set_info(
        "kthreads",
        s.threads
            .kthreads
            .iter()
            .map(|(r, t, c)| serde_json::json!({ "role": r, "tid": t, "cpu": c }))
            .collect::<Vec<_>>()
            .into(),
    );
    for rep in 1..=cfg.common.reps {
        for &v in &cfg.variants {
            place(cfg, run, &mut s, v)?;
            for &rate in &cfg.rates_pps {
                run.check()?;
                let metrics = run_point(cfg, run, &mut s, v, rate)?;
                let p = point(v, rate, rep, metrics);
                run.progress(p.line(SHOWN));
                run.push(p)?;
            }
        }
    }
    drop(s);
    Ok(())
}

/// The command: its options, its plan, and this experiment as its run.
impl Experiment for Options {
    const NAME: &'static str = "takeuchi-symbiose";

    fn common(&self) -> &Common {
        &self.common
    }

    fn points(&self) -> usize {
        self.rates_pps.len() * self.variants.len() * self.common.reps as usize
    }

    fn plan(&self) -> String {
        format!(
            "each {:.1} s (+{:.1} s warm-up), driver CPU {}, generator/sink CPU {}",
            self.window_s, self.warmup_s, self.driver_cpu, self.other_cpu
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
    fn variants_have_names_model_counterparts_and_router_cpus() {
        for &v in Variant::ALL {
            assert_eq!(Variant::parse(v.name()), Some(v));
        }
        assert_eq!(Variant::parse("unix-up"), None);
        assert_eq!(Variant::Kernel1.model_variant(), "unix-up");
        assert_eq!(Variant::SplitCpumap.model_variant(), "hitactix-smp");
        assert_eq!(Variant::SplitAfxdp.model_variant(), "hitactix-smp");
        assert_eq!(Variant::parse("split-afxdp"), Some(Variant::SplitAfxdp));
        assert_eq!(Variant::ALL.iter().map(|v| v.router_cpus()).collect::<Vec<_>>(), [1, 2, 2, 2, 2]);
        assert_eq!(Variant::parse("kernel-split"), Some(Variant::KernelSplit));
    }

    #[test]
    fn the_window_is_the_frames_built_in_it() {
        assert_eq!(seq_window(0.5, 2.0, 100_000.0), (50_000, 250_000));
        assert_eq!(seq_window(0.3, 1.0, 50_000.0), (15_000, 65_000));
    }

    #[test]
    fn invalid_frames_are_the_wrong_and_missing_checksums() {
        let a = SinkCounts { frames: 10, valid: 7, bad_ip: 1, bad_udp: 1, no_csum: 0, other: 1, in_window: 5 };
        let b = SinkCounts { frames: 30, valid: 24, bad_ip: 1, bad_udp: 2, no_csum: 1, other: 2, in_window: 20 };
        let d = b.since(&a);
        assert_eq!(d, SinkCounts { frames: 20, valid: 17, bad_ip: 0, bad_udp: 1, no_csum: 1, other: 1, in_window: 15 });
        assert_eq!(d.invalid(), 2, "not-UDP frames are counted apart, not as invalid");
    }

    #[test]
    fn a_row_is_keyed_by_variant_model_variant_rate_and_rep() {
        let mut metrics = BTreeMap::new();
        metrics.insert("out_rx_pps".to_string(), 1.0);
        let p = point(Variant::KernelRps, 200_000.0, 2, metrics);
        let keys: Vec<(&str, &str)> = p.keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            keys,
            [("variant", "kernel-rps"), ("model_variant", "unix-smp"), (RATE_KEY, "200000"), ("rep", "2")]
        );
        let csv = crate::harness::results_csv(&[p]);
        assert_eq!(csv, "variant,model_variant,traffic.load.rate_pps,rep,out_rx_pps\nkernel-rps,unix-smp,200000,2,1\n");
    }
}
