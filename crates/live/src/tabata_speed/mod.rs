//! # `tabata-speed` on today's Linux
//!
//! `hostsim live tabata-speed`: paper 002's Fig. 1-3 and Table 1 experiment on this machine's
//! kernel: a slot regulator (`regulator.rs`) controls a real bulk TCP sender's execution speed,
//! and the receiver's kernel timestamps every frame (`arrivals.rs`). The measurements against
//! the model: the docs book's page `docs/src/live/tabata-speed.md`.
//!
//! ```text
//!   regulator.rs               the slot regulator: a Gate (cgroup.freeze, SIGSTOP), lateness, runtime
//!   bpf/arrivals_tc.bpf.c      tcx ingress program: per-frame ktime into a ring buffer
//!   arrivals.rs                load/attach (a tcx bpf_link from inside the namespace), drain
//!   experiment.rs              namespaces, 100 Mbit/s tbf, offloads off, the sweep, the points
//!   ../tcp_worker.rs           the 1 MB bulk sender (SO_SNDBUF, TCP_INFO chrono stats) and the sink
//! ```
//!
//! ```text
//!  ns snd                                                 ns rcv
//!  sender (CPU 1, regulated) ── eth0 ═══ veth ═══ eth0 ── tcx ingress: bpf_ktime_get_ns → ring
//!    SO_SNDBUF, TCP_NODELAY     TSO/GSO off                 sink (CPU 0): read until EOF
//!    tcp_timestamps 0 (MSS 1460) tbf 100 Mbit/s + 24 B/frame
//!  regulator thread (CPU 1, SCHED_FIFO): cgroup.freeze of the sender's group, per 1 ms slot
//! ```
//!
//! The paper's sender wrote 1 MB in 1024 or 2048 B units over 100 Mbit/s Ethernet and the
//! receiver timestamped frames in its driver. Here the wire is a veth shaped to 100 Mbit/s by
//! tbf (`overhead 24`: preamble, SFD, FCS and inter-frame gap, so a 1514 B frame takes the
//! 123 µs it takes on Ethernet), with segmentation offloads off so that every frame is one
//! segment of at most an MSS, as on the paper's NIC. A veth has no line rate of its own and
//! carries 64 KB GSO packets otherwise (issue 30's probes). Per-netns `tcp_timestamps = 0` in the
//! sender's namespace gives the paper's MSS of 1460 B.
//!
//! **Which side is the bottleneck.** The mechanism acts on the sender, so the receiver must not
//! limit the transfer: the sender's `TCP_INFO` says how long the connection was limited by the
//! receiver's window (`rwnd_limited_us`, must stay ~0) and by its own send buffer
//! (`sndbuf_limited_us`); the sink's CPU share is reported. Unregulated, the 100 Mbit/s shaper
//! is the limit, as the paper's Ethernet was; regulated, the sender's slots are.
//!
//! **What a run changes, and how it is undone** (all in the run's ledger, see `harness.rs`):
//! two namespaces `hsl-<pid>-<n>-{snd,rcv}` holding the veth pair, its tbf qdisc, its offload
//! settings and the sender namespace's `tcp_timestamps` (all gone with the namespaces); a tc
//! program attached through a tcx bpf_link (gone with the run's descriptor); a cgroup v2 group
//! `hsl-<pid>-<n>-sender` for the freezer (thawed and removed); the v1 CPU group of the largest
//! weight (removed). The regulator's SCHED_FIFO policy and affinity belong to a thread of the run
//! that ends with each point; the workers die with the run (PR_SET_PDEATHSIG). Today's
//! counterparts (`--variants cfs,pacing,tbf`, `counterparts.rs`) add a child CPU group
//! `hsl-<pid>-<n>/cfs` whose quota and period are written through the ledger (the group is
//! removed), the shaper's rate changed in the sender's namespace (gone with it), and a socket
//! option of the sender's own.

pub mod arrivals;
pub mod counterparts;
pub mod experiment;
pub mod regulator;

use crate::command::Common;
use crate::worker::WorkerExe;

crate::named_values! {
    /// What regulates the sender at each speed: the paper's slots, or one of what Linux ships
    /// today (issue 45's counterparts, `counterparts.rs`).
    pub enum Via {
        /// The slot regulator: n of T = 1000 1-ms slots (the paper's mechanism).
        Regulated = "regulated",
        /// CFS bandwidth control: the sender's CPU group gets `speed` % of each period as quota.
        Cfs = "cfs",
        /// TCP's own pacing: SO_MAX_PACING_RATE = `speed` % of the wire's rate.
        Pacing = "pacing",
        /// tc tbf: the shaper's rate = `speed` % of the wire's rate.
        Tbf = "tbf",
    }
}

crate::named_values! {
    /// How the regulator stops the sender.
    pub enum GateKind {
        /// cgroup v2 `cgroup.freeze`.
        Freeze = "freeze",
        /// SIGSTOP / SIGCONT.
        Signal = "signal",
    }
}

/// Paper 002's Fig. 1-3 and Table 1 on this kernel: a bulk TCP sender under the slot regulator.
///
/// A bulk TCP
/// sender (1 MB in 1024 and 2048 B writes) over a 100 Mbit/s shaped veth, its speed regulated
/// by a SCHED_FIFO slot regulator (n of 1000 1-ms slots, cgroup.freeze); the receiver's kernel
/// timestamps every frame. Writes DIR/results.csv (the model's metric names), DIR/frames/ and
/// DIR/run.json.
#[derive(clap::Args, Clone, Debug, serde::Serialize)]
pub struct Options {
    #[command(flatten)]
    #[serde(flatten)]
    pub common: Common,
    /// Regulated speeds, percent, comma-separated: n = speed × T / 100 slots of each block
    /// [--quick: 100,20].
    #[arg(long = "speeds", value_name = "PCT", value_delimiter = ',', default_value = "10,20,30,40,50,60,70,80,90,100",
          default_value_if("quick", "true", "100,20"), value_parser = clap::value_parser!(u32).range(1..=100))]
    pub speeds_pct: Vec<u32>,
    /// send() units, bytes, comma-separated [--quick: 1024].
    #[arg(long = "units", value_name = "BYTES", value_delimiter = ',', default_value = "1024,2048",
          default_value_if("quick", "true", "1024"), value_parser = unit_bytes)]
    pub units_bytes: Vec<usize>,
    /// SO_SNDBUF given to the sender, bytes: Linux's smallest, 2304, which the kernel doubles to
    /// 4608 (SOCK_MIN_SNDBUF, two full segments with their skbs). A frozen sender's buffer keeps
    /// draining onto the wire, so the bandwidth follows the speed only as far as the buffer drains
    /// within an unallocated slot; the model's fit of Tender's buffer found 7,093 B
    /// (calibration/tabata-speed.toml). Measured with 4096 and 8192 too (docs book).
    #[arg(long = "sndbuf", value_name = "BYTES", default_value_t = 2304,
          value_parser = clap::value_parser!(i32).range(1024..=1 << 24))]
    pub sndbuf_bytes: i32,
    /// How the regulator stops the sender.
    #[arg(long, value_enum, default_value = "freeze")]
    pub gate: GateKind,
    /// What regulates the sender at each speed, comma-separated: `regulated` (the paper's
    /// slots), and today's counterparts `cfs`, `pacing` and `tbf` (`counterparts.rs`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "regulated")]
    pub variants: Vec<Via>,
    /// CFS bandwidth control's period, µs (variant `cfs`; its quota is speed × period, at least
    /// the kernel's 1 ms): the kernel's default, 100 ms, as `cpu.max` and `cpu.cfs_period_us` have it.
    #[arg(long, value_name = "US", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1000..=1_000_000))]
    pub cfs_period_us: u64,
    /// Skip the unregulated sender (variant `off`, once per unit and repetition).
    #[arg(long)]
    pub no_off: bool,
    /// Paper 002 §3.2: 1 MB.
    #[arg(skip = 1usize << 20)]
    pub total_bytes: usize,
    /// The shaper's rate, the paper's Ethernet.
    #[arg(skip = 100u32)]
    pub rate_mbit: u32,
    /// The paper's slot and block (T = 1000 slots).
    #[arg(skip = 1000u64)]
    pub slot_us: u64,
    #[arg(skip = 1000u64)]
    pub block_ms: u64,
    #[arg(skip = 1usize)]
    pub sender_cpu: usize,
    #[arg(skip = 0usize)]
    pub sink_cpu: usize,
    /// The regulator thread's SCHED_FIFO priority.
    #[arg(skip = 50i32)]
    pub fifo_prio: i32,
    /// A point's time limit (workers and regulator stop by themselves after it).
    #[arg(skip = 30.0)]
    pub point_timeout_s: f64,
    /// Run the workers in a CPU cgroup of the largest weight (see `cgroup.rs`).
    #[arg(skip = true)]
    pub cgroup: bool,
    /// Write every point's frames to `frames/` in the output directory.
    #[arg(skip = true)]
    pub frames: bool,
    #[arg(skip)]
    #[serde(skip)]
    pub worker: WorkerExe,
}

/// `--units`: a send() size, 1..=65536 bytes.
fn unit_bytes(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(u) if (1..=65_536).contains(&u) => Ok(u),
        _ => Err(format!("expected 1..=65536 bytes, got {s}")),
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
        assert_eq!((o.speeds_pct.len(), o.units_bytes.as_slice(), o.sndbuf_bytes), (10, &[1024, 2048][..], 2304));
        assert_eq!((o.gate, o.no_off, o.points()), (GateKind::Freeze, false, 11 * 2 * 3));
        let q: Options = options(&["--quick"]).unwrap();
        let got = (q.speeds_pct.as_slice(), q.units_bytes.as_slice(), q.common.reps);
        assert_eq!(got, (&[100, 20][..], &[1024][..], 1));
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!((v["gate"].as_str(), v["quick"].as_bool()), (Some("freeze"), Some(true)));
        let bad: [&[&str]; 7] = [
            &["--speeds", "0"],
            &["--speeds", "101"],
            &["--units", "65537"],
            &["--sndbuf", "1023"],
            &["--gate", "cfs"],
            &["--variants", "quota"],
            &["--cfs-period-us", "999"],
        ];
        assert_refused::<Options>(&bad);
    }

    #[test]
    fn counterparts_run_at_every_speed_beside_the_slots() {
        let o: Options = options(&["--variants", "regulated,cfs,pacing,tbf", "--speeds", "20,50"]).unwrap();
        assert_eq!(o.variants, [Via::Regulated, Via::Cfs, Via::Pacing, Via::Tbf]);
        assert_eq!(o.points(), (2 * 4 + 1) * 2 * 3, "each speed in each variant, `off` once per unit and rep");
        assert_eq!(o.cfs_period_us, 100_000, "the kernel's default period");
        let d: Options = options(&[]).unwrap();
        assert_eq!(d.variants, [Via::Regulated], "the paper's experiment by default");
    }
}
