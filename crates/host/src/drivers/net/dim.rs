//! Dynamic interrupt moderation of a modern NIC: Linux's `net_dim` (lib/dim/net_dim.c,
//! lib/dim/dim.c), as mlx5 runs it on every RX queue by default (`nic.itr_mode = "net_dim_cqe"`
//! or `"net_dim_eqe"`).
//!
//! Why mlx5: the modern profile (`profiles/modern-server-64c.toml`) takes its per-packet costs
//! from the XDP paper (Høiland-Jørgensen et al., CoNEXT 2018), whose 100 GbE NIC is a Mellanox
//! ConnectX-5 (mlx5). Its driver enables DIM on RX queues by default: Linux 6.x
//! `mlx5e_build_nic_params`: `params->rx_dim_enabled = MLX5_CAP_GEN(mdev, cq_moderation)`, in
//! CQE mode when the device reports `cq_period_start_from_cqe` (ConnectX-4 and later do), else
//! EQE mode.
//!
//! Rules (Linux 6.x):
//! - A CQ's moderation is a (usec, pkts) pair: an interrupt once `pkts` completions are pending
//!   or `usec` has passed; in CQE mode the timer restarts at each new completion, in EQE mode it
//!   runs from the previous interrupt (commit "net/mlx5e: CQE based moderation", 2016).
//! - Profiles (`NET_DIM_RX_CQE_PROFILES` / `NET_DIM_RX_EQE_PROFILES`): CQE {2,256} {8,128}
//!   {16,64} {32,64} {64,64}; EQE {1,256} {8,256} {64,256} {128,256} {256,256}; the queue starts
//!   at profile 1 (`NET_DIM_DEF_PROFILE_CQE` = `NET_DIM_DEF_PROFILE_EQE` = 1).
//! - `mlx5e_napi_poll`: after `napi_complete_done`, `mlx5e_handle_rx_dim` samples the queue's
//!   interrupt count (`cq->event_ctr`, one per completion event), packets and bytes, and calls
//!   `net_dim`: a decision every `DIM_NEVENTS` = 64 interrupts, on the rates since the last one
//!   (`dim_calc_stats`: per millisecond, rounded up).
//! - `net_dim_decision` with `net_dim_stats_compare` (bytes/ms first, then packets/ms, then
//!   interrupts/ms; a change counts if it is more than 10%, `IS_SIGNIFICANT_DIFF`): walk the
//!   profiles in one direction while the stats get better, turn when they do not, park on top of
//!   the best (leave when the stats change), park tired after 10 steps (`tired`).
//! - The new profile is written by a work item (`mlx5e_rx_dim_work`) that then restarts the
//!   measurement; here it is applied at once.

pub const NET_DIM_PARAMS_NUM_PROFILES: usize = 5;
/// `DIM_NEVENTS`: interrupts between decisions.
pub const DIM_NEVENTS: u32 = 64;
/// (usec, pkts) of `NET_DIM_RX_CQE_PROFILES`.
pub const RX_CQE_PROFILES: [(u32, u32); NET_DIM_PARAMS_NUM_PROFILES] =
    [(2, 256), (8, 128), (16, 64), (32, 64), (64, 64)];
/// (usec, pkts) of `NET_DIM_RX_EQE_PROFILES`.
pub const RX_EQE_PROFILES: [(u32, u32); NET_DIM_PARAMS_NUM_PROFILES] =
    [(1, 256), (8, 256), (64, 256), (128, 256), (256, 256)];
pub const NET_DIM_DEF_PROFILE: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TuneState {
    #[default]
    ParkingOnTop,
    ParkingTired,
    GoingRight,
    GoingLeft,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum State {
    #[default]
    StartMeasure,
    MeasureInProgress,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sample {
    pub time_ns: u64,
    pub events: u32,
    pub pkts: u64,
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stats {
    pub ppms: u64,
    pub bpms: u64,
    pub epms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Ord, PartialOrd)]
enum Cmp {
    Worse,
    Same,
    Better,
}

/// One RX queue's `struct dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetDim {
    pub cqe_mode: bool,
    pub profile_ix: usize,
    pub tune_state: TuneState,
    state: State,
    start: Sample,
    prev_stats: Stats,
    steps_right: u32,
    steps_left: u32,
    tired: u32,
}

fn div_round_up(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// `dim_calc_stats`; None when no time passed.
pub fn calc_stats(start: &Sample, end: &Sample) -> Option<Stats> {
    let delta_us = end.time_ns.saturating_sub(start.time_ns) / 1000;
    if delta_us == 0 {
        return None;
    }
    Some(Stats {
        ppms: div_round_up((end.pkts - start.pkts) * 1000, delta_us),
        bpms: div_round_up((end.bytes - start.bytes) * 1000, delta_us),
        epms: div_round_up(u64::from(DIM_NEVENTS) * 1000, delta_us),
    })
}

/// `IS_SIGNIFICANT_DIFF`: more than 10% away from `r`.
fn significant(v: u64, r: u64) -> bool {
    r != 0 && 100 * v.abs_diff(r) / r > 10
}

/// `net_dim_stats_compare`.
fn compare(curr: &Stats, prev: &Stats) -> Cmp {
    let up = |better: bool| if better { Cmp::Better } else { Cmp::Worse };
    if prev.bpms == 0 {
        return if curr.bpms != 0 { Cmp::Better } else { Cmp::Same };
    }
    if significant(curr.bpms, prev.bpms) {
        return up(curr.bpms > prev.bpms);
    }
    if prev.ppms == 0 {
        return if curr.ppms != 0 { Cmp::Better } else { Cmp::Same };
    }
    if significant(curr.ppms, prev.ppms) {
        return up(curr.ppms > prev.ppms);
    }
    if prev.epms == 0 {
        return Cmp::Same;
    }
    if significant(curr.epms, prev.epms) {
        return up(curr.epms < prev.epms);
    }
    Cmp::Same
}

#[derive(PartialEq, Eq)]
enum Step {
    Stepped,
    TooTired,
    OnEdge,
}

impl NetDim {
    pub fn new(cqe_mode: bool) -> NetDim {
        NetDim {
            cqe_mode,
            profile_ix: NET_DIM_DEF_PROFILE,
            tune_state: TuneState::ParkingOnTop,
            state: State::StartMeasure,
            start: Sample::default(),
            prev_stats: Stats::default(),
            steps_right: 0,
            steps_left: 0,
            tired: 0,
        }
    }

    /// The queue's moderation now: (usec, pkts).
    pub fn moderation(&self) -> (u32, u32) {
        if self.cqe_mode {
            RX_CQE_PROFILES[self.profile_ix]
        } else {
            RX_EQE_PROFILES[self.profile_ix]
        }
    }

    /// `net_dim_step`.
    fn step(&mut self) -> Step {
        if self.tired == (NET_DIM_PARAMS_NUM_PROFILES * 2) as u32 {
            return Step::TooTired;
        }
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => {}
            TuneState::GoingRight => {
                if self.profile_ix == NET_DIM_PARAMS_NUM_PROFILES - 1 {
                    return Step::OnEdge;
                }
                self.profile_ix += 1;
                self.steps_right += 1;
            }
            TuneState::GoingLeft => {
                if self.profile_ix == 0 {
                    return Step::OnEdge;
                }
                self.profile_ix -= 1;
                self.steps_left += 1;
            }
        }
        self.tired += 1;
        Step::Stepped
    }

    /// `net_dim_exit_parking`.
    fn exit_parking(&mut self) {
        self.tune_state = if self.profile_ix != 0 { TuneState::GoingLeft } else { TuneState::GoingRight };
        self.step();
    }

    /// `dim_on_top`.
    fn on_top(&self) -> bool {
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => true,
            TuneState::GoingRight => self.steps_left > 1 && self.steps_right == 1,
            TuneState::GoingLeft => self.steps_right > 1 && self.steps_left == 1,
        }
    }

    /// `dim_turn`.
    fn turn(&mut self) {
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => {}
            TuneState::GoingRight => {
                self.tune_state = TuneState::GoingLeft;
                self.steps_left = 0;
            }
            TuneState::GoingLeft => {
                self.tune_state = TuneState::GoingRight;
                self.steps_right = 0;
            }
        }
    }

    fn park_on_top(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tired = 0;
        self.tune_state = TuneState::ParkingOnTop;
    }

    fn park_tired(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tune_state = TuneState::ParkingTired;
    }

    /// `net_dim_decision`: true if the profile changed.
    fn decision(&mut self, curr: &Stats) -> bool {
        let prev_state = self.tune_state;
        let prev_ix = self.profile_ix;
        match self.tune_state {
            TuneState::ParkingOnTop => {
                if compare(curr, &self.prev_stats) != Cmp::Same {
                    self.exit_parking();
                }
            }
            TuneState::ParkingTired => {
                self.tired -= 1;
                if self.tired == 0 {
                    self.exit_parking();
                }
            }
            TuneState::GoingRight | TuneState::GoingLeft => {
                if compare(curr, &self.prev_stats) != Cmp::Better {
                    self.turn();
                }
                if self.on_top() {
                    self.park_on_top();
                } else {
                    match self.step() {
                        Step::OnEdge => self.park_on_top(),
                        Step::TooTired => self.park_tired(),
                        Step::Stepped => {}
                    }
                }
            }
        }
        if prev_state != TuneState::ParkingOnTop || self.tune_state != TuneState::ParkingOnTop {
            self.prev_stats = *curr;
        }
        self.profile_ix != prev_ix
    }

    /// `net_dim` at a poll's completion with the queue's counters. True if the moderation
    /// changed (applied at once; the driver's work item then restarts the measurement).
    pub fn sample(&mut self, end: Sample) -> bool {
        if self.state == State::MeasureInProgress {
            if end.events.wrapping_sub(self.start.events) < DIM_NEVENTS {
                return false;
            }
            if let Some(curr) = calc_stats(&self.start, &end) {
                if self.decision(&curr) {
                    self.state = State::StartMeasure;
                    return true;
                }
            }
        }
        self.start = end;
        self.state = State::MeasureInProgress;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_stats_compare_is_bytes_then_packets_then_events() {
        let p = Stats { ppms: 100, bpms: 1000, epms: 10 };
        assert_eq!(compare(&Stats { bpms: 1200, ..p }, &p), Cmp::Better);
        assert_eq!(compare(&Stats { bpms: 800, ppms: 500, ..p }, &p), Cmp::Worse);
        // Bytes within 10%: packets decide.
        assert_eq!(compare(&Stats { bpms: 1050, ppms: 150, ..p }, &p), Cmp::Better);
        // Bytes and packets within 10%: fewer interrupts are better.
        assert_eq!(compare(&Stats { epms: 5, ..p }, &p), Cmp::Better);
        assert_eq!(compare(&Stats { epms: 20, ..p }, &p), Cmp::Worse);
        assert_eq!(compare(&Stats { bpms: 1100, ppms: 110, epms: 11 }, &p), Cmp::Same);
    }

    #[test]
    fn a_decision_every_64_interrupts_and_better_stats_keep_the_direction() {
        let mut d = NetDim::new(true);
        let mut t = 0;
        let mut ev = 0;
        let mut b = 0;
        d.sample(Sample { time_ns: t, events: ev, pkts: 0, bytes: b });
        // 63 interrupts: no decision.
        t += 1_000_000;
        ev += 63;
        b += 1_000_000;
        assert!(!d.sample(Sample { time_ns: t, events: ev, pkts: b / 1000, bytes: b }));
        // The 64th: bytes went from nothing to something, better: parking is left towards the
        // left (the profile index is not 0), one step.
        ev += 1;
        assert!(d.sample(Sample { time_ns: t, events: ev, pkts: b / 1000, bytes: b }));
        assert_eq!((d.profile_ix, d.tune_state), (0, TuneState::GoingLeft));
        assert_eq!(d.moderation(), (2, 256));
    }

    proptest! {
        /// Whatever the load, the profile stays within the table, moves at most one step per
        /// decision, and decisions come only at 64 interrupts or more since the measurement began.
        #[test]
        fn one_step_per_decision(
            polls in proptest::collection::vec((1u64..2_000_000, 0u32..80, 0u64..5_000, 0u64..2_000), 1..300),
            cqe in any::<bool>(),
        ) {
            let mut d = NetDim::new(cqe);
            let mut s = Sample::default();
            let mut since_start = 0u32;
            for &(dt, ev, pk, bpp) in &polls {
                s.time_ns += dt;
                s.events += ev;
                s.pkts += pk;
                s.bytes += pk * bpp;
                since_start += ev;
                let before = d.profile_ix;
                let changed = d.sample(s);
                prop_assert!(d.profile_ix < NET_DIM_PARAMS_NUM_PROFILES);
                prop_assert!(d.profile_ix.abs_diff(before) <= 1);
                prop_assert_eq!(changed, d.profile_ix != before);
                if changed {
                    prop_assert!(since_start >= DIM_NEVENTS);
                }
                if d.state == State::MeasureInProgress && d.start == s {
                    since_start = 0;
                }
            }
        }
    }
}
