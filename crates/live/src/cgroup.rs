//! A CPU cgroup for a live run's processes, so that other work on a shared machine (compilers,
//! other test suites) takes little of the two CPUs while a point is measured.
//!
//! The group `hsl-<pid>-<n>` gets the largest CPU weight the kernel allows (cgroup v1
//! `cpu.shares` = 262144, or v2 `cpu.weight` = 10000, against 1024 / 100 for everything else),
//! and every worker and the agent thread join it. Inside it nice values work as usual (the
//! scheduler is hierarchical), so bw at nice −19 against the flood sinks at nice 19 is the same
//! experiment. Softirq work is not charged to any group; it runs where it is raised, as before.
//! Where no cpu controller is available the run goes on without a group and says so.
//! The run's ledger removes the group (`ledger.rs`), also after a SIGKILL (`hostsim live clean`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where a cpu controller is mounted, and the weight file and value to use there.
fn controllers() -> Vec<(PathBuf, &'static str, &'static str)> {
    let mut v = Vec::new();
    // cgroup v1: a `cpu` hierarchy.
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    if v1.join("cpu.shares").exists() {
        v.push((v1.to_path_buf(), "cpu.shares", "262144"));
    }
    // cgroup v2 with the cpu controller enabled for children (not enabled by us: that would
    // change the machine's configuration).
    for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let r = Path::new(root);
        let sub = fs::read_to_string(r.join("cgroup.subtree_control")).unwrap_or_default();
        if sub.split_whitespace().any(|c| c == "cpu") {
            v.push((r.to_path_buf(), "cpu.weight", "10000"));
        }
    }
    v
}

/// A CPU group of the run (created by `LiveRun::cpu_group` (`harness.rs`), which records it
/// in the run's ledger; the ledger removes it, so this handle has no `Drop`).
pub struct CpuGroup {
    pub(crate) path: PathBuf,
}

/// Where group `name` goes (under the first available cpu controller), and the weight file and
/// value to write there; or why there is none.
pub(crate) fn place(name: &str) -> Result<(PathBuf, &'static str, &'static str), String> {
    let Some((root, file, value)) = controllers().into_iter().next() else {
        return Err("no cgroup cpu controller (v1 `cpu` hierarchy or v2 with +cpu) is available".into());
    };
    Ok((root.join(name), file, value))
}

impl CpuGroup {
    /// The file a process writes "0" to in order to join (v1 and v2 both accept it).
    pub fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// Move the calling thread in (v1 `tasks` takes a thread; v2 threads follow their process,
    /// so there it moves nothing and returns an error, which callers may ignore).
    pub fn join_thread(&self) -> io::Result<()> {
        fs::write(self.path.join("tasks"), "0")
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Groups named `hsl-...` under every cpu controller and under cgroup2's root (the live runs' groups,
/// alive or not).
pub fn list() -> Vec<PathBuf> {
    let mut out = Vec::new();
    // The cpu hierarchies, and cgroup2's root even without the cpu controller: the bind hooks'
    // server groups live there (`ozaki_pbq/hooks.rs`).
    let roots = controllers().into_iter().map(|(root, _, _)| root).chain(v2_root());
    for root in roots {
        if let Ok(rd) = fs::read_dir(&root) {
            for e in rd.flatten() {
                if e.file_name().to_str().is_some_and(|n| n.starts_with(crate::netns::PREFIX)) {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Where cgroup v2 is mounted (alone at /sys/fs/cgroup, or beside v1 at
/// /sys/fs/cgroup/unified), if it is.
pub fn v2_root() -> Option<PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|r| r.join("cgroup.controllers").exists())
}
