//! Kernel locking (Linux `kernel/locking/`): how one kernel runs on several CPUs.
//!
//! - `spinlock`: the lock (a spin lock with its acquisition and transfer costs) and the
//!   baseline concurrency models: fine-grained SMP, uniprocessor, one big kernel lock.
//! - `gate`: the hub side: before a CPU runs its top frame it asks whether the frame needs the
//!   model's lock, and spins if another CPU holds it.

pub mod gate;
pub mod spinlock;
