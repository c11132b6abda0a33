//! Statistics with bounded memory: counters, HDR latency histograms, fixed-interval time series.

use hdrhistogram::Histogram as Hdr;
use std::cell::RefCell;

/// A monotonically increasing count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter(pub u64);

impl Counter {
    pub fn inc(&mut self) {
        self.0 += 1;
    }
    pub fn add(&mut self, n: u64) {
        self.0 += n;
    }
    pub fn get(&self) -> u64 {
        self.0
    }
}

/// A latency histogram in nanoseconds: 3 significant digits from 1 ns to 1 hour, fixed memory
/// (HdrHistogram, ~270 KB, allocated at the first value: a histogram that never records, such
/// as a kernel thread's, costs nothing). Values above the range are clamped to it and counted in
/// `clamped`.
///
/// `record` puts a value in a small buffer and the buffer goes into the HdrHistogram
/// [`PENDING_MAX`] values at a time (and before anything is read): a histogram's counts are
/// spread over its ~270 KB, so one count bumped per packet was a cache miss on the packet's
/// path (the 64-CPU bench case's 48 readers: ~6 % of the run, nearly all on that one
/// increment), while a batch's increments are independent and their misses overlap. Counts,
/// minimum, maximum and quantiles depend only on the values recorded, never on when they were
/// counted in: every figure is the same as recording each value at once.
#[derive(Clone, Debug)]
pub struct Histogram {
    hdr: RefCell<Option<Hdr<u64>>>,
    /// Values recorded (already clamped) and not yet counted into `hdr`.
    pending: RefCell<Vec<u64>>,
    sum: u128,
    clamped: u64,
}

const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Values buffered before they are counted into the HdrHistogram (2 KB of buffer).
pub const PENDING_MAX: usize = 256;

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Histogram { hdr: RefCell::new(None), pending: RefCell::new(Vec::new()), sum: 0, clamped: 0 }
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(1, HIGHEST_NS);
        if v != ns && ns > HIGHEST_NS {
            self.clamped += 1;
        }
        self.sum += u128::from(ns);
        let pending = self.pending.get_mut();
        if pending.capacity() == 0 {
            pending.reserve_exact(PENDING_MAX);
        }
        pending.push(v);
        if pending.len() == PENDING_MAX {
            self.flush();
        }
    }
    /// Count the buffered values into the HdrHistogram.
    #[inline(never)]
    fn flush(&self) {
        let mut pending = self.pending.borrow_mut();
        if pending.is_empty() {
            return;
        }
        let mut hdr = self.hdr.borrow_mut();
        let hdr = hdr.get_or_insert_with(|| Hdr::new_with_bounds(1, HIGHEST_NS, 3).expect("static bounds are valid"));
        for &v in pending.iter() {
            hdr.record(v).expect("value clamped into range");
        }
        pending.clear();
    }
    /// `f` of the HdrHistogram with every value recorded so far counted in (0 if none).
    fn read(&self, f: impl FnOnce(&Hdr<u64>) -> u64) -> u64 {
        self.flush();
        self.hdr.borrow().as_ref().map_or(0, f)
    }
    pub fn count(&self) -> u64 {
        self.hdr.borrow().as_ref().map_or(0, |h| h.len()) + self.pending.borrow().len() as u64
    }
    /// Exact mean of the recorded values (not the bucketed one).
    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum as f64 / self.count() as f64
        }
    }
    /// Value at quantile `q` in [0, 1] (bucket precision: 3 significant digits).
    pub fn quantile(&self, q: f64) -> u64 {
        self.read(|h| h.value_at_quantile(q))
    }
    pub fn max(&self) -> u64 {
        self.read(|h| h.max())
    }
    pub fn min(&self) -> u64 {
        self.read(|h| h.min())
    }
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
    pub fn reset(&mut self) {
        if let Some(h) = self.hdr.get_mut() {
            h.reset();
        }
        self.pending.get_mut().clear();
        self.sum = 0;
        self.clamped = 0;
    }
}

/// A table sampled every `interval_ns`: one row per interval, one column per named series.
/// Memory grows by one row per interval, independent of the event rate.
#[derive(Clone, Debug)]
pub struct TimeSeries {
    pub interval_ns: u64,
    columns: Vec<String>,
    values: Vec<f64>,
}

impl TimeSeries {
    pub fn new(interval_ns: u64, columns: Vec<String>) -> Self {
        assert!(interval_ns > 0, "time series interval must be positive");
        TimeSeries { interval_ns, columns, values: Vec::new() }
    }
    pub fn columns(&self) -> &[String] {
        &self.columns
    }
    pub fn push_row(&mut self, row: &[f64]) {
        assert_eq!(row.len(), self.columns.len(), "time series row width");
        self.values.extend_from_slice(row);
    }
    pub fn rows(&self) -> impl Iterator<Item = &[f64]> {
        self.values.chunks(self.columns.len().max(1))
    }
    pub fn len(&self) -> usize {
        if self.columns.is_empty() {
            0
        } else {
            self.values.len() / self.columns.len()
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// CSV with a leading `time_ms` column (end of each interval).
    pub fn to_csv(&self) -> String {
        let mut s = String::from("time_ms");
        for c in &self.columns {
            s.push(',');
            s.push_str(c);
        }
        s.push('\n');
        for (i, row) in self.rows().enumerate() {
            let t_ms = (i as u64 + 1) * self.interval_ns / 1_000_000;
            s.push_str(&t_ms.to_string());
            for v in row {
                s.push(',');
                s.push_str(&format_num(*v));
            }
            s.push('\n');
        }
        s
    }
}

fn format_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles() {
        let mut h = Histogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 1000);
        assert!((h.mean() - 500_500.0).abs() < 1e-6);
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.002, "p50 {p50}");
        assert!(h.max() >= 999_000);
    }

    /// Buffered recording gives the figures of recording each value into the HdrHistogram at
    /// once, read at any point (mid-buffer, after flushes, after a reset).
    #[test]
    fn buffered_recording_matches_direct_hdr() {
        let mut rng = crate::RngStreams::new(3).stream("hist");
        let mut h = Histogram::new();
        let mut direct = Hdr::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
        for n in 0..5 * PENDING_MAX as u64 + 17 {
            let v = match n % 3 {
                0 => rng.below(5_000),
                1 => rng.below(50_000_000),
                _ => 1 + rng.below(4) * HIGHEST_NS,
            };
            h.record(v);
            direct.record(v.clamp(1, HIGHEST_NS)).unwrap();
            if n % 97 == 0 || n % PENDING_MAX as u64 == 0 {
                assert_eq!(h.count(), direct.len());
                for q in [0.0, 0.5, 0.99, 1.0] {
                    assert_eq!(h.quantile(q), direct.value_at_quantile(q), "n {n} q {q}");
                }
                assert_eq!((h.min(), h.max()), (direct.min(), direct.max()));
            }
        }
        h.reset();
        assert_eq!((h.count(), h.quantile(0.5), h.max(), h.mean()), (0, 0, 0, 0.0));
        h.record(7);
        assert_eq!((h.count(), h.quantile(0.5), h.max()), (1, 7, 7));
    }

    #[test]
    fn timeseries_csv() {
        let mut ts = TimeSeries::new(10_000_000, vec!["a".into(), "b".into()]);
        ts.push_row(&[1.0, 2.5]);
        ts.push_row(&[3.0, 4.0]);
        assert_eq!(ts.to_csv(), "time_ms,a,b\n10,1,2.5000\n20,3,4\n");
    }
}
