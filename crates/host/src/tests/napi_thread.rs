//! Threaded NAPI on a whole host (`kernel.napi_threaded`, `net/core/napi_thread.rs`) and the
//! suppression agent that moves or lowers its kthread (`kernel.napi_suppress`,
//! `mechanisms/ozaki_pbq/napi_suppress.rs`): two CPUs, one NIC whose interrupts go to CPU 0.

use crate::config::*;
use crate::kernel::task::ProcState;
use crate::tests::util::Host;
use crate::tests::util::{nic, sink, zero_profile};
use hostsim_workload::ProgramKind;
use std::collections::BTreeMap;

/// Per frame: the driver 1,000 ns, IP/UDP 1,000 ns (CPU 0's capacity in the kthread or in
/// NET_RX: ~500,000 pkt/s); interrupt entry 500 ns, context switch 1,000 ns, recv 500 ns.
fn profile() -> Profile {
    let topology = Topology { packages: 1, cores_per_package: 2, threads_per_core: 1, llc: LlcScope::PerPackage };
    let mut p = zero_profile(topology);
    p.costs.driver_rx_frame_ns = 1000;
    p.costs.ip_udp_rx_ns = 1000;
    p.costs.hardirq_entry_ns = 500;
    p.costs.softirq_entry_ns = 100;
    p.costs.context_switch_ns = 1000;
    p.costs.recv_ns = 500;
    p
}

fn flood(rate_pps: f64, stop_ms: Option<u64>) -> TrafficConfig {
    let stop = stop_ms.map_or(String::new(), |s| format!("\nstop_ms = {s}"));
    toml::from_str(&format!(
        "name = 'flood'\nkind = 'cbr'\nnic = 'eth0'\ndst_port = 9\nrate_pps = {rate_pps:.1}\nlink_mbps = 100000{stop}"
    ))
    .expect("traffic")
}

/// A host with `kernel`, eth0's interrupts fixed on CPU 0, a sink `rx` on port 9 pinned to
/// `sink_cpu` (nice `sink_nice`, `recv_ns` + `sink_work_ns` per datagram) and, if `hog`, a
/// nice −19 spinner pinned to CPU 0; `traffic` into port 9; run for `ms`.
fn run(
    kernel: KernelConfig,
    sink_cpu: u32,
    sink_nice: i8,
    sink_work_ns: u64,
    hog: bool,
    traffic: TrafficConfig,
    ms: u64,
) -> Host {
    let mut eth0 = nic("eth0", IrqRouting::Fixed);
    eth0.rate_mbps = 100_000;
    eth0.irq_cpus = vec![0];
    let mut rx = sink("rx", 9, sink_nice);
    rx.cpus = vec![sink_cpu];
    rx.work_ns = sink_work_ns;
    let mut processes = vec![rx];
    if hog {
        let mut h = sink("hog", 0, -19);
        h.program = ProgramKind::Spin;
        h.port = None;
        h.work_ns = 100_000;
        h.cpus = vec![0];
        processes.push(h);
    }
    let mut h = Host::new(HostConfig {
        profile: profile(),
        kernel,
        nics: vec![eth0],
        processes,
        traffic: vec![traffic],
        routes: vec![],
        duration_ns: ms * 1_000_000,
        warmup_ns: 10_000_000,
        seed: 1,
        sample_interval_ns: 10_000_000,
    });
    h.run_with_progress(|_| {}, None);
    h
}

fn threaded() -> KernelConfig {
    KernelConfig { rx_path: RxPath::Napi, napi_threaded: true, hz: 250, ..KernelConfig::default() }
}

fn kthread(h: &Host) -> usize {
    h.procs.iter().position(|p| p.name == "napi/eth0-0").expect("the kthread")
}

#[test]
fn the_poll_runs_in_the_kthread_as_system_time_and_it_sleeps_when_the_ring_is_empty() {
    // 100,000 pkt/s for 60 ms of a 100 ms run, read on CPU 1.
    let mut h = run(threaded(), 1, 0, 0, false, flood(100_000.0, Some(60)), 100);
    let pid = kthread(&h);
    assert_eq!(h.dev.queues[0].napi_thread as usize, pid);
    let m = h.summary().metrics;
    // Every frame of the window (10..60 ms: 5,000) reached the sink, none was dropped.
    assert!((m["rx_rx_pps"] * 0.09 - 5000.0).abs() < 20.0, "rx {}", m["rx_rx_pps"]);
    let drops: f64 = m.iter().filter(|(k, _)| k.starts_with("drop_")).map(|(_, v)| v).sum();
    assert_eq!(drops, 0.0);
    // CPU 0: no NET_RX at all; the driver and IP/UDP (2,000 ns a frame) as the kthread's system
    // time, plus a hard IRQ and a switch per wake-up.
    assert_eq!(m["cpu0_softirq_frac"], 0.0);
    let per = m["cpu0_system_frac"] * 0.09e9 / 5000.0;
    assert!((2000.0..3600.0).contains(&per), "CPU 0 system {per} ns per frame");
    assert!(h.procs[pid].cpu_ns > 5000 * 2000, "the kthread's own CPU time: {}", h.procs[pid].cpu_ns);
    // The traffic stopped 40 ms before the end: the ring is empty, the kthread asleep, the
    // queue's interrupt back on.
    assert_eq!(h.procs[pid].state, ProcState::Sleeping);
    assert!(h.dev.queues[0].ring.is_empty() && h.dev.queues[0].irq_enabled && !h.dev.queues[0].napi_scheduled);
}

#[test]
fn without_it_the_same_poll_runs_in_net_rx() {
    let mut h =
        run(KernelConfig { napi_threaded: false, ..threaded() }, 1, 0, 0, false, flood(100_000.0, Some(60)), 100);
    assert!(h.procs.iter().all(|p| !p.name.starts_with("napi/")));
    assert_eq!(h.dev.queues[0].napi_thread, crate::types::NONE);
    let m = h.summary().metrics;
    assert!(
        m["cpu0_softirq_frac"] > 0.08 && m["cpu0_system_frac"] == 0.0,
        "{} {}",
        m["cpu0_softirq_frac"],
        m["cpu0_system_frac"]
    );
}

#[test]
fn the_fifo_kthread_preempts_a_nice_minus_19_spinner_and_takes_the_cpu_under_overload() {
    // 1,000,000 pkt/s against CPU 0's ~500,000: the FIFO kthread never leaves CPU 0 while its
    // ring has frames, so the spinner (CFS, nice -19) gets almost nothing.
    let mut h = run(threaded(), 1, 0, 0, true, flood(1_000_000.0, None), 60);
    let m = h.summary().metrics;
    assert!(m["hog_cpu_frac"] < 0.02, "the spinner got {}", m["hog_cpu_frac"]);
    assert!(m["cpu0_system_frac"] > 0.97, "the kthread's share {}", m["cpu0_system_frac"]);
    assert!(m["drop_nic_ring_pps"] > 400_000.0);
    // In NET_RX the same overload hands over to ksoftirqd (nice 0) after 2 ms, which the
    // nice -19 spinner outweighs: the spinner gets most of CPU 0.
    let mut h = run(KernelConfig { napi_threaded: false, ..threaded() }, 1, 0, 0, true, flood(1_000_000.0, None), 60);
    let m = h.summary().metrics;
    assert!(m["hog_cpu_frac"] > 0.5, "the spinner got {}", m["hog_cpu_frac"]);
}

#[test]
fn a_light_flood_is_taken_in_at_once_despite_the_spinner() {
    // 10,000 pkt/s: each frame wakes the kthread, which preempts the spinner at once, so the
    // 256-frame ring never fills.
    let mut h = run(threaded(), 1, 0, 0, true, flood(10_000.0, None), 60);
    let m = h.summary().metrics;
    assert_eq!(m["drop_nic_ring_pps"], 0.0);
    assert!((m["rx_rx_pps"] - 10_000.0).abs() < 200.0, "rx {}", m["rx_rx_pps"]);
    assert!(m["hog_cpu_frac"] > 0.9);
}

/// The suppression agent on a host where its rule holds while the flood lasts: the detector's
/// capacity is 1,000 pkt/s (so 200,000 pkt/s is high load at every poll) and the nice -19 reader
/// on CPU 0 spends 20 us per datagram, so its socket always holds data. The flood stops at 60 ms.
fn suppressed(knob: &str, ms: u64) -> Host {
    let k = KernelConfig { xdp: Policy::new("detect"), ..threaded() }
        .with("xdp_capacity_pps", 1000.0)
        .with("napi_suppress", knob);
    run(k, 0, -19, 20_000, false, flood(200_000.0, Some(60)), ms)
}

#[test]
fn affinity_moves_the_kthread_off_the_servers_cpu_and_back() {
    // Stopped at 50 ms, in the middle of the flood: suppressed, the kthread is on CPU 1.
    let mut h = suppressed("affinity", 50);
    let pid = kthread(&h);
    assert_eq!((h.procs[pid].allowed, h.procs[pid].cpu), (0b10, 1));
    assert_eq!(h.procs[pid].rt, Some(50), "affinity leaves the class alone");
    let m = h.summary().metrics;
    assert!(m["supp_frac"] > 0.9, "suppressed {} of the window", m["supp_frac"]);
    assert!(m["cpu1_system_frac"] > 0.2, "the receive work on CPU 1: {}", m["cpu1_system_frac"]);
    assert!(m["high_load_frac"] > 0.7, "high load {}", m["high_load_frac"]);
    // Run past the flood: the reader drains its socket, the rule fails, the kthread goes home.
    let mut h = suppressed("affinity", 400);
    let pid = kthread(&h);
    assert_eq!((h.procs[pid].allowed, h.procs[pid].cpu), (0b01, 0));
    let supp = &h.mech.ozaki_pbq.napi.as_ref().expect("the agent").supp;
    assert!(!supp.on && supp.changes >= 2);
    let m = h.summary().metrics;
    assert!(m["supp_changes_per_s"] > 0.0 && m["supp_frac"] < 0.5, "{m:?}");
}

#[test]
fn priority_drops_the_kthread_to_sched_other_and_back() {
    let h = suppressed("priority", 50);
    let pid = kthread(&h);
    assert_eq!(h.procs[pid].rt, None, "SCHED_OTHER while suppressed");
    assert_eq!((h.procs[pid].nice, h.procs[pid].cpu), (0, 0), "nice 0, on its own CPU");
    let h = suppressed("priority", 400);
    assert_eq!(h.procs[kthread(&h)].rt, Some(50), "back to SCHED_FIFO 50");
}

#[test]
fn without_the_agent_nothing_moves() {
    let k = KernelConfig { xdp: Policy::new("detect"), ..threaded() }.with("xdp_capacity_pps", 1000.0);
    let mut h = run(k, 0, -19, 20_000, false, flood(200_000.0, Some(60)), 50);
    let pid = kthread(&h);
    assert_eq!((h.procs[pid].allowed, h.procs[pid].cpu, h.procs[pid].rt), (0b01, 0, Some(50)));
    let m = h.summary().metrics;
    assert!(!m.contains_key("supp_frac"));
    assert_eq!(m["cpu1_system_frac"], 0.0);
}

#[test]
fn suppressed_runs_are_deterministic() {
    let a: BTreeMap<String, f64> = suppressed("affinity", 120).summary().metrics;
    let b: BTreeMap<String, f64> = suppressed("affinity", 120).summary().metrics;
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let c = suppressed("priority", 120).summary().metrics;
    let d = suppressed("priority", 120).summary().metrics;
    assert_eq!(format!("{c:?}"), format!("{d:?}"));
}

/// A flood the kthread cannot keep up with (1,000,000 pkt/s against ~500,000): it never sleeps,
/// so every change the agent makes finds it running (or queued) on its CPU.
fn suppressed_overload(knob: &str) -> Host {
    let k = KernelConfig { xdp: Policy::new("detect"), ..threaded() }
        .with("xdp_capacity_pps", 1000.0)
        .with("napi_suppress", knob);
    run(k, 0, -19, 20_000, false, flood(1_000_000.0, None), 60)
}

#[test]
fn a_running_kthread_leaves_its_cpu_when_moved() {
    let mut h = suppressed_overload("affinity");
    let pid = kthread(&h);
    assert_eq!((h.procs[pid].allowed, h.procs[pid].cpu), (0b10, 1));
    let m = h.summary().metrics;
    // It left CPU 0 although it never slept: the receive work ran on CPU 1, and the reader got
    // CPU 0 back.
    assert!(m["cpu1_system_frac"] > 0.5, "CPU 1 system {}", m["cpu1_system_frac"]);
    assert!(m["rx_cpu_frac"] > 0.3, "the reader's CPU {}", m["rx_cpu_frac"]);
    // Without the agent the reader (fair class) gets nothing against the FIFO kthread.
    let k = KernelConfig { xdp: Policy::new("detect"), ..threaded() }.with("xdp_capacity_pps", 1000.0);
    let m = run(k, 0, -19, 20_000, false, flood(1_000_000.0, None), 60).summary().metrics;
    assert!(m["rx_cpu_frac"] < 0.05, "the reader's CPU {}", m["rx_cpu_frac"]);
}

#[test]
fn a_running_kthread_dropped_to_sched_other_yields_to_the_nice_minus_19_reader() {
    let mut h = suppressed_overload("priority");
    let pid = kthread(&h);
    let m = h.summary().metrics;
    assert!(m["supp_frac"] > 0.5, "suppressed {}", m["supp_frac"]);
    assert_eq!(h.procs[pid].cpu, 0, "priority keeps it on its CPU");
    // The reader (nice -19) now outweighs the kthread (nice 0) on CPU 0.
    assert!(m["rx_cpu_frac"] > 0.3, "the reader's CPU {}", m["rx_cpu_frac"]);
}

#[test]
fn a_queued_kthread_moves_to_its_new_cpus_run_queue() {
    // CPU 0 runs a SCHED_FIFO 60 spinner, so the woken kthread (FIFO 50) waits in CPU 0's queue.
    let mut spin = sink("rt", 0, 0);
    spin.program = ProgramKind::Spin;
    spin.port = None;
    spin.work_ns = 100_000;
    spin.cpus = vec![0];
    spin.sched = SchedPolicy::Fifo;
    spin.rt_priority = 60;
    let mut eth0 = nic("eth0", IrqRouting::Fixed);
    eth0.irq_cpus = vec![0];
    let mut h = crate::tests::util::host(2, threaded(), vec![eth0], vec![spin]);
    let pid = kthread(&h) as crate::types::Pid;
    h.proc_start(0);
    assert_eq!(h.cpus[0].curr, Some(0));
    h.wake_up(pid, 0, true);
    assert!(h.cpus[0].rq_rt.contains(&pid), "queued behind the FIFO 60 spinner");
    h.napi_kthread_set_cpu(pid, 1);
    assert!(!h.cpus[0].rq_rt.contains(&pid));
    // Queued on CPU 1, which was idle: it ran at once, found its ring empty and slept there.
    assert_eq!((h.procs[pid as usize].cpu, h.procs[pid as usize].allowed), (1, 0b10));
    assert_eq!(h.procs[pid as usize].state, ProcState::Sleeping);
    assert_eq!(h.procs[pid as usize].last_ran, Some(1));
}
