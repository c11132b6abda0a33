//! Interrupt throttle rate per vector: fixed (`nic.itr_mode = "fixed"`, `itr_ints_per_s`), or
//! Linux 3.2 ixgbe's dynamic ITR (`"ixgbe_dynamic"`, the driver's default).
//!
//! Rules, all from Linux 3.2.7 `drivers/net/ethernet/intel/ixgbe/`:
//! - `ixgbe_sw_init`: `rx_itr_setting = 1` and `tx_itr_setting = 1` ("enable itr by default in
//!   dynamic mode"), `eitr_low = 10`, `eitr_high = 20` (bytes per microsecond).
//! - `ixgbe_configure_msix`: a vector with an RX ring starts at `IXGBE_20K_ITR`.
//! - ixgbe.h: the register values are "microsecond values ... shifted by 2": `IXGBE_100K_ITR`
//!   40 (10 us), `IXGBE_20K_ITR` 200 (50 us), `IXGBE_8K_ITR` 500 (125 us); the interval a value
//!   gives is taken as the driver takes it (`timepassed_us = q_vector->itr >> 2`).
//! - `ixgbe_poll`: after `napi_complete`, `if (adapter->rx_itr_setting & 1) ixgbe_set_itr()`:
//!   only a poll that finished its work updates the rate; the byte and packet counts of polls
//!   that used their whole budget accumulate until then.
//! - `ixgbe_update_itr`, for the vector's TX and RX ring containers: nothing if no packets;
//!   `bytes_perint = bytes / timepassed_us`; the class moves one step: lowest → low above
//!   `eitr_low`; low → bulk above `eitr_high`, low → lowest at or below `eitr_low`; bulk → low
//!   at or below `eitr_high`; the counts are cleared. Containers start at class 0
//!   (`lowest_latency`: the q_vector is zeroed at allocation).
//! - `ixgbe_set_itr`: the vector's class is the larger of its TX and RX classes; its target is
//!   100K/20K/8K; a change is smoothed, `new = 10 * new * old / (9 * new + old)`, masked with
//!   `IXGBE_MAX_EITR` (0xFF8), and written (`ixgbe_write_eitr`: on the 82599 with `CNT_WDIS`, so
//!   the running interval is not restarted).

pub const IXGBE_100K_ITR: u32 = 40;
pub const IXGBE_20K_ITR: u32 = 200;
pub const IXGBE_8K_ITR: u32 = 500;
pub const IXGBE_MAX_EITR: u32 = 0x0FF8;
/// `adapter->eitr_low`, `adapter->eitr_high`: bytes per microsecond.
pub const EITR_LOW: u64 = 10;
pub const EITR_HIGH: u64 = 20;

/// `enum latency_range` of ixgbe_main.c.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Latency {
    #[default]
    Lowest = 0,
    Low = 1,
    Bulk = 2,
}

/// `struct ixgbe_ring_container`'s ITR part: bytes and packets since the last update, and the
/// container's class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingContainer {
    pub total_bytes: u64,
    pub total_packets: u64,
    pub itr: Latency,
}

/// One vector's dynamic ITR state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynItr {
    /// `q_vector->itr`: the register value (interval in microseconds << 2).
    pub itr: u32,
    pub rx: RingContainer,
    pub tx: RingContainer,
}

impl Default for DynItr {
    fn default() -> Self {
        DynItr { itr: IXGBE_20K_ITR, rx: RingContainer::default(), tx: RingContainer::default() }
    }
}

/// `ixgbe_update_itr`.
fn update_itr(itr_reg: u32, rc: &mut RingContainer) {
    if rc.total_packets == 0 {
        return;
    }
    let timepassed_us = u64::from(itr_reg >> 2).max(1);
    let bytes_perint = rc.total_bytes / timepassed_us;
    rc.itr = match rc.itr {
        Latency::Lowest if bytes_perint > EITR_LOW => Latency::Low,
        Latency::Low if bytes_perint > EITR_HIGH => Latency::Bulk,
        Latency::Low if bytes_perint <= EITR_LOW => Latency::Lowest,
        Latency::Bulk if bytes_perint <= EITR_HIGH => Latency::Low,
        same => same,
    };
    rc.total_bytes = 0;
    rc.total_packets = 0;
}

impl DynItr {
    /// `ixgbe_set_itr`, at a `napi_complete`. Returns true if the register changed.
    pub fn set_itr(&mut self) -> bool {
        update_itr(self.itr, &mut self.tx);
        update_itr(self.itr, &mut self.rx);
        let target = match self.rx.itr.max(self.tx.itr) {
            Latency::Lowest => IXGBE_100K_ITR,
            Latency::Low => IXGBE_20K_ITR,
            Latency::Bulk => IXGBE_8K_ITR,
        };
        if target == self.itr {
            return false;
        }
        let (new, old) = (u64::from(target), u64::from(self.itr));
        let smoothed = (10 * new * old / (9 * new + old)) as u32;
        self.itr = smoothed & IXGBE_MAX_EITR;
        true
    }

    /// The minimum interval between the vector's interrupts, in ns.
    pub fn interval_ns(&self) -> u64 {
        u64::from(self.itr >> 2) * 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn poll(d: &mut DynItr, rx_bytes: u64, rx_pkts: u64) {
        d.rx.total_bytes += rx_bytes;
        d.rx.total_packets += rx_pkts;
        d.set_itr();
    }

    #[test]
    fn the_register_settles_where_the_drivers_arithmetic_puts_it() {
        let mut d = DynItr::default();
        assert_eq!(d.interval_ns(), 50_000);
        // ~104 MB/s on this vector (10 Gbit/s over 12 queues): bulk. The smoothing, masked with
        // 0xFF8, stops short of IXGBE_8K_ITR: 10*500*408/(9*500+408) = 415.6, & 0xFF8 = 408.
        for _ in 0..200 {
            let us = u64::from(d.itr >> 2);
            poll(&mut d, 104 * us, 1 + 104 * us / 1500);
        }
        assert_eq!(d.rx.itr, Latency::Bulk);
        assert_eq!(d.itr, 408);
        // One small frame per interval: lowest latency, and the register walks down to 40.
        for _ in 0..200 {
            poll(&mut d, 64, 1);
        }
        assert_eq!(d.rx.itr, Latency::Lowest);
        assert_eq!(d.itr, IXGBE_100K_ITR);
        // From 40 no class moves it: 10*500*40/(9*500+40) = 44.05, & 0xFF8 = 40. A vector that
        // has once been at lowest latency stays at 100,000 interrupts/s under any load.
        for _ in 0..200 {
            let us = u64::from(d.itr >> 2);
            poll(&mut d, 104 * us, 1 + 104 * us / 1500);
        }
        assert_eq!(d.rx.itr, Latency::Bulk);
        assert_eq!(d.itr, IXGBE_100K_ITR);
    }

    #[test]
    fn no_packets_leaves_the_classes_and_counts_alone() {
        let mut d = DynItr::default();
        let before = (d.rx, d.tx);
        d.set_itr();
        assert_eq!((d.rx, d.tx), before);
    }

    #[test]
    fn the_smoothing_is_the_drivers() {
        // From 20K (200) towards 8K (500): 10*500*200/(9*500+200) = 212.7 -> 212 & 0xFF8 = 208.
        let mut d = DynItr { rx: RingContainer { itr: Latency::Bulk, ..Default::default() }, ..Default::default() };
        d.rx.total_packets = 1;
        d.rx.total_bytes = 1_000_000;
        assert!(d.set_itr());
        assert_eq!(d.itr, 208);
    }

    proptest! {
        /// The rules: the class moves at most one step per update, the register stays within
        /// 100K..8K once there, and its value always has the low 3 bits clear.
        #[test]
        fn one_step_per_update_and_the_register_stays_in_range(
            polls in proptest::collection::vec((0u64..200_000, 0u64..200), 1..400)
        ) {
            let mut d = DynItr::default();
            for &(bytes, pkts) in &polls {
                let before = d.rx.itr as i32;
                d.rx.total_bytes += bytes;
                d.rx.total_packets += pkts;
                d.set_itr();
                prop_assert!((d.rx.itr as i32 - before).abs() <= 1);
                prop_assert_eq!(d.itr & 7, 0);
                prop_assert!(d.itr >= IXGBE_100K_ITR - 8 && d.itr <= IXGBE_8K_ITR, "{}", d.itr);
                if pkts > 0 {
                    prop_assert_eq!(d.rx.total_packets, 0);
                }
            }
        }
    }
}
