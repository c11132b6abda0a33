//! Builders for unit tests that need a `Host`: a zero-cost machine and UDP sink processes.

use crate::config::*;

/// The host with the model's mechanisms (the registry's).
pub type Host = crate::sim::Host<crate::mechanisms::Registry>;
use hostsim_workload::{ProgramKind, WorkDist};

pub fn zero_profile(topology: Topology) -> Profile {
    Profile {
        name: "test".into(),
        description: String::new(),
        cpu_model: String::new(),
        clock_mhz: 1,
        topology,
        costs: Costs {
            hardirq_entry_ns: 0,
            driver_rx_frame_ns: 0,
            netif_rx_ns: 0,
            softirq_entry_ns: 0,
            ip_udp_rx_ns: 0,
            tcp_rx_ns: 0,
            rx_per_byte_ns: 0.0,
            wakeup_ns: 0,
            syscall_ns: 0,
            recv_ns: 0,
            copy_per_byte_ns: 0.0,
            udp_send_ns: 0,
            tcp_ack_send_ns: 0,
            tcp_send_ns: 0,
            tcp_ack_rx_ns: 0,
            driver_tx_frame_ns: 0,
            driver_tx_clean_ns: 0,
            ip_forward_ns: 0,
            tx_per_byte_ns: 0.0,
            context_switch_ns: 0,
            tick_ns: 0,
            ipi_ns: 0,
            newidle_balance_per_cpu_ns: 0,
        },
        cache: CacheCosts {
            migrate_warmup_ns: 0,
            migrate_llc_load_misses: 0,
            migrate_llc_store_misses: 0,
            migrate_dtlb_load_misses: 0,
            migrate_dtlb_store_misses: 0,
            remote_packet_ns: 0,
            remote_packet_llc_load_misses: 0,
            remote_packet_llc_store_misses: 0,
        },
        mechanisms: MechanismCosts::default(),
        syscalls: None,
    }
}

pub fn sink(name: &str, port: u16, nice: i8) -> ProcessConfig {
    ProcessConfig {
        name: name.into(),
        program: ProgramKind::UdpSink,
        port: Some(port),
        nice,
        sched: SchedPolicy::Normal,
        rt_priority: 0,
        cpus: vec![],
        work_ns: 0,
        work_dist: WorkDist::Fixed,
        read_bytes: 1,
        reply_bytes: 0,
        sleep_ns: 0,
        rcvbuf_bytes: None,
        start_ms: 0,
        instances: 1,
        renice: vec![],
        unit_bytes: 0,
        total_bytes: 0,
        connect: None,
        sndbuf_bytes: None,
        nodelay: false,
        start_jitter_us: 0,
        accelerator: None,
        threads: vec![],
        mechanisms: Default::default(),
    }
}

pub fn nic(name: &str, routing: IrqRouting) -> NicConfig {
    NicConfig {
        name: name.into(),
        rate_mbps: 1000,
        queues: 1,
        rx_ring: 256,
        tx_ring: 256,
        tx_queue_len: 100,
        tx_irq_ring_level: None,
        coalesce_frames: 1,
        coalesce_usecs: 0,
        irq_routing: routing,
        irq_cpus: vec![],
        switch_latency_ns: 0,
        switch_buffer_bytes: 1 << 20,
        itr_ints_per_s: 0,
        balance_irq_interval_us: None,
        fdir_atr_sample_rate: 0,
        itr_mode: Default::default(),
        gro: false,
        rsc_max_desc: 0,
    }
}

/// `ncpu` single-thread cores in one package.
pub fn host(ncpu: u32, kernel: KernelConfig, nics: Vec<NicConfig>, processes: Vec<ProcessConfig>) -> Host {
    let topo = Topology { packages: 1, cores_per_package: ncpu, threads_per_core: 1, llc: LlcScope::PerPackage };
    host_with(topo, kernel, nics, processes)
}

pub fn host_with(
    topology: Topology,
    kernel: KernelConfig,
    nics: Vec<NicConfig>,
    processes: Vec<ProcessConfig>,
) -> Host {
    Host::new(HostConfig {
        profile: zero_profile(topology),
        kernel,
        nics,
        processes,
        traffic: vec![],
        routes: vec![],
        duration_ns: 1,
        warmup_ns: 0,
        seed: 1,
        sample_interval_ns: 1,
    })
}
