//! Congestion control: Linux's `tcp_congestion_ops` as a closed enum, one module per algorithm
//! (`reno.rs`, `cubic.rs`), and the era's rules around it that every algorithm shares
//! (`tcp_slow_start`, `tcp_cong_avoid_ai`, when the window counts as limiting the sender).
//!
//! The sender (`sender.rs`) calls the hooks as Linux's `tcp_ack` does:
//! - [`Cc::cong_avoid`] for an ACK that acknowledges new data outside recovery, when the window
//!   limited the sender ([`Era::cwnd_limited`]);
//! - [`Cc::pkts_acked`] for every ACK of new data, with the segments it acknowledged and an RTT
//!   sample (CUBIC's delayed-ACK ratio and HyStart);
//! - [`Cc::ssthresh`] on a loss (the third duplicate ACK, or the retransmission timer);
//! - [`Cc::enter_loss`] when the retransmission timer fires (`TCP_CA_Loss`).

mod cubic;
mod reno;
mod window;

pub use cubic::Cubic;
pub use window::{Window, CWND_CLAMP};

use hostsim_engine::Time;
use hostsim_options::options;
use serde::{Deserialize, Serialize};

/// Which congestion control a sender runs (`net.ipv4.tcp_congestion_control`).
#[options]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    /// NewReno-style Reno: Linux 2.4's `tcp_cong_avoid`, 3.2's `tcp_reno_cong_avoid`.
    #[default]
    Reno,
    /// CUBIC v2.3 with HyStart, Linux 3.2's default (`net/ipv4/tcp_cubic.c`).
    Cubic,
}

/// The kernel whose rules the sender follows where the eras differ.
#[options]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// Linux 2.4/2.5: initial window 2 segments, initial RTO 3 s; the window grows on an ACK
    /// only if the packets in flight before it filled the window (2.4 `tcp_ack`:
    /// `prior_in_flight >= tp->snd_cwnd`).
    #[default]
    Linux24,
    /// Linux 3.2: initial window 10 segments (`TCP_INIT_CWND`, 2.6.39), initial RTO 1 s
    /// (`TCP_TIMEOUT_INIT`, 3.1); the window also counts as limiting when at most 3 of its
    /// segments are unused (`tcp_is_cwnd_limited`, `tcp_max_tso_deferred_mss`).
    Linux32,
}

impl Era {
    /// The initial congestion window, segments.
    pub fn initial_cwnd(self) -> u32 {
        match self {
            Era::Linux24 => 2,
            Era::Linux32 => 10,
        }
    }

    /// The initial retransmission timeout.
    pub fn rto_init_ns(self) -> u64 {
        match self {
            Era::Linux24 => 3_000_000_000,
            Era::Linux32 => 1_000_000_000,
        }
    }

    /// Did the window limit the sender, with `in_flight` segments out before the ACK?
    pub fn cwnd_limited(self, cwnd: u32, in_flight: u32) -> bool {
        match self {
            Era::Linux24 => in_flight >= cwnd,
            // 3.2 tcp_is_cwnd_limited without GSO: `left <= tcp_max_tso_deferred_mss(tp)`, 3.
            Era::Linux32 => in_flight >= cwnd || cwnd - in_flight <= 3,
        }
    }
}

/// A sender's congestion control and its state.
#[derive(Clone, Debug)]
pub enum Cc {
    Reno,
    Cubic(Box<Cubic>),
}

impl Cc {
    /// `hz`: the sender's timer frequency (CUBIC counts time in jiffies).
    pub fn new(kind: CcKind, hz: u32) -> Cc {
        match kind {
            CcKind::Reno => Cc::Reno,
            CcKind::Cubic => Cc::Cubic(Box::new(Cubic::new(hz))),
        }
    }

    /// The connection starts (`tcp_init_congestion_control`): CUBIC's HyStart round begins.
    pub fn init(&mut self, now: Time, snd_nxt: u64) {
        if let Cc::Cubic(c) = self {
            c.hystart_reset(now, snd_nxt);
        }
    }

    /// An ACK for `ack` acknowledged new data; the window limited the sender.
    pub fn cong_avoid(&mut self, w: &mut Window, now: Time, ack: u64, snd_nxt: u64) {
        match self {
            Cc::Reno => reno::cong_avoid(w),
            Cc::Cubic(c) => c.cong_avoid(w, now, ack, snd_nxt),
        }
    }

    /// Every ACK of new data: `acked` segments, `rtt_ns` the age of the newest segment it
    /// acknowledged that was never retransmitted (None if there is none); `open`: not in
    /// recovery (`TCP_CA_Open`).
    pub fn pkts_acked(&mut self, w: &mut Window, now: Time, acked: u32, rtt_ns: Option<u64>, open: bool) {
        if let Cc::Cubic(c) = self {
            c.pkts_acked(w, now, acked, rtt_ns, open);
        }
    }

    /// The slow-start threshold after a loss (`.ssthresh`).
    pub fn ssthresh(&mut self, w: &Window) -> u32 {
        match self {
            Cc::Reno => reno::ssthresh(w),
            Cc::Cubic(c) => c.recalc_ssthresh(w),
        }
    }

    /// The retransmission timer fired (`tcp_enter_loss` → `.set_state(TCP_CA_Loss)`).
    pub fn enter_loss(&mut self, now: Time, snd_nxt: u64) {
        if let Cc::Cubic(c) = self {
            c.reset();
            c.hystart_reset(now, snd_nxt);
        }
    }
}
