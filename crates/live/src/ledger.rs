//! The ledger: what a live run has created on this machine, written down *before* each thing is
//! created, so that clean-up (at the run's end, after an interruption, or by `hostsim live clean`
//! after a SIGKILL) touches exactly what that run made and nothing else.
//!
//! One file per run, `/run/hostsim-live/<run>.jsonl`: a header line (run name, pid, the pid's
//! start time) and one JSON line per [`Entry`]. The run holds an exclusive `flock` on it for its
//! whole life; the kernel drops the lock when the process dies, however it dies. So a ledger
//! that can be locked belongs to a run that is gone, and only then may anyone else undo it
//! ([`clean_dead`]); pids, which the kernel reuses, decide nothing.
//!
//! Undoing an entry whose object no longer exists (deleted with its namespace, or never created
//! because the run died between writing the entry and creating it) is success. Entries that
//! cannot be undone stay in the ledger, so that a later `hostsim live clean` tries again, and
//! are reported.

use crate::netns::ip;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where ledgers live (a root-only directory: only root can run live experiments).
pub const DIR: &str = "/run/hostsim-live";

/// One thing a run created or changed, and enough to undo it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A network namespace (`ip netns add NAME`). Deleting it removes its veth ends (and their
    /// peers), the RPS masks set on them and the XDP programs attached to them.
    Netns { name: String },
    /// A veth pair, by one of its ends (`dev` in namespace `ns`, or the root namespace).
    Veth { ns: Option<String>, dev: String },
    /// A cgroup directory.
    Cgroup { path: PathBuf },
    /// A cgroup2 group made for processes the run did not start (`hostsim live pbq`: the
    /// servers a user puts there, to be seen by the bind hooks). Undoing moves the processes
    /// still in it to the group above (they go on running) and removes it.
    ServerGroup { path: PathBuf },
    /// An XDP program attached to `dev` in `ns` through bpf_link `link_id`. A bpf_link dies
    /// with the last descriptor on it (the run's), so after any exit this checks that the link
    /// and the program are gone, detaching the link if something still holds it.
    Xdp { ns: Option<String>, dev: String, prog_id: u32, link_id: Option<u32> },
    /// A tc program attached at `dev`'s tcx ingress in `ns` through bpf_link `link_id`
    /// (tabata-speed's arrival recorder); undone like [`Entry::Xdp`].
    Tcx { ns: Option<String>, dev: String, prog_id: u32, link_id: u32 },
    /// A value written to a file (an RPS mask, a sysctl, an IRQ's affinity) in `ns` (None: the
    /// root namespace), and the value it had, which undoing writes back.
    File { ns: Option<String>, path: String, old: String },
    /// The CPU affinity of a process the run did not start: restored if that same process
    /// (pid and start time) still exists.
    Affinity { pid: u32, start_time: u64, cpus: Vec<usize> },
    /// A BPF program attached through bpf_link `link_id` to something other than a device (a
    /// cgroup's bind/close hooks, a tracepoint), described by `what`. Like [`Entry::Xdp`], the
    /// link dies with the run's last descriptor; undoing checks it is gone (detaching it if not).
    Link { what: String, prog_id: u32, link_id: u32 },
    /// The scheduling policy and real-time priority of a thread the run did not start (a
    /// threaded-NAPI kthread): restored if that same thread (tid and start time) still exists.
    Sched { pid: u32, start_time: u64, policy: i32, prio: i32 },
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = |n: &Option<String>| n.as_ref().map_or(String::new(), |n| format!(" in namespace {n}"));
        match self {
            Entry::Netns { name } => write!(f, "namespace {name}"),
            Entry::Veth { ns: n, dev } => write!(f, "veth {dev}{}", ns(n)),
            Entry::Cgroup { path } | Entry::ServerGroup { path } => write!(f, "cgroup {}", path.display()),
            Entry::Xdp { ns: n, dev, prog_id, link_id } => {
                write!(f, "XDP program id {prog_id} on {dev}{}", ns(n))?;
                link_id.map_or(Ok(()), |l| write!(f, " (bpf_link id {l})"))
            }
            Entry::Tcx { ns: n, dev, prog_id, link_id } => {
                write!(f, "tc program id {prog_id} at tcx ingress of {dev}{} (bpf_link id {link_id})", ns(n))
            }
            Entry::File { ns: n, path, old } => write!(f, "{path}{} (value {old:?})", ns(n)),
            Entry::Affinity { pid, cpus, .. } => write!(f, "CPU affinity of pid {pid} (CPUs {cpus:?})"),
            Entry::Link { what, prog_id, link_id } => {
                write!(f, "BPF program id {prog_id} on {what} (bpf_link id {link_id})")
            }
            Entry::Sched { pid, policy, prio, .. } => {
                write!(f, "scheduling policy of pid {pid} (policy {policy}, priority {prio})")
            }
        }
    }
}

impl Entry {
    /// What undoing it does, for reports: `removed`, `restored`, `detached`.
    pub fn undo_verb(&self) -> &'static str {
        match self {
            Entry::File { .. } | Entry::Affinity { .. } | Entry::Sched { .. } => "restored",
            Entry::Xdp { .. } | Entry::Tcx { .. } | Entry::Link { .. } => "detached",
            _ => "removed",
        }
    }
}

/// The ledger's first line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    pub run: String,
    pub pid: u32,
    pub start_time: u64,
}

/// What undoing an entry did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undone {
    Removed,
    /// It did not exist any more (or never did).
    AlreadyGone,
}

/// A run's open, locked ledger.
pub struct Ledger {
    path: PathBuf,
    header: Header,
    state: Mutex<(File, Vec<Entry>)>,
}

fn lock(f: &File, block: bool) -> io::Result<bool> {
    let op = libc::LOCK_EX | if block { 0 } else { libc::LOCK_NB };
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(e)
}

fn ensure_dir() -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new().mode(0o700).create(DIR) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), format!("{DIR}: {e}"))),
    }
}

/// The ledger file of run `run`.
pub fn path_of(run: &str) -> PathBuf {
    Path::new(DIR).join(format!("{run}.jsonl"))
}

impl Ledger {
    /// Create and lock the ledger of run `run` (of this process). It appears under its final
    /// name only once locked, so no cleaner can take a live run's ledger for a dead one's.
    pub fn create(run: &str) -> io::Result<Ledger> {
        ensure_dir()?;
        let path = path_of(run);
        let tmp = Path::new(DIR).join(format!(".{run}.{}.tmp", std::process::id()));
        let named = |e: io::Error, p: &Path| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
        let mut file =
            OpenOptions::new().read(true).write(true).create_new(true).open(&tmp).map_err(|e| named(e, &tmp))?;
        let pid = std::process::id();
        let header = Header { run: run.to_string(), pid, start_time: crate::sys::start_time(pid).unwrap_or(0) };
        let res = lock(&file, true)
            .and_then(|_| writeln!(file, "{}", serde_json::to_string(&header).expect("serialises")))
            .and_then(|()| file.sync_data())
            .and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = res {
            let _ = fs::remove_file(&tmp);
            return Err(named(e, &path));
        }
        Ok(Ledger { path, header, state: Mutex::new((file, Vec::new())) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn run(&self) -> &str {
        &self.header.run
    }

    /// Write `e` down (synced) before the caller creates what it describes.
    pub fn record(&self, e: Entry) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let line = serde_json::to_string(&e).expect("serialises");
        let (file, entries) = &mut *st;
        file.seek(io::SeekFrom::End(0))?;
        writeln!(file, "{line}")
            .and_then(|()| file.sync_data())
            .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", self.path.display())))?;
        entries.push(e);
        Ok(())
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }

    /// Undo every entry, last first. With everything undone the ledger is deleted; otherwise it
    /// keeps what could not be undone (for `hostsim live clean`) and the failures are returned.
    pub fn undo_all(&self) -> Vec<(Entry, Result<Undone, String>)> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (file, entries) = &mut *st;
        let done = undo_entries(entries);
        let left: Vec<Entry> = done.iter().filter(|(_, r)| r.is_err()).map(|(e, _)| e.clone()).rev().collect();
        if left.is_empty() {
            let _ = fs::remove_file(&self.path);
        } else {
            let _ = rewrite(file, &self.header, &left);
        }
        *entries = left;
        done
    }
}

fn rewrite(file: &mut File, header: &Header, entries: &[Entry]) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(io::SeekFrom::Start(0))?;
    let mut text = serde_json::to_string(header).expect("serialises") + "\n";
    for e in entries {
        text += &(serde_json::to_string(e).expect("serialises") + "\n");
    }
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

fn undo_entries(entries: &[Entry]) -> Vec<(Entry, Result<Undone, String>)> {
    entries.iter().rev().map(|e| (e.clone(), undo(e))).collect()
}

/// Read a ledger: its header and entries.
pub fn read(path: &Path) -> io::Result<(Header, Vec<Entry>)> {
    parse(BufReader::new(File::open(path)?))
        .map_err(|m| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {m}", path.display())))
}

fn parse(r: impl BufRead) -> Result<(Header, Vec<Entry>), String> {
    let mut lines = r.lines();
    let first = lines.next().ok_or("empty")?.map_err(|e| e.to_string())?;
    let header: Header = serde_json::from_str(&first).map_err(|e| format!("line 1: {e}"))?;
    let mut entries = Vec::new();
    for (i, l) in lines.enumerate() {
        let l = l.map_err(|e| e.to_string())?;
        if l.trim().is_empty() {
            continue;
        }
        // A line cut short by a crash while it was written describes nothing created yet.
        match serde_json::from_str(&l) {
            Ok(e) => entries.push(e),
            Err(e) if e.is_eof() => break,
            Err(e) => return Err(format!("line {}: {e}", i + 2)),
        }
    }
    Ok((header, entries))
}

/// The ledgers present (runs alive or dead).
pub fn list() -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(DIR) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    v.sort();
    v
}

/// What [`clean_dead`] did.
#[derive(Debug, Default)]
pub struct CleanReport {
    /// Runs whose ledgers were found dead.
    pub runs: Vec<String>,
    pub removed: Vec<String>,
    /// What could not be undone (the ledger keeps it), with the reason.
    pub failed: Vec<String>,
}

/// How long [`clean_dead`] waits for the lock of a run whose process is gone.
pub const DEAD_RUN_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The ledger's lock is held: take it if its run's process is gone, waiting up to `wait`.
///
/// A run's lock outlives its process by a few milliseconds: the lock goes with the last
/// reference to the ledger's open file, which the kernel may drop after the process has been
/// reaped (a child of the run between fork and exec holds the run's files until its exec or its
/// death by PR_SET_PDEATHSIG; a last `fput` in a context that cannot run it at once is deferred
/// to a work queue). Measured here: 21-23 ms after a SIGKILLed run was reaped, on a machine
/// busy with builds; a `hostsim live clean` at that moment took the run for alive and left its
/// namespaces (`live::sigkill_leftovers_are_removed_by_live_clean` failed 10 times in 20).
/// Whether the process is gone is read from the ledger's header (pid and start time, so a
/// reused pid is not taken for the run). Ok(false): the run's process lives.
fn lock_of_dead_run(file: &File, wait: Duration) -> Result<bool, String> {
    let parsed = parse(BufReader::new(file));
    // The caller reads the ledger again once it holds the lock.
    (&*file).seek(io::SeekFrom::Start(0)).map_err(|e| format!("seek: {e}"))?;
    let header = match parsed {
        Ok((h, _)) => h,
        // Being written by its living run (a header not yet complete): leave it.
        Err(_) => return Ok(false),
    };
    if crate::sys::start_time(header.pid) == Some(header.start_time) {
        return Ok(false);
    }
    let end = Instant::now() + wait;
    loop {
        match lock(file, false) {
            Ok(true) => return Ok(true),
            Ok(false) if Instant::now() < end => std::thread::sleep(Duration::from_millis(1)),
            Ok(false) => {
                return Err(format!(
                "run {} (pid {}) is gone, but its ledger was still locked after {:?}: run `hostsim live clean` again",
                header.run, header.pid, wait
            ))
            }
            Err(e) => return Err(format!("flock: {e}")),
        }
    }
}

/// Undo the ledgers of runs that are gone (killed with SIGKILL, or whose clean-up failed):
/// every ledger this process can lock. Ledgers of running runs are left alone.
pub fn clean_dead() -> CleanReport {
    let mut rep = CleanReport::default();
    for path in list() {
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // finished meanwhile
            Err(e) => {
                rep.failed.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        match lock(&file, false) {
            Ok(true) => {}
            // Its run is alive, or it has just died and the kernel has not yet dropped the lock.
            Ok(false) => match lock_of_dead_run(&file, DEAD_RUN_LOCK_WAIT) {
                Ok(true) => {}
                Ok(false) => continue, // alive
                Err(m) => {
                    rep.failed.push(format!("{}: {m}", path.display()));
                    continue;
                }
            },
            Err(e) => {
                rep.failed.push(format!("{}: flock: {e}", path.display()));
                continue;
            }
        }
        // Locked: the run is gone. It may have deleted the file just before we opened it.
        if !path.exists() {
            continue;
        }
        let mut file = file;
        let (header, entries) = match parse(BufReader::new(&file)) {
            Ok(x) => x,
            Err(m) => {
                rep.failed.push(format!("{}: cannot read the ledger ({m}); nothing of it was touched", path.display()));
                continue;
            }
        };
        rep.runs.push(header.run.clone());
        let done = undo_entries(&entries);
        let mut left = Vec::new();
        for (e, r) in done {
            match r {
                Ok(Undone::Removed) => rep.removed.push(format!("{} {e} (run {})", e.undo_verb(), header.run)),
                Ok(Undone::AlreadyGone) => {}
                Err(m) => {
                    rep.failed.push(format!("{e} (run {}): {m}", header.run));
                    left.push(e);
                }
            }
        }
        if left.is_empty() {
            let _ = fs::remove_file(&path);
        } else {
            left.reverse();
            if let Err(e) = rewrite(&mut file, &header, &left) {
                rep.failed.push(format!("{}: rewriting: {e}", path.display()));
            }
        }
    }
    rep
}

/// Does namespace `name` exist?
pub fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Run `ip` in namespace `ns` (or the root namespace).
fn ip_in(ns: &Option<String>, args: &[&str]) -> Result<(), String> {
    let mut a: Vec<&str> = Vec::new();
    if let Some(n) = ns {
        a.extend(["-n", n.as_str()]);
    }
    a.extend_from_slice(args);
    ip(&a)
}

fn link_exists(ns: &Option<String>, dev: &str) -> bool {
    ns.as_ref().is_none_or(|n| netns_exists(n)) && ip_in(ns, &["link", "show", "dev", dev]).is_ok()
}

/// Undo one entry.
pub fn undo(e: &Entry) -> Result<Undone, String> {
    match e {
        Entry::Netns { name } => {
            if !netns_exists(name) {
                return Ok(Undone::AlreadyGone);
            }
            ip(&["netns", "del", name])?;
            Ok(Undone::Removed)
        }
        Entry::Veth { ns, dev } => {
            if !link_exists(ns, dev) {
                return Ok(Undone::AlreadyGone);
            }
            ip_in(ns, &["link", "del", "dev", dev])?;
            Ok(Undone::Removed)
        }
        Entry::Cgroup { path } => remove_cgroup(path),
        Entry::ServerGroup { path } => {
            empty_group(path);
            remove_cgroup(path)
        }
        Entry::Xdp { prog_id, link_id, .. } => undo_xdp(*prog_id, *link_id),
        Entry::Tcx { prog_id, link_id, .. } => undo_xdp(*prog_id, Some(*link_id)),
        Entry::File { ns, path, old } => {
            if ns.as_ref().is_some_and(|n| !netns_exists(n)) {
                return Ok(Undone::AlreadyGone);
            }
            match crate::netns::read_in(ns.as_deref(), path) {
                Err(_) => Ok(Undone::AlreadyGone), // the device (or knob) went away
                Ok(now) if now.trim() == old.trim() => Ok(Undone::AlreadyGone),
                Ok(_) => crate::netns::write_in(ns.as_deref(), path, old).map(|()| Undone::Removed),
            }
        }
        Entry::Affinity { pid, start_time, cpus } => {
            if crate::sys::start_time(*pid) != Some(*start_time) {
                return Ok(Undone::AlreadyGone);
            }
            crate::sys::set_affinity(*pid as libc::pid_t, cpus).map_err(|e| format!("pid {pid}: {e}"))?;
            Ok(Undone::Removed)
        }
        Entry::Link { prog_id, link_id, .. } => undo_xdp(*prog_id, Some(*link_id)),
        Entry::Sched { pid, start_time, policy, prio } => {
            if crate::sys::start_time(*pid) != Some(*start_time) {
                return Ok(Undone::AlreadyGone);
            }
            if crate::sys::sched_of(*pid as libc::pid_t).ok() == Some((*policy, *prio)) {
                return Ok(Undone::AlreadyGone);
            }
            crate::sys::set_sched(*pid as libc::pid_t, *policy, *prio).map_err(|e| format!("pid {pid}: {e}"))?;
            Ok(Undone::Removed)
        }
    }
}

/// Move every process in cgroup2 group `path` to the group above it.
pub fn empty_group(path: &Path) {
    let Some(parent) = path.parent() else { return };
    let procs = fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
    for pid in procs.split_whitespace() {
        let _ = fs::write(parent.join("cgroup.procs"), pid);
    }
}

/// Remove a cgroup once its processes have left: an exiting thread may take a moment to leave
/// (on a loaded machine that once exceeded 1 s), so wait up to 5 s. A cgroup v2 group a
/// regulator froze (tabata-speed) is thawed first, so that a process still in it can run to
/// its exit (a frozen task does die of SIGKILL, but a thawed one also of the SIGTERM it got).
fn remove_cgroup(path: &Path) -> Result<Undone, String> {
    if !path.exists() {
        return Ok(Undone::AlreadyGone);
    }
    let freeze = path.join("cgroup.freeze");
    if fs::read_to_string(&freeze).is_ok_and(|v| v.trim() == "1") {
        let _ = fs::write(&freeze, "0");
    }
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(Undone::Removed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Undone::AlreadyGone),
            Err(e) if Instant::now() >= end => {
                let procs = fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
                let pids: Vec<&str> = procs.split_whitespace().collect();
                let held = if pids.is_empty() {
                    String::new()
                } else {
                    format!(" (processes still in it: {})", pids.join(" "))
                };
                return Err(format!("{e}{held}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn owned(fd: i32) -> Option<OwnedFd> {
    // SAFETY: a descriptor just returned by the kernel, owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Detach bpf_link `link_id` if it still exists and attaches `prog_id`, then wait (≤ 2 s: a
/// program is freed after an RCU grace period) until program `prog_id` is gone.
fn undo_xdp(prog_id: u32, link_id: Option<u32>) -> Result<Undone, String> {
    use libbpf_rs::libbpf_sys;
    let mut removed = false;
    if let Some(l) = link_id {
        // SAFETY: plain BPF syscall wrappers.
        if let Some(fd) = owned(unsafe { libbpf_sys::bpf_link_get_fd_by_id(l) }) {
            let ours = libbpf_rs::query::LinkInfo::from_fd(fd.as_fd()).is_ok_and(|i| i.prog_id == prog_id);
            // SAFETY: detaching a link we hold a descriptor on.
            if ours && unsafe { libbpf_sys::bpf_link_detach(fd.as_raw_fd()) } < 0 {
                return Err(format!("detaching bpf_link {l}: {}", io::Error::last_os_error()));
            }
            removed = ours;
        }
    }
    let end = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: plain BPF syscall wrapper.
        let Some(_fd) = owned(unsafe { libbpf_sys::bpf_prog_get_fd_by_id(prog_id) }) else {
            return Ok(if removed { Undone::Removed } else { Undone::AlreadyGone });
        };
        if Instant::now() >= end {
            return Err(format!("program id {prog_id} is still loaded: a process other than the run holds it"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
