//! # `ozaki-pbq` on today's Linux
//!
//! Paper 000 drops low-priority packets at the first point the kernel sees them, so that a
//! high-priority server keeps receiving under a flood. On Linux 6.x that point is XDP. This
//! folder runs that mechanism for real and measures it with the model's metric names, so the
//! model twin (`scenarios/live-ozaki-pbq.toml`, `hostsim_host::mechanisms::ozaki_pbq::xdp`) can
//! be checked against it: `hostsim live ozaki-pbq` ([`Options`], the experiment) and `hostsim
//! live pbq` ([`tool`], the agent on a server's own interface).
//!
//! ```text
//!   bpf/pbq_xdp.bpf.c   the XDP program and its bind/release hooks (C, libbpf; skeleton by build.rs)
//!   bpf/pbq.h           the control block and counters, shared by the program and xdp.rs
//!   xdp.rs              load/attach, control block, port → level map, counters, test run
//!   agent.rs            the port table's upkeep; high load from the run's own counters
//!   suppress.rs         §3.3's interrupt suppression, live: NAPI kthreads moved/lowered
//!   hooks.rs            bind()/close() hooks (cgroup/post_bind4/6, sock_release); renice rescan
//!   tool.rs             `hostsim live pbq --dev IFACE`: the agent on a server's interface
//!   flow_limit.rs       today's counterpart: the kernel's RPS flow limit (variant `flow-limit`)
//!   experiment.rs       the experiment: topology, sweep, points (the generator: ../gen.rs)
//! ```
//!
//! ## The mechanism, and where it differs from the PBQs of `crates/host/src/mechanisms/ozaki_pbq/pbq.rs`
//!
//! | paper 000 (PBQs in the 2.4 backlog)                         | here (XDP at veth's NAPI poll)                                   |
//! |-------------------------------------------------------------|------------------------------------------------------------------|
//! | priority from a port → priority hash kept by bind()/nice()  | the same table, a BPF array set by cgroup bind/release hooks; nice: a rescan of the binders |
//! | high load = the backlog's throttle flag, seen at enqueue    | a flag the agent sets from the kernel's counters, every 10 ms     |
//! | full PBQs: evict the tail of a random lower-priority queue  | admit or drop the arrival; lower levels are shed first, graded    |
//! | per-queue minimum length, smaller for lower priorities      | per-level minimum rate (packets per 10 ms window), smaller lower  |
//! | dequeue by priority (`find_first_bit`)                      | none: what passes goes FIFO through the backlog                   |
//! | costs the hard-IRQ handler driver + `netif_rx` per packet   | costs the driver's poll + the program run (tens of ns)            |
//!
//! Why: XDP sees one frame at a time and no queue, so there is nothing to evict or reorder; it
//! can only admit or drop, and it does so before RPS, the backlog, IP/UDP and the socket have
//! spent anything on the frame, which is the paper's point ("decide before CPU time is spent",
//! §3.2). Interrupt suppression (§3.3), the paper's second half, runs on the threaded-NAPI
//! kthreads of the `threaded` placement ([`suppress`]).
//!
//! ## High load: only the run's own counters
//!
//! See [`agent`]: the arrival rate the program counts on the run's own veths against the
//! receiver's capacity measured with the mechanism off, and drops on the run's own
//! highest-priority sockets, start it; the arrival rate ends it. Never `/proc/net/softnet_stat`,
//! whose per-CPU rows every namespace and concurrent run shares. The state machine is
//! `hostsim_host::mechanisms::ozaki_pbq::xdp::Detector`, shared with the model.
//!
//! ## What a run changes on the machine, and how it is undone
//!
//! Two network namespaces `hsl-<pid>-<n>-{srv,cli}` with two veth pairs between them and a spare
//! pair in `cli` (the generator's parking place, [`crate::gen`]), RPS masks and threaded NAPI on the
//! server's two veths (the NAPI kthreads' affinity and policy recorded), the XDP programs
//! attached through bpf_links, the bind hooks attached (bpf_links) to a cgroup2 group
//! `hsl-<pid>-<n>-hooks` the sinks join ([`hooks`]), the worker processes, and a CPU cgroup
//! `hsl-<pid>-<n>` holding them (see [`crate::cgroup`]), each recorded in the run's ledger. On a
//! normal exit, an error, and SIGINT, SIGTERM, SIGHUP or SIGQUIT (which every wait loop checks)
//! the agent detaches the links and the harness undoes the ledger: namespaces deleted (with their
//! veths and RPS masks), cgroups removed. Workers die with the run (PR_SET_PDEATHSIG) and stop by
//! themselves after their time limit. After a SIGKILL the ledger remains; the next run (or
//! `hostsim live clean`) undoes it. Nothing in the root namespace and no pinned BPF object is
//! touched; the one global sysctl, `net.core.flow_limit_cpu_bitmap`, only by a run with the
//! `flow-limit` variant (today's counterpart, [`flow_limit`]), through the ledger: the value it
//! had is written back on every ending and by `hostsim live clean`.

pub mod agent;
pub mod experiment;
pub mod flow_limit;
pub mod hooks;
pub mod suppress;
pub mod tool;
pub mod xdp;

use crate::command::{f64_in, positive_up_to, Common};
use crate::worker::WorkerExe;
use agent::AgentConfig;
pub use agent::Ports;
use suppress::Knob;

crate::named_values! {
    /// Where the server veths' receive work runs (module doc).
    pub enum RxPlacement {
        /// NAPI (and the program) on the generator's CPU, RPS to the server's CPU.
        Rps = "rps",
        /// NAPI kthreads on the server's CPU at SCHED_FIFO.
        Threaded = "threaded",
    }
}

crate::named_values! {
    /// The mechanism's variants, as the model's `ozaki-pbq-throughput` has them (original, pbq,
    /// suppression, proposed); `on` keeps its earlier name (the priority drop only).
    pub enum Variant {
        /// The program attached, counting only: the baseline.
        Off = "off",
        /// The priority drop (PBQ's stand-in) only.
        On = "on",
        /// Interrupt suppression only (`suppress.rs`).
        Supp = "supp",
        /// Both, as the paper's proposal.
        Both = "both",
        /// Today's counterpart (issue 45): the program counts only, and the kernel's RPS flow
        /// limit is on (`flow_limit.rs`; `rps` placement only).
        FlowLimit = "flow-limit",
    }
}

impl Variant {
    pub fn drops(self) -> bool {
        matches!(self, Variant::On | Variant::Both)
    }

    pub fn suppresses(self) -> bool {
        matches!(self, Variant::Supp | Variant::Both)
    }

    /// The kernel's RPS flow limit on (`flow_limit.rs`).
    pub fn limits_flows(self) -> bool {
        self == Variant::FlowLimit
    }
}

/// Paper 000's Fig. 5 on this kernel: bw under a flood, the XDP priority drop off and on.
///
/// A nice -19 UDP counter (bw)
/// under a nice 19 flood from a kernel-side paced generator, the flood rate swept past the
/// receiver's capacity, the XDP priority drop off and on at the same offered load, two
/// placements of the receive work, 3 repetitions. Writes DIR/results.csv (the model's metric
/// names) and DIR/run.json.
#[derive(clap::Args, Clone, Debug, serde::Serialize)]
pub struct Options {
    #[command(flatten)]
    #[serde(flatten)]
    pub common: Common,
    /// Total flood rates of the four flows, pkt/s, comma-separated [--quick: 400000, one flood
    /// past the receiver's capacity].
    #[arg(long = "rates", value_name = "PPS", value_delimiter = ',', default_value = "200000,500000,800000,1000000",
          default_value_if("quick", "true", "400000"), value_parser = f64_in(0.0, 5e6, "pkt/s"))]
    pub rates_pps: Vec<f64>,
    /// Variants to run at each rate: `supp` and `both` only in the `threaded` placement (in `rps`
    /// no kthread carries the receive work to move), `flow-limit` (today's counterpart, not in
    /// the default list) only in `rps` (in `threaded` no packet enters a backlog) [--quick: off,on].
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "off,on,supp,both",
        default_value_if("quick", "true", "off,on")
    )]
    pub variants: Vec<Variant>,
    /// Flows of the flood: its frames go round the first N of the four flood ports (the
    /// paper's four flood clients; 1 = one flow, the case the RPS flow limit can single out).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=4))]
    pub flood_flows: u16,
    /// Where the server veths' receive work runs [--quick: rps].
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "rps,threaded",
        default_value_if("quick", "true", "rps")
    )]
    pub placements: Vec<RxPlacement>,
    /// Warm-up before each window, seconds [--quick: 0.3].
    #[arg(long, default_value_t = 0.5, default_value_if("quick", "true", "0.3"), value_parser = f64_in(0.0, 30.0, "s"))]
    pub warmup_s: f64,
    /// Measurement window per point, seconds [--quick: 0.6].
    #[arg(long, default_value_t = 2.0, default_value_if("quick", "true", "0.6"), value_parser = f64_in(0.1, 60.0, "s"))]
    pub window_s: f64,
    /// The bw client's rate, pkt/s (the paper's 34,000).
    #[arg(long = "bw-rate", value_name = "PPS", default_value_t = 34_000.0, value_parser = f64_in(1.0, 1e6, "pkt/s"))]
    pub bw_rate_pps: f64,
    /// Interrupt suppression's knob (suppress.rs).
    #[arg(long, value_enum, default_value = "affinity")]
    pub supp_knob: Knob,
    /// The receiver's capacity for the detector, pkt/s (default: measured on the `off` points:
    /// the largest delivered rate of a valid `off` point of the same placement whose receiver
    /// lost packets).
    #[arg(long, value_parser = positive_up_to(5e7, "pkt/s"))]
    pub capacity_pps: Option<f64>,
    /// Where ports' priorities come from.
    #[arg(long, value_enum, default_value = "hooks")]
    pub ports: Ports,
    /// The server sockets' receive limit (`sk_rcvbuf`), bytes: 0 = this machine's
    /// `rmem_default`; 65535 is Linux 2.4's, the paper's (why not the default: the docs book's
    /// ozaki-pbq page). The sinks ask SO_RCVBUF for half of it, which the kernel doubles.
    #[arg(long = "rcvbuf", value_name = "BYTES", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=2 * crate::worker::RCVBUF_MAX as i64))]
    pub rcvbuf_bytes: u32,
    /// Frames per batch the generator hands a server veth's 256-frame ring (the kernel's
    /// TEST_XDP_MAX_BATCH is 256). With 256-frame batches a woken threaded-NAPI kthread found its
    /// ring full while its CPU was half idle: the ring, not the receiver, was the bottleneck.
    #[arg(long, value_name = "FRAMES", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub gen_batch: u32,
    /// The flood stream's quantum, microseconds of its frames per call (bw's stays 1000). Two
    /// streams in 500 µs quanta made ~4,000 calls a second, and after a minute of a sweep every
    /// other call failed with ENOSPC (the page-pool pitfall, gen.rs).
    #[arg(long, value_name = "US", default_value_t = 1000.0, value_parser = f64_in(50.0, 5000.0, "µs"))]
    pub gen_quantum_us: f64,
    /// Spread each of the flood's calls evenly over this fraction of its quantum (0: its frames
    /// back to back in batches; at most 0.95, the generator's CPU keeping the rest for its other
    /// tasks). The generator's CPU spins for the frames' slots; calls per second do not change.
    #[arg(long, value_name = "FRAC", default_value_t = 0.0, value_parser = f64_in(0.0, 0.95, "of the quantum"))]
    pub gen_spread: f64,
    /// bw's EEVDF slice, microseconds: 100, the shortest the kernel grants, makes bw's wake-up
    /// preempt its CPU's other tasks, as a nice -19 wake-up did on 2.4 (`reschedule_idle`);
    /// 0 = the kernel's base slice, with which bw lost 2-3 % of its frames to other processes.
    #[arg(long, value_name = "US", default_value_t = 100, value_parser = bw_slice_us)]
    pub bw_slice_us: u32,
    /// The server processes' CPU and the generator's (the receive work's placement decides
    /// where the veths' NAPI poll runs).
    #[arg(skip = 0usize)]
    pub server_cpu: usize,
    #[arg(skip = 1usize)]
    pub client_cpu: usize,
    /// The generator thread's SCHED_FIFO priority (None: normal), and the threaded NAPI
    /// kthreads' (placement `threaded`).
    #[arg(skip = Some(50))]
    pub gen_fifo_prio: Option<i32>,
    #[arg(skip = 50i32)]
    pub napi_fifo_prio: i32,
    /// Interrupt suppression's poll period (suppress.rs).
    #[arg(skip = 1u64)]
    pub supp_check_ms: u64,
    /// UDP payload (at least 8: the sequence number).
    #[arg(skip = 18usize)]
    pub payload_bytes: usize,
    /// The generator's largest call (`Pacing::call_frames_max`): 4,096 frames, so that a
    /// stream's 1 ms quantum is one call up to 4,096,000 pkt/s. With 1,024, a flood of
    /// 2,100,000–2,400,000 pkt/s took 3 calls a quantum (~4,000 calls a second with bw's), and
    /// in the second minute of the sweep a third of the calls failed with ENOSPC (the page-pool
    /// pitfall, gen.rs; the flood sinks at nice 19 hold their frames' pages in full sockets).
    #[arg(skip = 4096u32)]
    pub gen_call_frames_max: u32,
    /// A point is valid when each stream achieved at least this fraction of its rate.
    #[arg(skip = 0.98)]
    pub valid_frac: f64,
    /// The agent's parameters (the detector's are the model's `[kernel] xdp_*` defaults; its
    /// port source is set from `--ports` when the run starts).
    #[arg(skip)]
    #[serde(serialize_with = "crate::command::as_debug")]
    pub agent: AgentConfig,
    /// Run the workers in a CPU cgroup of the largest weight (see `cgroup.rs`).
    #[arg(skip = true)]
    pub cgroup: bool,
    #[arg(skip)]
    #[serde(skip)]
    pub worker: WorkerExe,
}

/// `--bw-slice-us`: 0 (the kernel's base slice) or the kernel's clamp, 100..=100,000 µs.
fn bw_slice_us(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(us) if us == 0 || (100..=100_000).contains(&us) => Ok(us),
        _ => Err(format!("expected 0 (the kernel's base slice) or 100..=100000 µs (the kernel's clamp), got {s}")),
    }
}

impl Options {
    /// bw's slice as `sched_setattr` takes it (None: the kernel's base slice).
    pub fn bw_slice_ns(&self) -> Option<u64> {
        (self.bw_slice_us > 0).then_some(u64::from(self.bw_slice_us) * 1000)
    }

    /// The variants run in placement `p` (`supp` and `both` need the threaded kthreads, the
    /// flow limit a backlog: `rps`).
    pub fn variants_in(&self, p: RxPlacement) -> Vec<Variant> {
        let mut v: Vec<Variant> = self
            .variants
            .iter()
            .copied()
            .filter(|v| if p == RxPlacement::Threaded { !v.limits_flows() } else { !v.suppresses() })
            .collect();
        v.sort(); // `off` first: the detector's capacity comes from `off` points only
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::testing::{assert_refused, options};
    use crate::command::Experiment;

    #[test]
    fn the_options_are_the_experiments_configuration() {
        let o: Options = options(&[]).unwrap();
        assert_eq!(o.rates_pps, [200_000.0, 500_000.0, 800_000.0, 1_000_000.0]);
        assert_eq!(o.variants, [Variant::Off, Variant::On, Variant::Supp, Variant::Both]);
        assert_eq!((o.common.reps, o.window_s, o.warmup_s, o.ports), (3, 2.0, 0.5, Ports::Hooks));
        assert_eq!((o.bw_slice_ns(), o.gen_spread, o.rcvbuf_bytes), (Some(100_000), 0.0, 0));
        assert_eq!(o.points(), 4 * (2 + 4) * 3, "supp and both only in threaded");
        let q: Options = options(&["--quick"]).unwrap();
        assert_eq!((q.rates_pps.as_slice(), q.placements.as_slice()), (&[400_000.0][..], &[RxPlacement::Rps][..]));
        let got = (q.variants.as_slice(), q.common.reps, q.warmup_s, q.window_s);
        assert_eq!(got, (&[Variant::Off, Variant::On][..], 1, 0.3, 0.6));
        assert_eq!(q.points(), 2);
        let v = serde_json::to_value(&o).unwrap();
        let got = (v["ports"].as_str(), v["supp_knob"].as_str(), v["reps"].as_u64());
        assert_eq!(got, (Some("hooks"), Some("affinity"), Some(3)));
        assert_eq!(v["variants"], serde_json::json!(["off", "on", "supp", "both"]));
    }

    #[test]
    fn ranges_and_names_are_checked_by_the_parser() {
        let bad: [&[&str]; 12] = [
            &["--gen-spread=-0.1"],
            &["--gen-spread=0.96"],
            &["--gen-spread=1"],
            &["--gen-spread=nan"],
            &["--bw-slice-us", "1"],
            &["--bw-slice-us", "99"],
            &["--bw-slice-us", "100001"],
            &["--ports", "procfs"],
            &["--variants", "on,off,fast"],
            &["--gen-batch", "257"],
            &["--capacity-pps", "0"],
            &["--rates", "1e7"],
        ];
        assert_refused::<Options>(&bad);
        assert!(options::<Options>(&["--bw-slice-us", "99"])
            .unwrap_err()
            .contains("expected 0 (the kernel's base slice)"));
        assert!(options::<Options>(&["--ports", "procfs"]).unwrap_err().contains("[possible values: hooks, proc]"));
        let o: Options = options(&["--gen-spread", "0.75", "--bw-slice-us", "0", "--ports", "proc"]).unwrap();
        assert_eq!((o.gen_spread, o.bw_slice_ns(), o.ports), (0.75, None, Ports::Proc));
    }

    /// Today's counterpart runs where it can act: the flow limit needs a backlog (`rps`), as
    /// suppression needs the kthreads (`threaded`); the flood's flows are 1..=4 of its ports.
    #[test]
    fn the_flow_limit_runs_in_the_rps_placement_only() {
        let o: Options = options(&["--variants", "flow-limit,supp,off,on", "--placements", "rps,threaded"]).unwrap();
        assert_eq!(o.variants_in(RxPlacement::Rps), [Variant::Off, Variant::On, Variant::FlowLimit]);
        assert_eq!(o.variants_in(RxPlacement::Threaded), [Variant::Off, Variant::On, Variant::Supp]);
        assert_eq!(o.points(), 4 * 6 * 3, "four rates, six variant-placements, three repetitions");
        assert_eq!(o.flood_flows, 4, "the paper's four flood clients by default");
        assert!(Variant::FlowLimit.limits_flows() && !Variant::FlowLimit.drops() && !Variant::FlowLimit.suppresses());
        let o: Options = options(&["--flood-flows", "1"]).unwrap();
        assert_eq!(o.flood_flows, 1);
        assert_refused::<Options>(&[&["--flood-flows", "0"], &["--flood-flows", "5"], &["--variants", "flowlimit"]]);
    }
}
