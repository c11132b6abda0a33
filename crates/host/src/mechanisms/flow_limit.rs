//! Flow limit: Linux's RPS "selective flow shedding during softnet overflow", a backlog policy of
//! the NAPI/RPS-era receive path (`kernel.backlog = "flow_limit"`). Merged in Linux 3.11 (Willem
//! de Bruijn, commit 99bbc7074190); modelled on Linux 6.6: `skb_flow_limit()` and
//! `enqueue_to_backlog()` in net/core/dev.c, `struct sd_flow_limit` and `FLOW_LIMIT_HISTORY` in
//! net/core/dev.h (include/linux/netdevice.h in older kernels), `flow_limit_cpu_sysctl()` and
//! `flow_limit_table_len_sysctl()` in net/core/sysctl_net_core.c, and "RPS Flow Limit" in
//! Documentation/networking/scaling.rst.
//!
//! The backlog itself is the NAPI-era FIFO of `enqueue_to_backlog` (drop only while the queue
//! holds more than `netdev_max_backlog`; no 2.4 throttle state). In front of it:
//!
//! - `enqueue_to_backlog` admits a packet if `qlen <= netdev_max_backlog && !skb_flow_limit(skb,
//!   qlen)`, `qlen` being the *target* CPU's backlog length. So an over-full backlog drops without
//!   consulting the flow table (and without recording the packet in its history).
//! - `skb_flow_limit` returns at once while `qlen < (netdev_max_backlog >> 1)`: under half full,
//!   flow limit never drops and records nothing.
//! - Otherwise it takes `sd = this_cpu_ptr(&softnet_data)`: the table of the CPU *doing the
//!   enqueue* (with RPS, the CPU polling the NIC), not of the target. Tables exist only on CPUs
//!   set in `net.core.flow_limit_cpu_bitmap` (scaling.rst: "enable the feature on all CPUs that
//!   handle network rx interrupts"). The table is zero-filled at allocation (`kzalloc_node`).
//! - The packet's flow hash (`skb_get_hash`, the hash RPS steers by) picks a bucket:
//!   `hash & (num_buckets - 1)`, `num_buckets = net.core.flow_limit_table_len` (default
//!   `1 << 12` = 4096, a power of two). A ring of the last `FLOW_LIMIT_HISTORY = 1 << 7` = 128
//!   recorded buckets keeps per-bucket counts: the entry the new packet overwrites is
//!   decremented, the new one incremented. The decrement is guarded (`if
//!   (likely(fl->buckets[old_flow]))`), so evicting one of the zero-filled history's initial
//!   bucket-0 entries subtracts nothing while bucket 0 counts zero: a flow in bucket 0 that fills
//!   the history first stays under-counted (a Linux quirk we keep; see the tests).
//! - If the new count exceeds `FLOW_LIMIT_HISTORY >> 1` = 64, i.e. the flow took more than half
//!   of the recent recorded packets, `fl->count++` and the packet is dropped. Linux counts the
//!   drop in `softnet_stat`'s `dropped` and `flow_limit_count` columns; we count it as its own
//!   drop place, `flow_limit`, and per CPU.
//!
//! scaling.rst speaks of a "flow history length (256)"; the code (`1 << 7`) wins. Later kernels
//! (2025) index the table with `hash_32(hash, log_buckets)` instead of the low bits; that changes
//! which flows share a bucket, not the rule. We keep the 6.6 indexing.

use crate::config::{check_cpu_list, HostConfig, RxPath};
use crate::hooks::{Boot, Mechanism, NoOptions};
use crate::net::core::backlog::{BacklogPolicy, Enqueue, Fifo};
use crate::types::PktId;
use hostsim_engine::Rng;
use hostsim_options::{int, len, options, Fault, Gen, CPU_ID};
use serde::{Deserialize, Serialize};

/// Flow limit's keys of `[kernel]`.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowLimitOptions {
    /// Flow limit: the CPUs with a flow table (`net.core.flow_limit_cpu_bitmap`). Linux consults
    /// the table of the CPU doing the enqueue (with RPS, the one polling the NIC), so these are
    /// the CPUs that handle receive interrupts (Documentation/networking/scaling.rst). Empty =
    /// every CPU.
    #[option(default = Vec::new(), bound = len(128), why = "CPUs in net.core.flow_limit_cpu_bitmap", each = int(0, 127), each_why = CPU_ID, gen = Gen::Cpus)]
    pub flow_limit_cpus: Vec<u32>,
    /// Flow limit: buckets per CPU's flow table (`net.core.flow_limit_table_len`; Linux's default
    /// 4096; a power of two, at most 65536).
    #[option(default = FLOW_LIMIT_TABLE_LEN, bound = int(1, 65_536), why = "buckets; Linux's history holds u16 bucket numbers, so at most 2^16 (a power of two)")]
    pub flow_limit_table_len: u32,
}

/// The mechanism: each CPU's backlog is a [`FlowLimit`] when `kernel.backlog = "flow_limit"`.
pub struct RpsFlowLimit {
    on: bool,
    /// `netdev_max_backlog`.
    max: usize,
    /// `flow_limit_table_len` on the CPUs of `flow_limit_cpus` (all if empty).
    table_len: u32,
    cpus: Vec<u32>,
    cost_ns: u64,
}

impl Mechanism for RpsFlowLimit {
    type Options = FlowLimitOptions;
    type TaskOptions = NoOptions;
    const POLICIES: &'static [(&'static str, &'static str, &'static str)] = &[(
        "backlog",
        "flow_limit",
        "Linux's RPS flow limit (3.11+, `skb_flow_limit`): Linux's NAPI-era FIFO, and once a backlog is at least half full, packets of a flow holding more than half of the enqueuing CPU's recent history are dropped (`mechanisms/flow_limit.rs`). Needs `rx_path = \"napi\"`.",
    )];

    fn new(boot: &Boot) -> Self {
        let k = &boot.cfg.kernel;
        let o: FlowLimitOptions = boot.options();
        RpsFlowLimit {
            on: k.backlog.is("flow_limit"),
            max: k.netdev_max_backlog as usize,
            table_len: o.flow_limit_table_len,
            cpus: o.flow_limit_cpus,
            cost_ns: boot.cfg.profile.mechanisms.flow_limit_ns,
        }
    }

    fn check(c: &HostConfig, o: &FlowLimitOptions, _tasks: &[NoOptions]) -> Result<(), Fault> {
        if c.kernel.backlog.is("flow_limit") && c.kernel.rx_path != RxPath::Napi {
            return Err(Fault::at(&["kernel", "backlog"], "flow_limit is Linux 3.11+'s enqueue_to_backlog: it needs kernel.rx_path = \"napi\" (the legacy path is 2.4's netif_rx)"));
        }
        // History entries are u16 bucket numbers (struct sd_flow_limit); Linux's sysctl requires a power of two.
        if !o.flow_limit_table_len.is_power_of_two() || o.flow_limit_table_len > 1 << 16 {
            return Err(Fault::at(
                &["kernel", "flow_limit_table_len"],
                format!("expected a power of two in 1..=65536, got {}", o.flow_limit_table_len),
            ));
        }
        check_cpu_list(&o.flow_limit_cpus, c.online_cpus(), c.profile.topology.cpus(), false)
            .map_err(|m| Fault::at(&["kernel", "flow_limit_cpus"], m))
    }

    fn backlog(&self, cpu: usize, _rng: Rng) -> Option<Box<dyn BacklogPolicy>> {
        if !self.on {
            return None;
        }
        let has_table = self.cpus.is_empty() || self.cpus.contains(&(cpu as u32));
        Some(Box::new(FlowLimit::new(self.max, has_table.then_some(self.table_len)).with_cost(self.cost_ns)))
    }
}

/// `FLOW_LIMIT_HISTORY` (net/core/dev.h): packets of recent history per table.
pub const FLOW_LIMIT_HISTORY: usize = 1 << 7;
/// `netdev_flow_limit_table_len`'s default (net/core/dev.c): buckets per table.
pub const FLOW_LIMIT_TABLE_LEN: u32 = 1 << 12;

/// `struct sd_flow_limit`: one CPU's flow table.
#[derive(Clone, Debug)]
pub struct SdFlowLimit {
    /// `fl->count`: packets this table has dropped.
    pub count: u64,
    history_head: usize,
    /// Bucket of each recently recorded packet (u16 in Linux, so at most 65536 buckets).
    history: [u16; FLOW_LIMIT_HISTORY],
    /// Recorded packets per bucket among the last `FLOW_LIMIT_HISTORY` (u8 in Linux).
    buckets: Vec<u8>,
}

impl SdFlowLimit {
    /// A zero-filled table of `num_buckets` (a power of two, at most 65536).
    pub fn new(num_buckets: u32) -> SdFlowLimit {
        debug_assert!(num_buckets.is_power_of_two() && num_buckets <= 1 << 16);
        SdFlowLimit {
            count: 0,
            history_head: 0,
            history: [0; FLOW_LIMIT_HISTORY],
            buckets: vec![0; num_buckets as usize],
        }
    }

    /// The part of `skb_flow_limit` after the half-full test: record the packet's bucket and
    /// say whether its flow now holds more than half of the recent history.
    pub fn record(&mut self, hash: u32) -> bool {
        let new_flow = (hash as usize) & (self.buckets.len() - 1);
        let old_flow = self.history[self.history_head] as usize;
        self.history[self.history_head] = new_flow as u16;
        self.history_head = (self.history_head + 1) & (FLOW_LIMIT_HISTORY - 1);
        if self.buckets[old_flow] > 0 {
            self.buckets[old_flow] -= 1;
        }
        self.buckets[new_flow] += 1;
        if usize::from(self.buckets[new_flow]) > FLOW_LIMIT_HISTORY >> 1 {
            self.count += 1;
            return true;
        }
        false
    }

    /// Recorded packets of `hash`'s bucket in the current history.
    #[cfg(test)]
    pub fn bucket_count(&self, hash: u32) -> u8 {
        self.buckets[(hash as usize) & (self.buckets.len() - 1)]
    }
}

/// One CPU's backlog under flow limit: Linux's NAPI-era FIFO, plus this CPU's flow table if
/// the CPU is in `flow_limit_cpus`.
#[derive(Clone, Debug)]
pub struct FlowLimit {
    fifo: Fifo,
    max: usize,
    table: Option<Box<SdFlowLimit>>,
    /// `skb_flow_limit`'s table work (the profile's `flow_limit_ns`), per packet `limit` checks.
    cost_ns: u64,
}

impl FlowLimit {
    /// `max` = `netdev_max_backlog`; `table_len` buckets if this CPU has a table.
    pub fn new(max: usize, table_len: Option<u32>) -> FlowLimit {
        FlowLimit {
            fifo: Fifo::new(max, false),
            max,
            table: table_len.map(|n| Box::new(SdFlowLimit::new(n))),
            cost_ns: 0,
        }
    }

    /// With the table work's cost (`flow_limit_ns`).
    pub fn with_cost(mut self, cost_ns: u64) -> FlowLimit {
        self.cost_ns = cost_ns;
        self
    }

    /// Does `limit` do the table work for an enqueue onto a backlog of `target_len`?
    pub fn engaged(&self, target_len: usize) -> bool {
        self.table.is_some() && target_len <= self.max && target_len >= self.max >> 1
    }

    /// This CPU's table, if it has one.
    #[cfg(test)]
    pub fn table(&self) -> Option<&SdFlowLimit> {
        self.table.as_deref()
    }
}

impl BacklogPolicy for FlowLimit {
    fn enqueue(&mut self, pkt: PktId, prio: i32) -> Enqueue {
        self.fifo.enqueue(pkt, prio)
    }
    fn dequeue(&mut self) -> Option<PktId> {
        self.fifo.dequeue()
    }
    fn len(&self) -> usize {
        self.fifo.len()
    }
    /// `enqueue_to_backlog`'s `qlen <= netdev_max_backlog && !skb_flow_limit(skb, qlen)`, run on
    /// the enqueuing CPU's policy with the target backlog's length.
    fn limit(&mut self, hash: u32, target_len: usize) -> bool {
        if target_len > self.max || target_len < self.max >> 1 {
            return false;
        }
        match &mut self.table {
            Some(t) => t.record(hash),
            None => false,
        }
    }
    fn may_limit(&self) -> bool {
        true
    }
    /// The table work, once the target backlog is at least half full (`engaged`): the
    /// polling CPU's, charged to its unit.
    fn limit_cost_ns(&self, target_len: usize) -> u64 {
        if self.engaged(target_len) {
            self.cost_ns
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAX: usize = 1000;

    fn limited(max: usize) -> FlowLimit {
        FlowLimit::new(max, Some(FLOW_LIMIT_TABLE_LEN))
    }

    #[test]
    fn constants_are_linux_6_6s() {
        assert_eq!(FLOW_LIMIT_HISTORY, 128);
        assert_eq!(FLOW_LIMIT_TABLE_LEN, 4096);
        assert_eq!(FlowLimitOptions::default().flow_limit_table_len, FLOW_LIMIT_TABLE_LEN);
    }

    #[test]
    fn under_half_full_nothing_is_recorded_or_dropped() {
        let mut f = limited(MAX);
        for _ in 0..10_000 {
            assert!(!f.limit(7, MAX / 2 - 1));
        }
        assert_eq!(f.table().unwrap().bucket_count(7), 0, "nothing recorded under half full");
        for _ in 0..64 {
            assert!(!f.limit(7, MAX / 2));
        }
        assert!(f.limit(7, MAX / 2), "at half full (qlen = max >> 1) the table is consulted");
        assert!(f.engaged(MAX / 2) && f.engaged(MAX) && !f.engaged(MAX / 2 - 1) && !f.engaged(MAX + 1));
        assert!(!FlowLimit::new(MAX, None).engaged(MAX / 2), "no table, no table work");
    }

    #[test]
    fn a_flow_with_more_than_half_the_history_is_dropped() {
        let mut f = limited(MAX);
        // 64 packets of one flow are exactly half: still admitted; the 65th is over half.
        for i in 0..64 {
            assert!(!f.limit(5, MAX / 2), "packet {i} of 128 is not over half");
        }
        assert!(f.limit(5, MAX / 2));
        assert_eq!(f.table().unwrap().count, 1);
        // A flow that alternates with another never exceeds half.
        let mut g = limited(MAX);
        for i in 0..10_000u32 {
            assert!(!g.limit(1 + (i & 1), MAX));
        }
    }

    #[test]
    fn over_the_limit_the_table_is_not_consulted() {
        let mut f = limited(MAX);
        for _ in 0..500 {
            assert!(!f.limit(9, MAX + 1), "an over-full backlog drops before skb_flow_limit");
        }
        assert_eq!(f.table().unwrap().bucket_count(9), 0);
    }

    #[test]
    fn a_cpu_without_a_table_never_limits() {
        let mut f = FlowLimit::new(MAX, None);
        for _ in 0..1000 {
            assert!(!f.limit(3, MAX));
        }
    }

    #[test]
    fn buckets_are_the_low_bits_of_the_hash() {
        let mut t = SdFlowLimit::new(16);
        t.record(0x1234_5673);
        assert_eq!(t.bucket_count(3), 1, "0x...3 & 15 = 3: flows 16 apart share a bucket");
    }

    /// Linux's `if (likely(fl->buckets[old_flow]))`: evicting one of the zero-filled history's
    /// initial bucket-0 entries subtracts nothing while bucket 0's count is zero, and is a real
    /// decrement once it is not. So a flow in bucket 0 that arrives first stays under-counted
    /// (here: at 1) for as long as it keeps the count above zero; flows in other buckets clear the
    /// initial entries without loss.
    #[test]
    fn the_zero_filled_history_undercounts_bucket_zero() {
        let mut t = SdFlowLimit::new(16);
        for _ in 0..1000 {
            assert!(!t.record(16), "bucket 0 first: never over half");
        }
        assert_eq!(t.bucket_count(0), 1);
        let mut t = SdFlowLimit::new(16);
        for _ in 0..FLOW_LIMIT_HISTORY {
            t.record(1); // flushes the initial entries while bucket 0 is at zero
        }
        for _ in 0..FLOW_LIMIT_HISTORY {
            t.record(16);
        }
        assert_eq!(t.bucket_count(0), 128, "after a flush the count is exact");
    }

    /// One operation on a flow-limited backlog: an arrival of flow `f` from the CPU that owns the
    /// table (`from == target`), or a dequeue.
    #[derive(Clone, Debug)]
    enum Op {
        Arrive(u32),
        Serve,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        // Nonzero buckets (hash & 4095 != 0) so that the sliding-window reference is exact; the
        // bucket-0 start-up quirk has its own test above.
        let flow = prop_oneof![4 => Just(1u32), 2 => Just(2u32), 1 => 3u32..40];
        let op = prop_oneof![3 => flow.prop_map(Op::Arrive), 2 => Just(Op::Serve)];
        proptest::collection::vec(op, 1..4000)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
        /// The rule, against a plain reference: with the backlog under half full no packet is
        /// dropped by flow limit; at or over half (and within `netdev_max_backlog`) a packet is
        /// dropped exactly when its flow holds more than 64 of the last 128 packets recorded
        /// (recorded = arrived while the backlog was at least half full and not over-full).
        #[test]
        fn drops_exactly_when_a_flow_holds_over_half_the_recorded_history(max in 4usize..300, ops in ops()) {
            let mut q = limited(max);
            let mut recorded: Vec<u32> = Vec::new();
            let mut next_id = 0u32;
            for op in ops {
                match op {
                    Op::Serve => { q.dequeue(); }
                    Op::Arrive(flow) => {
                        let qlen = q.len();
                        let dropped = q.limit(flow, qlen);
                        if qlen < max / 2 {
                            prop_assert!(!dropped, "flow-limit drop with the backlog under half full ({qlen} of {max})");
                        }
                        if qlen >= max / 2 && qlen <= max {
                            recorded.push(flow);
                            let from = recorded.len().saturating_sub(FLOW_LIMIT_HISTORY);
                            let share = recorded[from..].iter().filter(|&&x| x == flow).count();
                            prop_assert_eq!(dropped, share > FLOW_LIMIT_HISTORY / 2,
                                "flow {} holds {} of the last {} recorded", flow, share, recorded.len() - from);
                        } else {
                            prop_assert!(!dropped);
                        }
                        if !dropped {
                            q.enqueue(next_id, 0);
                            next_id += 1;
                        }
                        prop_assert!(q.len() <= max + 1);
                    }
                }
            }
        }
    }
}
