//! The report's Figures 1–4 as SVG.
//!
//! - Figures 1 and 2: message length vs latency at one traffic level (`length-vs-latency-T.svg`,
//!   one file per traffic level simulated; the report shows 50% and 95%).
//! - Figure 3: traffic vs overall latency (`traffic-vs-latency.svg`, needs two or more levels).
//! - Figure 4: traffic vs latency relative to shortest-first (`traffic-vs-relative-latency.svg`,
//!   needs two or more levels and the SF strategy).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use schedlab_report::plot::LineChart;

use crate::engine::RunResult;
use crate::output::fmt_g;

/// Writes every figure the results allow into `dir` (created if needed); returns the files.
pub fn write_figures(dir: &Path, runs: &[RunResult]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create plot directory {}", dir.display()))?;
    let mut files = Vec::new();
    for r in runs {
        let t = fmt_g(r.traffic_pct);
        let mut c = LineChart::new(&format!("Message Length vs Latency for {t}% Traffic"), "message length (packets)", "latency (time units)");
        for s in &r.strategies {
            c.add(&s.label, s.by_len.iter().map(|l| (f64::from(l.len), l.mean_tu)).collect());
        }
        let p = dir.join(format!("length-vs-latency-{t}.svg"));
        c.write(&p)?;
        files.push(p);
    }
    if runs.len() >= 2 {
        let mut sorted: Vec<&RunResult> = runs.iter().collect();
        sorted.sort_by(|a, b| a.traffic_pct.total_cmp(&b.traffic_pct));
        let labels: Vec<String> = sorted[0].strategies.iter().map(|s| s.label.clone()).collect();
        let mut abs = LineChart::new("Traffic vs Latency", "traffic (%)", "overall latency (time units)");
        let mut rel = LineChart::new("Traffic vs Latency/Optimal", "traffic (%)", "latency / shortest-first latency");
        rel.reference_y = Some(1.0);
        let has_sf = labels.iter().any(|l| l == "SF");
        for label in &labels {
            let pts: Vec<(f64, f64, Option<f64>)> = sorted
                .iter()
                .filter_map(|r| {
                    let s = r.strategies.iter().find(|s| &s.label == label)?;
                    let sf = r.strategies.iter().find(|s| s.label == "SF").map(|s| s.overall.mean_tu);
                    Some((r.traffic_pct, s.overall.mean_tu, sf))
                })
                .collect();
            abs.add(label, pts.iter().map(|p| (p.0, p.1)).collect());
            rel.add(
                label,
                pts.iter().filter_map(|p| p.2.filter(|v| *v > 0.0).map(|sf| (p.0, p.1 / sf))).collect(),
            );
        }
        let p = dir.join("traffic-vs-latency.svg");
        abs.write(&p)?;
        files.push(p);
        if has_sf {
            let p = dir.join("traffic-vs-relative-latency.svg");
            rel.write(&p)?;
            files.push(p);
        }
    }
    Ok(files)
}
