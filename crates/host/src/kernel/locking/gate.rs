//! The hub side of the kernel concurrency models' locks (`kernel/locking/spinlock.rs`): before a CPU runs
//! its top frame, `start_top` asks [`Host::lock_gate`] whether the frame needs the model's lock
//! (the big kernel lock for every kernel-context unit under `bkl`, Symbiose's global-queue lock
//! for an exchange under `functional`). A CPU holds the lock while any frame of its stack needs
//! it, so an interrupt nested in a kernel unit runs on (Linux 2.0's `kernel_counter` nesting) and
//! the lock is released when the CPU returns to user mode or idles; the first spinning CPU then
//! takes it. A CPU that needs the lock while another holds it spins: state `spin`, nothing runs
//! until the lock is handed to it, and an interrupt that arrives meanwhile preempts the spin
//! (and spins itself, if it needs the lock too).

use crate::kernel::cpu::{Frame, Work};
use crate::kernel::locking::spinlock::SpinLock;
use crate::kernel::locking::spinlock::{Acquire, Context};
use crate::policies::Concurrency;
use crate::sim::*;
use crate::types::*;

impl<M: Mechanisms> Host<M> {
    /// Extra entry cost of a device interrupt under the concurrency model (`bkl`: the SMP
    /// kernel's IO-APIC path, `bkl_irq_entry_ns`; 0 otherwise).
    #[inline]
    pub(crate) fn smp_irq_entry_ns(&self) -> u64 {
        if self.cfg.kernel.concurrency.is("bkl") {
            self.cfg.profile.mechanisms.bkl_irq_entry_ns
        } else {
            0
        }
    }

    /// The locking context of frame `f` of `cpu`.
    fn frame_context(&self, cpu: usize, f: &Frame) -> Context {
        match f.level() {
            Level::Hardirq | Level::Softirq => Context::Kernel,
            Level::Process => {
                if f.work == Work::ProcUnit {
                    let exchange =
                        self.cpus[cpu].curr.is_some_and(|p| self.mech.unit_locked(self.procs[p as usize].pending));
                    if exchange {
                        return Context::Exchange;
                    }
                }
                if f.state == CpuState::User {
                    Context::User
                } else {
                    Context::Kernel
                }
            }
        }
    }

    /// The kernel's lock: the big kernel lock, or the mechanisms' model's (paper 003).
    pub fn kernel_lock(&self) -> Option<&SpinLock> {
        match &self.conc {
            Concurrency::Bkl(l) => Some(l),
            Concurrency::Mech => self.mech.lock(),
            Concurrency::Smp | Concurrency::Up => None,
        }
    }

    fn kernel_lock_mut(&mut self) -> Option<&mut SpinLock> {
        match &mut self.conc {
            Concurrency::Bkl(l) => Some(l),
            Concurrency::Mech => self.mech.lock_mut(),
            Concurrency::Smp | Concurrency::Up => None,
        }
    }

    /// Does a unit of context `ctx` need the kernel's lock?
    fn needs_lock(&self, ctx: Context) -> bool {
        match &self.conc {
            Concurrency::Mech => self.mech.needs_lock(ctx),
            c => c.bkl_needs_lock(ctx),
        }
    }

    /// May `cpu` run its top frame now? `Some(ns)`: yes, `ns` being the cost of taking the lock
    /// (0 if none is needed or this CPU holds it); `None`: it must spin. Releases the lock when
    /// no frame of the stack needs it any more and starts the first waiter.
    pub fn lock_gate(&mut self, cpu: usize) -> Option<u64> {
        if self.kernel_lock().is_none() {
            return Some(0);
        }
        let top_needs = self.cpus[cpu].stack.last().is_some_and(|f| self.needs_lock(self.frame_context(cpu, f)));
        if top_needs {
            let lock = self.kernel_lock_mut().expect("a model with a lock");
            return match lock.try_acquire(cpu) {
                Acquire::Held => Some(0),
                Acquire::Acquired { cost_ns } => Some(cost_ns),
                Acquire::Busy => {
                    lock.wait(cpu);
                    None
                }
            };
        }
        if self.kernel_lock().and_then(|l| l.owner()) == Some(cpu) {
            let stack_needs = self.cpus[cpu].stack.iter().any(|f| self.needs_lock(self.frame_context(cpu, f)));
            if !stack_needs {
                let next = self.kernel_lock_mut().expect("a model with a lock").release(cpu);
                if let Some(w) = next {
                    debug_assert!(self.cpus[w].spinning, "lock handed to CPU {w} that is not spinning");
                    self.cpus[w].spinning = false;
                    self.trace_end_spin(w);
                    self.start_top(w);
                }
            }
        }
        Some(0)
    }

    /// `cpu`'s top frame waits for the lock: it spins (accounted `spin`) until handed the lock.
    pub fn spin(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        c.spinning = true;
        c.acct_state = CpuState::Spin;
        c.done.cancel();
        self.trace_begin_spin(cpu);
    }

    /// Trace: the spin shows as a slice of its own (the waiting unit's label, state `spin`)
    /// nested in the unit that waits, so a trace tells spinning from kernel work.
    fn trace_begin_spin(&mut self, cpu: usize) {
        if self.trace.is_some() {
            let depth = self.cpus[cpu].stack.len() + 1;
            let f = *self.cpus[cpu].stack.last().expect("a spinning CPU has a frame");
            let label = self.trace_label(cpu, f.work);
            let now = self.now();
            if let Some(t) = self.trace.as_mut() {
                t.begin(cpu, depth, now, label, CpuState::Spin as u8);
            }
        }
    }

    fn trace_end_spin(&mut self, cpu: usize) {
        let now = self.now();
        if let Some(tr) = self.trace.as_mut() {
            tr.end(cpu, self.cpus[cpu].stack.len() + 1, now);
        }
    }

    /// A spinning CPU is taken away from its spin (an interrupt, or the scheduler).
    pub fn stop_spin(&mut self, cpu: usize) {
        self.account(cpu);
        self.cpus[cpu].spinning = false;
        self.trace_end_spin(cpu);
        if let Some(l) = self.kernel_lock_mut() {
            l.cancel_wait(cpu);
        }
    }
}
