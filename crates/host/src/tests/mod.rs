//! Unit tests that need a whole `Host` (built by `util`): the packet slab's TCP side table,
//! wake-up placement cases, and the XDP CPU map on a router.

mod balance_irq;
mod cpumap;
mod packet;
pub mod util;
mod wake;
