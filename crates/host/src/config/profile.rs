//! A machine profile (`profiles/*.toml`): topology and the cost of every kernel operation, each
//! with where it comes from (`profiles/README.md`).

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
