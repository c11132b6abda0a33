//! Paper 000's PBQs on the NAPI/RPS path (`rx_path = "napi"`, RPS to one CPU): once the shared
//! backlog overflows, a high-priority flow keeps everything it is sent while a low-priority flood
//! takes the drops, and the priority lookup is paid by the CPU that polls the NIC.

use crate::conservation::check_conservation;
use crate::{load_text, run};
use hostsim_host::Summary;

fn scenario(backlog: &str) -> String {
    format!(
        r#"
profile = "pentium3-xeon-500x4"
duration_ms = 300
warmup_ms = 50
[kernel]
rx_path = "napi"
rps = true
rps_cpus = [1]
backlog = "{backlog}"
netdev_max_backlog = 1000
pbq_min_packets = 100
[[nic]]
name = "eth0"
rate_mbps = 10000
irq_routing = "fixed"
irq_cpus = [0]
[[process]]
name = "flood"
program = "udp_sink"
port = 7000
nice = 19
cpus = [2]
[[process]]
name = "hi"
program = "udp_sink"
port = 7001
nice = -19
cpus = [3]
[[traffic]]
name = "flood"
kind = "cbr"
nic = "eth0"
dst_port = 7000
rate_pps = 185000
link_mbps = 10000
[[traffic]]
name = "hi"
kind = "poisson"
nic = "eth0"
dst_port = 7001
rate_pps = 10000
link_mbps = 10000
"#
    )
}

fn drops(s: &Summary, src: &str) -> u64 {
    s.traffic.iter().find(|t| t.name == src).unwrap().drops.values().sum()
}

#[test]
fn pbq_on_the_napi_rps_path_keeps_the_high_priority_flow() {
    let fifo = run(&load_text("pbq", &scenario("fifo"), &[]));
    let pbq = run(&load_text("pbq", &scenario("pbq"), &[]));
    check_conservation(&fifo, "fifo (seed 1)");
    check_conservation(&pbq, "pbq (seed 1)");
    assert!(drops(&fifo, "hi") > 0, "the FIFO drops the high-priority flow's packets too");
    assert_eq!(drops(&pbq, "hi"), 0, "PBQ drops only the flood: {:?}", pbq.traffic);
    assert!(drops(&pbq, "flood") > 0);
    // The priority lookup under high load (700 ns on this profile) is paid in CPU 0's poll,
    // where the enqueue runs: against a free lookup, CPU 0's softirq time grows.
    let free = run(&load_text("pbq", &scenario("pbq"), &[("profile_set.mechanisms.pbq_classify_ns", "0")]));
    assert!(pbq.cpus[0].softirq_ns as f64 > free.cpus[0].softirq_ns as f64 * 1.05);
}
