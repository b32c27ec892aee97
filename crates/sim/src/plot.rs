//! The report's Figures 1–4 as SVG files. The charts themselves come from
//! [`schedlab_report::plot::figures::paper_figures`], the same code the `schedlab report` page uses.
//!
//! - Figures 1 and 2: message length vs latency at one traffic level (`length-vs-latency-T.svg`,
//!   one file per traffic level simulated; the report shows 50% and 95%).
//! - Figure 3: traffic vs overall latency (`traffic-vs-latency.svg`, needs two or more levels).
//! - Figure 4: traffic vs latency relative to shortest-first (`traffic-vs-relative-latency.svg`,
//!   needs two or more levels and the SF strategy).
//! - With statistics per size bucket (a named workload): the field's figures, mean and p99
//!   slowdown by size percentile per strategy, log scale (`slowdown-mean-T.svg`,
//!   `slowdown-p99-T.svg`); each bucket is drawn at the upper percentile of its sizes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use schedlab_report::plot::figures::{paper_figures, PaperFigure, PaperLevel, PaperStrategy};
use schedlab_report::plot::{LineChart, Scale};

use crate::engine::{LatStats, RunResult};
use crate::output::fmt_g;

/// The runs as the figures' plain numbers.
pub fn paper_levels(runs: &[RunResult]) -> Vec<PaperLevel> {
    runs.iter()
        .map(|r| PaperLevel {
            traffic_pct: r.traffic_pct,
            strategies: r
                .strategies
                .iter()
                .map(|s| PaperStrategy {
                    label: s.label.clone(),
                    by_len: s.by_len.iter().map(|l| (f64::from(l.len), l.mean_tu)).collect(),
                    overall_mean_tu: s.overall.mean_tu,
                })
                .collect(),
        })
        .collect()
}

/// Writes every figure the results allow into `dir` (created if needed); returns the files.
pub fn write_figures(dir: &Path, runs: &[RunResult]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create plot directory {}", dir.display()))?;
    let mut files = Vec::new();
    for (fig, chart) in paper_figures(&paper_levels(runs)) {
        let name = match fig {
            PaperFigure::LengthVsLatency(t) => format!("length-vs-latency-{}.svg", fmt_g(t)),
            PaperFigure::TrafficVsLatency => "traffic-vs-latency.svg".to_string(),
            PaperFigure::TrafficVsRelative => "traffic-vs-relative-latency.svg".to_string(),
        };
        let p = dir.join(name);
        chart.write(&p)?;
        files.push(p);
    }
    for (name, chart) in slowdown_figures(runs) {
        let p = dir.join(name);
        chart.write(&p)?;
        files.push(p);
    }
    Ok(files)
}

/// Which statistic of a bucket a figure shows.
type Pick = fn(&LatStats) -> f64;

/// Mean and p99 slowdown by size percentile per strategy (log y), for each run kept per size
/// bucket: (file name, chart).
pub fn slowdown_figures(runs: &[RunResult]) -> Vec<(String, LineChart)> {
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.strategies.iter().any(|s| s.by_len.iter().any(|l| l.bucket.is_some()))) {
        let t = fmt_g(r.traffic_pct);
        let what = r.workload.as_ref().map_or(String::new(), |w| format!("{}, ", w.name));
        let stats: [(&str, Pick); 2] = [("mean", |l| l.slowdown_mean), ("p99", |l| l.slowdown_p99)];
        for (stat, pick) in stats {
            let mut c = LineChart::new(
                &format!("{stat} slowdown by message size ({what}{t}% load)"),
                "message size percentile (%)",
                &format!("{stat} slowdown (latency + 1) / length"),
            );
            c.y_scale = Scale::Log;
            c.markers = true;
            for s in &r.strategies {
                let pts: Vec<(f64, f64)> = s
                    .by_len
                    .iter()
                    .filter_map(|l| Some((100.0 * l.bucket?.pct_high, pick(l))))
                    .filter(|p| p.1.is_finite() && p.1 > 0.0)
                    .collect();
                c.add(&s.label, pts);
            }
            if c.has_data() {
                out.push((format!("slowdown-{stat}-{t}.svg"), c));
            }
        }
    }
    out
}
