//! RFS never reorders a flow: property test over random hosts (queues, flows, readers, CPU
//! hogs that make readers migrate, rates), with RFS steering and no RPS map (with a map, Linux's
//! first switch from map steering to the flow table may reorder; see `crates/host/src/net/core/rx.rs`). A negative control
//! turns off Linux's `last_qtail` rule and must see reordering, which shows the checker can fail.

use crate::{load_text, run};
use proptest::prelude::*;

fn scenario(queues: u32, readers: u32, flows: u32, hogs: u32, rate: u32, seed: u64) -> String {
    let mut s = format!(
        r#"
profile = "pentium3-xeon-500x4"
duration_ms = 300
seed = {seed}
[kernel]
rx_path = "napi"
rps = true
rfs = true
rfs_entries = 4096
[[nic]]
name = "eth0"
rate_mbps = 10000
queues = {queues}
irq_routing = "msix"
"#
    );
    for r in 0..readers {
        s.push_str(&format!(
            "[[process]]\nname = \"r{r}\"\nprogram = \"udp_sink\"\nport = {}\nwork_ns = 3000\n\
             [[traffic]]\nname = \"t{r}\"\nkind = \"poisson\"\nnic = \"eth0\"\ndst_port = {}\nrate_pps = {rate}\nflows = {flows}\nlink_mbps = 10000\n",
            5000 + r,
            5000 + r
        ));
    }
    for h in 0..hogs {
        s.push_str(&format!("[[process]]\nname = \"hog{h}\"\nprogram = \"spin\"\nwork_ns = 500000\n"));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn rfs_never_reorders_a_flow(
        queues in 1u32..=4, readers in 1u32..=4, flows in 1u32..=16, hogs in 0u32..=4,
        rate in 2_000u32..40_000, seed in 0u64..1000,
    ) {
        let s = run(&load_text("rfs", &scenario(queues, readers, flows, hogs, rate, seed), &[]));
        prop_assert_eq!(s.packets.reordered, 0, "seed {}", seed);
    }
}

#[test]
fn flows_do_move_and_without_the_qtail_rule_they_reorder() {
    // Two queues polled on two CPUs feed every backlog, so backlogs get deep; four CPU hogs
    // crowd the readers so the balancer moves them, and flows follow them while old packets are
    // still queued. (Readers follow their interrupts under 3.2's sync wake_affine, so it takes
    // this much crowding: with fewer hogs the rule never has to defer a move. With four queues
    // spread over all four CPUs, 60,000 packets/s per reader leave the backlogs too short for
    // any move to be unsafe, and 80,000 keep every move deferred.)
    let text = scenario(2, 4, 16, 4, 60_000, 5);
    let with_rule = run(&load_text("rfs", &text, &[]));
    assert!(with_rule.packets.rfs_flow_moves > 0, "RFS must move flows in this scenario");
    assert!(with_rule.packets.rfs_moves_deferred > 0, "the rule must have deferred some moves");
    assert_eq!(with_rule.packets.reordered, 0);
    let without = run(&load_text("rfs", &text, &[("kernel.rfs_no_reorder_rule", "false")]));
    assert!(without.packets.rfs_unsafe_moves > 0);
    assert!(
        without.packets.reordered > 0,
        "moving flows without the rule should reorder (unsafe moves {}, seed 5)",
        without.packets.rfs_unsafe_moves
    );
}
