//! Wake-up placement policies: `select_task_rq`, the CPU a woken task is queued on.
//!
//! `Linux` follows `select_task_rq_fair` of Linux 3.x with SD_WAKE_AFFINE: `wake_affine` pulls
//! the task to the waking CPU when that CPU's load plus the task's weight is no more than the
//! previous CPU's load scaled by half the domain's imbalance percentage; then
//! `select_idle_sibling` keeps the target if it is idle, else looks in the target's LLC domain for
//! a core whose threads are all idle, then for an idle SMT sibling. Real-time tasks stay on their
//! previous CPU when allowed (`select_task_rq_rt` with no higher-priority task there).

use crate::config::WakePolicy;
use crate::sim::*;

#[derive(Clone, Copy, Debug)]
pub enum WakePlacement {
    Linux,
}

impl WakePlacement {
    pub fn new(p: WakePolicy) -> WakePlacement {
        match p {
            WakePolicy::Linux => WakePlacement::Linux,
        }
    }

    /// The CPU to queue `pid` on when `waker` wakes it; `prev` is where it last ran.
    pub fn select_task_rq(&self, h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            WakePlacement::Linux => linux_select_task_rq(h, pid, prev, waker),
        }
    }
}

fn allowed(h: &Host, pid: Pid, cpu: usize) -> bool {
    h.procs[pid as usize].allowed & (1u128 << cpu) != 0
}

fn linux_select_task_rq(h: &Host, pid: Pid, prev: usize, waker: usize) -> usize {
    let p = &h.procs[pid as usize];
    let prev = if allowed(h, pid, prev) { prev } else { p.allowed.trailing_zeros() as usize };
    if p.rt.is_some() {
        return prev;
    }
    let mut target = prev;
    if h.cfg.kernel.wake_affine && waker != prev && allowed(h, pid, waker) {
        let this_load = h.cpu_load(waker);
        let prev_load = h.cpu_load(prev);
        let imb = u64::from(h.cfg.kernel.imbalance_pct);
        // wake_affine(): this_eff_load = 100 * (this_load + weight);
        //                prev_eff_load = (100 + (imbalance_pct - 100) / 2) * prev_load.
        if 100 * (this_load + p.weight) <= (100 + (imb - 100) / 2) * prev_load {
            target = waker;
        }
    }
    select_idle_sibling(h, pid, target)
}

/// `select_idle_sibling`: an idle target stays; else a fully idle core in the target's LLC, else
/// an idle SMT sibling of the target.
pub fn select_idle_sibling(h: &Host, pid: Pid, target: usize) -> usize {
    if h.cpu_idle(target) {
        return target;
    }
    let llc = h.cpus[target].llc;
    let ncpu = h.cpus.len();
    // LLC level: groups are cores; a group qualifies when all its threads are idle.
    let mut core = u32::MAX;
    let mut core_idle = true;
    let mut first_allowed = None;
    for c in 0..=ncpu {
        let new_core = c == ncpu || h.cpus[c].core != core;
        if new_core {
            if core != u32::MAX && core_idle {
                if let Some(f) = first_allowed {
                    return f;
                }
            }
            if c == ncpu {
                break;
            }
            core = h.cpus[c].core;
            core_idle = true;
            first_allowed = None;
        }
        if h.cpus[c].llc != llc {
            core_idle = false;
            continue;
        }
        core_idle &= h.cpu_idle(c);
        if first_allowed.is_none() && allowed(h, pid, c) {
            first_allowed = Some(c);
        }
    }
    // SMT level: any idle sibling of the target.
    (0..ncpu)
        .find(|&c| h.cpus[c].core == h.cpus[target].core && allowed(h, pid, c) && h.cpu_idle(c))
        .unwrap_or(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::*;
    use hostsim_workload::{ProgramKind, WorkDist};

    /// A Core i7-980X-like topology: 1 package, 6 cores, 2 threads each (CPU 2k and 2k+1 are
    /// siblings), shared LLC; four sleeping processes.
    fn host(allowed: Vec<u32>) -> Host {
        let zero = Costs {
            hardirq_entry_ns: 0, driver_rx_frame_ns: 0, netif_rx_ns: 0, softirq_entry_ns: 0,
            ip_udp_rx_ns: 0, tcp_rx_ns: 0, rx_per_byte_ns: 0.0, wakeup_ns: 0, syscall_ns: 0,
            recv_ns: 0, copy_per_byte_ns: 0.0, udp_send_ns: 0, tcp_ack_send_ns: 0,
            tx_per_byte_ns: 0.0, context_switch_ns: 0, tick_ns: 0, ipi_ns: 0,
        };
        let cache = CacheCosts {
            migrate_warmup_ns: 0, migrate_llc_load_misses: 0, migrate_llc_store_misses: 0,
            migrate_dtlb_load_misses: 0, migrate_dtlb_store_misses: 0, remote_packet_ns: 0,
            remote_packet_llc_load_misses: 0, remote_packet_llc_store_misses: 0,
        };
        let proc = |name: &str, cpus: Vec<u32>| ProcessConfig {
            name: name.into(), program: ProgramKind::UdpSink, port: Some(1), nice: 0,
            sched: SchedPolicy::Normal, rt_priority: 0, cpus, work_ns: 0,
            work_dist: WorkDist::Fixed, read_bytes: 1, reply_bytes: 0, sleep_ns: 0, rcvbuf_bytes: None, start_ms: 0,
        };
        let cfg = HostConfig {
            profile: Profile {
                name: "t".into(), description: String::new(), cpu_model: String::new(), clock_mhz: 1,
                topology: Topology { packages: 1, cores_per_package: 6, threads_per_core: 2, llc: LlcScope::PerPackage },
                costs: zero,
                cache,
            },
            kernel: KernelConfig::default(),
            nics: vec![],
            processes: vec![proc("woken", allowed), proc("a", vec![]), proc("b", vec![]), proc("c", vec![])],
            traffic: vec![],
            duration_ns: 1,
            warmup_ns: 0,
            seed: 1,
            sample_interval_ns: 1,
            trace: false,
        };
        Host::new(cfg)
    }

    /// Make `cpu` busy with process `pid` (its current task).
    fn busy(h: &mut Host, cpu: usize, pid: Pid) {
        h.cpus[cpu].curr = Some(pid);
        h.procs[pid as usize].state = ProcState::Runnable;
    }

    fn place(h: &Host, prev: usize, waker: usize) -> usize {
        WakePlacement::Linux.select_task_rq(h, 0, prev, waker)
    }

    #[test]
    fn idle_previous_cpu_keeps_the_task() {
        let mut h = host(vec![]);
        busy(&mut h, 4, 1); // the waker runs something; prev (CPU 0) is idle
        assert_eq!(place(&h, 0, 4), 0);
    }

    #[test]
    fn idle_waker_pulls_the_task_from_a_busy_previous_cpu() {
        let mut h = host(vec![]);
        busy(&mut h, 0, 1);
        assert_eq!(place(&h, 0, 4), 4, "wake_affine: waker idle, prev loaded");
    }

    #[test]
    fn busy_target_goes_to_a_fully_idle_core_in_the_llc() {
        let mut h = host(vec![]);
        // Cores 0 and 1 (CPUs 0-3) are half busy; core 2 (CPUs 4, 5) is fully idle.
        busy(&mut h, 0, 1);
        busy(&mut h, 2, 2);
        busy(&mut h, 6, 3);
        for c in [8, 10] {
            h.cpus[c].rq_cfs.push(3); // make cores 4 and 5 look busy too
        }
        assert_eq!(place(&h, 0, 2), 4, "first thread of the first fully idle core");
    }

    #[test]
    fn no_idle_core_falls_back_to_an_idle_smt_sibling() {
        let mut h = host(vec![]);
        for c in (0..12).step_by(2) {
            h.cpus[c].rq_cfs.push(1); // every core has one busy thread
        }
        busy(&mut h, 0, 2);
        assert_eq!(place(&h, 0, 0), 1, "the idle sibling of the target");
    }

    #[test]
    fn everything_busy_keeps_the_affine_choice() {
        let mut h = host(vec![]);
        for c in 0..12 {
            h.cpus[c].rq_cfs.push(1);
        }
        // Equal loads: 100 * (1024 + 1024) > 112 * 1024, so not affine: stays on prev.
        assert_eq!(place(&h, 3, 7), 3);
    }

    #[test]
    fn affinity_is_honoured() {
        let mut h = host(vec![5]);
        busy(&mut h, 5, 1);
        assert_eq!(place(&h, 5, 0), 5, "only CPU 5 allowed, even though it is busy");
    }

    #[test]
    fn realtime_tasks_stay_on_their_cpu() {
        let mut h = host(vec![]);
        h.procs[0].rt = Some(50);
        busy(&mut h, 2, 1);
        assert_eq!(place(&h, 2, 8), 2);
    }
}
