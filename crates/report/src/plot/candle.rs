//! Candlestick charts in the style of the seed's gnuplot `with candlesticks`: per category and
//! series a box from the median to median + stddev/2 and whiskers from min to max, series side
//! by side within each category.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::{esc, nice_ticks, svg_open, y_grid, PALETTE};

/// One candle: the seed's `name, med, dev, min, max` row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candle {
    pub med: f64,
    pub dev: f64,
    pub min: f64,
    pub max: f64,
}

impl Candle {
    /// Top of the box: median + dev/2 (the seed's gnuplot script).
    pub fn box_top(&self) -> f64 {
        self.med + self.dev / 2.0
    }
    fn is_finite(&self) -> bool {
        self.med.is_finite() && self.dev.is_finite() && self.min.is_finite() && self.max.is_finite()
    }
}

/// A named series with one optional candle per category.
#[derive(Clone, Debug)]
pub struct CandleSeries {
    pub name: String,
    pub candles: Vec<Option<Candle>>,
}

/// A candlestick chart.
#[derive(Clone, Debug)]
pub struct CandleChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<CandleSeries>,
    pub width: f64,
    pub height: f64,
    /// Logarithmic y axis (useful when the max whiskers dwarf the boxes).
    pub log_y: bool,
}

impl CandleChart {
    /// An empty chart over `categories`.
    pub fn new(title: &str, y_label: &str, categories: Vec<String>) -> Self {
        CandleChart {
            title: title.into(),
            y_label: y_label.into(),
            categories,
            series: Vec::new(),
            width: 640.0,
            height: 420.0,
            log_y: false,
        }
    }

    /// Adds a series (one entry per category; `None` leaves a gap).
    pub fn add(&mut self, name: &str, candles: Vec<Option<Candle>>) -> &mut Self {
        self.series.push(CandleSeries { name: name.into(), candles });
        self
    }

    fn candles(&self) -> impl Iterator<Item = &Candle> {
        self.series.iter().flat_map(|s| s.candles.iter().flatten()).filter(|c| c.is_finite())
    }

    /// Renders the SVG text.
    pub fn svg(&self) -> String {
        let (w, h) = (self.width, self.height);
        let (ml, mr, mt, mb) = (66.0, 20.0, 58.0, 52.0);
        let lo = self.candles().map(|c| c.min.min(c.med)).fold(f64::INFINITY, f64::min);
        let hi = self.candles().map(|c| c.max.max(c.box_top())).fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let log = self.log_y && lo > 0.0;
        let (y0, y1, ticks) = if log {
            let (a, b) = (lo.log10().floor(), hi.log10().ceil().max(lo.log10().floor() + 1.0));
            (a, b, super::log_ticks(a, b))
        } else {
            let t = nice_ticks(0.0, hi.max(1e-9) * 1.05, 8);
            let top = t.last().copied().unwrap_or(hi).max(hi);
            (0.0, top, t)
        };
        let ty = |v: f64| if log { v.max(1e-300).log10() } else { v };
        let py = |v: f64| {
            let f = ((ty(v) - y0) / (y1 - y0)).clamp(-0.01, 1.01);
            h - mb - f * (h - mt - mb)
        };
        let n = self.categories.len().max(1) as f64;
        let cw = (w - ml - mr) / n;
        let ns = self.series.len().max(1) as f64;
        let slot = cw / (ns + 1.0);
        let bw = (slot * 0.7).min(40.0);
        let mut s = String::new();
        svg_open(&mut s, w, h, "DejaVu Sans, Helvetica, Arial, sans-serif", 12, &self.title, 20.0, 14);
        y_grid(&mut s, &ticks, py, ml, w - mr);
        let _ = writeln!(
            s,
            r##"<rect x="{ml}" y="{mt}" width="{:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
            w - ml - mr,
            h - mt - mb
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            mt + (h - mt - mb) / 2.0,
            esc(&format!("{}{}", self.y_label, if log { " (log scale)" } else { "" }))
        );
        for (i, cat) in self.categories.iter().enumerate() {
            let x = ml + cw * (i as f64 + 0.5);
            let _ = writeln!(s, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, h - mb + 20.0, esc(cat));
        }
        for (si, ser) in self.series.iter().enumerate() {
            let col = PALETTE[si % PALETTE.len()];
            for (ci, c) in ser.candles.iter().enumerate() {
                let Some(c) = c.filter(|c| c.is_finite()) else { continue };
                let x = ml + cw * ci as f64 + slot * (si as f64 + 1.0);
                let (ymin, ymax, ymed, ytop) = (py(c.min), py(c.max), py(c.med), py(c.box_top()));
                let _ = writeln!(
                    s,
                    r#"<g class="candle" data-series="{}" data-category="{}" data-med="{}" data-dev="{}" data-min="{}" data-max="{}">"#,
                    esc(&ser.name),
                    esc(self.categories.get(ci).map(String::as_str).unwrap_or("")),
                    c.med,
                    c.dev,
                    c.min,
                    c.max
                );
                let _ = writeln!(
                    s,
                    r#"<line x1="{x:.1}" y1="{ymax:.1}" x2="{x:.1}" y2="{ytop:.1}" stroke="{col}" stroke-width="1.5"/>"#
                );
                let _ = writeln!(
                    s,
                    r#"<line x1="{x:.1}" y1="{ymed:.1}" x2="{x:.1}" y2="{ymin:.1}" stroke="{col}" stroke-width="1.5"/>"#
                );
                for y in [ymin, ymax] {
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{col}" stroke-width="1.5"/>"#,
                        x - bw / 4.0,
                        x + bw / 4.0
                    );
                }
                let _ = writeln!(
                    s,
                    r#"<rect x="{:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{col}" fill-opacity="0.35" stroke="{col}" stroke-width="1.5"/>"#,
                    x - bw / 2.0,
                    ytop,
                    (ymed - ytop).max(1.0)
                );
                let _ = writeln!(
                    s,
                    r#"<line x1="{:.1}" y1="{ymed:.1}" x2="{:.1}" y2="{ymed:.1}" stroke="{col}" stroke-width="3"/>"#,
                    x - bw / 2.0,
                    x + bw / 2.0
                );
                s.push_str("</g>\n");
            }
            let lx = ml + 4.0 + si as f64 * 200.0;
            let _ = writeln!(
                s,
                r#"<rect x="{lx:.1}" y="30" width="12" height="12" fill="{col}" fill-opacity="0.35" stroke="{col}"/><text x="{:.1}" y="40">{}</text>"#,
                lx + 20.0,
                esc(&ser.name)
            );
        }
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10" fill="#555">box: median to median + stddev/2; whiskers: min to max</text>"##,
            w - mr,
            h - 8.0
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

    fn chart(log: bool) -> CandleChart {
        let mut c = CandleChart::new("TCP echo <4K>", "Latency in us", vec!["naive".into(), "splice".into()]);
        c.log_y = log;
        c.add("normal run", vec![Some(Candle { med: 220.0, dev: 619.0, min: 157.0, max: 8637.0 }), None]);
        c.add(
            "with BUSYPOLL",
            vec![
                Some(Candle { med: 175.0, dev: 707.0, min: 152.0, max: 8729.0 }),
                Some(Candle { med: 257.0, dev: 882.0, min: 204.0, max: 8871.0 }),
            ],
        );
        c
    }

    #[test]
    fn every_candle_and_label_is_drawn() {
        for log in [false, true] {
            let svg = chart(log).svg();
            assert_eq!(svg.matches(r#"class="candle""#).count(), 3, "the missing candle leaves a gap");
            assert!(svg.contains("TCP echo &lt;4K&gt;") && svg.contains(">naive<") && svg.contains(">with BUSYPOLL<"));
            assert!(!svg.contains("NaN") && !svg.contains("inf"));
            assert_eq!(svg.contains("log scale"), log);
        }
    }

    #[test]
    fn box_spans_median_to_median_plus_half_dev() {
        let c = chart(false);
        let svg = c.svg();
        // The first candle's box: its top is at med + dev/2 = 529.5 and it is taller than a pixel.
        let g = svg.split(r#"class="candle""#).nth(1).unwrap();
        assert!(g.contains(r#"data-med="220""#) && g.contains(r#"data-dev="619""#));
        let rect = g.split("<rect ").nth(1).unwrap();
        let height: f64 = rect.split("height=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        // Linear axis from 0 to the top tick (>= 8871): 309.5 us of box in 310 px of plot.
        assert!(height > 5.0 && height < 30.0, "{height}");
        assert_eq!(Candle { med: 10.0, dev: 4.0, min: 1.0, max: 20.0 }.box_top(), 12.0);
    }
}
