//! The kernel threads the functional split adds to each CPU's OS, created when the host boots.

use crate::kernel::task::{Pending, Proc, ProcState};
use crate::mechanisms::takeuchi_symbiose::SymbioseThread;
use crate::types::*;
use hostsim_engine::RngStreams;

/// Each OS's polling and bulk-send threads (paper 003 Fig. 2), above everything else, and its
/// stage thread just below them (notes 003 §6.10): kernel threads pinned to their CPU.
pub fn spawn_symbiose_threads(ncpu: usize, procs: &mut Vec<Proc>, streams: &RngStreams) {
    for c in 0..ncpu as u32 {
        let threads = [
            (SymbioseThread::Poll, "symbiose-poll", 99),
            (SymbioseThread::Send, "symbiose-send", 99),
            (SymbioseThread::Stages, "symbiose-stage", 98),
        ];
        for (op, name, prio) in threads {
            let mut t = Proc::new(
                format!("{name}/{c}"),
                None,
                NONE,
                0,
                Some(prio),
                1u128 << c,
                c,
                streams.stream(&format!("{name}/{c}")),
            );
            t.pinned_kthread = true;
            t.symbiose = Some(op);
            t.state = ProcState::Sleeping;
            t.pending = Pending::Slept;
            procs.push(t);
        }
    }
}
