//! The process scheduler (Linux `kernel/sched/`; `kernel/sched.c` and `kernel/sched_fair.c` in
//! the eras before the split), one file per era where the eras differ.
//!
//! - `core`: run queues, the fair class and SCHED_FIFO, the tick, wake-up, schedule(), nice,
//!   yield, and every migration counted by cause.
//! - `balance`: load balancing as each era ran it (periodic and new-idle; 2.4 O(1), 3.2, 6.x).
//! - `placement`: the era's own wake-up placement (`BasePlacement`) and the scheduling masks.
//! - `wake`: Linux 3.2's `select_task_rq_fair` (wake-affine, `select_idle_sibling`).
//! - `o1`: Red Hat 2.4.18's O(1) scheduler: placement and balancing.
//! - `o1_rq`: the O(1) per-CPU run queue of Linux 2.5 up to 2.5.21 (active/expired arrays,
//!   sleep_avg, timeslices, its sched_yield), with `kernel.o1_runqueue`.
//! - `cfs32`: Linux 3.2's gate on new-idle balancing (`avg_idle`).
//! - `cfs6`: Linux 6.x's placement and balancing over scheduling domains.

pub mod balance;
pub mod cfs32;
pub mod cfs6;
pub mod core;
pub mod o1;
pub mod o1_rq;
pub mod placement;
pub mod wake;

use crate::config::{HostConfig, Scheduler};
use crate::kernel::cpu::Cpu;
use crate::kernel::sched::cfs6::Cfs6Wake;
use crate::kernel::sched::placement::{BasePlacement, SchedMasks};
use crate::policies::Balancer;

/// Scheduler state beyond the per-CPU run queues (which are in each `Cpu`): the era's wake-up
/// placement (a mechanism may wrap it: `Mechanism::select_task_rq`), the era's balancer, the scheduling masks, and the enqueue sequence that
/// orders equal keys in the run queues.
pub struct SchedState {
    pub wake: BasePlacement,
    /// The era's load balancer (`kernel.scheduler`).
    pub balancer: Balancer,
    /// Per-CPU LLC masks and core boundaries (fixed), and the idle CPUs kept up to date by
    /// `core.rs` (`placement::SchedMasks`).
    pub masks: SchedMasks,
    pub enq_seq: u64,
}

impl SchedState {
    pub fn new(cfg: &HostConfig, cpus: &[Cpu], nprocs: usize) -> SchedState {
        let ncpu = cpus.len();
        SchedState {
            wake: match cfg.kernel.scheduler {
                Scheduler::Cfs => BasePlacement::Cfs,
                Scheduler::Cfs6 => BasePlacement::Cfs6(Box::new(Cfs6Wake::new(nprocs, ncpu))),
                Scheduler::O1 => BasePlacement::O1,
            },
            balancer: Balancer::new(&cfg.kernel, ncpu, cpus.iter().map(|c| c.llc as usize + 1).max().unwrap_or(1)),
            masks: SchedMasks::new(
                &cpus.iter().map(|c| c.llc).collect::<Vec<_>>(),
                cfg.profile.topology.threads_per_core as usize,
            ),
            enq_seq: 0,
        }
    }
}
