//! [`LogHist`]: a very cheap log-linear histogram of non-negative floats for hot loops.
//!
//! The bucket of `x` is read straight off the IEEE-754 bits of `x + 1`: the exponent and the top
//! 6 mantissa bits, so every bucket is at most 1/64 (1.6%) of `x + 1` wide. Recording is a few
//! integer instructions (no logarithm, no branch on the value's size), which matters when a
//! simulator records tens of millions of latencies per second. The exact minimum and maximum are
//! kept alongside. Values up to 2^40 are binned; larger ones land in the last bucket.

const MANT_BITS: u32 = 6;
const SHIFT: u32 = 52 - MANT_BITS;
const MAX_EXP: u64 = 40;
const BUCKETS: usize = ((MAX_EXP + 1) << MANT_BITS) as usize;
const ONE_BITS: u64 = 0x3FF0_0000_0000_0000;

/// Log-linear histogram of non-negative floats (relative resolution 1/64 of `x + 1`).
///
/// Recording touches only the value's bucket count and, rarely, the minimum or maximum: the
/// number of values is not kept apart but summed from the counts when asked for ([`LogHist::len`]
/// is O(buckets), for reports and batch boundaries, not for hot loops). Counts are 64-bit, so they
/// never saturate.
#[derive(Clone, Debug)]
pub struct LogHist {
    counts: Vec<u64>,
    /// Bit patterns of the exact minimum and maximum: recorded values are non-negative (not
    /// NaN, not -0), and such floats order like their bits, so an integer min/max does.
    min_bits: u64,
    max_bits: u64,
}

impl Default for LogHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LogHist {
    /// An empty histogram.
    pub fn new() -> Self {
        LogHist { counts: Vec::new(), min_bits: u64::MAX, max_bits: 0 }
    }

    #[inline]
    fn index(x: f64) -> usize {
        let b = (x + 1.0).to_bits();
        (((b - ONE_BITS) >> SHIFT) as usize).min(BUCKETS - 1)
    }

    fn lower_bound(i: usize) -> f64 {
        f64::from_bits(((i as u64) << SHIFT) + ONE_BITS) - 1.0
    }

    /// Records one value (negative values count as 0). Branch-free apart from growing the
    /// bucket array the first time a bucket beyond it is hit.
    #[inline(always)]
    pub fn record(&mut self, x: f64) {
        // Negative values, -0 and NaN all count as +0.
        let x = if x > 0.0 { x } else { 0.0 };
        let i = Self::index(x);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_and_count(i),
        }
        // A new extreme is rare after the first few values: a predicted branch each, so the
        // common case stores nothing to them.
        let bits = x.to_bits();
        if bits < self.min_bits {
            self.min_bits = bits;
        }
        if bits > self.max_bits {
            self.max_bits = bits;
        }
    }

    #[cold]
    fn grow_and_count(&mut self, i: usize) {
        self.counts.resize((i + 1).next_power_of_two().min(BUCKETS), 0);
        self.counts[i] = 1;
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LogHist) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += *b;
        }
        self.min_bits = self.min_bits.min(other.min_bits);
        self.max_bits = self.max_bits.max(other.max_bits);
    }

    /// Number of values (summed over the buckets).
    pub fn len(&self) -> u64 {
        self.counts.iter().sum()
    }
    /// True when empty (every recorded value lowers the minimum below its initial all-ones bits).
    pub fn is_empty(&self) -> bool {
        self.min_bits == u64::MAX
    }
    /// Exact maximum (0 when empty).
    pub fn max(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            f64::from_bits(self.max_bits)
        }
    }
    /// Exact minimum (0 when empty).
    pub fn min(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            f64::from_bits(self.min_bits)
        }
    }

    /// The value at quantile `q` (midpoint of its bucket, clamped to the exact min and max).
    pub fn quantile(&self, q: f64) -> f64 {
        let n = self.len();
        if n == 0 {
            return 0.0;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                let mid = (Self::lower_bound(i) + Self::lower_bound(i + 1)) / 2.0;
                return mid.clamp(self.min(), self.max());
            }
        }
        self.max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_resolution() {
        let mut h = LogHist::new();
        for i in 0..100_000 {
            h.record(i as f64 / 100.0);
        }
        for (q, want) in [(0.5, 500.0), (0.99, 990.0), (0.01, 10.0)] {
            let got = h.quantile(q);
            assert!((got - want).abs() <= (want + 1.0) / 50.0, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.max(), 999.99);
        assert_eq!(h.min(), 0.0);
        assert_eq!(h.len(), 100_000);
    }

    #[test]
    fn zero_and_huge_values() {
        let mut h = LogHist::new();
        h.record(0.0);
        h.record(-1.0);
        h.record(1e300);
        h.record(f64::NAN);
        h.record(-0.0);
        // Four of five values are 0: the median lies in the first bucket, [0, 1/64).
        assert!(h.quantile(0.5) < 1.0 / 64.0, "{}", h.quantile(0.5));
        assert_eq!(h.min().to_bits(), 0, "negative values, -0 and NaN count as +0");
        assert_eq!(h.max(), 1e300);
        assert_eq!(LogHist::new().quantile(0.5), 0.0);
        assert!(LogHist::new().is_empty());
        assert_eq!(LogHist::new().len(), 0);
        assert!(!h.is_empty());
        assert_eq!(h.len(), 5, "the count is the sum over the buckets, the last one included");
        let mut a = LogHist::new();
        a.record(5.0);
        a.merge(&h);
        assert_eq!(a.len(), 6);
        assert_eq!(a.max(), 1e300);
    }
}
