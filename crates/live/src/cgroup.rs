//! A CPU cgroup for a live run's processes, so that other work on a shared machine (compilers,
//! other test suites) takes little of the two CPUs while a point is measured.
//!
//! The group `hsl-<pid>-<n>` gets the largest CPU weight the kernel allows (cgroup v1
//! `cpu.shares` = 262144, or v2 `cpu.weight` = 10000, against 1024 / 100 for everything else),
//! and every worker and the agent thread join it. Inside it nice values work as usual (the
//! scheduler is hierarchical), so bw at nice −19 against the flood sinks at nice 19 is the same
//! experiment. Softirq work is not charged to any group; it runs where it is raised, as before.
//! Where no cpu controller is available the run goes on without a group and says so.
//! The group is removed on drop; groups of dead runs are removed by [`clean_stale`].

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

pub struct CpuGroup {
    path: PathBuf,
}

impl CpuGroup {
    /// Create group `name` under the first available cpu controller, or None (with the reason).
    pub fn create(name: &str) -> Result<CpuGroup, String> {
        let Some((root, file, value)) = controllers().into_iter().next() else {
            return Err("no cgroup cpu controller (v1 `cpu` hierarchy or v2 with +cpu) is available".into());
        };
        let path = root.join(name);
        fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let g = CpuGroup { path };
        fs::write(g.path.join(file), value).map_err(|e| format!("{}: {e}", g.path.join(file).display()))?;
        Ok(g)
    }

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

impl Drop for CpuGroup {
    fn drop(&mut self) {
        // Its processes have exited by now; an exiting thread may take a moment to leave (the
        // agent's thread is joined before its task leaves the group in do_exit(): on a loaded
        // machine that moment once exceeded 1 s, so wait up to 5 s).
        for _ in 0..250 {
            if fs::remove_dir(&self.path).is_ok() || !self.path.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("hostsim live: clean-up: could not remove {}", self.path.display());
    }
}

/// Groups named `hsl-<pid>-...` under every cpu controller.
pub fn list() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (root, _, _) in controllers() {
        if let Ok(rd) = fs::read_dir(&root) {
            for e in rd.flatten() {
                if e.file_name().to_str().is_some_and(|n| n.starts_with(crate::netns::PREFIX)) {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// Remove the groups of runs whose pid is gone (their processes are gone too: workers die with
/// the run).
pub fn clean_stale() -> Vec<String> {
    let mut gone = Vec::new();
    for p in list() {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let pid = name.strip_prefix(crate::netns::PREFIX).and_then(|r| r.split('-').next()).and_then(|x| x.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !crate::sys::pid_alive(pid) && fs::remove_dir(&p).is_ok() {
                gone.push(p.display().to_string());
            }
        }
    }
    gone
}
