//! `ozaki-pbq` (paper 000: Ozaki & Nakayama, priority-based receive processing in Linux 2.4.18).
//!
//! Baseline it changes: Linux 2.4's per-CPU FIFO backlog with its throttle state
//! (`net/core/rx.rs`, `net/core/backlog.rs`), and the NIC's IRQ affinity (`kernel/irq/route.rs`).
//!
//! - `pbq`: Priority-Based Queues, a backlog policy (hook: `BacklogPolicy::enqueue`/`dequeue`,
//!   §3.2, Figs. 3–4).
//! - `suppress`: interrupt suppression at context switch (hook: `Mechanism::context_switch`, §3.3).
//! - `napi_suppress`: §3.3 as the live agent does it with threaded NAPI (`net/core/napi_thread.rs`):
//!   every `napi_suppress_check_ms` a timer moves the NAPI kthreads off the server's CPU or lowers
//!   them to SCHED_OTHER while the rule holds (hook: its timer, `Mechanism::poll`).
//! - `xdp`: the priority drop moved to the driver's entry point as `hostsim live` runs it with
//!   XDP on today's Linux, and its agent's high-load detector (hook: the NAPI poll's driver entry,
//!   `Mechanism::xdp_verdict`); `agent`: the agent's periodic poll (its timer).
//!
//! This file is the mechanism (`OzakiPbq`, one line of the registry): its parts' state, built from
//! the `[kernel]` keys that select them, and its hooks, each handing over to its part.

pub mod agent;
pub mod napi_suppress;
pub mod options;
pub mod pbq;
pub mod suppress;
pub mod xdp;

use crate::config::HostConfig;
use crate::hooks::{Boot, Mechanism, NoOptions, Packets, Part, Project, Reach, Tasks, Timers, Verdict};
use crate::net::core::backlog::BacklogPolicy;
use crate::types::Pid;
use hostsim_engine::{Rng, Time};
use hostsim_options::Fault;
use options::{NapiSuppress, OzakiOptions};
use std::collections::BTreeMap;

impl Part<suppress::Suppress> for OzakiPbq {
    fn part(&mut self) -> &mut suppress::Suppress {
        &mut self.suppress
    }
    fn part_ref(&self) -> &suppress::Suppress {
        &self.suppress
    }
}

impl Part<agent::Slot> for OzakiPbq {
    fn part(&mut self) -> &mut agent::Slot {
        &mut self.xdp
    }
    fn part_ref(&self) -> &agent::Slot {
        &self.xdp
    }
}

impl Part<napi_suppress::Slot> for OzakiPbq {
    fn part(&mut self) -> &mut napi_suppress::Slot {
        &mut self.napi
    }
    fn part_ref(&self) -> &napi_suppress::Slot {
        &self.napi
    }
}

/// Paper 000's mechanisms, each on when its key selects it.
pub struct OzakiPbq {
    /// `kernel.backlog = "pbq"`: each CPU's backlog is a [`pbq::Pbq`] of `netdev_max_backlog`
    /// keeping `pbq_min_packets` at the top level.
    pbq: Option<(usize, usize, pbq::PbqCosts)>,
    /// `kernel.irq_suppression`.
    pub suppress: suppress::Suppress,
    /// `kernel.xdp = "pbq"` or `"detect"`: the program and its agent.
    pub xdp: Option<Box<agent::XdpAgent>>,
    /// `kernel.napi_suppress`: the agent on the threaded-NAPI kthreads.
    pub napi: Option<napi_suppress::NapiAgent>,
}

impl Mechanism for OzakiPbq {
    type Options = OzakiOptions;
    type TaskOptions = NoOptions;
    const POLICIES: &'static [(&'static str, &'static str, &'static str)] = options::POLICIES;

    fn check(cfg: &HostConfig, o: &OzakiOptions, _tasks: &[NoOptions]) -> Result<(), Fault> {
        options::check(cfg, o)
    }

    fn new(boot: &Boot) -> Self {
        let (k, m) = (&boot.cfg.kernel, &boot.cfg.profile.mechanisms);
        let o: OzakiOptions = boot.options();
        let costs =
            pbq::PbqCosts { branch_ns: m.pbq_branch_ns, classify_ns: m.pbq_classify_ns, dequeue_ns: m.pbq_dequeue_ns };
        OzakiPbq {
            pbq: k.backlog.is("pbq").then_some((k.netdev_max_backlog as usize, o.pbq_min_packets as usize, costs)),
            suppress: suppress::Suppress::new(
                o.irq_suppression,
                m.irq_suppress_check_ns,
                m.irq_affinity_write_ns,
                boot.streams.stream("irq-suppression"),
            ),
            xdp: (k.xdp.is("pbq") || k.xdp.is("detect")).then(|| Box::new(agent::XdpAgent::new(&o, k.xdp.is("pbq")))),
            napi: (o.napi_suppress != NapiSuppress::Off).then(|| napi_suppress::NapiAgent::new(&o, k.napi_rt_prio)),
        }
    }

    fn backlog(&self, _cpu: usize, rng: Rng) -> Option<Box<dyn BacklogPolicy>> {
        let (max, min_top, costs) = self.pbq?;
        Some(Box::new(pbq::Pbq::new(max, min_top, rng).with_costs(costs)))
    }

    #[inline]
    fn xdp_attached(&self) -> bool {
        self.xdp.is_some()
    }

    #[inline]
    fn xdp_needs_priority(&self) -> bool {
        self.xdp.is_some()
    }

    fn xdp_verdict(&mut self, now_ns: u64, level: u8) -> Verdict {
        match &mut self.xdp {
            Some(a) => a.prog.verdict(now_ns, level),
            None => Verdict::Pass,
        }
    }

    fn start_timers<M: Project<Self>, H: Reach<M> + Timers>(h: &mut H) {
        agent::start::<Self, M, H>(h);
        napi_suppress::start::<Self, M, H>(h);
    }

    fn poll<M: Project<Self>, H: Reach<M> + Tasks + Packets + Timers>(h: &mut H, local: u32, gen: u32) {
        match local {
            agent::TIMER => agent::poll::<Self, M, H>(h, gen),
            napi_suppress::TIMER => {
                // The rule reads the XDP detector's flag (the same agent's, live).
                let high_load = h.mechs_ref().project_ref().xdp.as_ref().is_some_and(|x| x.prog.high_load());
                napi_suppress::check::<Self, M, H>(h, gen, high_load)
            }
            t => unreachable!("ozaki_pbq has no timer {t}"),
        }
    }

    #[inline]
    fn context_switch<M: Project<Self>, H: Reach<M> + Tasks + Packets>(
        h: &mut H,
        cpu: usize,
        next: Option<Pid>,
    ) -> u64 {
        suppress::context_switch::<Self, M, H>(h, cpu, next)
    }

    fn warmup_end(&mut self, now: Time) {
        self.suppress.warm_count = self.suppress.count;
        if let Some(a) = &mut self.xdp {
            a.warm_high_load_ns = a.high_load_ns;
        }
        if let Some(a) = &mut self.napi {
            a.warm = (a.supp.changes, a.supp.suppressed_ns(now.ns()));
        }
    }

    /// Named as the live experiment's columns (crates/live/src/ozaki_pbq/experiment.rs) where it has them.
    fn metrics(&self, m: &mut BTreeMap<String, f64>, now: Time, window_s: f64) {
        let rate = |a: u64, b: u64| (a - b) as f64 / window_s;
        m.insert("irq_suppressions_per_s".into(), rate(self.suppress.count, self.suppress.warm_count));
        if let Some(a) = &self.xdp {
            m.insert("high_load_frac".into(), rate(a.high_load_ns, a.warm_high_load_ns) * 1e-9);
        }
        if let Some(a) = &self.napi {
            m.insert("supp_frac".into(), rate(a.supp.suppressed_ns(now.ns()), a.warm.1) * 1e-9);
            m.insert("supp_changes_per_s".into(), rate(a.supp.changes, a.warm.0));
        }
    }
}
