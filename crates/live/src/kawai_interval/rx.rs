//! What Linux ships today in place of paper 004's interval control (issue 45): receive-path
//! settings that trade the accelerator's CPU against latency in the kernel instead of in the
//! event loop. A variant is `<loop>[+<rx>]`: the loop's interval control (`interval.rs`) and one
//! of these, applied to the accelerator's namespace before the point's processes start.
//!
//! How a veth receives (Linux 6.18 `drivers/net/veth.c`): a frame sent into a veth goes to the
//! peer's NAPI ring only when the peer has NAPI (an XDP program, or GRO on) *and* the skb is
//! eligible (`veth_skb_is_eligible_for_gro`: the sending device has no TSO, or the skb is a UDP
//! one the receiver can GRO); otherwise `__netif_rx` puts it on a backlog (here RPS sends it to
//! the accelerator's CPU) and no NAPI of the veth ever runs. Measured here: GRO on at the
//! receiving end alone leaves `rx_queue_0_xdp_packets` (the veth's NAPI-received count) at 0
//! for TCP from a sender with TSO; with TSO off at the sender every segment goes through it. So:
//!
//! | rx          | what is set                                                                  | acts? |
//! |-------------|------------------------------------------------------------------------------|-------|
//! | `plain`     | nothing (the default: no `+rx`)                                              |       |
//! | `defer-plain` | `napi_defer_hard_irqs`, `gro_flush_timeout` on the accelerator's veths, as they are | no: no NAPI to defer (the evidence: `rx_napi_pps` 0) |
//! | `gro`       | GRO on at the accelerator's veths, TSO off at their peers: the veths' NAPI carries every segment | the reference for the two below |
//! | `defer`     | `gro` + `napi_defer_hard_irqs` and `gro_flush_timeout`                        | yes: `napi_complete_done` arms the NAPI's hrtimer instead of re-enabling the "interrupt" (for a veth, `rx_notify_masked` stays set: a sender's frames no longer schedule the poll, the timer does) |
//! | `busy-plain` | `net.core.busy_poll` / `busy_read` (µs), the veths as they are              | no: a socket's `sk_napi_id` comes from a NAPI with an id, the backlog's has none (`busy_poll_rx_pps` 0) |
//! | `busy`      | `gro` + `net.core.busy_poll` / `busy_read`                                    | yes: epoll_wait / poll / recv spin on the veth's NAPI in the accelerator's thread |
//!
//! IRQ suspension (`irq-suspend-timeout`, Linux 6.13+) is not run: it is set per NAPI through
//! netdev-genl and acts only for an epoll loop with `SO_PREFER_BUSY_POLL` / `EPIOCSPARAMS`,
//! which is another event loop than the paper's poll() pass (Fig. 5); left for later.
//!
//! What is changed and undone: GRO and TSO are features of the run's own veths (gone with its
//! namespaces); `napi_defer_hard_irqs` and `gro_flush_timeout` are per-device files in the
//! accelerator's namespace, and `busy_poll` / `busy_read` machine-wide sysctls (`net_core_table`,
//! the initial namespace's only), all written through the ledger (`LiveRun::write_value`: the
//! value before the run's first write is restored on every ending and by `hostsim live clean`).

use crate::harness::{failed, LiveError, LiveRun, Netns};
use std::collections::BTreeMap;

/// The accelerator's veths (its namespace) and their peers (namespace role, device).
pub const ACC_DEVS: [&str; 2] = ["eth0", "eth1"];

pub const BUSY_POLL: &str = "/proc/sys/net/core/busy_poll";
pub const BUSY_READ: &str = "/proc/sys/net/core/busy_read";

crate::named_values! {
    /// The receive path's setting of a variant (module doc).
    pub enum RxPath {
        /// The veths as created: no NAPI, no busy polling.
        Plain = "plain",
        /// Deferral set on veths without NAPI (evidence that it cannot act there).
        DeferPlain = "defer-plain",
        /// GRO on the accelerator's veths, TSO off at their peers: the veths' NAPI carries the segments.
        Gro = "gro",
        /// `gro` with napi_defer_hard_irqs and gro_flush_timeout.
        Defer = "defer",
        /// Busy polling on veths without NAPI (evidence that it cannot act there).
        BusyPlain = "busy-plain",
        /// `gro` with net.core.busy_poll and busy_read.
        Busy = "busy",
    }
}

impl RxPath {
    /// Does the veths' NAPI carry the segments (GRO on, TSO off at the peers)?
    pub fn napi(self) -> bool {
        matches!(self, RxPath::Gro | RxPath::Defer | RxPath::Busy)
    }

    pub fn defers(self) -> bool {
        matches!(self, RxPath::Defer | RxPath::DeferPlain)
    }

    pub fn busy_polls(self) -> bool {
        matches!(self, RxPath::Busy | RxPath::BusyPlain)
    }
}

/// A variant's loop part and receive path: `static-10` → (`static-10`, plain); `none+defer` →
/// (`none`, defer).
pub fn split_variant(name: &str) -> Result<(&str, RxPath), String> {
    match name.split_once('+') {
        None => Ok((name, RxPath::Plain)),
        Some((lp, rx)) => {
            let r = RxPath::parse(rx).filter(|&r| r != RxPath::Plain).ok_or_else(|| {
                let names: Vec<&str> = RxPath::ALL.iter().skip(1).map(|r| r.name()).collect();
                format!("variant `{name}`: the receive path after `+` is one of {}", names.join(", "))
            })?;
            Ok((lp, r))
        }
    }
}

/// The values the counterparts set (the command's options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxKnobs {
    pub defer_hard_irqs: u32,
    pub gro_flush_timeout_ns: u64,
    pub busy_poll_us: u32,
}

/// The receive path in force, so that a point changes only what differs from the last one.
#[derive(Debug, Default)]
pub struct RxState {
    /// None until the first point (the veths as created).
    current: Option<RxPath>,
    /// A variant of the run busy-polls: every point sets the two sysctls (0 in the others), so
    /// that no point measures a value the machine happened to have.
    busy_in_run: bool,
}

/// `ethtool` in namespace `ns`.
fn ethtool(ns: &Netns, args: &[&str]) -> Result<String, LiveError> {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.name, "ethtool"])
        .args(args)
        .output()
        .map_err(|e| failed(format!("running ethtool in {}: {e} (install it: bash scripts/deps.sh)", ns.name)))?;
    if !out.status.success() {
        return Err(failed(format!(
            "`ethtool {}` in {}: {}",
            args.join(" "),
            ns.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl RxState {
    /// The state before the first point of a run whose variants' receive paths are `paths`.
    pub fn new(paths: impl IntoIterator<Item = RxPath>) -> RxState {
        RxState { current: None, busy_in_run: paths.into_iter().any(RxPath::busy_polls) }
    }

    /// Put the receive path in `want`: `acc` holds the accelerator's veths, `peers` their other
    /// ends (namespace, device).
    pub fn apply(
        &mut self,
        run: &LiveRun,
        acc: &Netns,
        peers: &[(&Netns, &str)],
        want: RxPath,
        k: &RxKnobs,
    ) -> Result<(), LiveError> {
        let was = self.current.unwrap_or(RxPath::Plain);
        if self.current.is_some() && was == want {
            return Ok(());
        }
        if want.napi() != was.napi() || self.current.is_none() {
            let (gro, tso) = if want.napi() { ("on", "off") } else { ("off", "on") };
            for dev in ACC_DEVS {
                ethtool(acc, &["-K", dev, "gro", gro])?;
            }
            for (ns, dev) in peers {
                ethtool(ns, &["-K", dev, "tso", tso])?;
            }
        }
        if want.defers() || was.defers() {
            let (irqs, timeout) = if want.defers() { (k.defer_hard_irqs, k.gro_flush_timeout_ns) } else { (0, 0) };
            for dev in ACC_DEVS {
                // The timeout first: with deferral and no timeout, napi_complete_done re-arms at once.
                run.write_value(Some(acc), &format!("/sys/class/net/{dev}/gro_flush_timeout"), &timeout.to_string())?;
                run.write_value(Some(acc), &format!("/sys/class/net/{dev}/napi_defer_hard_irqs"), &irqs.to_string())?;
            }
        }
        if want.busy_polls() || was.busy_polls() || (self.current.is_none() && self.busy_in_run) {
            let us = if want.busy_polls() { k.busy_poll_us } else { 0 };
            run.write_value(None, BUSY_POLL, &us.to_string())?;
            run.write_value(None, BUSY_READ, &us.to_string())?;
        }
        self.current = Some(want);
        Ok(())
    }
}

/// The receive path's own counters, at one instant.
#[derive(Clone, Debug, Default)]
pub struct RxCounters {
    /// Segments the accelerator's veths received through their NAPI (`rx_queue_0_xdp_packets`).
    pub napi_packets: u64,
    /// `TcpExt: BusyPollRxPackets` of the accelerator's namespace.
    pub busy_poll_packets: u64,
    /// NET_RX softirqs raised per CPU (`/proc/softirqs`, machine-wide).
    pub net_rx: Vec<u64>,
}

/// `rx_queue_<n>_xdp_packets` summed over the queues, from `ethtool -S`.
pub fn parse_napi_packets(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            (k.starts_with("rx_queue_") && k.ends_with("_xdp_packets")).then(|| v.trim().parse::<u64>().ok())?
        })
        .sum()
}

/// The NET_RX line of `/proc/softirqs`, per CPU.
pub fn parse_net_rx(text: &str) -> Vec<u64> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix("NET_RX:"))
        .map(|rest| rest.split_whitespace().filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

/// Read the counters (the accelerator's namespace file `acc_file`, its veths by `acc`).
pub fn counters(acc: &Netns, acc_file: &std::fs::File) -> RxCounters {
    let mut napi_packets = 0;
    for dev in ACC_DEVS {
        napi_packets += ethtool(acc, &["-S", dev]).map(|t| parse_napi_packets(&t)).unwrap_or(0);
    }
    let netstat =
        crate::sys::in_netns(acc_file, || std::fs::read_to_string("/proc/thread-self/net/netstat")).unwrap_or_default();
    let busy_poll_packets =
        crate::procfs::parse_snmp(&netstat, "TcpExt:").get("BusyPollRxPackets").copied().unwrap_or(0);
    let net_rx = parse_net_rx(&std::fs::read_to_string("/proc/softirqs").unwrap_or_default());
    RxCounters { napi_packets, busy_poll_packets, net_rx }
}

/// The counters' rates over a window of `secs`, in results.csv's names.
pub fn metrics(a: &RxCounters, b: &RxCounters, secs: f64, rx: RxPath, m: &mut BTreeMap<String, f64>) {
    m.insert("rx_napi_pps".into(), b.napi_packets.saturating_sub(a.napi_packets) as f64 / secs);
    m.insert("busy_poll_rx_pps".into(), b.busy_poll_packets.saturating_sub(a.busy_poll_packets) as f64 / secs);
    for (cpu, (x, y)) in b.net_rx.iter().zip(&a.net_rx).enumerate() {
        m.insert(format!("net_rx_softirqs_cpu{cpu}_per_s"), x.saturating_sub(*y) as f64 / secs);
    }
    m.insert("rx_napi_on".into(), if rx.napi() { 1.0 } else { 0.0 });
    m.insert("rx_defer_on".into(), if rx.defers() { 1.0 } else { 0.0 });
    m.insert("rx_busy_poll_on".into(), if rx.busy_polls() { 1.0 } else { 0.0 });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_is_a_loop_and_a_receive_path() {
        assert_eq!(split_variant("static-10"), Ok(("static-10", RxPath::Plain)));
        assert_eq!(split_variant("none+defer"), Ok(("none", RxPath::Defer)));
        assert_eq!(split_variant("none+busy-plain"), Ok(("none", RxPath::BusyPlain)));
        assert!(split_variant("none+plain").unwrap_err().contains("defer-plain, gro, defer"));
        assert!(split_variant("none+fast").is_err());
        assert!(RxPath::Defer.napi() && RxPath::Defer.defers() && !RxPath::Defer.busy_polls());
        assert!(!RxPath::DeferPlain.napi() && RxPath::DeferPlain.defers());
        assert!(RxPath::Busy.napi() && RxPath::Busy.busy_polls() && !RxPath::BusyPlain.napi());
    }

    #[test]
    fn counters_are_read_from_ethtool_and_softirqs() {
        let s = "NIC statistics:\n     peer_ifindex: 2\n     rx_queue_0_xdp_packets: 1396\n     rx_queue_0_xdp_bytes: 9\n     rx_queue_1_xdp_packets: 4\n";
        assert_eq!(parse_napi_packets(s), 1400);
        let t = "                    CPU0       CPU1       \n          HI:          0          1\n      NET_RX:    3291791    6654678\n";
        assert_eq!(parse_net_rx(t), [3_291_791, 6_654_678]);
    }
}
