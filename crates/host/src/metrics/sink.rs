//! Metrics of a `stream_sink` source (the far end of a host's TCP sender): bandwidth and the
//! inter-arrival distribution of data frames, as flat `results.csv` columns. A histogram is a
//! family of columns `<name>_h<lo>` (count of values in [lo, next lo)); the last bin holds
//! everything above. The report draws any such family as a histogram (`kind = "histogram"`).
//!
//! The gap thresholds are paper 002's: "<100 µs" (Table 1), "≥ 400 µs" (the long gaps of Figs.
//! 2-3) and "lengthened" = ≥ 1000 µs (notes 002 §4, separating [400, 800) from [1400, 1800)).

use hostsim_workload::{SinkStats, GAP_BIN_NS, SIZE_BINS};
use std::collections::BTreeMap;

/// Width of the `gap_us_h*` columns, µs, and how many (the last: ≥ 3000 µs).
pub const GAP_COL_US: u64 = 100;
pub const GAP_COLS: usize = 31;

fn count_range(gaps: &[u64], lo_us: u64, hi_us: u64) -> u64 {
    let (a, b) = ((lo_us * 1000 / GAP_BIN_NS) as usize, (hi_us * 1000 / GAP_BIN_NS) as usize);
    gaps.iter().take(b.min(gaps.len())).skip(a).sum()
}

/// Centre (µs) of the most populated 10 µs bin in [lo, hi) µs; NaN if it is empty.
fn mode_us(gaps: &[u64], lo_us: u64, hi_us: u64) -> f64 {
    let (a, b) = ((lo_us * 1000 / GAP_BIN_NS) as usize, ((hi_us * 1000 / GAP_BIN_NS) as usize).min(gaps.len()));
    let best = (a..b).filter(|&i| gaps[i] > 0).max_by_key(|&i| (gaps[i], std::cmp::Reverse(i)));
    best.map_or(f64::NAN, |i| (i as u64 * GAP_BIN_NS) as f64 / 1e3 + GAP_BIN_NS as f64 / 2e3)
}

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

pub fn insert(m: &mut BTreeMap<String, f64>, name: &str, s: &SinkStats) {
    let mut put = |k: &str, v: f64| {
        m.insert(format!("{name}_{k}"), v);
    };
    let span_ns = s.first_ns.map_or(0, |f| s.last_ns - f);
    put("bw_mbps", if span_ns == 0 { f64::NAN } else { s.bytes as f64 * 8e3 / span_ns as f64 });
    put("frames", s.frames as f64);
    put("rx_bytes", s.bytes as f64);
    put("acks", s.acks as f64);
    put("out_of_order", s.out_of_order as f64);
    let g = &s.gaps;
    let all: u64 = g.iter().sum();
    for c in 0..GAP_COLS {
        let lo = c as u64 * GAP_COL_US;
        let hi = if c + 1 == GAP_COLS { u64::MAX / 1000 } else { lo + GAP_COL_US };
        put(&format!("gap_us_h{lo}"), count_range(g, lo, hi) as f64);
    }
    for (i, v) in s.short_gap_sizes.iter().enumerate().take(SIZE_BINS) {
        put(&format!("short_gap_size_h{}", i * 100), *v as f64);
    }
    let short = count_range(g, 0, 100);
    let long = count_range(g, 400, u64::MAX / 1000);
    let lengthened = count_range(g, 1000, u64::MAX / 1000);
    put("gaps", all as f64);
    put("short_gaps", short as f64);
    put("short_gap_frac", frac(short, all));
    put("short_gaps_ge1300", s.short_gap_sizes.iter().skip(13).sum::<u64>() as f64);
    put("long_gaps", long as f64);
    put("long_gap_frac_400_800", frac(count_range(g, 400, 800), long));
    put("long_gap_frac_450_650", frac(count_range(g, 450, 650), long));
    put("lengthened_gaps", lengthened as f64);
    put("lengthened_frac", frac(lengthened, long));
    put("kept_frac", frac(long - lengthened, long));
    put("long_gap_mode_us", mode_us(g, 400, 1000));
    put("lengthened_mode_us", mode_us(g, 1000, 5000));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_fractions() {
        let mut s = SinkStats {
            gaps: vec![0; hostsim_workload::GAP_BINS],
            short_gap_sizes: vec![0; SIZE_BINS],
            ..Default::default()
        };
        s.gaps[5] = 10; // 50 us
        s.gaps[55] = 6; // 550 us
        s.gaps[155] = 2; // 1550 us
        s.gaps[500] = 1; // >= 5 ms
        s.first_ns = Some(0);
        s.last_ns = 1_000_000;
        s.bytes = 125_000;
        let mut m = BTreeMap::new();
        insert(&mut m, "x", &s);
        assert_eq!(m["x_bw_mbps"], 1000.0);
        assert_eq!(m["x_gap_us_h0"], 10.0);
        assert_eq!(m["x_gap_us_h500"], 6.0);
        assert_eq!(m["x_gap_us_h1500"], 2.0);
        assert_eq!(m["x_gap_us_h3000"], 1.0);
        assert_eq!(m["x_long_gaps"], 9.0);
        assert_eq!(m["x_lengthened_frac"], 3.0 / 9.0);
        assert_eq!(m["x_long_gap_mode_us"], 555.0);
        assert_eq!(m["x_lengthened_mode_us"], 1555.0);
        assert!(m["x_short_gap_frac"] > 0.5);
    }
}
