//! The page's slowdown section: mean and p99 slowdown by message-size percentile, one line per
//! strategy, on a log scale — the figure the field judges schedulers by (pFabric, Homa).
//!
//! Slowdown is (latency + 1) / length: a message's completion time over its own service time (1
//! for a message sent at once). It is read from the simulator's results:
//! - `sim --json`: runs whose rows are size buckets (`by_len[].bucket`, kept for a named workload
//!   or more than 64 lengths) give each bucket's upper size percentile, mean and p99 slowdown;
//! - `sim --csv`: the same from the `bucket_pct_high`, `slowdown_mean` and `slowdown_p99` columns;
//! - a sweep table: per cell whose messages reach beyond 64 packets (the named workloads), each
//!   size row's mean slowdown (`eff_period_tu`, which is the rows' mean slowdown for a bucket and
//!   for a single length alike) at its cumulative share of the strategy's messages; the table has
//!   no p99 slowdown, so only the mean is drawn.

use super::input::Table;
use super::{Block, Section};
use crate::plot::{fmt_tick, LineChart, Scale};
use crate::results::sim::Sim;

/// Longest message below which a sweep cell is not given a slowdown figure (the simulator keeps
/// statistics per size bucket beyond 64 distinct lengths; the report's mix reaches 20 packets).
const LONG: f64 = 64.0;

/// One size class of one strategy.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Upper size percentile of the class (0-100]: the share of messages no longer than its
    /// longest length.
    pub pct: f64,
    /// Longest length in the class, packets.
    pub len: f64,
    pub count: f64,
    pub mean: f64,
    /// `None` where the source does not record it.
    pub p99: Option<f64>,
}

/// One run (a traffic level, a sweep cell): its caption and each strategy's points.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub caption: String,
    pub strategies: Vec<(String, Vec<Point>)>,
}

/// The levels of a `sim --json` result whose rows are size buckets.
pub fn from_sim(r: &Sim) -> Vec<Level> {
    let mut out = Vec::new();
    let top = r.length_distribution.workload.as_ref().map(|w| w.name.clone());
    for run in &r.runs {
        let name = run.workload.as_ref().map(|w| w.name.clone()).or_else(|| top.clone());
        let mut strategies = Vec::new();
        for s in &run.strategies {
            let pts: Vec<Point> = s
                .by_len
                .iter()
                .filter_map(|l| {
                    let b = l.bucket.as_ref()?;
                    Some(Point {
                        pct: 100.0 * b.pct_high,
                        len: f64::from(b.high),
                        count: l.count as f64,
                        mean: l.slowdown_mean,
                        p99: Some(l.slowdown_p99),
                    })
                })
                .collect();
            if !pts.is_empty() {
                strategies.push((s.label.clone(), pts));
            }
        }
        if !strategies.is_empty() {
            let what = name.map_or(String::new(), |n| format!("{n}, "));
            out.push(Level { caption: format!("{what}{}% load", fmt_tick(run.traffic_pct)), strategies });
        }
    }
    out
}

/// The levels of a `sim --csv` table (rows with `bucket_pct_high`) or of a sweep table (cells
/// whose messages reach beyond 64 packets), in file order.
pub fn from_table(t: &Table, sweep: bool) -> Vec<Level> {
    let get = |r: &Vec<String>, name: &str| t.col(name).and_then(|i| r.get(i)).cloned().unwrap_or_default();
    let getf = |r: &Vec<String>, name: &str| get(r, name).parse::<f64>().unwrap_or(f64::NAN);
    let mut order: Vec<String> = Vec::new();
    let mut groups: std::collections::BTreeMap<String, Vec<&Vec<String>>> = Default::default();
    for r in &t.rows {
        let key = if sweep { get(r, "cell") } else { format!("{}/{}", get(r, "traffic_pct"), get(r, "seed")) };
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    let mut out = Vec::new();
    for key in &order {
        let rows = &groups[key];
        let mut strategies: Vec<(String, Vec<Point>)> = Vec::new();
        for r in rows.iter().filter(|r| getf(r, "len_pkts") > 0.0) {
            let label = get(r, "strategy");
            let idx = match strategies.iter().position(|s| s.0 == label) {
                Some(i) => i,
                None => {
                    strategies.push((label, Vec::new()));
                    strategies.len() - 1
                }
            };
            let p = if sweep {
                Point {
                    pct: f64::NAN,
                    len: getf(r, "len_pkts"),
                    count: getf(r, "msgs"),
                    mean: getf(r, "eff_period_tu"),
                    p99: None,
                }
            } else {
                let pct = getf(r, "bucket_pct_high");
                if !pct.is_finite() {
                    continue;
                }
                Point {
                    pct: 100.0 * pct,
                    len: getf(r, "len_pkts"),
                    count: getf(r, "count"),
                    mean: getf(r, "slowdown_mean"),
                    p99: Some(getf(r, "slowdown_p99")),
                }
            };
            strategies[idx].1.push(p);
        }
        if sweep {
            // Size percentile: the cumulative share of the strategy's messages up to each row's
            // longest length (rows in increasing length).
            strategies.retain(|s| s.1.iter().any(|p| p.len > LONG));
            for (_, pts) in &mut strategies {
                pts.sort_by(|a, b| a.len.total_cmp(&b.len));
                let total: f64 = pts.iter().map(|p| p.count).filter(|c| c.is_finite()).sum();
                let mut acc = 0.0;
                for p in pts.iter_mut() {
                    acc += if p.count.is_finite() { p.count } else { 0.0 };
                    p.pct = if total > 0.0 { 100.0 * acc / total } else { f64::NAN };
                }
            }
        }
        strategies.retain(|s| !s.1.is_empty());
        if strategies.is_empty() {
            continue;
        }
        let first = rows[0];
        let lengths = get(first, "lengths");
        // A named workload's table is named by its checksum too (sweep tables record it).
        let what = match get(first, "workload_checksum") {
            _ if lengths.is_empty() => String::new(),
            sum if sum.is_empty() => format!("{lengths}, "),
            sum => format!("{lengths} ({sum}), "),
        };
        let cell = if sweep { format!(" (cell {key})") } else { String::new() };
        out.push(Level { caption: format!("{what}{}% load{cell}", fmt_tick(getf(first, "traffic_pct"))), strategies });
    }
    out
}

/// A chart of one statistic of one level: x the size percentile, y (log) the slowdown.
fn chart(l: &Level, stat: &str, pick: fn(&Point) -> Option<f64>) -> LineChart {
    let mut c = LineChart::new(
        &format!("{stat} slowdown by message size ({})", l.caption),
        "message size percentile (%)",
        &format!("{stat} slowdown (latency + 1) / length"),
    );
    c.y_scale = Scale::Log;
    c.markers = true;
    for (label, pts) in &l.strategies {
        let xy: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|p| Some((p.pct, pick(p)?)))
            .filter(|(x, y)| x.is_finite() && y.is_finite() && *y > 0.0)
            .collect();
        c.add(label, xy);
    }
    c
}

/// A table cell: whole numbers from 1000 up, else up to four decimals; "–" where missing.
fn cell(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x.abs() >= 1000.0 {
        return format!("{x:.0}");
    }
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Appends the slowdown section (figures and their data) for `levels`; nothing when empty.
pub fn blocks(sec: &mut Section, levels: &[Level]) {
    if levels.is_empty() {
        return;
    }
    sec.push(Block::Heading("Slowdown by message size".into()));
    sec.push(Block::Note(
        "Slowdown is (latency + 1) / length: a message's completion time over its own service time (1 = sent at once). \
         Each point is a size class (a bucket of the size percentiles, or one length) drawn at its upper size percentile; \
         the y axis is logarithmic."
            .into(),
    ));
    for l in levels {
        for (stat, pick) in [("mean", (|p: &Point| Some(p.mean)) as fn(&Point) -> Option<f64>), ("p99", |p: &Point| p.p99)] {
            let c = chart(l, stat, pick);
            if c.has_data() {
                sec.push(Block::Figure {
                    caption: format!("{stat} slowdown by message size percentile, one line per strategy ({}).", l.caption),
                    svg: c.svg(),
                });
            }
        }
        let has_p99 = l.strategies.iter().any(|s| s.1.iter().any(|p| p.p99.is_some_and(f64::is_finite)));
        let mut header = vec!["strategy".to_string(), "size pct ≤".into(), "len ≤".into(), "messages".into(), "mean".into()];
        if has_p99 {
            header.push("p99".into());
        }
        let rows = l
            .strategies
            .iter()
            .flat_map(|(label, pts)| {
                pts.iter().map(move |p| {
                    let mut r = vec![label.clone(), cell(p.pct), cell(p.len), cell(p.count), cell(p.mean)];
                    if has_p99 {
                        r.push(cell(p.p99.unwrap_or(f64::NAN)));
                    }
                    r
                })
            })
            .collect();
        let missing =
            if has_p99 { "" } else { " (the sweep table records no p99 slowdown: run the cell with sim --json for it)" };
        sec.push(Block::Table { caption: format!("Slowdown per size class, {}{missing}", l.caption), header, rows });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(header: &[&str], rows: &[&[&str]]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: rows.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect(),
        }
    }

    /// A `sim --json` result with one level whose strategies have these `by_len` rows (`len`,
    /// bucket `(high, pct_high)`, count, mean and p99 slowdown), read through the typed reader.
    /// One `by_len` row: length, bucket `(high, pct_high)`, count, mean and p99 slowdown.
    type Row = (u32, Option<(u32, f64)>, u64, f64, f64);

    fn sim_result(workload: Option<&str>, strategies: &[(&str, &[Row])]) -> Sim {
        let lat = |&(len, b, count, mean, p99): &Row| {
            let mut l = serde_json::json!({"len": len, "count": count, "mean_tu": 1.0, "ci95_tu": null, "p50_tu": 1.0,
                "p99_tu": 1.0, "max_tu": 1.0, "slowdown_mean": mean, "slowdown_p50": null, "slowdown_p99": p99});
            if let Some((high, pct)) = b {
                l["bucket"] = serde_json::json!({"low": 1, "high": high, "pct_low": 0.0, "pct_high": pct});
            }
            l
        };
        let strategies: Vec<_> = strategies
            .iter()
            .map(|(label, rows)| {
                serde_json::json!({"label": label, "listing_alpha": 0.0, "by_len": rows.iter().map(lat).collect::<Vec<_>>(),
                    "overall": lat(&(0, None, 1, 1.0, 1.0)), "by_class": [], "reordered": 0, "packets_out": 1,
                    "qlen_pkts": 1.0, "period_min": 1.0, "period_max": 1.0, "clock_renormalisations": 0, "by_class_len": [],
                    "alpha_chosen": null, "in_order_applies": false, "packets_in": 1, "sim_time_tu": 1.0,
                    "qlen_ci95_pkts": null, "offered_load": 0.8, "carried_load": 0.8})
            })
            .collect();
        let mut run = serde_json::json!({"traffic_pct": 80.0, "seed": 1, "packets_in": 1, "sim_time_tu": 1.0, "qlen_pkts": 1.0,
            "qlen_ci95_pkts": null, "strategies": strategies, "checkpoints": [], "interrupted": false, "closed_apps": null,
            "apps": 1, "in_order": false});
        if let Some(w) = workload {
            run["workload"] = serde_json::json!({"name": w, "reading": "step", "bytes_per_packet": 1460, "checksum": "c",
                "source": "s", "commit": "x", "unit": "bytes", "mean_size": 1.0, "mean_packets": 1.0});
        }
        let stats = serde_json::json!({"traffic_pct": 80.0, "replications": 1, "seeds": [1], "method": "m",
            "warmup": {"rule": "none", "batches_deleted": [0], "packets_deleted": [0]},
            "diagnostics": {"batches": 20, "batch_packets": 1, "packets": 1, "qlen_lag1_autocorrelation": [null],
                "avlat_lag1_autocorrelation": []},
            "qlen": {"len": 0, "mean": 1.0, "ci95": null, "per_replication": [1.0]}, "strategies": [], "warnings": []});
        let v = serde_json::json!({"schema": "schedlab.sim/1", "command": "sim", "argv": [], "seed": 1,
            "time_unit": crate::results::sim::TIME_UNIT, "service": "report", "machine": crate::machine::MachineInfo::collect(),
            "length_distribution": {"ranges": [{"low": 1, "high": 5, "frac": 1.0}]}, "runs": [run], "statistics": [stats],
            "warnings": []});
        crate::results::read(&v).expect("the test's result reads")
    }

    #[test]
    fn sim_json_buckets_become_points() {
        let r = sim_result(
            Some("w4"),
            &[
                ("FIFO", &[(1, Some((1, 0.5)), 50, 9.0, 40.0), (700, Some((700, 1.0)), 50, 1.5, 3.0)]),
                ("SF", &[(3, None, 9, f64::NAN, 1.0)]),
            ],
        );
        let l = from_sim(&r);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].caption, "w4, 80% load");
        assert_eq!(l[0].strategies.len(), 1, "SF has no bucket rows");
        assert_eq!(l[0].strategies[0].1[1], Point { pct: 100.0, len: 700.0, count: 50.0, mean: 1.5, p99: Some(3.0) });
        let mut sec = Section::new("sim", "t", "s");
        blocks(&mut sec, &l);
        let figs = sec.blocks.iter().filter(|b| matches!(b, Block::Figure { .. })).count();
        assert_eq!(figs, 2, "mean and p99");
        // Per-length runs (the report's mix) have no bucket rows: no section.
        assert!(from_sim(&sim_result(None, &[("FIFO", &[(1, None, 1, 1.0, 1.0)])])).is_empty());
    }

    #[test]
    fn sweep_rows_get_cumulative_percentiles() {
        let h =
            ["sweep_id", "cell", "traffic_pct", "lengths", "workload_checksum", "strategy", "len_pkts", "msgs", "eff_period_tu"];
        let t = table(
            &h,
            &[
                &["s", "0", "50", "report", "", "FIFO", "5", "90", "2"],
                &["s", "0", "50", "report", "", "FIFO", "20", "10", "1.2"],
                &["s", "1", "80", "w4", "fnv1a64:0123", "FIFO", "1", "30", "20"],
                &["s", "1", "80", "w4", "fnv1a64:0123", "FIFO", "9", "60", "5"],
                &["s", "1", "80", "w4", "fnv1a64:0123", "FIFO", "6850", "10", "1.1"],
                &["s", "1", "80", "w4", "fnv1a64:0123", "FIFO", "0", "100", "3"],
            ],
        );
        let l = from_table(&t, true);
        assert_eq!(l.len(), 1, "the report's mix (20 packets at most) has no slowdown figure");
        assert_eq!(l[0].caption, "w4 (fnv1a64:0123), 80% load (cell 1)");
        let pct: Vec<f64> = l[0].strategies[0].1.iter().map(|p| p.pct).collect();
        assert_eq!(pct, vec![30.0, 90.0, 100.0]);
        assert!(l[0].strategies[0].1.iter().all(|p| p.p99.is_none()));
        let mut sec = Section::new("sweep", "t", "s");
        blocks(&mut sec, &l);
        assert_eq!(sec.blocks.iter().filter(|b| matches!(b, Block::Figure { .. })).count(), 1, "mean only");
    }

    #[test]
    fn sim_csv_bucket_columns() {
        let h = ["traffic_pct", "seed", "strategy", "len_pkts", "count", "bucket_pct_high", "slowdown_mean", "slowdown_p99"];
        let t = table(
            &h,
            &[
                &["80", "1", "SF", "1", "97", "0.97", "1.2", "3"],
                &["80", "1", "SF", "2418", "3", "1", "1.01", "1.5"],
                &["80", "1", "SF", "0", "100", "", "1.19", "3"],
            ],
        );
        let l = from_table(&t, false);
        assert_eq!(l[0].strategies[0].1.len(), 2);
        assert_eq!(l[0].strategies[0].1[0].pct, 97.0);
        assert_eq!(l[0].strategies[0].1[1].p99, Some(1.5));
    }
}
