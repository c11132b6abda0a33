//! The user-space agent: it keeps the XDP program's port → priority table and its high-load flag.
//!
//! **Port → priority** (the paper's bind()/nice() hooks, §3.4.1), from one of two sources
//! ([`PortSource`]). `Hooks` (the default of the experiment and of `hostsim live pbq`): the
//! program's own `cgroup/post_bind4/6` and `cgroup/sock_release` hooks on a cgroup2 group of the
//! run set a port's level at bind() and close(), and a rescan of the processes they recorded
//! picks up nice changes (see [`super::hooks`]). `Proc`, the fallback, finds the same from
//! what bind() and nice() leave behind:
//! the sockets bound in the server's namespace (`/proc/thread-self/net/{udp,udp6,tcp,tcp6}`:
//! UDP sockets and TCP listeners, by inode), the processes of that namespace that hold them
//! (`/proc/PID/fd` → `socket:[inode]`, only for PIDs whose `/proc/PID/ns/net` is that namespace),
//! and their nice values (`/proc/PID/stat`). A port's level is the highest among its holders,
//! 19 − nice, as in the paper ("the highest priority among the processes sharing a socket").
//! It re-reads every `rescan_ms` and writes only the entries that changed, so a bind, a close
//! or a renice reaches the program within that period.
//!
//! **High load.** The paper's high-load state is the 2.4 backlog's throttle (§2.1.1): a sign of
//! the receiver's own overload. The agent takes it only from counters that this run's traffic
//! alone can move (issue 28), polled every `poll_ms`:
//! - the arrival rate the program counts on the run's own devices (all levels, before
//!   dropping) reached `capacity_frac` of the receiver's capacity, a rate measured with the
//!   mechanism off (the experiment sets it, [`Agent::set_capacity`]; 0 = unknown, sign unused);
//! - or a socket of the highest active priority in the run's own namespace dropped packets
//!   (`/proc/thread-self/net/udp` `drops`): the process the mechanism exists for is losing them.
//!
//! Not `/proc/net/softnet_stat`: its per-CPU backlog rows are shared by every namespace and every
//! concurrent run, so another run's flood would raise this run's high load (the
//! `backlog_*` fields of the shared [`Observation`] stay 0 here; the model feeds its own).
//! Once the program sheds, the socket signal goes quiet, so it cannot say when the overload
//! has ended: high load ends when the arrival rate has fallen below `release_frac` of the rate
//! at which it began (for `hold_ms`), or, to probe whether a transient set it, after `probe_ms`
//! without any overload sign.
//!
//! The state machine is `hostsim_host::mechanisms::ozaki_pbq::xdp::Detector`: the model's twin of this mechanism
//! runs the same code on the model's counters.
//!
//! **Lower priorities first.** On entering high load the agent sheds only the lowest priority
//! level that has traffic (`shed_below` = that level + 1). While the counters still show
//! overload it raises `shed_below` to the next active level every `escalate_ms`, never above the
//! highest active level, which is never shed. Every shed level keeps its minimum share (the
//! program's per-window allowance, smaller for lower levels).
//!
//! **Interrupt suppression** (§3.3, [`super::suppress`]), when the experiment hands the agent
//! the threaded-NAPI kthreads ([`Agent::suppress`]): every `check_ms` it compares the detector's
//! high load and the bytes waiting on the top-level sockets with the rule and moves or lowers
//! the kthreads; the detector itself still polls every `poll_ms`.

use super::hooks;
use super::suppress::{self, SuppressConfig, Suppressor};
use super::xdp::{level_of_nice, Ctl, HookStats, LevelStats, PbqXdp, XdpMode, LEVELS};
use crate::bpf::Unsupported;
use crate::procfs;
use crate::sys;
use hostsim_host::mechanisms::ozaki_pbq::xdp::{Detector, DetectorConfig, Observation};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use super::hooks::PortOwner;

/// Inode of a network namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`).
pub fn netns_inode(f: &File) -> std::io::Result<u64> {
    Ok(f.metadata()?.ino())
}

/// Ports bound in the calling thread's network namespace (whose nsfs inode is `ns_inode`) and
/// the nice values of the processes holding them.
pub fn scan_ports(ns_inode: u64) -> std::io::Result<BTreeMap<u16, PortOwner>> {
    let socks = procfs::read_thread_socks()?;
    let port_of: BTreeMap<u64, u16> = socks.iter().filter(|s| s.inode != 0).map(|s| (s.inode, s.port)).collect();
    let mut out: BTreeMap<u16, PortOwner> = BTreeMap::new();
    let want = format!("net:[{ns_inode}]");
    for e in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if std::fs::read_link(format!("/proc/{pid}/ns/net")).ok().and_then(|p| p.to_str().map(|s| s == want))
            != Some(true)
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        let mut ports = Vec::new();
        for fd in fds.flatten() {
            let Ok(l) = std::fs::read_link(fd.path()) else { continue };
            let Some(ino) = l.to_str().and_then(|s| s.strip_prefix("socket:[")).and_then(|s| s.strip_suffix(']'))
            else {
                continue;
            };
            if let Some(&port) = ino.parse::<u64>().ok().and_then(|i| port_of.get(&i)) {
                ports.push(port);
            }
        }
        if ports.is_empty() {
            continue;
        }
        let Some(st) = procfs::read_pid_stat(pid) else { continue };
        for port in ports {
            let level = level_of_nice(i32::from(st.nice));
            let o = out.entry(port).or_insert(PortOwner { level, nice: st.nice, pids: Vec::new() });
            if level > o.level {
                o.level = level;
                o.nice = st.nice;
            }
            if !o.pids.contains(&pid) {
                o.pids.push(pid);
            }
        }
    }
    Ok(out)
}

/// Where the port → level table comes from (module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortSource {
    /// Walk `/proc` in the namespace every `rescan_ms` ([`scan_ports`]).
    Proc,
    /// The program's bind/release hooks attached to the cgroup2 group at `cgroup` (a
    /// directory), and a rescan of the holders they recorded; with `netns_only`, binds in other
    /// network namespaces than the agent's are not recorded.
    Hooks { cgroup: std::path::PathBuf, netns_only: bool },
}

impl PortSource {
    pub fn name(&self) -> &'static str {
        match self {
            PortSource::Proc => "proc",
            PortSource::Hooks { .. } => "hooks",
        }
    }
}

crate::named_values! {
    /// Where ports' priorities come from.
    pub enum Ports {
        /// The program's bind hooks on a cgroup2 group the sinks join.
        Hooks = "hooks",
        /// The agent's scan of /proc (the fallback).
        Proc = "proc",
    }
}

/// The agent's parameters. The detector's are the model's `[kernel] xdp_*` keys, with the
/// same defaults (`hostsim_host::mechanisms::ozaki_pbq::xdp::DetectorConfig`).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    pub poll_ms: u64,
    pub rescan_ms: u64,
    pub ports: PortSource,
    pub xdp_mode: XdpMode,
    pub detector: DetectorConfig,
    /// The program's minimum share: packets per window for the top level (level l: ·(l+1)/40).
    pub min_share_top: u32,
    pub window_ms: u64,
}

impl Default for AgentConfig {
    fn default() -> AgentConfig {
        AgentConfig {
            poll_ms: 10,
            rescan_ms: 250,
            ports: PortSource::Proc,
            xdp_mode: XdpMode::Auto,
            detector: DetectorConfig::default(),
            min_share_top: 400,
            window_ms: 10,
        }
    }
}

/// Counters the agent reads in the server namespace, for the experiment's metrics.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub t: Option<Instant>,
    pub xdp: Vec<LevelStats>,
    /// The namespace's `Udp:` SNMP counters.
    pub udp: BTreeMap<String, u64>,
    /// Per port: drops on its socket(s).
    pub sock_drops: BTreeMap<u16, u64>,
    /// Per device in the server namespace.
    pub devs: BTreeMap<String, procfs::DevCounters>,
    /// Time spent in high load so far, and entries into it.
    pub high_load_ns: u64,
    pub high_load_entries: u64,
    pub ports: BTreeMap<u16, PortOwner>,
    /// The hooks' counters (all 0 with `PortSource::Proc`).
    pub hooks: HookStats,
    /// The control block as last written (mechanism on, high load, shed_below).
    pub ctl: Ctl,
    /// Interrupt suppression: changes made, time suppressed, failed calls (0 without it).
    pub supp_changes: u64,
    pub supp_ns: u64,
    pub supp_errors: u64,
}

enum Cmd {
    Enable(bool),
    Capacity(f64),
    Suppress(Option<SuppressConfig>),
    Snapshot(mpsc::Sender<Snapshot>),
    Stop,
}

/// Where the agent attached the program: interface name, program id, bpf_link id (for the
/// run's ledger).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    pub iface: String,
    pub prog_id: u32,
    pub link_id: Option<u32>,
    /// `native` or `generic`, as the kernel reports it after attaching.
    pub mode: &'static str,
}

/// A hook program attached to the cgroup: (section name, program id, bpf_link id).
pub type HookLink = (&'static str, u32, u32);

struct Started {
    attachments: Vec<Attachment>,
    hook_links: Vec<HookLink>,
}

/// The agent thread: it lives in the server namespace, owns the loaded program and its links,
/// and detaches everything when stopped or dropped.
pub struct Agent {
    tx: mpsc::Sender<Cmd>,
    handle: Option<JoinHandle<()>>,
    attachments: Vec<Attachment>,
    hook_links: Vec<HookLink>,
}

impl Agent {
    /// Start: enter `netns`, load the program, attach it to `ifaces`, fill the port table once.
    /// Returns when all that has succeeded (or why it failed).
    /// With `cgroup_tasks`, the thread first joins that CPU cgroup (see `cgroup.rs`).
    pub fn start(
        netns: File,
        ifaces: Vec<String>,
        cfg: AgentConfig,
        cgroup_tasks: Option<std::path::PathBuf>,
    ) -> Result<Agent, Unsupported> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("hostsim-agent".into())
            .spawn(move || {
                if let Some(t) = cgroup_tasks {
                    let _ = std::fs::write(t, "0"); // best effort: v2 moves whole processes only
                }
                agent_thread(netns, ifaces, cfg, rx, ready_tx)
            })
            .map_err(|e| Unsupported(format!("starting the agent thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(s)) => Ok(Agent { tx, handle: Some(handle), attachments: s.attachments, hook_links: s.hook_links }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => {
                let _ = handle.join();
                Err(Unsupported("the agent thread died while starting".into()))
            }
        }
    }

    /// Where the program is attached.
    pub fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }

    /// Where the bind/release hooks are attached (empty with `PortSource::Proc`).
    pub fn hook_links(&self) -> &[HookLink] {
        &self.hook_links
    }

    /// Mechanism on (drops under high load) or off (the program only counts).
    pub fn enable(&self, on: bool) {
        let _ = self.tx.send(Cmd::Enable(on));
    }

    /// The receiver's capacity in packets per second, measured with the mechanism off (0:
    /// unknown): see the module's "High load".
    pub fn set_capacity(&self, capacity_pps: f64) {
        let _ = self.tx.send(Cmd::Capacity(capacity_pps));
    }

    /// Interrupt suppression on these kthreads from now on (None: off, and the kthreads put
    /// back first). The kthreads must already be recorded in the run's ledger.
    pub fn suppress(&self, cfg: Option<SuppressConfig>) {
        let _ = self.tx.send(Cmd::Suppress(cfg));
    }

    pub fn snapshot(&self) -> Snapshot {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Cmd::Snapshot(tx)).is_err() {
            return Snapshot::default();
        }
        rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default()
    }

    /// Stop the thread; the program is detached and unloaded when this returns.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.tx.send(Cmd::Stop);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn agent_thread(
    netns: File,
    ifaces: Vec<String>,
    cfg: AgentConfig,
    rx: mpsc::Receiver<Cmd>,
    ready: mpsc::Sender<Result<Started, Unsupported>>,
) {
    let hooked = matches!(cfg.ports, PortSource::Hooks { .. });
    let setup = || -> Result<(PbqXdp, u64, Vec<&'static str>), Unsupported> {
        sys::enter_netns(&netns).map_err(|e| Unsupported(format!("entering the server namespace: {e}")))?;
        let ino = netns_inode(&netns).map_err(|e| Unsupported(e.to_string()))?;
        let mut x = PbqXdp::load_with(hooked)?;
        let mut modes = Vec::new();
        for i in &ifaces {
            let idx = sys::ifindex(i).map_err(|e| Unsupported(e.to_string()))?;
            x.attach_mode(idx, cfg.xdp_mode)?;
            let mode = crate::bpf::xdp_attached(idx).ok().flatten().map_or("unknown", |(_, m)| m);
            modes.push(mode);
        }
        if let PortSource::Hooks { cgroup, netns_only } = &cfg.ports {
            if *netns_only {
                let c = crate::bpf::netns_cookie()
                    .map_err(|e| Unsupported(format!("the namespace's cookie (SO_NETNS_COOKIE, Linux 5.14+): {e}")))?;
                x.set_hook_netns(c);
            }
            let dir = File::open(cgroup).map_err(|e| Unsupported(format!("{}: {e}", cgroup.display())))?;
            x.attach_hooks(&dir)?;
        }
        Ok((x, ino, modes))
    };
    let (mut x, ino, modes) = match setup() {
        Ok(v) => v,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut ctl = Ctl { min_share_top: cfg.min_share_top, window_ns: cfg.window_ms * 1_000_000, ..Ctl::default() };
    x.set_ctl(ctl);
    let mut table: BTreeMap<u16, u8> = BTreeMap::new();
    let mut ports = BTreeMap::new();
    let mut holders = hooks::Rescan::default();
    let mut rescan = |x: &PbqXdp, table: &mut BTreeMap<u16, u8>, ports: &mut BTreeMap<u16, PortOwner>| {
        if hooked {
            // The hooks wrote the table; the pass refreshes nice values and says what stands.
            let found = holders.pass(x);
            *table = found.iter().map(|(&p, o)| (p, o.level)).collect();
            *ports = found;
            return;
        }
        let Ok(found) = scan_ports(ino) else { return };
        for (&p, o) in &found {
            if table.get(&p) != Some(&o.level) && x.set_port_level(p, o.level).is_ok() {
                table.insert(p, o.level);
            }
        }
        let gone: Vec<u16> = table.keys().filter(|p| !found.contains_key(p)).copied().collect();
        for p in gone {
            if x.set_port_level(p, 0).is_ok() {
                table.remove(&p);
            }
        }
        *ports = found;
    };
    rescan(&x, &mut table, &mut ports);
    let prog_id = x.prog_id().unwrap_or(0);
    let attachments = ifaces
        .iter()
        .zip(x.links())
        .zip(modes)
        .map(|((i, (_, link_id)), mode)| Attachment { iface: i.clone(), prog_id, link_id, mode })
        .collect();
    let _ = ready.send(Ok(Started { attachments, hook_links: x.hook_links() }));

    let t0 = Instant::now();
    let mut det = Detector::new(cfg.detector);
    let mut last_rescan = Instant::now();
    let mut prev_xdp = x.stats();
    let mut prev_sock: BTreeMap<u16, u64> = BTreeMap::new();
    let mut high_load_ns = 0u64;
    let mut last_poll = Instant::now();
    let mut supp: Option<Suppressor> = None;
    // Counters of suppressors already ended, so a snapshot's are monotonic over the run.
    let (mut supp_changes, mut supp_ns, mut supp_errors) = (0u64, 0u64, 0u64);
    let mut next_check = Instant::now();
    loop {
        let wait = match &supp {
            Some(_) => next_check.saturating_duration_since(Instant::now()).min(Duration::from_millis(cfg.poll_ms)),
            None => Duration::from_millis(cfg.poll_ms).saturating_sub(last_poll.elapsed()),
        };
        match rx.recv_timeout(wait) {
            Ok(Cmd::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Ok(Cmd::Enable(on)) => {
                ctl.enabled = on;
                x.set_ctl(ctl);
                continue;
            }
            Ok(Cmd::Capacity(c)) => {
                det.set_capacity(c);
                continue;
            }
            Ok(Cmd::Suppress(c)) => {
                if let Some(mut old) = supp.take() {
                    old.restore();
                    supp_changes += old.changes;
                    supp_ns += old.suppressed_ns;
                    supp_errors += old.errors;
                }
                supp = c.map(Suppressor::new);
                continue;
            }
            Ok(Cmd::Snapshot(reply)) => {
                let socks = procfs::read_thread_socks().unwrap_or_default();
                let mut sock_drops = BTreeMap::new();
                for s in socks {
                    *sock_drops.entry(s.port).or_insert(0) += s.drops;
                }
                let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
                let dev = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap_or_default();
                let _ = reply.send(Snapshot {
                    t: Some(Instant::now()),
                    xdp: x.stats(),
                    udp: procfs::parse_snmp_udp(&snmp),
                    sock_drops,
                    devs: procfs::parse_net_dev(&dev),
                    high_load_ns: high_load_ns + if det.high { last_poll.elapsed().as_nanos() as u64 } else { 0 },
                    high_load_entries: det.entries,
                    ports: ports.clone(),
                    hooks: x.hook_stats(),
                    ctl,
                    supp_changes: supp_changes + supp.as_ref().map_or(0, |s| s.changes),
                    supp_ns: supp_ns + supp.as_ref().map_or(0, |s| s.suppressed_ns_now()),
                    supp_errors: supp_errors + supp.as_ref().map_or(0, |s| s.errors),
                });
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(s) = supp.as_mut() {
            let now = Instant::now();
            if now >= next_check {
                next_check = now + Duration::from_millis(s.cfg.check_ms.max(1));
                let top = table.values().copied().max().unwrap_or(0);
                let queued: u64 = procfs::read_thread_socks()
                    .unwrap_or_default()
                    .iter()
                    .filter(|k| top > 0 && table.get(&k.port).copied() == Some(top))
                    .map(|k| k.rx_queue)
                    .sum();
                s.set(suppress::wanted(det.high, queued, s.cfg.queued_bytes_min));
            }
        }
        if last_poll.elapsed() < Duration::from_millis(cfg.poll_ms) {
            continue;
        }
        // One poll.
        let now = Instant::now();
        if det.high {
            high_load_ns += now.duration_since(last_poll).as_nanos() as u64;
        }
        last_poll = now;
        if now.duration_since(last_rescan) >= Duration::from_millis(cfg.rescan_ms) {
            rescan(&x, &mut table, &mut ports);
            last_rescan = now;
        }
        let xs = x.stats();
        // Only the run's own counters (the module's "High load"): no backlog signs.
        let mut obs = Observation { t_ns: now.duration_since(t0).as_nanos() as u64, ..Observation::default() };
        for l in 0..LEVELS {
            obs.arrivals[l] = xs[l].rx.saturating_sub(prev_xdp[l].rx);
        }
        let top = table.values().copied().max().unwrap_or(0);
        let socks = procfs::read_thread_socks().unwrap_or_default();
        let mut sock_now: BTreeMap<u16, u64> = BTreeMap::new();
        for s in &socks {
            *sock_now.entry(s.port).or_insert(0) += s.drops;
        }
        for (p, &d) in &sock_now {
            if table.get(p).copied() == Some(top) && top > 0 {
                obs.top_socket_drops += d.saturating_sub(prev_sock.get(p).copied().unwrap_or(d));
            }
        }
        prev_sock = sock_now;
        prev_xdp = xs;
        det.observe(&obs);
        let want = Ctl { high_load: det.high, shed_below: det.shed_below, ..ctl };
        if want != ctl {
            ctl = want;
            x.set_ctl(ctl);
        }
    }
    drop(supp); // the kthreads back home before the program goes
    x.detach_all();
}
