//! Paced `cbr` sources as the host builds them from a scenario's `[[traffic]]` (`wire::Wire`):
//! `burst_pps` gives a quantum's frames a fixed spacing, `spread` one that follows the rate, as
//! the live generator's spread streams (crates/live/src/gen.rs `Stream::spread`).

use crate::config::*;
use crate::tests::util::Host;
use crate::tests::util::{nic, zero_profile};

fn source_offsets(traffic_toml: &str, frames: u64) -> Vec<u64> {
    let topology = Topology { packages: 1, cores_per_package: 1, threads_per_core: 1, llc: LlcScope::PerPackage };
    let t: TrafficConfig = toml::from_str(traffic_toml).expect("traffic");
    let h = Host::new(HostConfig {
        profile: zero_profile(topology),
        kernel: KernelConfig::default(),
        nics: vec![nic("eth0", IrqRouting::Fixed)],
        processes: vec![],
        traffic: vec![t],
        routes: vec![],
        duration_ns: 1,
        warmup_ns: 0,
        seed: 1,
        sample_interval_ns: 1,
    });
    (0..frames).map(|k| h.wire.srcs[0].src.cbr_offset_ns(k)).collect()
}

#[test]
fn a_spread_quantum_leaves_evenly_over_its_share_at_any_rate() {
    let base = "name = 'f'\nkind = 'cbr'\nnic = 'eth0'\ndst_port = 9\nlink_mbps = 100000\nquantum_us = 1000\n";
    // 1,000,000 pkt/s spread over 3/4 of 1 ms quanta: 1,000 frames a quantum, 750 ns apart from
    // its start, the last at 749,250 ns; the next quantum starts at 1 ms.
    let t = source_offsets(&format!("{base}rate_pps = 1000000.0\nspread = 0.75"), 1001);
    assert_eq!(&t[..3], &[0, 750, 1500]);
    assert_eq!(t[999], 749_250);
    assert_eq!(t[1000], 1_000_000);
    // At 2,000,000 pkt/s the spacing halves (a fixed burst_pps would keep it).
    let t = source_offsets(&format!("{base}rate_pps = 2000000.0\nspread = 0.75"), 2001);
    assert_eq!(&t[..3], &[0, 375, 750]);
    assert_eq!(t[1999], 749_625);
    assert_eq!(t[2000], 1_000_000);
    let t = source_offsets(&format!("{base}rate_pps = 2000000.0\nburst_pps = 2500000.0"), 3);
    assert_eq!(t, [0, 400, 800]);
}
