//! Interrupt suppression at context switch (`ozaki-pbq`, paper 000 §3.3; `kernel.irq_suppression`).
//!
//! In `schedule()`, when the incoming process waits on a socket whose buffer is over half full,
//! the receive path is in its high-load state (some CPU's backlog is throttled / in PBQ mode),
//! and a draw weighted by the process's priority succeeds (probability (level + 1) / 40, so
//! nice −19 almost always, nice 19 almost never), the CPU is taken out of every NIC queue's IRQ
//! affinity, so the IRQ router sends interrupts elsewhere while the process drains its socket.
//! At the CPU's next context switch the conditions are checked again and the CPU restored if
//! they no longer hold. Linux refuses an empty IRQ affinity, so a CPU is never suppressed if
//! that would leave some queue with no CPU at all.
//!
//! Hook: `Mechanism::context_switch` (what a switch costs beyond Linux's). It reads the
//! backlogs' high-load state, the incoming task's socket and nice value, and writes the NIC
//! queues' IRQ affinity, through the host handle.

use crate::hooks::{part, Packets, Part, Project, Reach, Tasks};
use crate::types::*;
use hostsim_engine::Rng;

/// The rule's state: which CPUs are out of the IRQ affinity, the draws, the costs.
pub struct Suppress {
    pub on: bool,
    /// CPUs currently taken out of the NICs' IRQ affinity.
    suppressed: u128,
    /// The draws weighted by priority (stream `irq-suppression`).
    rng: Rng,
    /// The check at every context switch, and rewriting one queue's IRQ affinity (profile
    /// `[mechanisms]` `irq_suppress_check_ns`, `irq_affinity_write_ns`).
    check_ns: u64,
    write_ns: u64,
    /// CPUs taken out of the IRQ affinity (suppressions), and at the end of the warm-up.
    pub count: u64,
    pub warm_count: u64,
}

impl Suppress {
    pub fn new(on: bool, check_ns: u64, write_ns: u64, rng: Rng) -> Suppress {
        Suppress { on, suppressed: 0, rng, check_ns, write_ns, count: 0, warm_count: 0 }
    }
}

/// The context-switch hook: returns the extra ns the switch costs.
pub fn context_switch<S: Part<Suppress>, M: Project<S>, H: Reach<M> + Tasks + Packets>(
    h: &mut H,
    cpu: usize,
    next: Option<Pid>,
) -> u64 {
    let s = part::<Suppress, S, M>(h);
    if !s.on {
        return 0;
    }
    let (check, write) = (s.check_ns, s.write_ns);
    let high_load = h.backlog_high_load_any();
    let want = match next {
        Some(pid) if high_load => {
            let over_half = h.task_sock_fill(pid).is_some_and(|(used, rcvbuf)| u64::from(used) * 2 > u64::from(rcvbuf));
            let prob = f64::from(level_of_nice(h.task_nice(pid)) + 1) / LEVELS as f64;
            over_half && part::<Suppress, S, M>(h).rng.chance(prob)
        }
        _ => false,
    };
    let bit = 1u128 << cpu;
    let suppressed = part::<Suppress, S, M>(h).suppressed;
    if want == (suppressed & bit != 0) {
        return check;
    }
    let new = if want { suppressed | bit } else { suppressed & !bit };
    if want && h.irq_affinity_empties(new) {
        return check; // it would mask every CPU of some queue
    }
    let s = part::<Suppress, S, M>(h);
    s.suppressed = new;
    if want {
        s.count += 1;
    }
    h.irq_mask_cpus(new);
    check + write * h.irq_queues() as u64
}
