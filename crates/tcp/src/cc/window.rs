//! The window state every algorithm's hooks change, and the era's rules that change it alike
//! (`tcp_slow_start`, `tcp_cong_avoid_ai`): apart from `mod.rs`, which dispatches to the
//! algorithms, so that an algorithm's module needs only this one.

/// The window state the hooks change: `snd_cwnd`, `snd_ssthresh`, `snd_cwnd_cnt` (segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    pub cwnd_cnt: u32,
}

/// Linux's `snd_cwnd_clamp` default (`tp->snd_cwnd_clamp = ~0` capped to 16 bits in 2.4).
pub const CWND_CLAMP: u32 = 65_535;

impl Window {
    /// 3.2 `tcp_slow_start` with `tcp_abc = 0` and no `tcp_max_ssthresh` (2.4's slow start is
    /// the same): one segment per ACK.
    pub fn slow_start(&mut self) {
        self.cwnd_cnt += self.cwnd;
        while self.cwnd_cnt >= self.cwnd {
            self.cwnd_cnt -= self.cwnd;
            if self.cwnd < CWND_CLAMP {
                self.cwnd += 1;
            }
        }
    }

    /// `tcp_cong_avoid_ai(tp, w)`: one segment after `w` ACKs.
    pub fn cong_avoid_ai(&mut self, w: u32) {
        if self.cwnd_cnt >= w {
            if self.cwnd < CWND_CLAMP {
                self.cwnd += 1;
            }
            self.cwnd_cnt = 0;
        } else {
            self.cwnd_cnt += 1;
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd <= self.ssthresh
    }
}
