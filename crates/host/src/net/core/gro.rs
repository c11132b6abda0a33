//! GRO, generic receive offload (`nic.gro`; Linux 3.2's default for a NAPI driver that calls
//! `napi_gro_receive`, as ixgbe does: `NETIF_F_GRO` is set by `register_netdevice`): in the NAPI
//! poll, in-order TCP segments of a flow are merged into one skb, so that the protocol layers
//! above (`netif_receive_skb`, RPS/RFS, IP and TCP input) run once per aggregate.
//!
//! Rules, from Linux 3.2.7 net/core/dev.c and net/ipv4/tcp.c:
//! - `dev_gro_receive`: at most `MAX_GRO_SKBS` = 8 aggregates held per NAPI instance
//!   (`napi->gro_count`); a segment of no held flow starts a new one unless 8 are held or it must
//!   be flushed itself, in which case it goes up at once (`goto normal`). The list is newest
//!   first (`skb->next = napi->gro_list`).
//! - `tcp_gro_receive`: a segment joins the held aggregate of its flow only if it is in order
//!   (`th2->seq + skb_gro_len(p) == th->seq`), not longer than the aggregate's first segment
//!   (`(len - 1) >= mss` flushes, `mss` = `gso_size` = the first segment's length), its flags
//!   equal the aggregate's apart from CWR/FIN/PSH, and the aggregate stays under 64 KB
//!   (`skb_gro_receive`: `p->len + len >= 65536` is `-E2BIG`). A segment that cannot join
//!   completes the held aggregate (`pp`, passed up by `napi_gro_complete`) and is then held as a
//!   new one. A segment that joins but is shorter than `mss` or carries PSH/FIN/URG/RST/SYN
//!   completes the aggregate with itself in it (`out_check_final`).
//! - `napi_complete` → `napi_gro_flush`: everything held goes up, newest first. In 3.2 nothing
//!   else flushes: a NAPI instance that used its whole weight keeps its aggregates until its poll
//!   completes (the flush at `work == weight` in `net_rx_action` came in 3.7).
//!
//! Here a segment is a [`GroSeg`]; an aggregate is its first packet with the others linked
//! behind it (`next`, indexed by packet id: `PacketSlab::frag_next` in the host). What goes up
//! is the aggregate's first packet: the host charges IP/TCP input once for it
//! (`Host::proto_cost`, `net/core/rx.rs`) and delivers its segments to the socket in order with
//! one ACK (`Host::protocol_deliver`, `net/ipv4/input.rs`), as `tcp_rcv_established` does with
//! one skb of several MSS (`__tcp_ack_snd_check`: more than one `rcv_mss` received, ACK now).
//!
//! Not modelled: the IP id check of `inet_gro_receive` (a Linux sender's ids are consecutive per
//! flow), the ACK number compare (the aggregated flows here only receive), GRO of UDP (none in
//! 3.2), of forwarded packets and of the event-driven programs' sockets (only segments for a
//! `tcp_stream`-style socket are offered to GRO). The header compare and frag append of a merge
//! are charged within the driver's per-frame cost.

use crate::types::{PktId, NONE};

/// `MAX_GRO_SKBS` (net/core/dev.c).
pub const MAX_GRO_SKBS: usize = 8;
/// `skb_gro_receive`: an aggregate's `p->len + len` must stay below this.
pub const GRO_MAX_LEN: u32 = 65_536;
/// IP + TCP headers counted in `p->len` (the model's TCP frames carry 40 bytes of headers).
pub const GRO_HDR_LEN: u32 = 40;

/// A TCP segment offered to GRO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroSeg {
    pub pkt: PktId,
    /// The flow (source, flow number): `same_flow` of `dev_gro_receive` and `tcp_gro_receive`.
    pub key: (u32, u32),
    pub seq: u64,
    /// TCP payload bytes (`skb_gro_len` minus the TCP header).
    pub len: u32,
    /// Carries a flag that completes an aggregate (PSH/FIN/URG/RST/SYN).
    pub flush_flag: bool,
    /// Segments already linked behind `pkt` (an RSC aggregate): not merged further, it goes up
    /// as it is, after the held aggregate of its flow.
    pub chained: bool,
}

/// One held aggregate (`napi->gro_list` entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    pub key: (u32, u32),
    pub head: PktId,
    pub tail: PktId,
    /// Sequence number the next in-order segment must carry.
    pub next_seq: u64,
    /// `gso_size`: the first segment's payload length.
    pub mss: u32,
    /// `p->len`: headers once plus every segment's payload.
    pub len: u32,
    pub segs: u32,
}

/// What `receive` did with the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroResult {
    /// Joined a held aggregate (`GRO_MERGED`).
    Merged,
    /// Held as a new aggregate (`GRO_HELD`).
    Held,
    /// Passed up unmerged (`GRO_NORMAL`): it is the last entry of `out`.
    Normal,
}

/// A NAPI instance's GRO list.
#[derive(Clone, Debug, Default)]
pub struct GroList {
    /// Newest first, as `napi->gro_list`.
    pub held: Vec<Held>,
}

/// Link `pkt` behind `tail` in `next` (grown on demand).
pub fn link(next: &mut Vec<PktId>, tail: PktId, pkt: PktId) {
    let need = tail.max(pkt) as usize + 1;
    if next.len() < need {
        next.resize(need.max(next.len() * 2), NONE);
    }
    next[tail as usize] = pkt;
    next[pkt as usize] = NONE;
}

impl GroList {
    /// `dev_gro_receive` with `tcp_gro_receive`. Aggregates that go up are appended to `out`
    /// (their first packets), in the order Linux passes them up.
    pub fn receive(&mut self, s: GroSeg, next: &mut Vec<PktId>, out: &mut Vec<PktId>) -> GroResult {
        if let Some(i) = self.held.iter().position(|h| h.key == s.key) {
            let h = self.held[i];
            let joins = !s.chained && s.seq == h.next_seq && s.len <= h.mss && s.len > 0 && h.len + s.len < GRO_MAX_LEN;
            if joins {
                link(next, h.tail, s.pkt);
                let h = &mut self.held[i];
                h.tail = s.pkt;
                h.next_seq += u64::from(s.len);
                h.len += s.len;
                h.segs += 1;
                if s.len < h.mss || s.flush_flag {
                    out.push(self.held.remove(i).head);
                }
                return GroResult::Merged;
            }
            // Cannot join: the held aggregate goes up (`pp`), the segment is considered anew.
            out.push(self.held.remove(i).head);
        }
        if !s.chained && next.len() > s.pkt as usize {
            next[s.pkt as usize] = NONE;
        }
        if s.chained || s.flush_flag || s.len == 0 || self.held.len() >= MAX_GRO_SKBS {
            out.push(s.pkt);
            return GroResult::Normal;
        }
        self.held.insert(
            0,
            Held {
                key: s.key,
                head: s.pkt,
                tail: s.pkt,
                next_seq: s.seq + u64::from(s.len),
                mss: s.len,
                len: GRO_HDR_LEN + s.len,
                segs: 1,
            },
        );
        GroResult::Held
    }

    /// `napi_gro_flush`: every held aggregate goes up, newest first.
    pub fn flush(&mut self, out: &mut Vec<PktId>) {
        out.extend(self.held.drain(..).map(|h| h.head));
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// The packets of the aggregate starting at `head`, in order.
pub fn chain(next: &[PktId], head: PktId) -> impl Iterator<Item = PktId> + '_ {
    let mut p = head;
    std::iter::from_fn(move || {
        if p == NONE {
            return None;
        }
        let cur = p;
        p = next.get(cur as usize).copied().unwrap_or(NONE);
        Some(cur)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn seg(pkt: PktId, flow: u32, seq: u64, len: u32) -> GroSeg {
        GroSeg { pkt, key: (0, flow), seq, len, flush_flag: false, chained: false }
    }

    #[test]
    fn in_order_segments_merge_and_a_short_one_completes_the_aggregate() {
        let (mut g, mut next, mut out) = (GroList::default(), Vec::new(), Vec::new());
        assert_eq!(g.receive(seg(0, 1, 0, 1448), &mut next, &mut out), GroResult::Held);
        assert_eq!(g.receive(seg(1, 1, 1448, 1448), &mut next, &mut out), GroResult::Merged);
        assert!(out.is_empty());
        assert_eq!(g.receive(seg(2, 1, 2896, 100), &mut next, &mut out), GroResult::Merged);
        assert_eq!(out, vec![0]);
        assert!(g.is_empty());
        assert_eq!(chain(&next, 0).collect::<Vec<_>>(), vec![0, 1, 2]);
    }

    #[test]
    fn a_gap_completes_the_held_aggregate_and_starts_a_new_one() {
        let (mut g, mut next, mut out) = (GroList::default(), Vec::new(), Vec::new());
        g.receive(seg(0, 1, 0, 1448), &mut next, &mut out);
        assert_eq!(g.receive(seg(1, 1, 2896, 1448), &mut next, &mut out), GroResult::Held);
        assert_eq!(out, vec![0]);
        assert_eq!(g.held[0].head, 1);
    }

    #[test]
    fn a_ninth_flow_goes_up_unmerged() {
        let (mut g, mut next, mut out) = (GroList::default(), Vec::new(), Vec::new());
        for f in 0..8 {
            assert_eq!(g.receive(seg(f, f, 0, 1448), &mut next, &mut out), GroResult::Held);
        }
        assert_eq!(g.receive(seg(8, 8, 0, 1448), &mut next, &mut out), GroResult::Normal);
        assert_eq!(out, vec![8]);
        assert_eq!(g.held.len(), MAX_GRO_SKBS);
    }

    #[test]
    fn the_aggregate_stays_under_64_kb() {
        let (mut g, mut next, mut out) = (GroList::default(), Vec::new(), Vec::new());
        let mut i = 0;
        while out.is_empty() {
            g.receive(seg(i, 1, u64::from(i) * 1448, 1448), &mut next, &mut out);
            i += 1;
        }
        // 40 + 45 x 1448 = 65,200 < 65,536; a 46th segment would pass it.
        assert_eq!(chain(&next, out[0]).count(), 45);
    }

    proptest! {
        /// Bytes and segments conserved: every segment goes up exactly once, inside one
        /// aggregate; per flow in order of arrival; at most 8 aggregates held; nothing held after
        /// the flush; every aggregate is in-order and under 64 KB.
        #[test]
        fn conserved_ordered_bounded(
            arrivals in proptest::collection::vec((0u32..12, 0u8..10, 0u32..3), 1..600)
        ) {
            let (mut g, mut next, mut out) = (GroList::default(), Vec::new(), Vec::new());
            let mut seq: BTreeMap<u32, u64> = BTreeMap::new();
            let mut sent: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
            let mut info: Vec<(u32, u64, u32)> = Vec::new();
            for (i, &(flow, kind, _)) in arrivals.iter().enumerate() {
                let s = seq.entry(flow).or_insert(0);
                // Mostly full segments in order; sometimes a short one, a gap or a flag.
                let len = if kind == 0 { 300 } else { 1448 };
                if kind == 1 { *s += 1448; }
                let mut sg = seg(i as PktId, flow, *s, len);
                sg.flush_flag = kind == 2;
                *s += u64::from(len);
                sent.entry(flow).or_default().push((sg.seq, len));
                info.push((flow, sg.seq, len));
                let before = out.len();
                let r = g.receive(sg, &mut next, &mut out);
                prop_assert!(g.held.len() <= MAX_GRO_SKBS);
                if r == GroResult::Normal { prop_assert_eq!(*out.last().unwrap(), i as PktId); }
                prop_assert!(out.len() - before <= 2);
            }
            g.flush(&mut out);
            prop_assert!(g.is_empty());
            let mut got: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
            let mut seen = vec![false; arrivals.len()];
            for &head in &out {
                let pk: Vec<PktId> = chain(&next, head).collect();
                let flow = info[head as usize].0;
                let mut len = GRO_HDR_LEN;
                for w in pk.windows(2) {
                    let (a, b) = (info[w[0] as usize], info[w[1] as usize]);
                    prop_assert_eq!(a.1 + u64::from(a.2), b.1, "an aggregate is in order");
                }
                for &p in &pk {
                    prop_assert!(!seen[p as usize], "segment {} up twice", p);
                    seen[p as usize] = true;
                    prop_assert_eq!(info[p as usize].0, flow);
                    len += info[p as usize].2;
                    got.entry(flow).or_default().push((info[p as usize].1, info[p as usize].2));
                }
                prop_assert!(len < GRO_MAX_LEN);
            }
            prop_assert!(seen.iter().all(|&s| s), "every segment went up");
            prop_assert_eq!(got, sent, "per flow: same bytes, same order");
        }
    }
}
