//! CUBIC v2.3 with HyStart, as Linux 3.2 runs it (net/ipv4/tcp_cubic.c; read here in the 3.6
//! text, which differs from 3.2's only by 3.4's `ACK_RATIO_LIMIT` clamp on the delayed-ACK
//! ratio, left out). Integer arithmetic and jiffies as the kernel has them:
//!
//! - After a loss the window follows W(t) = C·(t − K)³ + W_max (C = 41/1024 · 10, in the kernel's
//!   2^10-per-second time unit; K the time to regain W_max; `cubic_root` is the kernel's table and
//!   one Newton step), at most one segment per 2 ACKs, never slower than the Reno window the same
//!   ACKs would give (`tcp_friendliness`), scaled by the measured delayed-ACK ratio.
//! - On a loss: W_max = cwnd (or 0.86 · cwnd with fast convergence when the window shrank since
//!   the last loss), ssthresh = 717/1024 · cwnd.
//! - HyStart leaves slow start (ssthresh = cwnd) once cwnd ≥ 16 when either ACKs keep arriving
//!   within 2 ms of each other for longer than a quarter of the minimum delay after a round's
//!   start (ACK train), or a round's RTT over its first 8 ACKs exceeds the minimum by
//!   clamp(min/16, 4 ms, 16 ms) (delay increase).
//!
//! Time is the sender's `jiffies` at its HZ (`tcp_time_stamp`), so on a LAN every RTT is 0 or 1
//! jiffy at HZ = 1000: 3.2's HyStart then sees `delay_min` = 1/8 ms and its ACK-train test passes
//! as soon as a round spans a jiffy boundary, ending slow start at about 16 segments. That is what
//! 3.2 did on a LAN (later kernels moved HyStart to microseconds); the model keeps it. The
//! sender's clock starts an hour after boot (`jiffies` = (3600 − 300)·HZ, INITIAL_JIFFIES being
//! −300·HZ), so that no test on a jiffies difference sees the boot.

use super::window::Window;
use hostsim_engine::Time;

const BICTCP_BETA_SCALE: u32 = 1024;
/// 2^10 time units per second.
const BICTCP_HZ: u32 = 10;
const BETA: u32 = 717;
const BIC_SCALE: u32 = 41;
const HYSTART_ACK_TRAIN: u8 = 0x1;
const HYSTART_DELAY: u8 = 0x2;
const HYSTART_DETECT: u8 = HYSTART_ACK_TRAIN | HYSTART_DELAY;
const HYSTART_MIN_SAMPLES: u8 = 8;
const HYSTART_DELAY_MIN: u32 = 4 << 3;
const HYSTART_DELAY_MAX: u32 = 16 << 3;
const HYSTART_LOW_WINDOW: u32 = 16;
/// ms.
const HYSTART_ACK_DELTA: u32 = 2;
const ACK_RATIO_SHIFT: u32 = 4;
/// `cube_rtt_scale = bic_scale * 10`.
const CUBE_RTT_SCALE: u64 = (BIC_SCALE * 10) as u64;
/// `beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta)` = 15.
const BETA_SCALE: u32 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
/// `cube_factor = 2^(10 + 3·BICTCP_HZ) / (bic_scale · 10)`.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE as u64 * 10);

/// `struct bictcp`, plus the sender's HZ.
#[derive(Clone, Debug)]
pub struct Cubic {
    hz: u32,
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    /// Minimum delay, ms << 3.
    delay_min: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    /// Packets per ACK << 4.
    delayed_ack: u16,
    sample_cnt: u8,
    found: u8,
    round_start: u32,
    end_seq: u64,
    last_ack: u32,
    curr_rtt: u32,
}

/// `cubic_root`: a table lookup and one Newton-Raphson step (average error ~0.2%).
fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168, 170, 173, 176,
        179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224,
        225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let fls = 64 - a.leading_zeros();
    if fls < 7 {
        return (u32::from(V[a as usize]) + 35) >> 6;
    }
    let b = ((fls * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x = ((u32::from(V[shift]) + 10) << b) >> 6;
    x = 2 * x + (a / (u64::from(x) * u64::from(x - 1))) as u32;
    (x * 341) >> 10
}

/// `(s32)(a - b)`: jiffies compared across the 32-bit wrap.
fn diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

impl Cubic {
    pub fn new(hz: u32) -> Cubic {
        let mut c = Cubic {
            hz: hz.max(1),
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            sample_cnt: 0,
            found: 0,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: 0,
        };
        c.reset();
        c
    }

    /// `tcp_time_stamp` (jiffies) at `now`.
    fn jiffies(&self, now: Time) -> u32 {
        let boot = 3300u64 * u64::from(self.hz);
        (boot + now.ns() / (1_000_000_000 / u64::from(self.hz))) as u32
    }

    /// `bictcp_clock`: ms, from jiffies when HZ >= 1000, else from the real-time clock.
    fn clock_ms(&self, now: Time) -> u32 {
        if self.hz >= 1000 {
            (u64::from(self.jiffies(now)) * 1000 / u64::from(self.hz)) as u32
        } else {
            (3_300_000 + now.ns() / 1_000_000) as u32
        }
    }

    /// `bictcp_reset`.
    pub fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = 0;
    }

    /// `bictcp_hystart_reset`: a new round starts at `snd_nxt`.
    pub fn hystart_reset(&mut self, now: Time, snd_nxt: u64) {
        let t = self.clock_ms(now);
        self.round_start = t;
        self.last_ack = t;
        self.end_seq = snd_nxt;
        self.curr_rtt = 0;
        self.sample_cnt = 0;
    }

    /// `bictcp_update`: how many ACKs per window increment (`cnt`).
    fn update(&mut self, cwnd: u32, now: Time) {
        let ts = self.jiffies(now);
        self.ack_cnt = self.ack_cnt.wrapping_add(1);
        if self.last_cwnd == cwnd && diff(ts, self.last_time) <= (self.hz / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = ts;
        if self.epoch_start == 0 {
            self.epoch_start = ts;
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                self.bic_k = cubic_root(CUBE_FACTOR * u64::from(self.last_max_cwnd - cwnd));
                self.bic_origin_point = self.last_max_cwnd;
            }
        }
        // msecs_to_jiffies(delay_min >> 3), rounding up as the kernel does.
        let dmin_j = (u64::from(self.delay_min >> 3) * u64::from(self.hz)).div_ceil(1000) as u32;
        let t = ((ts.wrapping_add(dmin_j).wrapping_sub(self.epoch_start) as u64) << BICTCP_HZ) / u64::from(self.hz);
        let t = t as u32;
        let offs = u64::from(self.bic_k.abs_diff(t));
        let delta = ((CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as u32;
        let bic_target = if t < self.bic_k {
            self.bic_origin_point.wrapping_sub(delta)
        } else {
            self.bic_origin_point.wrapping_add(delta)
        };
        self.cnt = if bic_target > cwnd { cwnd / (bic_target - cwnd) } else { 100 * cwnd };
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20; // increase cwnd 5% per RTT
        }
        // TCP friendliness: never slower than Reno.
        let delta = (cwnd * BETA_SCALE) >> 3;
        while delta > 0 && self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
            }
        }
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / u32::from(self.delayed_ack).max(1);
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }

    /// `bictcp_cong_avoid` (the caller has checked `tcp_is_cwnd_limited`).
    pub fn cong_avoid(&mut self, w: &mut Window, now: Time, ack: u64, snd_nxt: u64) {
        if w.in_slow_start() {
            if ack > self.end_seq {
                self.hystart_reset(now, snd_nxt);
            }
            w.slow_start();
        } else {
            self.update(w.cwnd, now);
            let cnt = self.cnt;
            w.cong_avoid_ai(cnt);
        }
    }

    /// `bictcp_recalc_ssthresh`.
    pub fn recalc_ssthresh(&mut self, w: &Window) -> u32 {
        self.epoch_start = 0;
        self.last_max_cwnd = if w.cwnd < self.last_max_cwnd {
            // fast convergence
            (w.cwnd * (BICTCP_BETA_SCALE + BETA)) / (2 * BICTCP_BETA_SCALE)
        } else {
            w.cwnd
        };
        ((w.cwnd * BETA) / BICTCP_BETA_SCALE).max(2)
    }

    /// `bictcp_acked`: the delayed-ACK ratio, then HyStart's delay samples.
    pub fn pkts_acked(&mut self, w: &mut Window, now: Time, acked: u32, rtt_ns: Option<u64>, open: bool) {
        if open {
            let d = u32::from(self.delayed_ack);
            self.delayed_ack = (d - (d >> ACK_RATIO_SHIFT) + acked) as u16;
        }
        let Some(rtt_ns) = rtt_ns else { return };
        let ts = self.jiffies(now);
        if diff(ts, self.epoch_start) < self.hz as i32 {
            return; // discard delay samples right after fast recovery
        }
        // rtt_us: with HZ >= 1000 the kernel measures in jiffies (ca_seq_rtt, jiffies_to_usecs),
        // else with the real-time stamp (TCP_CONG_RTT_STAMP).
        let rtt_us = if self.hz >= 1000 {
            let tick = 1_000_000_000 / u64::from(self.hz);
            let sent = now.ns().saturating_sub(rtt_ns);
            let j = now.ns() / tick - sent / tick;
            j * 1_000_000 / u64::from(self.hz)
        } else {
            rtt_ns / 1000
        };
        let mut delay = ((rtt_us << 3) / 1000) as u32;
        if delay == 0 {
            delay = 1;
        }
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if w.in_slow_start() && w.cwnd >= HYSTART_LOW_WINDOW {
            self.hystart_update(w, delay, now);
        }
    }

    /// `hystart_update`.
    fn hystart_update(&mut self, w: &mut Window, delay: u32, now: Time) {
        if self.found & HYSTART_DETECT != 0 {
            return;
        }
        let t = self.clock_ms(now);
        if diff(t, self.last_ack) <= HYSTART_ACK_DELTA as i32 {
            self.last_ack = t;
            if diff(t, self.round_start) > (self.delay_min >> 4) as i32 {
                self.found |= HYSTART_ACK_TRAIN;
            }
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            if self.curr_rtt == 0 || self.curr_rtt > delay {
                self.curr_rtt = delay;
            }
            self.sample_cnt += 1;
        } else if self.curr_rtt > self.delay_min + (self.delay_min >> 4).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX) {
            self.found |= HYSTART_DELAY;
        }
        if self.found & HYSTART_DETECT != 0 {
            w.ssthresh = w.cwnd;
        }
    }

    /// Was slow start ended by HyStart (for tests and statistics)?
    pub fn hystart_found(&self) -> bool {
        self.found & HYSTART_DETECT != 0
    }

    /// W_max, segments.
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubic_root_is_within_a_percent() {
        for a in [1u64, 7, 63, 64, 1000, 123_456, 1 << 30, 1 << 40, 987_654_321_012] {
            let r = cubic_root(a) as f64;
            let exact = (a as f64).cbrt();
            assert!((r - exact).abs() <= exact * 0.01 + 1.0, "cbrt({a}) = {r}, exact {exact}");
        }
    }

    #[test]
    fn loss_sets_wmax_and_beta() {
        let mut c = Cubic::new(1000);
        let w = Window { cwnd: 100, ssthresh: 50, cwnd_cnt: 0 };
        assert_eq!(c.recalc_ssthresh(&w), 70); // 100 * 717 / 1024
        assert_eq!(c.last_max_cwnd(), 100);
        // A second loss below W_max: fast convergence releases bandwidth, W_max = 0.85 cwnd.
        let w = Window { cwnd: 80, ..w };
        assert_eq!(c.recalc_ssthresh(&w), 56);
        assert_eq!(c.last_max_cwnd(), 80 * 1741 / 2048);
    }

    #[test]
    fn the_window_follows_the_cubic_curve_back_to_wmax() {
        // A loss at W_max = 100 leaves cwnd = 70; then an ACK per segment over a 100 ms RTT. The
        // curve W(t) = 100 - 0.4 (K - t)^3 with K = cbrt(30 / 0.4) = 4.2 s gives 87, 96 and 99.4
        // after 1, 2 and 3 s: concave, flat near W_max, which it reaches around K.
        let mut c = Cubic::new(1000);
        let mut w = Window { cwnd: 100, ssthresh: 100, cwnd_cnt: 0 };
        w.cwnd = c.recalc_ssthresh(&w);
        w.ssthresh = w.cwnd;
        let mut at = Vec::new();
        for rtt in 0..45u64 {
            let acks = u64::from(w.cwnd);
            for k in 0..acks {
                c.cong_avoid(&mut w, Time((rtt * 100 + 100 * k / acks) * 1_000_000), u64::MAX, 0);
            }
            at.push(w.cwnd);
        }
        let (w1, w2, w3, w45) = (at[9], at[19], at[29], at[44]);
        assert!((85..=90).contains(&w1), "1 s: {w1}");
        assert!((94..=98).contains(&w2), "2 s: {w2}");
        assert!((98..=101).contains(&w3), "3 s: {w3}");
        assert!((100..=102).contains(&w45), "4.5 s, past K: {w45}");
        assert!(w1 - 70 > w3 - w2, "concave below W_max");
    }

    #[test]
    fn hystart_ends_slow_start_on_a_lan_at_16_segments() {
        // 3.2 at HZ = 1000 on a LAN: RTT samples are 0 jiffies, so delay_min = 1/8 ms and the ACK
        // train test passes once a round spans a jiffy boundary.
        let mut c = Cubic::new(1000);
        let mut w = Window { cwnd: 10, ssthresh: u32::MAX / 2, cwnd_cnt: 0 };
        c.hystart_reset(Time(0), 0);
        let mut seq = 0u64;
        let mut t = 0u64;
        while !c.hystart_found() && t < 50_000_000 {
            t += 50_000; // an ACK every 50 us
            seq += 1;
            let nxt = seq + u64::from(w.cwnd);
            c.cong_avoid(&mut w, Time(t), seq, nxt);
            c.pkts_acked(&mut w, Time(t), 1, Some(40_000), true);
        }
        assert!(c.hystart_found(), "HyStart never fired");
        assert!(w.cwnd >= 16 && w.cwnd < 64, "slow start ended at cwnd {}", w.cwnd);
        assert_eq!(w.ssthresh, w.cwnd);
    }
}
