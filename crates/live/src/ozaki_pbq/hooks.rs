//! Real bind() hooks for ozaki-pbq (issue 28, item 4): the port → level table set where a
//! server binds, as the paper's bind() hook did (§3.4.1), instead of found by walking `/proc`.
//!
//! **What runs in the kernel** (`bpf/pbq_xdp.bpf.c`, in the same object as the XDP
//! program, so that they write the very map it reads):
//! - `cgroup/post_bind4` and `cgroup/post_bind6`, attached to a cgroup2 group the run creates
//!   (`LiveRun::v2_group`, in the ledger), run after a UDP or TCP socket of a task in that group
//!   got its port. They record the socket (by socket cookie) with the binding thread, its
//!   process and the process's start time, and the level 19 − nice of the binding thread (its
//!   `static_prio` through `bpf_get_current_task_btf()`, CO-RE), and raise the port's level to
//!   it at once.
//! - `cgroup/sock_release` runs when such a socket is released: it forgets the socket and sets
//!   the port to the highest level among the sockets still bound to it (0 if none).
//!
//! A bind outside the group is not seen: the programs of a cgroup run for the sockets created
//! by its tasks (a socket takes its creator's cgroup at `socket()`, `sk_cgrp_data`), so a
//! server must be in the group before it creates its sockets. On this machine's hybrid
//! hierarchy cgroup2 is mounted at `/sys/fs/cgroup/unified` and holds every process in its
//! root: attached there the hooks see every bind of the machine, attached to the run's child
//! group only the binds of its processes. As a second guard the hooks can keep only the binds of
//! one network namespace (`bpf_get_netns_cookie`, [`crate::bpf::netns_cookie`]): the port table
//! is about one namespace's ports.
//!
//! **Nice changes after bind()** have no hook here (below). [`Rescan`] reads, every
//! `rescan_ms`, only the processes the hook recorded as holders: for each, its threads' nice
//! values (`/proc/TGID/task/*/stat`); the socket's level becomes the highest among them (a
//! thread's nice is its own on Linux, `setpriority(PRIO_PROCESS, tid)`), and a port whose
//! highest level changed is rewritten. A holder is checked to be the same process (its start
//! time against the one the hook recorded), since pids are reused. A holder that has exited while
//! its socket lives on (passed to a child by fork or over a UNIX socket) keeps the level it
//! last had: the hook knows only the binder, where the `/proc` scan finds every holder.
//!
//! **What this kernel refuses** (Linux 6.18 here; measured with the commands in the docs book's
//! ozaki-pbq page, `docs/src/live/ozaki-pbq.md`, "Bind hooks"): `lsm/socket_bind` and
//! `lsm/task_setnice` (no BPF LSM: the kernel has no `/sys/kernel/security/lsm`, loading fails),
//! and `fentry/`/`fexit/` on `__sys_bind` or `set_user_nice` (no BTF trampolines for tracing:
//! attaching fails). So there is no hook on nice(); the rescan stands for it, and its period
//! bounds how late a renice is seen.
//!
//! **Fallback**: the agent's `/proc` scan, `scan_ports` in agent.rs (every process of the
//! namespace, every descriptor), kept as `PortSource::Proc` (`--ports proc`): it needs no
//! cgroup and sees servers started before the agent, and every holder of a socket, at the cost
//! of walking all of `/proc` every period.

use super::xdp::{level_of_nice, Bound, PbqXdp};
use crate::procfs;
use std::collections::BTreeMap;

/// A port's owners as the hooks (or the agent's `/proc` scan) found them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortOwner {
    /// 19 − (lowest nice among the holders).
    pub level: u8,
    pub nice: i8,
    pub pids: Vec<u32>,
}

/// The highest level (19 − nice) among the threads of process `tgid`, and that nice value, if
/// `tgid` is still the process that started at `leader_start_ns` (boot-time ns, as the hook
/// read it); None if it is gone or the pid now names another process.
pub fn holder_level(tgid: u32, leader_start_ns: u64) -> Option<(u8, i8)> {
    // /proc/PID/stat field 22 is nsec_to_clock_t(start_boottime) (fs/proc/array.c, Linux 6.x):
    // ns / (10^9 / USER_HZ) where USER_HZ divides 10^9.
    let ns_per_tick = (1e9 / procfs::ticks_per_s()).round() as u64;
    if crate::sys::start_time(tgid)? != leader_start_ns / ns_per_tick.max(1) {
        return None;
    }
    let mut best: Option<i8> = None;
    for t in std::fs::read_dir(format!("/proc/{tgid}/task")).ok()?.flatten() {
        let Some(st) = std::fs::read_to_string(t.path().join("stat")).ok().and_then(|s| procfs::parse_pid_stat(&s))
        else {
            continue;
        };
        best = Some(best.map_or(st.nice, |b| b.min(st.nice)));
    }
    let nice = best?;
    Some((level_of_nice(i32::from(nice)), nice))
}

/// The rescan of the recorded holders (module doc).
#[derive(Default)]
pub struct Rescan {
    /// Per process seen in the last pass: (start ns, level, nice), for a holder that is gone.
    last: BTreeMap<u32, (u64, u8, i8)>,
}

impl Rescan {
    /// One pass: refresh every recorded socket's level from its holder's threads, rewrite the
    /// ports whose highest level changed, and return the table as it now stands (port → level,
    /// nice and holders).
    pub fn pass(&mut self, x: &PbqXdp) -> BTreeMap<u16, PortOwner> {
        let bound: Vec<Bound> = x.bound();
        let mut seen: BTreeMap<u32, (u64, u8, i8)> = BTreeMap::new();
        let mut out: BTreeMap<u16, PortOwner> = BTreeMap::new();
        for b in &bound {
            let key = b.tgid;
            let now = match seen.get(&key) {
                Some(v) if v.0 == b.leader_start_ns => Some((v.1, v.2)),
                _ => holder_level(b.tgid, b.leader_start_ns),
            };
            let (level, nice) = match now {
                Some(ln) => {
                    seen.insert(key, (b.leader_start_ns, ln.0, ln.1));
                    ln
                }
                // Gone (the socket lives on elsewhere): the level it had.
                None => self
                    .last
                    .get(&key)
                    .filter(|v| v.0 == b.leader_start_ns)
                    .map_or((b.level, 19 - b.level as i8), |v| (v.1, v.2)),
            };
            if level != b.level {
                x.set_bound_level(b, level);
            }
            let o = out.entry(b.port).or_insert(PortOwner { level, nice, pids: Vec::new() });
            if level > o.level {
                o.level = level;
                o.nice = nice;
            }
            if !o.pids.contains(&b.tgid) {
                o.pids.push(b.tgid);
            }
        }
        for (&p, o) in &out {
            if x.port_level(p) != o.level {
                let _ = x.set_port_level(p, o.level);
            }
        }
        self.last = seen;
        out
    }
}
