//! The HDR-backed [`Hist`] against exact percentiles of the same samples: nearest rank, reported
//! at most 1/1024 above the exact sample and never above the exact maximum; min and max exact;
//! merging; empty histograms and all-NaN float samples.

use proptest::prelude::*;
use schedlab_report::{Hist, HistRecorder, LogHist, Summary};

const QS: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// Nearest-rank percentile of a sorted slice: the smallest sample with at least q·n samples at
/// or below it (rank computed in integers where q·n is whole).
fn exact(sorted: &[u64], q: f64) -> u64 {
    let n = sorted.len();
    let rank = (1..=n).find(|&k| k as f64 >= q * n as f64 - 1e-9).unwrap_or(n);
    sorted[rank - 1]
}

/// Samples over many magnitudes: small exact values, microseconds, seconds in ns.
fn samples() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(
        prop_oneof![0u64..2048, 2048u64..1_000_000, 1_000_000u64..10_000_000_000, Just(u64::MAX / 4)],
        1..600,
    )
}

fn check_summary(s: &Summary, sorted: &[u64]) -> Result<(), TestCaseError> {
    let n = sorted.len();
    prop_assert_eq!(s.count, n as u64);
    prop_assert_eq!(s.min, sorted[0] as f64, "min is exact");
    prop_assert_eq!(s.max, sorted[n - 1] as f64, "max is exact");
    for (q, got) in QS.iter().zip([s.p50, s.p90, s.p99, s.p999, s.p9999]) {
        let want = exact(sorted, *q) as f64;
        prop_assert!(got >= want && got <= want + want / 1024.0, "q {}: {} vs exact {}", q, got, want);
        prop_assert!(got <= s.max, "q {}: {} above the max {}", q, got, s.max);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn percentiles_are_nearest_rank_within_the_precision(v in samples()) {
        let mut h = Hist::new();
        v.iter().for_each(|&x| h.record(x));
        let mut sorted = v.clone();
        sorted.sort_unstable();
        check_summary(&h.summary(1.0), &sorted)?;
        for q in QS {
            prop_assert_eq!(h.quantile(q) as f64, {
                let s = h.summary(1.0);
                [s.p50, s.p90, s.p99, s.p999, s.p9999][QS.iter().position(|&x| x == q).unwrap()]
            });
        }
    }

    #[test]
    fn merged_lanes_equal_one_histogram(v in samples(), lanes in 1usize..6) {
        let mut parts: Vec<Hist> = (0..lanes).map(|_| Hist::new()).collect();
        let mut all = Hist::new();
        for (i, &x) in v.iter().enumerate() {
            parts[i % lanes].record(x);
            all.record(x);
        }
        let mut merged = Hist::new();
        parts.iter().for_each(|p| merged.merge(p));
        prop_assert_eq!(merged.summary(1.0), all.summary(1.0));
        let mut sorted = v.clone();
        sorted.sort_unstable();
        check_summary(&merged.summary(1.0), &sorted)?;
    }

    #[test]
    fn recorder_keeps_the_exact_extremes(v in samples()) {
        let mut r = HistRecorder::new();
        let mut h = Hist::new();
        for &x in &v {
            r.record(x);
            h.record(x);
        }
        let mut sorted = v.clone();
        sorted.sort_unstable();
        let got = r.into_hist().summary(1.0);
        prop_assert_eq!(got, h.summary(1.0));
        check_summary(&got, &sorted)?;
    }

    /// LogHist (the simulator's): nearest rank, the bucket's midpoint within 1/128 of x + 1.
    #[test]
    fn loghist_quantiles_within_its_resolution(v in proptest::collection::vec(0.0f64..1e6, 1..500)) {
        let mut h = LogHist::new();
        v.iter().for_each(|&x| h.record(x));
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        for q in QS {
            let rank = (1..=n).find(|&k| k as f64 >= q * n as f64 - 1e-9).unwrap_or(n);
            let want = sorted[rank - 1];
            let got = h.quantile(q);
            prop_assert!((got - want).abs() <= (want + 1.0) / 128.0 + 1e-9, "q {}: {} vs {}", q, got, want);
        }
        prop_assert_eq!(h.max(), sorted[n - 1]);
        prop_assert_eq!(h.min(), sorted[0]);
        prop_assert_eq!(h.len(), n as u64);
    }
}

/// One sample above 2048 (where buckets are wider than 1): every figure is that sample, not the
/// top of its bucket (10007 for 10001).
#[test]
fn a_single_sample_is_its_own_min_max_and_percentiles() {
    let mut h = Hist::new();
    h.record(10_001);
    let s = h.summary(1.0);
    assert_eq!((s.min, s.max), (10_001.0, 10_001.0), "{s:?}");
    assert_eq!((s.p50, s.p99, s.p9999), (10_001.0, 10_001.0, 10_001.0), "{s:?}");
    assert_eq!(h.quantile(1.0), 10_001);
}

/// The median of an even count is the lower middle sample (nearest rank), as `of_f64`'s.
#[test]
fn median_of_an_even_count_is_the_lower_middle() {
    let mut h = Hist::new();
    [1u64, 2, 3, 4].iter().for_each(|&x| h.record(x));
    assert_eq!(h.summary(1.0).p50, 2.0);
    assert_eq!(Summary::of_f64(&[1.0, 2.0, 3.0, 4.0]).p50, 2.0);
}

/// No sample: count 0 and no figure that reads as a measured 0 (NaN, written `null`).
#[test]
fn an_empty_histogram_reports_no_percentile() {
    for s in [Hist::new().summary(1000.0), HistRecorder::new().into_hist().summary(1.0), Summary::of_f64(&[])] {
        assert_eq!(s.count, 0);
        for (name, v) in [("min", s.min), ("mean", s.mean), ("p50", s.p50), ("p99", s.p99), ("p9999", s.p9999), ("max", s.max)] {
            assert!(v.is_nan(), "{name} of no sample is {v}, not NaN");
        }
        let json = serde_json::to_value(s).unwrap();
        assert!(json["p99"].is_null() && json["max"].is_null(), "{json}");
        assert_eq!(json["count"], 0);
    }
}

/// Float samples that are all NaN: no panic, an empty summary.
#[test]
fn all_nan_floats_are_an_empty_summary() {
    let s = Summary::of_f64(&[f64::NAN, f64::NAN]);
    assert_eq!(s.count, 0);
    assert!(s.p99.is_nan() && s.max.is_nan());
    let s = Summary::of_f64(&[f64::NAN, 3.0]);
    assert_eq!((s.count, s.min, s.max, s.p50), (1, 3.0, 3.0, 3.0));
}
