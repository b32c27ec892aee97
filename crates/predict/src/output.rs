//! Writers of the typed result ([`Predict`]): the human table of one run, the JSON file, and the
//! latency-vs-length plot.

use std::path::Path;

use schedlab_report::plot::figures::{predict_chart, PredictSeries};
use schedlab_report::plot::LineChart;
use schedlab_sched::units::Bps;

use crate::compare::Row;
use crate::run::{AlgRun, Predict};

/// Writes the result as JSON (`schedlab.predict/1`) to `path` (`-`: stdout).
pub fn write_json(path: &Path, result: &Predict) -> anyhow::Result<()> {
    schedlab_report::export::write_json(path, result)
}

/// Writes `--disturbance-csv`: one row per measuring thread of every run, its `run` column the
/// algorithm (`alpha:10`), or `alpha:10#3` for the third run under `--repeat` (`repeat` > 1).
pub fn write_disturbance_csv(path: &Path, result: &Predict, repeat: usize) -> anyhow::Result<()> {
    let names: Vec<String> =
        result.runs.iter().map(|r| if repeat > 1 { format!("{}#{}", r.alg, r.repeat_run) } else { r.alg.clone() }).collect();
    let rows = result.runs.iter().zip(&names).flat_map(|(r, n)| r.disturbance.iter().map(move |d| (n.as_str(), d)));
    schedlab_report::disturb::write_csv(path, rows)
}

/// The columns of `--csv`: one line per (run, row); a row is one length or one size bucket
/// (`bucket_*` filled), `len_pkts` 0 all messages together.
pub const CSV_HEADER: [&str; 21] = [
    "alg",
    "label",
    "repeat_run",
    "kept_up",
    "predicted",
    "len_pkts",
    "bucket_low",
    "bucket_high",
    "bucket_pct_low",
    "bucket_pct_high",
    "count",
    "measured_mean_us",
    "measured_p50_us",
    "measured_p99_us",
    "predicted_mean_us",
    "predicted_p50_us",
    "predicted_p99_us",
    "ratio_mean",
    "ring_wait_us",
    "sched_queue_us",
    "release_to_seen_us",
];

/// Writes `--csv`: every run's rows ([`CSV_HEADER`]; `-`: stdout). Predicted figures of a run
/// that could not keep up are empty, as are the bucket columns of a per-length row.
pub fn write_csv(path: &Path, result: &Predict) -> anyhow::Result<()> {
    let mut c = schedlab_report::export::Csv::create(path, &CSV_HEADER)?;
    let f = |x: f64| if x.is_finite() { format!("{x}") } else { String::new() };
    for r in &result.runs {
        for row in &r.rows {
            let b = row.bucket;
            let p = |x: f64| if r.predicted { f(x) } else { String::new() };
            c.row(&[
                r.alg.clone(),
                r.label.clone(),
                r.repeat_run.to_string(),
                r.verdict.kept_up.to_string(),
                r.predicted.to_string(),
                row.len_pkts.to_string(),
                b.map_or(String::new(), |b| b.low.to_string()),
                b.map_or(String::new(), |b| b.high.to_string()),
                b.map_or(String::new(), |b| f(b.pct_low)),
                b.map_or(String::new(), |b| f(b.pct_high)),
                row.count.to_string(),
                f(row.measured.mean_us),
                f(row.measured.p50_us),
                f(row.measured.p99_us),
                p(row.predicted.mean_us),
                p(row.predicted.p50_us),
                p(row.predicted.p99_us),
                p(row.ratio_mean),
                f(row.breakdown.ring_wait_us),
                f(row.breakdown.sched_queue_us),
                f(row.breakdown.release_to_seen_us),
            ])?;
        }
    }
    c.finish()?;
    Ok(())
}

/// The human table of one run.
pub fn text(r: &AlgRun) -> String {
    let mut s = format!(
        "\n== {} ({}) ==  {} messages ({} delivered), link {} nominal, achieved {:.1} Mb/s, a packet takes {:.2} us\n",
        r.alg,
        r.label,
        r.messages,
        r.delivered,
        Bps(r.link_nominal_bps),
        r.link_achieved_bps / 1e6,
        r.service_ns / 1e3
    );
    // Rows are lengths, or size buckets (`low-high` packets, their size percentiles at the end).
    let bucketed = r.rows.iter().any(|x| x.bucket.is_some());
    let len = |row: &Row| match (row.bucket, row.len_pkts) {
        (Some(b), _) => format!("{}-{}", b.low, b.high),
        (None, 0) => "all".to_string(),
        (None, l) => l.to_string(),
    };
    let w = r.rows.iter().map(|x| len(x).len()).max().unwrap_or(0).max(if bucketed { 7 } else { 5 });
    let pct = |row: &Row| match row.bucket {
        Some(b) => format!(" {:>11}", format!("{:.1}-{:.1}", 100.0 * b.pct_low, 100.0 * b.pct_high)),
        None if bucketed => format!(" {:>11}", "all"),
        None => String::new(),
    };
    let (len_head, pct_head) = if bucketed { ("lengths", format!(" {:>11}", "percentiles")) } else { ("len", String::new()) };
    if bucketed {
        s += &format!(
            "more than {} distinct lengths: one row per size bucket, by the compared messages' size percentiles (as sim buckets)\n",
            crate::compare::MAX_LENGTH_COLUMNS
        );
    }
    if r.verdict.disturbed {
        s += "DISTURBED: the harness kept up with the link but was disturbed, so the run is set aside and its \
              disagreement with the model is not the model's:\n";
        for why in &r.verdict.reasons {
            s += &format!("  - {why}\n");
        }
    }
    if !r.predicted {
        s += "CANNOT KEEP UP: the harness did not run the link at its nominal rate, so the model's prediction \
              does not apply; measured figures only.\n";
        for why in &r.verdict.reasons {
            s += &format!("  - {why}\n");
        }
        s += &format!("{len_head:>w$} {:>7} {:>11} {:>10} {:>10}{pct_head}\n", "count", "mean us", "p50 us", "p99 us");
        for row in &r.rows {
            s += &format!(
                "{:>w$} {:>7} {:>11.1} {:>10.1} {:>10.1}{}\n",
                len(row),
                row.count,
                row.measured.mean_us,
                row.measured.p50_us,
                row.measured.p99_us,
                pct(row)
            );
        }
    } else {
        s += "queueing latency (arrival to release of the last packet), us:\n";
        s += &format!(
            "{len_head:>w$} {:>7} | {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {:>6}{pct_head}\n",
            "count", "meas mean", "meas p50", "meas p99", "pred mean", "pred p50", "pred p99", "ratio"
        );
        for row in &r.rows {
            s += &format!(
                "{:>w$} {:>7} | {:>9.1} {:>9.1} {:>9.1} | {:>9.1} {:>9.1} {:>9.1} | {:>6.3}{}\n",
                len(row),
                row.count,
                row.measured.mean_us,
                row.measured.p50_us,
                row.measured.p99_us,
                row.predicted.mean_us,
                row.predicted.p50_us,
                row.predicted.p99_us,
                row.ratio_mean,
                pct(row)
            );
        }
    }
    if let Some(all) = r.rows.last() {
        let b = &all.breakdown;
        s += &format!(
            "where the measured time went (mean per message, us): ring wait {:.2}, scheduler queue {:.2}, then release-to-seen {:.2}\n",
            b.ring_wait_us, b.sched_queue_us, b.release_to_seen_us
        );
    }
    s += &format!(
        "scheduler passes vs the link's clock: last packets released late by mean {:.2} us, p50 {:.2}, p99 {:.2}\n",
        r.release_lateness.mean_us, r.release_lateness.p50_us, r.release_lateness.p99_us
    );
    s += &schedlab_report::disturb::lines(&r.disturbance);
    if let Some(o) = &r.order_check {
        s += &match (o.identical(), o.first_mismatch) {
            (true, _) => format!(
                "release order: the {} packets the harness released are exactly the simulator's, in order\n",
                o.harness_pkts
            ),
            (false, Some(k)) => format!("release order: DIFFERS from the simulator's at packet {k} of {}\n", o.harness_pkts),
            (false, None) => format!(
                "release order: the harness released {} packets, the simulator only {}\n",
                o.harness_pkts, o.simulator_pkts
            ),
        };
    }
    s
}

/// Mean latency vs message length, measured and predicted, per algorithm (the chart comes from
/// `schedlab_report::plot::figures::predict_chart`, which the `schedlab report` page also uses).
pub fn plot(rep: &Predict) -> LineChart {
    let runs: Vec<PredictSeries> = rep
        .runs
        .iter()
        .map(|r| PredictSeries {
            alg: r.alg.clone(),
            rows: r
                .rows
                .iter()
                .map(|x| (f64::from(x.len_pkts), x.measured.mean_us, r.predicted.then_some(x.predicted.mean_us)))
                .collect(),
        })
        .collect();
    predict_chart(&runs)
}
