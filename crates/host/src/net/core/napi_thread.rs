//! Threaded NAPI (`kernel.napi_threaded`; `/sys/class/net/<dev>/threaded` = 1, Linux >= 5.12):
//! each NIC queue's NAPI poll runs in a kthread of its own instead of in the NET_RX softirq.
//! This file follows Linux 6.18 net/core/dev.c:
//!
//! - `____napi_schedule`: a NAPI instance with `NAPI_STATE_THREADED` and a thread sets
//!   `NAPI_STATE_SCHED_THREADED` and calls `wake_up_process(napi->thread)` instead of putting the
//!   instance on the CPU's poll list and raising NET_RX. Here: the queue's interrupt handler
//!   (`drivers/net/nic.rs` `nic_irq_handler`: on a veth, `veth_xmit` → `__veth_xdp_flush` →
//!   `napi_schedule`) disables the queue's interrupt and calls [`Host::napi_thread_schedule`].
//! - `napi_threaded_poll`: `while (!napi_thread_wait(napi)) napi_threaded_poll_loop(napi, false)`;
//!   `napi_thread_wait` sleeps (TASK_INTERRUPTIBLE) until the flag is set.
//! - `napi_threaded_poll_loop`: `for (;;) { local_bh_disable(); __napi_poll(napi, &repoll);
//!   ...; local_bh_enable(); if (!repoll) break; rcu_softirq_qs_periodic(); cond_resched(); }`:
//!   one poll call takes up to the instance's weight (`napi_weight`) of frames; a call that used
//!   its whole weight repolls, one that found the ring empty completes (`napi_complete_done`:
//!   the interrupt back on) and the thread sleeps again.
//!
//! What runs in the kthread is the same per-frame work as in NET_RX (`net/core/rx.rs`
//! `softirq_next`): the driver's per-frame cost (`driver_rx_frame_ns`), the XDP program
//! (`xdp_run_ns`; a passed frame pays `xdp_skb_build_ns`), then, without RPS, IP/UDP/TCP input
//! and the socket enqueue ([`Host::proto_begin`]) in the same unit; the TX ring's clean-up at the
//! start of each poll call (`driver_tx_clean_ns` per frame). No new cost: the kthread's wake-up
//! and switch are the scheduler's (`context_switch_ns`, `migrate_warmup_ns`).
//!
//! What NET_RX does that the kthread does not: no `netdev_budget` or `netdev_budget_usecs` per
//! pass, no restart limit and no ksoftirqd hand-over (kernel/softirq.c): the kthread keeps its
//! CPU while it has frames and the scheduler lets it (SCHED_FIFO: until the ring is empty).
//!
//! Scheduling: the kthread is a task (SCHED_FIFO `napi_rt_prio`, bound to the first CPU of its
//! NIC's `irq_cpus`; `kernel/task.rs` `spawn_napi_kthreads`), so it preempts any fair-class task
//! there as soon as it is woken. Its units are process-level units in the CPU's `system` state:
//! the per-CPU metrics count its time in `cpu_system_frac` (and `cpu<N>_system_frac`), as Linux's
//! /proc/stat counts a kthread's time as system time; its NET_RX share is 0. The model can
//! preempt it between two frames (a wake-up of a higher-priority task, or a fair-class task when
//! the suppression's `priority` knob made it SCHED_OTHER); Linux only between two poll calls
//! (`__napi_poll` runs with bottom halves off). Against the FIFO kthread no fair-class wake-up
//! preempts at all, so this matters only under that knob.
//!
//! Not modelled with threaded NAPI (refused by the scenario's validation): RPS/RFS (the
//! kthread's `net_rps_action_and_irq_enable`), GRO and RSC, the XDP CPU map, TCP prequeue.
//!
//! The suppression agent that moves or lowers these kthreads is `mechanisms/ozaki_pbq/napi_suppress.rs`
//! (through the mechanisms' handle: `kthread_set_cpu`, `kthread_set_class`).

use crate::hooks::Verdict;
use crate::kernel::task::{Pending, ProcState};
use crate::sim::*;
use crate::types::*;

impl<M: Mechanisms> Host<M> {
    /// `____napi_schedule` of queue `q`'s threaded instance, on `cpu` (the interrupt's CPU):
    /// `set_bit(NAPI_STATE_SCHED_THREADED)`, `wake_up_process(napi->thread)` (a no-op when the
    /// thread is running or runnable).
    pub fn napi_thread_schedule(&mut self, cpu: usize, q: usize) {
        self.dev.queues[q].napi_scheduled = true;
        let t = self.dev.queues[q].napi_thread;
        self.wake_up(t, cpu, true);
    }

    /// The kthread's step on `cpu`: finish the unit just run, then take the next unit of its
    /// poll, or sleep.
    pub fn napi_kthread_step(&mut self, cpu: usize, pid: Pid) {
        let now = self.now();
        let q = self.procs[pid as usize].napi_q as usize;
        match self.procs[pid as usize].pending {
            Pending::NapiRx { pkt, drop: true } => self.drop_pkt(pkt, DropPlace::Xdp),
            Pending::NapiRx { pkt, drop: false } => self.protocol_deliver(cpu, pkt),
            Pending::NapiTx { n } => self.tx_clean(q, n),
            // Woken (`napi_thread_wait` returned) or preempted between units: nothing to finish.
            Pending::Slept | Pending::Start => {}
            p => unreachable!("napi kthread in state {p:?}"),
        }
        self.procs[pid as usize].pending = Pending::Slept;
        if self.procs[pid as usize].allowed & (1u128 << cpu) == 0 {
            // The suppression agent changed its affinity while it ran here.
            return self.napi_kthread_leave(cpu, pid);
        }
        let weight = self.cfg.kernel.napi_weight;
        let nq = &mut self.dev.queues[q];
        if nq.thread_work >= weight {
            // `__napi_poll` returned work == weight: `repoll`; after `local_bh_enable` and
            // `cond_resched()` the next poll call starts (its TX clean-up included).
            nq.thread_work = 0;
            nq.tx_polled = false;
        }
        if nq.thread_work == 0 && !nq.tx_polled {
            // The poll call starts with the queue pair's TX ring, outside the RX weight, as in
            // NET_RX (`net/core/tx.rs`).
            nq.tx_polled = true;
            let n = nq.tx.done(now);
            if n > 0 {
                let cost = u64::from(n) * self.cfg.profile.costs.driver_tx_clean_ns;
                return self.kthread_unit(cpu, pid, Pending::NapiTx { n }, cost);
            }
        }
        let Some(pkt) = self.dev.queues[q].ring.pop_front() else {
            // `napi_complete_done`, then `napi_thread_wait`: the interrupt back on, asleep.
            self.dev.queues[q].thread_work = 0;
            self.napi_complete_queue(q);
            self.procs[pid as usize].state = ProcState::Sleeping;
            return self.schedule(cpu);
        };
        self.dev.queues[q].thread_work += 1;
        self.poll_rx_counters(q, pkt);
        let mut cost = self.cfg.profile.costs.driver_rx_frame_ns;
        if self.net.xdp.attached() {
            // The program runs on the frame before anything else sees it (`veth_xdp_rcv_one`).
            cost += self.cfg.profile.mechanisms.xdp_run_ns;
            if self.xdp_mech_verdict(pkt) == Verdict::Drop {
                return self.kthread_unit(cpu, pid, Pending::NapiRx { pkt, drop: true }, cost);
            }
            cost += self.cfg.profile.mechanisms.xdp_skb_build_ns;
        }
        // `netif_receive_skb` without RPS: the protocols in the same unit, on this CPU.
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
        cost += self.proto_begin(pkt);
        self.kthread_unit(cpu, pid, Pending::NapiRx { pkt, drop: false }, cost)
    }

    /// The running kthread is no longer allowed on `cpu`: Linux's `set_cpus_allowed_ptr` has
    /// the stopper move it at once (`migration_cpu_stop`); the model moves it at its next unit
    /// boundary: off this CPU, queued on its new one as a wake-up there.
    fn napi_kthread_leave(&mut self, cpu: usize, pid: Pid) {
        let to = self.procs[pid as usize].allowed.trailing_zeros() as usize;
        self.procs[pid as usize].state = ProcState::Sleeping; // so that schedule() does not requeue it here
        self.schedule(cpu);
        self.procs[pid as usize].cpu = to as u32;
        self.wake_up(pid, cpu, true);
    }

    /// Bind kthread `pid` to CPU `to` (`sched_setaffinity`): a sleeping one wakes there next; a
    /// queued one moves to `to`'s run queue now; a running one leaves at its next unit boundary
    /// ([`Host::napi_kthread_step`]).
    pub fn napi_kthread_set_cpu(&mut self, pid: Pid, to: usize) {
        let p = &mut self.procs[pid as usize];
        p.allowed = 1u128 << to;
        let from = p.cpu as usize;
        if from == to {
            return;
        }
        match p.state {
            ProcState::Runnable if self.cpus[from].curr != Some(pid) => {
                self.dequeue(from, pid);
                self.procs[pid as usize].cpu = to as u32;
                self.enqueue(to, pid, false);
                self.check_preempt(to, pid);
            }
            ProcState::Runnable => {} // running on `from`: it leaves at its next step
            _ => self.procs[pid as usize].cpu = to as u32,
        }
    }

    /// Set kthread `pid`'s class (`sched_setscheduler`): SCHED_FIFO `rt`, or SCHED_OTHER nice 0
    /// (None). Linux 6.18 kernel/sched/core.c `__sched_setscheduler`: a queued task is dequeued
    /// and queued again in its new class; `check_class_changed` → `switched_to_fair` reschedules
    /// the CPU if it is the running task, `switched_to_rt` preempts a fair-class current task.
    /// Entering the fair class it starts at its run queue's `min_vruntime` (no lag, as
    /// `attach_entity_cfs_rq` places a task that has none).
    pub fn napi_kthread_set_class(&mut self, pid: Pid, rt: Option<u8>) {
        let cpu = self.procs[pid as usize].cpu as usize;
        let running = self.cpus[cpu].curr == Some(pid);
        let queued = !running && self.procs[pid as usize].state == ProcState::Runnable;
        if running && self.top_level(cpu) == Some(Level::Process) {
            self.account(cpu); // the time so far in the old class
        }
        if queued {
            self.dequeue(cpu, pid);
        }
        let minv = self.cpus[cpu].min_vruntime;
        let p = &mut self.procs[pid as usize];
        let to_fair = p.rt.is_some() && rt.is_none();
        p.rt = rt;
        if to_fair {
            p.nice = 0;
            p.weight = nice_weight(0);
            p.vruntime = minv;
        }
        if queued {
            self.enqueue(cpu, pid, false);
            self.check_preempt(cpu, pid);
        } else if running && to_fair {
            self.resched(cpu);
        }
    }
}
