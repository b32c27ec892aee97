//! The report's Figures 1–4 as SVG files. The charts themselves come from
//! [`schedlab_report::plot::figures::paper_figures`], the same code the `schedlab report` page uses.
//!
//! - Figures 1 and 2: message length vs latency at one traffic level (`length-vs-latency-T.svg`,
//!   one file per traffic level simulated; the report shows 50% and 95%).
//! - Figure 3: traffic vs overall latency (`traffic-vs-latency.svg`, needs two or more levels).
//! - Figure 4: traffic vs latency relative to shortest-first (`traffic-vs-relative-latency.svg`,
//!   needs two or more levels and the SF strategy).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use schedlab_report::plot::figures::{paper_figures, PaperFigure, PaperLevel, PaperStrategy};

use crate::engine::RunResult;
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
    Ok(files)
}
