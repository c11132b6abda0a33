//! `hostsim live goda-wakeups` on this machine's kernel (needs root, network namespaces and
//! `tp_btf` tracepoints; elsewhere each test writes why it skips and returns):
//!
//! - a short run (`--quick`: 2 flows, 1 s window) records wake-ups of its own readers only (the
//!   tracker saw at most as many tasks as there are readers, though every other task of the
//!   machine wakes up too), pairs every one (nothing lost, none inconsistent), records its own
//!   flows' segment trains (trains.csv: one row per flow, every frame at the readers' veth traced
//!   back to the skb the senders' TCP emitted), and leaves nothing of its ledger behind;
//! - an `rfs` point switches RFS on (the global socket flow table and the readers' veth queue)
//!   and the run puts both back, after a normal exit, SIGTERM in an `rfs` point, and SIGKILL +
//!   `hostsim live clean`;
//! - SIGTERM in the middle of a point undoes every entry (namespaces, veth, tracepoint links,
//!   CPU group) and leaves no worker behind;
//! - after SIGKILL, `hostsim live clean` removes what remains.
//!
//! Every check reads the run's own ledger: a test asserts on what its run made, nothing else.
//! The tests run one after another, one live test at a time on the whole machine
//! (`hostsim_live::testing::exclusive`), since they share the machine's two CPUs.

mod common;

use common::{
    assert_interrupted, assert_undone, cannot_run_here, csv_rows, entries_of, group_pids, kill_then_clean, num, root,
    skip, start_live, stderr_of, wait_exit,
};
use hostsim_live::ledger::Entry;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

fn tmp(name: &str) -> PathBuf {
    common::tmp("gw", name)
}

/// The tracepoint links of a run: four of the wake-up recorder, six of the train recorder.
const LINKS: usize = 10;

/// Start a run; wait until its ledger holds the tracepoint links (setup done).
fn start(out: &Path, args: &[&str]) -> (Child, Vec<Entry>) {
    start_live("goda-wakeups", out, args, false, Duration::from_secs(20), |e| {
        e.iter().filter(|e| matches!(e, Entry::Link { .. })).count() >= LINKS
    })
}

const SOCK_FLOW: &str = hostsim_live::goda_rfs::rfs::SOCK_FLOW_ENTRIES;

fn sock_flow_entries() -> u32 {
    std::fs::read_to_string(SOCK_FLOW).unwrap().trim().parse().unwrap()
}

/// Start a run in an `rfs` point; wait until RFS is on (the global table at its size).
fn start_in_rfs(out: &Path) -> (Child, Vec<Entry>) {
    let on = hostsim_live::goda_rfs::rfs::FLOW_ENTRIES;
    let args = ["--flows", "2", "--reps", "1", "--variants", "rfs", "--window-s", "5"];
    start_live("goda-wakeups", out, &args, false, Duration::from_secs(30), |e| {
        e.iter().filter(|e| matches!(e, Entry::Link { .. })).count() >= LINKS && sock_flow_entries() >= on
    })
}

/// The run's RFS entries: the global table (root namespace) and the readers' veth queue.
fn rfs_entries(entries: &[Entry]) -> (usize, usize) {
    let global =
        entries.iter().filter(|e| matches!(e, Entry::File { ns: None, path, .. } if path == SOCK_FLOW)).count();
    let queues = entries
        .iter()
        .filter(|e| matches!(e, Entry::File { ns: Some(_), path, .. } if path.ends_with("/rps_flow_cnt")))
        .count();
    (global, queues)
}

fn can_run() -> bool {
    if !root() {
        skip("needs root");
        return false;
    }
    true
}

#[test]
fn a_short_run_records_only_its_own_readers_and_leaves_nothing_behind() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let out = tmp("quick");
    let (mut child, entries) = start(&out, &["--quick"]);
    let st = wait_exit(&mut child, 60);
    if cannot_run_here(st.code(), &stderr_of(&mut child)) {
        return;
    }
    assert!(st.success(), "exit {st}");
    let entries = [entries, entries_of(child.id())].concat();
    assert_eq!(entries.iter().filter(|e| matches!(e, Entry::Link { .. })).count(), LINKS, "{entries:?}");
    // No RFS point: the machine-wide table is not even recorded.
    assert_eq!(rfs_entries(&entries), (0, 0), "{entries:?}");
    assert_undone(&entries, "after a normal exit");
    assert!(entries_of(child.id()).is_empty(), "the ledger file remains");
    let rows = csv_rows(&out.join("results.csv"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r["process.reader.instances"], "2");
    // Only the run's readers: two tasks at most (the filter is their tgids), at least one.
    let seen = num(r, "tasks_seen");
    assert!((1.0..=2.0).contains(&seen), "tasks seen {seen}: {r:?}");
    assert!(num(r, "wakeups_per_s") > 10.0, "{r:?}");
    assert_eq!(num(r, "recorder_lost"), 0.0);
    assert_eq!(num(r, "wakeups_inconsistent"), 0.0, "a wake-up's own migration disagreed with its pair: {r:?}");
    assert!(num(r, "reader_rx_mbps") > 1.0, "{r:?}");
    // The classes partition the wake-up migrations.
    let sum = num(r, "migrations_wakeup_affine_per_s") + num(r, "migrations_wakeup_other_per_s");
    assert!((sum - num(r, "migrations_wakeup_per_s")).abs() < 1e-6, "{r:?}");
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "complete", "{run}");
    // The trains: one row per flow, of the run's own two ports, the frames traced to their skbs.
    assert_eq!(num(r, "trains_recorder_lost"), 0.0);
    let flows = csv_rows(&out.join("trains.csv"));
    let ports: Vec<&str> = flows.iter().map(|f| f["port"].as_str()).collect();
    assert_eq!(ports, ["5001", "5002"], "{flows:?}");
    for f in &flows {
        assert!(num(f, "emits_per_s") > 10.0 && num(f, "rx_frames_per_s") > 10.0, "{f:?}");
        // Every skb carries at least a segment, and the frames add up to the skbs' segments.
        assert!(num(f, "emit_segs_mean") >= 1.0, "{f:?}");
        let (segs, frames) = (num(f, "emits_per_s") * num(f, "emit_segs_mean"), num(f, "rx_frames_per_s"));
        assert!(
            (frames - segs).abs() <= 0.1 * segs + 100.0,
            "segments emitted {segs}/s, frames received {frames}/s: {f:?}"
        );
        assert!(num(f, "rx_matched_frac") > 0.9, "{f:?}");
        assert!(num(f, "rx_train_segs_mean") >= 1.0, "{f:?}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_rfs_point_switches_rfs_on_and_the_run_puts_it_back() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let before = sock_flow_entries();
    let out = tmp("rfs");
    let args = ["--flows", "1", "--reps", "1", "--variants", "rfs,linux", "--warmup-s", "0.2", "--window-s", "0.5"];
    let (mut child, entries) = start(&out, &args);
    let st = wait_exit(&mut child, 60);
    if cannot_run_here(st.code(), &stderr_of(&mut child)) {
        return;
    }
    assert!(st.success(), "exit {st}");
    let entries = [entries, entries_of(child.id())].concat();
    assert_eq!(rfs_entries(&entries), (1, 1), "{entries:?}");
    assert_undone(&entries, "after a normal exit");
    assert_eq!(sock_flow_entries(), before, "the global socket flow table is not as before the run");
    let rows = csv_rows(&out.join("results.csv"));
    let row = |v: &str| rows.iter().find(|r| r["variant"] == v).unwrap_or_else(|| panic!("no {v} row: {rows:?}"));
    let on = f64::from(hostsim_live::goda_rfs::rfs::FLOW_ENTRIES);
    assert_eq!(num(row("rfs"), "rps_flow_cnt"), on);
    assert!(num(row("rfs"), "rps_sock_flow_entries") >= on);
    assert_eq!(num(row("linux"), "rps_flow_cnt"), 0.0);
    assert_eq!(num(row("linux"), "rps_sock_flow_entries"), f64::from(before));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sigterm_in_an_rfs_point_puts_rfs_back() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let before = sock_flow_entries();
    let out = tmp("rfs-term");
    let (mut child, entries) = start_in_rfs(&out);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = wait_exit(&mut child, 20);
    assert_eq!(st.code(), Some(128 + libc::SIGTERM), "exit {st}");
    let entries = [entries, entries_of(child.id())].concat();
    assert_eq!(rfs_entries(&entries), (1, 1), "{entries:?}");
    assert_undone(&entries, "after SIGTERM");
    assert_eq!(sock_flow_entries(), before);
    assert_interrupted(&out);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_sigkilled_rfs_point_is_put_back_by_live_clean() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let before = sock_flow_entries();
    let out = tmp("rfs-kill");
    let (mut child, entries) = start_in_rfs(&out);
    let entries = kill_then_clean(&mut child, entries);
    assert_eq!(rfs_entries(&entries), (1, 1), "{entries:?}");
    assert_eq!(sock_flow_entries(), before);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sigterm_mid_point_undoes_everything() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let out = tmp("term");
    let (mut child, entries) = start(&out, &["--flows", "2", "--reps", "1", "--window-s", "5"]);
    std::thread::sleep(Duration::from_millis(1500));
    // Processes in the run's CPU group (its readers and senders).
    let workers = group_pids(&entries, |_| true);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = wait_exit(&mut child, 20);
    assert_eq!(st.code(), Some(128 + libc::SIGTERM), "exit {st}");
    let entries = [entries, entries_of(child.id())].concat();
    assert_undone(&entries, "after SIGTERM");
    for p in workers {
        assert!(!hostsim_live::sys::pid_alive(p), "worker {p} outlived the run");
    }
    assert_interrupted(&out);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_sigkilled_run_is_cleaned_by_live_clean() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let out = tmp("kill");
    let (mut child, entries) = start(&out, &["--flows", "2", "--reps", "1", "--window-s", "5"]);
    std::thread::sleep(Duration::from_millis(1000));
    kill_then_clean(&mut child, entries);
    let _ = std::fs::remove_dir_all(&out);
}
