//! Small, dependency-free SVG charts.
//!
//! [`LineChart`] draws several named series against shared axes with "nice" ticks. The SVG is
//! plain text, so tests can check what it contains and any browser shows it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

pub mod candle;

/// Colours used for series in order (colour-blind-friendly palette, then repeats).
pub const PALETTE: [&str; 13] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442", "#7F3C8D",
    "#8C564B", "#3969AC", "#E73F74", "#80BA5A",
];

/// Escapes text for SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// "Nice" tick positions covering [lo, hi] with about `n` ticks.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let start = (lo / step).ceil() * step;
    let mut v = Vec::new();
    let mut t = start;
    while t <= hi + step * 1e-9 {
        v.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    v
}

/// Formats a tick label compactly.
pub fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Opens an SVG document: white background and a centred title.
#[allow(clippy::too_many_arguments)]
pub fn svg_open(s: &mut String, w: f64, h: f64, font: &str, font_size: u32, title: &str, title_y: f64, title_size: u32) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{font}" font-size="{font_size}">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{}" y="{title_y}" text-anchor="middle" font-size="{title_size}">{}</text>"#, w / 2.0, esc(title));
}

/// Horizontal grid lines with their labels at the left margin, one per tick.
pub fn y_grid(s: &mut String, ticks: &[f64], py: impl Fn(f64) -> f64, left: f64, right: f64) {
    for &t in ticks {
        let y = py(t);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 6.0,
            y + 4.0,
            fmt_tick(t)
        );
    }
}

/// A named series of (x, y) points.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart with markers.
#[derive(Clone, Debug)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub width: f64,
    pub height: f64,
    /// Optional horizontal reference line (e.g. y = 1 for "relative to optimal").
    pub reference_y: Option<f64>,
}

impl LineChart {
    /// An empty chart.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            width: 900.0,
            height: 560.0,
            reference_y: None,
        }
    }

    /// Adds a series.
    pub fn add(&mut self, name: &str, points: Vec<(f64, f64)>) -> &mut Self {
        self.series.push(Series { name: name.into(), points });
        self
    }

    /// Renders the SVG text.
    pub fn svg(&self) -> String {
        let (w, h) = (self.width, self.height);
        let (ml, mr, mt, mb) = (70.0, 150.0, 40.0, 55.0);
        let pts = self.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64, f64::NEG_INFINITY);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if let Some(r) = self.reference_y {
            y1 = y1.max(r);
            y0 = y0.min(r);
        }
        if !x0.is_finite() {
            (x0, x1, y1) = (0.0, 1.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if y1 <= y0 {
            y1 = y0 + 1.0;
        }
        let xt = nice_ticks(x0, x1, 8);
        let yt = nice_ticks(y0, y1 * 1.05, 8);
        let y1 = yt.last().copied().unwrap_or(y1).max(y1);
        let px = |x: f64| ml + (x - x0) / (x1 - x0) * (w - ml - mr);
        let py = |y: f64| h - mb - (y - y0) / (y1 - y0) * (h - mt - mb);
        let mut s = String::new();
        svg_open(&mut s, w, h, "sans-serif", 12, &self.title, 22.0, 16);
        y_grid(&mut s, &yt, py, ml, w - mr);
        for &t in &xt {
            let x = px(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#999"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                h - mb,
                h - mb + 5.0,
                h - mb + 18.0,
                fmt_tick(t)
            );
        }
        let _ = writeln!(
            s,
            r##"<rect x="{ml}" y="{mt}" width="{:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
            w - ml - mr,
            h - mt - mb
        );
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, ml + (w - ml - mr) / 2.0, h - 12.0, esc(&self.x_label));
        let _ = writeln!(
            s,
            r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            mt + (h - mt - mb) / 2.0,
            esc(&self.y_label)
        );
        if let Some(r) = self.reference_y {
            let _ = writeln!(
                s,
                r##"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#888" stroke-dasharray="4 3"/>"##,
                w - mr,
                y = py(r)
            );
        }
        for (i, ser) in self.series.iter().enumerate() {
            let col = PALETTE[i % PALETTE.len()];
            let path: Vec<String> = ser
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline class="series" data-name="{}" fill="none" stroke="{col}" stroke-width="1.6" points="{}"/>"#,
                esc(&ser.name),
                path.join(" ")
            );
            for p in &path {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(s, r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{col}"/>"#);
            }
            let ly = mt + 14.0 + i as f64 * 17.0;
            let lx = w - mr + 12.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{col}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 22.0,
                lx + 28.0,
                ly + 4.0,
                esc(&ser.name)
            );
        }
        s.push_str("</svg>\n");
        s
    }

    /// Writes the SVG to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.svg()).with_context(|| format!("cannot write plot {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ticks_are_nice() {
        assert_eq!(nice_ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(100.0), "100");
    }
    #[test]
    fn chart_has_every_series() {
        let mut c = LineChart::new("t <1>", "x", "y");
        c.add("RR", vec![(1.0, 2.0), (2.0, 3.0)]).add("SF", vec![(1.0, 1.0), (2.0, f64::NAN)]);
        let svg = c.svg();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains(r#"data-name="RR""#) && svg.contains(r#"data-name="SF""#));
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(!svg.contains("NaN"));
    }
}
