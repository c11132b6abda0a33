//! Receive Flow Steering switched on for a run's `rfs` points, and off again after each: paper
//! 001's setting on today's kernel (issue 45: EEVDF's placement with RFS, the counterpart of
//! the paper's mechanism, which itself needs a scheduler hook this kernel lacks).
//!
//! RFS needs two settings (Documentation/networking/scaling.rst, "RFS Configuration"): the
//! global socket flow table, `net.core.rps_sock_flow_entries` (a sysctl of the root namespace
//! only, machine-wide: `rps_sock_flow_sysctl` in net/core/sysctl_net_core.c, which also turns
//! on the `rps_needed`/`rfs_needed` static keys), and a device flow table per receive queue,
//! `/sys/class/net/DEV/queues/rx-N/rps_flow_cnt`. No RPS mask is needed: `get_rps_cpu`
//! (net/core/dev.c) consults the flow table before the RPS map. With both set, `veth_xmit`'s
//! `__netif_rx` steers each frame to the backlog of the CPU where the flow's reader last called
//! recvmsg (`sock_rps_record_flow`), moving a flow only once the old CPU's backlog has passed its
//! last enqueued frame (`rflow->last_qtail`).
//!
//! Both are written through the run's ledger: their values before the run are recorded first
//! ([`Entry::File`]), so every ending (normal, error, signal) and `hostsim live clean` after a
//! SIGKILL write them back. Between points the run switches RFS off again itself.

use crate::harness::{failed, LiveError, LiveRun, Netns};
use crate::ledger::Entry;
use crate::netns::{read_in, write_in};

/// The global socket flow table.
pub const SOCK_FLOW_ENTRIES: &str = "/proc/sys/net/core/rps_sock_flow_entries";
/// The table sizes written: scaling.rst's suggestion for a moderately loaded server (32768
/// socket flow entries; per queue, that over the number of receive queues: the veth has one).
pub const FLOW_ENTRIES: u32 = 32_768;

/// The two settings of one run, with the values they had before it.
pub struct Rfs {
    global_old: u32,
    /// The readers' namespace and each receive queue's `rps_flow_cnt` file in it.
    ns: String,
    queues: Vec<String>,
}

fn parse(text: &str, path: &str) -> Result<u32, LiveError> {
    text.trim().parse().map_err(|e| failed(format!("{path}: `{}` is not a number: {e}", text.trim())))
}

/// Record `path`'s present value in `ns` (None: the root namespace) in the run's ledger, so that
/// clean-up writes it back; return it.
fn remember(run: &LiveRun, ns: Option<&str>, path: &str) -> Result<u32, LiveError> {
    let old = read_in(ns, path).map_err(failed)?;
    let entry = Entry::File { ns: ns.map(str::to_string), path: path.to_string(), old: old.trim().to_string() };
    run.ledger().record(entry).map_err(|e| failed(format!("writing the run's ledger: {e}")))?;
    parse(&old, path)
}

impl Rfs {
    /// Record the settings of device `dev` in namespace `srv` and the global table (nothing is
    /// changed yet).
    pub fn record(run: &LiveRun, srv: &Netns, dev: &str) -> Result<Rfs, LiveError> {
        let global_old = remember(run, None, SOCK_FLOW_ENTRIES)?;
        let dir = format!("/sys/class/net/{dev}/queues");
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &srv.name, "ls", &dir])
            .output()
            .map_err(|e| failed(format!("running `ip netns exec`: {e}")))?;
        if !out.status.success() {
            return Err(failed(format!(
                "listing {dir} in {}: {}",
                srv.name,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let queues: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter(|q| q.starts_with("rx-"))
            .map(|q| format!("{dir}/{q}/rps_flow_cnt"))
            .collect();
        if queues.is_empty() {
            return Err(failed(format!("{dev} in {} has no receive queue", srv.name)));
        }
        for q in &queues {
            remember(run, Some(&srv.name), q)?;
        }
        Ok(Rfs { global_old, ns: srv.name.clone(), queues })
    }

    /// Switch RFS on for the device (`on`) or off. On: the global table at least
    /// [`FLOW_ENTRIES`] (a larger table the machine already has is kept) and each queue's table
    /// [`FLOW_ENTRIES`]; off: each queue's table 0 (no RFS for the device, whatever the global
    /// table) and the global table as it was before the run.
    pub fn set(&self, on: bool) -> Result<(), LiveError> {
        let global = if on { self.global_old.max(FLOW_ENTRIES) } else { self.global_old };
        let per_queue = if on { FLOW_ENTRIES } else { 0 };
        if on {
            write_in(None, SOCK_FLOW_ENTRIES, &global.to_string()).map_err(failed)?;
        }
        for q in &self.queues {
            write_in(Some(&self.ns), q, &per_queue.to_string()).map_err(failed)?;
        }
        if !on {
            write_in(None, SOCK_FLOW_ENTRIES, &global.to_string()).map_err(failed)?;
        }
        Ok(())
    }

    /// The settings as the kernel shows them now: (global table, the first queue's table).
    pub fn read(&self) -> Result<(u32, u32), LiveError> {
        let g = parse(&read_in(None, SOCK_FLOW_ENTRIES).map_err(failed)?, SOCK_FLOW_ENTRIES)?;
        let q = parse(&read_in(Some(&self.ns), &self.queues[0]).map_err(failed)?, &self.queues[0])?;
        Ok((g, q))
    }

    /// The global table's value before the run.
    pub fn global_before(&self) -> u32 {
        self.global_old
    }
}
