//! The harness in-process, as root (skipped with the reason otherwise): what it changes on a
//! process it did not start (CPU affinity) and in a namespace it made (a per-namespace sysctl)
//! is recorded and put back by `finish`, and by `Drop` when the experiment panics.

use hostsim_live::harness::LiveRun;
use hostsim_live::ledger::{self, Entry};
use std::io::Write;
use std::process::Command;

fn skip(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED (live): {why}");
}

fn ip_forward(ns: &str) -> String {
    hostsim_live::netns::read_in(Some(ns), "/proc/sys/net/ipv4/ip_forward").unwrap().trim().to_string()
}

#[test]
fn what_a_run_changes_is_recorded_and_put_back_by_finish_and_by_drop() {
    // One live test at a time on this machine (hostsim_live::testing).
    let _machine = hostsim_live::testing::exclusive();
    if !hostsim_live::sys::is_root() {
        return skip("needs root (namespaces, other processes' affinity)");
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = std::env::temp_dir().join(format!("hostsim-harness-root-{}", std::process::id()));
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id();
    let before = hostsim_live::sys::affinity(pid as i32).unwrap();
    for panics in [false, true] {
        let run = LiveRun::start("harness-test", &out).unwrap();
        let name = run.name().to_string();
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ns = run.netns("t").unwrap();
            run.write_value(Some(&ns), "/proc/sys/net/ipv4/ip_forward", "1").unwrap();
            assert_eq!(ip_forward(&ns.name), "1");
            run.set_affinity(pid, &[ncpu - 1]).unwrap();
            assert_eq!(hostsim_live::sys::affinity(pid as i32).unwrap(), vec![ncpu - 1]);
            let kinds: Vec<&str> = run
                .ledger()
                .entries()
                .iter()
                .map(|e| match e {
                    Entry::Netns { .. } => "netns",
                    Entry::File { .. } => "file",
                    Entry::Affinity { .. } => "affinity",
                    _ => "other",
                })
                .collect();
            assert_eq!(kinds, ["netns", "file", "affinity"]);
            if panics {
                panic!("the experiment fails");
            }
            ns
        }));
        match res {
            Ok(ns) => {
                run.finish(Ok(())).unwrap();
                assert!(!ledger::netns_exists(&ns.name));
            }
            Err(_) => drop(run), // unwinding: Drop undoes
        }
        assert_eq!(hostsim_live::sys::affinity(pid as i32).unwrap(), before, "affinity restored (panic: {panics})");
        assert!(!ledger::path_of(&name).exists(), "ledger left (panic: {panics})");
        let status: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(status["status"], if panics { "aborted" } else { "complete" });
    }
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let _ = std::fs::remove_dir_all(&out);
}
