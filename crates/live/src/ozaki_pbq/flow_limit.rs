//! Today's counterpart of paper 000's selective drop: the RPS flow limit (issue 45).
//!
//! Linux 6.18 `net/core/dev.c`: `enqueue_to_backlog` asks `skb_flow_limit(skb, qlen)` before it
//! queues a packet on a CPU's backlog. Below half of `netdev_max_backlog` it says nothing; above,
//! the *enqueuing* CPU's table (`this_cpu_ptr(&softnet_data)->flow_limit`, present when that CPU
//! is in `net.core.flow_limit_cpu_bitmap`) records the flow's hash bucket in a history of the
//! last 128 packets (`FLOW_LIMIT_HISTORY`), and the packet is dropped when its bucket holds more
//! than half of that history: the heaviest flows are shed first, before the backlog is full.
//! Each such drop counts in that CPU's `flow_limit->count`, the 11th column of
//! `/proc/net/softnet_stat` ([`crate::procfs::Softnet::flow_limit_count`]), and in the target
//! backlog's `dropped`.
//!
//! What it can and cannot do here:
//! - It acts only where a packet enters a backlog: the `rps` placement (the veth's poll on CPU 1
//!   steers every packet to CPU 0's backlog). The `threaded` placement has RPS off, its kthread
//!   delivers straight to IP, and no backlog is ever entered: the variant is not run there.
//! - It knows flows, not priorities. The paper's four flood clients are four flows, each about a
//!   quarter of the backlog's arrivals, none over half of the history: it drops nothing
//!   (`--flood-flows 4`, the default; the evidence is `flow_limit_pps` = 0). A flood of one flow
//!   (`--flood-flows 1`) is over half of every history, and is what it can single out.
//!
//! The bitmap and `flow_limit_table_len` are machine-wide sysctls (`net_core_table`, registered
//! for the initial namespace only: a namespace's `/proc/sys/net/core` has neither). The run
//! writes the bitmap through its ledger (`LiveRun::write_value`, the value before the run kept
//! and written back on every ending and by `hostsim live clean`); the table length is read and
//! reported, never changed.

use crate::harness::{LiveError, LiveRun};

pub const BITMAP: &str = "/proc/sys/net/core/flow_limit_cpu_bitmap";
pub const TABLE_LEN: &str = "/proc/sys/net/core/flow_limit_table_len";

/// The bitmap's value for CPUs `0..ncpu`, as the kernel's cpumask parser takes it: hex words of
/// 32 CPUs, most significant first, separated by commas (`bitmap_parse`).
pub fn all_cpus(ncpu: usize) -> String {
    let words = ncpu.div_ceil(32).max(1);
    (0..words)
        .rev()
        .map(|w| {
            let bits = ncpu.saturating_sub(w * 32).min(32);
            let v: u64 = if bits == 32 { 0xffff_ffff } else { (1u64 << bits) - 1 };
            format!("{v:x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The value the machine had (for run.json), or `Unsupported` where the kernel has no flow limit
/// (`CONFIG_NET_FLOW_LIMIT` off: no sysctl).
pub fn before() -> Result<serde_json::Value, LiveError> {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
    let bitmap = read(BITMAP)
        .map_err(|e| LiveError::Unsupported(format!("the RPS flow limit ({BITMAP}: {e}; CONFIG_NET_FLOW_LIMIT)")))?;
    Ok(serde_json::json!({ "flow_limit_cpu_bitmap": bitmap, "flow_limit_table_len": read(TABLE_LEN).ok() }))
}

/// The flow limit on every CPU (`on`) or off, through the run's ledger.
pub fn set(run: &LiveRun, on: bool) -> Result<(), LiveError> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    run.write_value(None, BITMAP, &if on { all_cpus(ncpu) } else { "0".to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bitmap_names_every_cpu_in_32_bit_words() {
        assert_eq!(all_cpus(1), "1");
        assert_eq!(all_cpus(2), "3");
        assert_eq!(all_cpus(32), "ffffffff");
        assert_eq!(all_cpus(33), "1,ffffffff");
        assert_eq!(all_cpus(70), "3f,ffffffff,ffffffff");
    }
}
