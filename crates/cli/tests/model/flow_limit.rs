//! Linux's RPS flow limit (`kernel.backlog = "flow_limit"`, `crates/host/src/mechanisms/flow_limit.rs`) on a
//! host: a flow that floods an RPS target's backlog is shed once the backlog is half full while a
//! small flow sharing that backlog loses nothing; the table consulted is the enqueuing CPU's;
//! and over random hosts, drops are counted consistently and never happen while backlogs stay
//! under half full. The rule itself is property-tested against a reference in the policy file.

use crate::conservation::check_conservation;
use crate::{load_text, run};
use hostsim_host::Summary;
use proptest::prelude::*;

/// One NIC queue polled on CPU 0; RPS sends everything to CPU 1, whose protocol work (5.7 us per
/// packet on this profile) cannot keep up with the elephant, so CPU 1's backlog fills.
fn two_flows(backlog: &str, table_cpus: &str) -> String {
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
flow_limit_cpus = {table_cpus}
netdev_max_backlog = 1000
[[nic]]
name = "eth0"
rate_mbps = 10000
irq_routing = "fixed"
irq_cpus = [0]
[[process]]
name = "elephant"
program = "udp_sink"
port = 7000
cpus = [2]
[[process]]
name = "mouse"
program = "udp_sink"
port = 7001
cpus = [3]
[[traffic]]
name = "big"
kind = "cbr"
nic = "eth0"
dst_port = 7000
rate_pps = 185000
link_mbps = 10000
[[traffic]]
name = "small"
kind = "poisson"
nic = "eth0"
dst_port = 7001
rate_pps = 10000
link_mbps = 10000
"#
    )
}

fn src_drops(s: &Summary, src: &str, place: &str) -> u64 {
    let t = s.traffic.iter().find(|t| t.name == src).unwrap_or_else(|| panic!("no source {src}"));
    t.drops.get(place).copied().unwrap_or(0)
}

#[test]
fn a_dominant_flow_is_shed_and_the_small_flow_sharing_its_backlog_passes() {
    let fifo = run(&load_text("fl", &two_flows("fifo", "[]"), &[]));
    let fl = run(&load_text("fl", &two_flows("flow_limit", "[]"), &[]));
    check_conservation(&fifo, "fifo (seed 1)");
    check_conservation(&fl, "flow_limit (seed 1)");
    // Linux as is: the full backlog drops both flows' packets.
    assert!(src_drops(&fifo, "small", "backlog") > 0, "fifo: the small flow must lose packets at the full backlog");
    // Flow limit: the elephant is shed before the backlog fills, the mouse loses nothing.
    assert!(fl.packets.drops["flow_limit"] > 1000, "flow limit must shed the elephant: {:?}", fl.packets.drops);
    assert_eq!(src_drops(&fl, "big", "flow_limit"), fl.packets.drops["flow_limit"], "only the elephant is limited");
    assert_eq!(fl.packets.drops["backlog"], 0, "the backlog never overflows: {:?}", fl.packets.drops);
    assert_eq!(src_drops(&fl, "small", "flow_limit") + src_drops(&fl, "small", "backlog"), 0);
    // The drops are charged to the table that refused them: CPU 0's, the CPU doing the enqueue.
    assert_eq!(fl.cpus[0].flow_limit_drops, fl.packets.drops["flow_limit"]);
    assert!(fl.cpus[1..].iter().all(|c| c.flow_limit_drops == 0));
}

#[test]
fn the_table_consulted_is_the_enqueuing_cpus_not_the_targets() {
    // A table on the target CPU only: never consulted (Linux's `this_cpu_ptr`), so the backlog
    // behaves as Linux's FIFO and overflows.
    let s = run(&load_text("fl", &two_flows("flow_limit", "[1]"), &[]));
    check_conservation(&s, "flow_limit on CPU 1 only (seed 1)");
    assert_eq!(s.packets.drops["flow_limit"], 0);
    assert!(s.packets.drops["backlog"] > 0);
}

#[test]
fn the_table_work_is_charged_to_the_enqueuing_cpu() {
    let text = two_flows("flow_limit", "[]");
    let free = run(&load_text("fl", &text, &[]));
    let costly = run(&load_text("fl", &text, &[("profile_set.mechanisms.flow_limit_ns", "500")]));
    let sirq = |s: &Summary, c: usize| s.cpus[c].softirq_ns as f64;
    // CPU 0 polls the NIC and does every enqueue; CPU 1 only runs its backlog.
    assert!(sirq(&costly, 0) > sirq(&free, 0) * 1.05, "CPU 0: {} vs {}", sirq(&costly, 0), sirq(&free, 0));
    assert!(costly.packets.drops["flow_limit"] > 0);
}

/// Random NAPI/RPS hosts under flow limit: `flows` flows of one source plus a second source,
/// RSS over `queues` queues, an RPS map, tables on some CPUs.
fn random_host(
    queues: u32,
    rps_mask: u8,
    table_mask: u8,
    max_backlog: u32,
    rate: u32,
    flows: u32,
    seed: u64,
) -> String {
    let cpus = |m: u8| format!("{:?}", (0..4u32).filter(|c| m & (1 << c) != 0).collect::<Vec<_>>());
    format!(
        r#"
profile = "pentium3-xeon-500x4"
duration_ms = 120
seed = {seed}
[kernel]
rx_path = "napi"
rps = true
rps_cpus = {}
backlog = "flow_limit"
flow_limit_cpus = {}
flow_limit_table_len = 64
netdev_max_backlog = {max_backlog}
[[nic]]
name = "eth0"
rate_mbps = 10000
queues = {queues}
irq_routing = "msix"
[[process]]
name = "a"
program = "udp_sink"
port = 7000
[[process]]
name = "b"
program = "udp_sink"
port = 7001
[[traffic]]
name = "a"
kind = "poisson"
nic = "eth0"
dst_port = 7000
rate_pps = {rate}
flows = {flows}
link_mbps = 10000
[[traffic]]
name = "b"
kind = "cbr"
nic = "eth0"
dst_port = 7001
rate_pps = 20000
link_mbps = 10000
"#,
        cpus(rps_mask),
        cpus(table_mask)
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]
    /// Over random hosts: packets are conserved with the flow-limit drop place; per-CPU counts
    /// add up to it; only CPUs with a table that poll a NIC queue refuse packets; and when the
    /// backlog limit is so large that no backlog can be half full (more than twice the packets
    /// offered), flow limit never drops.
    #[test]
    fn flow_limit_drops_are_consistent_and_need_a_half_full_backlog(
        queues in 1u32..=2, rps_mask in 1u8..16, table_mask in 0u8..16, max_backlog in 8u32..400,
        rate in 50_000u32..250_000, flows in 1u32..=4, seed in 0u64..1000,
    ) {
        let text = random_host(queues, rps_mask, table_mask, max_backlog, rate, flows, seed);
        let s = run(&load_text("flr", &text, &[]));
        check_conservation(&s, &format!("random flow-limit host (seed {seed})"));
        let per_cpu: u64 = s.cpus.iter().map(|c| c.flow_limit_drops).sum();
        prop_assert_eq!(per_cpu, s.packets.drops["flow_limit"], "seed {}", seed);
        // MSI-X with no irq_cpus: queue q interrupts CPU q; tables exist on all CPUs if the mask is empty.
        for c in &s.cpus {
            let polls = c.id < queues;
            let table = table_mask == 0 || table_mask & (1 << c.id) != 0;
            if c.flow_limit_drops > 0 {
                prop_assert!(polls && table, "CPU {} refused packets without polling a queue with a table (seed {})", c.id, seed);
            }
        }
        let huge = run(&load_text("flr", &text, &[("kernel.netdev_max_backlog", &(2 * s.packets.offered + 2).to_string())]));
        prop_assert_eq!(huge.packets.drops["flow_limit"], 0, "a backlog under half full never flow-limits (seed {})", seed);
    }
}
