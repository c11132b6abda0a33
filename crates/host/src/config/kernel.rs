//! `[kernel]`: the kernel's own options (Linux's sysctls and build choices of each era), each
//! declared once (`#[options]`: default, bound, documentation). A mechanism's keys of the same
//! table are declared in its folder (`crate::hooks::Mechanism::Options`) and kept here unread
//! (`mechanisms`) until the host builds it.

use super::policy::{Policy, BACKLOG, CONCURRENCY, WAKE_POLICY, XDP};
use hostsim_options::{int, len, options, Gen, CPU_ID, NICE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Kernel options. Defaults are Linux 3.x-like; the 2.4 scenarios override a few.
#[options]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct KernelConfig {
    /// The receive path: `legacy` (Linux 2.4 `netif_rx`, an interrupt per frame into the backlog)
    /// or `napi` (interrupts masked while the queue is polled in softirq).
    #[option(default = RxPath::Napi)]
    pub rx_path: RxPath,
    /// Timer interrupt frequency.
    #[option(default = 1000, bound = int(1, 10_000), why = "timer interrupts per second; Linux offers 100..=1000")]
    pub hz: u32,
    /// Per-CPU backlog length limit (`netdev_max_backlog`).
    #[option(default = 1000, bound = int(1, 1_048_576), why = "packets per CPU backlog; 2^20 is 4x the 250,000 that 100 GbE tuning guides set")]
    pub netdev_max_backlog: u32,
    /// Packets one NET_RX softirq pass may process (`netdev_budget`; 2.4 used netdev_max_backlog).
    #[option(default = 300, bound = int(1, 1_048_576), why = "packets per NET_RX pass")]
    pub netdev_budget: u32,
    /// One NET_RX pass ends after this long even with budget left (2.4: 1 jiffy; 3.x: 2 jiffies).
    #[option(default = 2000, bound = int(0, 1_000_000), why = "one NET_RX pass; 1 s is one jiffy at HZ = 1")]
    pub net_rx_time_max_us: u64,
    /// Per-device NAPI poll weight (also the backlog's quota per round).
    #[option(default = 64, bound = int(1, 65_536), why = "packets per NAPI poll")]
    pub napi_weight: u32,
    /// Times `__do_softirq` restarts at IRQ exit before handing over to ksoftirqd (2.4: 0, 3.x: 10).
    #[option(default = 10, bound = int(0, 10_000), why = "__do_softirq restarts; Linux uses 0 (2.4) or 10")]
    pub softirq_restart_max: u32,
    /// `__do_softirq` stops restarting after this long (Linux >= 3.8: 2 ms).
    #[option(default = 2000, bound = int(0, 1_000_000), why = "one __do_softirq; Linux uses 2 ms")]
    pub softirq_time_max_us: u64,
    /// Don't run softirqs at IRQ exit while this CPU's ksoftirqd is runnable (Linux >= 4.9).
    #[option(default = true)]
    pub softirq_defer_to_ksoftirqd: bool,
    /// CONFIG_IRQ_TIME_ACCOUNTING: interrupt time is not charged to the interrupted task's
    /// vruntime. Off by default, as in the kernels of the papers.
    #[option(default = false)]
    pub irq_time_accounting: bool,
    /// Nice value of the ksoftirqd threads (2.4: 19, later: 0).
    #[option(default = 0, bound = int(-20, 19), why = NICE)]
    pub ksoftirqd_nice: i8,
    /// Frames the legacy IRQ handler takes from the ring per interrupt before returning.
    #[option(default = 64, bound = int(1, 65_536), why = "frames per legacy interrupt")]
    pub irq_frames_max: u32,
    /// balance_irq (`nic.irq_routing = "balance_irq"`): which CPUs its search for an idle
    /// neighbour takes as idle (`IDLE_ENOUGH(cpu, now)`, `kernel/irq/route.rs`). `idle_cpu`
    /// (default): the irqbalance patch Red Hat's 2.4.18 carries (irqbalance-2.4.17-B1), where the
    /// test is `idle_cpu(cpu)` (the idle task is `current`, whatever interrupt work the CPU does);
    /// `idle_timestamp`: 2.5's, which also wants the idle loop entered more than a jiffy ago.
    #[option(default = BalanceIrqIdle::IdleCpu)]
    pub balance_irq_idle: BalanceIrqIdle,
    /// The per-CPU backlog's queueing policy: Linux's `fifo`, or a mechanism's.
    #[option(default = Policy::new("fifo"), gen = Gen::Selector(&BACKLOG))]
    pub backlog: Policy,
    /// Program at the driver's entry point (needs `rx_path = "napi"`): `none`, `count` (counts and
    /// passes), `cpumap` (redirects to the CPU map entry of `cpumap_cpu`), or a mechanism's.
    #[option(default = Policy::new("none"), gen = Gen::Selector(&XDP))]
    pub xdp: Policy,
    /// XDP `cpumap`: the CPU of the map entry every frame is redirected to (its kthread's CPU).
    #[option(default = 1, bound = int(0, 127), why = CPU_ID)]
    pub cpumap_cpu: u32,
    /// XDP `cpumap`: the entry's queue length in frames (`bpf_cpumap_val.qsize`).
    #[option(default = 2048, bound = int(1, 16_384), why = "frames in the CPU map entry's ring; Linux refuses more (kernel/bpf/cpumap.c cpu_map_update_elem: `qsize > 16384` is -EOVERFLOW)")]
    pub cpumap_qsize: u32,
    /// XDP `cpumap`: the entry kthread's SCHED_FIFO priority (Linux starts it SCHED_OTHER; the
    /// live experiment sets FIFO 50).
    #[option(default = 50, bound = int(1, 99), why = "SCHED_FIFO priorities are 1..=99")]
    pub cpumap_rt_prio: u8,
    /// Threaded NAPI (`/sys/class/net/<dev>/threaded` = 1, Linux >= 5.12; `net/core/napi_thread.rs`):
    /// each NIC queue's NAPI poll runs in a kthread (`napi/<dev>-<id>`) bound to the first CPU of
    /// the NIC's `irq_cpus`, at SCHED_FIFO `napi_rt_prio`, instead of in NET_RX. Needs
    /// `rx_path = "napi"`; RPS, GRO, RSC, the CPU map, TCP prequeue are not modelled with it.
    #[option(default = false)]
    pub napi_threaded: bool,
    /// Threaded NAPI: the kthreads' SCHED_FIFO priority (Linux starts them SCHED_OTHER nice 0;
    /// `hostsim live ozaki-pbq` sets FIFO 50, crates/live/src/ozaki_pbq/mod.rs `napi_fifo_prio`).
    #[option(default = 50, bound = int(1, 99), why = "SCHED_FIFO priorities are 1..=99")]
    pub napi_rt_prio: u8,
    /// Receive Packet Steering (the `rps_needed` switch): steer packets to other CPUs' backlogs
    /// by the RPS map (`rps_cpus`) and/or the RFS flow tables (`rfs`).
    #[option(default = false)]
    pub rps: bool,
    /// The RPS map (`/sys/class/net/*/queues/rx-*/rps_cpus`): CPUs chosen by flow hash. Empty =
    /// no map: packets without an RFS entry are processed on the receiving CPU.
    #[option(default = Vec::new(), bound = len(128), why = "CPUs in the RPS map", each = int(0, 127), each_why = CPU_ID, gen = Gen::Cpus)]
    pub rps_cpus: Vec<u32>,
    /// Receive Flow Steering (needs `rps`): steer a flow to the CPU of its reader's last recvmsg.
    #[option(default = false)]
    pub rfs: bool,
    /// Linux's rule that a flow moves to a new CPU only after the old CPU's backlog has passed
    /// the flow's last enqueued packet. Turning it off is an experiment (it reorders flows).
    #[option(default = true)]
    pub rfs_no_reorder_rule: bool,
    /// Entries of the RFS socket and device flow tables (power of two).
    #[option(default = 32768, bound = int(1, 1_048_576), why = "flow-table entries; 2^20 is 32x Linux's recommended 32,768")]
    pub rfs_entries: u32,
    /// Key the flow hash per boot. Linux >= 3.19 fills the RSS key with random bytes at boot
    /// (`netdev_rss_key_fill`) and keys its software flow hash with a random `hashrnd`, so which
    /// flows share a NIC queue, a polling CPU, an RPS CPU or a flow-limit bucket changes from
    /// boot to boot. `true`: the run's seed draws the key (a seed is a boot). `false` (default):
    /// one fixed hash, the same in every run.
    #[option(default = false)]
    pub rss_key_per_boot: bool,
    /// Default socket receive buffer (`rmem_default`), bytes of truesize.
    #[option(default = 212_992, bound = int(1, 1 << 30), why = "bytes; Linux's sk_rcvbuf is an int and SO_RCVBUF doubles it, so 2^30")]
    pub rcvbuf_bytes: u32,
    /// Truesize overhead added to each queued packet's payload (sk_buff + slab rounding).
    #[option(default = 256, bound = int(1, 65_536), why = "bytes of truesize per packet (sk_buff and buffer); at least 1 so a buffer fills")]
    pub skb_overhead_bytes: u32,
    /// Wake-up placement (`select_task_rq`): the `scheduler`'s own (`linux`), or a mechanism's
    /// wrapping it.
    #[option(default = Policy::new("linux"), gen = Gen::Selector(&WAKE_POLICY))]
    pub wake_policy: Policy,
    /// The scheduler of the kernel's era: `cfs` (Linux 3.2, default) or `o1` (Red Hat 2.4.18's).
    /// Wake-up placement and load balancing follow it; `wake_policy = "goda_rfs"` wraps its
    /// placement.
    #[option(default = Scheduler::Cfs)]
    pub scheduler: Scheduler,
    /// With `scheduler = "o1"`: each CPU's run queue is the O(1) scheduler's of Linux 2.5 up to
    /// 2.5.21 (active and expired priority arrays, the `sleep_avg` bonus, `TASK_TIMESLICE`,
    /// interactive reinsertion, its `sys_sched_yield` and `setscheduler`;
    /// `kernel/sched/o1_rq.rs`) instead of the CFS-like pick of the fair class. Off by default:
    /// the 2.4.18 scenarios (paper 000) keep the CFS-like pick, which orders their nice -19 and
    /// 19 tasks the same way.
    #[option(default = false)]
    pub o1_runqueue: bool,
    /// CFS targeted preemption latency.
    #[option(default = 6000, bound = int(100, 1_000_000), why = "Linux 3.x kernel/sysctl.c bounds sched_latency_ns to 100 us..=1 s")]
    pub sched_latency_us: u64,
    /// CFS minimum slice a task runs before wake-up or tick preemption (`sysctl_sched_min_granularity`).
    #[option(default = 750, bound = int(100, 1_000_000), why = "Linux 3.x kernel/sysctl.c bounds sched_min_granularity_ns to 100 us..=1 s")]
    pub sched_min_granularity_us: u64,
    /// CFS wake-up preemption: a woken task preempts only if its vruntime is this much smaller.
    #[option(default = 1000, bound = int(0, 1_000_000), why = "Linux 3.x kernel/sysctl.c bounds sched_wakeup_granularity_ns to 0..=1 s")]
    pub sched_wakeup_granularity_us: u64,
    /// Place a woken task on the waking CPU when loads allow (SD_WAKE_AFFINE).
    #[option(default = true)]
    pub wake_affine: bool,
    /// `sd->imbalance_pct` of the domain used by wake_affine and the load balancer.
    #[option(default = 125, bound = int(100, 10_000), why = "percent; Linux's domains use 110..=125")]
    pub imbalance_pct: u32,
    /// Periodic load balancing interval per CPU (`cfs` era; `o1` and `cfs6` use their
    /// kernels' own intervals).
    #[option(default = 4, bound = int(1, 60_000), why = "ms between load balancing passes")]
    pub balance_interval_ms: u64,
    /// `sysctl_sched_migration_cost`. `cfs6` era: a task that ran less than this long ago is
    /// cache-hot and not pulled by the load balancer (`task_hot`); also the initial
    /// `max_idle_balance_cost` (and twice it the initial `avg_idle`) of every run queue.
    /// `cfs` (3.2) era: new-idle balancing is skipped while the CPU's `avg_idle` is below it
    /// (`kernel/sched/cfs32.rs`). Linux's default is 500 us (3.2 kernel/sched.c, 6.x kernel/sched/fair.c).
    #[option(default = 500, bound = int(0, 1_000_000), why = "us; Linux's sysctl_sched_migration_cost defaults to 500 us, at most 1 s")]
    pub sched_migration_cost_us: u64,
    /// nanosleep resolution: 0 = high-resolution timers (+ `timer_slack_ns`), else rounded up to
    /// whole ticks plus one (the 2.4 jiffy behaviour).
    #[option(default = false)]
    pub timer_tick_sleep: bool,
    /// High-resolution timers' slack added to a nanosleep (`timer_slack_ns`; Linux: 50 us).
    #[option(default = 50_000, bound = int(0, 1_000_000_000), why = "ns; at most 1 s")]
    pub timer_slack_ns: u64,
    /// TCP delayed ACK timeout.
    #[option(default = 40, bound = int(0, 60_000), why = "ms; Linux's delayed ACK is 40..=200 ms")]
    pub delack_ms: u64,
    /// How the kernel runs on several CPUs: `smp` (fine-grained, the default), `up`
    /// (uniprocessor kernel), `bkl` (one big kernel lock), or a mechanism's model.
    #[option(default = Policy::new("smp"), gen = Gen::Selector(&CONCURRENCY))]
    pub concurrency: Policy,
    /// CPUs brought up (the first N of the profile's; Linux `maxcpus=`). Absent = all of them;
    /// `concurrency = "up"` runs one. Offline CPUs do nothing at all (no ticks).
    #[option(default = None, bound = int(1, 128), why = "CPUs brought up (the first N of the profile's); the model has at most 128")]
    pub online_cpus: Option<u32>,
    /// Default socket send buffer (`wmem_default`; Linux 2.4 `tcp_wmem[1]` = 16384), bytes of
    /// truesize (payload + `skb_overhead_bytes` per segment).
    #[option(default = 16384, bound = int(1, 1 << 30), why = "bytes; Linux's sk_sndbuf is an int and SO_SNDBUF doubles it, so 2^30")]
    pub sndbuf_bytes: u32,
    /// TCP maximum segment size of the host's connections (1460 on Ethernet without options).
    #[option(default = 1460, bound = int(1, 65_495), why = "bytes; 65,535 less the IP and TCP headers (the largest MSS, loopback's)")]
    pub tcp_mss_bytes: u32,
    /// The receiving TCP of `tcp_stream` sockets: `simple` (the default: out-of-order segments
    /// are dropped and answered with a duplicate ACK, the ACKs advertise no window a sender must
    /// respect, a read sends no window update; what the model did before issue 26, kept by the
    /// 2.4-era scenarios) or `linux` (Linux 3.2's, `net/ipv4/input.rs` and
    /// `net/ipv4/tcp_rcv_window.rs`: out-of-order segments held until the hole fills, every
    /// segment acknowledged at once while any are held; an advertised window of 10 segments at
    /// first, grown per segment, bounded by the receive buffer's free space; window updates after
    /// reads; autotuning with `tcp_moderate_rcvbuf`). With `linux`, a socket's buffer starts at
    /// `tcp_rmem[1]` unless its process sets `rcvbuf_bytes` (SO_RCVBUF, which turns autotuning off
    /// for it).
    #[option(default = TcpReceiver::Simple)]
    pub tcp_receiver: TcpReceiver,
    /// TCP prequeue (`net/ipv4/tcp_prequeue.rs`): segments for a reader blocked in recvmsg are
    /// queued for it (one sync wake-up per batch) and processed in its context. Linux's own
    /// default (`sysctl_tcp_low_latency = 0`, 2.4 to 4.13) is on; the key's default, off, keeps
    /// the scenarios calibrated before it was modelled as they were.
    #[option(default = false)]
    pub tcp_prequeue: bool,
    /// `net.ipv4.tcp_rmem` = [min, default, max], bytes (Linux 3.2 on a machine with enough
    /// memory: 4096 87380 4194304; 3.4 raised the max to 6 MB).
    #[option(default = [4096, 87_380, 4_194_304], bound = len(3), why = "min, default and max receive buffer", each = int(1, 1 << 30), each_why = "bytes; Linux's sk_rcvbuf is an int, so 2^30")]
    pub tcp_rmem: [u32; 3],
    /// `net.ipv4.tcp_moderate_rcvbuf` (on since 2.6.7): receive-buffer autotuning.
    #[option(default = true)]
    pub tcp_moderate_rcvbuf: bool,
    /// `net.ipv4.tcp_adv_win_scale`: 1/2^n of the buffer is overhead, the rest window (2 up to
    /// Linux 3.3, 1 from 3.4).
    #[option(default = 2, bound = int(1, 14), why = "a shift: 1/2^n of the buffer is overhead (Linux uses 1 or 2; 0 would leave no window)")]
    pub tcp_adv_win_scale: u8,
    /// How send() data is cut into segments: `stream` (Linux: fill segments to the MSS across
    /// calls) or `per_send` (each send() starts a new segment: a 2048 B send leaves as MSS +
    /// remainder).
    #[option(default = TcpSegmentation::Stream)]
    pub tcp_segmentation: TcpSegmentation,
    /// The mechanisms' keys of `[kernel]` (each declared in its mechanism's folder, read when the
    /// host builds it; a key no mechanism declares is refused when the scenario is loaded).
    #[serde(flatten)]
    #[option(skip)]
    pub mechanisms: BTreeMap<String, serde_json::Value>,
}

impl KernelConfig {
    /// With a mechanism's key set (`kernel.<key> = value` in a scenario).
    pub fn with(mut self, key: &str, value: impl Serialize) -> KernelConfig {
        self.mechanisms.insert(key.to_string(), serde_json::to_value(value).expect("a key's value serialises"));
        self
    }

    /// The kernel's policy keys (`kernel.backlog`, `xdp`, `wake_policy`, `concurrency`: the
    /// [`hostsim_options::Selector`]s of `config/policy.rs`) with their values, read without
    /// serialising the configuration (the scenario's check of every run's values).
    pub fn policies(&self) -> [(&'static str, &Policy); 4] {
        [
            (BACKLOG.key, &self.backlog),
            (XDP.key, &self.xdp),
            (WAKE_POLICY.key, &self.wake_policy),
            (CONCURRENCY.key, &self.concurrency),
        ]
    }

    /// The kernel's HZ period (a jiffy) in ns.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.hz.max(1))
    }
}

/// Receive path.
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RxPath {
    /// Linux 2.4 `netif_rx`: the IRQ handler copies every frame to the per-CPU backlog (with the
    /// throttle state), NET_RX softirq drains it.
    Legacy,
    /// NAPI: the IRQ handler masks the queue's interrupt and schedules a poll in softirq.
    Napi,
}
/// The scheduler a kernel era ships: it decides wake-up placement and load balancing (the
/// per-CPU pick of the next task is the CFS-like one in both; see `kernel/sched/core.rs`).
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    /// Linux 3.2's CFS (kernel/sched_fair.c): `select_task_rq_fair` (wake_affine on WF_SYNC
    /// socket wake-ups, `select_idle_sibling`), periodic and new-idle balancing by weighted load.
    #[default]
    Cfs,
    /// The O(1) scheduler of Red Hat's 2.4.18 kernels (Ingo Molnar's, as in 2.5; e.g. RHL 8.0's
    /// 2.4.18-14, kernel/sched.c): `try_to_wake_up` moves a woken task to the waking CPU only on
    /// a sync wake-up, and a socket's is not (2.4's `sock_def_readable` calls
    /// `wake_up_interruptible`); `load_balance` by run-queue length when a CPU goes idle, on every
    /// tick of an idle CPU and every HZ/4 ticks of a busy one (with a 25% imbalance), never moving
    /// a running or cache-hot task. See `kernel/sched/o1.rs`.
    O1,
    /// Linux 6.x's CFS (pre-EEVDF, e.g. 6.1 LTS; kernel/sched/fair.c): `select_task_rq_fair`
    /// with `wake_wide`, `wake_affine_idle` then `wake_affine_weight`, and 6.x's
    /// `select_idle_sibling` (idle prev, `recent_used_cpu`, the LLC scanned from the target
    /// with SIS_UTIL's limit); `newidle_balance` gated by the root domain's overload flag and
    /// `avg_idle` against the balance cost, never pulling a cache-hot task
    /// (`sched_migration_cost_us`); periodic balancing at 6.x's per-domain intervals. Set
    /// `imbalance_pct = 117` (6.x `sd_init`) with it. See `kernel/sched/cfs6.rs`.
    Cfs6,
}
/// balance_irq's idle test (`kernel.balance_irq_idle`; `kernel/irq/route.rs`).
#[options]
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BalanceIrqIdle {
    /// irqbalance-2.4.17-B1 (Ingo Molnar, posted for 2.4.18; in Red Hat's 2.4.18 kernels):
    /// `IDLE_ENOUGH(cpu,now)` is `idle_cpu(cpu) && now - irq_stat[cpu].idle_timestamp > 1`, but
    /// B1 adds `idle_timestamp` to `irq_cpustat_t` and never writes it, so the second term is
    /// `jiffies > 1`, true once the machine has been up two ticks: the test is
    /// `idle_cpu(cpu)` = `cpu_curr(cpu) == idle_task(cpu)` alone. Checked in the patch as Ingo
    /// Molnar posted it to linux-kernel (2002-03-13, "Re: Severe IRQ problems on Foster (P4 Xeon)
    /// system"): its only `idle_timestamp` lines are the field in include/asm-i386/hardirq.h and
    /// the read in `IDLE_ENOUGH`; `idle_cpu()` is added to kernel/sched.c. The form followed by
    /// ozaki-pbq (paper 000's Red Hat 2.4.18).
    #[default]
    IdleCpu,
    /// Linux 2.5 (e.g. 2.5.63 arch/i386/kernel/process.c `cpu_idle`): `idle_timestamp = jiffies`
    /// on entry to the idle loop, so a CPU counts as idle when the idle task is current and it
    /// went idle more than one jiffy ago (interrupts taken meanwhile do not reset it).
    IdleTimestamp,
}
/// How send() data is cut into TCP segments.
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpSegmentation {
    Stream,
    PerSend,
}
/// The receiving TCP's model (`kernel.tcp_receiver`).
#[options]
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpReceiver {
    #[default]
    Simple,
    Linux,
}
