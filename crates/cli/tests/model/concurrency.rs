//! Kernel concurrency models (`kernel.concurrency`, paper 003):
//! - under the big kernel lock at most one CPU is ever in kernel context (property test over
//!   random hosts and loads, checked on the CPU trace; a negative control with fine-grained SMP
//!   must find two CPUs in the kernel at once, which shows the checker can fail);
//! - the functional split takes no lock and sends no IPI per packet: two splices per period per
//!   CPU, one lock acquisition per splice, whatever the rate;
//! - a uniprocessor kernel on a 2-CPU profile is exactly a 1-CPU profile of the same costs.

use crate::{load_text, run};
use hostsim_host::Summary;
use proptest::prelude::*;

/// A router-and-server host: UDP forwarded from eth0 to eth1, plus `sinks` local UDP readers
/// (system calls and user work) and `hogs` CPU hogs, on `online` CPUs of a 4-CPU profile.
fn host(concurrency: &str, online: u32, rate: u32, sinks: u32, hogs: u32, seed: u64) -> String {
    let mut s = format!(
        r#"
profile = "pentium3-xeon-500x4"
duration_ms = 60
seed = {seed}
[kernel]
concurrency = "{concurrency}"
online_cpus = {online}
rx_path = "legacy"
hz = 1000
[[nic]]
name = "eth0"
rate_mbps = 1000
irq_routing = "balance_irq"
balance_irq_interval_us = 0
[[nic]]
name = "eth1"
rate_mbps = 1000
irq_routing = "balance_irq"
balance_irq_interval_us = 0
[[traffic]]
name = "fwd"
kind = "poisson"
nic = "eth0"
dst_port = 9
rate_pps = {rate}
[[traffic]]
name = "out"
kind = "sink"
nic = "eth1"
[[route]]
from = "eth0"
to = "eth1"
"#
    );
    for k in 0..sinks {
        s.push_str(&format!(
            "[[process]]\nname = \"r{k}\"\nprogram = \"udp_sink\"\nport = {p}\nwork_ns = 20000\n\
             [[traffic]]\nname = \"t{k}\"\nkind = \"poisson\"\nnic = \"eth0\"\ndst_port = {p}\nrate_pps = {r}\n",
            p = 5000 + k,
            r = rate / 4 + 1000,
        ));
    }
    for h in 0..hogs {
        s.push_str(&format!("[[process]]\nname = \"hog{h}\"\nprogram = \"spin\"\nwork_ns = 300000\n"));
    }
    s
}

/// The latest instant at which two CPUs were both in kernel context (hard IRQ, softirq, system),
/// from the run's trace, if any.
fn kernel_overlap(text: &str) -> Option<f64> {
    let sc = load_text("concurrency", text, &[]);
    let cfg = sc.base_config().clone();
    // Nested unit slices (category = CPU state): a unit inside another on one CPU is still that
    // CPU's context, and the check below compares different CPUs only.
    let (_, _, json) = hostsim_cli::run_traced_json(cfg).expect("traced run");
    let trace: serde_json::Value = serde_json::from_str(&json).expect("trace JSON");
    // Per CPU, the innermost open slice says what the CPU is doing (a spin nests in the unit
    // that waits for the lock): flatten each CPU's nested slices into such segments. Times are
    // whole ns (the trace writes ts and dur in us with ns decimals): the end of a slice computed
    // as ts + dur in floating point can fall a rounding error before the begin of the slice that
    // follows it, which would show a zero-length piece of the enclosing unit between them. Two
    // slices with the same begin and end (a unit that spun for all its time) nest by file order:
    // a slice is written when it ends, so a child comes before its parent.
    let ns = |v: &serde_json::Value| (v.as_f64().expect("a time in us") * 1000.0).round() as i64;
    let mut per_cpu: std::collections::BTreeMap<u64, Vec<(i64, i64, usize, String)>> = Default::default();
    for (i, e) in trace["traceEvents"].as_array().expect("events").iter().enumerate().filter(|(_, e)| e["ph"] == "X") {
        let ts = ns(&e["ts"]);
        let seg = (ts, ts + ns(&e["dur"]), i, e["cat"].as_str().expect("cat").to_string());
        per_cpu.entry(e["tid"].as_u64().expect("tid")).or_default().push(seg);
    }
    let mut spans: Vec<(i64, i64, u64)> = Vec::new();
    for (cpu, mut sl) in per_cpu {
        // Outermost first: by begin, then the longer, then the later written.
        sl.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
        let sl = sl.into_iter().map(|(a, b, _, c)| (a, b, c));
        let mut flat: Vec<(i64, i64, String)> = Vec::new();
        let mut stack: Vec<(i64, String)> = Vec::new();
        let mut t = i64::MIN;
        let close = |stack: &mut Vec<(i64, String)>, t: &mut i64, upto: i64, flat: &mut Vec<(i64, i64, String)>| {
            while let Some((end, cat)) = stack.last().cloned() {
                if end > upto {
                    break;
                }
                if end > *t {
                    flat.push((*t, end, cat));
                    *t = end;
                }
                stack.pop();
            }
        };
        for (s0, e0, c) in sl {
            close(&mut stack, &mut t, s0, &mut flat);
            if let Some((_, cat)) = stack.last() {
                if s0 > t {
                    flat.push((t, s0, cat.clone()));
                }
            }
            t = s0;
            stack.push((e0, c));
        }
        close(&mut stack, &mut t, i64::MAX, &mut flat);
        spans.extend(
            flat.into_iter()
                .filter(|(a, b, c)| b > a && matches!(c.as_str(), "hardirq" | "softirq" | "system"))
                .map(|(a, b, _)| (a, b, cpu)),
        );
    }
    spans.sort();
    let mut open: Option<(i64, u64)> = None; // (end, cpu) of the span reaching furthest
    for (start, end, cpu) in spans {
        if let Some((e, c)) = open {
            if c != cpu && start < e {
                return Some(start as f64 / 1000.0);
            }
        }
        if open.is_none_or(|(e, _)| end > e) {
            open = Some((end, cpu));
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, .. ProptestConfig::default() })]
    #[test]
    fn under_the_big_kernel_lock_at_most_one_cpu_is_in_the_kernel(
        online in 2u32..=4, rate in 5_000u32..120_000, sinks in 0u32..=2, hogs in 0u32..=2, seed in 0u64..1000,
    ) {
        let overlap = kernel_overlap(&host("bkl", online, rate, sinks, hogs, seed));
        prop_assert!(overlap.is_none(), "two CPUs in kernel context at {:?} us (seed {})", overlap, seed);
    }
}

#[test]
fn without_the_lock_cpus_do_overlap_in_the_kernel() {
    // Negative control: the checker above finds overlaps when the kernel is fine-grained SMP.
    let overlap = kernel_overlap(&host("smp", 4, 100_000, 2, 1, 7));
    assert!(overlap.is_some(), "fine-grained SMP at 100,000 pkt/s on 4 CPUs must overlap (seed 7)");
}

#[test]
fn the_big_kernel_lock_makes_cpus_spin_and_moves() {
    let s = run(&load_text("concurrency", &host("bkl", 2, 100_000, 1, 0, 3), &[]));
    let spin: u64 = s.cpus.iter().map(|c| c.spin_ns).sum();
    assert!(spin > 0, "two CPUs taking interrupts under one lock must spin (seed 3)");
    assert!(s.concurrency.lock_transfers > 0 && s.concurrency.lock_acquisitions > s.concurrency.lock_transfers);
    assert!(s.metrics["cpu_busy_frac"] > s.metrics["cpu_busy_nospin_frac"]);
}

fn functional(rate: u32, duration_ms: u64) -> String {
    format!(
        r#"
profile = "pentium2-400x2"
duration_ms = {duration_ms}
[kernel]
concurrency = "functional"
rx_path = "legacy"
driver_cpu = 1
ip_cpu = 0
exchange_period_us = 5000
[[nic]]
name = "eth0"
rate_mbps = 100
irq_cpus = [1]
[[nic]]
name = "eth1"
rate_mbps = 100
irq_cpus = [1]
tx_ring = 1024
[[traffic]]
name = "load"
kind = "cbr"
nic = "eth0"
dst_port = 9
rate_pps = {rate}
link_mbps = 100
[[traffic]]
name = "out"
kind = "sink"
nic = "eth1"
[[route]]
to = "eth1"
"#
    )
}

#[test]
fn the_functional_split_locks_and_exchanges_per_period_not_per_packet() {
    for rate in [1_000, 20_000, 50_000] {
        let s = run(&load_text("functional", &functional(rate, 200), &[]));
        let c = &s.concurrency;
        // 40 periods of 5 ms (activations at 0, 5, ..., 195 ms), a poll and a bulk send each.
        assert_eq!(c.exchanges, vec![80, 80], "at {rate} pkt/s");
        assert_eq!(c.lock_acquisitions, 160, "one lock per splice, none per packet, at {rate} pkt/s");
        assert_eq!(s.packets.rps_ipis, 0);
        assert_eq!(s.metrics["ipis_per_s"], 0.0);
        // Nothing lost: what is not forwarded yet waits in the exchange queues or the NIC. A
        // packet crosses two exchanges; at each it waits up to a period for the sender's bulk
        // send and, if the receiver's poll at that boundary ran first, one more for the next
        // poll; then its stage thread takes it (well under a period at these rates): at most
        // five periods' worth is in flight.
        let drops: u64 = s.packets.drops.values().sum();
        assert_eq!(drops, 0, "at {rate} pkt/s");
        assert_eq!(s.packets.offered, s.packets.forwarded + s.packets.in_flight);
        assert!(s.packets.in_flight <= 5 * u64::from(rate) / 200, "at {rate} pkt/s: {} in flight", s.packets.in_flight);
    }
}

#[test]
fn a_full_buffer_pool_drops_at_its_own_place() {
    let s = run(&load_text("functional", &functional(20_000, 100), &[("kernel.pool_buffers", "20")]));
    assert!(s.packets.drops["buffer_pool"] > 0);
    assert!(s.concurrency.pool_buffers_used <= 20);
}

/// Everything a run reports, minus what describes the machine rather than the run (its CPU
/// count, and loads averaged over all of its CPUs).
fn comparable(s: &Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).expect("summary");
    v["concurrency"]["machine_cpus"] = serde_json::Value::Null;
    let m = v["metrics"].as_object_mut().expect("metrics");
    m.retain(|k, _| !k.starts_with("machine_"));
    v
}

#[test]
fn a_uniprocessor_kernel_is_exactly_a_one_cpu_machine() {
    let text = functional(30_000, 100)
        .replace("concurrency = \"functional\"", "concurrency = \"up\"")
        .replace("irq_cpus = [1]", "irq_cpus = [0]");
    let up = run(&load_text("up", &text, &[]));
    let one = run(&load_text("up", &text, &[("profile_set.topology.packages", "1")]));
    assert_eq!(up.cpus.len(), 1);
    assert_eq!(comparable(&up), comparable(&one));
    assert_eq!(up.metrics["machine_busy_frac"] * 2.0, one.metrics["machine_busy_frac"]);
    // An SMP kernel on one online CPU is an SMP kernel (locking costs) on a 1-CPU machine.
    let smp = |extra: &[(&str, &str)]| {
        let mut o = vec![("kernel.concurrency", "smp"), ("kernel.online_cpus", "1")];
        o.extend_from_slice(extra);
        run(&load_text("up", &text, &o))
    };
    assert_eq!(comparable(&smp(&[])), comparable(&smp(&[("profile_set.topology.packages", "1")])));
    assert!(smp(&[]).metrics["cpu_busy_frac"] > up.metrics["cpu_busy_frac"], "the SMP factor costs");
}
