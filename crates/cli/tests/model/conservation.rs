//! On every run of every built-in scenario: each CPU's states sum exactly to elapsed time; every
//! packet offered is delivered to a socket, forwarded (IP routing), consumed by the sending TCP
//! (ACKs) or by connection set-up and tear-down (SYN, handshake ACK, FIN), dropped somewhere, or
//! still in flight; every frame the host sends (forwarded ones included) reaches its
//! destination, is dropped by the device, or is on its way (frames and payload bytes); every
//! byte programs wrote to TCP is acknowledged or still held by it.

use crate::repo;
use hostsim_host::Summary;

pub fn check_conservation(s: &Summary, what: &str) {
    for c in &s.cpus {
        let sum = c.hardirq_ns + c.softirq_ns + c.system_ns + c.user_ns + c.spin_ns + c.idle_ns;
        assert_eq!(sum, s.sim_time_ns, "{what}: CPU {} states sum to {sum}, elapsed {}", c.id, s.sim_time_ns);
    }
    let p = &s.packets;
    let drops: u64 = p.drops.values().sum();
    assert_eq!(
        p.offered,
        p.delivered + p.forwarded + p.acks_consumed + p.ctrl_consumed + drops + p.in_flight,
        "{what}: offered {} != delivered {} + forwarded {} + ACKs consumed {} + SYN/FIN consumed {} + drops {drops} + in flight {}",
        p.offered,
        p.delivered,
        p.forwarded,
        p.acks_consumed,
        p.ctrl_consumed,
        p.in_flight
    );
    assert_eq!(
        p.tx_frames,
        p.tx_delivered + p.tx_ring_drops + p.tx_in_flight,
        "{what}: frames sent {} != delivered {} + device drops {} + in flight {}",
        p.tx_frames,
        p.tx_delivered,
        p.tx_ring_drops,
        p.tx_in_flight
    );
    assert!(p.tx_delivered_bytes <= p.tx_bytes, "{what}: more bytes arrived than were sent");
    if p.tx_in_flight == 0 && p.tx_ring_drops == 0 {
        assert_eq!(p.tx_delivered_bytes, p.tx_bytes, "{what}: bytes sent != bytes delivered");
    }
    let t = &s.tcp;
    assert_eq!(t.written_bytes, t.acked_bytes + t.unacked_bytes, "{what}: TCP bytes written != acked + held");
    assert!(t.sent_bytes >= t.acked_bytes, "{what}: TCP acknowledged bytes it never sent");
    assert_eq!(s.speed_violations, 0, "{what}: a regulated process ran outside its slots");
    let busy: u64 = s.processes.iter().map(|p| p.cpu_ns).sum();
    let process_time: u64 = s.cpus.iter().map(|c| c.system_ns + c.user_ns + c.spin_ns + c.softirq_ns).sum();
    assert!(busy <= process_time, "{what}: processes charged {busy} ns, more than the CPUs ran");
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
    assert_eq!(p.tx_frames, p.tx_delivered + p.tx_ring_drops + p.tx_in_flight, "and is delivered, dropped or in flight");
    // What leaves is bounded by the wire: 1 Gbit/s / (1472 + 62 bytes) per frame.
    let wire_fps = 1e9 / 8.0 / (1472.0 + 62.0);
    assert!(((p.tx_delivered + p.tx_in_flight) as f64) < wire_fps * 0.2 * 1.05 + 64.0 + 100.0);
}
