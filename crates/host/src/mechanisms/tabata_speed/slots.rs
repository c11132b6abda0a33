//! Tender's program execution-speed regulation (paper 002, Tabata, Nomura & Taniguchi, §2): the
//! slot arithmetic. Pure; the scheduler side is `mechanisms/tabata_speed/regulate.rs`.
//!
//! Time is cut into slots of `slot_ns`; T consecutive slots form a block. A process regulated
//! to s percent gets n = round(s × T / 100) slots per block (the paper: "as many slots as the
//! requested speed needs"; the rounding is ours, notes 002 §6.9), n ≥ 1. The paper places the
//! i-th allocated slot (i = 1..n) at T × (i − 1) / n; we take the integer part (C division,
//! notes 002 §2): slot k of a block is allocated iff k = ⌊T·j/n⌋ for some j in 0..n. So 50 % is
//! every other slot and 80 % is four on, one off, as the paper describes.
//!
//! Every question is O(1) except [`SlotPlan::run_end`], which walks at most T/(T−n) + 1 slots.

use hostsim_engine::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotPlan {
    pub slot_ns: u64,
    /// Slots per block.
    pub t: u64,
    /// Allocated slots per block.
    pub n: u64,
    /// Start of the first block (on the slot grid).
    pub origin: u64,
}

impl SlotPlan {
    pub fn new(speed_pct: u32, slot_ns: u64, block_ns: u64, origin: u64) -> SlotPlan {
        let slot_ns = slot_ns.max(1);
        let t = (block_ns / slot_ns).max(1);
        let n = ((u64::from(speed_pct) * t + 50) / 100).clamp(1, t);
        SlotPlan { slot_ns, t, n, origin: origin / slot_ns * slot_ns }
    }

    /// Every slot is allocated.
    pub fn full(&self) -> bool {
        self.n == self.t
    }

    /// Is slot `k` (0..T) of a block allocated?
    pub fn allocated_k(&self, k: u64) -> bool {
        let j = (k * self.n).div_ceil(self.t);
        j < self.n && self.t * j / self.n == k
    }

    /// Absolute slot number at `now` (slots since `origin`; before it, slot 0).
    pub fn slot_of(&self, now: Time) -> u64 {
        now.ns().saturating_sub(self.origin) / self.slot_ns
    }

    pub fn slot_start(&self, abs: u64) -> Time {
        Time(self.origin + abs * self.slot_ns)
    }

    pub fn allocated(&self, abs: u64) -> bool {
        self.allocated_k(abs % self.t)
    }

    pub fn allocated_at(&self, now: Time) -> bool {
        now.ns() >= self.origin && self.allocated(self.slot_of(now))
    }

    /// The first allocated slot numbered `abs` or later.
    pub fn next_allocated(&self, abs: u64) -> u64 {
        let (block, k) = (abs / self.t, abs % self.t);
        let j = (k * self.n).div_ceil(self.t);
        if j < self.n {
            block * self.t + self.t * j / self.n
        } else {
            (block + 1) * self.t // slot 0 (j = 0) is always allocated
        }
    }

    /// The first unallocated slot after allocated slot `abs` (the end of its run). None when
    /// every slot is allocated.
    pub fn run_end(&self, abs: u64) -> Option<u64> {
        if self.full() {
            return None;
        }
        let mut k = abs + 1;
        while self.allocated(k) {
            k += 1;
        }
        Some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &SlotPlan, len: u64) -> String {
        (0..len).map(|k| if p.allocated(k) { '#' } else { '.' }).collect()
    }

    #[test]
    fn the_papers_patterns() {
        let ms = 1_000_000;
        let p50 = SlotPlan::new(50, ms, 1000 * ms, 0);
        assert_eq!(pattern(&p50, 10), "#.#.#.#.#.");
        let p80 = SlotPlan::new(80, ms, 1000 * ms, 0);
        assert_eq!(pattern(&p80, 15), "####.####.####.");
        let p100 = SlotPlan::new(100, ms, 1000 * ms, 0);
        assert!(p100.full() && pattern(&p100, 5) == "#####");
    }

    #[test]
    fn n_slots_per_block_for_any_speed() {
        for s in 1..=100 {
            let p = SlotPlan::new(s, 1, 1000, 0);
            let count = (0..1000).filter(|&k| p.allocated_k(k)).count() as u64;
            assert_eq!(count, p.n, "speed {s}");
            assert_eq!(p.n, u64::from(s) * 10);
            // next_allocated agrees with the test, slot by slot, across a block boundary.
            for k in 0..1100 {
                let nx = p.next_allocated(k);
                assert!(nx >= k && p.allocated(nx), "speed {s} slot {k}");
                assert!((k..nx).all(|j| !p.allocated(j)), "speed {s} slot {k}");
            }
        }
        // A T that n does not divide: 7 slots of 3 per block.
        let p = SlotPlan::new(43, 1, 7, 0);
        assert_eq!(p.n, 3);
        assert_eq!(pattern(&p, 7), "#.#.#..");
    }

    #[test]
    fn runs_end_at_the_first_free_slot() {
        let p80 = SlotPlan::new(80, 1, 1000, 0);
        assert_eq!(p80.run_end(0), Some(4));
        assert_eq!(p80.run_end(2), Some(4));
        assert_eq!(p80.next_allocated(4), 5);
        let p50 = SlotPlan::new(50, 1, 1000, 0);
        assert_eq!(p50.run_end(998), Some(999));
        assert_eq!(p50.next_allocated(999), 1000);
    }
}
