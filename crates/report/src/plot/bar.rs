//! Grouped bar charts: one group per category, one bar per series (e.g. per-client shares).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::{esc, fmt_tick, svg_open, y_grid, Axis, Scale, PALETTE};

/// A grouped bar chart with a linear y axis from zero.
#[derive(Clone, Debug)]
pub struct BarChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// (name, one value per category; non-finite values leave a gap).
    pub series: Vec<(String, Vec<f64>)>,
    pub width: f64,
    pub height: f64,
    /// Optional horizontal reference line (e.g. the equal share).
    pub reference_y: Option<f64>,
}

impl BarChart {
    /// An empty chart over `categories` (640 x 360).
    pub fn new(title: &str, x_label: &str, y_label: &str, categories: Vec<String>) -> Self {
        BarChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            categories,
            series: Vec::new(),
            width: 640.0,
            height: 360.0,
            reference_y: None,
        }
    }

    /// Adds a series.
    pub fn add(&mut self, name: &str, values: Vec<f64>) -> &mut Self {
        self.series.push((name.into(), values));
        self
    }

    /// Renders the SVG text.
    pub fn svg(&self) -> String {
        let (w, h) = (self.width, self.height);
        let (ml, mr, mt, mb) = (66.0, 20.0, 54.0, 48.0);
        let vals = self.series.iter().flat_map(|s| s.1.iter().copied()).chain(self.reference_y).chain([0.0]);
        let ya = Axis::fit(vals, Scale::Linear, true, 6);
        let py = |v: f64| h - mb - ya.frac(v).unwrap_or(0.0).clamp(0.0, 1.0) * (h - mt - mb);
        let mut s = String::new();
        svg_open(&mut s, w, h, "DejaVu Sans, Helvetica, Arial, sans-serif", 12, &self.title, 20.0, 14);
        y_grid(&mut s, &ya.ticks, py, ml, w - mr);
        let n = self.categories.len().max(1) as f64;
        let cw = (w - ml - mr) / n;
        let ns = self.series.len().max(1) as f64;
        let bw = (cw * 0.8 / ns).min(60.0);
        for (i, cat) in self.categories.iter().enumerate() {
            let x = ml + cw * (i as f64 + 0.5);
            let _ = writeln!(s, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, h - mb + 16.0, esc(cat));
        }
        for (si, (name, values)) in self.series.iter().enumerate() {
            let col = PALETTE[si % PALETTE.len()];
            for (ci, v) in values.iter().enumerate().take(self.categories.len()) {
                if !v.is_finite() {
                    continue;
                }
                let x = ml + cw * ci as f64 + (cw - bw * ns) / 2.0 + bw * si as f64;
                let (y0, y1) = (py(0.0), py(*v));
                let _ = writeln!(
                    s,
                    r#"<rect class="bar" data-series="{}" data-value="{}" x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{col}" fill-opacity="0.8"><title>{}: {}</title></rect>"#,
                    esc(name),
                    v,
                    y1.min(y0),
                    (bw - 2.0).max(1.0),
                    (y0 - y1).abs().max(0.5),
                    esc(name),
                    fmt_tick(*v)
                );
            }
            let lx = ml + 4.0 + si as f64 * 200.0;
            let _ = writeln!(
                s,
                r#"<rect x="{lx:.1}" y="30" width="12" height="12" fill="{col}" fill-opacity="0.8"/><text x="{:.1}" y="40">{}</text>"#,
                lx + 17.0,
                esc(name)
            );
        }
        if let Some(r) = self.reference_y {
            let _ = writeln!(
                s,
                r##"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#555" stroke-dasharray="4 3"/>"##,
                w - mr,
                y = py(r)
            );
        }
        let _ = writeln!(s, r##"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#333"/>"##, w - mr, y = h - mb);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            ml + (w - ml - mr) / 2.0,
            h - 10.0,
            esc(&self.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            mt + (h - mt - mb) / 2.0,
            esc(&self.y_label)
        );
        s.push_str("</svg>\n");
        s
    }

    /// Writes the SVG to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.svg()).with_context(|| format!("cannot write chart {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_proportional_and_gaps_are_gaps() {
        let mut c = BarChart::new("shares", "client", "share (%)", vec!["0".into(), "1".into(), "2".into()]);
        c.add("transmitted", vec![25.0, 75.0, f64::NAN]);
        let svg = c.svg();
        assert_eq!(svg.matches(r#"class="bar""#).count(), 2);
        let heights: Vec<f64> = svg
            .split(r#"class="bar""#)
            .skip(1)
            .map(|b| b.split("height=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
            .collect();
        assert!((heights[1] / heights[0] - 3.0).abs() < 0.05, "{heights:?}");
        assert!(!svg.contains("NaN"));
    }
}
