//! Readers for the kernel's own counters, in the units and names the model uses.
//!
//! Every reader takes the file's text, so the parsers are tested on fixed inputs; the `read_*`
//! wrappers open the real files. Files under `/proc/thread-self/net/` show the network namespace
//! of the calling thread, which is how the agent reads the server namespace's sockets and SNMP
//! counters from a thread that has entered it (see [`crate::sys::enter_netns`]).

use std::collections::BTreeMap;
use std::io;

/// CPU time of one CPU from `/proc/stat`, in clock ticks (USER_HZ).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
    pub fn since(&self, a: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user - a.user,
            nice: self.nice - a.nice,
            system: self.system - a.system,
            idle: self.idle - a.idle,
            iowait: self.iowait - a.iowait,
            irq: self.irq - a.irq,
            softirq: self.softirq - a.softirq,
            steal: self.steal - a.steal,
        }
    }
    /// Shares in the model's CPU states (`hardirq`, `softirq`, `system`, `user`, `idle`) plus
    /// `steal` (time the hypervisor gave to others; the model has no such state). `user` counts
    /// niced time too; `idle` counts iowait.
    pub fn shares(&self) -> [(&'static str, f64); 6] {
        let t = self.total().max(1) as f64;
        [
            ("hardirq", self.irq as f64 / t),
            ("softirq", self.softirq as f64 / t),
            ("system", self.system as f64 / t),
            ("user", (self.user + self.nice) as f64 / t),
            ("idle", (self.idle + self.iowait) as f64 / t),
            ("steal", self.steal as f64 / t),
        ]
    }
}

/// Per-CPU lines `cpuN ...` of `/proc/stat`, in CPU order.
pub fn parse_stat(text: &str) -> Vec<CpuTimes> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(name) = it.next() else { continue };
        if !name.starts_with("cpu") || name == "cpu" {
            continue;
        }
        let v: Vec<u64> = it.map(|x| x.parse().unwrap_or(0)).collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        out.push(CpuTimes {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        });
    }
    out
}

pub fn read_stat() -> io::Result<Vec<CpuTimes>> {
    Ok(parse_stat(&std::fs::read_to_string("/proc/stat")?))
}

/// One CPU's line of `/proc/net/softnet_stat` (Linux 6.x: `softnet_seq_show` in
/// net/core/net-procfs.c prints processed, dropped, time_squeeze, five zeros, a zero that was
/// cpu_collision, received_rps, flow_limit_count, the backlog length, the CPU index, then
/// input_pkt_queue and process_queue lengths; all hex).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Softnet {
    pub processed: u64,
    /// Packets dropped because the backlog was over `netdev_max_backlog`.
    pub dropped: u64,
    pub time_squeeze: u64,
    pub received_rps: u64,
    /// Packets the RPS flow limit dropped at this CPU's enqueues (`sd->flow_limit->count`:
    /// counted on the CPU that enqueues, whichever backlog it enqueues to).
    pub flow_limit_count: u64,
    /// Packets in the backlog now (0 on kernels before 5.10 that lack the column).
    pub backlog_len: u64,
}

pub fn parse_softnet(text: &str) -> Vec<Softnet> {
    text.lines()
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|x| u64::from_str_radix(x, 16).unwrap_or(0)).collect();
            let g = |i: usize| v.get(i).copied().unwrap_or(0);
            Softnet {
                processed: g(0),
                dropped: g(1),
                time_squeeze: g(2),
                received_rps: g(9),
                flow_limit_count: g(10),
                backlog_len: g(11),
            }
        })
        .collect()
}

pub fn read_softnet() -> io::Result<Vec<Softnet>> {
    Ok(parse_softnet(&std::fs::read_to_string("/proc/net/softnet_stat")?))
}

/// The `Udp:` counters of `/proc/net/snmp` by name (InDatagrams, NoPorts, RcvbufErrors, ...).
pub fn parse_snmp_udp(text: &str) -> BTreeMap<String, u64> {
    parse_snmp(text, "Udp:")
}

/// One group of `/proc/net/snmp` (`Ip:`, `Udp:`, ...) by name: a line of names, then a line of values.
pub fn parse_snmp(text: &str, group: &str) -> BTreeMap<String, u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(group));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return BTreeMap::new();
    };
    names
        .split_whitespace()
        .skip(1)
        .zip(values.split_whitespace().skip(1))
        .map(|(n, v)| (n.to_string(), v.parse().unwrap_or(0)))
        .collect()
}

/// A socket line of `/proc/net/{udp,udp6,tcp,tcp6}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockLine {
    pub port: u16,
    /// TCP state (0x0A = LISTEN); UDP sockets show 07 (unconnected) or 01 (connected).
    pub state: u8,
    pub inode: u64,
    /// Packets this socket dropped (UDP only; its last column): receive buffer full.
    pub drops: u64,
    /// Bytes waiting in its receive queue (`rx_queue`: the memory charged, truesize).
    pub rx_queue: u64,
}

pub fn parse_net_socks(text: &str, udp: bool) -> Vec<SockLine> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let Some(port) = f[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) else {
            continue;
        };
        let state = u8::from_str_radix(f[3], 16).unwrap_or(0);
        let inode = f[9].parse().unwrap_or(0);
        let drops = if udp { f.last().and_then(|d| d.parse().ok()).unwrap_or(0) } else { 0 };
        let rx_queue = f[4].split(':').nth(1).and_then(|q| u64::from_str_radix(q, 16).ok()).unwrap_or(0);
        out.push(SockLine { port, state, inode, drops, rx_queue });
    }
    out
}

/// Bound sockets of the calling thread's network namespace: UDP (any state) and TCP listeners,
/// IPv4 and IPv6.
pub fn read_thread_socks() -> io::Result<Vec<SockLine>> {
    let mut out = Vec::new();
    for (file, udp) in [("udp", true), ("udp6", true), ("tcp", false), ("tcp6", false)] {
        match std::fs::read_to_string(format!("/proc/thread-self/net/{file}")) {
            Ok(t) => out.extend(parse_net_socks(&t, udp).into_iter().filter(|s| udp || s.state == 0x0A)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {} // no IPv6
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// What `/proc/PID/stat` says about a process: nice value and CPU time in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub nice: i8,
    pub utime: u64,
    pub stime: u64,
}

pub fn parse_pid_stat(text: &str) -> Option<ProcStat> {
    // The command name (field 2) may hold spaces and parentheses: fields restart after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state(3) ppid(4) ... utime(14) stime(15) ... nice(19), numbered from 1.
    let at = |n: usize| f.get(n - 3).copied();
    Some(ProcStat { nice: at(19)?.parse().ok()?, utime: at(14)?.parse().ok()?, stime: at(15)?.parse().ok()? })
}

pub fn read_pid_stat(pid: u32) -> Option<ProcStat> {
    parse_pid_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Clock ticks per second of `/proc/stat` and `/proc/PID/stat` times.
pub fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Drop and packet counters of a network device in the calling thread's namespace
/// (`/sys/class/net` is not namespaced per thread, so these come from `/proc/thread-self/net/dev`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevCounters {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

pub fn parse_net_dev(text: &str) -> BTreeMap<String, DevCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let v: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs drop ...
        out.insert(
            name.trim().to_string(),
            DevCounters { rx_packets: g(1), rx_dropped: g(3), tx_packets: g(9), tx_dropped: g(11) },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let t = "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 10 0 0 90 0 0 0 0 0 0\nintr 5\n";
        let v = parse_stat(t);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], CpuTimes { user: 1, nice: 2, system: 3, idle: 4, iowait: 5, irq: 6, softirq: 7, steal: 8 });
        let s = v[1].shares();
        assert_eq!(s[3], ("user", 0.1));
        assert_eq!(s[4], ("idle", 0.9));
    }

    #[test]
    fn softnet_columns() {
        let t = "0000153e 00000002 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000007 0000001f 0000000a 00000001 0000000a 00000000\n";
        let v = parse_softnet(t);
        let want = Softnet {
            processed: 0x153e,
            dropped: 2,
            time_squeeze: 1,
            received_rps: 7,
            flow_limit_count: 31,
            backlog_len: 10,
        };
        assert_eq!(v[0], want);
    }

    #[test]
    fn snmp_udp() {
        let t = "Ip: a b\nIp: 1 2\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 61 3 0 62 9\n";
        let m = parse_snmp_udp(t);
        assert_eq!(parse_snmp(t, "Ip:")["b"], 2);
        assert_eq!(m["NoPorts"], 3);
        assert_eq!(m["RcvbufErrors"], 9);
    }

    #[test]
    fn udp_socket_lines() {
        let t = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
                 \x20 132: 010012C6:1388 00000000:0000 07 00000000:00000A40 00:00000000 00000000     0        0 41234 2 0000000000000000 17\n";
        let v = parse_net_socks(t, true);
        assert_eq!(v, vec![SockLine { port: 5000, state: 7, inode: 41234, drops: 17, rx_queue: 0xA40 }]);
    }

    #[test]
    fn pid_stat_with_spaces_in_comm() {
        let t = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 30 0 0 39 19 1 0 100 1000 50";
        let s = parse_pid_stat(t).unwrap();
        assert_eq!(s, ProcStat { nice: 19, utime: 250, stime: 30 });
    }

    #[test]
    fn net_dev_lines() {
        let t = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n  eth0: 100 10 0 2 0 0 0 0 200 20 0 3 0 0 0 0\n";
        let m = parse_net_dev(t);
        assert_eq!(m["eth0"], DevCounters { rx_packets: 10, rx_dropped: 2, tx_packets: 20, tx_dropped: 3 });
    }
}
