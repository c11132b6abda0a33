//! Multi-threaded programs (the web accelerator of paper 004, `hostsim_workload::accel`): each
//! thread is a task; the program's state machine, shared by its threads, lives in an `App`
//! with the process's descriptor table. This file executes the threads' system calls with their
//! Linux 2.4/2.5 semantics and costs:
//!
//! | call | semantics | cost (system time) |
//! |---|---|---|
//! | gettimeofday | returns the simulated time at the end of the call | `syscall_ns + gettimeofday_ns` |
//! | sched_setscheduler | SCHED_FIFO at a priority, or SCHED_OTHER; lowering reschedules (2.5 `setscheduler`: `resched_task` when the priority got worse) | `syscall_ns + setscheduler_ns` |
//! | sched_yield | to the tail of its FIFO priority's list, or behind the fair tasks (`kernel/sched/core.rs`) | `syscall_ns` |
//! | nanosleep | 2.4/2.5 jiffies, busy-wait ≤ 2 ms for real-time tasks (`kernel/time/nanosleep.rs`) | — |
//! | poll | `fs/select.rs`; with `conn_list = "with_work"` over the gathered list | `poll_*` |
//! | gather (`with_work`'s `prepare_conn_list`) | the connections with work now; blocks without control until one has | `syscall_ns + poll_base_ns + n × poll_per_fd_ns` |
//! | accept | blocks while the queue is empty | `syscall_ns + accept_ns` |
//! | read | non-blocking; a pipe's byte | `syscall_ns + recv_ns + bytes × copy_per_byte_ns` (+ the accelerator's `request_kernel_ns` when it completes a client request); pipe `syscall_ns + pipe_ns` |
//! | write | non-blocking: what fits in the send buffer, segments out as the windows allow | `syscall_ns + bytes × (copy + tx_per_byte) + segments × (tcp_send_ns + driver_tx_frame_ns)` |
//! | close | FIN out, connection freed | `syscall_ns + close_ns + tcp_ack_send_ns + driver_tx_frame_ns` |
//! | notify | a byte into another thread's pipe, waking it if it polls | `syscall_ns + pipe_ns` |
//!
//! A call's effect on the socket happens when its unit starts (read takes the data, write fills
//! the send buffer); what others see of it (segments on the wire, the FIN, the pipe's byte, the
//! new scheduling policy) happens when the unit completes.

use crate::config::SyscallCosts;
use crate::kernel::app_state::{App, AppPending};
use crate::kernel::task::{Pending, ProcState};
use crate::net::core::sock::Sock;
use crate::net::core::sock::{EpKind, Listener, PortUse};
use crate::sim::*;
use crate::types::*;
use hostsim_workload::{Accel, Action, Outcome, ThreadProgram};
use std::collections::VecDeque;

impl<M: Mechanisms> Host<M> {
    pub(crate) fn app_of(&self, pid: Pid) -> (usize, usize) {
        let p = &self.procs[pid as usize];
        (p.app as usize, p.thread as usize)
    }

    pub(crate) fn syscall_costs(&self) -> &SyscallCosts {
        self.cfg.profile.syscalls.as_ref().expect("validated: the profile has [syscalls] costs")
    }

    fn new_sock(&mut self, port: u16) -> u32 {
        let id = self.net.socks.len() as u32;
        self.net.socks.push(Sock::new(port, true, self.cfg.kernel.rcvbuf_bytes));
        self.net.port_sock[port as usize] = id;
        id
    }

    /// Build every multi-threaded program: its state machine, listening socket, poll sets,
    /// pipes and connections to its origin servers (opened at the start; the handshake is not
    /// modelled for them).
    pub fn init_apps(&mut self) {
        for gi in 0..self.cfg.processes.len() {
            let pc = &self.cfg.processes[gi];
            if pc.program != hostsim_workload::ProgramKind::Accelerator {
                continue;
            }
            let acfg = pc.accelerator.clone().unwrap_or_default();
            let roles: Vec<ThreadProgram> =
                pc.threads.iter().map(|t| t.program.expect("validated: every thread has a program")).collect();
            let port = pc.port.expect("validated: an accelerator has a port");
            let threads: Vec<Pid> =
                (0..self.procs.len() as Pid).filter(|&p| self.procs[p as usize].group == gi as u32).collect();
            let id = self.apps.len() as u32;
            for (t, &pid) in threads.iter().enumerate() {
                self.procs[pid as usize].app = id;
                self.procs[pid as usize].thread = t as u32;
            }
            let sock = self.new_sock(port);
            let listener = self.net.eps.listeners.len() as u32;
            self.net.eps.listeners.push(Listener {
                sock,
                backlog: acfg.listen_backlog,
                queue: VecDeque::new(),
                waiter: NONE,
                syns: 0,
                syn_drops: 0,
            });
            self.net.eps.ports.insert(port, PortUse::Listen(listener));
            let mut app = App {
                accel: Accel::new(acfg.clone(), &roles),
                group: gi as u32,
                threads,
                sets: vec![NONE; roles.len()],
                pipes: vec![NONE; roles.len()],
                lists: vec![Vec::new(); roles.len()],
                // 0-2: standard descriptors, 3: the listening socket.
                fds: vec![NONE; 4],
                free_fds: Default::default(),
                listener,
                warm: None,
            };
            for (t, &role) in roles.iter().enumerate() {
                if role == ThreadProgram::Listen {
                    continue;
                }
                app.sets[t] = self.net.eps.new_set();
                let ep = self.net.eps.alloc(EpKind::Pipe, NONE, NONE, NONE, NONE);
                let fd = app.alloc_fd(ep);
                self.net.eps.eps[ep as usize].app = id;
                self.net.eps.eps[ep as usize].fd = fd;
                app.pipes[t] = ep;
                app.accel.add_pipe(t, fd);
            }
            if let Some(src) = self.wire.srcs.iter().position(|s| s.name == acfg.origin) {
                let osock = self.new_sock(acfg.origin_port);
                self.net.eps.ports.insert(acfg.origin_port, PortUse::Connect);
                let sndbuf = self.cfg.kernel.sndbuf_bytes;
                for k in 0..acfg.origin_conns {
                    let conn = self.tcp_connect(osock, src as u32, k, sndbuf, true);
                    let ep = self.net.eps.alloc(EpKind::Connected, src as u32, k, osock, conn);
                    let fd = app.alloc_fd(ep);
                    self.net.eps.eps[ep as usize].app = id;
                    self.net.eps.eps[ep as usize].fd = fd;
                    app.accel.add_origin(fd);
                }
            }
            self.apps.push(app);
        }
    }

    /// Apply the finished system call of thread `pid`, ask the program for the next one and
    /// start it. Returns the next unit, or None if the thread blocked.
    pub fn app_step(&mut self, cpu: usize, pid: Pid) -> Option<(CpuState, u64)> {
        let (a, t) = self.app_of(pid);
        let outcome = match self.procs[pid as usize].pending {
            Pending::Start => Outcome::Start,
            Pending::Slept => Outcome::Slept,
            Pending::App(ap) => match ap {
                AppPending::Computed => Outcome::Computed,
                AppPending::Time => Outcome::Time { ns: self.now().ns() },
                AppPending::SchedSet { fifo } => {
                    self.set_policy(cpu, pid, fifo);
                    Outcome::SchedulerSet
                }
                AppPending::Yielded => Outcome::Yielded,
                AppPending::PollPass { ready } => match self.poll_pass_done(pid, ready) {
                    Ok(ready) => self.polled(ready),
                    Err(next) => return next,
                },
                AppPending::Polled { ready } => self.polled(ready),
                AppPending::PollWait => return self.poll_rescan(pid),
                AppPending::GatherPass { n } => match self.gather_pass_done(pid, n) {
                    Ok(n) => Outcome::Gathered { n },
                    Err(next) => return next,
                },
                AppPending::Gathered { n } => Outcome::Gathered { n },
                AppPending::GatherWait => return self.gather_rescan(pid),
                AppPending::AcceptWait => return self.app_accept(pid),
                AppPending::Accepted { fd } => Outcome::Accepted { fd },
                AppPending::Read { bytes, tag, eof } => Outcome::Read { bytes, tag, eof },
                AppPending::Wrote { bytes, ep, tx } => {
                    let e = &mut self.net.eps.eps[ep as usize];
                    if bytes > 0 && e.unacked > 0 {
                        // The data carries the ACK of what was received.
                        e.unacked = 0;
                        e.delack.cancel();
                    }
                    let conn = e.conn as usize;
                    self.tcp_emit(conn, tx);
                    Outcome::Wrote { bytes }
                }
                AppPending::Closed { fd } => {
                    let ep = self.apps[a].fd_ep(fd);
                    if ep != NONE {
                        self.ep_close(ep);
                        self.apps[a].free_fd(fd);
                    }
                    Outcome::Closed
                }
                AppPending::Notified { thread } => {
                    let ep = self.apps[a].pipes[thread as usize];
                    if ep != NONE {
                        self.net.eps.eps[ep as usize].notified = true;
                        self.ep_poke(cpu, ep);
                    }
                    Outcome::Notified
                }
            },
            other => unreachable!("thread {pid} of a multi-threaded program with {other:?}"),
        };
        let action = self.apps[a].accel.next(t, outcome);
        let c = &self.cfg.profile.costs;
        let syscall = c.syscall_ns;
        let set = |h: &mut Host<M>, ap: AppPending| h.procs[pid as usize].pending = Pending::App(ap);
        match action {
            Action::Compute { user_ns } => {
                set(self, AppPending::Computed);
                Some((CpuState::User, user_ns))
            }
            Action::GetTime => {
                set(self, AppPending::Time);
                Some((CpuState::System, syscall + self.syscall_costs().gettimeofday_ns))
            }
            Action::SetScheduler { fifo } => {
                set(self, AppPending::SchedSet { fifo });
                Some((CpuState::System, syscall + self.syscall_costs().setscheduler_ns))
            }
            Action::Yield => {
                set(self, AppPending::Yielded);
                self.yield_curr(cpu, pid);
                Some((CpuState::System, syscall))
            }
            Action::Sleep { ns } => self.nanosleep(pid, ns),
            Action::Poll { timeout_ms } => self.app_poll(cpu, pid, timeout_ms),
            Action::Gather { timeout_ms } => self.app_gather(cpu, pid, timeout_ms),
            Action::Accept => self.app_accept(pid),
            Action::Read { fd, max_bytes } => Some(self.app_read(pid, fd, max_bytes)),
            Action::Write { fd, bytes, tag } => Some(self.app_write(pid, fd, bytes, tag)),
            Action::Close { fd } => {
                set(self, AppPending::Closed { fd });
                let c = &self.cfg.profile.costs;
                let fin = c.tcp_ack_send_ns + c.driver_tx_frame_ns;
                Some((CpuState::System, syscall + self.syscall_costs().close_ns + fin))
            }
            Action::Notify { thread } => {
                set(self, AppPending::Notified { thread: u32::from(thread) });
                Some((CpuState::System, syscall + self.syscall_costs().pipe_ns))
            }
            a => unreachable!("the accelerator asked for {a:?}"),
        }
    }

    fn polled(&mut self, ready: u32) -> Outcome {
        self.stats.poll_ready += u64::from(ready);
        Outcome::Polled { ready }
    }

    /// sched_setscheduler(0, SCHED_FIFO | SCHED_OTHER) by the running task `pid`.
    pub fn set_policy(&mut self, cpu: usize, pid: Pid, fifo: Option<u8>) {
        if self.cfg.kernel.o1_runqueue {
            return self.o1_setscheduler(pid, fifo);
        }
        let minv = self.cpus[cpu].min_vruntime;
        let p = &mut self.procs[pid as usize];
        match fifo {
            Some(prio) => p.rt = Some(prio.max(1)),
            None if p.rt.is_some() => {
                // Back in the fair class with no credit for the time it ran as real-time, and
                // the scheduler decides again (2.5 `setscheduler`: the priority got worse).
                p.rt = None;
                p.vruntime = p.vruntime.max(minv);
                self.cpus[cpu].need_resched = true;
            }
            None => {}
        }
    }

    /// 2.5 `setscheduler()` on the running task under `kernel.o1_runqueue` (`sched/o1_rq.rs`):
    /// `deactivate_task`, the new policy and priority (`99 - rt_priority`, or `static_prio`),
    /// `activate_task`: the tail of its list, and for a normal task the sleep credit of the
    /// jiffies since it last left a CPU (for a running task, time it ran too). No reschedule.
    fn o1_setscheduler(&mut self, pid: Pid, fifo: Option<u8>) {
        let tick = self.tick_ns();
        self.sched.enq_seq += 1;
        let (jiffies, hz) = (self.jiffies(), self.cfg.kernel.hz);
        let active = self.cpus[self.procs[pid as usize].cpu as usize].o1_active;
        let p = &mut self.procs[pid as usize];
        p.enq_seq = self.sched.enq_seq;
        p.o1.array = active;
        p.o1.requeue = false;
        p.rt = fifo.map(|prio| prio.max(1));
        if p.rt.is_none() {
            p.o1.prio = p.o1.static_prio;
            p.o1.activate(jiffies.saturating_sub(p.left_cpu_at.ns() / tick), hz);
        }
    }

    /// accept(): a queued connection gets a descriptor, else the thread blocks.
    fn app_accept(&mut self, pid: Pid) -> Option<(CpuState, u64)> {
        let (a, _) = self.app_of(pid);
        let l = self.apps[a].listener as usize;
        match self.net.eps.listeners[l].queue.pop_front() {
            Some(ep) => {
                let fd = self.apps[a].alloc_fd(ep);
                self.net.eps.eps[ep as usize].app = a as u32;
                self.net.eps.eps[ep as usize].fd = fd;
                self.procs[pid as usize].pending = Pending::App(AppPending::Accepted { fd });
                Some((CpuState::System, self.cfg.profile.costs.syscall_ns + self.syscall_costs().accept_ns))
            }
            None => {
                self.net.eps.listeners[l].waiter = pid;
                let p = &mut self.procs[pid as usize];
                p.state = ProcState::BlockedRecv;
                p.pending = Pending::App(AppPending::AcceptWait);
                None
            }
        }
    }

    fn app_read(&mut self, pid: Pid, fd: u32, max_bytes: u32) -> (CpuState, u64) {
        let (a, t) = self.app_of(pid);
        let ep = self.apps[a].fd_ep(fd);
        let c = &self.cfg.profile.costs;
        let syscall = c.syscall_ns;
        if ep == NONE {
            // EBADF: a descriptor closed meanwhile.
            self.procs[pid as usize].pending = Pending::App(AppPending::Read { bytes: 0, tag: 0, eof: true });
            return (CpuState::System, syscall);
        }
        let pipe = self.net.eps.eps[ep as usize].kind == EpKind::Pipe;
        let (bytes, tag, eof) = self.ep_read(ep, max_bytes);
        let c = &self.cfg.profile.costs;
        let cost = if pipe {
            syscall + self.syscall_costs().pipe_ns
        } else {
            // A completed client request (`tag`) carries the accelerator's calibrated
            // per-request kernel time (`request_kernel_ns`).
            let io = self.apps[a].accel.role(t) == ThreadProgram::Io;
            let per_request = if tag != 0 && io { self.apps[a].accel.config().request_kernel_ns } else { 0 };
            syscall + c.recv_ns + (f64::from(bytes) * c.copy_per_byte_ns).round() as u64 + per_request
        };
        let p = &mut self.procs[pid as usize];
        if !pipe {
            p.rx_bytes += u64::from(bytes);
            p.rx_packets += u64::from(tag != 0);
        }
        p.pending = Pending::App(AppPending::Read { bytes, tag, eof });
        (CpuState::System, cost)
    }

    fn app_write(&mut self, pid: Pid, fd: u32, bytes: u32, tag: u64) -> (CpuState, u64) {
        let (a, _) = self.app_of(pid);
        let ep = self.apps[a].fd_ep(fd);
        let syscall = self.cfg.profile.costs.syscall_ns;
        if ep == NONE || self.net.eps.eps[ep as usize].conn == NONE {
            self.procs[pid as usize].pending = Pending::App(AppPending::Wrote { bytes: 0, ep: 0, tx: 0 });
            return (CpuState::System, syscall);
        }
        let conn = self.net.eps.eps[ep as usize].conn as usize;
        let took = self.net.conns[conn].snd.append(bytes, true);
        if tag != 0 && took == bytes {
            let end = self.net.conns[conn].snd.write_seq;
            self.net.eps.eps[ep as usize].tx_marks.push_back((end, tag));
        }
        let tx = self.tcp_mark_sendable(conn, u32::MAX);
        let c = &self.cfg.profile.costs;
        let cost = syscall
            + (f64::from(took) * (c.copy_per_byte_ns + c.tx_per_byte_ns)).round() as u64
            + u64::from(tx) * (c.tcp_send_ns + c.driver_tx_frame_ns);
        let p = &mut self.procs[pid as usize];
        p.tx_bytes += u64::from(took);
        p.tx_packets += u64::from(tx);
        p.pending = Pending::App(AppPending::Wrote { bytes: took, ep, tx });
        (CpuState::System, cost)
    }

    /// The end of warm-up: remember the programs' counters.
    pub fn apps_warmup(&mut self) {
        for app in &mut self.apps {
            app.warm = Some(app.accel.stats.clone());
        }
    }
}
