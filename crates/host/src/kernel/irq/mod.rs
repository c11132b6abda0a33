//! Interrupt routing (Linux `kernel/irq/`, and `arch/i386/kernel/io_apic.c` for 2.4's
//! `balance_irq`).
//!
//! - `route`: the `IrqRouter` policies: fixed CPU, affinity mask, balance_irq, MSI-X per queue.

pub mod route;
