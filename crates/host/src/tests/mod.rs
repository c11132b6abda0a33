//! Unit tests that need a whole `Host` (built by `util`): the packet slab's TCP side table,
//! wake-up placement cases, the XDP CPU map on a router, threaded NAPI with its suppression,
//! interrupt suppression at context switch, and paced sources.

mod balance_irq;
mod cpumap;
mod napi_thread;
mod paced;
mod packet;
mod suppress;
pub mod util;
mod wake;
