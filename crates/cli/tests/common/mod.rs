//! What the live tests share: the binary, a skip notice, a scratch directory, starting a run
//! with the stop signals as a terminal gives them and waiting for its set-up, waiting for its
//! exit, whether something a run recorded in its ledger still exists, a run's ledger entries,
//! and its results.csv read back. Each test file uses a part of it.
#![allow(dead_code)]

use hostsim_live::ledger::{self, Entry};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The hostsim binary under test (`HOSTSIM_TEST_BIN` overrides the one cargo built).
pub fn hostsim() -> Command {
    Command::new(std::env::var_os("HOSTSIM_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_hostsim").into()))
}

/// Says on stderr why a live test does not run here.
pub fn skip(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED (live): {why}");
}

/// Are we root (the live tests' first condition)?
pub fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Did the run exit 2 because this machine cannot run it (the harness's `hostsim live: <why>`),
/// so that the test skips? An exit 2 that is a command-line error (clap's, also exit 2: a flag
/// the test got wrong) fails the test instead of passing as a skip.
pub fn cannot_run_here(code: Option<i32>, err: &str) -> bool {
    if code != Some(2) {
        return false;
    }
    assert!(
        !err.contains("For more information, try '--help'") && !err.starts_with("error:"),
        "exit 2 from a command-line error, not from this machine: {err}"
    );
    skip(&format!("this machine cannot run it (exit 2): {}", err.trim()));
    true
}

/// Set FS_IMMUTABLE_FL on a directory (or clear it): nothing can be created in it, not even by
/// root. False if the file system cannot.
pub fn set_immutable(dir: &Path, on: bool) -> bool {
    use std::os::fd::AsRawFd;
    const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
    const FS_IOC_SETFLAGS: libc::c_ulong = 0x4008_6602;
    const FS_IMMUTABLE_FL: libc::c_long = 0x10;
    let Ok(f) = std::fs::File::open(dir) else { return false };
    let mut flags: libc::c_long = 0;
    // SAFETY: the flag ioctls read and write one long.
    unsafe {
        if libc::ioctl(f.as_raw_fd(), FS_IOC_GETFLAGS, &mut flags) < 0 {
            return false;
        }
        flags = if on { flags | FS_IMMUTABLE_FL } else { flags & !FS_IMMUTABLE_FL };
        libc::ioctl(f.as_raw_fd(), FS_IOC_SETFLAGS, &flags) == 0
    }
}

/// Processes in the cgroups the run recorded that `which` selects, read while the run lives.
pub fn group_pids(entries: &[Entry], which: impl Fn(&Path) -> bool) -> Vec<u32> {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Cgroup { path } if which(path) => std::fs::read_to_string(path.join("cgroup.procs")).ok(),
            _ => None,
        })
        .flat_map(|t| t.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// An empty scratch path for this test process: `hostsim-live-TAG-PID-NAME` in the temp dir.
pub fn tmp(tag: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hostsim-live-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Starts `hostsim live EXPERIMENT --out OUT ARGS...` and waits until `ready` holds for its
/// ledger entries (its set-up is done), at most `within`; returns the child and those entries.
/// stderr is `piped` (read into the panic message if the run ends early) or inherited. The stop
/// signals are set to their defaults in the child, as a terminal gives them: a test run in the
/// background (`cmd &` in a script, as CI's) inherits SIGINT ignored, and the run keeps an
/// ignored signal ignored, as it keeps SIGHUP under nohup. The child is returned to the caller,
/// who waits for it; on a failure here it is killed and waited for.
#[allow(clippy::zombie_processes)]
pub fn start_live(
    experiment: &str,
    out: &Path,
    args: &[&str],
    piped_stderr: bool,
    within: Duration,
    ready: impl Fn(&[Entry]) -> bool,
) -> (Child, Vec<Entry>) {
    let mut cmd = hostsim();
    cmd.args(["live", experiment, "--out", out.to_str().unwrap()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd.stderr(Stdio::piped());
    // SAFETY: signal() between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start hostsim live");
    capture_stderr(&mut child, !piped_stderr);
    let end = Instant::now() + within;
    loop {
        let e = entries_of(child.id());
        if ready(&e) {
            return (child, e);
        }
        if let Ok(Some(s)) = child.try_wait() {
            panic!("the run ended before its set-up was complete: {s}\n{}", stderr_of(&mut child));
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no set-up in the ledger after {} s: {e:?}", within.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the run to end, at most `secs`; kills it and fails after that.
pub fn wait_exit(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("the run did not end within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs' stderr as read so far, by pid (`start_live` reads it in a thread, so a long run never
/// blocks on a full pipe).
/// A run's stderr read so far, and the thread reading it (joined once the run has ended).
type Captured = (std::sync::Arc<std::sync::Mutex<String>>, Option<std::thread::JoinHandle<()>>);
static STDERR: std::sync::Mutex<BTreeMap<u32, Captured>> = std::sync::Mutex::new(BTreeMap::new());

/// Read the child's stderr in a thread, into a buffer `stderr_of` returns; `echo`: also onto the
/// test's own stderr, as the line comes (what an inherited stderr showed).
fn capture_stderr(child: &mut Child, echo: bool) {
    let Some(mut e) = child.stderr.take() else { return };
    let buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let b = std::sync::Arc::clone(&buf);
    let t = std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut e, &mut chunk) {
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&chunk[..n]);
            if echo {
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            b.lock().unwrap().push_str(&text);
        }
    });
    STDERR.lock().unwrap().insert(child.id(), (buf, Some(t)));
}

/// What the run wrote on its stderr (all of it once the run has ended).
pub fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(e) = child.stderr.as_mut() {
        let _ = std::io::Read::read_to_string(e, &mut err);
        return err;
    }
    let ended = child.try_wait().ok().flatten().is_some();
    // Once the run has ended its stderr reaches EOF: join the reader so that nothing is missed.
    let entry =
        STDERR.lock().unwrap().get_mut(&child.id()).map(|(b, t)| (b.clone(), if ended { t.take() } else { None }));
    let Some((buf, reader)) = entry else { return err };
    if let Some(t) = reader {
        let _ = t.join();
    }
    let text = buf.lock().unwrap().clone();
    text
}

/// SIGKILLs the run after its set-up (`entries`), then checks that it left something and that
/// `hostsim live clean` removes all of it and the ledger file; returns every entry it recorded.
pub fn kill_then_clean(child: &mut Child, entries: Vec<Entry>) -> Vec<Entry> {
    let _ = child.kill();
    let _ = child.wait();
    let entries = [entries, entries_of(child.id())].concat();
    assert!(entries.iter().any(exists), "SIGKILL left nothing to clean: the test would prove nothing");
    let o = hostsim().args(["live", "clean"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "live clean: {text} {}", String::from_utf8_lossy(&o.stderr));
    assert_undone(&entries, "after live clean");
    assert!(entries_of(child.id()).is_empty());
    entries
}

/// The run's run.json says it was interrupted.
pub fn assert_interrupted(out: &Path) {
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert!(run["status"].as_str().unwrap().starts_with("interrupted"), "{run}");
}

/// The entries of every ledger of the run whose process is `pid`.
pub fn entries_of(pid: u32) -> Vec<Entry> {
    let p = format!("hsl-{pid}-");
    ledger::list()
        .into_iter()
        .filter(|f| f.file_name().unwrap().to_string_lossy().starts_with(&p))
        .flat_map(|f| ledger::read(&f).map(|(_, e)| e).unwrap_or_default())
        .collect()
}

/// Fails, naming them, if any of `entries` still exists.
pub fn assert_undone(entries: &[Entry], when: &str) {
    let left: Vec<String> = entries.iter().filter(|e| exists(e)).map(|e| e.to_string()).collect();
    assert!(left.is_empty(), "{when}: still there: {left:?}");
}

/// A results.csv as rows of column -> value.
pub fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| h.iter().zip(rec.unwrap().iter()).map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .collect()
}

/// Column `k` of a row as a number (NaN when absent or not a number).
pub fn num(r: &BTreeMap<String, String>, k: &str) -> f64 {
    r.get(k).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// Does what `e` describes still exist (as the run made it)?
pub fn exists(e: &Entry) -> bool {
    match e {
        Entry::Netns { name } => ledger::netns_exists(name),
        Entry::Veth { ns, dev } => {
            ns.as_ref().is_none_or(|n| ledger::netns_exists(n))
                && Command::new("ip")
                    .args(ns.iter().flat_map(|n| ["-n", n.as_str()]))
                    .args(["link", "show", "dev", dev])
                    .output()
                    .unwrap()
                    .status
                    .success()
        }
        Entry::Cgroup { path } | Entry::ServerGroup { path } => path.exists(),
        Entry::Xdp { prog_id, .. } | Entry::Tcx { prog_id, .. } => Command::new("bpftool")
            .args(["prog", "show", "id", &prog_id.to_string()])
            .output()
            .is_ok_and(|o| o.status.success()),
        // A value in a namespace that is gone is gone with it; elsewhere it must be back.
        Entry::File { ns, path, old } => match ns {
            Some(n) if !ledger::netns_exists(n) => false,
            n => hostsim_live::netns::read_in(n.as_deref(), path).is_ok_and(|v| v.trim() != old.trim()),
        },
        Entry::Affinity { pid, start_time, cpus } => {
            hostsim_live::sys::start_time(*pid) == Some(*start_time)
                && hostsim_live::sys::affinity(*pid as i32).ok().as_ref() != Some(cpus)
        }
        Entry::Link { link_id, .. } => Command::new("bpftool")
            .args(["link", "show", "id", &link_id.to_string()])
            .output()
            .is_ok_and(|o| o.status.success()),
        Entry::Sched { pid, start_time, policy, prio } => {
            hostsim_live::sys::start_time(*pid) == Some(*start_time)
                && hostsim_live::sys::sched_of(*pid as i32).ok() != Some((*policy, *prio))
        }
    }
}
