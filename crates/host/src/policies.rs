//! The closed sets of the kernel's own policies: one enum per hook, naming Linux's
//! implementations, chosen from the configuration (`[kernel]` keys) when the host is built, plus,
//! where a mechanism can replace them, a `Mech` value that hands the hook to the mechanisms
//! (`crate::hooks`). Static dispatch: a `match` per call, no trait objects on the hot path.
//!
//! | hook | enum | selected by | Linux's implementations | a mechanism's |
//! |---|---|---|---|---|
//! | a CPU's backlog (`net::core::backlog::BacklogPolicy`) | `net::core::backlog::Backlog` | `kernel.backlog` | `Fifo` | `Mechanism::backlog` (PBQ, flow limit) |
//! | wake-up placement (`select_task_rq`) | `kernel::sched::placement::BasePlacement` | `kernel.scheduler` | 3.2 CFS, 6.x CFS, 2.4 O(1) | `Mechanism::select_task_rq` wraps it (paper 001) |
//! | load balancing | [`Balancer`] | `kernel.scheduler` | `kernel/sched/balance.rs` (3.2), `kernel::sched::cfs6::Cfs6Balance`, `kernel::sched::o1::O1Balance` | none |
//! | driver entry (XDP) | [`Xdp`] | `kernel.xdp` | none, count, cpumap (`net::core::cpumap`) | `Mechanism::xdp_verdict` (paper 000's priority drop) |
//! | kernel lock gate (`kernel/locking/gate.rs`) | [`Concurrency`] | `kernel.concurrency` | `smp`, `up`, `bkl` (`kernel::locking::spinlock::SpinLock`) | `Mechanism::lock`, `needs_lock` (paper 003's split) |
//!
//! The IRQ router (`kernel/irq/route.rs`, `nic.irq_routing`) is selected the same way in its own
//! file. This module imports no mechanism and not the `Host` hub (`sim.rs`).

use crate::config::{KernelConfig, MechanismCosts, Policy, Scheduler};
use crate::kernel::locking::spinlock::{Context, SpinLock};
use crate::kernel::sched::cfs32::Cfs32Idle;
use crate::kernel::sched::cfs6::Cfs6Balance;
use crate::kernel::sched::o1::O1Balance;

/// The closed set of load balancers (`kernel.scheduler`).
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum Balancer {
    /// Linux 3.2 CFS: periodic balancing every `kernel.balance_interval_ms` and new-idle
    /// balancing gated by `avg_idle` (`kernel/sched/cfs32.rs`), by weighted load (`kernel/sched/balance.rs`).
    Cfs(Box<Cfs32Idle>),
    /// 2.4 O(1) `load_balance` (`kernel/sched/o1.rs`).
    O1(O1Balance),
    /// Linux 6.x: `newidle_balance` gated by `avg_idle` and the overload flag, periodic
    /// balancing at the domains' intervals, cache-hot tasks kept (`kernel/sched/cfs6.rs`, `kernel/sched/balance.rs`).
    Cfs6(Box<Cfs6Balance>),
}

impl Balancer {
    /// `nllc`: the number of last-level-cache domains.
    pub fn new(k: &KernelConfig, ncpu: usize, nllc: usize) -> Balancer {
        match k.scheduler {
            Scheduler::Cfs => Balancer::Cfs(Box::new(Cfs32Idle::new(ncpu, k.sched_migration_cost_us * 1000))),
            Scheduler::Cfs6 => Balancer::Cfs6(Box::new(Cfs6Balance::new(ncpu, nllc, k.sched_migration_cost_us * 1000))),
            Scheduler::O1 => Balancer::O1(O1Balance::new(ncpu)),
        }
    }
}

/// The program at the driver's entry point (one per host: the live program's maps are shared
/// by every CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Xdp {
    None,
    /// A program that only counts (passes everything).
    Count,
    /// Redirect every frame to the CPU map (`net/core/cpumap.rs`).
    Cpumap,
    /// A mechanism's program (`Mechanism::xdp_verdict`).
    Mech,
}

impl Xdp {
    /// `kernel.xdp`'s program, or the mechanisms' when one attached its own.
    pub fn new(k: &KernelConfig, mech_attached: bool) -> Xdp {
        if mech_attached {
            return Xdp::Mech;
        }
        if k.xdp.is("count") {
            Xdp::Count
        } else if k.xdp.is("cpumap") {
            Xdp::Cpumap
        } else {
            Xdp::None
        }
    }
    /// Is a program attached (so every frame pays its run)?
    #[inline]
    pub fn attached(&self) -> bool {
        !matches!(self, Xdp::None)
    }
    /// Does it redirect every frame to the CPU map (`net/core/cpumap.rs`)?
    #[inline]
    pub fn redirects(&self) -> bool {
        matches!(self, Xdp::Cpumap)
    }
}

/// How the kernel runs on several CPUs (`kernel/locking/spinlock.rs`), or a mechanism's model
/// with its own lock (paper 003's functional split).
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum Concurrency {
    Smp,
    Up,
    Bkl(SpinLock),
    Mech,
}

impl Concurrency {
    /// `kernel.concurrency`'s model, or the mechanisms' when one brought its own lock.
    pub fn new(kind: &Policy, m: &MechanismCosts, mech_lock: bool) -> Concurrency {
        if mech_lock {
            Concurrency::Mech
        } else if kind.is("up") {
            Concurrency::Up
        } else if kind.is("bkl") {
            Concurrency::Bkl(SpinLock::new(m.lock_acquire_ns, m.lock_line_transfer_ns + m.bkl_data_transfer_ns))
        } else {
            Concurrency::Smp
        }
    }

    /// Does a unit of context `ctx` need the big kernel lock? (`Mech`: ask the mechanisms.)
    pub fn bkl_needs_lock(&self, ctx: Context) -> bool {
        matches!(self, Concurrency::Bkl(_)) && ctx != Context::User
    }

    /// Does this model have a kernel lock? A tag test, for the callers that skip the lock gate
    /// without one (`Host::start_top`).
    #[inline]
    pub fn has_lock(&self) -> bool {
        matches!(self, Concurrency::Bkl(_) | Concurrency::Mech)
    }
}
