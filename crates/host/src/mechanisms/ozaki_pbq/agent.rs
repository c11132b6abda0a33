//! The XDP program's agent (`kernel.xdp = "pbq"` or `"detect"`; crates/live/src/ozaki_pbq/agent.rs does the
//! same on the kernel's counters): every `xdp_poll_ms` it reads the backlog drops, the longest
//! backlog and the drops at the sockets of the highest priority level bound since its previous
//! poll, and feeds them with the program's arrival counts to the detector (`xdp.rs`), which sets
//! the program's high-load flag. A timer of the mechanism's (the host's `Ev::Mech`), costing no
//! CPU time, stands for the user-space agent.

use super::options::OzakiOptions;
use super::xdp::{DetectorConfig, Observation, XdpPbq};
use crate::hooks::{part, timer_id, Packets, Part, Project, Reach, Timers};
use crate::types::DropPlace;
use hostsim_engine::{Time, Timer};

/// The program at the driver's entry point and its agent's state.
pub struct XdpAgent {
    pub prog: XdpPbq,
    /// Counters at the previous poll: backlog drops, top-level socket drops.
    last_poll: (u64, u64),
    /// Time the agent held the high-load flag (in whole polls), and at the end of the warm-up.
    pub high_load_ns: u64,
    pub warm_high_load_ns: u64,
    timer: Timer,
    poll_ms: u64,
}

/// The agent's timer (its mechanism-local id).
pub const TIMER: u32 = 0;

impl XdpAgent {
    /// The program of `kernel.xdp` (`pbq`, or `detect`: `drops` off) and its agent.
    pub fn new(k: &OzakiOptions, drops: bool) -> XdpAgent {
        let cfg = DetectorConfig {
            backlog_len_high: u64::from(k.xdp_backlog_len_high),
            release_frac: k.xdp_release_frac,
            hold_ms: k.xdp_hold_ms,
            escalate_ms: k.xdp_escalate_ms,
            probe_ms: k.xdp_probe_ms,
            capacity_pps: k.xdp_capacity_pps,
            capacity_frac: k.xdp_capacity_frac,
        };
        let mut prog = XdpPbq::new(cfg, k.xdp_min_share_top, k.xdp_window_ms * 1_000_000);
        prog.drops = drops;
        XdpAgent {
            prog,
            last_poll: (0, 0),
            high_load_ns: 0,
            warm_high_load_ns: 0,
            timer: Timer::new(),
            poll_ms: k.xdp_poll_ms.max(1),
        }
    }
}

/// Where a mechanism keeps its agent (None: no program of its at the driver's entry point).
pub type Slot = Option<Box<XdpAgent>>;

/// The first poll, one period after the start.
pub fn start<S: Part<Slot>, M: Project<S>, H: Reach<M> + Timers>(h: &mut H) {
    let Some(a) = part::<Slot, S, M>(h).as_mut() else { return };
    let (gen, at) = (a.timer.arm(), Time::from_ms(a.poll_ms));
    h.poll_at(timer_id::<S, M>(TIMER), gen, at);
}

/// The poll (its timer fired): observe, then poll again one period later.
pub fn poll<S: Part<Slot>, M: Project<S>, H: Reach<M> + Packets + Timers>(h: &mut H, gen: u32) {
    let Some(a) = part::<Slot, S, M>(h).as_mut() else { return };
    if !a.timer.fires(gen) {
        return;
    }
    let backlog_drops = h.drops(DropPlace::Backlog);
    let (top_drops, _) = h.top_level_sockets();
    let backlog_len_max = h.backlog_len_max();
    let now = h.now();
    let a = part::<Slot, S, M>(h).as_mut().expect("checked");
    let (last_b, last_t) = a.last_poll;
    a.last_poll = (backlog_drops, top_drops);
    let was_high = a.prog.high_load();
    a.prog.poll(Observation {
        t_ns: now.ns(),
        backlog_drops: backlog_drops - last_b,
        backlog_len_max,
        top_socket_drops: top_drops - last_t,
        ..Observation::default()
    });
    if was_high {
        a.high_load_ns += a.poll_ms * 1_000_000;
    }
    let (gen, at) = (a.timer.arm(), now + Time::from_ms(a.poll_ms));
    h.poll_at(timer_id::<S, M>(TIMER), gen, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::Verdict;

    /// 40 polls 10 ms apart, each after `per_poll` frames of level 0 and 340 of level 39 (the
    /// live twin's bw): whether the program ends in high load.
    fn high_after(k: &OzakiOptions, per_poll: u64) -> bool {
        let mut x = XdpAgent::new(k, true).prog;
        for t in 0..40u64 {
            for _ in 0..per_poll {
                let _: Verdict = x.verdict(t * 10_000_000, 0);
            }
            for _ in 0..340 {
                x.verdict(t * 10_000_000, 39);
            }
            x.poll(Observation { t_ns: (t + 1) * 10_000_000, ..Observation::default() });
        }
        x.high_load()
    }

    #[test]
    fn the_kernel_capacity_option_reaches_the_detector() {
        // 4,000 + 340 frames per 10 ms = 434,000 pkt/s against 400,000: over 90% of it.
        let on = OzakiOptions { xdp_capacity_pps: 400_000.0, ..OzakiOptions::default() };
        assert!(high_after(&on, 4000), "the arrival rate over the capacity is overload");
        assert!(!high_after(&on, 2000), "234,000 pkt/s is under 90% of 400,000");
        // Default 0: no capacity sign; no backlog or socket counter moved, so no high load.
        let off = OzakiOptions::default();
        assert!(!high_after(&off, 4000));
    }

    #[test]
    fn the_capacity_fraction_option_reaches_the_detector() {
        // 2,000 + 340 frames per 10 ms = 234,000 pkt/s: under 90% of 400,000, over half of it.
        let half = OzakiOptions { xdp_capacity_pps: 400_000.0, xdp_capacity_frac: 0.5, ..OzakiOptions::default() };
        assert!(high_after(&half, 2000), "234,000 pkt/s is over 50% of 400,000");
        assert!(!high_after(&half, 1500), "184,000 pkt/s is under 50% of 400,000");
        assert_eq!(OzakiOptions::default().xdp_capacity_frac, DetectorConfig::default().capacity_frac);
    }
}
