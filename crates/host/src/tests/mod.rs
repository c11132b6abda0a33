//! Unit tests that need a whole `Host` (built by `util`): the packet slab's TCP side table,
//! wake-up placement cases, the XDP CPU map on a router, and paced sources.

mod balance_irq;
mod cpumap;
mod packet;
mod paced;
pub mod util;
mod wake;
