//! # `takeuchi-symbiose` on today's Linux
//!
//! `hostsim live takeuchi-symbiose`: paper 003's Fig. 4 (a PC routing UDP, per-CPU load and
//! output rate against input rate) on this machine's kernel, with the functional split that
//! Linux can do.
//!
//! ```text
//!   bpf/symb.bpf.c  the router's input program (pass / cpumap / XSKMAP redirect), the sink
//!                   (checksums, counts, window by sequence number), NET_RX softirq clock
//!   experiment.rs   the experiment: three namespaces, kthreads, variants, sweep, points
//!   afxdp.rs        split-afxdp: driver and IP threads, 5 ms bulk exchange, the IP half
//!   xsk.rs          AF_XDP sockets by their system calls (UMEM, rings, bind)
//!   ../gen.rs       the live-frames generator (the input load)
//! ```
//!
//! ```text
//!  ns gen (CPU 1, live-frames generator,     ns rtr                                         ns snk
//!   SCHED_FIFO 70)                            in0 ─ XDP symb_rtr ─ IP forward ─ out0 ═veth═ snk0 ─ XDP symb_sink
//!  gen0 ══════════════════veth═════════════  (NAPI kthread napi/in0-*,                        (NAPI kthread napi/snk0-*
//!  64-byte UDP frames, 16 flows,              CPU 0, SCHED_FIFO 50)                           CPU 1, SCHED_FIFO 60:
//!  paced, right UDP checksums                                                                 checks checksums, counts, drops)
//! ```
//!
//! **Variants** ([`Variant`]), the model's counterparts in brackets:
//! - `kernel-1cpu` [unix-up]: the router's whole receive and forwarding path in the input
//!   veth's NAPI kthread on CPU 0 (`symb_rtr` passes every frame; no RPS): a router of one CPU.
//! - `kernel-rps` [unix-smp]: the same with RPS over both CPUs on the input veth: the driver half
//!   in the NAPI kthread on CPU 0, the IP half of each flow in CPU 0's or CPU 1's backlog softirq
//!   (an IPI per poll to CPU 1). Linux's own way of forwarding on two CPUs; it has no big lock,
//!   so it is not the paper's UNIX dual, only its modern counterpart.
//! - `split-cpumap` [hitactix-smp]: the functional split. `symb_rtr` redirects every frame to
//!   the cpumap entry of CPU 1: the driver half (veth poll, the program) stays in the NAPI
//!   kthread on CPU 0, the IP half (skb build, IP forwarding, output) runs in CPU 1's cpumap
//!   kthread (SCHED_FIFO 50), which takes frames in bulk (8 per dequeue, `CPUMAP_BATCH`) from a
//!   queue without a per-packet IPI.
//! - `split-afxdp` [hitactix-smp]: paper 003's own design, a driver thread and an IP thread
//!   exchanging buffers in bulk every 5 ms, in user space over AF_XDP (super::afxdp): `symb_rtr`
//!   redirects every frame to the AF_XDP socket of in0's queue 0 (copy mode: the NAPI kthread
//!   on CPU 0 copies it into the UMEM); the driver thread (CPU 0) and the IP thread (CPU 1, TTL,
//!   incremental checksum, MACs, TX ring of a socket on out0 and its sendto) each wake every
//!   period and move the frames' descriptors between them in one queue operation each way.
//!   Its `forwarded_pps` is what the IP thread forwarded (the kernel's ForwDatagrams stays 0);
//!   its threads' runtime (`/proc/<tid>/schedstat`) is in `cpu<N>_kthread_frac` of their CPU and
//!   apart in `xsk_driver_thread_frac` / `xsk_ip_thread_frac`.
//! - `kernel-split` [none yet]: today's kernel doing the functional split by itself (issue 45's
//!   counterpart, not in the default list): `symb_rtr` passes every frame, the input veth's NAPI
//!   kthread stays pinned to CPU 0 (the driver half: veth poll, GRO, `get_rps_cpu`), and RPS
//!   with CPU 1 alone in the mask sends every flow's IP half (IP forwarding, output) to CPU 1's
//!   backlog softirq: one `enqueue_to_backlog` per frame under the backlog's lock, one IPI per
//!   poll round (`net_rps_send_ipi`), against split-cpumap's bulk queue and split-afxdp's 5 ms
//!   exchange.
//!
//! **What this machine can reproduce of Fig. 4.** It has two CPUs. The generator and the sink
//! need one (CPU 1), so only the single-CPU router (`kernel-1cpu`) has a CPU to itself; the
//! two-CPU variants share CPU 1 with the generator and the sink, whose cost grows with the
//! rate, and run at a lower priority than both so that the offered load stays the one asked
//! for. Their saturation is that of a router whose second CPU is partly taken, not of the
//! paper's dual router.
//!
//! **What is measured, per point** (a warm-up, then a window; the model's names where it has
//! them): `offered_pps` (asked) and `achieved_pps` (frames the generator built in the window:
//! the point is `valid` when ≥ 0.98 of the rate); `rtr_rx_pps` (frames the router's input
//! program saw); `forwarded_pps` (the router namespace's `Ip: ForwDatagrams`); `out_rx_pps`
//! (frames the sink received with both checksums right, in the window) and `out_window_frac`
//! (of the frames built in the window, the share that reached the sink, exact by sequence
//! number, however late); invalid frames at the sink (`sink_invalid_count`: header or UDP
//! checksum wrong, or missing), whole point. Drops by place: the input veth's ring
//! (`drop_nic_ring_pps`), the cpumap queue (`drop_cpumap_pps`: redirected minus what reached IP),
//! the backlog (`drop_backlog_pps`, machine-wide `/proc/net/softnet_stat`, reported only), the
//! output veth's ring into the sink (`drop_out_ring_pps`).
//!
//! **Per-CPU load, softirq and kthread apart.** `cpu<N>_softirq_frac`: NET_RX softirq time on
//! CPU N, from `softirq_entry`/`softirq_exit` tracepoints (exact; machine-wide NET_RX, which
//! under the live lock is the router's: the sink and the router's input are threaded and raise
//! none); `cpu<N>_kthread_frac`: the router's own kthreads on CPU N (the input NAPI kthread,
//! the cpumap kthread, split-afxdp's user-space threads; `/proc/PID/schedstat`, exact) minus the NET_RX softirq that ran in their
//! context (this kernel has no IRQ_TIME_ACCOUNTING, so a thread's runtime includes softirqs run
//! at its `local_bh_enable`); `cpu<N>_router_frac` their sum. The generator thread and the
//! sink's kthread: `gen_cpu_frac`, `sink_cpu_frac`. `/proc/stat`'s shares are CPU-wide (other
//! users' work included) and reported as context only: `machine_cpu<N>_<state>_frac`, with
//! `steal`. The model's aggregates: `online_cpus` (the router's CPUs: 1 or 2),
//! `cpu_busy_frac` (router load per router CPU), `machine_busy_frac` (over both CPUs),
//! `cpu_busy_max_frac`, `cpu_softirq_frac`, `cpu_kthread_frac` (means over both CPUs).
//!
//! **What is undone.** Three namespaces `hsl-<pid>-<n>-{gen,rtr,snk}` with two veth pairs and
//! the generator's spare pair, `ip_forward` and RPS masks inside `rtr` (its own), the three XDP
//! programs and two tracepoint programs (bpf_links), the NAPI and cpumap kthreads' affinity and
//! policy: all in the run's ledger, undone on exit, error and SIGINT/SIGTERM/SIGHUP/SIGQUIT,
//! and by `hostsim live clean` after a SIGKILL. The cpumap kthread stops with its map;
//! split-afxdp's sockets, UMEM and threads are the process's own (gone with it, the XSKMAP
//! entry with its socket).

pub mod afxdp;
pub mod experiment;
pub mod xsk;

use crate::command::{f64_in, positive_up_to, Common};

crate::named_values! {
    /// The forwarding variants (module doc).
    pub enum Variant {
        /// The kernel's forwarding on one CPU (the model's unix-up).
        Kernel1 = "kernel-1cpu",
        /// The kernel's forwarding with RPS over both CPUs (unix-smp).
        KernelRps = "kernel-rps",
        /// The functional split: XDP driver half, cpumap IP half (hitactix-smp).
        SplitCpumap = "split-cpumap",
        /// The paper's design over AF_XDP: driver and IP threads, 5 ms bulk exchange (hitactix-smp).
        SplitAfxdp = "split-afxdp",
        /// Today's kernel doing the split itself (issue 45): the driver half in the input veth's
        /// NAPI kthread pinned to CPU 0, RPS sending every flow's IP half to CPU 1's backlog.
        KernelSplit = "kernel-split",
    }
}

impl Variant {
    /// The model scenario's variant it stands for.
    pub fn model_variant(self) -> &'static str {
        match self {
            Variant::Kernel1 => "unix-up",
            Variant::KernelRps => "unix-smp",
            Variant::SplitCpumap | Variant::SplitAfxdp => "hitactix-smp",
            // A split whose hand-over is the kernel's per-packet enqueue to a remote backlog
            // (one IPI per poll): no model variant has that yet (issue 45's model half).
            Variant::KernelSplit => "(none)",
        }
    }

    /// CPUs the router's work may use.
    pub fn router_cpus(self) -> usize {
        match self {
            Variant::Kernel1 => 1,
            _ => 2,
        }
    }
}

/// Paper 003's Fig. 4 on this kernel: a router, its protocol work split over two CPUs or not.
///
/// A router namespace
/// forwarding 64-byte UDP frames from a paced kernel-side generator to a checksum-checking sink,
/// input rate swept past saturation: the kernel's forwarding on one CPU and on two (RPS), the
/// functional split (XDP driver half on one CPU, cpumap IP half on the other), and the paper's
/// own design (AF_XDP: a driver thread and an IP thread exchanging buffers in bulk every 5 ms),
/// 3 repetitions. Writes DIR/results.csv (the model's metric names) and DIR/run.json.
#[derive(clap::Args, Clone, Debug, serde::Serialize)]
pub struct Options {
    #[command(flatten)]
    #[serde(flatten)]
    pub common: Common,
    /// Input rates, pkt/s, comma-separated [--quick: 50000, below saturation].
    #[arg(long = "rates", value_name = "PPS", value_delimiter = ',',
          default_value = "100000,200000,300000,400000,500000,600000,700000,800000,900000,1000000,1200000",
          default_value_if("quick", "true", "50000"), value_parser = positive_up_to(5e6, "pkt/s"))]
    pub rates_pps: Vec<f64>,
    /// Variants, comma-separated.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "kernel-1cpu,kernel-rps,split-cpumap,split-afxdp")]
    pub variants: Vec<Variant>,
    /// Warm-up before each window, seconds [--quick: 0.3].
    #[arg(long, default_value_t = 0.5, default_value_if("quick", "true", "0.3"), value_parser = f64_in(0.0, 30.0, "s"))]
    pub warmup_s: f64,
    /// Measurement window per point, seconds [--quick: 1].
    #[arg(long, default_value_t = 2.0, default_value_if("quick", "true", "1"), value_parser = f64_in(0.1, 60.0, "s"))]
    pub window_s: f64,
    /// split-afxdp: the driver and IP threads' exchange period, ms (the paper's 5).
    #[arg(long, value_name = "MS", default_value_t = 5.0, value_parser = f64_in(0.1, 100.0, "ms"))]
    pub period_ms: f64,
    /// The driver half's CPU (the input veth's NAPI kthread).
    #[arg(skip = 0usize)]
    pub driver_cpu: usize,
    /// The other CPU: the generator, the sink, and the IP half in the two-CPU variants.
    #[arg(skip = 1usize)]
    pub other_cpu: usize,
    /// UDP payload bytes (18: 64-byte frames with the FCS, the model's `payload_bytes`).
    #[arg(skip = 18usize)]
    pub payload_bytes: usize,
    #[arg(skip = 70i32)]
    pub gen_fifo_prio: i32,
    #[arg(skip = 60i32)]
    pub sink_fifo_prio: i32,
    #[arg(skip = 50i32)]
    pub router_fifo_prio: i32,
    /// The cpumap entry's queue length (frames), as the kernel's samples use.
    #[arg(skip = 2048u32)]
    pub cpumap_qsize: u32,
    /// split-afxdp: UMEM chunks (2 KiB each) and ring sizes: a period of frames at 1.2 Mpkt/s
    /// is 6,000, so the RX, TX, fill and completion rings hold 16,384 and the UMEM 65,536
    /// (128 MiB). Both sockets bind in copy mode (XDP_COPY, queue 0 of in0; out0 shares the
    /// UMEM, XDP_SHARED_UMEM).
    #[arg(skip = 65_536u32)]
    pub umem_frames: u32,
    #[arg(skip = 16_384u32)]
    pub ring_entries: u32,
    /// The generator's quantum, largest call and batch (`Pacing::quantum_us`,
    /// `call_frames_max`, `batch_max`): the input veth's ring holds 256 frames
    /// (VETH_RING_SIZE), so a call is handed over in batches of an eighth of it, so that the
    /// ring overflows when the router cannot keep up rather than because one call outran it
    /// (with the default 1 ms quanta and 256-frame batches the ring overflowed at 400,000
    /// pkt/s with the router's CPU 29 % busy); quanta of 500 us keep calls at ≤ 2,000/s (the
    /// page-pool pitfall, gen.rs: at 4,000/s calls began to fail with ENOSPC after ~1 min of a
    /// sweep on this machine at load 6-7).
    #[arg(skip = 500.0)]
    pub gen_quantum_us: f64,
    #[arg(skip = 1024u32)]
    pub gen_call_frames_max: u32,
    #[arg(skip = 32u32)]
    pub gen_batch: u32,
    /// A point is valid when the generator achieved at least this share of the rate.
    #[arg(skip = 0.98)]
    pub valid_frac: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::testing::{assert_refused, options};
    use crate::command::Experiment;

    #[test]
    fn options_name_split_afxdp_and_its_period() {
        let o: Options = options(&[]).unwrap();
        assert_eq!((o.period_ms, o.variants.len(), o.rates_pps.len()), (5.0, 4, 11), "the paper's 5 ms by default");
        let o: Options = options(&["--variants", "split-afxdp", "--period-ms", "1"]).unwrap();
        assert_eq!((o.variants.as_slice(), o.period_ms), (&[Variant::SplitAfxdp][..], 1.0));
        let bad: [&[&str]; 5] = [
            &["--period-ms", "0"],
            &["--period-ms", "0.05"],
            &["--period-ms", "101"],
            &["--period-ms", "nan"],
            &["--variants", "split-xsk"],
        ];
        assert_refused::<Options>(&bad);
        assert!(options::<Options>(&["--variants", "split-xsk"]).unwrap_err().contains("split-afxdp"));
        let q: Options = options(&["--quick"]).unwrap();
        assert_eq!((q.rates_pps.as_slice(), q.warmup_s, q.window_s, q.points()), (&[50_000.0][..], 0.3, 1.0, 4));
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(v["variants"], serde_json::json!(["kernel-1cpu", "kernel-rps", "split-cpumap", "split-afxdp"]));
    }
}
