//! The 82599/ixgbe and Linux 3.2 receive features on a host (issue 26): Flow Director ATR
//! (`nic.fdir_atr_sample_rate`), ixgbe's dynamic ITR (`nic.itr_mode = "ixgbe_dynamic"`) and the
//! TCP prequeue (`kernel.tcp_prequeue`), RSC (`nic.rsc_max_desc`) and GRO (`nic.gro`). The rules
//! alone are tested beside their code (`drivers/net/fdir.rs`, `drivers/net/itr.rs`,
//! `drivers/net/rsc.rs`, `net/core/gro.rs`); here, what they do to a receiving host.

use crate::conservation::check_conservation;
use crate::{load_text, process, run};
use proptest::prelude::*;

/// `flows` congestion-controlled TCP senders into one reader each on the i7-980X (12 CPUs,
/// 12 queues, MSI-X queue i -> CPU i, RFS), with the features given as TOML lines.
fn host(flows: u32, kernel: &str, nic: &str, ms: u32) -> String {
    format!(
        r#"
profile = "core-i7-980x"
duration_ms = {ms}
warmup_ms = 50
[kernel]
rx_path = "napi"
rps = true
rfs = true
rfs_entries = 32768
tcp_receiver = "linux"
{kernel}
[[nic]]
name = "eth0"
rate_mbps = 10000
queues = 12
irq_routing = "msix"
rx_ring = 512
switch_buffer_bytes = 2325456
{nic}
[[process]]
name = "rcv"
program = "tcp_stream"
instances = {flows}
port = 5001
read_bytes = 8192
[[traffic]]
name = "snd"
kind = "tcp_window"
nic = "eth0"
dst_port = 5001
dst_port_per_flow = true
flows = {flows}
link_mbps = 100000
payload_bytes = 1448
tcp_cc = "cubic"
window_bytes = 4194304
"#
    )
}

fn rx_bytes(s: &hostsim_host::Summary, flows: u32) -> u64 {
    (0..flows).map(|i| process(s, &format!("rcv-{i}")).rx_bytes).sum()
}

/// ATR: a flow's receive follows the CPU that transmits its ACKs. Under RFS the ACKs leave from
/// the reader's CPU (where its protocol work runs), so with the filters the NIC delivers each
/// flow on the reader's own queue and RFS has nothing left to steer to another CPU: the
/// inter-processor interrupts RFS sends fall by a large factor. Without ATR (RSS alone) most
/// flows' queues are another CPU's.
#[test]
fn atr_puts_each_flow_on_its_readers_queue() {
    let without = run(&load_text("atr-off", &host(48, "", "", 300), &[]));
    let with = run(&load_text("atr-on", &host(48, "", "fdir_atr_sample_rate = 20", 300), &[]));
    check_conservation(&with, "atr-on");
    let fd = with.packets.fdir.expect("ATR on: its summary");
    assert!(fd.samples > 0 && fd.filters > 0 && fd.filters <= 48, "{fd:?}");
    assert!(without.packets.fdir.is_none());
    let (a, b) = (without.packets.rps_ipis as f64, with.packets.rps_ipis as f64);
    assert!(b < 0.5 * a, "RFS IPIs: {a} without ATR, {b} with it (seed 1)");
    // Bytes are conserved whatever the queue: every byte offered reaches a reader or is counted.
    let rx = rx_bytes(&with, 48) as f64 * 8.0 / 0.3 / 1e6;
    assert!(rx > 5000.0, "with ATR the readers get {rx:.0} Mbit/s (seed 1)");
}

/// ixgbe's dynamic ITR changes each vector's rate: the host's interrupt rate differs from the
/// fixed 20,000/s start value, and everything still arrives.
#[test]
fn dynamic_itr_runs_and_conserves_packets() {
    let s = run(&load_text("itr-dyn", &host(24, "", "itr_mode = \"ixgbe_dynamic\"", 200), &[]));
    check_conservation(&s, "itr-dyn");
    assert!(rx_bytes(&s, 24) > 0);
}

/// GRO: segments are merged into aggregates, nothing is lost or reordered, and the protocol
/// work runs once per aggregate, so the receiver sends fewer ACKs per byte received (one per
/// aggregate of two or more segments instead of one per two segments). How many fewer depends
/// on how many segments of a flow a poll finds in its ring: here (24 flows on 12 queues, the
/// CPUs mostly idle) 8% fewer frames per byte (seed 1, 200 ms), so only the direction is asserted.
#[test]
fn gro_merges_conserves_and_acks_once_per_aggregate() {
    let off = run(&load_text("gro-off", &host(24, "", "", 200), &[]));
    let on = run(&load_text("gro-on", &host(24, "", "gro = true", 200), &[]));
    check_conservation(&on, "gro-on");
    let g = on.packets.gro_rsc.expect("GRO on: its summary");
    assert!(g.gro_merged > 0 && g.gro_aggregates > 0 && g.rsc_joined == 0, "{g:?}");
    assert!(off.packets.gro_rsc.is_none());
    assert_eq!(on.packets.reordered, 0);
    let per_byte = |s: &hostsim_host::Summary| s.packets.tx_frames as f64 / rx_bytes(s, 24).max(1) as f64;
    assert!(
        per_byte(&on) < per_byte(&off),
        "frames sent per byte received: {} with GRO, {} without (seed 1)",
        per_byte(&on),
        per_byte(&off)
    );
}

/// RSC: frames join aggregates in the NIC, nothing is lost or reordered.
#[test]
fn rsc_joins_frames_and_conserves() {
    let on = run(&load_text("rsc-on", &host(24, "", "rsc_max_desc = 16\ngro = true", 200), &[]));
    check_conservation(&on, "rsc-on");
    let g = on.packets.gro_rsc.expect("RSC on: its summary");
    assert!(g.rsc_joined > 0, "{g:?}");
    assert_eq!(on.packets.reordered, 0);
    assert!(rx_bytes(&on, 24) > 0);
}

/// The prequeue neither gains nor loses bytes, and keeps every flow in order: with a switch
/// buffer deep enough that slow start loses nothing (16 MB, as goda-rfs), 5 flows read 1,448
/// bytes at a time get the same bytes with and without it (within 10%), and no segment is
/// retransmitted. Before issue 26's fix a segment whose softirq unit began while its reader was
/// in recvmsg was prequeued even if the reader had left by the unit's end; it then waited for the
/// reader's next recvmsg while later segments went straight to the receive queue, out of order:
/// 223 spurious fast retransmits (seed 1, 150 ms) and flows of 3 to 82 MB.
#[test]
fn prequeue_keeps_flows_in_order_and_bytes_equal() {
    let text = |kernel: &str| {
        host(5, kernel, "", 150)
            .replace("read_bytes = 8192", "read_bytes = 1448")
            .replace("switch_buffer_bytes = 2325456", "switch_buffer_bytes = 16777216")
    };
    let off = run(&load_text("pq-off-lossless", &text(""), &[]));
    let on = run(&load_text("pq-on-lossless", &text("tcp_prequeue = true"), &[]));
    check_conservation(&on, "prequeue, lossless");
    assert!(on.packets.tcp_prequeued.unwrap_or(0) > 0);
    for (s, what) in [(&off, "off"), (&on, "on")] {
        assert_eq!(s.traffic[0].retransmits, 0, "prequeue {what}: retransmits without loss (seed 1)");
        assert_eq!(s.packets.reordered, 0);
    }
    let (a, b) = (rx_bytes(&off, 5) as f64, rx_bytes(&on, 5) as f64);
    assert!((b / a - 1.0).abs() < 0.1, "readers' bytes: {a} without the prequeue, {b} with it (seed 1)");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// Prequeue's rule: a reader blocked in recvmsg is woken once per batch (the first queued
    /// segment), not per segment, and does the batch's TCP work itself; nothing is lost or
    /// reordered on the way. With the prequeue, segments are prequeued, wake-ups never exceed
    /// the segments delivered, and the readers get as many bytes as without it (within the
    /// noise of a short run: 10%).
    #[test]
    fn prequeue_wakes_once_per_batch_and_loses_nothing(flows in 4u32..40, read in prop::sample::select(vec![1448u32, 8192, 65536])) {
        let read_line = |t: String| t.replace("read_bytes = 8192", &format!("read_bytes = {read}"));
        let off = run(&load_text("pq-off", &read_line(host(flows, "", "", 150)), &[]));
        let on = run(&load_text("pq-on", &read_line(host(flows, "tcp_prequeue = true", "", 150)), &[]));
        check_conservation(&on, "prequeue");
        let queued = on.packets.tcp_prequeued.expect("prequeue on: its count");
        prop_assert!(queued > 0, "no segment was prequeued ({} flows, reads of {})", flows, read);
        prop_assert!(off.packets.tcp_prequeued.is_none());
        prop_assert_eq!(on.packets.reordered, 0);
        let wake = on.metrics["wakeups_per_s"] * 0.1;
        let delivered: u64 = (0..flows).map(|i| process(&on, &format!("rcv-{i}")).rx_packets).sum();
        prop_assert!(wake <= delivered as f64 + 1.0, "{} wake-ups for {} segments", wake, delivered);
        prop_assert!(rx_bytes(&on, flows) > 0 && rx_bytes(&off, flows) > 0);
        // Not asserted here: equal bytes with and without the prequeue. With this host's 2.3 MB
        // switch buffer the CUBIC flows overflow it in slow start (~40 ms); a flow whose NewReno
        // recovery fails (no SACK: a lost retransmission) waits for an RTO of at least 200 ms,
        // past the end of a 150 ms run, and which flows do depends on when the ACKs leave, which
        // the prequeue changes. (5 flows, 1,448-byte reads, seed 1: 56 MB either way; before
        // issue 26's prequeue fix 56 MB without it and 177 MB with it, its spurious fast
        // retransmits having kept two flows out of the RTO.) `prequeue_keeps_flows_in_order_and_
        // bytes_equal` asserts equal bytes without loss.
    }
}
