//! Reno: Linux 2.4's `tcp_cong_avoid` (net/ipv4/tcp_input.c) and 3.2's `tcp_reno_cong_avoid` /
//! `tcp_reno_ssthresh` (net/ipv4/tcp_cong.c), which are the same rules: slow start by one
//! segment per ACK while `snd_cwnd <= snd_ssthresh`, then one segment per window of ACKs; on a
//! loss, half the window (at least 2).

use super::window::Window;

pub fn cong_avoid(w: &mut Window) {
    if w.in_slow_start() {
        w.slow_start();
    } else {
        let cwnd = w.cwnd;
        w.cong_avoid_ai(cwnd);
    }
}

/// 2.4 `tcp_recalc_ssthresh`, 3.2 `tcp_reno_ssthresh`: `max(snd_cwnd >> 1, 2)`.
pub fn ssthresh(w: &Window) -> u32 {
    (w.cwnd >> 1).max(2)
}
