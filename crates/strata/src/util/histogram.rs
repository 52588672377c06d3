//! Latency histograms with RocksDB's buckets and report format
//! (`monitoring/histogram.cc`): bucket limits 1, 2, then each previous
//! running limit × 1.5, rounded down to two significant digits (3, 4, 6,
//! 10, 15, 22, 34, 51, 76, 110, 170, 250, …); a value falls in the first
//! bucket whose limit is >= it. Percentiles interpolate linearly inside
//! the bucket and are clamped to the observed min and max.
//!
//! [`Histogram`] is a plain single-writer histogram (one per benchmark
//! thread, merged at the end); [`AtomicHistogram`] is shared by threads
//! (the `Statistics` histograms) and snapshots into a `Histogram`.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bucket limits, ascending; the last is close to `u64::MAX`.
pub fn bucket_limits() -> &'static [u64] {
    static LIMITS: OnceLock<Vec<u64>> = OnceLock::new();
    LIMITS.get_or_init(|| {
        let mut limits = vec![1u64, 2];
        let mut running = 2.0f64;
        loop {
            running *= 1.5;
            if running > u64::MAX as f64 {
                break;
            }
            let mut v = running as u64;
            let mut pow_of_ten = 1u64;
            while v / 10 > 10 {
                v /= 10;
                pow_of_ten *= 10;
            }
            limits.push(v * pow_of_ten);
        }
        limits
    })
}

/// Index of the bucket holding `value`.
#[inline]
pub fn bucket_index(value: u64) -> usize {
    let limits = bucket_limits();
    limits.partition_point(|&l| l < value).min(limits.len() - 1)
}

/// A histogram written by one thread.
#[derive(Clone, Debug)]
pub struct Histogram {
    min: u64,
    max: u64,
    num: u64,
    sum: u64,
    sum_squares: f64,
    buckets: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            min: u64::MAX,
            max: 0,
            num: 0,
            sum: 0,
            sum_squares: 0.0,
            buckets: vec![0; bucket_limits().len()],
        }
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn add(&mut self, value: u64) {
        self.buckets[bucket_index(value)] += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.num += 1;
        self.sum = self.sum.wrapping_add(value);
        self.sum_squares += (value as f64) * (value as f64);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.num += other.num;
        self.sum = self.sum.wrapping_add(other.sum);
        self.sum_squares += other.sum_squares;
    }

    pub fn count(&self) -> u64 {
        self.num
    }

    pub fn sum(&self) -> u64 {
        self.sum
    }

    pub fn min(&self) -> u64 {
        if self.num == 0 { 0 } else { self.min }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn average(&self) -> f64 {
        if self.num == 0 {
            0.0
        } else {
            self.sum as f64 / self.num as f64
        }
    }

    pub fn std_dev(&self) -> f64 {
        if self.num == 0 {
            return 0.0;
        }
        let n = self.num as f64;
        let s = self.sum as f64;
        let variance = (self.sum_squares * n - s * s) / (n * n);
        variance.max(0.0).sqrt()
    }

    pub fn median(&self) -> f64 {
        self.percentile(50.0)
    }

    /// The value below which `p` percent of the samples fall, interpolated
    /// linearly within its bucket.
    pub fn percentile(&self, p: f64) -> f64 {
        let limits = bucket_limits();
        let threshold = self.num as f64 * (p / 100.0);
        let mut cumulative = 0u64;
        for (b, &count) in self.buckets.iter().enumerate() {
            cumulative += count;
            if cumulative as f64 >= threshold {
                let left = if b == 0 { 0 } else { limits[b - 1] };
                let right = limits[b];
                let left_sum = cumulative - count;
                let pos = if count == 0 {
                    0.0
                } else {
                    (threshold - left_sum as f64) / count as f64
                };
                let r = left as f64 + (right - left) as f64 * pos;
                // Not `clamp`: a snapshot racing writers may see min > max.
                return r.max(self.min() as f64).min(self.max as f64);
            }
        }
        self.max as f64
    }

    /// RocksDB's `HistogramImpl::ToString`: summary lines, then one row per
    /// non-empty bucket with its share, the cumulative share and one `#`
    /// per 5%.
    pub fn report(&self) -> String {
        let mut r = String::new();
        let _ = writeln!(
            r,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            self.num,
            self.average(),
            self.std_dev()
        );
        let _ = writeln!(
            r,
            "Min: {}  Median: {:.4}  Max: {}",
            self.min(),
            self.median(),
            self.max
        );
        let _ = writeln!(
            r,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            self.percentile(50.0),
            self.percentile(75.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.percentile(99.99)
        );
        r.push_str(&"-".repeat(54));
        r.push('\n');
        if self.num == 0 {
            return r;
        }
        let limits = bucket_limits();
        let mult = 100.0 / self.num as f64;
        let mut cumulative = 0u64;
        for (b, &count) in self.buckets.iter().enumerate() {
            if count == 0 {
                continue;
            }
            cumulative += count;
            let _ = write!(
                r,
                "{} {:>7}, {:>7} ] {:>8} {:>7.3}% {:>7.3}% ",
                if b == 0 { '[' } else { '(' },
                if b == 0 { 0 } else { limits[b - 1] },
                limits[b],
                count,
                mult * count as f64,
                mult * cumulative as f64
            );
            let marks = (mult * count as f64 / 5.0 + 0.5) as usize;
            r.push_str(&"#".repeat(marks));
            r.push('\n');
        }
        r
    }

    /// The one-line form of RocksDB's statistics dump:
    /// `P50 : x P95 : x P99 : x P100 : x COUNT : n SUM : s`.
    pub fn short_report(&self) -> String {
        format!(
            "P50 : {:.6} P95 : {:.6} P99 : {:.6} P100 : {:.6} COUNT : {} SUM : {}",
            self.percentile(50.0),
            self.percentile(95.0),
            self.percentile(99.0),
            self.percentile(100.0),
            self.num,
            self.sum
        )
    }
}

/// A histogram many threads add to (relaxed atomics; a snapshot taken
/// while others add may be off by the samples in flight).
#[derive(Debug)]
pub struct AtomicHistogram {
    min: AtomicU64,
    max: AtomicU64,
    num: AtomicU64,
    sum: AtomicU64,
    /// f64 bits.
    sum_squares: AtomicU64,
    buckets: Vec<AtomicU64>,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        AtomicHistogram {
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            num: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            sum_squares: AtomicU64::new(0f64.to_bits()),
            buckets: (0..bucket_limits().len())
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }
}

impl AtomicHistogram {
    pub fn add(&self, value: u64) {
        self.buckets[bucket_index(value)].fetch_add(1, Ordering::Relaxed);
        self.min.fetch_min(value, Ordering::Relaxed);
        self.max.fetch_max(value, Ordering::Relaxed);
        self.num.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
        let sq = (value as f64) * (value as f64);
        let _ = self
            .sum_squares
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + sq).to_bits())
            });
    }

    pub fn snapshot(&self) -> Histogram {
        let mut h = Histogram {
            min: self.min.load(Ordering::Relaxed),
            max: self.max.load(Ordering::Relaxed),
            num: self.num.load(Ordering::Relaxed),
            sum: self.sum.load(Ordering::Relaxed),
            sum_squares: f64::from_bits(self.sum_squares.load(Ordering::Relaxed)),
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        };
        // Loads race with writers: keep min <= max (the bounds of what
        // was seen), or the empty state when no sample is counted.
        if h.num == 0 {
            h.min = u64::MAX;
            h.max = 0;
        } else {
            h.min = h.min.min(h.max);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_rocksdbs() {
        let l = bucket_limits();
        assert_eq!(
            &l[..16],
            &[
                1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250, 380, 580
            ]
        );
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(1), 0);
        assert_eq!(bucket_index(2), 1);
        assert_eq!(bucket_index(5), 4);
        assert_eq!(bucket_index(6), 4);
        assert_eq!(bucket_index(7), 5);
        assert_eq!(bucket_index(u64::MAX), l.len() - 1);
    }

    #[test]
    fn percentiles_interpolate_and_report_matches_rocksdb_shape() {
        let mut h = Histogram::new();
        for v in 1..=100u64 {
            h.add(v);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100);
        assert!((h.average() - 50.5).abs() < 1e-9);
        // 50 samples are <= 51: the 50th percentile ends in (34, 51].
        let p50 = h.percentile(50.0);
        assert!(p50 > 34.0 && p50 <= 51.0, "{p50}");
        assert_eq!(h.percentile(100.0), 100.0);
        let r = h.report();
        assert!(
            r.starts_with("Count: 100 Average: 50.5000  StdDev: 28.87\n"),
            "{r}"
        );
        assert!(
            r.contains("\n[       0,       1 ]        1   1.000%   1.000% \n"),
            "{r}"
        );
        assert!(
            r.contains("\n(      76,     110 ]       24  24.000% 100.000% #####\n"),
            "{r}"
        );
        let mut a = Histogram::new();
        a.add(7);
        let shared = AtomicHistogram::default();
        shared.add(7);
        assert_eq!(shared.snapshot().report(), a.report());
        a.merge(&h);
        assert_eq!(a.count(), 101);
        assert!(h.short_report().starts_with("P50 : "));
    }
}
