//! `ozaki-pbq`'s priority drop moved to the driver's entry point, as `hostsim live` runs it on
//! Linux 6.x with XDP (crates/live/src/ozaki_pbq/bpf/pbq_xdp.bpf.c), and the agent's high-load detector.
//! This is the model twin of the live mechanism: the per-packet verdict mirrors the XDP program
//! line for line, and [`Detector`] *is* the agent's state machine (crates/live/src/ozaki_pbq/agent.rs runs
//! this very code on the kernel's counters; the model feeds it the model's).
//!
//! Verdict (paper 000 Fig. 3 at the driver): a packet's priority level comes from the port →
//! priority table (levels 0..=39 = 19 − nice, highest among the port's processes, as bind() and
//! nice() fill it in the paper). At low load, or at a level ≥ `shed_below`, it passes. Under high
//! load a lower level is dropped, except for a minimum share per `window_ns`: level l passes
//! `min_share_top·(l+1)/40` packets per window (smaller for lower priorities, as the PBQs'
//! per-queue minimums, Fig. 3 line 17).
//!
//! Where it differs from the PBQs (`mechanisms/ozaki_pbq/pbq.rs`), and why:
//! - No queue is visible at the driver, so there is nothing to evict: the PBQs' "drop the tail
//!   of a random lower-priority queue unless it is at its minimum" becomes "admit or drop the
//!   arrival", and the per-queue minimum length becomes a minimum rate per window.
//! - Dequeue order by priority (the PBQs' `find_first_bit`) has no equivalent: what passes goes
//!   FIFO through the backlog. The drop alone must protect the high priority.
//! - The drop happens before the backlog, RPS and IP/UDP have spent anything on the packet
//!   (only the driver's per-frame work and the program run), where the PBQs cost the 2.4
//!   hard-IRQ handler the whole `netif_rx`.
//! - High load is not the backlog's own throttle flag, seen synchronously at enqueue: user space
//!   polls the kernel's counters every `poll_ms` and sets a flag in the program (see
//!   [`Detector`]). Detection lags by up to one poll.
//! - "Lower priorities first" is graded (shed the lowest active level, then the next one while
//!   overload persists) instead of a random lower-priority victim queue.

pub use crate::hooks::Verdict;
use crate::types::LEVELS;

/// The detector's parameters (`[kernel] xdp_*` in the model, `AgentConfig` live).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetectorConfig {
    /// A backlog this long counts as overload before it drops.
    pub backlog_len_high: u64,
    /// Leave high load when the arrival rate has stayed below this fraction of the rate at
    /// entry for `hold_ms`.
    pub release_frac: f64,
    pub hold_ms: u64,
    /// While overloaded and shedding, shed the next active level after this long.
    pub escalate_ms: u64,
    /// Leave high load after this long without any sign of overload (a probe).
    pub probe_ms: u64,
    /// The receiver's capacity, packets per second, measured with the mechanism off (0: not
    /// known, this sign unused). An arrival rate (all levels, counted by the program before
    /// dropping) of at least `capacity_frac` of it is overload: a sign only the run's own
    /// devices can move, where the backlog's counters are per CPU and shared by every
    /// namespace on the machine (issue 28). The model takes it from `kernel.xdp_capacity_pps`
    /// (default 0).
    pub capacity_pps: f64,
    pub capacity_frac: f64,
}

impl Default for DetectorConfig {
    fn default() -> DetectorConfig {
        DetectorConfig {
            backlog_len_high: 500,
            release_frac: 0.8,
            hold_ms: 100,
            escalate_ms: 100,
            probe_ms: 2000,
            capacity_pps: 0.0,
            capacity_frac: 0.9,
        }
    }
}

/// What one poll saw: counter increments since the previous poll, at time `t_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub t_ns: u64,
    /// Packets the backlogs dropped (over `netdev_max_backlog`).
    pub backlog_drops: u64,
    /// The longest backlog now.
    pub backlog_len_max: u64,
    /// Drops at sockets of the highest priority level bound.
    pub top_socket_drops: u64,
    /// Arrivals per level as the program counts them (before dropping).
    pub arrivals: [u64; LEVELS],
}

impl Default for Observation {
    fn default() -> Observation {
        Observation { t_ns: 0, backlog_drops: 0, backlog_len_max: 0, top_socket_drops: 0, arrivals: [0; LEVELS] }
    }
}

/// The high-load state machine.
///
/// High load begins on evidence from the kernel's own counters that the receive path is losing
/// packets: the backlog overflowed or is longer than `backlog_len_high` (the paper's condition,
/// §2.1.1, on today's backlog), or a socket of the highest active priority dropped packets.
/// Once the program sheds, those counters go quiet, so they cannot tell when the overload ends:
/// high load ends when the arrival rate counted by the program before dropping has stayed below
/// `release_frac` of the rate at entry for `hold_ms`, or after `probe_ms` without any overload sign (a probe,
/// in case a transient set it). On entry only the lowest active level is shed; while overload
/// persists, every `escalate_ms` the next active level is shed too; the highest active level never.
#[derive(Clone, Debug)]
pub struct Detector {
    cfg: DetectorConfig,
    pub high: bool,
    pub shed_below: u8,
    /// Times high load was entered.
    pub entries: u64,
    entry_rate_pps: f64,
    rate_pps: f64,
    last_t_ns: Option<u64>,
    last_overload_ns: u64,
    last_escalate_ns: u64,
    /// Since when the rate has been below the release threshold (None: it is not).
    below_since_ns: Option<u64>,
}

impl Detector {
    pub fn new(cfg: DetectorConfig) -> Detector {
        Detector {
            cfg,
            high: false,
            shed_below: 0,
            entries: 0,
            entry_rate_pps: 0.0,
            rate_pps: 0.0,
            last_t_ns: None,
            last_overload_ns: 0,
            last_escalate_ns: 0,
            below_since_ns: None,
        }
    }

    /// Set the receiver's capacity (`DetectorConfig::capacity_pps`; 0: unknown).
    pub fn set_capacity(&mut self, capacity_pps: f64) {
        self.cfg.capacity_pps = capacity_pps;
    }

    pub fn observe(&mut self, o: &Observation) {
        let dt_s = self.last_t_ns.map_or(0.0, |t| o.t_ns.saturating_sub(t) as f64 * 1e-9);
        self.last_t_ns = Some(o.t_ns);
        if dt_s > 0.0 {
            let r = o.arrivals.iter().sum::<u64>() as f64 / dt_s;
            // A short memory (time constant ~3 polls) against the jitter of one poll.
            self.rate_pps = if self.rate_pps == 0.0 { r } else { 0.7 * self.rate_pps + 0.3 * r };
        }
        let lowest = o.arrivals.iter().position(|&a| a > 0);
        let top = o.arrivals.iter().rposition(|&a| a > 0);
        let over_capacity =
            self.cfg.capacity_pps > 0.0 && self.rate_pps >= self.cfg.capacity_frac * self.cfg.capacity_pps;
        let overload = o.backlog_drops > 0
            || o.backlog_len_max >= self.cfg.backlog_len_high
            || o.top_socket_drops > 0
            || over_capacity;
        if overload {
            self.last_overload_ns = o.t_ns;
        }
        if !self.high {
            if overload {
                self.high = true;
                self.entries += 1;
                self.entry_rate_pps = self.rate_pps;
                self.last_escalate_ns = o.t_ns;
                self.shed_below = match (lowest, top) {
                    (Some(lo), Some(hi)) if lo < hi => (lo + 1) as u8,
                    _ => 0, // a single active level: nothing lower to shed
                };
            }
            return;
        }
        let quiet_ns = o.t_ns.saturating_sub(self.last_overload_ns);
        // A sender that stalls for a poll must not end high load: the rate has to stay low.
        if self.rate_pps < self.cfg.release_frac * self.entry_rate_pps {
            self.below_since_ns.get_or_insert(o.t_ns);
        } else {
            self.below_since_ns = None;
        }
        let held = self.below_since_ns.is_some_and(|t| o.t_ns.saturating_sub(t) >= self.cfg.hold_ms * 1_000_000);
        if !overload && (held || quiet_ns >= self.cfg.probe_ms * 1_000_000) {
            self.high = false;
            self.shed_below = 0;
            self.below_since_ns = None;
            return;
        }
        if overload && o.t_ns.saturating_sub(self.last_escalate_ns) >= self.cfg.escalate_ms * 1_000_000 {
            let next = (self.shed_below as usize..LEVELS).find(|&l| o.arrivals[l] > 0);
            if let (Some(next), Some(hi)) = (next, top) {
                if next < hi {
                    self.shed_below = (next + 1) as u8;
                }
            }
            self.last_escalate_ns = o.t_ns;
        }
    }
}

/// The priority drop: the program's control block, its per-level windows and counters, and
/// the detector that sets it.
#[derive(Clone, Debug)]
pub struct XdpPbq {
    pub detector: Detector,
    min_share_top: u64,
    window_ns: u64,
    /// Per level: (window start, packets passed in it by the minimum share).
    shares: [(u64, u64); LEVELS],
    /// Arrivals per level since the last poll.
    arrivals: [u64; LEVELS],
    /// Packets passed only because of the minimum share (cumulative).
    pub share_passes: u64,
    /// The drop is on (`kernel.xdp = "pbq"`); off (`"detect"`), the program only counts for the
    /// detector and passes every frame, as live with `Agent::enable(false)`.
    pub drops: bool,
}

impl XdpPbq {
    pub fn new(cfg: DetectorConfig, min_share_top: u32, window_ns: u64) -> XdpPbq {
        XdpPbq {
            detector: Detector::new(cfg),
            min_share_top: u64::from(min_share_top),
            window_ns: window_ns.max(1),
            shares: [(0, 0); LEVELS],
            arrivals: [0; LEVELS],
            share_passes: 0,
            drops: true,
        }
    }

    /// `pbq_xdp()`/`decide()` of pbq_xdp.bpf.c for a frame of priority `level` at `now_ns`.
    pub fn verdict(&mut self, now_ns: u64, level: u8) -> Verdict {
        let l = (level as usize).min(LEVELS - 1);
        self.arrivals[l] += 1;
        let d = &self.detector;
        if !self.drops || !d.high || l >= d.shed_below as usize {
            return Verdict::Pass;
        }
        let (start, passed) = &mut self.shares[l];
        if now_ns.saturating_sub(*start) >= self.window_ns {
            *start = now_ns;
            *passed = 0;
        }
        let min = self.min_share_top * (l as u64 + 1) / LEVELS as u64;
        *passed += 1;
        if *passed <= min {
            self.share_passes += 1;
            return Verdict::Pass;
        }
        Verdict::Drop
    }

    /// The agent's poll: feed the detector the host's counters plus this program's arrivals.
    pub fn poll(&mut self, mut o: Observation) {
        o.arrivals = self.arrivals;
        self.arrivals = [0; LEVELS];
        self.detector.observe(&o);
    }

    pub fn high_load(&self) -> bool {
        self.detector.high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(t_ms: u64, drops: u64, lo: u64, hi: u64) -> Observation {
        let mut a = [0; LEVELS];
        a[0] = lo;
        a[38] = hi;
        Observation { t_ns: t_ms * 1_000_000, backlog_drops: drops, arrivals: a, ..Observation::default() }
    }

    #[test]
    fn enters_on_backlog_drops_and_sheds_the_lowest_level_only() {
        let mut d = Detector::new(DetectorConfig::default());
        d.observe(&obs(0, 0, 100, 10));
        d.observe(&obs(10, 0, 100, 10));
        assert!(!d.high);
        d.observe(&obs(20, 5, 4000, 340));
        assert!(d.high);
        assert_eq!(d.shed_below, 1, "level 0 shed, level 38 kept");
    }

    #[test]
    fn stays_while_the_arrival_rate_holds_and_leaves_when_it_falls() {
        let mut d = Detector::new(DetectorConfig::default());
        d.observe(&obs(0, 0, 4000, 340));
        d.observe(&obs(10, 3, 4000, 340));
        assert!(d.high);
        for t in 2..50 {
            d.observe(&obs(t * 10, 0, 4000, 340)); // counters quiet: we are shedding
            assert!(d.high, "still the rate that overloaded at {t}");
        }
        for t in 50..70 {
            d.observe(&obs(t * 10, 0, 0, 340)); // the flood stops (released after hold_ms)
        }
        assert!(!d.high);
        assert_eq!(d.shed_below, 0);
    }

    #[test]
    fn a_one_poll_dip_of_the_rate_does_not_end_high_load() {
        let mut d = Detector::new(DetectorConfig::default());
        d.observe(&obs(0, 0, 4000, 340));
        d.observe(&obs(10, 3, 4000, 340));
        for t in 2..6 {
            d.observe(&obs(t * 10, 0, 4000, 340));
        }
        d.observe(&obs(60, 0, 0, 340)); // the sender stalls for one poll
        d.observe(&obs(70, 0, 0, 340));
        for t in 8..20 {
            d.observe(&obs(t * 10, 0, 4000, 340));
        }
        assert!(d.high, "a 20 ms stall is shorter than hold_ms");
    }

    #[test]
    fn the_capacity_sign_enters_and_holds_high_load_on_the_rate_alone() {
        // 10 ms polls: 4340 arrivals per poll = 434,000 pkt/s against a capacity of 400,000.
        let cfg = DetectorConfig { capacity_pps: 400_000.0, capacity_frac: 0.9, ..DetectorConfig::default() };
        let mut d = Detector::new(cfg);
        d.observe(&obs(0, 0, 2000, 340)); // 234,000 pkt/s: under 0.9 × capacity
        d.observe(&obs(10, 0, 2000, 340));
        assert!(!d.high, "below the capacity threshold, no counter moved");
        for t in 2..40 {
            d.observe(&obs(t * 10, 0, 4000, 340));
        }
        assert!(d.high && d.shed_below == 1, "over capacity: the lowest level is shed");
        assert!(d.high, "held while the rate stays over capacity (no probe release)");
        for t in 40..80 {
            d.observe(&obs(t * 10, 0, 0, 340));
        }
        assert!(!d.high, "released once the rate fell");
        // Unknown capacity (the model's 0): the rate alone never enters.
        let mut d = Detector::new(DetectorConfig::default());
        for t in 0..40 {
            d.observe(&obs(t * 10, 0, 40_000, 340));
        }
        assert!(!d.high);
    }

    #[test]
    fn probes_after_a_quiet_period() {
        let mut d = Detector::new(DetectorConfig { probe_ms: 200, ..DetectorConfig::default() });
        d.observe(&obs(0, 0, 4000, 340));
        d.observe(&obs(10, 3, 4000, 340));
        for t in 2..=21 {
            d.observe(&obs(t * 10, 0, 4000, 340));
        }
        assert!(!d.high, "released after 200 ms without overload");
    }

    #[test]
    fn escalates_to_the_next_level_but_never_sheds_the_top() {
        let mut d = Detector::new(DetectorConfig::default());
        let mut o = obs(0, 0, 100, 100);
        o.arrivals[10] = 100;
        d.observe(&o);
        o.t_ns = 10_000_000;
        o.backlog_drops = 1;
        d.observe(&o);
        assert_eq!(d.shed_below, 1);
        for t in 2..40 {
            o.t_ns = t * 10_000_000;
            d.observe(&o);
        }
        assert_eq!(d.shed_below, 11, "levels 0 and 10 shed after escalation, 38 never");
    }

    #[test]
    fn top_socket_drops_and_long_backlogs_count_as_overload() {
        let mut d = Detector::new(DetectorConfig::default());
        let mut o = obs(0, 0, 100, 10);
        d.observe(&o);
        o.t_ns = 10_000_000;
        o.top_socket_drops = 2;
        d.observe(&o);
        assert!(d.high);
        let mut d = Detector::new(DetectorConfig::default());
        o.top_socket_drops = 0;
        o.backlog_len_max = 500;
        d.observe(&o);
        assert!(d.high);
    }

    #[test]
    fn verdicts_follow_the_program() {
        let mut x = XdpPbq::new(DetectorConfig::default(), 400, 10_000_000);
        assert_eq!(x.verdict(0, 0), Verdict::Pass, "low load: everything passes");
        x.detector.high = true;
        x.detector.shed_below = 38;
        // Level 0 keeps 400·1/40 = 10 per window, then drops; level 38 always passes.
        let v: Vec<Verdict> = (0..12).map(|_| x.verdict(1_000, 0)).collect();
        assert_eq!(v.iter().filter(|&&v| v == Verdict::Pass).count(), 10);
        assert_eq!(v[11], Verdict::Drop);
        assert_eq!(x.verdict(1_000, 38), Verdict::Pass);
        // A new window restores the share.
        assert_eq!(x.verdict(20_000_000, 0), Verdict::Pass);
        assert_eq!(x.share_passes, 11);
    }

    #[test]
    fn with_the_drop_off_it_counts_and_passes_everything() {
        let mut x = XdpPbq::new(DetectorConfig::default(), 400, 10_000_000);
        x.drops = false;
        x.detector.high = true;
        x.detector.shed_below = 38;
        assert!((0..100).all(|_| x.verdict(1_000, 0) == Verdict::Pass));
        assert_eq!(x.share_passes, 0);
        // The arrivals still reach the detector: over capacity, high load holds.
        let cfg = DetectorConfig { capacity_pps: 1000.0, ..DetectorConfig::default() };
        let mut x = XdpPbq::new(cfg, 400, 10_000_000);
        x.drops = false;
        x.poll(Observation { t_ns: 0, ..Observation::default() });
        for _ in 0..100 {
            x.verdict(5_000_000, 0);
        }
        x.poll(Observation { t_ns: 10_000_000, ..Observation::default() });
        assert!(x.high_load(), "100 arrivals in 10 ms = 10,000 pkt/s over a capacity of 1,000");
    }
}
