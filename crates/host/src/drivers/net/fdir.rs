//! Intel 82599 Flow Director in ATR mode (Application Targeted Routing), as the ixgbe driver of
//! Linux 3.2 runs it by default (`nic.fdir_atr_sample_rate`): the driver samples the host's own
//! transmitted TCP frames and programs a receive filter that steers the flow's *incoming* frames
//! to the RX queue paired with the TX ring it sent on.
//!
//! Rules, all from Linux 3.2.7 `drivers/net/ethernet/intel/ixgbe/`:
//! - `ixgbe_sw_init` (ixgbe_main.c): on the 82599 `IXGBE_FLAG_FDIR_HASH_CAPABLE` and
//!   `atr_sample_rate = 20`; `fdir_pballoc = IXGBE_FDIR_PBALLOC_64K`.
//! - `ixgbe_atr` (ixgbe_main.c), called for every frame from `ixgbe_xmit_frame_ring` on a ring
//!   whose `__IXGBE_TX_FDIR_INIT_DONE` is set: `ring->atr_count++` for *every* frame on the ring
//!   (any protocol, any flow: the count is per transmit ring, not per flow); then only TCP
//!   (IPv4/IPv6) and not FIN; a frame is sampled if it is a SYN or `atr_count >= atr_sample_rate`;
//!   a sample resets the count and adds a signature filter for the flow (addresses and ports
//!   swapped, "think how the receiver sees them") to `ring->queue_index`, with the comment "This
//!   assumes the Rx queue and Tx queue are bound to the same CPU".
//! - `ixgbe_fdir_add_signature_filter_82599` (ixgbe_82599.c): `FDIRCMD_CMD_ADD_FLOW |
//!   FDIRCMD_FILTER_UPDATE`: a filter for a flow that has one is updated to the new queue.
//! - `ixgbe_select_queue`: the TX ring is `smp_processor_id()` reduced modulo the queue count
//!   (modelled in `net/core/tx.rs`), so the filter sends the flow to the queue numbered like the
//!   CPU that last sampled one of its frames.
//! - A full table: `ixgbe_init_fdir_signature_82599` asks for the "full" interrupt when 64
//!   filters are left (`4 << IXGBE_FDIRCTRL_FULL_THRESH_SHIFT`, in units of 16); `ixgbe_msix_other`
//!   then clears `__IXGBE_TX_FDIR_INIT_DONE` on every ring and `ixgbe_fdir_reinit_subtask` →
//!   `ixgbe_reinit_fdir_tables_82599` empties the table. The table's size with a 64 KB
//!   allocation, 8,192 signature filters, is the 82599 datasheet's (FDIRCTRL.PBALLOC); the
//!   re-initialisation is modelled as immediate (it runs in the service task a little later).
//!
//! Frames that match no filter are spread by RSS, as before (`wire/`). Left open: the 82599's
//! signature hash can make two flows collide (one filter serves both); the model keys filters by
//! the flow's hash, so flows never collide.

use std::collections::BTreeMap;

/// Signature filters with `IXGBE_FDIR_PBALLOC_64K` (82599 datasheet, FDIRCTRL.PBALLOC).
pub const FDIR_SIGNATURE_FILTERS_64K: usize = 8192;
/// The "full" interrupt fires when this many filters are left (`ixgbe_init_fdir_signature_82599`:
/// `4 << IXGBE_FDIRCTRL_FULL_THRESH_SHIFT`, 16 filters per unit).
pub const FDIR_FULL_THRESH_FILTERS: usize = 64;

/// One NIC's Flow Director: the filter table and each TX ring's ATR sample count.
#[derive(Clone, Debug)]
pub struct Fdir {
    /// `atr_sample_rate`: a sample every this many frames of a ring (ixgbe 3.2: 20).
    pub sample_rate: u32,
    /// `ring->atr_count` per TX ring (index within the NIC).
    atr_count: Vec<u32>,
    /// Flow hash → RX queue (index within the NIC).
    filters: BTreeMap<u32, u32>,
    /// Filters at which the table counts as full and is flushed.
    filters_max: usize,
    /// Table flushes so far (`adapter->fdir_overflow`).
    pub overflows: u64,
    /// Filters added or updated so far.
    pub samples: u64,
}

impl Fdir {
    pub fn new(sample_rate: u32, queues: u32) -> Fdir {
        Fdir {
            sample_rate,
            atr_count: vec![0; queues.max(1) as usize],
            filters: BTreeMap::new(),
            filters_max: FDIR_SIGNATURE_FILTERS_64K - FDIR_FULL_THRESH_FILTERS,
            overflows: 0,
            samples: 0,
        }
    }

    /// `ixgbe_atr` for a frame put on TX ring `ring`: `tcp` = a TCP frame, `syn`, `fin` its
    /// flags, `hash` its flow's hash (as the receiver sees the flow). Returns true if it sampled.
    pub fn atr(&mut self, ring: u32, tcp: bool, syn: bool, fin: bool, hash: u32) -> bool {
        if self.sample_rate == 0 {
            return false;
        }
        let count = &mut self.atr_count[ring as usize];
        *count += 1;
        if !tcp || fin {
            return false;
        }
        if !syn && *count < self.sample_rate {
            return false;
        }
        *count = 0;
        self.samples += 1;
        if !self.filters.contains_key(&hash) && self.filters.len() >= self.filters_max {
            // The "full" interrupt: every filter is dropped and the table starts again.
            self.filters.clear();
            self.overflows += 1;
        }
        self.filters.insert(hash, ring);
        true
    }

    /// The RX queue (within the NIC) a filter steers flow `hash` to, if any.
    #[inline]
    pub fn lookup(&self, hash: u32) -> Option<u32> {
        self.filters.get(&hash).copied()
    }

    pub fn filters(&self) -> usize {
        self.filters.len()
    }

    #[cfg(test)]
    fn with_max(mut self, max: usize) -> Fdir {
        self.filters_max = max;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_syn_is_always_sampled_and_a_fin_never() {
        let mut f = Fdir::new(20, 4);
        assert!(f.atr(2, true, true, false, 7));
        assert_eq!(f.lookup(7), Some(2));
        for _ in 0..100 {
            assert!(!f.atr(1, true, false, true, 9));
        }
        assert_eq!(f.lookup(9), None);
    }

    #[test]
    fn udp_frames_advance_the_count_but_are_never_sampled() {
        let mut f = Fdir::new(20, 1);
        for _ in 0..19 {
            assert!(!f.atr(0, false, false, false, 3));
        }
        // The 20th frame of the ring is TCP: sampled, although it is the flow's first.
        assert!(f.atr(0, true, false, false, 5));
        assert_eq!(f.lookup(3), None);
        assert_eq!(f.lookup(5), Some(0));
    }

    #[test]
    fn sampling_off_adds_nothing() {
        let mut f = Fdir::new(0, 2);
        assert!(!f.atr(0, true, true, false, 1));
        assert_eq!(f.lookup(1), None);
    }

    #[test]
    fn a_full_table_is_flushed() {
        let mut f = Fdir::new(1, 1).with_max(3);
        for h in 1..=3 {
            f.atr(0, true, false, false, h);
        }
        assert_eq!(f.filters(), 3);
        f.atr(0, true, false, false, 2); // an update: no new filter, no flush
        assert_eq!((f.filters(), f.overflows), (3, 0));
        f.atr(0, true, false, false, 4);
        assert_eq!((f.filters(), f.overflows), (1, 1));
        assert_eq!(f.lookup(1), None);
        assert_eq!(f.lookup(4), Some(0));
    }

    proptest! {
        /// The rule: after `sample_rate` TCP frames of a flow from CPU c's ring (no other frames
        /// on that ring in between), the flow's frames arrive on queue c, whatever was sent
        /// before on any ring; and a filter never points anywhere the flow was not sent from.
        #[test]
        fn after_a_rings_sample_count_the_flow_follows_the_sending_cpu(
            rate in 1u32..40,
            before in proptest::collection::vec((0u32..6, 0u32..4, any::<bool>()), 0..300),
            c in 0u32..6,
            flow in 0u32..4,
        ) {
            let mut f = Fdir::new(rate, 6);
            let mut sent_from: Vec<Vec<u32>> = vec![Vec::new(); 4];
            for &(ring, fl, tcp) in &before {
                f.atr(ring, tcp, false, false, fl + 100);
                if tcp {
                    sent_from[fl as usize].push(ring);
                }
                for g in 0..4u32 {
                    if let Some(q) = f.lookup(g + 100) {
                        prop_assert!(sent_from[g as usize].contains(&q), "flow {} steered to {} it never sent on", g, q);
                    }
                }
            }
            for _ in 0..rate {
                f.atr(c, true, false, false, flow + 100);
            }
            prop_assert_eq!(f.lookup(flow + 100), Some(c));
        }

        /// Negative control: with fewer than `sample_rate` frames the flow may stay elsewhere,
        /// so the checker above can fail.
        #[test]
        fn fewer_frames_than_the_rate_need_not_move_the_flow(rate in 2u32..40) {
            let mut f = Fdir::new(rate, 6);
            f.atr(1, true, true, false, 9); // SYN from CPU 1
            for _ in 0..rate - 1 {
                f.atr(3, true, false, false, 9);
            }
            prop_assert_eq!(f.lookup(9), Some(1));
        }
    }
}
