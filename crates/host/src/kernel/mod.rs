//! The core kernel (Linux `kernel/`): CPUs and their execution contexts, tasks and the system
//! calls of the programs they run, interrupt routing, the scheduler, locking and timers.
//!
//! - `cpu`: a CPU's state: its frames of execution, time by state, softnet data and run queues.
//! - `context`: nested execution contexts (hard IRQ > softirq > process) with preemption and
//!   exact time accounting per CPU state (Linux `kernel/softirq.c`'s irq_exit,
//!   `kernel/sched/cputime.c`).
//! - `task`: a task's state (`task_struct`) and the tasks a host boots with.
//! - `process`: a program's actions executed with their kernel semantics and costs.
//! - `app`, `app_state`: multi-threaded programs (paper 004's accelerator): their threads'
//!   system calls and the program's descriptor table, pipes and poll sets.
//! - `irq/`: which CPU a device interrupt goes to (fixed, masks, 2.4's balance_irq, MSI-X).
//! - `sched/`: the scheduler of each era (2.4 O(1), CFS 3.2, CFS 6.x), placement and wake-up.
//! - `locking/`: how one kernel runs on several CPUs (fine-grained SMP, uniprocessor, one big
//!   kernel lock) and the gate that makes a CPU spin for the lock.
//! - `time/`: nanosleep() as each era's timer rounded it.

pub mod app;
pub mod app_state;
pub mod context;
pub mod cpu;
pub mod irq;
pub mod locking;
pub mod process;
pub mod sched;
pub mod task;
pub mod time;
