//! Unit tests that need a whole `Host` (built by `util`): the packet slab's TCP side table, and
//! wake-up placement cases.

mod balance_irq;
mod packet;
pub mod util;
mod wake;
