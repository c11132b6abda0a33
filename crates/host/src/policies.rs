//! The closed sets of policies: one enum per hook, naming every implementation, chosen from the
//! configuration (`[kernel]` keys) when the host is built. Static dispatch: a `match` per call, no
//! trait objects on the hot path.
//!
//! | hook (trait / functions) | enum | selected by | implementations |
//! |---|---|---|---|
//! | `net::core::backlog::BacklogPolicy` (`enqueue`/`dequeue`, `limit`) | [`Backlog`] | `kernel.backlog` | `net::core::backlog::Fifo` (Linux), `mechanisms::ozaki_pbq::pbq::Pbq`, `mechanisms::flow_limit::FlowLimit` |
//! | `kernel::sched::wake::WakeView` + `select_task_rq` | [`WakePlacement`] | `kernel.scheduler`, `kernel.wake_policy` | `kernel::sched::wake` (Linux 3.2 CFS), `kernel::sched::cfs6` (Linux 6.x CFS), `kernel::sched::o1` (2.4 O(1)), `mechanisms::goda_rfs::GodaRfs` |
//! | `kernel::sched::o1::BalanceView` + `load_balance` | [`Balancer`] | `kernel.scheduler` | `kernel/sched/balance.rs` (Linux 3.2 CFS), `kernel::sched::cfs6::Cfs6Balance` (Linux 6.x), `kernel::sched::o1::O1Balance` |
//! | driver entry (XDP): `verdict`, `poll` | [`Xdp`] | `kernel.xdp` | none, count, `mechanisms::ozaki_pbq::xdp::XdpPbq`, cpumap (`net::core::cpumap`) |
//! | kernel lock gate (`kernel/locking/gate.rs`: `needs_lock`) | [`Concurrency`] | `kernel.concurrency` | `smp`, `up`, `bkl` (`kernel::locking::spinlock::SpinLock`), `functional` (`mechanisms::takeuchi_symbiose::Symbiose`) |
//!
//! The IRQ router (`kernel/irq/route.rs`, `nic.irq_routing`) and interrupt suppression (`mechanisms/ozaki_pbq/suppress.rs`,
//! `kernel.irq_suppression`) are selected the same way in their own files.
//!
//! This module imports the policies; none of them imports it or the `Host` hub (`sim.rs`).

use crate::config::{
    BacklogKind, ConcurrencyKind, KernelConfig, MechanismCosts, RxPath, Scheduler, WakePolicy, XdpKind,
};
use crate::kernel::locking::spinlock::{Context, SpinLock};
use crate::kernel::sched::cfs32::Cfs32Idle;
use crate::kernel::sched::cfs6::{Cfs6Balance, Cfs6Wake};
use crate::kernel::sched::o1::O1Balance;
use crate::kernel::sched::placement::BasePlacement;
use crate::kernel::sched::wake::WakeView;
use crate::mechanisms::flow_limit::FlowLimit;
use crate::mechanisms::goda_rfs::GodaRfs;
use crate::mechanisms::ozaki_pbq::pbq::Pbq;
use crate::mechanisms::ozaki_pbq::xdp::{DetectorConfig, Observation, Verdict, XdpPbq};
use crate::mechanisms::takeuchi_symbiose::Symbiose;
use crate::net::core::backlog::{BacklogPolicy, Enqueue, Fifo};
use crate::types::{Pid, PktId};
use hostsim_engine::Rng;

/// The closed set of backlog policies (static dispatch).
// `repr(u8)` (here and on the other policy enums below): an explicit tag byte. By default the
// compiler hides the tag in a niche of a variant's fields (a `VecDeque`'s capacity, a `Box`'s
// pointer), and every `match` on the policy (several per packet: `start_top`'s lock check, each
// backlog enqueue) first decodes it, ~5 instructions more than a byte compare (callgrind:
// `match self` in this file was ~8 instructions per `start_top`). Layout only.
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum Backlog {
    Fifo(Fifo),
    Pbq(Box<Pbq>),
    FlowLimit(FlowLimit),
}

impl Backlog {
    /// The backlog of CPU `cpu`.
    pub fn new(kind: BacklogKind, k: &KernelConfig, cpu: usize, rng: Rng) -> Backlog {
        let max = k.netdev_max_backlog as usize;
        match kind {
            BacklogKind::Fifo => Backlog::Fifo(Fifo::new(max, k.rx_path == RxPath::Legacy)),
            BacklogKind::Pbq => Backlog::Pbq(Box::new(Pbq::new(max, k.pbq_min_packets as usize, rng))),
            BacklogKind::FlowLimit => {
                let has_table = k.flow_limit_cpus.is_empty() || k.flow_limit_cpus.contains(&(cpu as u32));
                Backlog::FlowLimit(FlowLimit::new(max, has_table.then_some(k.flow_limit_table_len)))
            }
        }
    }
    /// Does this (enqueuing CPU's) policy do table work in `limit` for a target backlog of
    /// `target_len` (flow limit: it has a table and the backlog is at least half full)?
    pub fn limit_engaged(&self, target_len: usize) -> bool {
        matches!(self, Backlog::FlowLimit(f) if f.engaged(target_len))
    }
    /// Does this policy need each packet's priority (a port → priority lookup)?
    pub fn needs_priority(&self) -> bool {
        matches!(self, Backlog::Pbq(_))
    }
    /// Inlined for Linux's FIFO (every legacy frame's `netif_rx`); the other policies out of
    /// line.
    #[inline]
    pub fn enqueue(&mut self, pkt: PktId, prio: i32) -> Enqueue {
        match self {
            Backlog::Fifo(f) => f.enqueue(pkt, prio),
            _ => self.enqueue_other(pkt, prio),
        }
    }
    #[inline(never)]
    fn enqueue_other(&mut self, pkt: PktId, prio: i32) -> Enqueue {
        match self {
            Backlog::Fifo(f) => f.enqueue(pkt, prio),
            Backlog::Pbq(q) => q.enqueue(pkt, prio),
            Backlog::FlowLimit(f) => f.enqueue(pkt, prio),
        }
    }
    /// Can this (enqueuing CPU's) policy refuse a packet in `limit`? Only flow limit does; for
    /// the others `limit` is always false and its arguments need not be computed.
    #[inline]
    pub fn may_limit(&self) -> bool {
        matches!(self, Backlog::FlowLimit(_))
    }
    /// The enqueuing CPU's check before `enqueue` on the target (see `BacklogPolicy::limit`).
    pub fn limit(&mut self, hash: u32, target_len: usize) -> bool {
        match self {
            Backlog::Fifo(f) => f.limit(hash, target_len),
            Backlog::Pbq(q) => q.limit(hash, target_len),
            Backlog::FlowLimit(f) => f.limit(hash, target_len),
        }
    }
    pub fn dequeue(&mut self) -> Option<PktId> {
        match self {
            Backlog::Fifo(f) => f.dequeue(),
            Backlog::Pbq(q) => q.dequeue(),
            Backlog::FlowLimit(f) => f.dequeue(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Backlog::Fifo(f) => f.len(),
            Backlog::Pbq(q) => q.len(),
            Backlog::FlowLimit(f) => f.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn high_load(&self) -> bool {
        match self {
            Backlog::Fifo(f) => f.high_load(),
            Backlog::Pbq(q) => q.high_load(),
            Backlog::FlowLimit(f) => f.high_load(),
        }
    }
}

/// The closed set of wake-up placement policies (`select_task_rq`).
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum WakePlacement {
    /// The kernel's own placement.
    Linux(BasePlacement),
    /// Paper 001's, wrapping the kernel's.
    GodaRfs(GodaRfs, BasePlacement),
}

impl WakePlacement {
    pub fn new(p: WakePolicy, sched: Scheduler, nprocs: usize, ncpu: usize) -> WakePlacement {
        let base = match sched {
            Scheduler::Cfs => BasePlacement::Cfs,
            Scheduler::Cfs6 => BasePlacement::Cfs6(Box::new(Cfs6Wake::new(nprocs, ncpu))),
            Scheduler::O1 => BasePlacement::O1,
        };
        match p {
            WakePolicy::Linux => WakePlacement::Linux(base),
            WakePolicy::GodaRfs => WakePlacement::GodaRfs(GodaRfs::new(nprocs), base),
        }
    }

    /// The CPU to queue `pid` on when `waker` wakes it; `prev` is where it last ran.
    pub fn select_task_rq(&self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            WakePlacement::Linux(base) => base.select_task_rq(h, pid, prev, waker),
            WakePlacement::GodaRfs(g, base) => g.select_task_rq(h, pid, prev, waker, base),
        }
    }

    /// `pid` was woken by `waker` while its CPU was `prev` (after `select_task_rq`).
    pub fn task_woken(&mut self, pid: Pid, waker: usize, prev: usize) {
        if let WakePlacement::GodaRfs(g, _) = self {
            g.task_woken(pid, waker, prev);
        }
    }

    /// `pid` moved to another CPU (any cause).
    pub fn task_migrated(&mut self, pid: Pid) {
        if let WakePlacement::GodaRfs(g, _) = self {
            g.task_migrated(pid);
        }
    }
}

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

/// The closed set of programs at the driver's entry point (one per host: the live program's
/// maps are shared by every CPU).
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum Xdp {
    None,
    Count,
    Pbq(Box<XdpPbq>),
    /// Redirect every frame to the CPU map (`net/core/cpumap.rs`).
    Cpumap,
}

impl Xdp {
    pub fn new(k: &KernelConfig) -> Xdp {
        match k.xdp {
            XdpKind::None => Xdp::None,
            XdpKind::Count => Xdp::Count,
            XdpKind::Cpumap => Xdp::Cpumap,
            XdpKind::Pbq | XdpKind::Detect => {
                let cfg = DetectorConfig {
                    backlog_len_high: u64::from(k.xdp_backlog_len_high),
                    release_frac: k.xdp_release_frac,
                    hold_ms: k.xdp_hold_ms,
                    escalate_ms: k.xdp_escalate_ms,
                    probe_ms: k.xdp_probe_ms,
                    capacity_pps: k.xdp_capacity_pps,
                    ..DetectorConfig::default()
                };
                let mut p = XdpPbq::new(cfg, k.xdp_min_share_top, k.xdp_window_ms * 1_000_000);
                // `detect`: the same program and agent with the drop switched off.
                p.drops = k.xdp == XdpKind::Pbq;
                Xdp::Pbq(Box::new(p))
            }
        }
    }
    /// Is a program attached (so every frame pays its run)?
    pub fn attached(&self) -> bool {
        !matches!(self, Xdp::None)
    }
    /// Does it need each frame's priority level (a port → priority lookup)?
    pub fn needs_priority(&self) -> bool {
        matches!(self, Xdp::Pbq(_))
    }
    pub fn verdict(&mut self, now_ns: u64, level: u8) -> Verdict {
        match self {
            Xdp::None | Xdp::Count | Xdp::Cpumap => Verdict::Pass,
            Xdp::Pbq(p) => p.verdict(now_ns, level),
        }
    }
    /// Does it redirect every frame to the CPU map (`net/core/cpumap.rs`)?
    pub fn redirects(&self) -> bool {
        matches!(self, Xdp::Cpumap)
    }
    /// Does it want the agent's periodic poll?
    pub fn polled(&self) -> bool {
        matches!(self, Xdp::Pbq(_))
    }
    pub fn poll(&mut self, o: Observation) {
        if let Xdp::Pbq(p) = self {
            p.poll(o);
        }
    }
    pub fn high_load(&self) -> bool {
        match self {
            Xdp::Pbq(p) => p.high_load(),
            _ => false,
        }
    }
}

/// The closed set of kernel concurrency models (`kernel/locking/spinlock.rs`, `mechanisms/takeuchi_symbiose`).
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum Concurrency {
    Smp,
    Up,
    Bkl(SpinLock),
    Functional(Box<Symbiose>),
}

impl Concurrency {
    pub fn new(kind: ConcurrencyKind, k: &KernelConfig, m: &MechanismCosts, ncpu: usize) -> Concurrency {
        match kind {
            ConcurrencyKind::Smp => Concurrency::Smp,
            ConcurrencyKind::Up => Concurrency::Up,
            ConcurrencyKind::Bkl => {
                Concurrency::Bkl(SpinLock::new(m.lock_acquire_ns, m.lock_line_transfer_ns + m.bkl_data_transfer_ns))
            }
            ConcurrencyKind::Functional => Concurrency::Functional(Box::new(Symbiose::new(
                ncpu,
                k.driver_cpu as usize,
                k.ip_cpu as usize,
                k.exchange_period_us * 1000,
                k.pool_buffers,
                SpinLock::new(m.lock_acquire_ns, m.lock_line_transfer_ns),
            ))),
        }
    }

    /// Does a unit of context `ctx` need the model's lock?
    pub fn needs_lock(&self, ctx: Context) -> bool {
        match self {
            Concurrency::Smp | Concurrency::Up => false,
            Concurrency::Bkl(_) => ctx != Context::User,
            Concurrency::Functional(_) => ctx == Context::Exchange,
        }
    }

    /// Does this model have a kernel lock (`lock()` is `Some`)? A tag test, for the callers
    /// that skip the lock gate without one (`Host::start_top`).
    #[inline]
    pub fn has_lock(&self) -> bool {
        matches!(self, Concurrency::Bkl(_) | Concurrency::Functional(_))
    }

    /// The model's lock, if it has one.
    pub fn lock(&self) -> Option<&SpinLock> {
        match self {
            Concurrency::Smp | Concurrency::Up => None,
            Concurrency::Bkl(l) => Some(l),
            Concurrency::Functional(s) => Some(&s.lock),
        }
    }

    pub fn lock_mut(&mut self) -> Option<&mut SpinLock> {
        match self {
            Concurrency::Smp | Concurrency::Up => None,
            Concurrency::Bkl(l) => Some(l),
            Concurrency::Functional(s) => Some(&mut s.lock),
        }
    }

    pub fn symbiose(&self) -> Option<&Symbiose> {
        match self {
            Concurrency::Functional(s) => Some(s),
            _ => None,
        }
    }

    pub fn symbiose_mut(&mut self) -> Option<&mut Symbiose> {
        match self {
            Concurrency::Functional(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40 polls 10 ms apart, each after `per_poll` frames of level 0 and 340 of level 39 (the
    /// live twin's bw): whether the program ends in high load.
    fn high_after(k: &KernelConfig, per_poll: u64) -> bool {
        let mut x = Xdp::new(k);
        for t in 0..40u64 {
            for _ in 0..per_poll {
                x.verdict(t * 10_000_000, 0);
            }
            for _ in 0..340 {
                x.verdict(t * 10_000_000, 39);
            }
            x.poll(Observation { t_ns: (t + 1) * 10_000_000, ..Observation::default() });
        }
        x.high_load()
    }

    #[test]
    fn the_kernel_capacity_option_reaches_the_detector() {
        // 4,000 + 340 frames per 10 ms = 434,000 pkt/s against 400,000: over 90% of it.
        let on = KernelConfig { xdp: XdpKind::Pbq, xdp_capacity_pps: 400_000.0, ..KernelConfig::default() };
        assert!(high_after(&on, 4000), "the arrival rate over the capacity is overload");
        assert!(!high_after(&on, 2000), "234,000 pkt/s is under 90% of 400,000");
        // Default 0: no capacity sign; no backlog or socket counter moved, so no high load.
        let off = KernelConfig { xdp: XdpKind::Pbq, ..KernelConfig::default() };
        assert!(!high_after(&off, 4000));
    }
}
