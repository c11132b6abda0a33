//! Scheduler behaviour against Linux's rules: nice weights share a CPU in proportion,
//! SCHED_FIFO runs above normal tasks, nanosleep granularity, wake-up migrations by cause.

use crate::{load_text, process, run};

fn spinners(a: &str, b: &str) -> String {
    format!(
        r#"
profile = "ideal-4"
duration_ms = 2000
[[process]]
name = "a"
program = "spin"
work_ns = 100000
cpus = [0]
{a}
[[process]]
name = "b"
program = "spin"
work_ns = 100000
cpus = [0]
{b}
"#
    )
}

#[test]
fn nice_weights_share_a_cpu_in_proportion() {
    let s = run(&load_text("nice", &spinners("nice = 0", "nice = 5"), &[]));
    let (a, b) = (process(&s, "a").cpu_ns as f64, process(&s, "b").cpu_ns as f64);
    let want = 1024.0 / 335.0; // sched_prio_to_weight[nice 0] / [nice 5]
    assert!((a / b - want).abs() / want < 0.05, "share ratio {:.3}, want {want:.3}", a / b);
    assert!((a + b - 2e9).abs() < 1e6, "the CPU is fully used: {}", a + b);
}

#[test]
fn sched_fifo_runs_above_normal_tasks() {
    let s = run(&load_text("fifo", &spinners("sched = \"fifo\"\nrt_priority = 10", ""), &[]));
    assert!(process(&s, "b").cpu_ns < 1_000_000, "the normal task starves under a FIFO spinner");
    assert!(process(&s, "a").cpu_ns > 1_990_000_000);
}

fn periodic(hz: u32, tick_sleep: bool) -> String {
    format!(
        r#"
profile = "ideal-4"
duration_ms = 1000
[kernel]
hz = {hz}
timer_tick_sleep = {tick_sleep}
timer_slack_ns = 50000
[[process]]
name = "p"
program = "periodic"
work_ns = 100000
sleep_ns = 1000000
"#
    )
}

#[test]
fn nanosleep_granularity() {
    // hrtimers: 0.1 ms work + 1 ms sleep + 50 us slack = 1.15 ms per cycle.
    let hr = run(&load_text("hr", &periodic(1000, false), &[]));
    let cycles_hr = process(&hr, "p").cpu_ns as f64 / 100_000.0;
    assert!((cycles_hr - 1000.0 / 1.15).abs() <= 2.0, "hrtimer cycles {cycles_hr}");
    // 2.4 jiffies at HZ=100: a 1 ms sleep rounds up to the next tick plus one: one cycle = 20 ms.
    let tick = run(&load_text("tick", &periodic(100, true), &[]));
    let cycles_tick = process(&tick, "p").cpu_ns as f64 / 100_000.0;
    assert!((cycles_tick - 50.0).abs() <= 1.0, "tick-granular cycles {cycles_tick}");
}

#[test]
fn a_woken_task_leaves_a_busy_cpu_and_migrations_are_counted_by_cause() {
    // The sink starts on CPU 0, where a pinned hog also runs; the NIC interrupts CPU 2. On
    // wake-up, wake_affine moves the sink to the idle waking CPU.
    let text = r#"
profile = "pentium3-xeon-500x4"
duration_ms = 500
[[nic]]
name = "eth0"
rate_mbps = 1000
irq_routing = "fixed"
irq_cpus = [2]
[[process]]
name = "sink"
program = "udp_sink"
port = 9000
[[process]]
name = "hog"
program = "spin"
work_ns = 1000000
cpus = [0]
[[traffic]]
name = "t"
kind = "cbr"
nic = "eth0"
dst_port = 9000
rate_pps = 5000
"#;
    let s = run(&load_text("wake", text, &[]));
    let m = &s.migrations;
    assert!(m["wakeup"] >= 1, "the sink migrates on wake-up: {m:?}");
    assert_eq!(m["total"], m["wakeup"] + m["load_balance"] + m["idle_balance"]);
    assert_eq!(process(&s, "sink").migrations, m["total"], "only the sink can move");
    assert!(process(&s, "sink").rx_packets > 2000, "and it keeps receiving");
}
