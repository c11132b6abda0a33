//! Today's counterparts (issue 45) put back what they change, on every ending (needs root,
//! network namespaces, XDP, tcx; elsewhere each test writes why it skips and returns):
//!
//! - ozaki-pbq's `flow-limit` writes the machine-wide `net.core.flow_limit_cpu_bitmap`;
//! - tabata-speed's `cfs` gives the sender a CPU group of its own with a CFS quota;
//! - kawai-interval's `+busy` writes the machine-wide `net.core.busy_poll` and `busy_read`, and
//!   `+defer` each accelerator veth's `napi_defer_hard_irqs` and `gro_flush_timeout`.
//!
//! For each: a run is stopped while the setting is in force, by SIGINT, SIGTERM, SIGHUP and
//! SIGQUIT in turn (exit 128 + N, every entry of its ledger undone, the machine-wide values back
//! to what they were before the run), and once by SIGKILL, after which `hostsim live clean`
//! puts them back. Every check reads the run's own ledger; one live test at a time on the whole
//! machine (`hostsim_live::testing::exclusive`).

mod common;

use common::{
    assert_interrupted, assert_undone, cannot_run_here, entries_of, kill_then_clean, root, skip, start_live, stderr_of,
    wait_exit,
};
use hostsim_live::ledger::Entry;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BITMAP: &str = "/proc/sys/net/core/flow_limit_cpu_bitmap";
const BUSY_POLL: &str = "/proc/sys/net/core/busy_poll";
const BUSY_READ: &str = "/proc/sys/net/core/busy_read";
const STOPS: [(i32, &str); 4] =
    [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP"), (libc::SIGQUIT, "SIGQUIT")];

fn tmp(name: &str) -> PathBuf {
    common::tmp("today", name)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|e| format!("({path}: {e})"))
}

/// Does the ledger hold a file entry whose path ends with `suffix`?
fn wrote(e: &[Entry], suffix: &str) -> bool {
    e.iter().any(|e| matches!(e, Entry::File { path, .. } if path.ends_with(suffix)))
}

/// Wait (≤ `secs`) until `cond` holds; false if it never did.
fn until(secs: u64, cond: impl Fn() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// One experiment's case: start it with `args` until its ledger says (`ready`) that it wrote its
/// setting and `in_force` (given the ledger) reads it in force, stop it with each signal, then
/// SIGKILL it and clean; after each, `watched` (machine-wide files) read what they read before
/// the run.
fn every_ending_puts_it_back(
    experiment: &str,
    args: &[&str],
    ready: impl Fn(&[Entry]) -> bool + Copy,
    in_force: impl Fn(&[Entry]) -> bool,
    watched: &[&str],
) {
    let before: Vec<String> = watched.iter().map(|p| read(p)).collect();
    let back = |when: &str| {
        let now: Vec<String> = watched.iter().map(|p| read(p)).collect();
        assert_eq!(now, before, "{experiment}: {watched:?} after {when}");
    };
    for (sig, name) in STOPS {
        let out = tmp(&format!("{experiment}-{sig}"));
        let (mut child, entries) = start_live(experiment, &out, args, false, Duration::from_secs(60), ready);
        assert!(until(10, || in_force(&entries_of(child.id()))), "{experiment}: never in force: {entries:?}");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let st = wait_exit(&mut child, 30);
        if cannot_run_here(st.code(), &stderr_of(&mut child)) {
            return;
        }
        assert_eq!(st.code(), Some(128 + sig), "{experiment}: exit after {name}");
        let entries = [entries, entries_of(child.id())].concat();
        assert_undone(&entries, &format!("{experiment} after {name}"));
        back(name);
        assert_interrupted(&out);
        let _ = std::fs::remove_dir_all(&out);
    }
    let out = tmp(&format!("{experiment}-kill"));
    let (mut child, entries) = start_live(experiment, &out, args, false, Duration::from_secs(60), ready);
    assert!(until(10, || in_force(&entries_of(child.id()))), "{experiment}: never in force: {entries:?}");
    kill_then_clean(&mut child, entries);
    back("SIGKILL and `hostsim live clean`");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_flow_limit_bitmap_is_put_back_on_every_ending() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (network namespaces, XDP)");
    }
    if !std::path::Path::new(BITMAP).exists() {
        return skip("no RPS flow limit in this kernel (CONFIG_NET_FLOW_LIMIT)");
    }
    let was = read(BITMAP);
    every_ending_puts_it_back(
        "ozaki-pbq",
        &["--variants", "flow-limit", "--placements", "rps", "--rates", "100000", "--window-s", "30", "--reps", "1"],
        |e| wrote(e, "flow_limit_cpu_bitmap"),
        |_| read(BITMAP) != was,
        &[BITMAP],
    );
}

#[test]
fn the_senders_cfs_quota_group_is_removed_on_every_ending() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root");
    }
    if hostsim_live::cgroup::v2_root().is_none() {
        return skip("no cgroup v2 hierarchy (tabata-speed's freezer)");
    }
    // 10, 20 and 30 % of a 100 ms period, twenty times: the run is still going when the signal
    // comes.
    every_ending_puts_it_back(
        "tabata-speed",
        &["--variants", "cfs", "--speeds", "10,20,30", "--units", "1024", "--reps", "20", "--no-off"],
        |e| wrote(e, "cpu.cfs_quota_us") || wrote(e, "cpu.max"),
        |e| {
            // A quota in force in the sender's group (not the value it had: unlimited), as the
            // ledger names it.
            e.iter().any(|e| match e {
                Entry::File { ns: None, path, old }
                    if path.ends_with("cfs/cpu.cfs_quota_us") || path.ends_with("cfs/cpu.max") =>
                {
                    std::fs::read_to_string(path).is_ok_and(|v| v.trim() != old.trim())
                }
                _ => false,
            })
        },
        &[],
    );
}

#[test]
fn busy_polling_sysctls_are_put_back_on_every_ending() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (network namespaces)");
    }
    let was = (read(BUSY_POLL), read(BUSY_READ));
    every_ending_puts_it_back(
        "kawai-interval",
        &["--quick", "--variants", "none+busy", "--window-s", "30", "--busy-poll-us", "37"],
        |e| wrote(e, "busy_poll") && wrote(e, "busy_read"),
        |_| read(BUSY_POLL) == "37" && read(BUSY_READ) == "37" && (read(BUSY_POLL), read(BUSY_READ)) != was,
        &[BUSY_POLL, BUSY_READ],
    );
}

#[test]
fn napi_deferral_is_undone_with_the_accelerators_namespace_on_every_ending() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (network namespaces)");
    }
    // The two per-device files live in the accelerator's namespace: the ledger restores them and
    // the namespace goes; `assert_undone` checks both.
    every_ending_puts_it_back(
        "kawai-interval",
        &["--quick", "--variants", "none+defer", "--window-s", "30"],
        |e| wrote(e, "napi_defer_hard_irqs") && wrote(e, "gro_flush_timeout"),
        |e| {
            e.iter().any(|e| match e {
                Entry::File { ns: Some(ns), path, .. } if path.ends_with("napi_defer_hard_irqs") => {
                    hostsim_live::netns::read_in(Some(ns.as_str()), path).is_ok_and(|v| v.trim() == "2")
                }
                _ => false,
            })
        },
        &[],
    );
}
