//! The tick and `jiffies` (Linux `include/linux/jiffies.h`): simulated time counted in ticks of
//! `kernel.hz`, as the eras' timers, sleeps, the O(1) scheduler's credits and TCP's timestamps
//! read it.

use crate::hooks::Mechanisms;
use crate::sim::Host;

impl<M: Mechanisms> Host<M> {
    /// A tick (a jiffy), in ns.
    #[inline]
    pub fn tick_ns(&self) -> u64 {
        self.cfg.kernel.tick_ns()
    }

    /// Ticks since boot.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        self.now().ns() / self.tick_ns()
    }
}
