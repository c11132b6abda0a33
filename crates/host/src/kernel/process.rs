//! Processes: executing a program's actions with their kernel semantics and costs.
//!
//! A process's unit of work (user computation, or the system-call work of recv/send/nice) runs
//! as the CPU's process-level frame; it can be interrupted (IRQ, softirq) and preempted (the
//! scheduler saves the remaining cost in the process). When the unit completes, the program is
//! told the outcome and asked for its next action.

use crate::kernel::cpu::{Frame, Work};
use crate::kernel::task::{Pending, ProcState};
use crate::sim::*;
use crate::types::*;
use hostsim_engine::round_u64;
use hostsim_workload::{Action, Feedback, Outcome};

impl<M: Mechanisms> Host<M> {
    /// The process-level frame's unit completed.
    pub fn proc_unit_done(&mut self, cpu: usize) {
        let pid = self.cpus[cpu].curr.expect("process unit without a current process");
        let f = *self.cpus[cpu].stack.last().expect("frame");
        if f.work == Work::Switch {
            // Context switch done: continue the task's own unit.
            return self.load_proc_unit(cpu, pid);
        }
        self.procs[pid as usize].unit_remaining = 0;
        self.proc_step_and_run(cpu, pid);
    }

    /// Step the program of `pid` (running on `cpu`, its unit finished) and run what it asks for.
    pub fn proc_step_and_run(&mut self, cpu: usize, pid: Pid) {
        if pid == self.cpus[cpu].ksoftirqd {
            return self.ksoftirqd_step(cpu, pid);
        }
        let kind = self.procs[pid as usize].mech_kthread;
        if kind != 0 {
            return M::kthread_step(self, cpu, pid, kind);
        }
        if self.procs[pid as usize].cpumap_kthread {
            return self.cpumap_kthread_step(cpu, pid);
        }
        if self.procs[pid as usize].napi_q != NONE {
            return self.napi_kthread_step(cpu, pid);
        }
        // A wake-up the step makes (a pipe's byte to another thread, a reply that wakes a reader)
        // may preempt this task: it is switched out after the step, below, not during it
        // (`Cpu::in_step`, Host::resched).
        self.cpus[cpu].in_step = true;
        let step = self.proc_step(cpu, pid);
        self.cpus[cpu].in_step = false;
        let Some((state, cost)) = step else {
            // Blocked, sleeping or exited.
            return self.schedule(cpu);
        };
        if self.cpus[cpu].need_resched {
            let p = &mut self.procs[pid as usize];
            p.unit_state = state;
            p.unit_remaining = cost;
            // The frame holds a finished unit; give it the new one so schedule() saves it. (The
            // finished unit's trace slice ends here; the new one has not run, so it gets none.)
            self.trace_end_top(cpu);
            let f = self.cpus[cpu].stack.last_mut().expect("frame");
            *f = Frame { work: Work::ProcUnit, state, remaining: cost };
            return self.schedule(cpu);
        }
        self.next_unit(cpu, Work::ProcUnit, state, cost);
    }

    fn ksoftirqd_step(&mut self, cpu: usize, pid: Pid) {
        if self.cpus[cpu].need_resched {
            self.procs[pid as usize].unit_remaining = 0;
            return self.schedule(cpu);
        }
        if self.cpus[cpu].softirq_pending {
            self.procs[pid as usize].pending = Pending::Ksoftirqd;
            self.cpus[cpu].sirq_start = self.now();
            self.cpus[cpu].sirq_restarts = 0;
            self.cpus[cpu].sirq_ksoftirqd = true;
            let f = self.cpus[cpu].stack.last_mut().expect("frame");
            f.remaining = 0;
            self.pause_top(cpu);
            return self.softirq_begin(cpu);
        }
        self.procs[pid as usize].state = ProcState::KsoftirqdIdle;
        self.schedule(cpu);
    }

    /// Apply the finished unit's effect, ask the program for its next action and prepare it.
    /// Returns the next unit (state, cost) or None if the process left the CPU's run state.
    fn proc_step(&mut self, cpu: usize, pid: Pid) -> Option<(CpuState, u64)> {
        if self.procs[pid as usize].app != NONE {
            return self.app_step(cpu, pid);
        }
        let costs = &self.cfg.profile.costs;
        let (syscall, tx_b, drv) = (costs.syscall_ns, costs.tx_per_byte_ns, costs.driver_tx_frame_ns);
        let (udp_send, tcp_send) = (costs.udp_send_ns, costs.tcp_send_ns);
        let pending = self.procs[pid as usize].pending;
        let outcome = match pending {
            Pending::Start => Outcome::Start,
            Pending::Computed => Outcome::Computed,
            Pending::Received { bytes } => Outcome::Received { bytes },
            Pending::Replied { bytes } => {
                let (src, flow, seq) = self.procs[pid as usize].reply_to;
                if src != NONE {
                    self.procs[pid as usize].tx_packets += 1;
                    let s = self.procs[pid as usize].sock as usize;
                    let tcp = self.net.socks[s].tcp;
                    self.procs[pid as usize].tx_bytes += u64::from(bytes);
                    if tcp {
                        // The reply carries the ACK: nothing left for delayed ACK on this flow.
                        if let Some(st) = self.net.socks[s].flows.get_mut(&(src, flow)) {
                            st.unacked_segs = 0;
                        }
                    }
                    self.transmit(src, bytes, tcp, Feedback::Reply { flow, seq });
                }
                Outcome::Replied
            }
            Pending::Slept => Outcome::Slept,
            Pending::Yielded => Outcome::Yielded,
            Pending::NiceSet { nice } => {
                self.set_nice(pid, nice);
                Outcome::NiceSet
            }
            Pending::RetryRecv { max_bytes } => return self.do_recv(cpu, pid, max_bytes),
            Pending::SendUnit { tx } => {
                self.tcp_send_unit_done(pid, tx);
                return self.send_next(pid, 0);
            }
            Pending::RetrySend => return self.send_next(pid, 0),
            Pending::Sent { bytes } => Outcome::Sent { bytes },
            Pending::Ksoftirqd => Outcome::Start,
            Pending::App(_) => unreachable!("a thread of a multi-threaded program steps in kernel/app.rs"),
            Pending::Mech { .. } => unreachable!("a mechanism's kernel threads step in its kthread_step"),
            Pending::CpumapFrame { .. } => unreachable!("the CPU map kthread steps in net/core/cpumap_kthread.rs"),
            Pending::NapiRx { .. } | Pending::NapiTx { .. } => {
                unreachable!("threaded-NAPI kthreads step in net/core/napi_thread.rs")
            }
        };
        let p = &mut self.procs[pid as usize];
        let prog = p.program.as_mut().expect("user process has a program");
        let action = prog.next(outcome, &mut p.rng);
        match action {
            Action::Compute { user_ns } => {
                p.pending = Pending::Computed;
                Some((CpuState::User, user_ns))
            }
            Action::Recv { max_bytes } => self.do_recv(cpu, pid, max_bytes),
            Action::Reply { bytes } => {
                p.pending = Pending::Replied { bytes };
                // A TCP reply is one segment of tcp_echo's connection: TCP output, not UDP's.
                let tcp = p.sock != NONE && self.net.socks[p.sock as usize].tcp;
                let stack = if tcp { tcp_send } else { udp_send };
                Some((CpuState::System, syscall + stack + drv + (f64::from(bytes) * tx_b).round() as u64))
            }
            Action::Send { bytes } => {
                if p.conn == NONE {
                    // A send on no connection fails at once (validation prevents it).
                    p.pending = Pending::Sent { bytes: 0 };
                    return Some((CpuState::System, syscall));
                }
                let step = self.tcp_send_begin(pid, bytes);
                self.send_step_unit(pid, step)
            }
            Action::Sleep { ns } => self.nanosleep(pid, ns),
            Action::Yield => {
                p.pending = Pending::Yielded;
                self.yield_curr(cpu, pid);
                Some((CpuState::System, syscall))
            }
            Action::SetNice { nice } => {
                p.pending = Pending::NiceSet { nice };
                Some((CpuState::System, syscall))
            }
            Action::Exit => {
                p.state = ProcState::Exited;
                None
            }
            a => unreachable!("{a:?}: only multi-threaded programs make this call (kernel/app.rs)"),
        }
    }

    /// Continue the send() in progress (`extra` ns added to its next unit).
    fn send_next(&mut self, pid: Pid, extra: u64) -> Option<(CpuState, u64)> {
        let step = self.tcp_send_step(pid, extra);
        self.send_step_unit(pid, step)
    }

    fn send_step_unit(&mut self, pid: Pid, step: crate::net::ipv4::tcp_output::SendStep) -> Option<(CpuState, u64)> {
        use crate::net::ipv4::tcp_output::SendStep;
        match step {
            SendStep::Unit(cost) => Some((CpuState::System, cost)),
            SendStep::Blocked => None,
            SendStep::Done(bytes) => {
                // send() returns: the program is told at the end of this (empty) unit.
                self.procs[pid as usize].pending = Pending::Sent { bytes };
                Some((CpuState::System, 0))
            }
        }
    }

    /// recvmsg(): take data if there is some, else block on the socket's wait queue.
    fn do_recv(&mut self, cpu: usize, pid: Pid, max_bytes: u32) -> Option<(CpuState, u64)> {
        let s = self.procs[pid as usize].sock;
        if s == NONE {
            // A receive on no socket blocks forever (a scenario error caught by validation).
            self.procs[pid as usize].state = ProcState::BlockedRecv;
            return None;
        }
        let s = s as usize;
        if self.cfg.kernel.rfs {
            // rps_record_sock_flow(): the flow's desired CPU is where its reader runs.
            let hash = self.net.socks[s].hash;
            if hash != 0 {
                let mask = self.net.sock_flow.len() - 1;
                self.net.sock_flow[hash as usize & mask] = cpu as u32;
            }
        }
        // TCP prequeue (net/ipv4/tcp_prequeue.rs): a reader woken from recvmsg processes what
        // was queued for it first.
        let prequeue_cost = if self.net.socks[s].prequeue.is_empty() { 0 } else { self.tcp_prequeue_process(cpu, s) };
        if self.net.socks[s].queue.is_empty() {
            let p = &mut self.procs[pid as usize];
            p.pending = Pending::RetryRecv { max_bytes };
            if prequeue_cost > 0 {
                // Nothing in order came of it: the work is done, then the reader sleeps again.
                return Some((CpuState::System, prequeue_cost));
            }
            p.state = ProcState::BlockedRecv;
            self.net.socks[s].waiters.push_back(pid);
            if self.cfg.kernel.tcp_prequeue && self.net.socks[s].tcp {
                self.net.socks[s].ucopy_task = pid;
            }
            return None;
        }
        self.net.socks[s].ucopy_task = NONE;
        let (bytes, pkts, penalty) = self.sock_read(s, max_bytes, pid, cpu);
        // Window updates the read calls for leave at its start (Linux sends them at its end,
        // `tcp_cleanup_rbuf`: the copy's few microseconds earlier); the unit pays for them.
        let updates = if self.net.socks[s].tcp { self.tcp_after_read(s, bytes) } else { 0 };
        let c = &self.cfg.profile.costs;
        let cost = c.syscall_ns
            + c.recv_ns
            + round_u64(f64::from(bytes) * c.copy_per_byte_ns)
            + penalty
            + prequeue_cost
            + u64::from(updates) * (c.tcp_ack_send_ns + c.driver_tx_frame_ns);
        let p = &mut self.procs[pid as usize];
        p.rx_packets += u64::from(pkts);
        p.rx_bytes += u64::from(bytes);
        p.pending = Pending::Received { bytes };
        Some((CpuState::System, cost))
    }
}
