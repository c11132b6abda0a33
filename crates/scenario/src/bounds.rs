//! # Bounds: the allowed range of every number a scenario or a machine profile sets
//!
//! Each row of [`SCENARIO`] and [`PROFILE`] says which key it covers, the range of values the
//! model accepts, and why the range ends where it does. The check runs on the TOML document
//! *before* it is deserialised (and again after every `--set`, variant and sweep value is
//! applied), so an out-of-range or mistyped number is refused with the file, line, key and the
//! allowed range, never wrapped, saturated or allocated.
//!
//! **Adding a key.** A new numeric key gets a row here, next to its neighbours:
//!
//! ```text
//! ("nic.*.tx_ring", int(1, 8_192), "TX descriptors; the largest rings of real NICs (mlx5, ice) hold 8,192"),
//!   │   │             │               └ why the range ends there: a real limit, a memory budget, Linux's own bound
//!   │   │             └ int(min, max) | float(min, max) | finite() | len(max) for arrays
//!   │   └ `*` = any element of an array (of tables or of numbers) or any key; `*_ns` = any key ending in `_ns`
//!   └ dotted path from the top of the file (profile rows: from the top of the profile)
//! ```
//!
//! The first row whose pattern matches a key applies. The test `every_numeric_key_has_a_bound`
//! serialises every configuration type with all its fields and fails on a number without a row.
//! What a single range cannot say (warm-up shorter than the run, a source no faster than its link,
//! the model's total memory) is checked on the typed configuration in `validate.rs`.
//!
//! **Where the limits come from.** Times: simulated time is `u64` nanoseconds; every time-like key
//! is limited to one simulated day ([`DAY_MS`]), so sums of a few times cannot come near 2^64 and
//! a run ends in bounded wall time. Counts and sizes: the largest value a real system has (ring
//! sizes of real NICs, Linux's sysctl limits), or a memory budget at a stated cost per item.

use crate::paths::Seg;
use toml::{Table, Value};

/// One simulated day, the longest time any key may give.
pub const DAY_MS: i64 = 86_400_000;
pub const DAY_US: i64 = DAY_MS * 1_000;
pub const DAY_NS: i64 = DAY_US * 1_000;
/// TOML integers are signed 64-bit.
const I64_MAX: i64 = i64::MAX;

/// What values a key may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    /// A whole number in `min..=max`.
    Int(i64, i64),
    /// A finite number in `min..=max` (integers are accepted).
    Float(f64, f64),
    /// Any finite number.
    Finite,
    /// An array of at most this many elements.
    Len(usize),
}

const fn int(min: i64, max: i64) -> Range {
    Range::Int(min, max)
}
const fn float(min: f64, max: f64) -> Range {
    Range::Float(min, max)
}
const fn finite() -> Range {
    Range::Finite
}
const fn len(max: usize) -> Range {
    Range::Len(max)
}

/// A row: key pattern, range, why.
pub type Bound = (&'static str, Range, &'static str);

const TIME: &str = "one simulated day at most";
const PORT: &str = "a UDP/TCP port";
const CPU_ID: &str = "a CPU number; the model has at most 128 CPUs";
const NICE: &str = "Linux nice values";

/// Keys of a scenario file.
#[rustfmt::skip]
pub const SCENARIO: &[Bound] = &[
    // Top level.
    ("duration_ms", int(1, DAY_MS), TIME),
    ("warmup_ms", int(0, DAY_MS), TIME),
    ("seed", int(0, I64_MAX), "any non-negative 64-bit integer"),
    ("seeds", int(1, 1_000), "seeds per sweep point and variant"),
    ("sample_interval_ms", int(1, DAY_MS), TIME),
    ("nic", len(64), "NICs; 64 ports are more than any server has"),
    ("process", len(4_096), "[[process]] entries (use `instances` for many copies)"),
    ("traffic", len(4_096), "[[traffic]] entries (use `clients` and `flows` for many senders)"),
    ("variant", len(1_000), "variants"),
    ("expect", len(10_000), "claims"),
    ("figure", len(1_000), "figures"),
    ("calibrate", len(100), "calibration parameters"),
    ("calibrate.*.min", finite(), ""),
    ("calibrate.*.max", finite(), ""),
    ("calibrate.*.offset", finite(), ""),
    // [kernel]
    ("kernel.hz", int(1, 10_000), "timer interrupts per second; Linux offers 100..=1000"),
    ("kernel.netdev_max_backlog", int(1, 1_048_576), "packets per CPU backlog; 2^20 is 4x the 250,000 that 100 GbE tuning guides set"),
    ("kernel.netdev_budget", int(1, 1_048_576), "packets per NET_RX pass"),
    ("kernel.net_rx_time_max_us", int(0, 1_000_000), "one NET_RX pass; 1 s is one jiffy at HZ = 1"),
    ("kernel.napi_weight", int(1, 65_536), "packets per NAPI poll"),
    ("kernel.softirq_restart_max", int(0, 10_000), "__do_softirq restarts; Linux uses 0 (2.4) or 10"),
    ("kernel.softirq_time_max_us", int(0, 1_000_000), "one __do_softirq; Linux uses 2 ms"),
    ("kernel.ksoftirqd_nice", int(-20, 19), NICE),
    ("kernel.irq_frames_max", int(1, 65_536), "frames per legacy interrupt"),
    ("kernel.pbq_min_packets", int(0, 1_048_576), "packets kept from eviction, at most a backlog"),
    ("kernel.rps_cpus", len(128), "CPUs in the RPS map"),
    ("kernel.rps_cpus.*", int(0, 127), CPU_ID),
    ("kernel.rfs_entries", int(1, 1_048_576), "flow-table entries; 2^20 is 32x Linux's recommended 32,768"),
    ("kernel.rcvbuf_bytes", int(1, 1 << 30), "bytes; Linux's sk_rcvbuf is an int and SO_RCVBUF doubles it, so 2^30"),
    ("kernel.skb_overhead_bytes", int(1, 65_536), "bytes of truesize per packet (sk_buff and buffer); at least 1 so a buffer fills"),
    ("kernel.sched_latency_us", int(100, 1_000_000), "Linux 3.x kernel/sysctl.c bounds sched_latency_ns to 100 us..=1 s"),
    ("kernel.sched_min_granularity_us", int(100, 1_000_000), "Linux 3.x kernel/sysctl.c bounds sched_min_granularity_ns to 100 us..=1 s"),
    ("kernel.sched_wakeup_granularity_us", int(0, 1_000_000), "Linux 3.x kernel/sysctl.c bounds sched_wakeup_granularity_ns to 0..=1 s"),
    ("kernel.imbalance_pct", int(100, 10_000), "percent; Linux's domains use 110..=125"),
    ("kernel.balance_interval_ms", int(1, 60_000), "ms between load balancing passes"),
    ("kernel.sched_migration_cost_us", int(0, 1_000_000), "us; Linux's sysctl_sched_migration_cost defaults to 500 us, at most 1 s"),
    ("kernel.timer_slack_ns", int(0, 1_000_000_000), "ns; at most 1 s"),
    ("kernel.delack_ms", int(0, 60_000), "ms; Linux's delayed ACK is 40..=200 ms"),
    ("kernel.sndbuf_bytes", int(1, 1 << 30), "bytes; Linux's sk_sndbuf is an int and SO_SNDBUF doubles it, so 2^30"),
    ("kernel.tcp_mss_bytes", int(1, 65_495), "bytes; 65,535 less the IP and TCP headers (the largest MSS, loopback's)"),
    ("kernel.tcp_rmem", len(3), "min, default and max receive buffer"),
    ("kernel.tcp_rmem.*", int(1, 1 << 30), "bytes; Linux's sk_rcvbuf is an int, so 2^30"),
    ("kernel.tcp_adv_win_scale", int(1, 14), "a shift: 1/2^n of the buffer is overhead (Linux uses 1 or 2; 0 would leave no window)"),
    ("kernel.speed_slot_us", int(1, 1_000_000), "us per Tender slot; at most 1 s"),
    ("kernel.speed_block_ms", int(1, 3_600_000), "ms per Tender block; at most an hour, so slots per block stay below 2^32 and slots.rs's products fit in u64"),
    ("kernel.flow_limit_table_len", int(1, 65_536), "buckets; Linux's history holds u16 bucket numbers, so at most 2^16 (a power of two)"),
    ("kernel.flow_limit_cpus", len(128), "CPUs in net.core.flow_limit_cpu_bitmap"),
    ("kernel.flow_limit_cpus.*", int(0, 127), CPU_ID),
    ("kernel.xdp_poll_ms", int(1, 60_000), "ms between the XDP agent's polls; at most a minute"),
    ("kernel.xdp_backlog_len_high", int(1, 1_048_576), "packets, at most a backlog (netdev_max_backlog's bound)"),
    ("kernel.xdp_release_frac", float(0.0, 1.0), "a fraction of the rate at which high load began (strictly inside 0..1)"),
    ("kernel.xdp_hold_ms", int(0, DAY_MS), TIME),
    ("kernel.xdp_escalate_ms", int(0, DAY_MS), TIME),
    ("kernel.xdp_probe_ms", int(0, DAY_MS), TIME),
    ("kernel.xdp_min_share_top", int(0, 1_000_000_000), "packets per window; a frame takes at least 1 ns, so a 1 s window holds at most 10^9"),
    ("kernel.xdp_window_ms", int(1, 60_000), "ms per minimum-share window; at most a minute"),
    ("kernel.xdp_capacity_pps", float(0.0, 1e10), "packets per second (0: unused); a frame takes at least 0.1 ns"),
    ("kernel.cpumap_cpu", int(0, 127), CPU_ID),
    ("kernel.cpumap_qsize", int(1, 16_384), "frames in the CPU map entry's ring; Linux refuses more (kernel/bpf/cpumap.c cpu_map_update_elem: `qsize > 16384` is -EOVERFLOW)"),
    ("kernel.cpumap_rt_prio", int(1, 99), "SCHED_FIFO priorities are 1..=99"),
    ("kernel.napi_rt_prio", int(1, 99), "SCHED_FIFO priorities are 1..=99"),
    ("kernel.napi_suppress_check_ms", int(1, 60_000), "ms between the suppression agent's checks; at most a minute"),
    ("kernel.napi_suppress_queued_bytes_min", int(0, 1 << 40), "bytes charged to the top level's sockets"),
    ("kernel.online_cpus", int(1, 128), "CPUs brought up (the first N of the profile's); the model has at most 128"),
    ("kernel.driver_cpu", int(0, 127), CPU_ID),
    ("kernel.ip_cpu", int(0, 127), CPU_ID),
    ("kernel.exchange_period_us", int(1, 1_000_000), "us between Symbiose's queue exchanges (paper 003: 5,000); at most 1 s"),
    ("kernel.pool_buffers", int(1, 1_048_576), "packet buffers in Symbiose's pool (2^20, as a backlog; in the memory budget)"),
    ("route", len(64), "routes; one per NIC is all forwarding can use"),
    // [[nic]]
    ("nic.*.rate_mbps", int(1, 1_000_000), "Mbit/s; 1 Tbit/s is above the fastest Ethernet port (800 Gbit/s)"),
    ("nic.*.queues", int(1, 128), "RX queues"),
    ("nic.*.rx_ring", int(1, 8_192), "RX descriptors per queue; the largest rings of real NICs (mlx5, ice) hold 8,192"),
    ("nic.*.tx_ring", int(1, 8_192), "TX descriptors; the largest rings of real NICs (mlx5, ice) hold 8,192"),
    ("nic.*.tx_queue_len", int(0, 1_048_576), "frames in the device queue (txqueuelen); 2^20 is 100x the largest common setting"),
    ("nic.*.tx_irq_ring_level", int(1, 8_192), "TX descriptors, at most a ring"),
    ("nic.*.coalesce_frames", int(1, 8_192), "frames per interrupt, at most a ring"),
    ("nic.*.coalesce_usecs", int(0, 1_000_000), "us; at most 1 s"),
    ("nic.*.irq_cpus", len(128), "CPUs"),
    ("nic.*.irq_cpus.*", int(0, 127), CPU_ID),
    ("nic.*.switch_latency_ns", int(0, 1_000_000_000), "ns; at most 1 s"),
    ("nic.*.switch_buffer_bytes", int(0, 1 << 30), "bytes; 1 GiB is far above any switch port's buffer"),
    ("nic.*.itr_ints_per_s", int(0, 1_000_000), "interrupts per second (e1000 allows up to 100,000)"),
    ("nic.*.balance_irq_interval_us", int(0, 60_000_000), "us; at most a minute"),
    ("nic.*.fdir_atr_sample_rate", int(0, 255), "frames per sample; ixgbe's atr_sample_rate is a u8"),
    ("nic.*.rsc_max_desc", int(0, 16), "descriptors per RSC aggregate; the 82599's RSCCTL.MAXDESC allows at most 16"),
    // [[process]]
    ("process.*.port", int(1, 65_535), PORT),
    ("process.*.nice", int(-20, 19), NICE),
    ("process.*.rt_priority", int(0, 99), "SCHED_FIFO priorities are 1..=99"),
    ("process.*.cpus", len(128), "CPUs"),
    ("process.*.cpus.*", int(0, 127), CPU_ID),
    ("process.*.work_ns", int(0, DAY_NS), TIME),
    ("process.*.read_bytes", int(1, 1 << 30), "bytes per recv(), at most a receive buffer"),
    ("process.*.reply_bytes", int(0, 1_472), "bytes; a reply is one unfragmented datagram"),
    ("process.*.sleep_ns", int(0, DAY_NS), TIME),
    ("process.*.renice", len(10_000), "nice changes"),
    ("process.*.renice.*.at_ms", int(0, DAY_MS), TIME),
    ("process.*.renice.*.nice", int(-20, 19), NICE),
    ("process.*.rcvbuf_bytes", int(1, 1 << 30), "bytes; Linux's sk_rcvbuf is an int and SO_RCVBUF doubles it, so 2^30"),
    ("process.*.start_ms", int(0, DAY_MS), TIME),
    ("process.*.instances", int(1, 65_535), "copies, one port each"),
    ("process.*.unit_bytes", int(0, 4_294_967_295), "bytes per send() (0 = not a stream_send)"),
    ("process.*.total_bytes", int(0, 1 << 50), "bytes to send; at most 1 PiB"),
    ("process.*.sndbuf_bytes", int(1, 1 << 30), "bytes; Linux's sk_sndbuf is an int and SO_SNDBUF doubles it, so 2^30"),
    ("process.*.speed_pct", int(1, 100), "a speed in percent, Tender's regulation"),
    ("process.*.start_jitter_us", int(0, DAY_US), TIME),
    ("process.*.thread", len(64), "threads of a multi-threaded program (an accelerator has 3)"),
    ("process.*.thread.*.cpus", len(128), "CPUs"),
    ("process.*.thread.*.cpus.*", int(0, 127), CPU_ID),
    ("process.*.accelerator.min_cycle_ms", float(0.0, 60_000.0), "ms per interval-control cycle (paper 004: 10..=100); at most a minute"),
    ("process.*.accelerator.ratio", float(0.0, 1_000.0), "the paper's k-times interval is ratio = k - 1 (paper 004: up to 4); 1,000 is far past any"),
    ("process.*.accelerator.fifo_priority", int(1, 99), "SCHED_FIFO priorities are 1..=99"),
    ("process.*.accelerator.origin_conns", int(1, 65_535), "connections to the origins, one client port each"),
    ("process.*.accelerator.origin_port", int(1, 65_535), PORT),
    ("process.*.accelerator.origin_request_bytes", int(1, 1_460), "bytes; a request is one TCP segment"),
    ("process.*.accelerator.read_bytes", int(1, 1 << 30), "bytes per read(), at most a receive buffer"),
    ("process.*.accelerator.listen_backlog", int(1, 65_535), "connections; Linux's somaxconn is at most 65,535 (a u16 before 4.1)"),
    ("process.*.accelerator.*_ns", int(0, 1_000_000_000), "ns; user work costing more than 1 s per step is a hang, not a cost"),
    // [[traffic]]
    ("traffic.*.dst_port", int(1, 65_535), PORT),
    ("traffic.*.clients", int(1, 65_535), "client machines, one port each"),
    ("traffic.*.rate_pps", float(0.0, 1e9), "packets per second; a frame takes at least 1 ns on the fastest link"),
    ("traffic.*.payload_bytes", int(0, 1_472), "bytes; one unfragmented frame"),
    ("traffic.*.flows", int(1, 1_048_576), "flows (2^20)"),
    ("traffic.*.start_ms", int(0, DAY_MS), TIME),
    ("traffic.*.stop_ms", int(0, DAY_MS), TIME),
    ("traffic.*.link_mbps", int(1, 1_000_000), "Mbit/s; 1 Tbit/s is above the fastest Ethernet port (800 Gbit/s)"),
    ("traffic.*.quantum_us", int(0, DAY_US), TIME),
    ("traffic.*.burst_pps", float(0.0, 1e9), "packets per second; a frame takes at least 1 ns on the fastest link"),
    ("traffic.*.spread", float(0.0, 1.0), "a fraction of the pacing quantum (0: burst_pps)"),
    ("traffic.*.client_stack_ns", int(0, 1_000_000_000), "ns; at most 1 s"),
    ("traffic.*.timeout_ms", int(1, 3_600_000), "ms; at most an hour"),
    ("traffic.*.window_bytes", int(1, 1 << 30), "bytes; RFC 7323 window scaling reaches 2^30"),
    ("traffic.*.rto_ms", int(1, 120_000), "ms; Linux's TCP_RTO_MAX is 120 s"),
    ("traffic.*.tcp_hz", int(1, 10_000), "timer interrupts per second of the senders' kernel; Linux offers 100..=1000"),
    ("traffic.*.total_bytes", int(0, 1 << 50), "bytes per flow (0 = unlimited); at most 1 PiB"),
    ("traffic.*.link_delay_us", int(0, 1_000_000), "us of one-way propagation; 1 s is longer than any path on Earth or to a geostationary satellite"),
    ("traffic.*.http.rate_rps", float(0.0, 1e7), "requests per second (paper 004: 2,000); 10^7 is past any one accelerator"),
    ("traffic.*.http.conns", int(1, 262_144), "persistent connections (paper 004: ~7,000); 2^18, in the memory budget"),
    ("traffic.*.http.request_bytes", int(1, 1_460), "bytes; a request is one TCP segment"),
    ("traffic.*.http.response_header_bytes", int(0, 65_536), "bytes of HTTP response header"),
    ("traffic.*.http.hit_ratio", float(0.0, 1.0), "a probability"),
    ("traffic.*.http.object_bytes", int(0, 1 << 30), "bytes per object; at most 1 GiB"),
    ("traffic.*.http.size_scale", float(0.0, 1_000.0), "a multiplier on the object-size mix; above 0"),
    ("traffic.*.http.conn_uses_zipf", int(1, 1_000_000), "the Zipf parameter N of requests per connection (paper 004: 16)"),
    ("traffic.*.http.connect_ramp_ms", int(0, DAY_MS), TIME),
    ("traffic.*.http.delack_ms", int(0, 60_000), "ms; Linux's delayed ACK is 40..=200 ms"),
    ("traffic.*.http.timeout_ms", int(1, 3_600_000), "ms; at most an hour"),
    ("traffic.*.http.drain_ms", int(0, DAY_MS), TIME),
    ("traffic.*.http.think_ms_mean", float(0.0, 86_400_000.0), TIME),
    ("traffic.*.http.think_ms_sd", float(0.0, 86_400_000.0), TIME),
    // [[expect]] and [[figure]]: values compared with or drawn, never simulated.
    ("expect.*.paper_value", finite(), ""),
    ("expect.*.value", finite(), ""),
    ("expect.*.factor", finite(), ""),
    ("expect.*.offset", finite(), ""),
    ("expect.*.tolerance_abs", float(0.0, 1e15), "an absolute tolerance, in the metric's unit"),
    ("expect.*.tolerance", float(0.0, 1e6), "a relative tolerance"),
    // A condition's number: NaN would make every comparison false and a claim fail unseen.
    ("expect.*.where", len(100), "conditions"),
    ("expect.*.where.*.value", finite(), ""),
    ("expect.*.where.*.factor", finite(), ""),
    ("expect.*.rhs.where", len(100), "conditions"),
    ("expect.*.rhs.where.*.value", finite(), ""),
    ("expect.*.rhs.where.*.factor", finite(), ""),
    ("figure.*.marks", len(10_000), "marks"),
    ("figure.*.marks.*.x", finite(), ""),
    ("figure.*.marks.*.y", finite(), ""),
];

/// Keys of a machine profile (in a scenario: under `profile_set`).
#[rustfmt::skip]
pub const PROFILE: &[Bound] = &[
    ("clock_mhz", int(1, 10_000), "MHz"),
    ("topology.packages", int(1, 128), "packages; the model has at most 128 CPUs"),
    ("topology.cores_per_package", int(1, 128), "cores; the model has at most 128 CPUs"),
    ("topology.threads_per_core", int(1, 8), "hardware threads; SMT8 is the most any CPU has"),
    ("costs.*_per_byte_ns", float(0.0, 1_000.0), "ns per byte; 1 us per byte is slower than a 1 MHz CPU's copy"),
    ("costs.newidle_balance_per_cpu_ns", int(0, 1_000_000), "ns per CPU of a domain; 1 ms per CPU would be a balance pass of a second on a 1,000-CPU domain"),
    ("costs.*", int(0, 1_000_000_000), "ns; an operation costing more than 1 s is a hang, not a cost"),
    ("cache.*_ns", int(0, 1_000_000_000), "ns; an operation costing more than 1 s is a hang, not a cost"),
    ("cache.*", int(0, 1_000_000), "modelled misses per event"),
    ("mechanisms.smp_lock_factor", float(1.0, 10.0), "a multiplier on the locking-sensitive costs: SMP locking adds cost (>= 1; measured factors are ~1.15)"),
    ("mechanisms.*", int(0, 1_000_000_000), "ns; an operation costing more than 1 s is a hang, not a cost"),
    ("syscalls.*", int(0, 1_000_000_000), "ns; a system call costing more than 1 s is a hang, not a cost"),
];

/// A value outside its bound: where it is (segments from the document's root) and the message.
pub type Violation = (Vec<Seg>, String);

/// Check every value of the document `doc` against the first row of `table` whose pattern
/// matches its key; `prefix` is where `doc` sits in the scenario (`profile_set` for profile keys).
/// The first violation in document order is returned.
pub fn check(doc: &Table, table: &'static [Bound], prefix: &[Seg]) -> Result<(), Violation> {
    let trie = trie(table);
    let mut at = prefix.to_vec();
    visit_table(doc, trie, table, &[0], &mut at)
}

/// The patterns of a table as a trie, built once: a node's children by literal segment and by
/// wildcard (`*` or `*suffix`), and the first row whose pattern ends at the node.
#[derive(Default)]
struct Node {
    lit: std::collections::BTreeMap<&'static str, usize>,
    wild: Vec<(&'static str, usize)>,
    ends: Option<usize>,
}

fn trie(table: &'static [Bound]) -> &'static [Node] {
    use std::sync::OnceLock;
    static SCEN: OnceLock<Vec<Node>> = OnceLock::new();
    static PROF: OnceLock<Vec<Node>> = OnceLock::new();
    let make = || {
        let mut nodes = vec![Node::default()];
        for (row, (pattern, _, _)) in table.iter().enumerate() {
            let mut n = 0;
            for seg in pattern.split('.') {
                let next = if let Some(suffix) = seg.strip_prefix('*') {
                    nodes[n].wild.iter().find(|(s, _)| *s == suffix).map(|w| w.1)
                } else {
                    nodes[n].lit.get(seg).copied()
                };
                n = match next {
                    Some(c) => c,
                    None => {
                        nodes.push(Node::default());
                        let c = nodes.len() - 1;
                        match seg.strip_prefix('*') {
                            Some(suffix) => nodes[n].wild.push((suffix, c)),
                            None => {
                                nodes[n].lit.insert(seg, c);
                            }
                        }
                        c
                    }
                };
            }
            nodes[n].ends.get_or_insert(row);
        }
        nodes
    };
    if std::ptr::eq(table, SCENARIO) {
        SCEN.get_or_init(make)
    } else if std::ptr::eq(table, PROFILE) {
        PROF.get_or_init(make)
    } else {
        Box::leak(make().into_boxed_slice())
    }
}

/// The trie nodes a child reached by `seg` matches, from the nodes `at` its parent matched.
fn step(trie: &[Node], from: &[usize], seg: Option<&str>) -> Vec<usize> {
    let mut out = Vec::new();
    for &n in from {
        if let Some(k) = seg {
            if let Some(&c) = trie[n].lit.get(k) {
                out.push(c);
            }
        }
        for &(suffix, c) in &trie[n].wild {
            let hit = match seg {
                Some(k) => k.ends_with(suffix),
                None => suffix.is_empty(),
            };
            if hit {
                out.push(c);
            }
        }
    }
    out
}

fn visit_table(t: &Table, trie: &[Node], table: &[Bound], nodes: &[usize], at: &mut Vec<Seg>) -> Result<(), Violation> {
    for (k, v) in t {
        let next = step(trie, nodes, Some(k));
        if next.is_empty() {
            continue;
        }
        at.push(Seg::Key(k.clone()));
        let r = visit(v, trie, table, &next, at);
        at.pop();
        r?;
    }
    Ok(())
}

/// `v` is at `at`; `nodes` are the trie nodes its path matches.
fn visit(v: &Value, trie: &[Node], table: &[Bound], nodes: &[usize], at: &mut Vec<Seg>) -> Result<(), Violation> {
    // The first row (in table order) ending here applies to this value.
    if let Some(row) = nodes.iter().filter_map(|&n| trie[n].ends).min() {
        let (_, range, why) = &table[row];
        check_value(v, range, why).map_err(|m| (at.clone(), m))?;
    }
    match v {
        Value::Table(t) => visit_table(t, trie, table, nodes, at),
        Value::Array(items) => {
            let next = step(trie, nodes, None);
            if next.is_empty() {
                return Ok(());
            }
            for (i, item) in items.iter().enumerate() {
                at.push(Seg::Index(i));
                let r = visit(item, trie, table, &next, at);
                at.pop();
                r?;
            }
            Ok(())
        }
        // Anything else has the wrong shape: deserialisation names the type it expected.
        _ => Ok(()),
    }
}

#[cfg(test)]
fn seg_matches(pat: &str, seg: &Seg) -> bool {
    match seg {
        Seg::Index(_) => pat == "*",
        Seg::Key(key) => match pat.strip_prefix('*') {
            Some("") => true,
            Some(suffix) => key.ends_with(suffix),
            None => pat == key,
        },
    }
}

fn type_of(v: &Value) -> String {
    match v {
        Value::String(s) => format!("a string {s:?}"),
        Value::Integer(i) => format!("{i}"),
        Value::Float(f) => fmt_float(*f),
        Value::Boolean(b) => format!("{b}"),
        Value::Datetime(d) => format!("a date-time {d}"),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

/// A number as messages show it: whole numbers like `fmt_int`, `nan`, `inf`.
pub fn fmt_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if f.fract() == 0.0 && f.abs() < 1e15 {
        fmt_int(f as i64)
    } else if f != 0.0 && (f.abs() < 1e-3 || f.abs() >= 1e15) {
        // 1e-300 as `1e-300`, not three hundred zeros.
        format!("{f:e}")
    } else {
        format!("{f}")
    }
}

/// A whole number with `_` every three digits, as TOML allows writing it.
pub fn fmt_int(i: i64) -> String {
    let digits = i.unsigned_abs().to_string();
    if digits.len() <= 5 {
        return i.to_string();
    }
    let mut out = String::new();
    for (n, c) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    if i < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// The allowed values, as the message says them.
pub fn describe(range: &Range, why: &str) -> String {
    let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
    match range {
        Range::Int(min, max) => format!("a whole number in {}..={}{why}", fmt_int(*min), fmt_int(*max)),
        Range::Float(min, max) => format!("a number in {}..={}{why}", fmt_float(*min), fmt_float(*max)),
        Range::Finite => format!("a finite number{why}"),
        Range::Len(max) => format!("an array of at most {} elements{why}", fmt_int(*max as i64)),
    }
}

fn check_value(v: &Value, range: &Range, why: &str) -> Result<(), String> {
    let want = || describe(range, why);
    let bad = |got: String| Err(format!("expected {}, got {got}", want()));
    let wrong_type = || Err(format!("invalid type: {}, expected {}", type_of(v), want()));
    match (range, v) {
        (Range::Int(min, max), Value::Integer(i)) => {
            if i < min || i > max {
                return bad(i.to_string());
            }
        }
        (Range::Int(..), Value::Float(f)) => return bad(fmt_float(*f)),
        (Range::Float(min, max), Value::Float(f)) => {
            if !(f.is_finite() && f >= min && f <= max) {
                return bad(fmt_float(*f));
            }
        }
        (Range::Float(min, max), Value::Integer(i)) => {
            let f = *i as f64;
            if f < *min || f > *max {
                return bad(i.to_string());
            }
        }
        (Range::Finite, Value::Float(f)) => {
            if !f.is_finite() {
                return bad(fmt_float(*f));
            }
        }
        (Range::Finite, Value::Integer(_)) => {}
        (Range::Len(max), Value::Array(a)) => {
            if a.len() > *max {
                return Err(format!("expected {}, got {} elements", want(), fmt_int(a.len() as i64)));
            }
        }
        // A string where a name is allowed (`Finite` on a non-numeric key) is not ours to judge.
        (Range::Finite, _) | (Range::Len(_), _) => {}
        (
            Range::Int(..) | Range::Float(..),
            Value::String(_) | Value::Boolean(_) | Value::Datetime(_) | Value::Array(_) | Value::Table(_),
        ) => return wrong_type(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> Table {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_and_types() {
        let k = |s: &str| Seg::Key(s.into());
        let e = check(&doc("[[nic]]\nname = \"a\"\nrx_ring = 100000\n"), SCENARIO, &[]).unwrap_err();
        assert_eq!(e.0, vec![k("nic"), Seg::Index(0), k("rx_ring")]);
        assert!(e.1.starts_with("expected a whole number in 1..=8192 ("), "{}", e.1);
        assert!(e.1.ends_with("got 100000"), "{}", e.1);
        let e = check(&doc("duration_ms = -5\n"), SCENARIO, &[]).unwrap_err();
        assert!(e.1.contains("1..=86_400_000") && e.1.ends_with("got -5"), "{}", e.1);
        let e = check(&doc("duration_ms = \"50\"\n"), SCENARIO, &[]).unwrap_err();
        assert!(e.1.starts_with("invalid type: a string \"50\", expected a whole number"), "{}", e.1);
        let e = check(&doc("[[traffic]]\nrate_pps = nan\n"), SCENARIO, &[]).unwrap_err();
        assert!(e.1.ends_with("got nan"), "{}", e.1);
        let e = check(&doc("[kernel]\nrps_cpus = [0, 300]\n"), SCENARIO, &[]).unwrap_err();
        assert_eq!(e.0, vec![k("kernel"), k("rps_cpus"), Seg::Index(1)]);
        let e = check(&doc("[costs]\ncopy_per_byte_ns = 1e9\n"), PROFILE, &[k("profile_set")]).unwrap_err();
        assert_eq!(e.0, vec![k("profile_set"), k("costs"), k("copy_per_byte_ns")]);
        assert!(check(&doc("[costs]\ncopy_per_byte_ns = 2\nrecv_ns = 5\n"), PROFILE, &[]).is_ok());
        assert!(check(&doc("[[nic]]\nirq_routing = \"msix\"\n"), SCENARIO, &[]).is_ok());
    }

    /// Every number a scenario or profile can set, found by serialising each configuration type
    /// with all its fields, must have a row. A new key without one fails here.
    #[test]
    fn every_numeric_key_has_a_bound() {
        use hostsim_host::{KernelConfig, NicConfig, ProcessConfig, Profile, TrafficConfig};
        let mut doc = Table::new();
        for k in ["duration_ms", "warmup_ms", "seed", "sample_interval_ms"] {
            doc.insert(k.into(), Value::Integer(1));
        }
        let kernel = KernelConfig {
            rps_cpus: vec![0],
            flow_limit_cpus: vec![0],
            online_cpus: Some(1),
            ..KernelConfig::default()
        };
        doc.insert("kernel".into(), Value::try_from(kernel).unwrap());
        let nic: NicConfig = toml::from_str(
            "name = \"a\"\nrate_mbps = 1\nbalance_irq_interval_us = 1\nirq_cpus = [0]\ntx_irq_ring_level = 1",
        )
        .unwrap();
        let process: ProcessConfig = toml::from_str("name = \"a\"\nprogram = \"udp_sink\"\nport = 1\ncpus = [0]\nrenice = [{ at_ms = 1, nice = 0 }]\nrcvbuf_bytes = 1\nsndbuf_bytes = 1\nspeed_pct = 50\naccelerator = { origin = \"o\" }\nthread = [{ name = \"t\", program = \"io\", cpus = [0] }]").unwrap();
        let traffic: TrafficConfig = toml::from_str("name = \"a\"\nkind = \"cbr\"\nnic = \"a\"\ndst_port = 1\nstop_ms = 1\nlink_delay_us = 1\nhttp = { rate_rps = 1 }").unwrap();
        let expect: crate::Expect = toml::from_str(
            "claim = \"\"\nmetric = \"m\"\nop = \"<\"\nvalue = 1\npaper_value = 1\ntolerance = 1\ntolerance_abs = 1",
        )
        .unwrap();
        let figure: crate::Figure = toml::from_str("title = \"\"\ny = \"m\"\nmarks = [{ x = 1, y = 1 }]").unwrap();
        for (k, v) in [
            ("nic", Value::try_from(nic).unwrap()),
            ("process", Value::try_from(process).unwrap()),
            ("traffic", Value::try_from(traffic).unwrap()),
            ("expect", Value::try_from(expect).unwrap()),
            ("figure", Value::try_from(figure).unwrap()),
        ] {
            doc.insert(k.into(), Value::Array(vec![v]));
        }
        // Every built-in profile: optional tables ([syscalls]) are in some only.
        let profiles: Vec<Value> = crate::builtin_profiles()
            .iter()
            .map(|(_, text)| Value::try_from(toml::from_str::<Profile>(text).unwrap()).unwrap())
            .collect();
        assert!(profiles.iter().any(|p| p.get("syscalls").is_some()), "a profile with [syscalls]");
        let mut missing = Vec::new();
        fn leaves(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
            match v {
                Value::Table(t) => {
                    for (k, x) in t {
                        path.push(Seg::Key(k.clone()));
                        leaves(x, path, out);
                        path.pop();
                    }
                }
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        path.push(Seg::Index(i));
                        leaves(x, path, out);
                        path.pop();
                    }
                }
                Value::Integer(_) | Value::Float(_) => out.push(path.clone()),
                _ => {}
            }
        }
        let doc = Value::Table(doc);
        for (d, table) in std::iter::once((&doc, SCENARIO)).chain(profiles.iter().map(|p| (p, PROFILE))) {
            let mut found = Vec::new();
            leaves(d, &mut Vec::new(), &mut found);
            assert!(found.len() > 20);
            for path in found {
                let covered = table.iter().any(|(p, r, _)| {
                    let pat: Vec<&str> = p.split('.').collect();
                    !matches!(r, Range::Len(_))
                        && pat.len() == path.len()
                        && pat.iter().zip(&path).all(|(p, s)| seg_matches(p, s))
                });
                if !covered {
                    missing.push(crate::paths::render(&path));
                }
            }
        }
        assert!(missing.is_empty(), "numbers without a row in bounds.rs: {missing:?}");
    }

    /// The defaults of every key are inside its range.
    #[test]
    fn defaults_are_in_range() {
        let mut doc = Table::new();
        doc.insert("kernel".into(), Value::try_from(hostsim_host::KernelConfig::default()).unwrap());
        check(&doc, SCENARIO, &[]).unwrap();
        for (name, text) in crate::builtin_profiles() {
            let t: Table = text.parse().unwrap();
            check(&t, PROFILE, &[]).unwrap_or_else(|e| panic!("profile {name}: {e:?}"));
        }
    }

    #[test]
    fn numbers_read_like_toml() {
        assert_eq!(fmt_int(86_400_000), "86_400_000");
        assert_eq!(fmt_int(-1_000_000), "-1_000_000");
        assert_eq!(fmt_int(65_535), "65535");
    }
}
