//! What the live tests share: whether something a run recorded in its ledger still exists, a
//! run's ledger entries, and its results.csv read back. Each test file uses a part of it.
#![allow(dead_code)]

use hostsim_live::ledger::{self, Entry};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

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
    r.records().map(|rec| h.iter().zip(rec.unwrap().iter()).map(|(k, v)| (k.to_string(), v.to_string())).collect()).collect()
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
                && Command::new("ip").args(ns.iter().flat_map(|n| ["-n", n.as_str()])).args(["link", "show", "dev", dev]).output().unwrap().status.success()
        }
        Entry::Cgroup { path } | Entry::ServerGroup { path } => path.exists(),
        Entry::Xdp { prog_id, .. } | Entry::Tcx { prog_id, .. } => {
            Command::new("bpftool").args(["prog", "show", "id", &prog_id.to_string()]).output().is_ok_and(|o| o.status.success())
        }
        // A value in a namespace that is gone is gone with it; elsewhere it must be back.
        Entry::File { ns, path, old } => match ns {
            Some(n) if !ledger::netns_exists(n) => false,
            n => hostsim_live::netns::read_in(n.as_deref(), path).is_ok_and(|v| v.trim() != old.trim()),
        },
        Entry::Affinity { pid, start_time, cpus } => {
            hostsim_live::sys::start_time(*pid) == Some(*start_time) && hostsim_live::sys::affinity(*pid as i32).ok().as_ref() != Some(cpus)
        }
        Entry::Link { link_id, .. } => {
            Command::new("bpftool").args(["link", "show", "id", &link_id.to_string()]).output().is_ok_and(|o| o.status.success())
        }
        Entry::Sched { pid, start_time, policy, prio } => {
            hostsim_live::sys::start_time(*pid) == Some(*start_time) && hostsim_live::sys::sched_of(*pid as i32).ok() != Some((*policy, *prio))
        }
    }
}
