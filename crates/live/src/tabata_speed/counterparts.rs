//! What Linux ships today in place of paper 002's slot regulator (issue 45), as variants of the
//! same experiment: the same 1 MB sender, speeds, units, shaped wire and receiver's clock.
//!
//! - **`cfs`: CFS bandwidth control.** The sender runs in a CPU group of its own whose quota is
//!   the speed's share of each period (cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, as
//!   this machine mounts it; v2 `cpu.max`). Linux 6.18 `kernel/sched/fair.c`: a group that has
//!   run its quota in a period is throttled (dequeued) until the period timer refills it
//!   (`sched_cfs_period_timer` → `distribute_cfs_runtime`); the quota is CPU time, consumed only
//!   while the sender runs, not wall-clock slots given whether it runs or not. The group's
//!   `cpu.stat` says how often it was throttled (`cfs_nr_throttled`, `cfs_throttled_ms`).
//! - **`pacing`: TCP's own pacing.** `SO_MAX_PACING_RATE` = speed × the wire's rate (bytes/s of
//!   skb length) on the sender's socket; without the fq qdisc (absent here) TCP paces itself
//!   with an hrtimer per flow (`tcp_pacing_check`, `tcp_internal_pacing`, Linux 4.13+). It
//!   regulates the bandwidth, not the sender's CPU.
//! - **`tbf`: the shaper.** The sender veth's tbf (already at 100 Mbit/s for the wire) at speed ×
//!   the wire's rate, with the same bucket and overhead; back to the wire's rate after the point.
//!
//! What each changes, and how it is undone: the CPU group `hsl-<pid>-<n>/cfs` (a child of the
//! run's group, recorded before creation, removed at the end) and its two files (written through
//! the ledger, so a killed run's quota never outlives `hostsim live clean`); the qdisc's rate in
//! the sender's namespace (gone with it); the socket option of the sender's own socket.

use crate::cgroup::CpuGroup;
use crate::harness::{failed, LiveError, LiveRun};

/// The kernel's smallest CFS quota and period (`min_cfs_quota_period`, 1 ms).
pub const CFS_MIN_US: u64 = 1000;

/// The quota for `speed_pct` of `period_us`; an error where it is below the kernel's minimum.
pub fn cfs_quota_us(period_us: u64, speed_pct: u32) -> Result<u64, String> {
    let q = period_us * u64::from(speed_pct) / 100;
    if q < CFS_MIN_US {
        return Err(format!(
            "cfs: {speed_pct} % of a {period_us} us period is {q} us, below the kernel's 1 ms quota: \
             give a longer --cfs-period-us"
        ));
    }
    Ok(q)
}

/// `SO_MAX_PACING_RATE` for `speed_pct` of a `rate_mbit` wire, bytes/s.
pub fn pacing_bytes_per_s(rate_mbit: u32, speed_pct: u32) -> u64 {
    u64::from(rate_mbit) * 1_000_000 / 8 * u64::from(speed_pct) / 100
}

/// tbf's rate for `speed_pct` of a `rate_mbit` wire, kbit/s.
pub fn tbf_rate_kbit(rate_mbit: u32, speed_pct: u32) -> u64 {
    u64::from(rate_mbit) * 1000 * u64::from(speed_pct) / 100
}

/// The files of a group's CFS bandwidth: v1 (`cpu.cfs_period_us`, `cpu.cfs_quota_us`) or v2
/// (`cpu.max`).
fn is_v1(g: &CpuGroup) -> bool {
    g.path().join("cpu.cfs_quota_us").exists()
}

/// The sender's CPU group under the run's own (`<group>/cfs`), recorded in the ledger; an
/// `Unsupported` error where the run has no CPU group or the group no CFS bandwidth files.
pub fn cfs_group(run: &LiveRun, parent: Option<&CpuGroup>) -> Result<CpuGroup, LiveError> {
    let parent = parent.ok_or_else(|| {
        LiveError::Unsupported("variant cfs: no CPU cgroup for the run (see `cgroup.rs`)".to_string())
    })?;
    let g = run.cpu_child(parent, "cfs")?;
    if !is_v1(&g) && !g.path().join("cpu.max").exists() {
        return Err(LiveError::Unsupported(format!(
            "variant cfs: {} has neither cpu.cfs_quota_us nor cpu.max (CONFIG_CFS_BANDWIDTH)",
            g.path().display()
        )));
    }
    Ok(g)
}

/// Give group `g` `quota_us` of every `period_us`, through the run's ledger.
pub fn set_quota(run: &LiveRun, g: &CpuGroup, quota_us: u64, period_us: u64) -> Result<(), LiveError> {
    let f = |name: &str| g.path().join(name).display().to_string();
    if is_v1(g) {
        // The period first: the quota is checked against it (tg_set_cfs_bandwidth).
        run.write_value(None, &f("cpu.cfs_period_us"), &period_us.to_string())?;
        run.write_value(None, &f("cpu.cfs_quota_us"), &quota_us.to_string())
    } else {
        run.write_value(None, &f("cpu.max"), &format!("{quota_us} {period_us}"))
    }
}

/// The group's CFS bandwidth statistics: (periods, periods throttled, time throttled in ns).
pub fn cfs_stat(g: &CpuGroup) -> Result<(u64, u64, u64), LiveError> {
    let p = g.path().join("cpu.stat");
    let text = std::fs::read_to_string(&p).map_err(|e| failed(format!("{}: {e}", p.display())))?;
    let get = |k: &str| {
        text.lines().find_map(|l| l.strip_prefix(k)?.strip_prefix(' ')?.trim().parse::<u64>().ok()).unwrap_or(0)
    };
    // v1 `throttled_time` is in ns, v2 `throttled_usec` in µs.
    let throttled_ns =
        if text.contains("throttled_usec") { get("throttled_usec") * 1000 } else { get("throttled_time") };
    Ok((get("nr_periods"), get("nr_throttled"), throttled_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speed_is_a_share_of_the_period_the_rate_or_the_wire() {
        assert_eq!(cfs_quota_us(100_000, 10), Ok(10_000));
        assert_eq!(cfs_quota_us(100_000, 1), Ok(1000));
        assert!(cfs_quota_us(10_000, 5).unwrap_err().contains("--cfs-period-us"));
        assert_eq!(pacing_bytes_per_s(100, 50), 6_250_000);
        assert_eq!(pacing_bytes_per_s(100, 100), 12_500_000);
        assert_eq!(tbf_rate_kbit(100, 30), 30_000);
    }
}
