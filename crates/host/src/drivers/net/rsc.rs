//! RSC, the 82599's receive-side coalescing (`nic.rsc_max_desc`; ixgbe 3.2's default on the
//! 82599): the NIC itself joins in-order TCP frames of a flow into one receive aggregate, a chain
//! of descriptors that the driver turns into one skb.
//!
//! Rules, from Linux 3.2.7 drivers/net/ethernet/intel/ixgbe/:
//! - `ixgbe_sw_init`: on the 82599 `IXGBE_FLAG2_RSC_CAPABLE` and `IXGBE_FLAG2_RSC_ENABLED` are
//!   set (RSC on by default); `ixgbe_probe` then sets `NETIF_F_LRO`, and `ixgbe_set_features`
//!   ties RSC to it: RSC runs only while LRO is on. The stack turns LRO off on every device when
//!   IP forwarding is enabled (`dev_disable_lro` from `devinet_sysctl_forward`, net/ipv4/devinet.c),
//!   so a forwarding host runs without RSC; a receiver (paper 001's iperf server) keeps it.
//! - `ixgbe_configure_rscctl`: `IXGBE_RSCCTL_RSCEN | IXGBE_RSCCTL_MAXDESC_16` (with 2 KB
//!   buffers): at most 16 descriptors per aggregate.
//! - `ixgbe_clean_rx_irq`: the descriptors of an aggregate (`IXGBE_RXDADV_NEXTP`) become one skb
//!   (`IXGBE_RSC_CB(skb)->append_cnt`), counted once against the poll's budget and handed to
//!   `napi_gro_receive` as one skb.
//! - The 82599 closes an aggregate when a frame of its flow does not follow in order or carries
//!   a flag other than ACK/PSH, when it has its maximum descriptors, and at the interrupt
//!   (EITR) that reports it (82599 datasheet §7.11 "Receive Side Coalescing").
//!
//! Here an aggregate is open while its first frame waits in the RX ring; a frame that joins it
//! takes a descriptor (the ring's occupancy counts it) but no ring position of its own: it is
//! linked behind the aggregate's last frame (`next`, as GRO's chains, `net/core/gro.rs`). The
//! aggregate closes when the driver takes its first frame, when the queue interrupts, at its
//! 16th descriptor, or when its flow's next frame cannot join. Simplifications: the hardware
//! writes an aggregate back only once it has closed, so a driver reaching it earlier would stop
//! there; here the driver's read closes it. The number of aggregates the 82599 can hold open at
//! once (its RSC contexts) is not modelled; nor is the 64 KB limit (16 descriptors of 1,500
//! bytes stay under it).

use crate::net::core::gro::link;
use crate::types::{PktId, NONE};

/// `IXGBE_RSCCTL_MAXDESC_16`.
pub const IXGBE_MAX_RSC_DESC: u32 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RscCtx {
    pub key: (u32, u32),
    pub head: PktId,
    pub tail: PktId,
    pub next_seq: u64,
    pub desc: u32,
}

/// One RX queue's open aggregates.
#[derive(Clone, Debug, Default)]
pub struct Rsc {
    pub max_desc: u32,
    pub open: Vec<RscCtx>,
}

/// What became of an arriving frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RscArrive {
    /// Joined an open aggregate: it takes a descriptor but no ring position.
    Joined,
    /// Takes a ring position of its own (it may have opened an aggregate).
    Own,
}

impl Rsc {
    pub fn new(max_desc: u32) -> Rsc {
        Rsc { max_desc: max_desc.min(IXGBE_MAX_RSC_DESC), open: Vec::new() }
    }

    /// A TCP frame of flow `key` arrives; `eligible`: a data segment without SYN/FIN/RST.
    pub fn arrive(
        &mut self,
        pkt: PktId,
        key: (u32, u32),
        seq: u64,
        len: u32,
        eligible: bool,
        next: &mut Vec<PktId>,
    ) -> RscArrive {
        if let Some(i) = self.open.iter().position(|c| c.key == key) {
            let c = self.open[i];
            if eligible && len > 0 && seq == c.next_seq && c.desc < self.max_desc {
                link(next, c.tail, pkt);
                let c = &mut self.open[i];
                c.tail = pkt;
                c.next_seq += u64::from(len);
                c.desc += 1;
                if c.desc >= self.max_desc {
                    self.open.swap_remove(i);
                }
                return RscArrive::Joined;
            }
            self.open.swap_remove(i);
        }
        if next.len() > pkt as usize {
            next[pkt as usize] = NONE;
        }
        if eligible && len > 0 && self.max_desc > 1 {
            self.open.push(RscCtx { key, head: pkt, tail: pkt, next_seq: seq + u64::from(len), desc: 1 });
        }
        RscArrive::Own
    }

    /// The driver takes frame `pkt` from the ring: its aggregate, if open, closes.
    #[inline]
    pub fn close_head(&mut self, pkt: PktId) {
        if let Some(i) = self.open.iter().position(|c| c.head == pkt) {
            self.open.swap_remove(i);
        }
    }

    /// The queue interrupts: every open aggregate closes.
    pub fn close_all(&mut self) {
        self.open.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::core::gro::chain;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, VecDeque};

    proptest! {
        /// At most 16 descriptors per aggregate; every frame is in exactly one aggregate (bytes
        /// conserved); an aggregate holds one flow's frames in order; per flow, the ring gives
        /// the frames back in arrival order.
        #[test]
        fn at_most_16_descriptors_and_conserved(
            events in proptest::collection::vec((0u32..6, 0u8..12), 1..500)
        ) {
            let mut r = Rsc::new(IXGBE_MAX_RSC_DESC);
            let mut next = Vec::new();
            let mut ring: VecDeque<PktId> = VecDeque::new();
            let mut seq: BTreeMap<u32, u64> = BTreeMap::new();
            let mut info: Vec<(u32, u64, u32)> = Vec::new();
            let mut out: Vec<PktId> = Vec::new();
            let mut pkt: PktId = 0;
            for &(flow, kind) in &events {
                match kind {
                    // The driver takes the first frame of the ring.
                    0 | 1 => if let Some(h) = ring.pop_front() { r.close_head(h); out.push(h); },
                    2 => r.close_all(),
                    _ => {
                        let s = seq.entry(flow).or_insert(0);
                        if kind == 3 { *s += 1448; } // a loss upstream: a gap
                        let len = if kind == 4 { 200 } else { 1448 };
                        info.push((flow, *s, len));
                        if r.arrive(pkt, (0, flow), *s, len, kind != 5, &mut next) == RscArrive::Own {
                            ring.push_back(pkt);
                        }
                        *s += u64::from(len);
                        pkt += 1;
                    }
                }
                prop_assert!(r.open.iter().all(|c| c.desc <= IXGBE_MAX_RSC_DESC));
            }
            out.extend(ring.drain(..));
            let mut seen = vec![false; info.len()];
            let mut last: BTreeMap<u32, u64> = BTreeMap::new();
            for &h in &out {
                let agg: Vec<PktId> = chain(&next, h).collect();
                prop_assert!(agg.len() as u32 <= IXGBE_MAX_RSC_DESC);
                for w in agg.windows(2) {
                    let (a, b) = (info[w[0] as usize], info[w[1] as usize]);
                    prop_assert_eq!(a.0, b.0);
                    prop_assert_eq!(a.1 + u64::from(a.2), b.1);
                }
                for &p in &agg {
                    prop_assert!(!seen[p as usize]);
                    seen[p as usize] = true;
                    let (f, s, _) = info[p as usize];
                    if let Some(&l) = last.get(&f) { prop_assert!(s > l, "flow {} reordered", f); }
                    last.insert(f, s);
                }
            }
            prop_assert!(seen.iter().all(|&s| s));
        }
    }
}
