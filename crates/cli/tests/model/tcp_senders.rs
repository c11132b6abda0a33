//! External TCP senders (`tcp_window` with `tcp_cc`) on the host: the shared `hostsim-tcp`
//! sender with congestion control, against a host that advertises Linux 3.2's receive window
//! (`kernel.tcp_receiver = "linux"`). On the ideal machine (zero CPU costs) unless a cost is
//! the point. The sender's own dynamics against the textbook are in crates/tcp/tests.

use crate::conservation::check_conservation;
use crate::{load_text, process, run};

/// `flows` senders on one 1 Gbit/s client link into a 100 Mbit/s port with a `switch_kb` KB
/// switch buffer: the port is the bottleneck. Each flow has its own reader.
fn senders(flows: u32, cc: &str, window: &str, switch_kb: u32, reader: &str) -> String {
    format!(
        r#"
profile = "ideal-4"
duration_ms = 4000
warmup_ms = 1000
[kernel]
rx_path = "napi"
tcp_receiver = "{window}"
[[nic]]
name = "eth0"
rate_mbps = 100
switch_buffer_bytes = {switch}
[[process]]
name = "rcv"
program = "tcp_stream"
instances = {flows}
port = 6000
read_bytes = 65536
{reader}
[[traffic]]
name = "snd"
kind = "tcp_window"
nic = "eth0"
dst_port = 6000
dst_port_per_flow = true
flows = {flows}
link_mbps = 1000
payload_bytes = 1448
tcp_cc = "{cc}"
window_bytes = 4194304
"#,
        switch = switch_kb * 1024
    )
}

fn rx_mbps(s: &hostsim_host::Summary, flows: u32) -> Vec<f64> {
    (0..flows)
        .map(|i| {
            let name = if flows > 1 { format!("rcv-{i}") } else { "rcv".into() };
            process(s, &name).rx_bytes as f64 * 8.0 / 4.0 / 1e6
        })
        .collect()
}

#[test]
fn congestion_controlled_senders_fill_the_bottleneck_and_share_it() {
    for cc in ["reno", "cubic"] {
        let s = run(&load_text("tcp-senders", &senders(4, cc, "linux", 64, ""), &[]));
        let x = rx_mbps(&s, 4);
        let total: f64 = x.iter().sum();
        // 100 Mbit/s of frames carry 1448/1538 of it as payload: ~94 Mbit/s. Over 4 s with the
        // start-up, at least 85.
        assert!(total > 85.0, "{cc}: {total:.1} Mbit/s of payload ({x:?})");
        // The switch drops when the windows outgrow its buffer, and the senders recover.
        assert!(s.packets.drops["switch"] > 0, "{cc}: no loss at the bottleneck: congestion control never tested");
        let jain = total.powi(2) / (4.0 * x.iter().map(|v| v * v).sum::<f64>());
        assert!(jain > 0.9, "{cc}: Jain's index {jain:.3} over {x:?}");
        check_conservation(&s, &format!("tcp-senders {cc}"));
    }
}

#[test]
fn the_advertised_window_keeps_a_slow_reader_from_overflowing_its_buffer() {
    // One reader taking 64 KB every 20 ms (~26 Mbit/s) behind a 100 Mbit/s port: with Linux's
    // window the sender is held to the reader's pace and the socket never drops; with no window
    // modelled the sender's congestion window outgrows the buffer and segments die there.
    let slow = "work_ns = 20000000\nrcvbuf_bytes = 131072";
    let with = run(&load_text("tcp-window-slow", &senders(1, "cubic", "linux", 1024, slow), &[]));
    assert_eq!(with.packets.drops["socket"], 0, "the window let the socket overflow");
    let got = rx_mbps(&with, 1)[0];
    assert!(got > 20.0 && got < 30.0, "the reader's pace: {got:.1} Mbit/s");
    let without = run(&load_text("tcp-window-none", &senders(1, "cubic", "simple", 1024, slow), &[]));
    assert!(
        without.packets.drops["socket"] > 0,
        "without a window the buffer never overflowed: the test shows nothing"
    );
    check_conservation(&with, "tcp-window-slow");
}

#[test]
fn autotuning_grows_the_buffer_for_a_fast_reader() {
    // A fast reader on a 100 Mbit/s port with 5 ms of delay each way (bandwidth x delay ~125 KB):
    // the initial 87,380-byte buffer (64 KB of window) cannot fill the pipe, so autotuning raises
    // it, and the flow reaches the line rate; a buffer set by SO_RCVBUF stays and limits it.
    let text = |reader: &str| {
        senders(1, "cubic", "linux", 4096, reader).replace("link_mbps = 1000", "link_mbps = 1000\nlink_delay_us = 5000")
    };
    let tuned = run(&load_text("tcp-autotune", &text(""), &[]));
    let locked = run(&load_text("tcp-autotune-locked", &text("rcvbuf_bytes = 87380"), &[]));
    let (t, l) = (rx_mbps(&tuned, 1)[0], rx_mbps(&locked, 1)[0]);
    assert!(t > 85.0, "autotuned: {t:.1} Mbit/s");
    // 65,535 bytes of window per 10 ms round trip: ~52 Mbit/s at most.
    assert!(l < 60.0 && l < t * 0.8, "locked buffer {l:.1} vs autotuned {t:.1} Mbit/s");
}
