//! Wake-up placement cases of `select_task_rq` (kernel/sched/wake.rs) and paper 001's policy (mechanisms/goda_rfs.rs)
//! on a real `Host` built by `tests/util.rs`.

use crate::config::*;
use crate::hooks::Mechanism;
use crate::kernel::task::ProcState;
use crate::mechanisms::goda_rfs::GodaRfs;
use crate::tests::util::sink;
use crate::tests::util::Host;
use crate::types::*;

/// A Core i7-980X-like topology: 1 package, 6 cores, 2 threads each (CPU 2k and 2k+1 are
/// siblings), shared LLC; four sleeping processes, the first allowed on `allowed`.
pub(crate) fn host(allowed: Vec<u32>) -> Host {
    let topo = Topology { packages: 1, cores_per_package: 6, threads_per_core: 2, llc: LlcScope::PerPackage };
    let mut woken = sink("woken", 1, 0);
    woken.cpus = allowed;
    let procs = vec![woken, sink("a", 1, 0), sink("b", 1, 0), sink("c", 1, 0)];
    crate::tests::util::host_with(topo, KernelConfig::default(), vec![], procs)
}

/// Make `cpu` busy with process `pid` (its current task).
pub(crate) fn busy(h: &mut Host, cpu: usize, pid: Pid) {
    h.cpus[cpu].curr = Some(pid);
    h.procs[pid as usize].state = ProcState::Runnable;
}

/// Bring the idle-CPU mask up to date after a test set `curr` or a run queue by hand.
pub(crate) fn resync(h: &mut Host) {
    for c in 0..h.cpus.len() {
        let idle = h.cpu_idle(c);
        h.sched.masks.set_idle(c, idle);
    }
}

fn place(h: &mut Host, prev: usize, waker: usize) -> usize {
    resync(h);
    crate::kernel::sched::placement::BasePlacement::Cfs.select_task_rq(&*h, 0, prev, waker)
}

#[test]
fn idle_previous_cpu_keeps_the_task() {
    let mut h = host(vec![]);
    busy(&mut h, 4, 1); // the waker runs something; prev (CPU 0) is idle
    assert_eq!(place(&mut h, 0, 4), 0);
}

#[test]
fn idle_waker_pulls_the_task_from_a_busy_previous_cpu() {
    let mut h = host(vec![]);
    busy(&mut h, 0, 1);
    assert_eq!(place(&mut h, 0, 4), 4, "wake_affine: waker idle, prev loaded");
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
    assert_eq!(place(&mut h, 0, 2), 4, "first thread of the first fully idle core");
}

#[test]
fn no_idle_core_falls_back_to_an_idle_smt_sibling() {
    let mut h = host(vec![]);
    for c in (0..12).step_by(2) {
        h.cpus[c].rq_cfs.push(1); // every core has one busy thread
    }
    busy(&mut h, 0, 2);
    assert_eq!(place(&mut h, 0, 0), 1, "the idle sibling of the target");
}

#[test]
fn everything_busy_keeps_the_affine_choice() {
    let mut h = host(vec![]);
    for c in 0..12 {
        h.cpus[c].rq_cfs.push(1);
    }
    // Equal loads: 100 * (1024 + 1024) > 112 * 1024, so not affine: stays on prev.
    assert_eq!(place(&mut h, 3, 7), 3);
}

#[test]
fn affinity_is_honoured() {
    let mut h = host(vec![5]);
    busy(&mut h, 5, 1);
    assert_eq!(place(&mut h, 5, 0), 5, "only CPU 5 allowed, even though it is busy");
}

#[test]
fn realtime_tasks_stay_on_their_cpu() {
    let mut h = host(vec![]);
    h.procs[0].rt = Some(50);
    busy(&mut h, 2, 1);
    assert_eq!(place(&mut h, 2, 8), 2);
}

// --- paper 001's policy (mechanisms/goda_rfs.rs) ---

/// Paper 001 Fig. 2 step by step on the i7-980X topology (CPU 2k and 2k+1 are SMT siblings).
/// Every core but core 0 runs a task on its first thread. The reader (pid 0) is blocked in
/// recv(), so its wake-ups are WF_SYNC. CPU 0 alternates between running a task (#1) and
/// only taking the flow's softirq (#2, #4); RFS moves the flow to CPU 1 late (#3).
/// Returns (waker, running CPU, chosen CPU) per wake-up and the migration classes.
fn fig2(goda_rfs: bool) -> (Vec<(usize, usize, usize)>, crate::metrics::migration_class::ClassCounts) {
    let mut h = host(vec![]);
    // Paper 001's rule on, or Linux's placement alone.
    let mut goda = goda_rfs.then(|| GodaRfs::new(h.procs.len()));
    for c in (2..12).step_by(2) {
        busy(&mut h, c, 2);
    }
    h.procs[2].state = ProcState::Runnable;
    h.procs[0].state = ProcState::BlockedRecv;
    h.procs[0].cpu = 0;
    let mut steps = Vec::new();
    // (waking CPU, does CPU 0 run a task at that moment)
    for (waker, cpu0_busy) in [(0, true), (0, false), (1, false), (0, false), (0, false)] {
        h.cpus[0].curr = if cpu0_busy { Some(1) } else { None };
        h.procs[1].state = ProcState::Runnable;
        let prev = h.procs[0].cpu as usize;
        resync(&mut h);
        let base = &h.sched.wake;
        let target = match &goda {
            Some(g) => g.select_task_rq(&h, 0, prev, waker, base).expect("on"),
            None => base.select_task_rq(&h, 0, prev, waker),
        };
        if let Some(g) = &mut goda {
            g.task_woken(0, waker, prev);
        }
        h.stats.record_wakeup(h.now(), 0, waker, prev, target);
        if target != prev {
            if let Some(g) = &mut goda {
                g.task_migrated(0);
            }
            h.procs[0].cpu = target as u32;
        }
        steps.push((waker, prev, target));
    }
    (steps, h.stats.class.counts.clone())
}

#[test]
fn linux_ping_pongs_as_in_fig2() {
    let (steps, c) = fig2(false);
    assert_eq!(steps, vec![(0, 0, 1), (0, 1, 0), (1, 0, 1), (0, 1, 0), (0, 0, 0)]);
    assert_eq!((c.wakeup_affine, c.wakeup_other, c.unintended), (3, 1, 3));
    assert_eq!((c.settle_episodes, c.settle_wakeups_max), (1, 3));
}

#[test]
fn goda_rfs_keeps_the_task_until_the_interrupt_follows() {
    let (steps, c) = fig2(true);
    // #1 moves it to the idle sibling; #2 (the interrupt still on CPU 0) keeps it on CPU 1;
    // #3 comes from CPU 1: they agree, placement is free again and CPU 1 is idle.
    assert_eq!(steps[..3], [(0, 0, 1), (0, 1, 1), (1, 1, 1)]);
    // #4 comes from CPU 0 after they agreed: placement is free again and it moves, a new
    // intended move (the previous wake-up did not move it), which the ban then protects.
    assert_eq!(steps[3..], [(0, 1, 0), (0, 0, 0)]);
    assert_eq!(c.unintended, 0);
    assert_eq!(c.wakeup_affine + c.wakeup_other, 2);
}

// --- Linux 6.x placement (kernel/sched/cfs6.rs) ---

/// Two packages of 4 single-thread cores (CPUs 0-3 and 4-7, one LLC each), `kernel.scheduler =
/// "cfs6"`; the woken task (pid 0) sleeps in recv(), so its wake-ups are WF_SYNC. SIS_UTIL lets
/// `select_idle_cpu` look at `scan` CPUs.
fn host6(scan: u32) -> Host {
    let topo = Topology { packages: 2, cores_per_package: 4, threads_per_core: 1, llc: LlcScope::PerPackage };
    let kernel = KernelConfig { scheduler: Scheduler::Cfs6, imbalance_pct: 117, ..KernelConfig::default() };
    let procs = vec![sink("woken", 1, 0), sink("a", 1, 0), sink("b", 1, 0), sink("c", 1, 0)];
    let mut h = crate::tests::util::host_with(topo, kernel, vec![], procs);
    h.procs[0].state = ProcState::BlockedRecv;
    if let crate::policies::Balancer::Cfs6(b) = &mut h.sched.balancer {
        b.nr_idle_scan = vec![scan; 2];
    }
    h
}

fn place6(h: &mut Host, prev: usize, waker: usize) -> usize {
    resync(h);
    h.sched.wake.select_task_rq(&*h, 0, prev, waker)
}

#[test]
fn cfs6_idle_waker_keeps_the_task_on_its_idle_cache_sharing_prev() {
    let mut h = host6(4);
    // wake_affine_idle: the waking CPU is idle (a softirq on the idle task) and shares the
    // LLC with prev, which is idle too: prev.
    assert_eq!(place6(&mut h, 1, 2), 1);
    busy(&mut h, 1, 1);
    assert_eq!(place6(&mut h, 1, 2), 2, "prev busy: the idle waking CPU");
}

#[test]
fn cfs6_sync_wakeup_from_a_cpu_running_one_task_pulls_across_packages() {
    let mut h = host6(0);
    busy(&mut h, 5, 1); // prev, on the other package, runs something
    busy(&mut h, 0, 2); // the softirq interrupted the only task of CPU 0
                        // wake_affine_idle: sync && nr_running == 1 -> CPU 0; select_idle_sibling: CPU 0 busy,
                        // prev not cache-sharing, no recent CPU, SIS_UTIL scans nothing: CPU 0.
    assert_eq!(place6(&mut h, 5, 0), 0);
    // An idle prev on the other package keeps the task when the waker is idle (no pull).
    let mut h = host6(0);
    assert_eq!(place6(&mut h, 5, 0), 5);
}

#[test]
fn cfs6_busy_prev_takes_an_idle_llc_cpu_within_the_scan_limit() {
    for (scan, want) in [(2, 0), (3, 3)] {
        let mut h = host6(scan);
        busy(&mut h, 0, 1);
        busy(&mut h, 1, 2);
        busy(&mut h, 2, 3);
        // Woken from its own busy CPU: no wake_affine; select_idle_cpu from CPU 1 around the
        // LLC: 1 and 2 are busy, 3 is idle and the third CPU looked at.
        assert_eq!(place6(&mut h, 0, 0), want, "nr_idle_scan {scan}");
    }
}

#[test]
fn cfs6_recently_used_cpu_is_tried_before_the_scan() {
    let mut h = host6(0);
    busy(&mut h, 1, 1);
    busy(&mut h, 2, 2);
    assert_eq!(place6(&mut h, 1, 1), 1, "nothing idle is looked at: stays (recent_used_cpu := 1)");
    // Now prev is 2 and busy, CPU 1 (recent) became idle: it is taken, without a scan.
    h.cpus[1].curr = None;
    assert_eq!(place6(&mut h, 2, 2), 1);
}
