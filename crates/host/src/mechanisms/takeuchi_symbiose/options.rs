//! `takeuchi-symbiose`'s keys of `[kernel]` (paper 003's functional split), each declared once;
//! the value it adds to the kernel's concurrency models; what it checks that a key's bound cannot.

use crate::config::{online_text, HostConfig, RxPath};
use hostsim_options::{int, options, Fault, CPU_ID};
use serde::{Deserialize, Serialize};

/// Paper 003's keys of `[kernel]`.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SymbioseOptions {
    /// `functional`: the CPU running the Ethernet driver and ARP (paper 003: CPU#1). Every
    /// NIC's interrupts must go to it.
    #[option(default = 1, bound = int(0, 127), why = CPU_ID)]
    pub driver_cpu: u32,
    /// `functional`: the CPU running IP (and UDP/TCP input) (paper 003: CPU#0).
    #[option(default = 0, bound = int(0, 127), why = CPU_ID)]
    pub ip_cpu: u32,
    /// `functional`: period of each CPU's bulk-send and polling threads (paper 003: 5 ms).
    #[option(default = 5000, bound = int(1, 1_000_000), why = "us between Symbiose's queue exchanges (paper 003: 5,000); at most 1 s")]
    pub exchange_period_us: u64,
    /// `functional`: buffers in the shared inter-OS buffer pool (paper 003 §3 gives no size). A
    /// frame arriving when all are in the exchange queues is dropped (drop place `buffer_pool`).
    #[option(default = 4096, bound = int(1, 1_048_576), why = "packet buffers in Symbiose's pool (2^20, as a backlog; in the memory budget)")]
    pub pool_buffers: u32,
}

/// The value paper 003 adds to `kernel.concurrency`.
pub const POLICIES: &[(&str, &str, &str)] = &[(
    "concurrency",
    "functional",
    "Functionally distributed (HiTactix/Symbiose, paper 003): the driver on `driver_cpu`, IP on `ip_cpu`, per-CPU lock-free local queues, global queues under one spin lock exchanged in bulk by periodic threads every `exchange_period_us` (`mechanisms/takeuchi_symbiose`).",
)];

/// What the keys' bounds cannot say.
pub fn check(c: &HostConfig, o: &SymbioseOptions) -> Result<(), Fault> {
    let k = &c.kernel;
    if !k.concurrency.is("functional") {
        return Ok(());
    }
    let (ncpu, machine) = (c.online_cpus(), c.profile.topology.cpus());
    for (name, v) in [("driver_cpu", o.driver_cpu), ("ip_cpu", o.ip_cpu)] {
        if v as usize >= ncpu {
            return Err(Fault::at(
                &["kernel", name],
                format!("CPU {v} does not exist ({})", online_text(ncpu, machine)),
            ));
        }
    }
    if o.exchange_period_us == 0 {
        return Err(Fault::at(
            &["kernel", "exchange_period_us"],
            "expected an exchange period of at least 1 us (paper 003: 5000)",
        ));
    }
    if o.pool_buffers == 0 {
        return Err(Fault::at(&["kernel", "pool_buffers"], "expected at least 1 buffer"));
    }
    if k.rx_path != RxPath::Legacy {
        return Err(Fault::at(
            &["kernel", "concurrency"],
            "the functional split's driver takes frames in its interrupt handler: it needs rx_path = \"legacy\"",
        ));
    }
    for (i, n) in c.nics.iter().enumerate() {
        if n.irq_cpus != [o.driver_cpu] {
            return Err(Fault::elem(
                "nic",
                i,
                "irq_cpus",
                format!(
                    "under concurrency = \"functional\" the driver runs on kernel.driver_cpu: expected irq_cpus = [{}]",
                    o.driver_cpu
                ),
            ));
        }
    }
    Ok(())
}
