//! poll(): its cost and blocking, after Linux 2.4/2.5's `sys_poll` → `do_poll` → `do_pollfd`
//! (fs/select.c):
//!
//! ```c
//! poll_initwait(&table);
//! wait = &table;
//! if (!timeout) wait = NULL;                 /* no wait queues for a non-blocking poll */
//! ...
//! for (;;) {                                 /* do_poll */
//!         set_current_state(TASK_INTERRUPTIBLE);
//!         scan every fd: f_op->poll(file, wait)   /* first pass: __pollwait on each */
//!         wait = NULL;
//!         if (count || !timeout || signal_pending(current)) break;
//!         timeout = schedule_timeout(timeout);
//! }
//! poll_freewait(&table);                     /* remove every wait-queue entry */
//! ```
//!
//! So a call costs `poll_base_ns + nfds × poll_per_fd_ns + ready × poll_per_ready_ns` in
//! simulated time, plus `nfds × poll_wait_per_fd_ns` when it may block (the first pass puts the
//! thread on every socket's wait queue, whatever it finds ready, and `poll_freewait` takes it
//! off). A blocked poll() is woken by any of its sockets becoming ready (or by a wake-up that
//! finds nothing, after which it scans again) and scans all `nfds` again.
//!
//! In wall time a call costs O(changes + ready): the host keeps each thread's set (applying the
//! program's pollfd changes since its last call) and a list of the sockets that may be ready,
//! which the protocol feeds as things happen (`net/ipv4/endpoint.rs`, `ep_poke`); nothing iterates the
//! thousands of idle descriptors.
//!
//! The ready descriptors a call reports are those ready when its scan starts; what becomes ready
//! during the scan is found by the next call (or, if this one blocks, wakes it at once, as the
//! task state set before the scan makes the kernel's `schedule_timeout` return immediately).

use crate::kernel::app_state::AppPending;
use crate::kernel::task::{Pending, ProcState};
use crate::sim::*;
use crate::types::*;
use hostsim_workload::PollEvent;

/// The simulated cost of one poll() call over `nfds` descriptors of which `ready` are returned
/// (module documentation): linear in both, plus the wait-queue pass when it may block.
pub fn poll_cost(syscall_ns: u64, sc: &crate::config::SyscallCosts, nfds: u64, ready: u64, blocking: bool) -> u64 {
    let per_fd = sc.poll_per_fd_ns + if blocking { sc.poll_wait_per_fd_ns } else { 0 };
    syscall_ns + sc.poll_base_ns + nfds * per_fd + ready * sc.poll_per_ready_ns
}

impl<M: Mechanisms> Host<M> {
    /// The program's pollfd array changed since the last call: apply it to thread `t`'s set.
    fn apply_changes(&mut self, cpu: usize, a: usize, t: usize) -> u32 {
        let set = self.apps[a].sets[t];
        let changes = self.apps[a].accel.take_changes(t);
        for &(fd, events) in &changes {
            let ep = self.apps[a].fd_ep(fd);
            if ep != NONE {
                self.ep_watch(cpu, ep, set, events);
            }
        }
        self.apps[a].accel.return_changes(t, changes);
        set
    }

    /// `conn_list = "with_work"` (`hostsim_workload::ConnList`): `prepare_conn_list` gathers the
    /// thread's connections that have work now into its list. Cost: a system call, poll()'s
    /// per-call cost and its per-descriptor cost for each connection found (2.5.17 had no
    /// epoll; how Chamomile gathered them is not published). With a negative timeout (no
    /// interval control) it blocks until one has work, with no per-descriptor wait-queue pass.
    pub fn app_gather(&mut self, cpu: usize, pid: Pid, timeout_ms: i32) -> Option<(CpuState, u64)> {
        let (a, t) = self.app_of(pid);
        let set = self.apply_changes(cpu, a, t);
        let n = self.gather_collect(a, t, set);
        let sc = self.syscall_costs();
        let cost = self.cfg.profile.costs.syscall_ns + sc.poll_base_ns + u64::from(n) * sc.poll_per_fd_ns;
        self.procs[pid as usize].pending =
            Pending::App(if timeout_ms != 0 { AppPending::GatherPass { n } } else { AppPending::Gathered { n } });
        Some((CpuState::System, cost))
    }

    /// A gathering that may block has found `n`: return it, or gather again if something got
    /// work meanwhile, or block until something does.
    pub fn gather_pass_done(&mut self, pid: Pid, n: u32) -> Result<u32, Option<(CpuState, u64)>> {
        if n > 0 {
            return Ok(n);
        }
        let (a, t) = self.app_of(pid);
        let set = self.apps[a].sets[t] as usize;
        if !self.net.eps.sets[set].ready.is_empty() {
            return Err(self.gather_rescan(pid));
        }
        self.net.eps.sets[set].waiter = pid;
        let p = &mut self.procs[pid as usize];
        p.state = ProcState::BlockedRecv;
        p.pending = Pending::App(AppPending::GatherWait);
        Err(None)
    }

    /// Gather again after a wake-up.
    pub fn gather_rescan(&mut self, pid: Pid) -> Option<(CpuState, u64)> {
        let (a, t) = self.app_of(pid);
        let set = self.apps[a].sets[t];
        let n = self.gather_collect(a, t, set);
        let cost = u64::from(n) * self.syscall_costs().poll_per_fd_ns;
        self.procs[pid as usize].pending = Pending::App(AppPending::GatherPass { n });
        Some((CpuState::System, cost))
    }

    /// The endpoints of set `set` with work now into thread `t`'s list; the others leave the
    /// set's ready list. Returns how many.
    fn gather_collect(&mut self, a: usize, t: usize, set: u32) -> u32 {
        let s = set as usize;
        let mut ready = std::mem::take(&mut self.net.eps.sets[s].ready);
        let mut list = std::mem::take(&mut self.apps[a].lists[t]);
        list.clear();
        ready.retain(|&ep| {
            let live = self.ep_revents(ep) != 0;
            if live {
                list.push(ep);
            } else {
                self.net.eps.eps[ep as usize].in_ready = false;
            }
            live
        });
        self.net.eps.sets[s].ready = ready;
        let n = list.len() as u32;
        self.apps[a].lists[t] = list;
        n
    }

    /// poll() by thread `pid` of an event-driven program over its set (or, with `conn_list =
    /// "with_work"`, over its gathered list).
    pub fn app_poll(&mut self, cpu: usize, pid: Pid, timeout_ms: i32) -> Option<(CpuState, u64)> {
        let (a, t) = self.app_of(pid);
        let set = self.apply_changes(cpu, a, t);
        if self.apps[a].accel.config().conn_list == hostsim_workload::ConnList::WithWork {
            return self.list_poll(a, t, pid);
        }
        let ready = self.poll_collect(a, t, set);
        let sc = self.syscall_costs();
        let n = u64::from(self.net.eps.sets[set as usize].nfds);
        let blocking = timeout_ms != 0;
        let cost = poll_cost(self.cfg.profile.costs.syscall_ns, sc, n, u64::from(ready), blocking);
        self.stats.polls += 1;
        self.procs[pid as usize].pending =
            Pending::App(if blocking { AppPending::PollPass { ready } } else { AppPending::Polled { ready } });
        Some((CpuState::System, cost))
    }

    /// `with_work`: a non-blocking poll() over the thread's gathered list: what of it is ready
    /// now goes into the poll buffer; it costs the list's length in descriptors.
    fn list_poll(&mut self, a: usize, t: usize, pid: Pid) -> Option<(CpuState, u64)> {
        let list = std::mem::take(&mut self.apps[a].lists[t]);
        let mut out = std::mem::take(self.apps[a].accel.poll_buffer(t));
        out.clear();
        for &ep in &list {
            let revents = self.ep_revents(ep);
            if revents != 0 {
                out.push(PollEvent { fd: self.net.eps.eps[ep as usize].fd, revents });
            }
        }
        let (n, ready) = (list.len() as u64, out.len() as u32);
        *self.apps[a].accel.poll_buffer(t) = out;
        self.apps[a].lists[t] = list;
        let sc = self.syscall_costs();
        let cost = poll_cost(self.cfg.profile.costs.syscall_ns, sc, n, u64::from(ready), false);
        self.stats.polls += 1;
        self.procs[pid as usize].pending = Pending::App(AppPending::Polled { ready });
        Some((CpuState::System, cost))
    }

    /// A pass of a poll() that may block has ended: return what it found, or scan again if
    /// something became ready meanwhile, or block until something does.
    pub fn poll_pass_done(&mut self, pid: Pid, ready: u32) -> Result<u32, Option<(CpuState, u64)>> {
        if ready > 0 {
            return Ok(ready);
        }
        let (a, t) = self.app_of(pid);
        let set = self.apps[a].sets[t] as usize;
        if !self.net.eps.sets[set].ready.is_empty() {
            return Err(self.poll_rescan(pid));
        }
        self.net.eps.sets[set].waiter = pid;
        let p = &mut self.procs[pid as usize];
        p.state = ProcState::BlockedRecv;
        p.pending = Pending::App(AppPending::PollWait);
        Err(None)
    }

    /// Scan the whole set again (after a wake-up, or events during the first pass).
    pub fn poll_rescan(&mut self, pid: Pid) -> Option<(CpuState, u64)> {
        let (a, t) = self.app_of(pid);
        let set = self.apps[a].sets[t];
        let ready = self.poll_collect(a, t, set);
        let sc = self.syscall_costs();
        let n = u64::from(self.net.eps.sets[set as usize].nfds);
        let cost = n * sc.poll_per_fd_ns + u64::from(ready) * sc.poll_per_ready_ns;
        self.procs[pid as usize].pending = Pending::App(AppPending::PollPass { ready });
        Some((CpuState::System, cost))
    }

    /// The ready descriptors of set `set` into thread `t`'s poll buffer; sockets no longer
    /// ready leave the ready list. Returns how many.
    fn poll_collect(&mut self, a: usize, t: usize, set: u32) -> u32 {
        let s = set as usize;
        let mut list = std::mem::take(&mut self.net.eps.sets[s].ready);
        let mut out = std::mem::take(self.apps[a].accel.poll_buffer(t));
        out.clear();
        let mut keep = 0;
        for i in 0..list.len() {
            let ep = list[i];
            let revents = self.ep_revents(ep);
            if revents != 0 {
                out.push(PollEvent { fd: self.net.eps.eps[ep as usize].fd, revents });
                list[keep] = ep;
                keep += 1;
            } else {
                self.net.eps.eps[ep as usize].in_ready = false;
            }
        }
        list.truncate(keep);
        let n = out.len() as u32;
        self.net.eps.sets[s].ready = list;
        *self.apps[a].accel.poll_buffer(t) = out;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::poll_cost;
    use crate::config::Profile;

    /// The PIII 800 profile's poll(): linear in the descriptor count (each descriptor costs the
    /// same whatever the set's size), blocking adds the wait-queue pass per descriptor, ready
    /// descriptors add their own (here 0) cost.
    #[test]
    fn poll_cost_is_linear_in_descriptors() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/pentium3-800.toml")).unwrap();
        let p: Profile = toml::from_str(&text).unwrap();
        let sc = p.syscalls.as_ref().expect("pentium3-800 has [syscalls]");
        let c = |n: u64, ready: u64, blocking: bool| poll_cost(p.costs.syscall_ns, sc, n, ready, blocking) as i64;
        let step = c(1000, 0, false) - c(0, 0, false);
        for n in [1u64, 10, 100, 1000, 7000, 10_000] {
            assert_eq!(c(n, 0, false) - c(0, 0, false), step * n as i64 / 1000, "{n} descriptors");
            assert_eq!(c(n, 0, true) - c(n, 0, false), (n * sc.poll_wait_per_fd_ns) as i64);
        }
        assert_eq!(step, 1000 * sc.poll_per_fd_ns as i64);
        assert_eq!(c(0, 0, false), (p.costs.syscall_ns + sc.poll_base_ns) as i64);
        assert_eq!(c(7000, 50, false) - c(7000, 0, false), (50 * sc.poll_per_ready_ns) as i64);
        // 7,000 descriptors on the PIII 800: ~5.8 ms a scan (Kegel's 10,000 at 14.7 ms on a PIII 650).
        assert!((5_000_000..7_000_000).contains(&c(7000, 0, false)), "{}", c(7000, 0, false));
    }
}
