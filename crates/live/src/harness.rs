//! The live harness: one place that does, for every live experiment, what a run on a real
//! machine must do around its measurements. See the crate documentation for the API in use.
//!
//! - **Refuses clearly** when it cannot run: not root → [`LiveError::Unsupported`] ("needs
//!   root", exit code 2).
//! - **Probes the output directory** (creates it, writes and removes a file) before anything
//!   is created on the machine, so a full disk or a wrong path costs nothing.
//! - **Records before it creates**: namespaces, veths, cgroups, XDP attachments, values written
//!   to files (RPS masks, sysctls) and other processes' CPU affinities go into the run's ledger
//!   (`ledger.rs`) first; clean-up, interrupted or not, undoes exactly the ledger's entries.
//!   A SIGKILLed run's ledger is undone by the next run or by `hostsim live clean`.
//! - **Stops alike on SIGINT, SIGTERM, SIGHUP and SIGQUIT** (`signals.rs`): [`LiveRun::sleep`]
//!   and [`LiveRun::check`] return [`LiveError::Interrupted`], the experiment returns it, and
//!   [`LiveRun::finish`] undoes everything (exit code 128 + the signal's number).
//! - **Writes results point by point, atomically**: every [`LiveRun::push`] rewrites
//!   `results.csv` under a temporary name and renames it into place, and `run.json` says how
//!   many points it holds and whether the run completed, was interrupted or failed. A failed
//!   write stops the run with an error naming the file; what was written before stays.
//! - **Prints progress that cannot kill the run** ([`LiveRun::progress`]): a closed stderr or a
//!   reader that went away (EPIPE) loses the line, not the measurement.

use crate::cgroup::CpuGroup;
use crate::ledger::{Entry, Ledger, Undone};
use crate::netns::{ip, Veth};
use crate::signals::{self, Interrupted};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Why a live run stopped.
#[derive(Debug)]
pub enum LiveError {
    /// This machine or these privileges do not allow it (exit code 2; tests skip on it).
    Unsupported(String),
    /// A stop signal arrived (exit code 128 + its number); everything created was removed.
    Interrupted(Interrupted),
    /// Anything else (exit code 1).
    Failed(String),
}

impl LiveError {
    /// The process exit code this error maps to.
    pub fn exit_code(&self) -> u8 {
        match self {
            LiveError::Unsupported(_) => 2,
            LiveError::Interrupted(Interrupted(s)) => 128u8.saturating_add(*s as u8),
            LiveError::Failed(_) => 1,
        }
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiveError::Unsupported(s) => write!(f, "live runs are not possible here: {s}"),
            LiveError::Interrupted(i) => write!(f, "interrupted ({})", i.name()),
            LiveError::Failed(s) => f.write_str(s),
        }
    }
}

impl From<Interrupted> for LiveError {
    fn from(i: Interrupted) -> LiveError {
        LiveError::Interrupted(i)
    }
}

/// `LiveError::Failed` from any message.
pub fn failed(s: impl Into<String>) -> LiveError {
    LiveError::Failed(s.into())
}

/// Print a line on stderr; a closed or broken stderr loses the line and nothing else.
pub fn progress(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// One measured point: its coordinates (`variant`, swept keys, repetition: the first columns of
/// `results.csv`, in this order) and its metrics (the model's names; NaN = not measured).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    pub keys: Vec<(String, String)>,
    pub metrics: BTreeMap<String, f64>,
}

/// A metric a progress line shows: its label, its name, the decimals it is printed with.
pub type Shown = (&'static str, &'static str, usize);

impl Point {
    pub fn new(keys: &[(&str, String)], metrics: BTreeMap<String, f64>) -> Point {
        Point { keys: keys.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(), metrics }
    }

    /// A metric's value (NaN: not measured).
    pub fn get(&self, metric: &str) -> f64 {
        self.metrics.get(metric).copied().unwrap_or(f64::NAN)
    }

    /// The point as one line of progress: its keys (a key path by its last part), then each
    /// shown metric, then `INVALID` where the point has a `valid` metric that is not 1 (its
    /// offered load fell short: left out of the means).
    pub fn line(&self, shown: &[Shown]) -> String {
        let mut s = String::new();
        for (k, v) in &self.keys {
            let k = k.rsplit('.').next().unwrap_or(k);
            s.push_str(&format!("{k} {v} "));
        }
        s.pop();
        s.push(':');
        for &(label, metric, decimals) in shown {
            s.push_str(&format!("  {label} {:.decimals$}", self.get(metric)));
        }
        if self.metrics.contains_key("valid") && self.get("valid") != 1.0 {
            s.push_str("  INVALID");
        }
        s
    }
}

/// A network namespace the run created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Its file under /run/netns, to `setns` into.
    pub fn file(&self) -> Result<File, LiveError> {
        let p = format!("/run/netns/{}", self.name);
        File::open(&p).map_err(|e| failed(format!("{p}: {e}")))
    }
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Facts about this machine that live results depend on, for run.json.
pub fn machine_facts() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':').map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default();
    serde_json::json!({
        "kernel": read("/proc/sys/kernel/osrelease"),
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu_model": cpu_model,
        "netdev_max_backlog": read("/proc/sys/net/core/netdev_max_backlog"),
        "netdev_budget": read("/proc/sys/net/core/netdev_budget"),
        "rmem_default": read("/proc/sys/net/core/rmem_default"),
        "loadavg_at_start": read("/proc/loadavg"),
    })
}

/// Write `bytes` to `dir/name` through a temporary file in `dir` renamed into place: a reader,
/// or a run killed meanwhile, sees the old file or the whole new one.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    let named = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666)) // & umask, as a plain create
        .tempfile_in(dir)
        .map_err(named)?;
    tmp.write_all(bytes).and_then(|()| tmp.as_file().sync_data()).map_err(named)?;
    tmp.persist(&path).map_err(|e| named(e.error))?;
    Ok(())
}

/// Make `dir` and prove a file can be written in it (a probe of a few bytes, synced, removed).
pub fn probe_out(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.as_os_str().is_empty() {
        return Err("--out: give a directory".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {shown}: {e}"))?;
    write_atomic(dir, ".hostsim-probe", b"probe: this directory takes files\n")
        .map_err(|e| format!("cannot write to {shown}: {e}"))?;
    std::fs::remove_file(dir.join(".hostsim-probe")).map_err(|e| format!("cannot write to {shown}: {e}"))
}

/// One live run: its name (`hsl-<pid>-<n>`), ledger, output directory and results. Create it
/// before anything else of the run, so that it is dropped last (its `Drop` undoes the ledger).
pub struct LiveRun {
    name: String,
    experiment: String,
    /// None: a run that writes no results ([`LiveRun::start_tool`]).
    out: Option<PathBuf>,
    ledger: Ledger,
    t0: Instant,
    info: serde_json::Map<String, serde_json::Value>,
    points: Vec<Point>,
    finished: bool,
    /// Files (namespace, path) whose value before the run's first write the ledger holds.
    written: std::sync::Mutex<std::collections::BTreeSet<(Option<String>, String)>>,
}

impl LiveRun {
    /// Start a run of `experiment` writing into `out`: check privileges, install the stop
    /// handlers, probe `out`, undo what dead runs left behind, open the ledger, write
    /// `run.json` (status `running`). Nothing on the machine has changed when this fails.
    pub fn start(experiment: &str, out: &Path) -> Result<LiveRun, LiveError> {
        if !crate::sys::is_root() {
            return Err(LiveError::Unsupported(
                "needs root (network namespaces, XDP, cgroups): run it with sudo".into(),
            ));
        }
        signals::install().map_err(|e| failed(e.to_string()))?;
        probe_out(out).map_err(LiveError::Failed)?;
        let run = LiveRun::open(experiment, Some(out))?;
        run.write_run_json("running", None)?;
        Ok(run)
    }

    /// Start a run that writes no results (`hostsim live pbq`, the agent a server runs): as
    /// [`LiveRun::start`] without the output directory; the ledger, the stop signals and the
    /// clean-up are the same.
    pub fn start_tool(experiment: &str) -> Result<LiveRun, LiveError> {
        if !crate::sys::is_root() {
            return Err(LiveError::Unsupported("needs root (XDP, cgroups): run it with sudo".into()));
        }
        signals::install().map_err(|e| failed(e.to_string()))?;
        LiveRun::open(experiment, None)
    }

    fn open(experiment: &str, out: Option<&Path>) -> Result<LiveRun, LiveError> {
        let rep = crate::ledger::clean_dead();
        for r in &rep.removed {
            progress(format!("hostsim live: undid what an earlier run left: {r}"));
        }
        for r in &rep.failed {
            progress(format!("hostsim live: warning: could not remove what an earlier run left: {r}"));
        }
        let name = format!("{}{}-{}", crate::netns::PREFIX, std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst));
        let ledger = Ledger::create(&name).map_err(|e| failed(format!("creating the run's ledger: {e}")))?;
        let mut info = serde_json::Map::new();
        info.insert("experiment".into(), experiment.into());
        info.insert("run".into(), name.clone().into());
        info.insert("machine".into(), machine_facts());
        let out = out.map(Path::to_path_buf);
        Ok(LiveRun {
            name,
            experiment: experiment.to_string(),
            out,
            ledger,
            t0: Instant::now(),
            info,
            points: Vec::new(),
            finished: false,
            written: Default::default(),
        })
    }

    /// `hsl-<pid>-<n>`: every name the run creates starts with it.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn experiment(&self) -> &str {
        &self.experiment
    }

    /// The output directory (empty for a run of [`LiveRun::start_tool`]).
    pub fn out(&self) -> &Path {
        self.out.as_deref().unwrap_or(Path::new(""))
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Add `key` to run.json (the experiment's configuration, the planned number of points…);
    /// written with the next point.
    pub fn set_info(&mut self, key: &str, value: serde_json::Value) {
        self.info.insert(key.to_string(), value);
    }

    fn record(&self, e: Entry) -> Result<(), LiveError> {
        self.ledger.record(e).map_err(|err| failed(format!("writing the run's ledger: {err}")))
    }

    /// Create namespace `<run>-<role>` with its loopback up.
    pub fn netns(&self, role: &str) -> Result<Netns, LiveError> {
        let name = format!("{}-{role}", self.name);
        self.record(Entry::Netns { name: name.clone() })?;
        ip(&["netns", "add", &name])
            .map_err(|e| LiveError::Unsupported(format!("creating a network namespace: {e}")))?;
        ip(&["-n", &name, "link", "set", "lo", "up"]).map_err(failed)?;
        Ok(Netns { name })
    }

    /// Create a veth pair straight into its two namespaces, address both ends, bring them up.
    pub fn veth(&self, v: &Veth) -> Result<(), LiveError> {
        self.record(Entry::Veth { ns: Some(v.ns_a.clone()), dev: v.a.clone() })?;
        ip(&["link", "add", &v.a, "netns", &v.ns_a, "type", "veth", "peer", "name", &v.b, "netns", &v.ns_b])
            .map_err(|e| LiveError::Unsupported(format!("creating a veth pair: {e}")))?;
        for (ns, dev, addr) in [(&v.ns_a, &v.a, &v.addr_a), (&v.ns_b, &v.b, &v.addr_b)] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]).map_err(failed)?;
            ip(&["-n", ns, "link", "set", dev, "up"]).map_err(failed)?;
        }
        Ok(())
    }

    /// Create a veth pair with both ends in `ns`, left down and without addresses (a device to
    /// park a program on: see `gen.rs`).
    pub fn spare_veth(&self, ns: &Netns, a: &str, b: &str) -> Result<(), LiveError> {
        self.record(Entry::Veth { ns: Some(ns.name.clone()), dev: a.to_string() })?;
        ip(&["-n", &ns.name, "link", "add", a, "type", "veth", "peer", "name", b])
            .map_err(|e| LiveError::Unsupported(format!("creating a veth pair: {e}")))
    }

    /// Write `value` to `path` as namespace `ns` sees it (None: the root namespace's view: a
    /// global sysctl such as `net.core.flow_limit_cpu_bitmap`), recording the value it had
    /// before the run first wrote it, which clean-up writes back. Later writes of the same file
    /// (a setting switched point by point) add nothing to the ledger: its entry already holds
    /// the value to restore.
    pub fn write_value(&self, ns: Option<&Netns>, path: &str, value: &str) -> Result<(), LiveError> {
        let n = ns.map(|n| n.name.as_str());
        let key = (n.map(str::to_string), path.to_string());
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if !written.contains(&key) {
            let old = crate::netns::read_in(n, path).map_err(failed)?;
            self.record(Entry::File { ns: key.0.clone(), path: path.to_string(), old: old.trim().to_string() })?;
            written.insert(key);
        }
        crate::netns::write_in(n, path, value).map_err(failed)
    }

    /// Set device `dev`'s RPS mask (`/sys/class/net/DEV/queues/rx-0/rps_cpus`) in `ns`.
    pub fn set_rps(&self, ns: &Netns, dev: &str, mask: u64) -> Result<(), LiveError> {
        self.write_value(Some(ns), &format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus"), &format!("{mask:x}"))
    }

    /// The run's CPU group when `wanted` and the machine can make one (where it cannot, the run
    /// goes on without and says so), with its `cgroup.procs` open for placing the workers.
    pub fn optional_cpu_group(&self, wanted: bool) -> Result<(Option<CpuGroup>, Option<std::fs::File>), LiveError> {
        if !wanted {
            return Ok((None, None));
        }
        let g = match self.cpu_group() {
            Ok(g) => g,
            Err(LiveError::Unsupported(e)) => {
                self.progress(format!("hostsim live: running without a CPU cgroup: {e}"));
                return Ok((None, None));
            }
            Err(e) => return Err(e),
        };
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(g.procs_file())
            .map_err(|e| failed(format!("{}: {e}", g.procs_file().display())))?;
        Ok((Some(g), Some(procs)))
    }

    /// Create the run's CPU cgroup of the largest weight (see `cgroup.rs`); Err(why) where no
    /// cpu controller is available (the caller decides whether to go on without one).
    pub fn cpu_group(&self) -> Result<CpuGroup, LiveError> {
        let (path, file, value) = crate::cgroup::place(&self.name).map_err(LiveError::Unsupported)?;
        self.record(Entry::Cgroup { path: path.clone() })?;
        std::fs::create_dir(&path).map_err(|e| failed(format!("{}: {e}", path.display())))?;
        std::fs::write(path.join(file), value).map_err(|e| failed(format!("{}: {e}", path.join(file).display())))?;
        Ok(CpuGroup { path })
    }

    /// Create CPU group `<parent>/<role>` (a group of the run's group: tabata-speed's `cfs`
    /// variant gives its sender a quota of its own), recorded before creation and removed at
    /// the end, before its parent.
    pub fn cpu_child(&self, parent: &CpuGroup, role: &str) -> Result<CpuGroup, LiveError> {
        let path = parent.path().join(role);
        self.record(Entry::Cgroup { path: path.clone() })?;
        std::fs::create_dir(&path).map_err(|e| failed(format!("{}: {e}", path.display())))?;
        Ok(CpuGroup { path })
    }

    /// Record an XDP program attached to `dev` in `ns` through bpf_link `link_id`. Recorded
    /// after attaching (the ids exist only then): a bpf_link cannot outlive its last descriptor,
    /// so a run killed in between leaves nothing attached.
    pub fn record_xdp(
        &self,
        ns: Option<&Netns>,
        dev: &str,
        prog_id: u32,
        link_id: Option<u32>,
    ) -> Result<(), LiveError> {
        self.record(Entry::Xdp { ns: ns.map(|n| n.name.clone()), dev: dev.to_string(), prog_id, link_id })
    }

    /// Record a tc program attached at `dev`'s tcx ingress in `ns` through bpf_link `link_id`
    /// (recorded after attaching, as [`LiveRun::record_xdp`]).
    pub fn record_tcx(&self, ns: Option<&Netns>, dev: &str, prog_id: u32, link_id: u32) -> Result<(), LiveError> {
        self.record(Entry::Tcx { ns: ns.map(|n| n.name.clone()), dev: dev.to_string(), prog_id, link_id })
    }

    /// Create cgroup v2 group `<run>-<role>` under the cgroup2 mount (`/sys/fs/cgroup`, or
    /// `/sys/fs/cgroup/unified` on a hybrid hierarchy); `Unsupported` where there is none.
    pub fn v2_group(&self, role: &str, why: &str) -> Result<PathBuf, LiveError> {
        self.v2_group_as(role, why, false)
    }

    /// [`LiveRun::v2_group`] for processes the run does not start (a user's servers): undoing
    /// moves those still in it to the group above before removing it (`Entry::ServerGroup`).
    pub fn server_group(&self, role: &str, why: &str) -> Result<PathBuf, LiveError> {
        self.v2_group_as(role, why, true)
    }

    fn v2_group_as(&self, role: &str, why: &str, servers: bool) -> Result<PathBuf, LiveError> {
        let root = crate::cgroup::v2_root()
            .ok_or_else(|| LiveError::Unsupported(format!("no cgroup v2 hierarchy is mounted ({why})")))?;
        let path = root.join(format!("{}-{role}", self.name));
        self.record(if servers {
            Entry::ServerGroup { path: path.clone() }
        } else {
            Entry::Cgroup { path: path.clone() }
        })?;
        std::fs::create_dir(&path).map_err(|e| failed(format!("{}: {e}", path.display())))?;
        Ok(path)
    }

    /// Create cgroup v2 group `<run>-<role>` (for its `cgroup.freeze`: tabata-speed's
    /// regulator); `Unsupported` where no cgroup v2 hierarchy is mounted.
    pub fn freeze_group(&self, role: &str) -> Result<PathBuf, LiveError> {
        let path = self.v2_group(role, "for cgroup.freeze")?;
        if !path.join("cgroup.freeze").exists() {
            return Err(LiveError::Unsupported(format!(
                "{}: no cgroup.freeze (cgroup v2 freezer: Linux 5.2+)",
                path.display()
            )));
        }
        Ok(path)
    }

    /// Record a BPF program attached through bpf_link `link_id` to `what` (a cgroup's hooks, a
    /// tracepoint); recorded after attaching, as [`LiveRun::record_xdp`].
    pub fn record_link(&self, what: &str, prog_id: u32, link_id: u32) -> Result<(), LiveError> {
        self.record(Entry::Link { what: what.to_string(), prog_id, link_id })
    }

    /// Set thread `tid`'s scheduling policy (a thread the run did not start, such as a
    /// threaded-NAPI kthread), recording the one it had for clean-up.
    pub fn set_sched(&self, tid: u32, policy: i32, prio: i32) -> Result<(), LiveError> {
        let (p0, r0) = crate::sys::sched_of(tid as libc::pid_t).map_err(|e| failed(format!("tid {tid}: {e}")))?;
        let start_time = crate::sys::start_time(tid).ok_or_else(|| failed(format!("tid {tid}: no such thread")))?;
        self.record(Entry::Sched { pid: tid, start_time, policy: p0, prio: r0 })?;
        crate::sys::set_sched(tid as libc::pid_t, policy, prio).map_err(|e| failed(format!("tid {tid}: {e}")))
    }

    /// Pin a process the run did not start to `cpus`, recording its affinity for clean-up.
    /// (The run's own workers are placed at spawn, `worker::Placement`, and die with it.)
    pub fn set_affinity(&self, pid: u32, cpus: &[usize]) -> Result<(), LiveError> {
        let old = crate::sys::affinity(pid as libc::pid_t).map_err(|e| failed(format!("pid {pid}: {e}")))?;
        let start_time = crate::sys::start_time(pid).ok_or_else(|| failed(format!("pid {pid}: no such process")))?;
        self.record(Entry::Affinity { pid, start_time, cpus: old })?;
        crate::sys::set_affinity(pid as libc::pid_t, cpus).map_err(|e| failed(format!("pid {pid}: {e}")))
    }

    /// `Err(Interrupted)` once a stop signal has arrived.
    pub fn check(&self) -> Result<(), LiveError> {
        Ok(signals::check()?)
    }

    /// Sleep, returning early with `Interrupted` on a stop signal.
    pub fn sleep(&self, d: Duration) -> Result<(), LiveError> {
        Ok(signals::sleep(d)?)
    }

    /// Print a progress line (see [`progress`]).
    pub fn progress(&self, line: impl std::fmt::Display) {
        progress(line)
    }

    /// The points written so far.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Add a measured point: `results.csv` is rewritten with it (atomically) and run.json
    /// counts it. An error names the file; the file keeps the points before this one.
    pub fn push(&mut self, p: Point) -> Result<(), LiveError> {
        self.points.push(p);
        let csv = results_csv(&self.points);
        if let Err(e) = write_atomic(self.out(), "results.csv", csv.as_bytes()) {
            self.points.pop();
            return Err(failed(format!("{e} ({} point(s) measured before this one are in it)", self.points.len())));
        }
        self.write_run_json("running", None)
    }

    fn write_run_json(&self, status: &str, left: Option<&[String]>) -> Result<(), LiveError> {
        let Some(out) = &self.out else { return Ok(()) };
        let mut j = self.info.clone();
        j.insert("status".into(), status.into());
        j.insert("points_done".into(), self.points.len().into());
        j.insert("wall_s".into(), self.t0.elapsed().as_secs_f64().into());
        if let Some(l) = left {
            j.insert("left_behind".into(), l.into());
        }
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(j)).expect("serialises") + "\n";
        write_atomic(out, "run.json", text.as_bytes()).map_err(LiveError::Failed)
    }

    /// Undo everything the ledger holds; the descriptions of what could not be undone.
    fn undo(&mut self) -> Vec<String> {
        self.finished = true;
        let mut left = Vec::new();
        for (e, r) in self.ledger.undo_all() {
            if let Err(m) = r {
                left.push(format!("{e}: {m}"));
            } else if r == Ok(Undone::Removed) && matches!(e, Entry::Xdp { .. } | Entry::Tcx { .. }) {
                // Something still held the link: worth a line.
                progress(format!("hostsim live: clean-up: {} {e}", e.undo_verb()));
            }
        }
        left
    }

    /// End the run with the experiment's `outcome`: undo everything, write run.json's final
    /// status (`complete`, `interrupted (SIGTERM)`, `failed: …`), and return the outcome, or an
    /// error listing what could not be removed (the ledger keeps it for `hostsim live clean`).
    /// Drop the experiment's own objects (agent, workers) before calling this.
    pub fn finish(mut self, outcome: Result<(), LiveError>) -> Result<(), LiveError> {
        // A signal that arrived while a command failed is the reason it failed.
        let outcome = match (outcome, signals::stop_signal()) {
            (Err(LiveError::Failed(_)), Some(s)) => Err(LiveError::Interrupted(Interrupted(s))),
            (o, _) => o,
        };
        let left = self.undo();
        let status = match &outcome {
            Ok(()) => "complete".to_string(),
            Err(LiveError::Interrupted(i)) => format!("interrupted ({})", i.name()),
            Err(e) => format!("failed: {e}"),
        };
        let wrote = self.write_run_json(&status, (!left.is_empty()).then_some(left.as_slice()));
        if !left.is_empty() {
            let mut msg = format!(
                "{}; clean-up could not remove:",
                outcome.err().map_or("the run completed".to_string(), |e| e.to_string())
            );
            for l in &left {
                msg += &format!("\n  {l}");
            }
            msg += "\n(the ledger keeps them: `hostsim live clean` tries again)";
            return Err(failed(msg));
        }
        outcome?;
        wrote
    }
}

impl Drop for LiveRun {
    /// Reached without [`LiveRun::finish`] on a panic or an early return: undo all the same.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let left = self.undo();
        for l in &left {
            progress(format!("hostsim live: clean-up: could not remove {l}"));
        }
        let _ = self.write_run_json("aborted", (!left.is_empty()).then_some(left.as_slice()));
    }
}

/// results.csv of `points`: their key columns (in the first point's order), then every metric
/// (sorted by name); a non-finite value is an empty field.
pub fn results_csv(points: &[Point]) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for p in points {
        for (k, _) in &p.keys {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let metrics: std::collections::BTreeSet<&str> =
        points.iter().flat_map(|p| p.metrics.keys().map(String::as_str)).collect();
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    w.write_record(keys.iter().copied().chain(metrics.iter().copied())).expect("writing to memory");
    for p in points {
        let mut rec: Vec<String> = keys
            .iter()
            .map(|k| p.keys.iter().find(|(pk, _)| pk == k).map_or(String::new(), |(_, v)| v.clone()))
            .collect();
        for m in &metrics {
            rec.push(p.metrics.get(*m).filter(|v| v.is_finite()).map_or(String::new(), |v| v.to_string()));
        }
        w.write_record(&rec).expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("UTF-8 fields")
}

/// `hostsim live clean`: undo the ledgers of runs that are gone. Lines to print, and whether
/// everything could be removed.
pub fn clean() -> Result<(Vec<String>, bool), LiveError> {
    if !crate::sys::is_root() {
        return Err(LiveError::Unsupported(
            "needs root (the runs' namespaces, cgroups and ledgers are root's): run it with sudo".into(),
        ));
    }
    let rep = crate::ledger::clean_dead();
    let mut lines: Vec<String> = rep.removed.clone();
    for f in &rep.failed {
        lines.push(format!("could not remove {f}"));
    }
    // Namespaces and groups named like ours with no ledger (an older hostsim made them, or
    // someone else): reported, never touched.
    let recorded: Vec<String> = crate::ledger::list()
        .iter()
        .filter_map(|p| crate::ledger::read(p).ok())
        .flat_map(|(_, es)| es)
        .filter_map(|e| match e {
            Entry::Netns { name } => Some(name),
            Entry::Cgroup { path } | Entry::ServerGroup { path } => Some(path.display().to_string()),
            _ => None,
        })
        .collect();
    let strays: Vec<String> = crate::netns::list_netns()
        .into_iter()
        .filter(|n| n.starts_with(crate::netns::PREFIX))
        .chain(crate::cgroup::list().into_iter().map(|p| p.display().to_string()))
        .filter(|n| !recorded.contains(n))
        .collect();
    for s in &strays {
        lines.push(format!(
            "not touched: {s} (no ledger of a live run records it: left by an older hostsim, or not ours)"
        ));
    }
    lines.push(format!(
        "{} run(s) cleaned: {} item(s) undone, {} could not be",
        rep.runs.len(),
        rep.removed.len(),
        rep.failed.len()
    ));
    Ok((lines, rep.failed.is_empty()))
}
