//! The idle soaker (`hostsim live-worker kawai-soak`): a SCHED_IDLE thread that spins on the
//! server's CPU, in the run's CPU group, so that the time the experiment leaves unused on that
//! CPU is *measured* (its run time) instead of being taken by whatever else the shared machine
//! runs. SCHED_IDLE: any other task of the group (the accelerator's SCHED_OTHER listen thread, a
//! loop thread back from its sleep) preempts it at once on wake-up, and SCHED_FIFO always does;
//! the group's weight keeps the machine's other work off the CPU meanwhile, as an idle CPU would
//! not. What it changes: the CPU never halts, so a wake-up does not pay a VM's halt exit (as
//! with any other work on that CPU). The server's CPU = window − the soaker's run time − others'.

use super::os::marks;
use std::time::{Duration, Instant};

/// Spin at SCHED_IDLE until SIGTERM or `secs`.
pub fn run(secs: f64) -> std::io::Result<()> {
    marks::install(None);
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: the calling thread; valid parameter.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut spins: u64 = 0;
    while !marks::stopped() {
        for _ in 0..10_000 {
            spins = std::hint::black_box(spins.wrapping_add(1));
            std::hint::spin_loop();
        }
        if Instant::now() >= end {
            break;
        }
    }
    println!("{}", serde_json::json!({ "spins": spins }));
    Ok(())
}
