//! The papers' mechanisms, one entry per paper id, each holding *only* the paper's policy: what
//! a paper's baseline needs (an era's scheduler, the big kernel lock, poll(), nanosleep) is kernel
//! code and lives with its subsystem. Each mechanism implements a kernel hook through a closed
//! enum in `policies.rs` and is chosen by a `[kernel]` or `[[process]]` key, never by scenario
//! name. `docs/extending.md` shows how to add a sixth.
//!
//! | entry | paper | hook | baseline it changes |
//! |---|---|---|---|
//! | `ozaki_pbq` | 000, Ozaki & Nakayama | backlog `enqueue`/`dequeue`; context switch; driver entry (XDP); a periodic agent on the threaded-NAPI kthreads | 2.4's FIFO backlog and throttle; the NIC's IRQ affinity; where and at which priority the NAPI kthreads run |
//! | `goda_rfs` | 001, Goda & Tago | `select_task_rq` | Linux 3.2's wake-affine placement |
//! | `tabata_speed` | 002, Tabata, Nomura & Taniguchi | admission to the run queue (`wake_up`, `proc_start`), a slot timer | a process runs whenever the scheduler picks it |
//! | `takeuchi_symbiose` | 003, Takeuchi et al. | the kernel-concurrency model (`needs_lock`) and per-CPU stage threads | one kernel on all CPUs under a big lock |
//! | `flow_limit` | Linux 3.11's RPS flow limit (an extension beside paper 000) | backlog `enqueue` | the NAPI-era FIFO backlog |
//!
//! Paper 004's interval control (Kawai et al.) is a program's behaviour, not the kernel's: it is in
//! `crates/workload/src/mechanisms/kawai_interval.rs`.

pub mod flow_limit;
pub mod goda_rfs;
pub mod ozaki_pbq;
pub mod tabata_speed;
pub mod takeuchi_symbiose;

use crate::config::HostConfig;
use crate::policies::Xdp;
use hostsim_engine::{Rng, RngStreams};

/// Host-wide state of the mechanisms that keep some (the per-CPU and per-socket parts live with
/// the CPU, backlog and socket they belong to).
pub struct MechState {
    /// `ozaki_pbq::suppress`: CPUs currently taken out of the NICs' IRQ affinity.
    pub suppressed: u128,
    /// `ozaki_pbq::suppress`: the draws weighted by priority.
    pub rng_suppress: Rng,
    /// `ozaki_pbq::xdp`: the program at the driver's entry point (`kernel.xdp`).
    pub xdp: Xdp,
    /// `ozaki_pbq::xdp`: counters at the agent's previous poll: backlog drops, top-level socket
    /// drops.
    pub xdp_last_poll: (u64, u64),
    /// `ozaki_pbq::napi_suppress`: the agent's state and counters.
    pub napi_supp: ozaki_pbq::NapiSupp,
}

impl MechState {
    pub fn new(cfg: &HostConfig, streams: &RngStreams) -> MechState {
        MechState {
            suppressed: 0,
            rng_suppress: streams.stream("irq-suppression"),
            xdp: Xdp::new(&cfg.kernel),
            xdp_last_poll: (0, 0),
            napi_supp: Default::default(),
        }
    }
}
