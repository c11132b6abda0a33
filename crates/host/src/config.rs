//! Configuration of a host run. Every field has a unit in its name and a default that matches the
//! Linux behaviour it models. These types derive `Deserialize` so the scenario crate can read them,
//! but nothing here knows about files.

use hostsim_tcp::{CcKind, Era};
use hostsim_workload::{AccelConfig, HttpConfig, ProgramKind, SourceKind, ThreadConfig, WorkDist};
use serde::{Deserialize, Serialize};

/// A machine: topology and the cost of every kernel operation. See `profiles/README.md`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub cpu_model: String,
    pub clock_mhz: u32,
    pub topology: Topology,
    pub costs: Costs,
    pub cache: CacheCosts,
    /// Costs of the papers' mechanisms on this machine (0 where not estimated).
    #[serde(default)]
    pub mechanisms: MechanismCosts,
    /// Costs of the system calls an event-driven server makes (poll(), accept(), ...). Absent
    /// on machines where nobody has estimated them; a scenario that runs such a program on one
    /// is refused (the costs would silently be 0 otherwise).
    #[serde(default)]
    pub syscalls: Option<SyscallCosts>,
}

/// `[syscalls]`: system calls of event-driven servers, in ns (beyond `costs.syscall_ns`, the
/// entry and exit every call pays). See `profiles/README.md`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SyscallCosts {
    /// poll(): per call (argument copy, `poll_initwait`, the result copy-out).
    pub poll_base_ns: u64,
    /// poll(): per descriptor scanned (`do_pollfd`: fget, `f_op->poll` = `sock_poll` →
    /// `tcp_poll`, fput), on a working set of thousands of sockets.
    pub poll_per_fd_ns: u64,
    /// poll() with a timeout: per descriptor, the wait-queue entry added in the first pass
    /// (`__pollwait`) and removed at the end (`poll_freewait`).
    pub poll_wait_per_fd_ns: u64,
    /// poll(): per ready descriptor returned.
    pub poll_per_ready_ns: u64,
    /// gettimeofday().
    pub gettimeofday_ns: u64,
    /// sched_setscheduler() on the caller.
    pub setscheduler_ns: u64,
    /// accept(): a new file and descriptor for a queued connection.
    pub accept_ns: u64,
    /// The child socket created in softirq when a handshake completes (`tcp_v4_syn_recv_sock`).
    pub tcp_child_ns: u64,
    /// close() of a TCP socket (beyond the FIN's output cost).
    pub close_ns: u64,
    /// A byte written to (or read from) a pipe, beyond the system call.
    pub pipe_ns: u64,
}

/// Extra costs the papers' mechanisms add, in ns.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MechanismCosts {
    /// PBQ: the extra branch on every backlog enqueue and dequeue (also at low load).
    pub pbq_branch_ns: u64,
    /// PBQ at high load: parse the headers for the port and look up its priority (per packet).
    pub pbq_classify_ns: u64,
    /// PBQ at high load: find_first_bit and the per-priority queue handling (per dequeue).
    pub pbq_dequeue_ns: u64,
    /// Interrupt suppression: the check at every context switch.
    pub irq_suppress_check_ns: u64,
    /// Interrupt suppression: rewriting one NIC queue's IRQ affinity (IO-APIC) when it changes.
    pub irq_affinity_write_ns: u64,
    /// XDP: running the attached program on one frame (per frame, pass or drop).
    pub xdp_run_ns: u64,
    /// XDP redirect to a CPU map (`kernel.xdp = "cpumap"`, `net/core/cpumap.rs`): per frame on
    /// the polling CPU, the redirect and `bq_enqueue` (with the bulk flush's share of a frame).
    pub cpumap_enqueue_ns: u64,
    /// XDP: the skb built for a frame the program passed or redirected to a CPU map, where the
    /// driver builds it only after the program (Linux 6.x drivers/net/veth.c `veth_xdp_rcv_one`
    /// → `xdp_build_skb_from_frame`; the CPU map kthread's `__xdp_build_skb_from_frame`,
    /// `net/core/cpumap.rs`). Paid in the NAPI poll for a passed frame, in the kthread for a
    /// redirected one. 0 (default): the skb's cost is in `driver_rx_frame_ns`.
    pub xdp_skb_build_ns: u64,
    /// Flow limit: `skb_flow_limit`'s table work (history and bucket update) per packet enqueued
    /// by a CPU with a table while the target backlog is at least half full.
    pub flow_limit_ns: u64,
    /// Fine-grained SMP locking (`kernel.concurrency = "smp"`): the locking-sensitive costs
    /// (`netif_rx_ns`, `softirq_entry_ns`, `ip_udp_rx_ns`, `tcp_rx_ns`, `wakeup_ns`, `recv_ns`,
    /// `udp_send_ns`, `tcp_ack_send_ns`, `tcp_send_ns`, `tcp_ack_rx_ns`, `ip_forward_ns`,
    /// `driver_tx_frame_ns`, `driver_tx_clean_ns`) are multiplied by this factor: the
    /// lock-prefixed atomics and spin locks an SMP kernel adds to the uniprocessor path. 1.0
    /// (the default) where the profile's costs were measured on an SMP kernel and already include
    /// them; a profile whose costs are uniprocessor costs gives the factor here, so that `up`,
    /// `bkl` and `functional` runs do not carry it (their locking comes from their own model).
    pub smp_lock_factor: f64,
    /// One uncontended spin-lock acquisition (a locked read-modify-write on a line this CPU
    /// already owns, and the instructions around it): the big kernel lock at every kernel entry
    /// from user mode or idle (`bkl`), Symbiose's global-queue lock at every exchange.
    pub lock_acquire_ns: u64,
    /// Extra when the lock's cache line was last written by another CPU (one cache-to-cache
    /// transfer).
    pub lock_line_transfer_ns: u64,
    /// `bkl`: extra when the big kernel lock moves to another CPU, for the kernel data it
    /// guards that the new holder then touches (device, queue, route and statistics lines last
    /// written by the other CPU).
    pub bkl_data_transfer_ns: u64,
    /// `bkl`: extra per device interrupt for the SMP kernel's interrupt controller path: a
    /// level-triggered PCI interrupt delivered through the IO-APIC is masked and acknowledged at
    /// entry and unmasked at exit (Linux 2.2 `arch/i386/kernel/io_apic.c`,
    /// `mask_and_ack_level_ioapic_irq` / `unmask_IO_APIC_irq`: IO-APIC register accesses across
    /// the chipset), on top of the uniprocessor 8259A acknowledgement in `hardirq_entry_ns`. 0
    /// where the SMP kernel leaves device interrupts on the 8259A (Linux 2.0: the boot CPU takes
    /// them through virtual-wire mode).
    pub bkl_irq_entry_ns: u64,
    /// `functional`: one bulk move of a local queue into or out of a global queue (Symbiose,
    /// paper 003 Fig. 2), under its lock, excluding the lock itself.
    pub symbiose_splice_ns: u64,
}

impl Default for MechanismCosts {
    fn default() -> Self {
        MechanismCosts {
            pbq_branch_ns: 0,
            pbq_classify_ns: 0,
            pbq_dequeue_ns: 0,
            irq_suppress_check_ns: 0,
            irq_affinity_write_ns: 0,
            xdp_run_ns: 0,
            cpumap_enqueue_ns: 0,
            xdp_skb_build_ns: 0,
            flow_limit_ns: 0,
            smp_lock_factor: 1.0,
            lock_acquire_ns: 0,
            lock_line_transfer_ns: 0,
            bkl_data_transfer_ns: 0,
            bkl_irq_entry_ns: 0,
            symbiose_splice_ns: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LlcScope {
    /// Each core has its own last-level cache (e.g. Pentium III Xeon's private L2).
    PerCore,
    /// All cores of a package share the last-level cache.
    PerPackage,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub packages: u32,
    pub cores_per_package: u32,
    pub threads_per_core: u32,
    pub llc: LlcScope,
}

impl Topology {
    pub fn cpus(&self) -> usize {
        (self.packages * self.cores_per_package * self.threads_per_core) as usize
    }
}

/// Costs of kernel operations in ns (per byte where the name says so).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    pub hardirq_entry_ns: u64,
    pub driver_rx_frame_ns: u64,
    pub netif_rx_ns: u64,
    pub softirq_entry_ns: u64,
    pub ip_udp_rx_ns: u64,
    pub tcp_rx_ns: u64,
    pub rx_per_byte_ns: f64,
    pub wakeup_ns: u64,
    pub syscall_ns: u64,
    pub recv_ns: u64,
    pub copy_per_byte_ns: f64,
    /// `sendto`: UDP + IP output up to the driver, beyond syscall entry (driver: below).
    pub udp_send_ns: u64,
    /// Build and send one pure ACK from softirq, up to the driver.
    pub tcp_ack_send_ns: u64,
    /// Output of one TCP data segment (`tcp_transmit_skb` + `ip_queue_xmit` + `dev_queue_xmit`)
    /// up to the driver, excluding the user copy.
    pub tcp_send_ns: u64,
    /// Input of one pure ACK on a sending connection (IP + `tcp_ack`, freeing acknowledged
    /// segments, waking the writer), excluding segments it lets out.
    pub tcp_ack_rx_ns: u64,
    /// Driver transmit per frame (`hard_start_xmit`: descriptor, doorbell).
    pub driver_tx_frame_ns: u64,
    /// Driver TX clean-up per completed frame (descriptor check, unmap, skb free).
    pub driver_tx_clean_ns: u64,
    /// IP forwarding of one packet in the kernel, no socket: `ip_rcv`, route lookup, TTL and
    /// checksum update (`ip_forward`), `ip_output` with the neighbour header, and the device
    /// queue, up to the driver (whose transmit cost is separate).
    pub ip_forward_ns: u64,
    pub tx_per_byte_ns: f64,
    pub context_switch_ns: u64,
    pub tick_ns: u64,
    pub ipi_ns: u64,
    /// Linux >= 5.16 `newidle_balance` (`kernel.scheduler = "cfs6"`): what one new-idle
    /// `load_balance` pass costs per CPU of the domain it looks at (`update_sd_lb_stats`
    /// reads every run queue of the span). The domain's `max_newidle_lb_cost` is this times
    /// its CPU count; a CPU whose `avg_idle` is shorter skips the pass. Only its use as that
    /// gate is modelled (balancing charges no CPU time). Absent = 0 (no gate) on profiles of
    /// older kernels, which don't use it.
    #[serde(default)]
    pub newidle_balance_per_cpu_ns: u64,
}

/// The cache-affinity model: extra time and modelled misses.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheCosts {
    pub migrate_warmup_ns: u64,
    pub migrate_llc_load_misses: u64,
    pub migrate_llc_store_misses: u64,
    pub migrate_dtlb_load_misses: u64,
    pub migrate_dtlb_store_misses: u64,
    pub remote_packet_ns: u64,
    pub remote_packet_llc_load_misses: u64,
    pub remote_packet_llc_store_misses: u64,
}

/// Receive path.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RxPath {
    /// Linux 2.4 `netif_rx`: the IRQ handler copies every frame to the per-CPU backlog (with the
    /// throttle state), NET_RX softirq drains it.
    Legacy,
    /// NAPI: the IRQ handler masks the queue's interrupt and schedules a poll in softirq.
    Napi,
}

/// Backlog queueing policy (per CPU). `fifo` is Linux's own.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BacklogKind {
    Fifo,
    /// Priority-Based Queues (`ozaki-pbq`, paper 000) under high load.
    Pbq,
    /// Linux's RPS flow limit (3.11+, `skb_flow_limit`): Linux's NAPI-era FIFO, and once a
    /// backlog is at least half full, packets of a flow holding more than half of the enqueuing
    /// CPU's recent history are dropped (`mechanisms/flow_limit.rs`). Needs `rx_path = "napi"`.
    FlowLimit,
}

/// A program at the driver's entry point (XDP, Linux >= 4.8), run on every frame the NAPI poll
/// takes from a NIC queue, before RPS, the backlog and the protocols.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum XdpKind {
    /// No program: Linux's own path.
    None,
    /// A program that only counts (passes everything, costs `xdp_run_ns`): the live baseline,
    /// which keeps the program attached with its mechanism off.
    Count,
    /// `ozaki-pbq`'s priority drop as `hostsim live` runs it (mechanisms/ozaki_pbq/xdp.rs): under high load,
    /// drop lower priorities first beyond a minimum share per level.
    Pbq,
    /// A program that redirects every frame to the CPU map entry of `cpumap_cpu`
    /// (`bpf_redirect_map` on a `BPF_MAP_TYPE_CPUMAP`, `net/core/cpumap.rs`): the driver half
    /// stays in the NAPI poll, the rest runs in the entry's kthread on that CPU.
    Cpumap,
    /// `pbq`'s program with its drop switched off, as the live agent runs it in the variants
    /// without the priority drop (crates/live `Agent::enable(false)`): it counts arrivals per
    /// level for the agent's detector, which polls as under `pbq`, and passes every frame. What
    /// `napi_suppress` reads its high load from.
    Detect,
}

/// Interrupt suppression as the live agent does it with threaded NAPI
/// (`mechanisms/ozaki_pbq/napi_suppress.rs`, crates/live/src/suppress.rs): what the agent changes
/// on the NAPI kthreads while the rule holds.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NapiSuppress {
    /// No agent.
    Off,
    /// Move the kthreads to the other online CPUs (stands for the IRQ affinity write of §3.3).
    Affinity,
    /// Keep them on their CPU but drop them from SCHED_FIFO to SCHED_OTHER nice 0.
    Priority,
}

/// Wake-up placement policy (`select_task_rq`). `linux` is the placement of the kernel's
/// `scheduler` (Linux 3.2's `select_task_rq_fair`, or 2.4 O(1)'s `try_to_wake_up`); `goda_rfs`
/// is paper 001's change to it: a task that moved stays where it is on wake-ups from another CPU
/// until its flow's receive processing (RFS) has followed it there.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WakePolicy {
    Linux,
    GodaRfs,
}

/// The scheduler a kernel era ships: it decides wake-up placement and load balancing (the
/// per-CPU pick of the next task is the CFS-like one in both; see `kernel/sched/core.rs`).
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

/// How the kernel runs on several CPUs (`kernel.concurrency`; `kernel/locking/spinlock.rs`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConcurrencyKind {
    /// Today's fine-grained SMP: any CPU runs any kernel code at any time; locking costs are the
    /// profile's `smp_lock_factor` on the locking-sensitive costs.
    Smp,
    /// A uniprocessor kernel: CPU 0 only (the profile's other CPUs are offline), no SMP locking.
    Up,
    /// One big kernel lock (Linux 2.0 `kernel_flag`): every kernel-context unit (hard IRQ,
    /// softirq, system call, context switch) runs holding it; a CPU that needs it while another
    /// holds it spins (CPU state `spin`).
    Bkl,
    /// Functionally distributed (HiTactix/Symbiose, paper 003): the driver on `driver_cpu`, IP on
    /// `ip_cpu`, per-CPU lock-free local queues, global queues under one spin lock exchanged in
    /// bulk by periodic threads every `exchange_period_us`.
    Functional,
}

/// Kernel options. Defaults are Linux 3.x-like; the 2.4 scenarios override a few.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct KernelConfig {
    pub rx_path: RxPath,
    /// Timer interrupt frequency.
    pub hz: u32,
    /// Per-CPU backlog length limit (`netdev_max_backlog`).
    pub netdev_max_backlog: u32,
    /// Packets one NET_RX softirq pass may process (`netdev_budget`; 2.4 used netdev_max_backlog).
    pub netdev_budget: u32,
    /// One NET_RX pass ends after this long even with budget left (2.4: 1 jiffy; 3.x: 2 jiffies).
    pub net_rx_time_max_us: u64,
    /// Per-device NAPI poll weight (also the backlog's quota per round).
    pub napi_weight: u32,
    /// Times `__do_softirq` restarts at IRQ exit before handing over to ksoftirqd (2.4: 0, 3.x: 10).
    pub softirq_restart_max: u32,
    /// `__do_softirq` stops restarting after this long (Linux >= 3.8: 2 ms).
    pub softirq_time_max_us: u64,
    /// Don't run softirqs at IRQ exit while this CPU's ksoftirqd is runnable (Linux >= 4.9).
    pub softirq_defer_to_ksoftirqd: bool,
    /// CONFIG_IRQ_TIME_ACCOUNTING: interrupt time is not charged to the interrupted task's
    /// vruntime. Off by default, as in the kernels of the papers.
    pub irq_time_accounting: bool,
    /// Nice value of the ksoftirqd threads (2.4: 19, later: 0).
    pub ksoftirqd_nice: i8,
    /// Frames the legacy IRQ handler takes from the ring per interrupt before returning.
    pub irq_frames_max: u32,
    /// balance_irq (`nic.irq_routing = "balance_irq"`): which CPUs its search for an idle
    /// neighbour takes as idle (`IDLE_ENOUGH(cpu, now)`, `kernel/irq/route.rs`). `idle_cpu`
    /// (default): the irqbalance patch Red Hat's 2.4.18 carries (irqbalance-2.4.17-B1), where the
    /// test is `idle_cpu(cpu)` (the idle task is `current`, whatever interrupt work the CPU does);
    /// `idle_timestamp`: 2.5's, which also wants the idle loop entered more than a jiffy ago.
    pub balance_irq_idle: BalanceIrqIdle,
    pub backlog: BacklogKind,
    /// PBQ: packets the top-priority queue keeps from eviction; level l keeps this × (l+1)/40.
    pub pbq_min_packets: u32,
    /// Flow limit: the CPUs with a flow table (`net.core.flow_limit_cpu_bitmap`). Linux consults
    /// the table of the CPU doing the enqueue (with RPS, the one polling the NIC), so these are
    /// the CPUs that handle receive interrupts (Documentation/networking/scaling.rst). Empty =
    /// every CPU.
    pub flow_limit_cpus: Vec<u32>,
    /// Flow limit: buckets per CPU's flow table (`net.core.flow_limit_table_len`; Linux's default
    /// 4096; a power of two, at most 65536).
    pub flow_limit_table_len: u32,
    /// `ozaki-pbq` interrupt suppression at context switch: under high load, when the incoming
    /// process's socket buffer is over half full and a draw weighted by its priority succeeds,
    /// take its CPU out of the NICs' IRQ affinity (never the last CPU); restore afterwards.
    pub irq_suppression: bool,
    /// Program at the driver's entry point (needs `rx_path = "napi"`).
    pub xdp: XdpKind,
    /// XDP `pbq`: the agent polls the kernel's counters this often (live default 10 ms).
    pub xdp_poll_ms: u64,
    /// XDP `pbq`: a backlog this long counts as overload (live default 500 = half of 6.x's
    /// `netdev_max_backlog`).
    pub xdp_backlog_len_high: u32,
    /// XDP `pbq`: high load ends when the arrival rate has stayed below this fraction of the
    /// rate at which it began (0..1) for `xdp_hold_ms`.
    pub xdp_release_frac: f64,
    pub xdp_hold_ms: u64,
    /// XDP `pbq`: while overload persists, shed the next priority level after this long.
    pub xdp_escalate_ms: u64,
    /// XDP `pbq`: high load ends after this long without a sign of overload (a probe).
    pub xdp_probe_ms: u64,
    /// XDP `pbq`: packets per window the top level keeps under high load; level l keeps
    /// this × (l+1)/40 (the PBQs' minimums, as a rate).
    pub xdp_min_share_top: u32,
    /// XDP `pbq`: the minimum-share window.
    pub xdp_window_ms: u64,
    /// XDP `pbq`: the receiver's capacity in packets per second, measured with the mechanism
    /// off (the live agent's `--capacity-pps`, or what its sweep measured on the `off` points);
    /// an arrival rate the program counts of at least 90% of it is overload. 0 (default): this
    /// sign unused, overload only from the backlogs and the top level's socket drops.
    pub xdp_capacity_pps: f64,
    /// XDP `cpumap`: the CPU of the map entry every frame is redirected to (its kthread's CPU).
    pub cpumap_cpu: u32,
    /// XDP `cpumap`: the entry's queue length in frames (`bpf_cpumap_val.qsize`).
    pub cpumap_qsize: u32,
    /// XDP `cpumap`: the entry kthread's SCHED_FIFO priority (Linux starts it SCHED_OTHER; the
    /// live experiment sets FIFO 50).
    pub cpumap_rt_prio: u8,
    /// Threaded NAPI (`/sys/class/net/<dev>/threaded` = 1, Linux >= 5.12; `net/core/napi_thread.rs`):
    /// each NIC queue's NAPI poll runs in a kthread (`napi/<dev>-<id>`) bound to the first CPU of
    /// the NIC's `irq_cpus`, at SCHED_FIFO `napi_rt_prio`, instead of in NET_RX. Needs
    /// `rx_path = "napi"`; RPS, GRO, RSC, the CPU map, TCP prequeue are not modelled with it.
    pub napi_threaded: bool,
    /// Threaded NAPI: the kthreads' SCHED_FIFO priority (Linux starts them SCHED_OTHER nice 0;
    /// `hostsim live ozaki-pbq` sets FIFO 50, ozaki.rs `napi_fifo_prio`).
    pub napi_rt_prio: u8,
    /// Threaded NAPI: the live agent's interrupt suppression (`mechanisms/ozaki_pbq/napi_suppress.rs`);
    /// needs `napi_threaded` and a program whose detector polls (`xdp = "pbq"` or `"detect"`).
    pub napi_suppress: NapiSuppress,
    /// `napi_suppress`: the agent checks the rule this often (live `--supp-check-ms`, default 1).
    pub napi_suppress_check_ms: u64,
    /// `napi_suppress`: "data waiting" is more than this many bytes charged to the top level's
    /// sockets (live `queued_bytes_min`, 0: any data).
    pub napi_suppress_queued_bytes_min: u64,
    /// Receive Packet Steering (the `rps_needed` switch): steer packets to other CPUs' backlogs
    /// by the RPS map (`rps_cpus`) and/or the RFS flow tables (`rfs`).
    pub rps: bool,
    /// The RPS map (`/sys/class/net/*/queues/rx-*/rps_cpus`): CPUs chosen by flow hash. Empty =
    /// no map: packets without an RFS entry are processed on the receiving CPU.
    pub rps_cpus: Vec<u32>,
    /// Receive Flow Steering (needs `rps`): steer a flow to the CPU of its reader's last recvmsg.
    pub rfs: bool,
    /// Linux's rule that a flow moves to a new CPU only after the old CPU's backlog has passed
    /// the flow's last enqueued packet. Turning it off is an experiment (it reorders flows).
    pub rfs_no_reorder_rule: bool,
    /// Entries of the RFS socket and device flow tables (power of two).
    pub rfs_entries: u32,
    /// Key the flow hash per boot. Linux >= 3.19 fills the RSS key with random bytes at boot
    /// (`netdev_rss_key_fill`) and keys its software flow hash with a random `hashrnd`, so which
    /// flows share a NIC queue, a polling CPU, an RPS CPU or a flow-limit bucket changes from
    /// boot to boot. `true`: the run's seed draws the key (a seed is a boot). `false` (default):
    /// one fixed hash, the same in every run.
    pub rss_key_per_boot: bool,
    /// Default socket receive buffer (`rmem_default`), bytes of truesize.
    pub rcvbuf_bytes: u32,
    /// Truesize overhead added to each queued packet's payload (sk_buff + slab rounding).
    pub skb_overhead_bytes: u32,
    pub wake_policy: WakePolicy,
    /// The scheduler of the kernel's era: `cfs` (Linux 3.2, default) or `o1` (Red Hat 2.4.18's).
    /// Wake-up placement and load balancing follow it; `wake_policy = "goda_rfs"` wraps its
    /// placement.
    pub scheduler: Scheduler,
    /// With `scheduler = "o1"`: each CPU's run queue is the O(1) scheduler's of Linux 2.5 up to
    /// 2.5.21 (active and expired priority arrays, the `sleep_avg` bonus, `TASK_TIMESLICE`,
    /// interactive reinsertion, its `sys_sched_yield` and `setscheduler`;
    /// `kernel/sched/o1_rq.rs`) instead of the CFS-like pick of the fair class. Off by default:
    /// the 2.4.18 scenarios (paper 000) keep the CFS-like pick, which orders their nice -19 and
    /// 19 tasks the same way.
    pub o1_runqueue: bool,
    /// CFS targeted preemption latency.
    pub sched_latency_us: u64,
    pub sched_min_granularity_us: u64,
    pub sched_wakeup_granularity_us: u64,
    /// Place a woken task on the waking CPU when loads allow (SD_WAKE_AFFINE).
    pub wake_affine: bool,
    /// `sd->imbalance_pct` of the domain used by wake_affine and the load balancer.
    pub imbalance_pct: u32,
    /// Periodic load balancing interval per CPU (`cfs` era; `o1` and `cfs6` use their
    /// kernels' own intervals).
    pub balance_interval_ms: u64,
    /// `sysctl_sched_migration_cost`. `cfs6` era: a task that ran less than this long ago is
    /// cache-hot and not pulled by the load balancer (`task_hot`); also the initial
    /// `max_idle_balance_cost` (and twice it the initial `avg_idle`) of every run queue.
    /// `cfs` (3.2) era: new-idle balancing is skipped while the CPU's `avg_idle` is below it
    /// (`kernel/sched/cfs32.rs`). Linux's default is 500 us (3.2 kernel/sched.c, 6.x kernel/sched/fair.c).
    pub sched_migration_cost_us: u64,
    /// nanosleep resolution: 0 = high-resolution timers (+ `timer_slack_ns`), else rounded up to
    /// whole ticks plus one (the 2.4 jiffy behaviour).
    pub timer_tick_sleep: bool,
    pub timer_slack_ns: u64,
    /// TCP delayed ACK timeout.
    pub delack_ms: u64,
    /// How the kernel runs on several CPUs: `smp` (fine-grained, the default), `up`
    /// (uniprocessor kernel), `bkl` (one big kernel lock) or `functional` (paper 003's split).
    pub concurrency: ConcurrencyKind,
    /// CPUs brought up (the first N of the profile's; Linux `maxcpus=`). Absent = all of them;
    /// `concurrency = "up"` runs one. Offline CPUs do nothing at all (no ticks).
    pub online_cpus: Option<u32>,
    /// `functional`: the CPU running the Ethernet driver and ARP (paper 003: CPU#1). Every
    /// NIC's interrupts must go to it.
    pub driver_cpu: u32,
    /// `functional`: the CPU running IP (and UDP/TCP input) (paper 003: CPU#0).
    pub ip_cpu: u32,
    /// `functional`: period of each CPU's bulk-send and polling threads (paper 003: 5 ms).
    pub exchange_period_us: u64,
    /// `functional`: buffers in the shared inter-OS buffer pool (paper 003 §3 gives no size). A
    /// frame arriving when all are in the exchange queues is dropped (drop place `buffer_pool`).
    pub pool_buffers: u32,
    /// Default socket send buffer (`wmem_default`; Linux 2.4 `tcp_wmem[1]` = 16384), bytes of
    /// truesize (payload + `skb_overhead_bytes` per segment).
    pub sndbuf_bytes: u32,
    /// TCP maximum segment size of the host's connections (1460 on Ethernet without options).
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
    pub tcp_receiver: TcpReceiver,
    /// TCP prequeue (`net/ipv4/tcp_prequeue.rs`): segments for a reader blocked in recvmsg are
    /// queued for it (one sync wake-up per batch) and processed in its context. Linux's own
    /// default (`sysctl_tcp_low_latency = 0`, 2.4 to 4.13) is on; the key's default, off, keeps
    /// the scenarios calibrated before it was modelled as they were.
    pub tcp_prequeue: bool,
    /// `net.ipv4.tcp_rmem` = [min, default, max], bytes (Linux 3.2 on a machine with enough
    /// memory: 4096 87380 4194304; 3.4 raised the max to 6 MB).
    pub tcp_rmem: [u32; 3],
    /// `net.ipv4.tcp_moderate_rcvbuf` (on since 2.6.7): receive-buffer autotuning.
    pub tcp_moderate_rcvbuf: bool,
    /// `net.ipv4.tcp_adv_win_scale`: 1/2^n of the buffer is overhead, the rest window (2 up to
    /// Linux 3.3, 1 from 3.4).
    pub tcp_adv_win_scale: u8,
    /// How send() data is cut into segments: `stream` (Linux: fill segments to the MSS across
    /// calls) or `per_send` (each send() starts a new segment: a 2048 B send leaves as MSS +
    /// remainder).
    pub tcp_segmentation: TcpSegmentation,
    /// Tender speed regulation (paper 002): slot length.
    pub speed_slot_us: u64,
    /// Tender speed regulation: block length (T = block / slot slots per block).
    pub speed_block_ms: u64,
    /// When a regulated process woken mid-slot runs again: `slot_boundary` (only at the start
    /// of its next allocated slot) or `immediate` (at once if the current slot is allocated).
    pub speed_dispatch: SpeedDispatch,
}

/// balance_irq's idle test (`kernel.balance_irq_idle`; `kernel/irq/route.rs`).
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
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpSegmentation {
    Stream,
    PerSend,
}

/// The receiving TCP's model (`kernel.tcp_receiver`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpReceiver {
    #[default]
    Simple,
    Linux,
}

/// Dispatch of a woken speed-regulated process (paper 002 does not say; notes 002 §5.4).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SpeedDispatch {
    SlotBoundary,
    Immediate,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            rx_path: RxPath::Napi,
            hz: 1000,
            netdev_max_backlog: 1000,
            netdev_budget: 300,
            net_rx_time_max_us: 2000,
            napi_weight: 64,
            softirq_restart_max: 10,
            softirq_time_max_us: 2000,
            softirq_defer_to_ksoftirqd: true,
            irq_time_accounting: false,
            ksoftirqd_nice: 0,
            irq_frames_max: 64,
            balance_irq_idle: BalanceIrqIdle::IdleCpu,
            backlog: BacklogKind::Fifo,
            pbq_min_packets: 30,
            flow_limit_cpus: Vec::new(),
            // Linux's `netdev_flow_limit_table_len` (mechanisms/flow_limit.rs `FLOW_LIMIT_TABLE_LEN`).
            flow_limit_table_len: 1 << 12,
            irq_suppression: false,
            xdp: XdpKind::None,
            xdp_poll_ms: 10,
            xdp_backlog_len_high: 500,
            xdp_release_frac: 0.8,
            xdp_hold_ms: 100,
            xdp_escalate_ms: 100,
            xdp_probe_ms: 2000,
            xdp_min_share_top: 400,
            xdp_window_ms: 10,
            xdp_capacity_pps: 0.0,
            cpumap_cpu: 1,
            cpumap_qsize: 2048,
            cpumap_rt_prio: 50,
            napi_threaded: false,
            napi_rt_prio: 50,
            napi_suppress: NapiSuppress::Off,
            napi_suppress_check_ms: 1,
            napi_suppress_queued_bytes_min: 0,
            rps: false,
            rps_cpus: Vec::new(),
            rfs: false,
            rfs_no_reorder_rule: true,
            rfs_entries: 32768,
            rss_key_per_boot: false,
            rcvbuf_bytes: 212_992,
            skb_overhead_bytes: 256,
            wake_policy: WakePolicy::Linux,
            scheduler: Scheduler::Cfs,
            o1_runqueue: false,
            sched_latency_us: 6000,
            sched_min_granularity_us: 750,
            sched_wakeup_granularity_us: 1000,
            wake_affine: true,
            imbalance_pct: 125,
            balance_interval_ms: 4,
            sched_migration_cost_us: 500,
            timer_tick_sleep: false,
            timer_slack_ns: 50_000,
            delack_ms: 40,
            sndbuf_bytes: 16384,
            tcp_mss_bytes: 1460,
            tcp_receiver: TcpReceiver::Simple,
            tcp_prequeue: false,
            tcp_rmem: [4096, 87_380, 4_194_304],
            tcp_moderate_rcvbuf: true,
            tcp_adv_win_scale: 2,
            tcp_segmentation: TcpSegmentation::Stream,
            speed_slot_us: 1000,
            speed_block_ms: 1000,
            speed_dispatch: SpeedDispatch::SlotBoundary,
            concurrency: ConcurrencyKind::Smp,
            online_cpus: None,
            driver_cpu: 1,
            ip_cpu: 0,
            exchange_period_us: 5000,
            pool_buffers: 4096,
        }
    }
}

/// How a NIC queue's interrupt chooses its CPU.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IrqRouting {
    /// Always the first CPU of `irq_cpus`.
    Fixed,
    /// The IRQ's affinity mask is `irq_cpus`; the IO-APIC delivers to the lowest CPU in it.
    Mask,
    /// Linux 2.4 `balance_irq` (the irqbalance patch): every `balance_irq_interval_us` the IRQ
    /// moves to a neighbouring CPU (direction drawn at random), preferring one whose `current` is
    /// the idle task (`kernel.balance_irq_idle`), within the mask.
    BalanceIrq,
    /// One MSI-X vector per queue: queue q goes to `irq_cpus[q % len]`.
    Msix,
}

/// A NIC with one port.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NicConfig {
    pub name: String,
    pub rate_mbps: u64,
    /// Queue pairs: each has an RX ring (chosen by RSS), a TX ring (chosen by the sending CPU)
    /// and one interrupt vector serving both (`drivers/net/nic.rs`, `net/core/tx.rs`).
    #[serde(default = "one")]
    pub queues: u32,
    /// RX descriptors per queue.
    #[serde(default = "ring")]
    pub rx_ring: u32,
    /// TX descriptors per queue (each of the `queues` queue pairs has its TX ring, fed by the
    /// CPUs that send on it, `net/core/tx.rs`): a frame the host sends holds one from `dev_queue_xmit`
    /// until the driver's TX clean-up after the frame has left.
    #[serde(default = "ring")]
    pub tx_ring: u32,
    /// Device queue in front of each TX ring (`txqueuelen`, Linux `ether_setup`: 100): frames
    /// wait here while the ring is full; beyond it they are dropped (`tx_ring_drops`).
    #[serde(default = "txqueuelen")]
    pub tx_queue_len: u32,
    /// The descriptor that brings the TX ring's occupancy to this level asks for a TX-done
    /// interrupt (tulip: `TX_RING_SIZE/2`, the default: half of `tx_ring`); the NIC also
    /// interrupts when its ring drains. 1 = an interrupt for every frame put on an empty ring.
    #[serde(default)]
    pub tx_irq_ring_level: Option<u32>,
    /// Raise the interrupt once this many frames are pending ...
    #[serde(default = "one")]
    pub coalesce_frames: u32,
    /// ... or this long after the first pending frame (0 = no timer).
    #[serde(default)]
    pub coalesce_usecs: u32,
    #[serde(default = "routing")]
    pub irq_routing: IrqRouting,
    /// CPUs for the routing policy (empty = all CPUs).
    #[serde(default)]
    pub irq_cpus: Vec<u32>,
    /// Switch forwarding latency in front of this port.
    #[serde(default = "switch_latency")]
    pub switch_latency_ns: u64,
    /// Switch output buffer in front of this port; frames beyond it are dropped (`switch`).
    #[serde(default = "switch_buffer")]
    pub switch_buffer_bytes: u64,
    /// Interrupt throttling (e1000 `InterruptThrottleRate`): at most this many interrupts per
    /// second per queue; an interrupt due sooner waits for the interval to pass. 0 = off.
    #[serde(default)]
    pub itr_ints_per_s: u32,
    /// balance_irq: minimum time between moves of the IRQ. None = IRQ_BALANCE_INTERVAL (HZ/50,
    /// 2.5/2.6's io_apic.c); 0 = a move at every interrupt's ACK (as paper 000 §3.4.3 describes
    /// its RedHat 2.4.18 kernel). Red Hat 2.4.18-14's own balance_irq (arch/i386/kernel/io_apic.c,
    /// called from end_level_ioapic_irq) moves only `if (entry->timestamp != now)`, at most once
    /// per jiffy: one jiffy (`1_000_000 / hz`) models it.
    #[serde(default)]
    pub balance_irq_interval_us: Option<u64>,
    /// Flow Director ATR (`drivers/net/fdir.rs`): sample every this many frames of a TX ring
    /// (and every SYN) and steer the sampled TCP flow's received frames to the RX queue paired
    /// with that ring. 0 = off (the default: a NIC without Flow Director); the 82599 under
    /// Linux 3.2's ixgbe: 20 (`ixgbe_sw_init`: `atr_sample_rate = 20`).
    #[serde(default)]
    pub fdir_atr_sample_rate: u32,
    /// Interrupt moderation's rate policy (`drivers/net/itr.rs`): `fixed` (the default:
    /// `itr_ints_per_s` as set) or `ixgbe_dynamic` (Linux 3.2 ixgbe's default,
    /// `rx_itr_setting = 1`: `ixgbe_set_itr` moves each vector between 100,000, 20,000 and 8,000
    /// interrupts/s by the bytes it received per interval; `itr_ints_per_s` is then ignored),
    /// `net_dim_cqe` / `net_dim_eqe` (Linux 6.x `net_dim`, mlx5's default: `drivers/net/dim.rs`).
    #[serde(default)]
    pub itr_mode: ItrMode,
    /// GRO (`net/core/gro.rs`): the NAPI poll merges in-order TCP segments of up to 8 flows
    /// into aggregates of at most 64 KB that go up the stack as one skb (Linux 3.2
    /// `napi_gro_receive`; `NETIF_F_GRO` is on by default for every NAPI driver that calls it,
    /// such as ixgbe). Default off: the 2.4 drivers and the scenarios calibrated before it keep
    /// their results; the 82599/ixgbe 3.2 scenarios set it. Needs `kernel.rx_path = "napi"`.
    #[serde(default)]
    pub gro: bool,
    /// RSC (`drivers/net/rsc.rs`): the 82599 coalesces in-order TCP frames of a flow into one
    /// receive aggregate of at most this many descriptors (ixgbe 3.2: `IXGBE_RSCCTL_MAXDESC_16`,
    /// with `IXGBE_FLAG2_RSC_ENABLED` on by default for the 82599). 0 = off (the default).
    #[serde(default)]
    pub rsc_max_desc: u32,
}

/// How a NIC's interrupt throttle rate is set (`nic.itr_mode`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ItrMode {
    /// `itr_ints_per_s` as configured (0 = no throttle).
    #[default]
    Fixed,
    /// Linux 3.2 ixgbe `ixgbe_set_itr` / `ixgbe_update_itr` at every `napi_complete`.
    IxgbeDynamic,
    /// Linux 6.x `net_dim` (lib/dim) as mlx5 runs it by default on RX queues, CQE mode (the
    /// moderation timer restarts at each completion): `drivers/net/dim.rs`. `coalesce_frames`,
    /// `coalesce_usecs` and `itr_ints_per_s` are then ignored.
    NetDimCqe,
    /// `net_dim` in EQE mode (the timer runs from the previous interrupt): mlx5 on a device
    /// without `cq_period_start_from_cqe`.
    NetDimEqe,
}

fn one() -> u32 {
    1
}
fn ring() -> u32 {
    256
}
fn txqueuelen() -> u32 {
    100
}
fn routing() -> IrqRouting {
    IrqRouting::Fixed
}
fn switch_latency() -> u64 {
    2_000
}
fn switch_buffer() -> u64 {
    1 << 20
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SchedPolicy {
    #[default]
    Normal,
    Fifo,
}

/// An in-host process.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProcessConfig {
    pub name: String,
    pub program: ProgramKind,
    /// Port its socket is bound to (processes naming the same port share one socket).
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub nice: i8,
    #[serde(default)]
    pub sched: SchedPolicy,
    /// SCHED_FIFO priority 1..=99.
    #[serde(default)]
    pub rt_priority: u8,
    /// Allowed CPUs (empty = all).
    #[serde(default)]
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub work_ns: u64,
    #[serde(default)]
    pub work_dist: WorkDist,
    #[serde(default = "read_bytes")]
    pub read_bytes: u32,
    #[serde(default)]
    pub reply_bytes: u32,
    /// `periodic`: nanosleep after each burst.
    #[serde(default)]
    pub sleep_ns: u64,
    /// Nice changes during the run (`renice`): at `at_ms` the nice value becomes `nice`.
    #[serde(default)]
    pub renice: Vec<Renice>,
    /// Socket receive buffer (default: kernel.rcvbuf_bytes).
    #[serde(default)]
    pub rcvbuf_bytes: Option<u32>,
    #[serde(default)]
    pub start_ms: u64,
    /// Identical processes to start from this entry (iperf's thread per connection): instance
    /// i is named `<name>-<i>` and binds `port + i`. Their metrics are summed under `<name>`.
    #[serde(default = "one")]
    pub instances: u32,
    /// `stream_send`: bytes per send() call (1..).
    #[serde(default)]
    pub unit_bytes: u32,
    /// `stream_send`: bytes to send in all (default 2^20, "1 MB").
    #[serde(default = "total")]
    pub total_bytes: u64,
    /// `stream_send`: the `[[traffic]]` (a `stream_sink`) its connection goes to.
    #[serde(default)]
    pub connect: Option<String>,
    /// Socket send buffer (default: kernel.sndbuf_bytes).
    #[serde(default)]
    pub sndbuf_bytes: Option<u32>,
    /// TCP_NODELAY: no Nagle delay for segments shorter than the MSS.
    #[serde(default)]
    pub nodelay: bool,
    /// Tender execution-speed regulation (paper 002), 1..=100 percent: the process runs only
    /// in its n = round(speed × T / 100) allocated slots of each block. Absent = unregulated.
    #[serde(default, deserialize_with = "speed_pct")]
    pub speed_pct: Option<u32>,
    /// Start at `start_ms` plus a uniform random offset in [0, start_jitter_us) (drawn from
    /// the process's own random stream: seeds differ in phase).
    #[serde(default)]
    pub start_jitter_us: u64,
    /// `accelerator`: its interval control, origin connections and user-mode costs
    /// (`[process.accelerator]`).
    #[serde(default)]
    pub accelerator: Option<AccelConfig>,
    /// Threads of a multi-threaded program (`[[process.thread]]`, each with a `program`).
    #[serde(default, rename = "thread")]
    pub threads: Vec<ThreadConfig>,
}

fn total() -> u64 {
    1 << 20
}

/// `speed_pct`: an integer percentage in 1..=100; anything else is an error naming the range.
fn speed_pct<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    struct V;
    const WANT: &str = "a speed in percent, an integer in 1..=100";
    impl serde::de::Visitor<'_> for V {
        type Value = Option<u32>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(WANT)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            if (1..=100).contains(&v) {
                Ok(Some(v as u32))
            } else {
                Err(E::custom(format!("expected {WANT}, got {v}")))
            }
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
        }
    }
    d.deserialize_any(V)
}

fn read_bytes() -> u32 {
    65536
}

/// A scheduled nice change (as if an administrator ran renice).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Renice {
    pub at_ms: u64,
    pub nice: i8,
}

/// Transport of a ping-pong source (window-limited sources are always TCP, rate sources UDP).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    #[default]
    Udp,
    Tcp,
}

/// An external traffic generator attached to a NIC.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrafficConfig {
    pub name: String,
    pub kind: SourceKind,
    /// NIC (by name) the traffic arrives on.
    pub nic: String,
    /// Destination port; with several `clients`, client i sends to `dst_port + i`. Required
    /// for every kind that sends (a `sink` only receives).
    #[serde(default)]
    pub dst_port: u16,
    /// Identical client machines, each with its own link and destination port; `rate_pps` is
    /// their total and `flows` are spread over them.
    #[serde(default = "one")]
    pub clients: u32,
    /// ping_pong only: UDP (lat_udp) or TCP (lat_tcp).
    #[serde(default)]
    pub protocol: Protocol,
    #[serde(default)]
    pub rate_pps: f64,
    /// UDP payload or TCP segment size.
    #[serde(default = "payload")]
    pub payload_bytes: u32,
    #[serde(default = "flows")]
    pub flows: u32,
    #[serde(default)]
    pub start_ms: u64,
    /// Stop sending at this time (default: end of run).
    #[serde(default)]
    pub stop_ms: Option<u64>,
    /// The sender's own link rate (its frames are serialised at this rate before the switch).
    #[serde(default = "link")]
    pub link_mbps: u64,
    #[serde(default)]
    pub client_stack_ns: u64,
    #[serde(default = "timeout")]
    pub timeout_ms: u64,
    /// `tcp_window`: bytes each flow keeps unacknowledged. Without congestion control
    /// (`tcp_cc = "none"`) the flow's fixed window; with it, a cap on the window (the sender's
    /// socket buffer).
    #[serde(default = "window")]
    pub window_bytes: u32,
    /// `tcp_window` without congestion control: the retransmission timeout (with it, RFC 6298's).
    #[serde(default = "rto")]
    pub rto_ms: u64,
    /// `tcp_window`: the senders' congestion control: `none` (the default: a fixed window,
    /// go-back-N on three duplicate ACKs or a timeout), `reno` or `cubic` (the `hostsim-tcp`
    /// sender, `crates/tcp`).
    #[serde(default)]
    pub tcp_cc: TcpCc,
    /// `tcp_window` with congestion control: whose rules the senders follow where the kernels
    /// differ (`linux24`: initial window 2, initial RTO 3 s; `linux32`, the default: 10 and
    /// 1 s, 3.2's `tcp_is_cwnd_limited`).
    #[serde(default = "sender_era")]
    pub tcp_era: Era,
    /// `tcp_window` with congestion control: the senders' HZ (CUBIC's clock).
    #[serde(default = "sender_hz")]
    pub tcp_hz: u32,
    /// `tcp_window` with congestion control: the senders' NIC does TCP segmentation offload,
    /// so their TCP sends new data in trains (Linux 3.2 `tcp_tso_should_defer`: until 64 KB or a
    /// third of the window can leave at once). Default off: each segment leaves as the windows
    /// open it.
    #[serde(default)]
    pub tcp_tso: bool,
    #[serde(default)]
    pub total_bytes: u64,
    /// Flow f goes to `dst_port + f` (one connection per receiving socket, e.g. iperf -P N
    /// against one receiver thread per connection) instead of all flows to `dst_port`.
    #[serde(default)]
    pub dst_port_per_flow: bool,
    /// One-way propagation delay of each client machine's link, both directions (WebAxe-4
    /// asks for 40 ms on the client side).
    #[serde(default)]
    pub link_delay_us: u64,
    /// `http_clients` / `http_origin`: the HTTP workload's parameters (`[traffic.http]`).
    #[serde(default)]
    pub http: Option<HttpConfig>,
    /// `cbr`: send in pacing quanta of this many us (0, the default: evenly spaced): the frames
    /// due in a quantum leave at its start, `burst_pps` apart (a paced generator such as
    /// `hostsim live`'s, crates/live/src/gen.rs, which builds each quantum's frames at once).
    #[serde(default)]
    pub quantum_us: u64,
    /// `cbr` with `quantum_us`: the rate at which a quantum's frames leave.
    #[serde(default)]
    pub burst_pps: f64,
    /// `cbr` with `quantum_us`, instead of `burst_pps`: a quantum's frames leave evenly over
    /// this fraction of it, at `rate_pps / spread` (0, the default: `burst_pps`), as the live
    /// generator's spread streams (crates/live/src/gen.rs `Stream::spread`), whose burst rate
    /// follows the rate.
    #[serde(default)]
    pub spread: f64,
}

fn payload() -> u32 {
    18
}
fn flows() -> u32 {
    1
}
fn link() -> u64 {
    1000
}
fn timeout() -> u64 {
    100
}
fn window() -> u32 {
    65535
}
fn rto() -> u64 {
    200
}
fn sender_era() -> Era {
    Era::Linux32
}
fn sender_hz() -> u32 {
    1000
}

/// The congestion control of a `tcp_window` source's senders.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpCc {
    /// A fixed window without congestion control.
    #[default]
    None,
    Reno,
    Cubic,
}

impl TcpCc {
    /// The `hostsim-tcp` algorithm, None for the fixed window.
    pub fn kind(self) -> Option<CcKind> {
        match self {
            TcpCc::None => None,
            TcpCc::Reno => Some(CcKind::Reno),
            TcpCc::Cubic => Some(CcKind::Cubic),
        }
    }
}

/// A route: packets arriving on NIC `from` (any NIC if absent) that no local socket takes are
/// forwarded by the kernel (IP forwarding, no process) out of NIC `to`, to the external sink
/// (`[[traffic]]` of kind `sink`) attached to that NIC.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    #[serde(default)]
    pub from: Option<String>,
    pub to: String,
}

/// Everything a run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    pub profile: Profile,
    pub kernel: KernelConfig,
    pub nics: Vec<NicConfig>,
    pub processes: Vec<ProcessConfig>,
    pub traffic: Vec<TrafficConfig>,
    /// IP forwarding routes (`[[route]]`).
    pub routes: Vec<RouteConfig>,
    pub duration_ns: u64,
    /// Rates and latencies are measured after this.
    pub warmup_ns: u64,
    pub seed: u64,
    pub sample_interval_ns: u64,
}

impl HostConfig {
    /// CPUs the kernel runs on: the first `kernel.online_cpus` of the profile's (one for a
    /// uniprocessor kernel), else all of them. Never more than the machine has.
    pub fn online_cpus(&self) -> usize {
        let machine = self.profile.topology.cpus();
        let want = match (self.kernel.concurrency, self.kernel.online_cpus) {
            (_, Some(n)) => n as usize,
            (ConcurrencyKind::Up, None) => 1,
            (_, None) => machine,
        };
        want.clamp(1, machine.max(1))
    }
}
