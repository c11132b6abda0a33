//! The receiving TCP's advertised window as Linux 3.2 computes it (`kernel.tcp_receiver =
//! "linux"`), per socket. Pure state and arithmetic; `net/ipv4/input.rs` calls it as segments
//! arrive and ACKs leave, `kernel/process.rs` (through `sock_read`) as the reader copies data.
//!
//! Rules, with the 3.2 function each follows (net/ipv4/tcp_input.c, tcp_output.c):
//! - **Space.** `tcp_win_from_space(s) = s − s / 2^tcp_adv_win_scale` (2 until 3.3: 3/4 of the
//!   buffer is window, the rest the sk_buff overhead it costs); `tcp_space` is that of the
//!   receive buffer's free part, `tcp_full_space` of the whole.
//! - **Start** (`tcp_select_initial_window`, `tcp_init_buffer_space`): window scale from
//!   `tcp_rmem[2]` (4 MB → 7), initial window 10 segments (`TCP_DEFAULT_INIT_RCVWND`),
//!   `rcv_ssthresh` = that window, `window_clamp` = the full space.
//! - **Growth** (`tcp_grow_window`, `__tcp_grow_window`): each in-order data segment raises
//!   `rcv_ssthresh` by two segments (up to `window_clamp`) while `rcv_ssthresh` is under the free
//!   space, when its truesize's window is no larger than its payload, or else while
//!   `rcv_ssthresh` is small enough that halving truesize and `tcp_rmem[2]`'s window together
//!   finds a fit.
//! - **Advertised window** (`__tcp_select_window`, `tcp_select_window`): the free space, capped
//!   by `rcv_ssthresh`; 0 when under half the full space and under one segment (silly window
//!   avoidance); rounded up to the window scale; never less than what is still open of the last
//!   advertisement (a window is not shrunk).
//! - **Autotuning** (`tcp_rcv_rtt_measure`, `tcp_rcv_space_adjust`, with
//!   `tcp_moderate_rcvbuf`): the receiver estimates its RTT as the time to receive one window of
//!   data (in jiffies, at least one), and once per estimated RTT sets its buffer to hold twice what
//!   the reader copied in that RTT (in segments of truesize, at most `tcp_rmem[2]`), raising
//!   `window_clamp` to the copied amount; a buffer set by SO_RCVBUF is left alone.
//! - **Window update** (`tcp_cleanup_rbuf`): after a read, if at most half of `window_clamp` is
//!   still open and the new window is at least twice that, an ACK goes out at once.
//!
//! Left out: timestamps (RTT by the window method, 3.2's fallback), memory pressure, the
//! receive-side quick-ACK mode, and the 3.3+ `max(incr, 2 * skb->len)` growth.

/// The window state of one receiving socket.
#[derive(Clone, Debug)]
pub struct RcvWindow {
    /// `advmss`: the segment size the window is counted in.
    mss: u32,
    /// `sk_rcvbuf`, bytes of truesize.
    pub rcvbuf: u32,
    /// SO_RCVBUF set by the program (`SOCK_RCVBUF_LOCK`): no autotuning.
    locked: bool,
    pub window_clamp: u32,
    pub rcv_ssthresh: u32,
    rcv_wscale: u32,
    adv_win_scale: u32,
    rmem_max: u32,
    moderate: bool,
    /// Truesize of a full segment (payload + the model's sk_buff overhead).
    overhead: u32,
    /// `rcvq_space`: the space measured last, the copied sequence and time (jiffies) then.
    space: u32,
    space_seq: u64,
    space_time: u64,
    /// `rcv_rtt_est`: RTT (jiffies << 3, 0 = none yet), the sequence that ends the current
    /// window's measurement and when it began.
    rtt: u64,
    rtt_seq: u64,
    rtt_time: Option<u64>,
    /// `copied_seq`: bytes the reader has taken.
    pub copied: u64,
}

/// Parameters from `[kernel]`.
#[derive(Clone, Copy, Debug)]
pub struct RcvWindowParams {
    pub mss: u32,
    pub tcp_rmem_max: u32,
    pub adv_win_scale: u8,
    pub moderate: bool,
    pub skb_overhead: u32,
}

/// `TCP_DEFAULT_INIT_RCVWND`.
const INIT_RCVWND_SEGMENTS: u32 = 10;

impl RcvWindow {
    /// A socket with buffer `rcvbuf` (`locked`: set by SO_RCVBUF).
    pub fn new(p: RcvWindowParams, rcvbuf: u32, locked: bool) -> RcvWindow {
        let mut w = RcvWindow {
            mss: p.mss.max(1),
            rcvbuf,
            locked,
            window_clamp: 0,
            rcv_ssthresh: 0,
            rcv_wscale: 0,
            adv_win_scale: u32::from(p.adv_win_scale),
            rmem_max: p.tcp_rmem_max,
            moderate: p.moderate,
            overhead: p.skb_overhead,
            space: 0,
            space_seq: 0,
            space_time: 0,
            rtt: 0,
            rtt_seq: 0,
            rtt_time: None,
            copied: 0,
        };
        // tcp_select_initial_window: the scale that fits tcp_rmem[2] in 16 bits.
        let mut space = w.rmem_max;
        while space > 65535 && w.rcv_wscale < 14 {
            space >>= 1;
            w.rcv_wscale += 1;
        }
        let full = w.win_from_space(w.rcvbuf);
        let mut rcv_wnd = if full > w.mss { full / w.mss * w.mss } else { full };
        if w.mss > (1 << w.rcv_wscale) {
            rcv_wnd = rcv_wnd.min(INIT_RCVWND_SEGMENTS * w.mss);
        }
        // tcp_init_buffer_space (tcp_app_win = 31: the clamp is the full space).
        w.window_clamp = full.min(65535 << w.rcv_wscale);
        w.rcv_ssthresh = rcv_wnd.min(w.window_clamp);
        w.space = rcv_wnd;
        w
    }

    /// `tcp_win_from_space`.
    fn win_from_space(&self, space: u32) -> u32 {
        space - (space >> self.adv_win_scale)
    }

    /// `tcp_space`: the window the free part of the buffer holds, `used` bytes of truesize queued.
    fn free_space(&self, used: u32) -> u32 {
        self.win_from_space(self.rcvbuf.saturating_sub(used))
    }

    /// `__tcp_select_window`: the window to advertise now.
    pub fn select(&self, used: u32) -> u32 {
        let full = self.window_clamp.min(self.win_from_space(self.rcvbuf));
        let mss = self.mss.min(full);
        let mut free = self.free_space(used);
        if free < full >> 1 && free < mss {
            return 0;
        }
        free = free.min(self.rcv_ssthresh);
        let s = self.rcv_wscale;
        if (free >> s) << s != free {
            free = ((free >> s) + 1) << s;
        }
        free
    }

    /// `tcp_select_window`: the window for an ACK, when `open` bytes of the last advertisement
    /// are still unused (a window never shrinks).
    pub fn advertise(&self, used: u32, open: u64) -> u32 {
        let new = self.select(used);
        if u64::from(new) < open {
            let s = self.rcv_wscale;
            let open = open.min(u64::from(u32::MAX >> 1)) as u32;
            return open.div_ceil(1 << s) << s;
        }
        new
    }

    /// `tcp_grow_window` for an in-order segment of `len` payload bytes and `truesize`, with
    /// `used` bytes queued.
    pub fn grow(&mut self, used: u32, len: u32, truesize: u32) {
        if self.rcv_ssthresh >= self.window_clamp || self.rcv_ssthresh >= self.free_space(used) {
            return;
        }
        let incr = if self.win_from_space(truesize) <= len {
            2 * self.mss
        } else {
            // __tcp_grow_window
            let mut ts = self.win_from_space(truesize) >> 1;
            let mut window = self.win_from_space(self.rmem_max) >> 1;
            let mut incr = 0;
            while self.rcv_ssthresh <= window {
                if ts <= len {
                    incr = 2 * self.mss;
                    break;
                }
                ts >>= 1;
                window >>= 1;
            }
            incr
        };
        if incr > 0 {
            self.rcv_ssthresh = (self.rcv_ssthresh + incr).min(self.window_clamp);
        }
    }

    /// `tcp_rcv_rtt_measure` (the window method) at an in-order segment: `jiffies` now,
    /// `rcv_nxt` after it, `rcv_wnd` the window last advertised.
    pub fn rtt_measure(&mut self, jiffies: u64, rcv_nxt: u64, rcv_wnd: u32) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            // tcp_rcv_rtt_update(tp, sample, win_dep = 1): keep the minimum.
            let m = (jiffies - t).max(1);
            if self.rtt == 0 || m < self.rtt {
                self.rtt = m << 3;
            }
        }
        self.rtt_seq = rcv_nxt + u64::from(rcv_wnd);
        self.rtt_time = Some(jiffies);
    }

    /// `tcp_rcv_space_adjust` after a read: returns the new `sk_rcvbuf` if autotuning raised it.
    pub fn space_adjust(&mut self, jiffies: u64) -> Option<u32> {
        let time = jiffies.saturating_sub(self.space_time);
        if self.rtt == 0 || time < self.rtt >> 3 {
            return None;
        }
        let mut raised = None;
        let space = (2 * (self.copied - self.space_seq)).min(u64::from(u32::MAX)) as u32;
        let space = space.max(self.space);
        if self.space != space {
            self.space = space;
            if self.moderate && !self.locked {
                let new_clamp = space;
                let segs = (space / self.mss).max(1);
                let mut rcvmem = self.mss + self.overhead;
                while self.win_from_space(rcvmem) < self.mss {
                    rcvmem += 128;
                }
                let buf = segs.saturating_mul(rcvmem).min(self.rmem_max);
                if buf > self.rcvbuf {
                    self.rcvbuf = buf;
                    self.window_clamp = new_clamp;
                    raised = Some(buf);
                }
            }
        }
        self.space_seq = self.copied;
        self.space_time = jiffies;
        raised
    }

    /// `tcp_cleanup_rbuf`'s test: with `open` bytes of the last advertisement unused, does a read
    /// that left `used` bytes queued call for a window update now?
    pub fn update_due(&self, used: u32, open: u64) -> bool {
        if 2 * open > u64::from(self.window_clamp) {
            return false;
        }
        let new = u64::from(self.select(used));
        new > 0 && new >= 2 * open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux32() -> RcvWindowParams {
        RcvWindowParams { mss: 1448, tcp_rmem_max: 4_194_304, adv_win_scale: 2, moderate: true, skb_overhead: 256 }
    }

    #[test]
    fn starts_at_ten_segments_and_grows_two_per_segment() {
        let mut w = RcvWindow::new(linux32(), 87_380, false);
        // 87,380 * 3/4 = 65,535 of window; the first advertisement is 10 segments (scale 7:
        // rounded up to a multiple of 128).
        assert_eq!(w.window_clamp, 65_535);
        assert_eq!(w.rcv_ssthresh, 14_480);
        assert_eq!(w.select(0), 14_592);
        // A 1448-byte segment of truesize 1704 has window 1278 < 1448: __tcp_grow_window's
        // halving finds a fit, so each segment grows the window by two segments.
        w.grow(1704, 1448, 1704);
        assert_eq!(w.rcv_ssthresh, 14_480 + 2 * 1448);
        for _ in 0..100 {
            w.grow(1704, 1448, 1704);
        }
        assert_eq!(w.rcv_ssthresh, 65_535, "up to the clamp");
        // The advertisement is the free space, capped by rcv_ssthresh.
        // 40,000 queued: 47,380 free, 35,535 of window, rounded up to the scale (128).
        assert_eq!(w.select(40_000), 35_584);
        assert_eq!(w.select(86_000), 0, "under one segment free: zero window");
    }

    #[test]
    fn autotuning_follows_the_reader_and_a_set_buffer_stays() {
        let mut w = RcvWindow::new(linux32(), 87_380, false);
        w.rtt_measure(100, 1000, 14_480);
        w.rtt_measure(101, 20_000, 14_480); // one window in one jiffy
        w.copied = 1_000_000; // the reader copied 1 MB in the RTT
        let buf = w.space_adjust(102).expect("raised");
        // 2 MB is 1381 segments of 1448 B; a segment's buffer is its truesize rounded up by 128s
        // until its window holds the segment (1704 -> 1960): 1381 * 1960.
        assert_eq!(buf, 2_706_760);
        assert_eq!(w.window_clamp, 2_000_000);
        let mut locked = RcvWindow::new(linux32(), 87_380, true);
        locked.rtt_measure(100, 1000, 14_480);
        locked.rtt_measure(101, 20_000, 14_480);
        locked.copied = 1_000_000;
        assert_eq!(locked.space_adjust(102), None);
        assert_eq!(locked.rcvbuf, 87_380);
    }

    #[test]
    fn a_window_is_never_shrunk_and_a_freeing_read_updates_it() {
        let w = RcvWindow::new(linux32(), 87_380, false);
        // 80 KB queued: 5.5 KB of window is free, but 14 KB of the last advertisement is open.
        assert_eq!(w.advertise(80_000, 14_000), 14_080);
        assert_eq!(w.advertise(60_000, 14_000), 14_592, "the new window is larger: advertised");
        // The reader drained everything, 2 KB still open: an update is due.
        assert!(w.update_due(0, 2_000));
        assert!(!w.update_due(0, 10_000), "the new window (14.6 KB) is not twice the 10 KB open");
    }
}
