//! What the live tests share: whether something a run recorded in its ledger still exists.

use hostsim_live::ledger::{self, Entry};
use std::process::Command;

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
