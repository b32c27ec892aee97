//! Small, dependency-free SVG charts.
//!
//! [`LineChart`] draws several named series against shared axes with "nice" ticks. The SVG is
//! plain text, so tests can check what it contains and any browser shows it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

pub mod bar;
pub mod candle;
pub mod figures;

/// Colours used for series in order (colour-blind-friendly palette, then repeats).
pub const PALETTE: [&str; 13] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442", "#7F3C8D", "#8C564B", "#3969AC",
    "#E73F74", "#80BA5A",
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
    let _ =
        writeln!(s, r#"<text x="{}" y="{title_y}" text-anchor="middle" font-size="{title_size}">{}</text>"#, w / 2.0, esc(title));
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

/// Axis scale. `Auto` is logarithmic when the positive data spans more than two decades
/// (max / min > 100) and linear otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
    Auto,
}

impl Scale {
    /// Whether the axis is drawn logarithmically for data in [lo, hi] (lo: smallest positive value).
    pub fn is_log(self, lo_pos: f64, hi: f64) -> bool {
        match self {
            Scale::Linear => false,
            Scale::Log => lo_pos.is_finite() && lo_pos > 0.0 && hi > 0.0,
            Scale::Auto => lo_pos.is_finite() && lo_pos > 0.0 && hi / lo_pos > 100.0,
        }
    }
}

/// Ticks of a log axis between 10^a and 10^b: 1, 2, 5 per decade (only powers of ten when the
/// axis spans more than two decades, so that the labels never overlap).
pub fn log_ticks(a: f64, b: f64) -> Vec<f64> {
    let mults: &[f64] = if b - a > 2.0 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut t = Vec::new();
    let mut e = a;
    while e <= b {
        for m in mults {
            let v = m * 10f64.powf(e);
            if v >= 10f64.powf(a) * (1.0 - 1e-9) && v <= 10f64.powf(b) * (1.0 + 1e-9) {
                t.push(v);
            }
        }
        e += 1.0;
    }
    t
}

/// One axis mapping data to a pixel range, linear or logarithmic.
#[derive(Clone, Debug)]
pub struct Axis {
    pub log: bool,
    /// Data range (in log10 units when `log`).
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

impl Axis {
    /// An axis covering `values` (non-finite ignored; non-positive ignored on a log axis).
    /// `from_zero`: a linear axis starts at 0 when all data are positive.
    pub fn fit(values: impl Iterator<Item = f64> + Clone, scale: Scale, from_zero: bool, n: usize) -> Axis {
        let fin = values.filter(|v| v.is_finite());
        let lo = fin.clone().fold(f64::INFINITY, f64::min);
        let hi = fin.clone().fold(f64::NEG_INFINITY, f64::max);
        let lo_pos = fin.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        if scale.is_log(lo_pos, hi) {
            let a = lo_pos.log10().floor();
            let b = hi.log10().ceil().max(a + 1.0);
            return Axis { log: true, lo: a, hi: b, ticks: log_ticks(a, b) };
        }
        let (mut lo, mut hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        if from_zero && lo > 0.0 {
            lo = 0.0;
        }
        if hi <= lo {
            hi = lo + 1.0;
        }
        let pad = if from_zero { (hi - lo) * 0.05 } else { 0.0 };
        let ticks = nice_ticks(lo, hi + pad, n);
        let hi = ticks.last().copied().unwrap_or(hi).max(hi);
        Axis { log: false, lo, hi, ticks }
    }

    /// Position of `v` in [0, 1] along the axis (None for non-finite values or v <= 0 on a log axis).
    pub fn frac(&self, v: f64) -> Option<f64> {
        if !v.is_finite() || (self.log && v <= 0.0) {
            return None;
        }
        let t = if self.log { v.log10() } else { v };
        Some((t - self.lo) / (self.hi - self.lo))
    }
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
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Draw steps (a CDF) instead of straight segments between points.
    pub steps: bool,
    /// Draw a marker at every point.
    pub markers: bool,
}

impl LineChart {
    /// An empty chart: 640 x 400, readable at paper column width; linear x, y logarithmic when the
    /// data span more than two decades.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            width: 640.0,
            height: 400.0,
            reference_y: None,
            x_scale: Scale::Linear,
            y_scale: Scale::Auto,
            steps: false,
            markers: true,
        }
    }

    /// Adds a series.
    pub fn add(&mut self, name: &str, points: Vec<(f64, f64)>) -> &mut Self {
        self.series.push(Series { name: name.into(), points });
        self
    }

    /// Whether any series has a point that can be drawn.
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| s.points.iter().any(|p| p.0.is_finite() && p.1.is_finite()))
    }

    /// Renders the SVG text.
    pub fn svg(&self) -> String {
        let (w, h) = (self.width, self.height);
        let longest = self.series.iter().map(|s| s.name.chars().count()).max().unwrap_or(0) as f64;
        let (ml, mr, mt, mb) = (66.0, (34.0 + longest * 7.0).clamp(60.0, 200.0), 34.0, 48.0);
        let pts = || self.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
        let xa = Axis::fit(pts().map(|p| p.0), self.x_scale, false, 7);
        let ya = Axis::fit(pts().map(|p| p.1).chain(self.reference_y), self.y_scale, true, 7);
        let px = |x: f64| xa.frac(x).map(|f| ml + f * (w - ml - mr));
        let py = |y: f64| ya.frac(y).map(|f| h - mb - f * (h - mt - mb));
        let mut s = String::new();
        svg_open(&mut s, w, h, "DejaVu Sans, Helvetica, Arial, sans-serif", 12, &self.title, 20.0, 14);
        y_grid(&mut s, &ya.ticks, |t| py(t).unwrap_or(h - mb), ml, w - mr);
        for &t in &xa.ticks {
            let Some(x) = px(t) else { continue };
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
        let log_note = |log: bool| if log { " (log scale)" } else { "" };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            ml + (w - ml - mr) / 2.0,
            h - 10.0,
            esc(&format!("{}{}", self.x_label, log_note(xa.log)))
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            mt + (h - mt - mb) / 2.0,
            esc(&format!("{}{}", self.y_label, log_note(ya.log)))
        );
        if let Some(y) = self.reference_y.and_then(py) {
            let _ = writeln!(
                s,
                r##"<line x1="{ml}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#888" stroke-dasharray="4 3"/>"##,
                w - mr
            );
        }
        for (i, ser) in self.series.iter().enumerate() {
            let col = PALETTE[i % PALETTE.len()];
            let xy: Vec<(f64, f64)> = ser.points.iter().filter_map(|&(x, y)| Some((px(x)?, py(y)?))).collect();
            let mut path: Vec<String> = Vec::new();
            for (k, &(x, y)) in xy.iter().enumerate() {
                if self.steps && k > 0 {
                    path.push(format!("{x:.1},{:.1}", xy[k - 1].1));
                }
                path.push(format!("{x:.1},{y:.1}"));
            }
            let _ = writeln!(
                s,
                r#"<polyline class="series" data-name="{}" data-points="{}" fill="none" stroke="{col}" stroke-width="1.6" points="{}"/>"#,
                esc(&ser.name),
                xy.len(),
                path.join(" ")
            );
            if self.markers {
                for (x, y) in &xy {
                    let _ = writeln!(s, r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.2" fill="{col}"/>"#);
                }
            }
            let ly = mt + 12.0 + i as f64 * 16.0;
            let lx = w - mr + 10.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{col}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 18.0,
                lx + 23.0,
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
        assert!(!svg.contains("log scale"), "linear data stay linear");
    }
    #[test]
    fn decades_get_a_log_axis() {
        let mut c = LineChart::new("cdf", "delay (us)", "fraction");
        c.x_scale = Scale::Auto;
        c.add("a", vec![(1.0, 0.0), (10.0, 0.5), (10000.0, 1.0)]);
        let svg = c.svg();
        assert!(svg.contains("delay (us) (log scale)"), "{svg}");
        assert!(!svg.contains("fraction (log scale)"));
        assert!(svg.contains(r#"data-points="3""#));
        assert_eq!(log_ticks(0.0, 2.0), vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(log_ticks(1.0, 5.0), vec![10.0, 100.0, 1000.0, 10000.0, 100000.0]);
        // Zero cannot be drawn on a log axis: the point is left out, not placed at -inf.
        let mut c = LineChart::new("t", "x", "y");
        c.y_scale = Scale::Log;
        c.add("z", vec![(1.0, 0.0), (2.0, 10.0), (3.0, 1000.0)]);
        let svg = c.svg();
        assert!(svg.contains(r#"data-points="2""#) && !svg.contains("inf") && !svg.contains("NaN"));
    }
}
