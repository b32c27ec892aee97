//! The figures schedlab draws, built from plain numbers so that each command's own `--plot` /
//! `--svg` file and the `schedlab report` page come from the same code and look the same:
//! the alpha scheduling report's Figures 1–4 ([`paper_figures`]), measured vs predicted latency
//! per message length ([`predict_chart`]), two-flow throughput over time ([`share_chart`]), TCP
//! echo candlesticks ([`echo_chart`]) and latency distributions from percentile summaries
//! ([`summary_cdf`]).

use super::candle::{Candle, CandleChart};
use super::{fmt_tick, LineChart, Scale};
use crate::hist::Summary;

/// One strategy's results at one traffic level, in time units (mean packet service times).
#[derive(Clone, Debug)]
pub struct PaperStrategy {
    pub label: String,
    /// (message length in packets, mean latency) per length.
    pub by_len: Vec<(f64, f64)>,
    pub overall_mean_tu: f64,
}

/// All strategies at one traffic level.
#[derive(Clone, Debug)]
pub struct PaperLevel {
    pub traffic_pct: f64,
    pub strategies: Vec<PaperStrategy>,
}

/// Which of the report's figures a chart is.
#[derive(Clone, Debug, PartialEq)]
pub enum PaperFigure {
    /// Figures 1 and 2: message length vs latency at one traffic level (percent).
    LengthVsLatency(f64),
    /// Figure 3: traffic vs overall latency.
    TrafficVsLatency,
    /// Figure 4: traffic vs latency relative to shortest-first.
    TrafficVsRelative,
}

/// Every figure the levels allow: one length-vs-latency chart per level, then (with two or more
/// levels) traffic vs latency and (when SF was simulated) traffic vs latency relative to SF.
pub fn paper_figures(levels: &[PaperLevel]) -> Vec<(PaperFigure, LineChart)> {
    let mut out = Vec::new();
    for r in levels {
        let t = fmt_tick(r.traffic_pct);
        let mut c = LineChart::new(
            &format!("Message Length vs Latency for {t}% Traffic"),
            "message length (packets)",
            "mean latency (time units)",
        );
        for s in &r.strategies {
            c.add(&s.label, s.by_len.clone());
        }
        out.push((PaperFigure::LengthVsLatency(r.traffic_pct), c));
    }
    if levels.len() >= 2 {
        let mut sorted: Vec<&PaperLevel> = levels.iter().collect();
        sorted.sort_by(|a, b| a.traffic_pct.total_cmp(&b.traffic_pct));
        let labels: Vec<String> = sorted[0].strategies.iter().map(|s| s.label.clone()).collect();
        let mut abs = LineChart::new("Traffic vs Latency", "traffic (%)", "overall mean latency (time units)");
        let mut rel = LineChart::new("Traffic vs Latency/Optimal", "traffic (%)", "latency / shortest-first latency");
        rel.reference_y = Some(1.0);
        let has_sf = labels.iter().any(|l| l == "SF");
        for label in &labels {
            let pts: Vec<(f64, f64, Option<f64>)> = sorted
                .iter()
                .filter_map(|r| {
                    let s = r.strategies.iter().find(|s| &s.label == label)?;
                    let sf = r.strategies.iter().find(|s| s.label == "SF").map(|s| s.overall_mean_tu);
                    Some((r.traffic_pct, s.overall_mean_tu, sf))
                })
                .collect();
            abs.add(label, pts.iter().map(|p| (p.0, p.1)).collect());
            rel.add(label, pts.iter().filter_map(|p| p.2.filter(|v| *v > 0.0).map(|sf| (p.0, p.1 / sf))).collect());
        }
        out.push((PaperFigure::TrafficVsLatency, abs));
        if has_sf {
            out.push((PaperFigure::TrafficVsRelative, rel));
        }
    }
    out
}

/// One algorithm's rows for [`predict_chart`]: (message length in packets, measured mean us,
/// predicted mean us if the simulator's prediction exists).
#[derive(Clone, Debug)]
pub struct PredictSeries {
    pub alg: String,
    pub rows: Vec<(f64, f64, Option<f64>)>,
}

/// Mean queueing latency vs message length, measured (harness) and predicted (simulator), per
/// algorithm (`schedlab predict --plot`).
pub fn predict_chart(runs: &[PredictSeries]) -> LineChart {
    let mut c = LineChart::new(
        "Message length vs queueing latency: measured (harness) and predicted (simulator)",
        "message length (packets)",
        "mean queueing latency (us)",
    );
    for r in runs {
        let rows: Vec<_> = r.rows.iter().filter(|x| x.0 > 0.0).collect();
        c.add(&format!("{} measured", r.alg), rows.iter().map(|x| (x.0, x.1)).collect());
        if rows.iter().any(|x| x.2.is_some()) {
            c.add(&format!("{} predicted", r.alg), rows.iter().filter_map(|x| Some((x.0, x.2?))).collect());
        }
    }
    c
}

/// Throughput per flow over time (`schedlab rdma share --svg`): `flows` are (name, bytes per
/// message), `windows` (mid time ms, per-flow Gbps).
pub fn share_chart(window_ms: f64, label: &str, flows: &[(String, u64)], windows: &[(f64, Vec<f64>)]) -> LineChart {
    let label = if label.is_empty() { String::new() } else { format!(" [{label}]") };
    let mut chart = LineChart::new(
        &format!("Two-flow throughput, {} ms windows{label}", fmt_tick(window_ms)),
        "time (ms)",
        "throughput (Gbps)",
    );
    chart.y_scale = Scale::Linear;
    for (i, (name, bytes)) in flows.iter().enumerate() {
        let pts = windows.iter().filter_map(|(t, v)| Some((*t, *v.get(i)?))).collect();
        chart.add(&format!("{name} ({bytes} B msgs)"), pts);
    }
    chart
}

/// One echo cell for [`echo_chart`]: the trimmed round-trip summary of one mode, busy poll off or on.
#[derive(Clone, Debug)]
pub struct EchoCell {
    pub mode: String,
    pub busy_poll: bool,
    pub rtt_us: Summary,
}

/// TCP echo candlesticks for one burst size (`schedlab echo-bench`): per mode, the normal run and
/// (if any cell has it) the busy-poll run; log y axis when the whiskers span more than 20x.
pub fn echo_chart(size: &str, busy_poll_label: &str, cells: &[EchoCell]) -> CandleChart {
    let mut cats: Vec<String> = Vec::new();
    for c in cells {
        if !cats.contains(&c.mode) {
            cats.push(c.mode.clone());
        }
    }
    let series = |busy: bool| -> Vec<Option<Candle>> {
        cats.iter()
            .map(|m| {
                cells.iter().find(|c| &c.mode == m && c.busy_poll == busy).map(|c| {
                    let t = &c.rtt_us;
                    Candle { med: t.p50, dev: t.stddev, min: t.min, max: t.max }
                })
            })
            .collect()
    };
    let mut chart = CandleChart::new(&format!("TCP echo latency for {size} blocks"), "Latency in us", cats.clone());
    chart.add("normal run", series(false));
    if cells.iter().any(|c| c.busy_poll) {
        chart.add(busy_poll_label, series(true));
    }
    let (lo, hi) = cells.iter().fold((f64::INFINITY, 0f64), |(l, h), c| (l.min(c.rtt_us.min), h.max(c.rtt_us.max)));
    chart.log_y = lo > 0.0 && hi / lo > 20.0;
    chart
}

/// The points of a latency distribution known only by its percentile summary: (value, fraction
/// of samples at or below it) at min, p50, p90, p99, p99.9, p99.99 and max. Empty when no samples.
pub fn summary_points(s: &Summary) -> Vec<(f64, f64)> {
    if s.count == 0 {
        return Vec::new();
    }
    let q = [(s.min, 0.0), (s.p50, 0.5), (s.p90, 0.9), (s.p99, 0.99), (s.p999, 0.999), (s.p9999, 0.9999), (s.max, 1.0)];
    let mut v: Vec<(f64, f64)> = Vec::new();
    for (x, f) in q {
        if !x.is_finite() {
            continue;
        }
        // Percentiles of few samples repeat: keep the highest fraction reached at each value.
        match v.last_mut() {
            Some(last) if last.0 == x => last.1 = f,
            _ => v.push((x, f)),
        }
    }
    v
}

/// Latency distributions from percentile summaries, x logarithmic when the values span decades.
pub fn summary_cdf(title: &str, x_label: &str, series: &[(String, Summary)]) -> LineChart {
    let mut c = LineChart::new(title, x_label, "fraction of samples at or below");
    c.x_scale = Scale::Auto;
    c.y_scale = Scale::Linear;
    c.steps = false;
    for (name, s) in series {
        let pts = summary_points(s);
        if !pts.is_empty() {
            c.add(name, pts);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(t: f64, scale: f64) -> PaperLevel {
        let st = |label: &str, k: f64| PaperStrategy {
            label: label.into(),
            by_len: vec![(1.0, k * scale), (20.0, 3.0 * k * scale)],
            overall_mean_tu: 2.0 * k * scale,
        };
        PaperLevel { traffic_pct: t, strategies: vec![st("FIFO", 4.0), st("SF", 1.0)] }
    }

    #[test]
    fn paper_figures_follow_the_levels() {
        assert_eq!(paper_figures(&[level(50.0, 1.0)]).len(), 1, "one level: Figure 1 only");
        let f = paper_figures(&[level(95.0, 10.0), level(50.0, 1.0)]);
        let ids: Vec<_> = f.iter().map(|x| x.0.clone()).collect();
        assert_eq!(
            ids,
            vec![
                PaperFigure::LengthVsLatency(95.0),
                PaperFigure::LengthVsLatency(50.0),
                PaperFigure::TrafficVsLatency,
                PaperFigure::TrafficVsRelative
            ]
        );
        // Figure 4: FIFO / SF = 4 at both levels, sorted by traffic.
        let rel = &f[3].1;
        assert_eq!(rel.series[0].points, vec![(50.0, 4.0), (95.0, 4.0)]);
        assert_eq!(rel.series[1].points, vec![(50.0, 1.0), (95.0, 1.0)]);
    }

    #[test]
    fn cdf_points_are_monotone_and_merge_ties() {
        let s =
            Summary { count: 3, min: 1.0, mean: 2.0, stddev: 1.0, p50: 2.0, p90: 3.0, p99: 3.0, p999: 3.0, p9999: 3.0, max: 3.0 };
        assert_eq!(summary_points(&s), vec![(1.0, 0.0), (2.0, 0.5), (3.0, 1.0)]);
        assert!(summary_points(&Summary { count: 0, ..s }).is_empty());
        let c = summary_cdf("d", "delay (us)", &[("x".into(), s)]);
        assert!(c.has_data());
    }

    #[test]
    fn predicted_series_only_when_predicted() {
        let c = predict_chart(&[
            PredictSeries { alg: "fifo".into(), rows: vec![(1.0, 10.0, None), (2.0, 20.0, None)] },
            PredictSeries { alg: "sf".into(), rows: vec![(0.0, 5.0, Some(5.0)), (1.0, 3.0, Some(2.5))] },
        ]);
        let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["fifo measured", "sf measured", "sf predicted"]);
        assert_eq!(c.series[2].points, vec![(1.0, 2.5)], "the all-lengths row (0) is not a length");
    }
}
