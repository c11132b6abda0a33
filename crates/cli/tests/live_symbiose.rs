//! `hostsim live takeuchi-symbiose` on this machine's kernel (needs root, two CPUs, network
//! namespaces, XDP on veth, a cpumap and tp_btf; elsewhere each test writes why it skips):
//!
//! - a short forwarding run (`--quick`: every variant at 50,000 pkt/s) forwards frames through
//!   the router namespace in every variant, and every frame reaches the sink with its IPv4
//!   header and UDP checksums right (the sink program checks both); nothing of it remains;
//!   split-afxdp's frames went through its AF_XDP sockets and user-space threads, which
//!   exchanged them in bulk (at most four queue operations per period, not one per frame);
//! - a write that fails after the first point (the output directory made immutable) ends the
//!   run with exit 1 and undoes everything;
//! - SIGINT, SIGTERM, SIGHUP and SIGQUIT mid-sweep each undo every entry of the run's ledger
//!   (namespaces, veths, `ip_forward`, RPS mask, XDP programs, tracepoint links, the kthreads'
//!   affinity and policy), split-afxdp's AF_XDP forwarder running when the signal comes;
//! - after SIGKILL, `hostsim live clean` removes what is left.
//!
//! Every check reads the run's own ledger. The tests run one after another, one live test at a time on the whole machine
//! (`hostsim_live::testing::exclusive`).

mod common;

use common::{
    assert_interrupted, assert_undone, cannot_run_here, csv_rows, entries_of, kill_then_clean, num, root,
    set_immutable, skip, start_live, stderr_of, wait_exit,
};
use hostsim_live::ledger::Entry;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    common::tmp("ts", name)
}

/// Start a run; wait until its set-up is in the ledger.
fn start(out: &Path, args: &[&str]) -> (Child, Vec<Entry>) {
    start_live("takeuchi-symbiose", out, args, true, Duration::from_secs(30), set_up)
}

fn can_run() -> bool {
    if !root() {
        skip("needs root");
        return false;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        skip("needs two CPUs");
        return false;
    }
    true
}

/// The set-up is complete once the ledger holds the three XDP attachments (sink, router input,
/// the generator's spare veth) and the two tracepoint links.
fn set_up(e: &[Entry]) -> bool {
    e.iter().filter(|e| matches!(e, Entry::Xdp { .. })).count() >= 3
        && e.iter().filter(|e| matches!(e, Entry::Link { .. })).count() >= 2
}

fn no_namespace_of(pid: u32) {
    let left = hostsim_live::netns::netns_of(pid);
    assert!(left.is_empty(), "namespaces of the run remain: {left:?}");
}

#[test]
fn a_short_forwarding_run_delivers_frames_with_right_checksums_and_leaves_nothing_behind() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let out = tmp("quick");
    let (mut child, entries) = start(&out, &["--quick"]);
    let st = wait_exit(&mut child, 90);
    let err = stderr_of(&mut child);
    if cannot_run_here(st.code(), &err) {
        return;
    }
    assert!(st.success(), "exit {st}\n{err}");
    let entries = [entries, entries_of(child.id())].concat();
    assert_undone(&entries, "after a normal exit");
    assert!(entries_of(child.id()).is_empty(), "the ledger file remains");
    no_namespace_of(child.id());
    let rows = csv_rows(&out.join("results.csv"));
    let variants: Vec<&str> = rows.iter().map(|r| r["variant"].as_str()).collect();
    assert_eq!(variants, ["kernel-1cpu", "kernel-rps", "split-cpumap", "split-afxdp"], "{err}");
    for r in &rows {
        let v = &r["variant"];
        // Frames went through the router's IP forwarding and reached the sink...
        assert!(num(r, "forwarded_pps") > 0.0, "{v}: nothing forwarded: {r:?}");
        assert!(num(r, "sink_valid_count") > 0.0, "{v}: nothing reached the sink: {r:?}");
        // ... every one with its IPv4 header and UDP checksums right, and nothing else arrived.
        assert_eq!(num(r, "sink_invalid_count"), 0.0, "{v}: frames with a wrong or missing checksum: {r:?}");
        assert_eq!(num(r, "sink_other_count"), 0.0, "{v}: {r:?}");
        assert_eq!(num(r, "sink_valid_count"), num(r, "sink_frames_count"), "{v}: {r:?}");
        // At 50,000 pkt/s, far below every variant's saturation, the window's frames arrive.
        assert!(
            num(r, "out_window_frac") > 0.95,
            "{v}: {} of the window's frames arrived\n{err}",
            num(r, "out_window_frac")
        );
        assert_eq!(num(r, "gen_errors"), 0.0, "{v}: {r:?}");
    }
    let split = rows.iter().find(|r| r["variant"] == "split-cpumap").unwrap();
    // The functional split really redirected: every frame the router saw went to the cpumap.
    assert!(num(split, "redirected_pps") >= 0.99 * num(split, "rtr_rx_pps"), "{split:?}");
    assert_eq!(num(split, "redirect_failed_pps"), 0.0);
    let one = rows.iter().find(|r| r["variant"] == "kernel-1cpu").unwrap();
    assert_eq!(num(one, "redirected_pps"), 0.0);
    assert_eq!(num(one, "xsk_rx_pps"), 0.0);
    let x = rows.iter().find(|r| r["variant"] == "split-afxdp").unwrap();
    // The paper's design: every frame the router saw went to the AF_XDP socket, and none
    // through the kernel's IP forwarding; the user-space IP half forwarded them...
    assert!(num(x, "redirected_pps") >= 0.99 * num(x, "rtr_rx_pps"), "{x:?}");
    assert_eq!(num(x, "redirect_failed_pps"), 0.0, "{x:?}");
    assert!(num(x, "xsk_rx_pps") >= 0.95 * num(x, "rtr_rx_pps"), "{x:?}");
    assert!(num(x, "ip_in_receives_pps") < 0.01 * num(x, "rtr_rx_pps"), "frames reached the kernel's IP: {x:?}");
    assert_eq!(num(x, "drop_xsk_pps"), 0.0, "{x:?}");
    assert_eq!(num(x, "xsk_dropped_ip_count"), 0.0, "{x:?}");
    assert_eq!(num(x, "xsk_kick_errors_count") + num(x, "xsk_tx_invalid_count"), 0.0, "{x:?}");
    // ... in the threads whose time is measured ...
    assert!(num(x, "xsk_driver_thread_frac") > 0.0 && num(x, "xsk_ip_thread_frac") > 0.0, "{x:?}");
    // ... exchanging them in bulk: each thread moves each queue once per 5 ms period (≤ 800
    // queue operations/s over both, 5 % for the window's edges), however many frames.
    assert!(num(x, "xsk_queue_ops_per_s") <= 840.0, "{x:?}");
    assert!(num(x, "xsk_batch_mean") > 10.0, "frames were not handed over in batches: {x:?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_error_mid_run_undoes_everything() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let out = tmp("error");
    let (mut child, entries) = start(
        &out,
        &["--rates", "50000,60000,70000,80000", "--variants", "kernel-1cpu", "--reps", "1", "--window-s", "0.5"],
    );
    let end = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(out.join("results.csv")).map_or(0, |t| t.lines().count()) < 2 {
        assert!(Instant::now() < end, "no point written within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    if !set_immutable(&out, true) {
        let _ = child.kill();
        let _ = child.wait();
        return skip("this file system cannot make a directory immutable (FS_IMMUTABLE_FL)");
    }
    let st = wait_exit(&mut child, 60);
    set_immutable(&out, false);
    let err = stderr_of(&mut child);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("writing "), "the error does not name the file it could not write: {err}");
    let entries = [entries, entries_of(child.id())].concat();
    assert_undone(&entries, "after an error");
    no_namespace_of(child.id());
    assert_eq!(csv_rows(&out.join("results.csv")).len(), 1, "the point written before the failure is kept");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn every_stop_signal_mid_sweep_undoes_everything() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        let out = tmp(&format!("sig{sig}"));
        // The split variant (cpumap entry and its kthread) under load, long enough not to end first.
        // split-afxdp first: its forwarder (sockets, UMEM, threads) is running when the signal comes.
        let (mut child, entries) = start(
            &out,
            &[
                "--rates",
                "200000",
                "--variants",
                "split-afxdp,split-cpumap,kernel-rps",
                "--reps",
                "5",
                "--window-s",
                "1",
            ],
        );
        std::thread::sleep(Duration::from_millis(700));
        assert!(
            entries.iter().any(|e| matches!(e, Entry::Sched { .. })),
            "the kthreads' policy is in the ledger: {entries:?}"
        );
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let st = wait_exit(&mut child, 30);
        let err = stderr_of(&mut child);
        assert_eq!(st.code(), Some(128 + sig), "signal {sig}: exit {st}\n{err}");
        let entries = [entries, entries_of(child.id())].concat();
        assert_undone(&entries, &format!("after signal {sig}"));
        assert!(entries_of(child.id()).is_empty(), "signal {sig}: the ledger file remains");
        no_namespace_of(child.id());
        assert_interrupted(&out);
        let _ = std::fs::remove_dir_all(&out);
    }
}

#[test]
fn a_sigkilled_run_is_cleaned_by_live_clean() {
    let _g = hostsim_live::testing::exclusive();
    if !can_run() {
        return;
    }
    let out = tmp("kill");
    let (mut child, entries) =
        start(&out, &["--rates", "200000", "--variants", "split-afxdp,split-cpumap", "--reps", "5", "--window-s", "1"]);
    std::thread::sleep(Duration::from_millis(700));
    kill_then_clean(&mut child, entries);
    no_namespace_of(child.id());
    let _ = std::fs::remove_dir_all(&out);
}
