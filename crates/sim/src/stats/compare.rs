//! Paired comparisons: every strategy against a base on the same sample path.
//!
//! All strategies of an open-loop run see the same arrivals and service times (common random
//! numbers), so the difference of two strategies' means varies far less than either mean. The
//! half-width of a difference is therefore computed from the paired differences themselves: the
//! per-batch differences of the batch means (one replication), or the per-replication
//! differences (several), never from two separate intervals.

use std::fmt::Write as _;

use serde::Serialize;

use super::{estimate, finite, half_width, lat_for, lengths, mean, verdict};
use crate::engine::RunResult;
use crate::model::Strategy;
use crate::output::fmt_g;

/// One strategy minus the base, for one length (0 = all messages).
#[derive(Clone, Debug, Serialize)]
pub struct DiffRow {
    pub strategy: String,
    pub len: u32,
    /// Mean latency of `strategy` minus that of the base, time units.
    pub diff_tu: f64,
    /// 95% half-width of `diff_tu` from the paired differences.
    pub ci95_tu: f64,
    /// `diff_tu` relative to the base's mean.
    pub relative: f64,
    /// `lower`, `higher` or `no difference` (at 95%); `undetermined` without a half-width.
    pub verdict: &'static str,
    /// Each replication's difference, in seed order.
    pub per_replication: Vec<Option<f64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub base: String,
    pub method: String,
    pub rows: Vec<DiffRow>,
}

/// Differences of every strategy from `base` (None when the base is not among the strategies).
/// `ds` are the batches deleted as warm-up, per replication.
pub fn compare(reps: &[RunResult], ds: &[usize], base: &Strategy) -> Option<Comparison> {
    let label = base.label();
    let b = reps.first()?.strategies.iter().position(|s| s.label == label)?;
    let n = reps.len();
    let lens: Vec<u32> = lengths(reps).into_iter().chain(std::iter::once(0)).collect();
    let mut rows = Vec::new();
    for (i, st) in reps[0].strategies.iter().enumerate() {
        if i == b {
            continue;
        }
        for &len in &lens {
            // Per replication: (difference, batch-means half-width of the difference).
            let per: Vec<Option<(f64, f64)>> = reps
                .iter()
                .zip(ds)
                .map(|(r, &d)| {
                    let (x, y) = (lat_for(r, i, len)?, lat_for(r, b, len)?);
                    let diffs: Vec<f64> =
                        x.batch_means.iter().zip(&y.batch_means).skip(d).map(|(p, q)| p - q).filter(|v| v.is_finite()).collect();
                    let sx = estimate(&x.batch_means, d, (x.mean_tu, f64::NAN)).0;
                    let sy = estimate(&y.batch_means, d, (y.mean_tu, f64::NAN)).0;
                    Some((sx - sy, half_width(&diffs)))
                })
                .collect();
            let (diff, hw) = if n == 1 {
                per[0].unwrap_or((f64::NAN, f64::NAN))
            } else {
                let v = finite(&per.iter().flatten().map(|p| p.0).collect::<Vec<_>>());
                (mean(&v), half_width(&v))
            };
            let base_mean = mean(&finite(
                &reps
                    .iter()
                    .zip(ds)
                    .filter_map(|(r, &d)| lat_for(r, b, len).map(|y| estimate(&y.batch_means, d, (y.mean_tu, f64::NAN)).0))
                    .collect::<Vec<_>>(),
            ));
            rows.push(DiffRow {
                strategy: st.label.clone(),
                len,
                diff_tu: diff,
                ci95_tu: hw,
                relative: diff / base_mean,
                verdict: verdict(diff, hw),
                per_replication: per.iter().map(|p| p.map(|x| x.0)).collect(),
            });
        }
    }
    let method = if n > 1 {
        format!("paired differences across {n} replications (Student t, {} degrees of freedom)", n - 1)
    } else {
        let k = finite(reps[0].strategies[b].overall.batch_means.get(ds[0]..).unwrap_or(&[])).len();
        format!("batch means of the paired differences ({k} batches)")
    };
    Some(Comparison { base: label, method, rows })
}

impl Comparison {
    /// The text table: one line per strategy and length.
    pub fn text(&self, traffic: f64) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\nPaired differences from {b} (a strategy's mean latency minus that of {b}, time units; 95% half-width from {}), traffic {}%:",
            self.method,
            fmt_g(traffic),
            b = self.base
        );
        let _ = writeln!(s, "α\tlen\tdiff\t±95%\trelative\tverdict at 95%");
        for r in &self.rows {
            let len = if r.len == 0 { "all".to_string() } else { r.len.to_string() };
            let hw = if r.ci95_tu.is_finite() { format!("{:.3}", r.ci95_tu) } else { "n/a".into() };
            let _ = writeln!(
                s,
                "{}\t{len}\t{:+.3}\t{hw}\t{:+.2}%\t{}",
                r.strategy,
                r.diff_tu,
                100.0 * r.relative,
                match r.verdict {
                    "lower" => format!("lower than {}", self.base),
                    "higher" => format!("higher than {}", self.base),
                    v => v.to_string(),
                }
            );
        }
        s
    }
}
