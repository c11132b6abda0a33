//! The XDP CPU map on a whole host (`kernel.xdp = "cpumap"`, `net/core/cpumap.rs`): a router of
//! two CPUs whose NAPI poll runs on CPU 0 and redirects every frame to CPU 1's entry.

use crate::config::*;
use crate::tests::util::Host;
use crate::tests::util::{nic, zero_profile};
use hostsim_workload::SourceKind;

fn traffic(toml_text: &str) -> TrafficConfig {
    toml::from_str(toml_text).expect("traffic")
}

/// A two-CPU router, eth0 -> eth1, its NAPI on CPU 0; `xdp` as given; 100,000 pkt/s in 16 flows
/// for 50 ms, paced in 500 us quanta sent at 10 Mpkt/s (faster than CPU 0 takes them, so that
/// its polls take several frames); eth1's TX clean-up throttled to 1,000 interrupts/s.
fn router(xdp: &str) -> Host {
    let topology = Topology { packages: 1, cores_per_package: 2, threads_per_core: 1, llc: LlcScope::PerPackage };
    let mut profile = zero_profile(topology);
    profile.costs.driver_rx_frame_ns = 100;
    profile.costs.ip_forward_ns = 300;
    profile.costs.driver_tx_frame_ns = 100;
    profile.costs.softirq_entry_ns = 100;
    profile.costs.context_switch_ns = 1000;
    profile.mechanisms.xdp_skb_build_ns = 150;
    profile.mechanisms.cpumap_enqueue_ns = 50;
    let kernel = KernelConfig {
        rx_path: RxPath::Napi,
        xdp: Policy::new(xdp),
        cpumap_cpu: 1,
        cpumap_qsize: 2048,
        ..KernelConfig::default()
    };
    let mut nics = vec![nic("eth0", IrqRouting::Fixed), nic("eth1", IrqRouting::Fixed)];
    for n in &mut nics {
        n.rate_mbps = 100_000;
        n.irq_cpus = vec![0];
    }
    nics[1].tx_ring = 8192;
    nics[1].itr_ints_per_s = 1000;
    let load = traffic(
        "name = 'load'\nkind = 'cbr'\nnic = 'eth0'\ndst_port = 9\nrate_pps = 100000.0\nflows = 16\nlink_mbps = 100000\nquantum_us = 500\nburst_pps = 10000000.0",
    );
    let out = traffic("name = 'out'\nkind = 'sink'\nnic = 'eth1'\nlink_mbps = 100000");
    assert_eq!(out.kind, SourceKind::Sink);
    let mut h = Host::new(HostConfig {
        profile,
        kernel,
        nics,
        processes: vec![],
        traffic: vec![load, out],
        routes: vec![RouteConfig { from: Some("eth0".into()), to: "eth1".into() }],
        duration_ns: 50_000_000,
        warmup_ns: 10_000_000,
        seed: 1,
        sample_interval_ns: 10_000_000,
    });
    h.run_with_progress(|_| {}, None);
    h
}

#[test]
fn the_split_forwards_every_frame_with_the_ip_half_in_cpu_1s_kthread() {
    let mut h = router("cpumap");
    let m = h.summary().metrics;
    // Every frame is forwarded (100,000 pkt/s over the window), none dropped anywhere.
    assert!((m["forwarded_pps"] - 100_000.0).abs() < 1_000.0, "forwarded {}", m["forwarded_pps"]);
    let drops: f64 = m.iter().filter(|(k, _)| k.starts_with("drop_")).map(|(_, v)| v).sum();
    assert_eq!(drops, 0.0);
    // CPU 0: the driver half in softirq, nothing in a thread; CPU 1: the IP half in the
    // kthread (system time), no softirq.
    assert!(m["cpu0_softirq_frac"] > 0.0 && m["cpu0_system_frac"] == 0.0);
    assert!(m["cpu1_system_frac"] > 0.0 && m["cpu1_softirq_frac"] == 0.0);
    // Per frame, CPU 0 pays the driver, the program and the enqueue (100 + 0 + 50 ns) plus its
    // share of poll entries (100 ns each); CPU 1 the skb build and the forwarding (150 + 300 +
    // 100 ns) plus its share of wake-ups (a context switch each).
    let per = |f: f64| f * 1e9 / 100_000.0;
    assert!((150.0..200.0).contains(&per(m["cpu0_busy_frac"])), "CPU 0 {} ns per frame", per(m["cpu0_busy_frac"]));
    assert!((550.0..700.0).contains(&per(m["cpu1_busy_frac"])), "CPU 1 {} ns per frame", per(m["cpu1_busy_frac"]));
    // The bulk hand-over: one flush (and at most one wake-up) per NAPI poll or per 8 frames, so
    // far fewer than one per frame.
    let cm = h.net.cpumap.as_ref().expect("cpumap");
    assert!(cm.enqueued >= 4_900 && cm.flushes * 6 < cm.enqueued, "{} flushes for {} frames", cm.flushes, cm.enqueued);
}

#[test]
fn without_the_cpumap_the_same_router_forwards_on_cpu_0_alone() {
    let mut h = router("count");
    let m = h.summary().metrics;
    assert!((m["forwarded_pps"] - 100_000.0).abs() < 1_000.0);
    assert!(h.net.cpumap.is_none());
    assert_eq!(m["cpu1_busy_frac"], 0.0);
    // CPU 0 pays the whole path: driver, skb build, forwarding and transmit (650 ns) per frame,
    // plus its share of poll entries.
    let per0 = m["cpu0_busy_frac"] * 1e9 / 100_000.0;
    assert!((650.0..700.0).contains(&per0), "CPU 0 {per0} ns per frame");
}
