//! The kernel's own wake-up placement, by era (`kernel.scheduler`): Linux 3.2's
//! `select_task_rq_fair` (`kernel/sched/wake.rs`), Linux 6.x's (`kernel/sched/cfs6.rs`) or 2.4 O(1)'s
//! `try_to_wake_up` (`kernel/sched/o1.rs`). Paper mechanisms that change placement (`mechanisms/goda_rfs.rs`)
//! wrap it.

use crate::kernel::sched::cfs6::Cfs6Wake;
use crate::kernel::sched::o1::o1_select_task_rq;
use crate::kernel::sched::wake::{linux_select_task_rq, WakeView};
use crate::types::Pid;

/// The kernel's own wake-up placement, by era (`kernel.scheduler`).
#[derive(Clone, Debug)]
pub enum BasePlacement {
    /// Linux 3.2 `select_task_rq_fair` (`kernel/sched/wake.rs`).
    Cfs,
    /// Linux 6.x `select_task_rq_fair` with its per-task state (`kernel/sched/cfs6.rs`).
    Cfs6(Box<Cfs6Wake>),
    /// 2.4 O(1) `try_to_wake_up` (`kernel/sched/o1.rs`).
    O1,
}

impl BasePlacement {
    pub fn select_task_rq(&self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize) -> usize {
        match self {
            BasePlacement::Cfs => linux_select_task_rq(h, pid, prev, waker),
            BasePlacement::Cfs6(c) => c.select_task_rq(h, pid, prev, waker),
            BasePlacement::O1 => o1_select_task_rq(h.task(pid).allowed, prev),
        }
    }
}

/// CPU sets the placement reads on every wake-up, kept as bitmasks so that a wake-up costs a
/// few word operations instead of a pass over every CPU: each CPU's LLC span and the first
/// thread of every core (fixed at boot, as the kernel's `sd_llc` masks), and the idle CPUs
/// (`idle_cpu()`), which `kernel/sched/core.rs` updates whenever a run queue or `curr` changes; and each
/// CPU's scheduling domains and LLC size, also fixed at boot. CPU counts of spans are kept, not
/// recounted: the build targets baseline x86-64, without a `popcnt` instruction, so a `u128`'s
/// `count_ones` is ~30 instructions of bit arithmetic (callgrind: ~65 instructions per wake-up).
#[derive(Clone, Debug)]
pub struct SchedMasks {
    pub llc: Vec<u128>,
    pub core_firsts: u128,
    pub idle: u128,
    /// The CPUs whose fair run queue holds a task (`rq->cfs.nr_running` above the running
    /// one), kept up to date by `kernel/sched/core.rs` with `idle`, for the balancer's busiest-queue scans.
    pub queued: u128,
    /// Each CPU's scheduling domains (`SchedDomains::build`). Built once here: the Linux 6.x
    /// balancer asks for them on every idle entry, and building them there (three spans, their
    /// CPU counts by software popcount) was ~280 instructions a call, ~1.7% of the 64-CPU bench
    /// case (callgrind).
    pub domains: Vec<SchedDomains>,
    /// `llc[c].count_ones()` (`sd_llc_size`).
    pub llc_weight: Vec<u32>,
}

impl SchedMasks {
    /// `llc_ids[c]`: CPU c's last-level-cache domain. Every CPU starts idle.
    pub fn new(llc_ids: &[u32], threads_per_core: usize) -> SchedMasks {
        let n = llc_ids.len();
        let llc: Vec<u128> =
            (0..n).map(|c| (0..n).filter(|&d| llc_ids[d] == llc_ids[c]).fold(0u128, |m, d| m | 1u128 << d)).collect();
        let core_firsts = (0..n).step_by(threads_per_core.max(1)).fold(0u128, |m, c| m | 1u128 << c);
        let idle = (0..n).fold(0u128, |m, c| m | 1u128 << c);
        let domains = (0..n).map(|c| SchedDomains::build(c, n, threads_per_core, core_firsts, &llc)).collect();
        let llc_weight = llc.iter().map(|m| m.count_ones()).collect();
        SchedMasks { llc, core_firsts, idle, queued: 0, domains, llc_weight }
    }

    pub fn set_queued(&mut self, cpu: usize, queued: bool) {
        if queued {
            self.queued |= 1u128 << cpu;
        } else {
            self.queued &= !(1u128 << cpu);
        }
    }

    pub fn set_idle(&mut self, cpu: usize, idle: bool) {
        if idle {
            self.idle |= 1u128 << cpu;
        } else {
            self.idle &= !(1u128 << cpu);
        }
    }
}

/// A CPU's scheduling domains, lowest first (at most SMT, LLC and the whole machine) as (level
/// index, span) pairs: a fixed array, so reading them allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct SchedDomains {
    d: [(usize, u128); 3],
    /// `d[k].1.count_ones()`: the CPUs in each span.
    weight: [u32; 3],
    n: usize,
}

impl SchedDomains {
    /// The scheduling domains of `cpu` among `n` CPUs from the lowest up (Linux 6.x
    /// `build_sched_domains`): its core's threads (SMT), its LLC (MC), the machine; a level that
    /// spans no more than the one below it is degenerate and left out.
    fn build(cpu: usize, n: usize, threads_per_core: usize, core_firsts: u128, llc: &[u128]) -> SchedDomains {
        let all = if n >= 128 { u128::MAX } else { (1u128 << n) - 1 };
        let tpc = threads_per_core;
        let first = cpu / tpc.max(1) * tpc.max(1);
        let smt = core_firsts & (1u128 << first) != 0;
        let core = if smt && tpc > 1 && tpc < 128 { ((1u128 << tpc) - 1) << first } else { 1u128 << cpu };
        let mut out = SchedDomains { d: [(0, 0); 3], weight: [0; 3], n: 0 };
        let mut below = 1u128 << cpu;
        for (level, span) in [(0, core), (1, llc[cpu] & all), (2, all)] {
            if span != below && span.count_ones() > below.count_ones() {
                out.d[out.n] = (level, span);
                out.weight[out.n] = span.count_ones();
                out.n += 1;
                below = span;
            }
        }
        out
    }

    pub fn as_slice(&self) -> &[(usize, u128)] {
        &self.d[..self.n]
    }

    /// The number of CPUs in the `k`th domain's span.
    pub fn weight(&self, k: usize) -> u32 {
        self.weight[k]
    }
}
