//! `hostsim live pbq --dev IFACE`: the ozaki-pbq agent as a tool a server runs (issue 28, item 6).
//!
//! It attaches the priority-drop XDP program to an existing interface (of this namespace, or of
//! `--netns NAME`), sets ports' priorities with the bind hooks on a cgroup2 group it creates
//! (servers started in that group get their level at bind(); `--ports proc` scans `/proc`
//! instead, for servers already running), and runs the agent's detector on the program's own
//! counters. It **counts only** unless `--drop` is given: the control block's `enabled` flag
//! stays 0 and the program passes every frame. Every `--interval` it prints what it protects
//! (ports, levels, owners), the program's per-level counts and the detector's state.
//!
//! **What it changes and undoes.** The XDP program on the device (a bpf_link), the hooks on its
//! group (bpf_links) and the group itself (`<cgroup2 mount>/hsl-<pid>-<n>-servers`), each
//! recorded in a ledger (`ledger.rs`) before or as it is created. On the end of `--duration`, on
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT it detaches the program and the hooks and removes the
//! group (a server still in it is moved back to the root group first: it goes on running, now
//! unprotected). After a SIGKILL the links die with the process, since a bpf_link lives only as
//! long as a descriptor on it, and `hostsim live clean` (or the next run) removes the group. It
//! refuses a device that already has an XDP program (the kernel would refuse too, EBUSY): it
//! never replaces or removes a program it did not attach.

use super::agent::{Agent, AgentConfig, PortSource, Ports};
use super::xdp::{XdpMode, LEVELS};
use crate::command::{f64_in, positive_up_to};
use crate::harness::{failed, LiveError, LiveRun, Netns};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The ozaki-pbq agent on an existing interface: the XDP priority drop for a real server.
///
/// It attaches the
/// priority-drop XDP program to IFACE (refusing one that already has an XDP program), gives
/// ports the priority of the servers that bind them (bind hooks on a cgroup2 group it creates,
/// or `--ports proc`), counts only unless `--drop`, prints what it protects and the detector's
/// state, and detaches everything on exit and on SIGINT, SIGTERM, SIGHUP and SIGQUIT.
#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// The interface to attach to.
    #[arg(long, value_name = "IFACE", value_parser = iface_name)]
    pub dev: String,
    /// The network namespace (a name under /run/netns) the interface is in (default: this
    /// process's).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Shed low priorities under high load (default: count only, never drop).
    #[arg(long)]
    pub drop: bool,
    /// XDP mode.
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: XdpMode,
    /// Where ports' priorities come from: the bind hooks on a cgroup2 group the agent creates,
    /// or a scan of /proc, for servers already running.
    #[arg(long, value_enum, default_value = "hooks")]
    pub ports: Ports,
    /// The receiver's capacity, pkt/s: arrivals at 90% of it start high load (default: only
    /// drops at a top-priority socket do).
    #[arg(long, value_parser = positive_up_to(5e7, "pkt/s"))]
    pub capacity_pps: Option<f64>,
    /// Stop after this many seconds (default: run until a stop signal).
    #[arg(long = "duration", value_name = "S", value_parser = f64_in(0.0, 1e7, "s"))]
    pub duration_s: Option<f64>,
    /// Seconds between two prints of the state.
    #[arg(long = "interval", value_name = "S", default_value_t = 1.0, value_parser = f64_in(0.05, 1e7, "s"))]
    pub interval_s: f64,
    #[arg(skip)]
    pub agent: AgentConfig,
}

/// `--dev`: an interface's name as the kernel takes it (IFNAMSIZ − 1 bytes, no `/`).
fn iface_name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 15 || s.contains('/') || s.contains(char::is_whitespace) {
        return Err(format!("`{s}` is not an interface name"));
    }
    Ok(s.to_string())
}

/// `hostsim live pbq --dev IFACE`: the agent through the live harness's ledger and signals
/// (no output directory: it prints its state on stdout).
pub fn main(o: &Options) -> Result<(), LiveError> {
    let run = LiveRun::start_tool("pbq")?;
    let outcome = self::run(o, &run);
    run.finish(outcome)
}

impl Options {
    fn duration(&self) -> Option<Duration> {
        self.duration_s.map(Duration::from_secs_f64)
    }

    fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.interval_s)
    }
}

/// A line on stdout; a closed or broken stdout loses the line and nothing else.
fn say(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Run the agent until `--duration` or a stop signal. The caller ends `run`
/// ([`LiveRun::finish`]), which undoes the ledger.
pub fn run(cfg: &Options, run: &LiveRun) -> Result<(), LiveError> {
    let (ns_file, ns) = match &cfg.netns {
        Some(n) => {
            let p = format!("/run/netns/{n}");
            (File::open(&p).map_err(|e| failed(format!("--netns {n}: {p}: {e}")))?, Some(Netns { name: n.clone() }))
        }
        None => (File::open("/proc/self/ns/net").map_err(|e| failed(format!("/proc/self/ns/net: {e}")))?, None),
    };
    let where_ = cfg.netns.as_ref().map_or(String::new(), |n| format!(" in namespace {n}"));
    // Refuse a device that has a program already (ours would replace nothing: the kernel says
    // EBUSY; this says which program).
    let present = crate::sys::in_netns(&ns_file, || {
        let idx = crate::sys::ifindex(&cfg.dev)?;
        crate::bpf::xdp_attached(idx)
    })
    .map_err(|e| failed(format!("--dev {}{where_}: {e}", cfg.dev)))?;
    if let Some((id, mode)) = present {
        return Err(failed(format!(
            "{}{where_} already has an XDP program (id {id}, {mode} mode): hostsim live pbq does not replace a program it did not attach; detach that one first (`ip link set dev {} xdp off`)",
            cfg.dev, cfg.dev
        )));
    }
    let mut acfg = cfg.agent.clone();
    acfg.xdp_mode = cfg.mode;
    let mut group: Option<PathBuf> = None;
    if cfg.ports == Ports::Hooks {
        let g = run.server_group("servers", "for the bind hooks; `--ports proc` runs without")?;
        acfg.ports = PortSource::Hooks { cgroup: g.clone(), netns_only: true };
        group = Some(g);
    }
    let agent = Agent::start(ns_file, vec![cfg.dev.clone()], acfg, None);
    let agent = match agent {
        Ok(a) => a,
        Err(e) => {
            if let Some(g) = &group {
                crate::ledger::empty_group(g);
            }
            return Err(LiveError::Unsupported(e.0));
        }
    };
    for a in agent.attachments() {
        run.record_xdp(ns.as_ref(), &a.iface, a.prog_id, a.link_id)?;
    }
    for (what, prog_id, link_id) in agent.hook_links() {
        run.record_link(
            &format!("{what} of {}", group.as_ref().map_or(String::new(), |g| g.display().to_string())),
            *prog_id,
            *link_id,
        )?;
    }
    agent.enable(cfg.drop);
    agent.set_capacity(cfg.capacity_pps.unwrap_or(0.0));
    let outcome = watch(cfg, run, &agent, group.as_deref(), &where_);
    // Stop the agent (detaching the program and the hooks) before the ledger is undone; a
    // server still in the group goes back to the root group so that it can be removed.
    let last = agent.snapshot();
    agent.stop();
    say(counters_line(&last));
    if let Some(g) = &group {
        crate::ledger::empty_group(g);
    }
    say(format!(
        "hostsim live pbq: detached from {}{where_}{}",
        cfg.dev,
        group.as_ref().map_or(String::new(), |g| format!("; removing {}", g.display()))
    ));
    outcome
}

fn watch(cfg: &Options, run: &LiveRun, agent: &Agent, group: Option<&Path>, where_: &str) -> Result<(), LiveError> {
    for a in agent.attachments() {
        say(format!(
            "hostsim live pbq ({}): XDP program id {} attached to {}{where_} in {} mode (bpf_link {})",
            run.name(),
            a.prog_id,
            a.iface,
            a.mode,
            a.link_id.map_or("?".into(), |l| l.to_string())
        ));
    }
    say(if cfg.drop {
        "mode: drop: under high load the lowest active priorities are shed at the driver (--drop)".to_string()
    } else {
        "mode: count only: no packet is dropped (give --drop to shed low priorities under high load)".to_string()
    });
    match group {
        Some(g) => say(format!(
            "ports: set at bind() by cgroup/post_bind4/6 on {} (a server started there, e.g. `echo $$ > {}/cgroup.procs` before it creates its sockets, gets 19 - nice of its thread as its ports' level; nice changes seen within {} ms)",
            g.display(),
            g.display(),
            cfg.agent.rescan_ms
        )),
        None => say(format!("ports: from a scan of /proc every {} ms (every process of the namespace holding a UDP socket or TCP listener)", cfg.agent.rescan_ms)),
    }
    say(format!(
        "high load: {}; runs {}; on exit (and SIGINT, SIGTERM, SIGHUP, SIGQUIT) it detaches the program{}",
        cfg.capacity_pps.map_or("when a socket of the highest bound priority drops packets".to_string(), |c| format!(
            "when arrivals reach {:.0}% of {c:.0} pkt/s or a top-priority socket drops packets",
            cfg.agent.detector.capacity_frac * 100.0
        )),
        cfg.duration().map_or("until a stop signal".to_string(), |d| format!("for {:.1} s", d.as_secs_f64())),
        if group.is_some() { " and the hooks and removes the group" } else { "" }
    ));
    let t0 = Instant::now();
    let mut prev = agent.snapshot();
    loop {
        let left = cfg.duration().map(|d| d.saturating_sub(t0.elapsed()));
        if left == Some(Duration::ZERO) {
            return Ok(());
        }
        run.sleep(left.map_or(cfg.interval(), |l| l.min(cfg.interval())))?;
        let now = agent.snapshot();
        say(status_lines(t0.elapsed(), &prev, &now));
        prev = now;
    }
}

/// The state at one print: detector, per-level rates since the last print, ports.
fn status_lines(t: Duration, a: &super::agent::Snapshot, b: &super::agent::Snapshot) -> String {
    let secs = match (a.t, b.t) {
        (Some(x), Some(y)) => y.duration_since(x).as_secs_f64().max(1e-9),
        _ => 1.0,
    };
    let mut s = format!(
        "t {:.1} s: high load {} (entries {}), shedding levels below {}, mechanism {}",
        t.as_secs_f64(),
        if b.ctl.high_load { "yes" } else { "no" },
        b.high_load_entries,
        b.ctl.shed_below,
        if b.ctl.enabled { "on" } else { "off (counting)" }
    );
    for l in 0..=LEVELS {
        let (x, y) = (a.xdp.get(l).copied().unwrap_or_default(), b.xdp.get(l).copied().unwrap_or_default());
        if y.rx > x.rx {
            let name = if l == LEVELS { "other".to_string() } else { format!("level {l}") };
            s += &format!(
                "\n  {name}: {:.0} pkt/s, dropped {:.0} pkt/s",
                (y.rx - x.rx) as f64 / secs,
                y.drop.saturating_sub(x.drop) as f64 / secs
            );
        }
    }
    for (p, o) in &b.ports {
        s += &format!("\n  port {p}: level {} (nice {}), held by pid {:?}", o.level, o.nice, o.pids);
    }
    if b.hooks.binds + b.hooks.other_netns + b.hooks.full > 0 {
        s += &format!(
            "\n  hooks: {} binds recorded, {} releases, {} in other namespaces ignored, {} not recorded (table full)",
            b.hooks.binds, b.hooks.releases, b.hooks.other_netns, b.hooks.full
        );
    }
    s
}

/// The program's totals, one line per level with traffic: `counters: level L rx N drop D`.
pub fn counters_line(s: &super::agent::Snapshot) -> String {
    let mut v = Vec::new();
    for (l, x) in s.xdp.iter().enumerate() {
        if x.rx > 0 {
            let name = if l == LEVELS { "other".to_string() } else { l.to_string() };
            v.push(format!("counters: level {name} rx {} drop {} share_pass {}", x.rx, x.drop, x.share_pass));
        }
    }
    if v.is_empty() {
        "counters: no packets seen".into()
    } else {
        v.join("\n")
    }
}
