//! Small shared types of the host model: identifiers, CPU accounting states, interrupt sources,
//! context levels, drop places, migration causes, the nice→weight table and priority levels.
//!
//! Every policy and subsystem may depend on this module; it depends on nothing else in the crate.
//! It exists so that a policy file (a backlog discipline, a wake-up placement, ...) needs only these
//! types and its own hook trait, never the `Host` hub (`sim.rs`), and the hub never becomes part of
//! an import circle.

/// A process (task) id: index into `Host::procs`.
pub type Pid = u32;
/// A packet id: index into the packet slab `Host::pkts`.
pub type PktId = u32;
/// "None" for the u32 ids above (and for CPU numbers kept as u32).
pub const NONE: u32 = u32::MAX;

/// CPU time accounting states. Every nanosecond of every CPU is in exactly one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuState {
    Hardirq = 0,
    Softirq = 1,
    System = 2,
    User = 3,
    /// Spinning on a kernel lock (`bkl`, and Symbiose's global-queue lock).
    Spin = 4,
    Idle = 5,
}
pub const N_STATES: usize = 6;
pub const STATE_NAMES: [&str; N_STATES] = ["hardirq", "softirq", "system", "user", "spin", "idle"];

/// Interrupt sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqSrc {
    Nic(u32),
    /// A NIC's TX-done interrupt on the 2.4 path (the index of the queue whose TX ring it cleans).
    NicTx(u32),
    Tick,
    Ipi,
}

/// Execution context of a CPU frame, lowest to highest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Process,
    Softirq,
    Hardirq,
}

/// Where a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropPlace {
    Switch = 0,
    NicRing = 1,
    Backlog = 2,
    Socket = 3,
    NoSocket = 4,
    TcpOutOfOrder = 5,
    /// Evicted from a lower-priority PBQ by a higher-priority arrival.
    PbqEvict = 6,
    /// Refused by the enqueuing CPU's RPS flow limit (`skb_flow_limit`).
    FlowLimit = 7,
    /// Dropped by the program at the driver's entry point (XDP_DROP).
    Xdp = 8,
    /// `functional`: the shared inter-OS buffer pool was empty when the frame arrived.
    BufferPool = 9,
    /// A connection request (SYN) found the listening socket's accept queue full.
    AcceptQueue = 10,
    /// XDP `cpumap`: the CPU map entry's ring was full at a bulk flush (`bq_flush_to_queue`).
    Cpumap = 11,
}
pub const N_DROPS: usize = 12;
pub const DROP_NAMES: [&str; N_DROPS] = [
    "switch",
    "nic_ring",
    "backlog",
    "socket",
    "no_socket",
    "tcp_ooo",
    "pbq_evict",
    "flow_limit",
    "xdp",
    "buffer_pool",
    "accept_queue",
    "cpumap",
];

/// Why a task moved to another CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationCause {
    Wakeup = 0,
    LoadBalance = 1,
    IdleBalance = 2,
}
pub const N_CAUSES: usize = 3;
pub const CAUSE_NAMES: [&str; N_CAUSES] = ["wakeup", "load_balance", "idle_balance"];

/// Linux's `sched_prio_to_weight` (nice -20 ..= 19).
pub const NICE_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501,
    1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];
pub const NICE_0_WEIGHT: u64 = 1024;

pub fn nice_weight(nice: i8) -> u64 {
    NICE_WEIGHT[(i32::from(nice).clamp(-20, 19) + 20) as usize]
}

pub fn cpu_mask(cpus: &[u32], n: usize) -> u128 {
    if cpus.is_empty() {
        if n >= 128 {
            u128::MAX
        } else {
            (1u128 << n) - 1
        }
    } else {
        cpus.iter().fold(0u128, |m, &c| m | (1u128 << c))
    }
}

/// A 32-bit mix of a flow's identity under `key` (stands in for the NIC's Toeplitz hash with
/// its RSS key; key 0 is the model's fixed hash).
pub fn flow_hash(key: u64, src: u32, flow: u32, dst_port: u16) -> u32 {
    let mut x = (u64::from(src) << 40) ^ (u64::from(flow) << 16) ^ u64::from(dst_port) ^ key;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    // Never zero: zero means "no hash" in Linux, which maps it to 1 (3.2 `__skb_get_rxhash`:
    // `if (!hash) hash = 1;`). Only zero: forcing the low bit on every hash would make every
    // hash odd, and every table indexed by its low bits (RSS's redirection table, RFS, the
    // flow-limit buckets) would use only its odd entries.
    match x as u32 {
        0 => 1,
        h => h,
    }
}

/// The RSS queue (0-based, within the NIC) of a frame with `hash` on a NIC of `queues` queues:
/// the 82599 indexes its 128-entry redirection table with the hash's 7 low bits, and Linux 3.2
/// ixgbe fills the table with `0, 1, …, queues−1, 0, 1, …` (`ixgbe_setup_mrqc`), so entry `i`
/// is `i mod queues`. (With 12 queues, queues 0–7 get 11/128 of the flows, 8–11 get 10/128.)
#[inline]
pub fn rss_queue(hash: u32, queues: u32) -> u32 {
    if queues <= 1 {
        0
    } else {
        (hash & 127) % queues
    }
}

/// Priority levels of the port → priority table (`ozaki-pbq`): 40, one per nice value.
pub const LEVELS: usize = 40;

/// Priority level of a nice value: 19 − nice, so nice −20 → 39 (highest), nice 19 → 0.
pub fn level_of_nice(nice: i8) -> u8 {
    (19 - i32::from(nice).clamp(-20, 19)) as u8
}

#[cfg(test)]
mod tests {
    use super::{flow_hash, rss_queue};

    /// Every RSS queue receives flows, in the redirection table's proportions: 6,400 flows
    /// over 2, 8, 12 and 16 queues. (A hash with its low bit forced on fed only the odd queues.)
    #[test]
    fn rss_spreads_flows_over_every_queue() {
        for queues in [2u32, 8, 12, 16] {
            let mut n = vec![0u32; queues as usize];
            for src in 0..4 {
                for flow in 0..1600 {
                    let h = flow_hash(0, src, flow, 5000);
                    assert_ne!(h, 0);
                    n[rss_queue(h, queues) as usize] += 1;
                }
            }
            for (q, &k) in n.iter().enumerate() {
                // Entries of the 128-entry table that point at q, as a share of the flows.
                let entries = (0..128u32).filter(|i| i % queues == q as u32).count() as f64;
                let expect = 6400.0 * entries / 128.0;
                assert!(
                    (k as f64 - expect).abs() < 5.0 * expect.sqrt(),
                    "{queues} queues: queue {q} got {k} flows, expected ~{expect:.0} ({n:?})"
                );
            }
        }
        assert_eq!(rss_queue(12345, 1), 0);
    }
}
