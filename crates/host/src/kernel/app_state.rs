//! State of a multi-threaded program in the host (`kernel/app.rs` runs its system calls): the
//! program's state machine, its threads' poll sets and pipes, its descriptor table. Pure data:
//! this module does not import the `Host` hub.

use crate::types::*;
use hostsim_workload::Accel;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a thread's current system call will report when its unit completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppPending {
    Computed,
    Time,
    SchedSet {
        fifo: Option<u8>,
    },
    Yielded,
    /// A pass of a poll() that may block.
    PollPass {
        ready: u32,
    },
    /// A non-blocking poll().
    Polled {
        ready: u32,
    },
    /// Blocked in poll(): scan again when woken.
    PollWait,
    /// `conn_list = "with_work"`: a gathering that may block, one that does not, a blocked one.
    GatherPass {
        n: u32,
    },
    Gathered {
        n: u32,
    },
    GatherWait,
    /// Blocked in accept(): try again when woken.
    AcceptWait,
    Accepted {
        fd: u32,
    },
    Read {
        bytes: u32,
        tag: u64,
        eof: bool,
    },
    Wrote {
        bytes: u32,
        ep: u32,
        tx: u32,
    },
    Closed {
        fd: u32,
    },
    Notified {
        thread: u32,
    },
}

/// A multi-threaded program in the host.
pub struct App {
    pub accel: Accel,
    /// Its `[[process]]` entry.
    pub group: u32,
    pub threads: Vec<Pid>,
    /// Each thread's poll set (NONE for threads that do not poll) and notification pipe.
    pub sets: Vec<u32>,
    pub pipes: Vec<u32>,
    /// `conn_list = "with_work"`: each thread's list (endpoints with work at its last gathering),
    /// which its next poll() covers.
    pub lists: Vec<Vec<u32>>,
    /// Descriptor table: fd → endpoint (NONE: free), lowest free descriptor first.
    pub fds: Vec<u32>,
    pub free_fds: BinaryHeap<Reverse<u32>>,
    pub listener: u32,
    /// Counters at the end of warm-up (for windowed metrics).
    pub warm: Option<hostsim_workload::AccelStats>,
}

impl App {
    pub fn fd_ep(&self, fd: u32) -> u32 {
        self.fds.get(fd as usize).copied().unwrap_or(NONE)
    }

    pub fn alloc_fd(&mut self, ep: u32) -> u32 {
        match self.free_fds.pop() {
            Some(Reverse(fd)) => {
                self.fds[fd as usize] = ep;
                fd
            }
            None => {
                self.fds.push(ep);
                (self.fds.len() - 1) as u32
            }
        }
    }

    pub fn free_fd(&mut self, fd: u32) {
        self.fds[fd as usize] = NONE;
        self.free_fds.push(Reverse(fd));
    }
}
