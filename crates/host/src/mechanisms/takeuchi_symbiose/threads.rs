//! HiTactix/Symbiose's functional split on the host (`kernel.concurrency = "functional"`; rules
//! and sources in `mod.rs`, paper 003 §2-§3 and Fig. 2): the hooks of the mechanism's kernel
//! threads (`Mechanism::kthread_step`), of the driver's receive (`Mechanism::netif_rx`) and of
//! the run's start, through the host handle.
//!
//! - The driver CPU's receive interrupt puts each frame in a buffer from the shared pool and on
//!   its local output queue for the IP stage (`symbiose_rx`, cost: the legacy handler's
//!   `driver_rx_frame_ns + netif_rx_ns`, the latter standing for the local enqueue).
//! - Every `exchange_period_us`, each CPU's polling thread takes the global queue for its CPU
//!   (one locked splice) into its local input queue and wakes the CPU's stage thread; then its
//!   bulk-send thread moves its local output queue into the global queues (one locked splice).
//!   Both are SCHED_FIFO kernel threads pinned to their CPU; a wake costs a context switch.
//! - The stage thread (SCHED_FIFO, below the periodic threads: notes 003 §6.10) runs each
//!   buffer of the local input queue through the CPU's stage, then sleeps until woken again.
//! - IP stage (on `ip_cpu`): `ip_forward_ns` and the local hand-on to the transmit stage
//!   (`netif_rx_ns`), or for a local socket the usual protocol cost and delivery.
//! - Transmit stage (on `driver_cpu`): ARP and the driver's transmit of the frame to its sink.
//! - A stage on a CPU other than the one that last touched the buffer pays `remote_packet_ns`
//!   (the cache model's cost for packet lines written by another CPU), as in the rest of the
//!   model. There is no lock and no IPI per packet.

use super::options::SymbioseOptions;
use super::queues::{Stage, Symbiose, SymbioseThread};
use crate::config::HostConfig;
use crate::hooks::{me, Boot, Kthread, Mechanism, NoOptions, Packets, Project, Reach, Tasks, Timers};
use crate::kernel::locking::spinlock::{Context, SpinLock};
use crate::kernel::task::{Pending, ProcState};
use crate::metrics::summary::Summary;
use crate::types::*;
use hostsim_engine::Time;
use hostsim_options::Fault;
use std::collections::BTreeMap;

/// Paper 003's functional split, on under `kernel.concurrency = "functional"`.
pub struct TakeuchiSymbiose {
    sym: Option<Box<Symbiose>>,
    /// One splice (`symbiose_splice_ns`, the profile's).
    splice_ns: u64,
    /// Its kernel threads, in the order they were spawned.
    threads: Vec<(Pid, SymbioseThread)>,
    /// Per task: the period boundary its current (or last) activation belongs to.
    period_start_ns: Vec<u64>,
    /// Each CPU's splices at the end of the warm-up.
    warm_exchanges: Vec<u64>,
}

impl SymbioseThread {
    const ALL: [SymbioseThread; 3] = [SymbioseThread::Poll, SymbioseThread::Send, SymbioseThread::Stages];
}

impl Mechanism for TakeuchiSymbiose {
    type Options = SymbioseOptions;
    type TaskOptions = NoOptions;
    const POLICIES: &'static [(&'static str, &'static str, &'static str)] = super::options::POLICIES;

    fn check(cfg: &HostConfig, o: &SymbioseOptions, _tasks: &[NoOptions]) -> Result<(), Fault> {
        super::options::check(cfg, o)
    }

    fn buffers(cfg: &HostConfig, o: &SymbioseOptions) -> Option<(u64, &'static str, String)> {
        let what = || format!("Symbiose's pool of {} buffers", o.pool_buffers);
        cfg.kernel.concurrency.is("functional").then(|| (u64::from(o.pool_buffers), "pool_buffers", what()))
    }

    fn new(boot: &Boot) -> Self {
        let (k, m) = (&boot.cfg.kernel, &boot.cfg.profile.mechanisms);
        let o: SymbioseOptions = boot.options();
        let sym = k.concurrency.is("functional").then(|| {
            Box::new(Symbiose::new(
                boot.ncpu,
                o.driver_cpu as usize,
                o.ip_cpu as usize,
                o.exchange_period_us * 1000,
                o.pool_buffers,
                SpinLock::new(m.lock_acquire_ns, m.lock_line_transfer_ns),
            ))
        });
        TakeuchiSymbiose {
            sym,
            splice_ns: m.symbiose_splice_ns,
            threads: Vec::new(),
            period_start_ns: Vec::new(),
            warm_exchanges: Vec::new(),
        }
    }

    /// Each OS's polling and bulk-send threads (paper 003 Fig. 2), above everything else, and its
    /// stage thread just below them (notes 003 §6.10): kernel threads pinned to their CPU.
    fn kthreads(&self, ncpu: usize) -> Vec<Kthread> {
        if self.sym.is_none() {
            return Vec::new();
        }
        let mut v = Vec::new();
        for c in 0..ncpu as u32 {
            for th in SymbioseThread::ALL {
                let (name, rt_prio) = match th {
                    SymbioseThread::Poll => ("symbiose-poll", 99),
                    SymbioseThread::Send => ("symbiose-send", 99),
                    SymbioseThread::Stages => ("symbiose-stage", 98),
                };
                v.push(Kthread { name: format!("{name}/{c}"), cpu: c, rt_prio, kind: th as u8 });
            }
        }
        v
    }

    fn booted(&mut self, kthreads: &[Pid], nprocs: usize) {
        let Some(sym) = &mut self.sym else { return };
        let kinds = (0..sym.stage_thread.len()).flat_map(|c| SymbioseThread::ALL.map(|t| (c, t)));
        for (&pid, (c, th)) in kthreads.iter().zip(kinds) {
            if th == SymbioseThread::Stages {
                sym.stage_thread[c] = pid;
            }
            self.threads.push((pid, th));
        }
        self.period_start_ns = vec![0; nprocs];
    }

    fn lock(&self) -> Option<&SpinLock> {
        self.sym.as_ref().map(|s| &s.lock)
    }

    fn lock_mut(&mut self) -> Option<&mut SpinLock> {
        self.sym.as_mut().map(|s| &mut s.lock)
    }

    /// The global queues' lock: an exchange needs it, nothing else does.
    fn needs_lock(&self, ctx: Context) -> Option<bool> {
        self.sym.as_ref().map(|_| ctx == Context::Exchange)
    }

    fn unit_locked(&self, pending: Pending) -> bool {
        matches!(pending, Pending::Mech { op: EXCHANGE, .. }) && self.sym.is_some()
    }

    fn start<M: Project<Self>, H: Reach<M> + Tasks + Timers>(h: &mut H) {
        start::<M, H>(h);
    }

    #[inline]
    fn netif_rx<M: Project<Self>, H: Reach<M> + Packets>(h: &mut H, cpu: usize, pkt: PktId) -> bool {
        rx::<M, H>(h, cpu, pkt)
    }

    fn kthread_step<M: Project<Self>, H: Reach<M> + Tasks + Packets + Timers>(
        h: &mut H,
        cpu: usize,
        pid: Pid,
        kind: u8,
    ) {
        let th = SymbioseThread::ALL[kind as usize];
        step::<M, H>(h, cpu, pid, th);
    }

    fn warmup_end(&mut self, _now: Time) {
        self.warm_exchanges = self.sym.as_ref().map_or_else(Vec::new, |s| s.exchanges.clone());
    }

    /// The splices per second of all CPUs, and of the least and most active.
    fn metrics(&self, m: &mut BTreeMap<String, f64>, _now: Time, window_s: f64) {
        let end = self.sym.as_ref().map_or(&[][..], |s| &s.exchanges[..]);
        let rate = |a: u64, b: u64| (a - b) as f64 / window_s;
        let ex: Vec<f64> =
            (0..end.len()).map(|c| rate(end[c], self.warm_exchanges.get(c).copied().unwrap_or(0))).collect();
        m.insert("exchanges_per_s".into(), ex.iter().sum::<f64>() + 0.0); // + 0.0: no -0.0 for none
        let min = if ex.is_empty() { 0.0 } else { ex.iter().copied().fold(f64::INFINITY, f64::min) };
        m.insert("exchanges_min_cpu_per_s".into(), min);
        m.insert("exchanges_max_cpu_per_s".into(), ex.iter().copied().fold(0.0, f64::max));
    }

    fn summary(&self, s: &mut Summary) {
        if let Some(y) = &self.sym {
            s.concurrency.exchanges = y.exchanges.clone();
            s.concurrency.pool_buffers_used = y.pool_used();
            s.concurrency.exchange_queued = y.queued() as u64;
        }
    }
}

/// What a Symbiose thread's unit finishes (`Pending::Mech`'s `op`): a splice of a local and a
/// global queue (under the global-queue lock), or a buffer through a stage.
pub const EXCHANGE: u8 = 0;
pub const STAGE_IP: u8 = 1;
pub const STAGE_XMIT: u8 = 2;

fn stage_op(stage: Stage) -> u8 {
    match stage {
        Stage::Ip => STAGE_IP,
        Stage::Xmit => STAGE_XMIT,
    }
}

/// Arm the first activation of every periodic thread (period boundaries are multiples of
/// the period, from 0).
pub fn start<M: Project<TakeuchiSymbiose>, H: Reach<M> + Tasks + Timers>(h: &mut H) {
    let threads = me::<TakeuchiSymbiose, M>(h).threads.clone();
    for (pid, th) in threads {
        if matches!(th, SymbioseThread::Poll | SymbioseThread::Send) {
            h.task_timer_at(pid, Time::ZERO);
        }
    }
}

/// The driver CPU's receive interrupt hands a frame to the IP stage (local queue).
pub fn rx<M: Project<TakeuchiSymbiose>, H: Reach<M> + Packets>(h: &mut H, cpu: usize, pkt: PktId) -> bool {
    let Some(sym) = me::<TakeuchiSymbiose, M>(h).sym.as_mut() else { return false };
    if !sym.pool_alloc() {
        h.drop_pkt(pkt, DropPlace::BufferPool);
        return true;
    }
    sym.hand_on(cpu, pkt, Stage::Ip);
    h.set_pkt_cpu(pkt, cpu as u32);
    true
}

/// A Symbiose thread's unit completed (or it was woken): apply the effect, run the next.
pub fn step<M: Project<TakeuchiSymbiose>, H: Reach<M> + Tasks + Packets + Timers>(
    h: &mut H,
    cpu: usize,
    pid: Pid,
    th: SymbioseThread,
) {
    if th == SymbioseThread::Stages {
        return stages_step::<M, H>(h, cpu, pid);
    }
    let splice_ns = me::<TakeuchiSymbiose, M>(h).splice_ns;
    match h.task_pending(pid) {
        Pending::Slept | Pending::Start => {
            return h.kthread_unit(cpu, pid, Pending::Mech { op: EXCHANGE, pkt: NONE }, splice_ns)
        }
        Pending::Mech { op: EXCHANGE, .. } => {
            let sym = me::<TakeuchiSymbiose, M>(h).sym.as_mut().expect("functional");
            match th {
                SymbioseThread::Poll => sym.poll(cpu),
                SymbioseThread::Send => sym.bulk_send(cpu),
                SymbioseThread::Stages => unreachable!(),
            };
        }
        p => unreachable!("Symbiose periodic thread in state {p:?}"),
    }
    if th == SymbioseThread::Poll {
        let sym = me::<TakeuchiSymbiose, M>(h).sym.as_ref().expect("functional");
        if sym.input_waiting(cpu) {
            let worker = sym.stage_thread[cpu];
            h.wake_up(worker, cpu);
        }
    }
    sleep::<M, H>(h, cpu, pid);
}

/// The stage thread: finish the buffer it ran, then take the next one or sleep until the
/// polling thread brings more.
fn stages_step<M: Project<TakeuchiSymbiose>, H: Reach<M> + Tasks + Packets + Timers>(h: &mut H, cpu: usize, pid: Pid) {
    match h.task_pending(pid) {
        Pending::Mech { op: STAGE_IP, pkt } => stage_done::<M, H>(h, cpu, pkt, Stage::Ip),
        Pending::Mech { op: STAGE_XMIT, pkt } => stage_done::<M, H>(h, cpu, pkt, Stage::Xmit),
        Pending::Slept | Pending::Start => {}
        p => unreachable!("Symbiose stage thread in state {p:?}"),
    }
    if let Some((pkt, stage)) = me::<TakeuchiSymbiose, M>(h).sym.as_mut().expect("functional").next_in(cpu) {
        let cost = stage_cost(h, cpu, pkt, stage);
        return h.kthread_unit(cpu, pid, Pending::Mech { op: stage_op(stage), pkt }, cost);
    }
    h.set_task_pending(pid, Pending::Slept);
    h.set_task_state(pid, ProcState::Sleeping);
    h.schedule(cpu);
}

/// The activation is over: sleep until the next period boundary, or start the next
/// activation at once if that boundary has passed (one missed activation is kept).
fn sleep<M: Project<TakeuchiSymbiose>, H: Reach<M> + Tasks + Timers>(h: &mut H, cpu: usize, pid: Pid) {
    let now = h.now().ns();
    let t = me::<TakeuchiSymbiose, M>(h);
    let period = t.sym.as_ref().expect("functional").period_ns;
    let start = &mut t.period_start_ns[pid as usize];
    let next = (*start / period + 1) * period;
    if next <= now {
        // Overran: the missed boundaries count as one activation, run now as that of the
        // latest boundary passed (no catching up on every missed one).
        *start = now / period * period;
        let splice_ns = t.splice_ns;
        return h.kthread_unit(cpu, pid, Pending::Mech { op: EXCHANGE, pkt: NONE }, splice_ns);
    }
    *start = next;
    h.set_task_pending(pid, Pending::Slept);
    h.set_task_state(pid, ProcState::Sleeping);
    h.task_timer_at(pid, Time(next));
    h.schedule(cpu);
}

fn stage_cost<H: Packets>(h: &mut H, cpu: usize, pkt: PktId, stage: Stage) -> u64 {
    let remote = h.remote_touch(cpu, pkt);
    remote
        + match stage {
            Stage::Ip if h.pkt_forwarded(pkt) => h.forward_stage_cost(),
            Stage::Ip => h.proto_cost(pkt),
            Stage::Xmit => h.xmit_cost(),
        }
}

fn stage_done<M: Project<TakeuchiSymbiose>, H: Reach<M> + Packets>(h: &mut H, cpu: usize, pkt: PktId, stage: Stage) {
    h.set_pkt_cpu(pkt, cpu as u32);
    let fwd = h.pkt_forwarded(pkt);
    let sym = me::<TakeuchiSymbiose, M>(h).sym.as_mut().expect("functional");
    match stage {
        Stage::Ip if fwd => sym.hand_on(cpu, pkt, Stage::Xmit),
        Stage::Ip => {
            sym.pool_free();
            h.deliver(cpu, pkt);
        }
        Stage::Xmit => {
            sym.pool_free();
            h.forward_xmit(pkt);
        }
    }
}
