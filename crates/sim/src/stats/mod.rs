//! Statistics a reviewer can check: Student-t half-widths, batch-means diagnostics, warm-up
//! deletion (MSER), replications, paired comparisons and queueing theory beside the model.
//!
//! The report's tables stay cumulative from t = 0; everything here is computed from the batch
//! means the engine records ([`crate::engine::LatStats::batch_means`],
//! [`crate::engine::RunResult::qlen_batch_means`]) and from independent replications.

pub mod analysis;
pub mod compare;

pub use analysis::{analyse, LevelStats, Options, Warmup};

use crate::engine::{LatStats, RunResult};

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided 95%): the table
/// for df ≤ 30, the Cornish–Fisher expansion around the normal quantile above (error < 2e-4 at
/// df = 31, smaller beyond). NaN for df = 0. The same function as the engine's batch means use.
pub fn t975(df: usize) -> f64 {
    crate::engine::t975(df)
}

/// The finite values of `xs`.
pub fn finite(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| x.is_finite()).collect()
}

/// Arithmetic mean (NaN when empty).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Half-width of the Student-t 95% confidence interval of the mean of `xs`, taken as independent
/// observations (batch means, replications, paired differences). NaN for fewer than 2.
pub fn half_width(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return f64::NAN;
    }
    let m = mean(xs);
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    t975(n - 1) * (var / n as f64).sqrt()
}

/// Lag-1 autocorrelation of a series (NaN for fewer than 3 values; 0 for a constant series).
pub fn lag1_autocorrelation(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 3 {
        return f64::NAN;
    }
    let m = mean(xs);
    let den: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    if den <= 0.0 {
        return 0.0;
    }
    let num: f64 = xs.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    num / den
}

/// MSER truncation point (White, 1997): the number `d` of leading observations to delete, the
/// `d` in `0..=n/2` that minimises the squared standard error of the mean of what is left,
/// `Σ_{i≥d} (y_i − ȳ_d)² / (n − d)²`. Applied to batch means it is MSER-m with m = one batch
/// (the classic MSER-5 applies it to means of 5 raw observations). Ties go to the smaller `d`.
pub fn mser(ys: &[f64]) -> usize {
    let n = ys.len();
    if n < 4 {
        return 0;
    }
    let mut best: (f64, usize) = (f64::NAN, 0);
    for d in 0..=n / 2 {
        let rest = &ys[d..];
        let m = mean(rest);
        let ss: f64 = rest.iter().map(|y| (y - m) * (y - m)).sum();
        let k = rest.len() as f64;
        let score = ss / (k * k);
        if best.0.is_nan() || score < best.0 - 1e-12 * best.0.abs() {
            best = (score, d);
        }
    }
    best.1
}

/// What a 95% interval says about a difference: below, above, or straddling zero.
pub fn verdict(diff: f64, hw: f64) -> &'static str {
    if !(diff.is_finite() && hw.is_finite()) {
        "undetermined"
    } else if diff + hw < 0.0 {
        "lower"
    } else if diff - hw > 0.0 {
        "higher"
    } else {
        "no difference"
    }
}

/// A steady-state estimate and its batch-means half-width from one replication: the cumulative
/// values when nothing is deleted, else the mean and spread of the batch means from `d` on.
pub(crate) fn estimate(series: &[f64], d: usize, cum: (f64, f64)) -> (f64, f64) {
    if d == 0 {
        return cum;
    }
    let kept = finite(series.get(d..).unwrap_or(&[]));
    (mean(&kept), half_width(&kept))
}

/// A strategy's statistics for length `len` (0 = all messages).
pub(crate) fn lat_for(r: &RunResult, strategy: usize, len: u32) -> Option<&LatStats> {
    let s = r.strategies.get(strategy)?;
    if len == 0 {
        Some(&s.overall)
    } else {
        s.by_len.iter().find(|l| l.len == len)
    }
}

/// Lengths seen by any replication, increasing.
pub(crate) fn lengths(reps: &[RunResult]) -> Vec<u32> {
    let mut v: Vec<u32> = reps.iter().flat_map(|r| r.strategies.iter().flat_map(|s| s.by_len.iter().map(|l| l.len))).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_quantiles_match_tables() {
        // Two-sided 95% (0.975 one-sided) values from standard tables.
        for (df, t) in [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (19, 2.093), (30, 2.042)] {
            assert!((t975(df) - t).abs() < 5e-4, "df {df}: {}", t975(df));
        }
        for (df, t) in [(31, 2.0395), (40, 2.0211), (60, 2.0003), (120, 1.9799), (1000, 1.9623)] {
            assert!((t975(df) - t).abs() < 3e-4, "df {df}: {}", t975(df));
        }
        assert!(t975(0).is_nan());
        // Decreasing towards the normal quantile.
        for df in 1..200 {
            assert!(t975(df + 1) < t975(df), "df {df}");
        }
        assert!((t975(1_000_000) - 1.95996).abs() < 1e-4);
    }

    #[test]
    fn half_width_by_hand() {
        // mean 3, sample variance 2.5, n 5: 2.776 * sqrt(2.5 / 5) = 1.9630
        let hw = half_width(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!((hw - 2.776 * 0.5f64.sqrt()).abs() < 1e-3, "{hw}");
        assert!(half_width(&[1.0]).is_nan());
        assert_eq!(half_width(&[2.0, 2.0, 2.0]), 0.0);
    }

    #[test]
    fn lag1_autocorrelation_by_hand() {
        // Alternating series: strongly negative; trend: positive.
        let alt = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0];
        assert!((lag1_autocorrelation(&alt) - (-5.0 / 6.0)).abs() < 1e-12);
        let trend: Vec<f64> = (0..20).map(f64::from).collect();
        assert!(lag1_autocorrelation(&trend) > 0.8);
        assert_eq!(lag1_autocorrelation(&[3.0, 3.0, 3.0, 3.0]), 0.0);
        assert!(lag1_autocorrelation(&[1.0, 2.0]).is_nan());
    }

    #[test]
    fn mser_deletes_a_start_up_ramp_and_nothing_from_a_flat_series() {
        // A ramp from 0 to a level of 10 over 5 batches, then noise around 10.
        let mut ys: Vec<f64> = (0..5).map(|i| f64::from(i) * 2.0).collect();
        ys.extend((0..15).map(|i| if i % 2 == 0 { 10.1 } else { 9.9 }));
        let d = mser(&ys);
        assert!((4..=6).contains(&d), "{d}");
        let flat = [5.0, 5.1, 4.9, 5.0, 5.05, 4.95, 5.0, 5.1, 4.9, 5.0];
        assert!(mser(&flat) <= 1, "{}", mser(&flat));
        // Never more than half.
        let rising: Vec<f64> = (0..20).map(f64::from).collect();
        assert!(mser(&rising) <= 10);
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(-1.0, 0.5), "lower");
        assert_eq!(verdict(1.0, 0.5), "higher");
        assert_eq!(verdict(0.2, 0.5), "no difference");
        assert_eq!(verdict(0.2, f64::NAN), "undetermined");
    }
}
