//! HDR histograms and percentile summaries.

use hdrhistogram::Histogram;
use serde::Serialize;

/// An auto-resizing HDR histogram of non-negative integer samples (3 significant digits).
///
/// Percentiles are by nearest rank (the smallest sample with at least q·n samples at or below
/// it; the median of an even count is the lower middle one), reported as the highest value of
/// that sample's HDR bucket: never below the sample, at most 1/1024 above it (exact below 2048),
/// and never above the exact maximum. The minimum and maximum are the exact samples.
#[derive(Clone, Debug)]
pub struct Hist {
    h: Histogram<u64>,
    /// Exact extremes of the samples (`u64::MAX` and 0 when empty): the HDR histogram keeps only
    /// their buckets.
    min: u64,
    max: u64,
}

impl Default for Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl Hist {
    /// An empty histogram, 3 significant digits, growing as needed.
    pub fn new() -> Self {
        let mut h = Histogram::<u64>::new(3).expect("3 significant digits is a valid precision");
        h.auto(true);
        Hist { h, min: u64::MAX, max: 0 }
    }
    /// Records one sample.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }
    /// Records a sample `n` times.
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        // With auto-resize on, every u64 fits: recording cannot fail.
        let _ = self.h.record_n(v, n);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Hist) {
        let _ = self.h.add(&other.h);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
    /// Number of samples.
    pub fn len(&self) -> u64 {
        self.h.len()
    }
    /// True when no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }
    /// Value at quantile `q` in [0, 1] (nearest rank, see [`Hist`]; 0 when empty).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.h.value_at_quantile(q).clamp(self.min, self.max)
    }
    /// The summary, with values divided by `scale` (e.g. 1000.0 to turn ns into µs). Without a
    /// sample every figure is NaN (written `null`), never a 0 that reads as measured.
    pub fn summary(&self, scale: f64) -> Summary {
        let h = &self.h;
        if h.is_empty() {
            return Summary::empty();
        }
        let s = |v: u64| v as f64 / scale;
        Summary {
            count: h.len(),
            min: s(self.min),
            mean: h.mean() / scale,
            stddev: h.stdev() / scale,
            p50: s(self.quantile(0.50)),
            p90: s(self.quantile(0.90)),
            p99: s(self.quantile(0.99)),
            p999: s(self.quantile(0.999)),
            p9999: s(self.quantile(0.9999)),
            max: s(self.max),
        }
    }
    /// The underlying histogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.h
    }
}

/// `Hist`'s bucket layout (3 significant digits, lowest discernible value 1), as the HDR
/// histogram computes it: 2048 sub-buckets, the lower half of each bucket after the first
/// overlapping the previous one, so bucket `b` covers `[1024 << b, 2048 << b)` in steps of `1 << b`.
const SUB_HALF_MAG: u32 = 10;
const SUB_MASK: u64 = (1 << (SUB_HALF_MAG + 1)) - 1;
/// `64 - unit magnitude (0) - SUB_HALF_MAG - 1`.
const LZ_BASE: u32 = 64 - SUB_HALF_MAG - 1;
/// Values from here on skip the recorder's array (they go to the histogram directly).
const RECORDER_LIMIT: u64 = 1 << 40;

/// A recorder for hot loops that feeds a [`Hist`]: one count per HDR bucket in a flat array
/// (grown on first use of a bucket), so a sample costs an index computation and an increment
/// instead of the HDR crate's checked, auto-resizing `record`. [`HistRecorder::into_hist`] then
/// records each bucket's count at the bucket's lowest value: the histogram ends up with exactly
/// the bucket counts it would have had with every sample recorded directly, and the exact
/// minimum and maximum it kept beside, so every summary figure (percentiles, min, max, mean,
/// standard deviation) is identical. Values of 2^40 and more (18 minutes in ns) go to the histogram at once.
#[derive(Clone, Debug)]
pub struct HistRecorder {
    counts: Vec<u64>,
    spill: Option<Box<Hist>>,
    /// Exact extremes (the counts keep only buckets): branch-free min and max per sample.
    min: u64,
    max: u64,
}

impl Default for HistRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl HistRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        HistRecorder { counts: Vec::new(), spill: None, min: u64::MAX, max: 0 }
    }

    /// The HDR counts index of `v` (`v < RECORDER_LIMIT`).
    #[inline(always)]
    fn index(v: u64) -> usize {
        let bucket = LZ_BASE - (v | SUB_MASK).leading_zeros();
        ((bucket as usize) << SUB_HALF_MAG) + (v >> bucket) as usize
    }

    /// The lowest value of the bucket at counts index `i`.
    fn value(i: usize) -> u64 {
        let b = i >> SUB_HALF_MAG;
        if b == 0 {
            i as u64
        } else {
            (((i & ((1 << SUB_HALF_MAG) - 1)) | (1 << SUB_HALF_MAG)) as u64) << (b - 1)
        }
    }

    /// Records one sample.
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if v >= RECORDER_LIMIT {
            return self.record_large(v);
        }
        let i = Self::index(v);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_and_count(i),
        }
    }

    #[cold]
    fn grow_and_count(&mut self, i: usize) {
        self.counts.resize((i + 1).next_power_of_two(), 0);
        self.counts[i] = 1;
    }

    #[cold]
    fn record_large(&mut self, v: u64) {
        self.spill.get_or_insert_with(|| Box::new(Hist::new())).record(v);
    }

    /// The histogram of everything recorded.
    pub fn into_hist(self) -> Hist {
        let mut h = self.spill.map(|b| *b).unwrap_or_default();
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                h.record_n(Self::value(i), c);
            }
        }
        if !h.is_empty() {
            h.min = self.min;
            h.max = self.max;
        }
        h
    }
}

/// Percentile summary of a set of samples, all in one unit (named by the caller's field).
/// A value that is NaN (no finite sample) is written as `null` and read back as NaN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub count: u64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub min: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub stddev: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub p50: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub p90: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub p99: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub p999: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub p9999: f64,
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub max: f64,
}

impl Summary {
    /// The summary of no sample: count 0, every figure NaN (written `null`).
    pub fn empty() -> Summary {
        let n = f64::NAN;
        Summary { count: 0, min: n, mean: n, stddev: n, p50: n, p90: n, p99: n, p999: n, p9999: n, max: n }
    }

    /// Exact summary of a slice of floats, NaNs left out (sorted copy; population standard
    /// deviation; nearest-rank percentiles). [`Summary::empty`] when no value is left.
    pub fn of_f64(values: &[f64]) -> Summary {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return Summary::empty();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let q = |p: f64| {
            // Nearest-rank percentile.
            let rank = ((p * n).ceil() as usize).clamp(1, v.len());
            v[rank - 1]
        };
        Summary {
            count: v.len() as u64,
            min: v[0],
            mean,
            stddev: var.sqrt(),
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: v[v.len() - 1],
        }
    }

    /// One human line: `p50 … p99.99 max` with a unit suffix.
    pub fn line(&self, unit: &str) -> String {
        format!(
            "n={} min={:.2}{u} avg={:.2}{u} p50={:.2}{u} p90={:.2}{u} p99={:.2}{u} p99.9={:.2}{u} p99.99={:.2}{u} max={:.2}{u}",
            self.count,
            self.min,
            self.mean,
            self.p50,
            self.p90,
            self.p99,
            self.p999,
            self.p9999,
            self.max,
            u = unit
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_percentiles_are_close() {
        let mut h = Hist::new();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let s = h.summary(1.0);
        assert_eq!(s.count, 10_000);
        assert!((s.p50 - 5000.0).abs() <= 5.0, "{}", s.p50);
        assert!((s.p99 - 9900.0).abs() <= 10.0, "{}", s.p99);
        assert_eq!(s.min, 1.0);
        assert!((s.max - 10_000.0).abs() <= 10.0);
    }

    /// The recorder's buckets are the histogram's: every value's bucket starts at the HDR
    /// crate's own lowest equivalent value, and a recorder's histogram equals direct recording.
    #[test]
    fn recorder_matches_direct_recording_exactly() {
        let h = Hist::new();
        let mut probes: Vec<u64> = (0..5000).collect();
        for s in 0..48u32 {
            for d in [0u64, 1, 2, 3, 1023, 1024, 1025] {
                probes.push((1u64 << s).saturating_add(d));
                probes.push((1u64 << s).saturating_sub(d));
            }
        }
        for &v in &probes {
            if v < RECORDER_LIMIT {
                let i = HistRecorder::index(v);
                assert_eq!(HistRecorder::value(i), h.inner().lowest_equivalent(v), "value {v}, index {i}");
                assert_eq!(HistRecorder::index(HistRecorder::value(i)), i, "index {i} round trip");
            }
        }
        // A pseudo-random mix over many magnitudes, plus the edge values, recorded both ways.
        let mut direct = Hist::new();
        let mut rec = HistRecorder::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for k in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = if k % 1000 == 0 { x >> 20 } else { (x >> 40) >> (x & 31) };
            direct.record(v);
            rec.record(v);
        }
        for &v in &probes {
            direct.record(v);
            rec.record(v);
        }
        let got = rec.into_hist();
        assert_eq!(got.summary(1.0), direct.summary(1.0));
        assert_eq!(got.len(), direct.len());
        for q in 0..=1000 {
            let q = f64::from(q) / 1000.0;
            assert_eq!(got.quantile(q), direct.quantile(q), "quantile {q}");
        }
        assert!(HistRecorder::new().into_hist().is_empty());
    }

    #[test]
    fn exact_summary() {
        let s = Summary::of_f64(&[3.0, 1.0, 2.0, 4.0]);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.p50, 2.0);
        assert!((s.mean - 2.5).abs() < 1e-12);
        assert!((s.stddev - 1.118_033_988_7).abs() < 1e-9);
        assert_eq!(Summary::of_f64(&[]).count, 0);
    }
}
