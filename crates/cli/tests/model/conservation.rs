//! On every run of every built-in scenario: each CPU's states sum exactly to elapsed time; every
//! packet offered is delivered to a socket, forwarded (IP routing), consumed by the sending TCP
//! (ACKs) or by connection set-up and tear-down (SYN, handshake ACK, FIN), dropped somewhere, or
//! still in flight; every frame the host sends (forwarded ones included) reaches its
//! destination, is dropped by the device, or is on its way (frames and payload bytes); every
//! byte programs wrote to TCP is acknowledged or still held by it.

use crate::repo;
use hostsim_host::Summary;

pub fn check_conservation(s: &Summary, what: &str) {
    // The same checks every `hostsim run` and `sweep` makes before writing numbers.
    if let Err(e) = hostsim_cli::conservation(s) {
        panic!("{what}: {e}");
    }
}

#[test]
fn every_builtin_scenario_conserves_time_and_packets() {
    let mut runs = 0;
    for (name, text) in hostsim_scenario::builtin_scenarios() {
        let path = repo().join("scenarios").join(format!("{name}.toml"));
        // One seed per point: conservation does not depend on how many seeds a claim needs.
        let one = [("seeds".to_string(), "1".to_string())];
        let sc = hostsim_scenario::load_str(&path, text, &one).unwrap_or_else(|e| panic!("{e}"));
        for spec in sc.runs().unwrap() {
            let mut cfg = spec.config;
            // Conservation must hold at any instant: cut runs short to keep the test quick.
            cfg.duration_ns = cfg.duration_ns.min(300_000_000);
            cfg.warmup_ns = 0;
            let seed = cfg.seed;
            let s = hostsim_host::run(cfg).summary;
            check_conservation(&s, &format!("{name} {} {:?} (seed {seed})", spec.variant, spec.point));
            runs += 1;
        }
    }
    assert!(runs >= 20, "only {runs} runs checked");
}

#[test]
fn a_full_tx_ring_drops_and_counts_replies() {
    // 150,000 requests/s answered with 1472-byte replies need ~1.85 Gbit/s on a 1 Gbit/s NIC.
    let text = r#"
profile = "ideal-4"
duration_ms = 200
[[nic]]
name = "eth0"
rate_mbps = 1000
tx_ring = 64
[[process]]
name = "echo"
program = "udp_echo"
port = 7
reply_bytes = 1472
[[traffic]]
name = "req"
kind = "cbr"
nic = "eth0"
dst_port = 7
rate_pps = 150000
link_mbps = 10000
"#;
    let s = crate::run(&crate::load_text("txring", text, &[]));
    let p = &s.packets;
    assert!(p.tx_ring_drops > 0, "the TX ring must overflow");
    let replies = crate::process(&s, "echo").tx_packets;
    assert_eq!(replies, p.tx_frames, "every reply goes to the device");
    assert_eq!(
        p.tx_frames,
        p.tx_delivered + p.tx_ring_drops + p.tx_in_flight,
        "and is delivered, dropped or in flight"
    );
    // What leaves is bounded by the wire: 1 Gbit/s / (1472 + 62 bytes) per frame.
    let wire_fps = 1e9 / 8.0 / (1472.0 + 62.0);
    assert!(((p.tx_delivered + p.tx_in_flight) as f64) < wire_fps * 0.2 * 1.05 + 64.0 + 100.0);
}
