//! # `goda-rfs` on today's Linux: wake-ups measured, with RFS off and on
//!
//! Paper 001's mechanism needs a hook in wake-up placement that this kernel does not offer (no
//! sched_ext, no kprobes). What can run is the measurement its Fig. 2 rests on: for every
//! wake-up of the run's own readers, the waking CPU, the CPU the reader last ran on and the CPU
//! the kernel chose, from `tp_btf` tracepoints, classified by the model's own classifier, with
//! RFS off (`linux`) and on (`rfs`: EEVDF's placement with RFS, today's counterpart of the
//! paper's setting), and the segment trains that the readers wake for: `hostsim live
//! goda-wakeups` ([`Options`], [`experiment`]).
//!
//! ```text
//!   bpf/wake_tp.bpf.c   tp_btf sched_waking / sched_wakeup / sched_migrate_task, tgid-filtered
//!   wake.rs             load/attach (bpf_links), the tgid filter, pairing into Fig. 2 rows
//!   bpf/trains_tp.bpf.c tp_btf net_dev_queue / netif_receive_skb / the pacing timer, filtered
//!                       to the run's two devices: the segment trains of its flows
//!   trains.rs           load/attach, the per-flow summary (trains.csv)
//!   rfs.rs              RFS switched on for the `rfs` points, through the run's ledger
//!   experiment.rs       the experiment: N paced TCP flows into N unpinned readers, a sweep
//!   ../tcp_worker.rs    the senders and the readers
//! ```

pub mod experiment;
pub mod rfs;
pub mod trains;
pub mod wake;

use crate::command::{f64_in, Common};
use crate::worker::WorkerExe;

crate::named_values! {
    /// How a point's flows are sent and received.
    pub enum Variant {
        /// RFS off (no flow table on the readers' veth): the kernel's own placement.
        Linux = "linux",
        /// RFS on for the point: net.core.rps_sock_flow_entries and the readers' veth queues'
        /// rps_flow_cnt, written through the run's ledger and put back after the point.
        Rfs = "rfs",
        /// RFS off, and the senders' veth's gso_max_segs 1 for the point: every TCP skb is one
        /// segment, paced alone (the control for the segment trains, issue 42).
        PerSegment = "per-segment",
    }
}

/// The most flows a point may have (each is two processes on a 2-CPU machine).
pub const FLOWS_MAX: u32 = 64;

/// Paper 001's Fig. 2 on this kernel: where the scheduler places TCP readers' wake-ups.
///
/// N paced TCP senders to N readers over a veth, unpinned on every CPU; the readers' wake-ups
/// recorded from the scheduler's tracepoints (waking CPU, previous CPU, chosen CPU) and
/// classified as the model's goda-rfs metrics, and the flows' segment trains from the network
/// tracepoints. Variants: RFS off (`linux`), RFS on (`rfs`, a machine-wide sysctl restored by
/// the run's ledger), one segment per skb (`per-segment`). Writes DIR/results.csv (the model's
/// metric names), DIR/trains.csv (per flow) and DIR/run.json.
#[derive(clap::Args, Clone, Debug, serde::Serialize)]
pub struct Options {
    #[command(flatten)]
    #[serde(flatten)]
    pub common: Common,
    /// Flow counts, comma-separated (each flow is two processes) [--quick: 2].
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8", default_value_if("quick", "true", "2"),
          value_parser = clap::value_parser!(u32).range(1..=FLOWS_MAX as i64))]
    pub flows: Vec<u32>,
    /// Variants, comma-separated: each point of each repetition is measured in every variant,
    /// one after another [--quick: linux].
    #[arg(long, value_delimiter = ',', value_enum, default_value = "linux")]
    pub variants: Vec<Variant>,
    /// Warm-up before each window, seconds [--quick: 0.5].
    #[arg(long, default_value_t = 1.0, default_value_if("quick", "true", "0.5"), value_parser = f64_in(0.0, 30.0, "s"))]
    pub warmup_s: f64,
    /// Measurement window per point, seconds [--quick: 1].
    #[arg(long, default_value_t = 3.0, default_value_if("quick", "true", "1"), value_parser = f64_in(0.2, 60.0, "s"))]
    pub window_s: f64,
    /// All flows' rate together, Mbit/s of payload: each sender paces at rate / flows
    /// (`SO_MAX_PACING_RATE`), so that the readers keep up and sleep between arrivals, as paper
    /// 001's 512 iperf readers sharing 10 GbE did; unpaced, two bulk flows over a veth keep their
    /// readers busy without a single wake-up (the first quick run: 11 Gbit/s, no wake-up in the
    /// window).
    #[arg(long, value_name = "MBIT", default_value_t = 400.0, value_parser = f64_in(1.0, 20_000.0, "Mbit/s"))]
    pub rate_mbit: f64,
    /// send() size of the senders (iperf's TCP default length is 128 KB in iperf 3, 8 KB in 2).
    #[arg(skip = 65_536usize)]
    pub unit_bytes: usize,
    /// SO_SNDBUF of the senders (bounded by net.core.wmem_max; the kernel doubles it).
    #[arg(skip = 212_992i32)]
    pub sndbuf_bytes: i32,
    /// Run the workers in a CPU cgroup of the largest weight (see `cgroup.rs`).
    #[arg(skip = true)]
    pub cgroup: bool,
    #[arg(skip)]
    #[serde(skip)]
    pub worker: WorkerExe,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::testing::{assert_refused, options};
    use crate::command::Experiment;

    #[test]
    fn the_options_are_the_experiments_configuration() {
        let o: Options = options(&[]).unwrap();
        let got = (o.flows.as_slice(), o.variants.as_slice(), o.warmup_s, o.window_s, o.rate_mbit, o.points());
        assert_eq!(got, (&[1, 2, 4, 8][..], &[Variant::Linux][..], 1.0, 3.0, 400.0, 12));
        let v: Options = options(&["--variants", "linux,rfs,per-segment", "--flows", "1,16"]).unwrap();
        assert_eq!((v.variants.as_slice(), v.points()), (Variant::ALL, 18));
        assert_eq!(serde_json::to_value(&v).unwrap()["variants"], serde_json::json!(["linux", "rfs", "per-segment"]));
        let q: Options = options(&["--quick"]).unwrap();
        assert_eq!((q.flows.as_slice(), q.warmup_s, q.window_s, q.common.reps), (&[2][..], 0.5, 1.0, 1));
        let bad: [&[&str]; 6] = [
            &["--variants", "linux,fq"],
            &["--flows", "0"],
            &["--flows", "65"],
            &["--warmup-s", "31"],
            &["--window-s", "0.1"],
            &["--rate-mbit", "0.5"],
        ];
        assert_refused::<Options>(&bad);
    }
}
