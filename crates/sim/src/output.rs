//! Text tables in the report's raw-data format, the listing's `>>` lines, and CSV rows.

use std::fmt::Write as _;

use schedlab_report::results::workload::Workload;

use crate::engine::{RunResult, StrategyResult};
pub use crate::format::{fmt_g, thousands};

/// The header line of a named workload a simulation ran (`--workload`), as `schedlab sim` prints
/// it after `# `: `workload w3 (step CDF, 1460 B/packet, mean 53412 bytes = 37.2 packets;
/// fnv1a64:…; github.com/… @ ab09ecb…)`.
pub fn workload_line(w: &Workload) -> String {
    let mut out = format!("workload {} ({} CDF", w.name, w.reading);
    if let Some(b) = w.bytes_per_packet {
        let _ = write!(out, ", {b} B/packet");
    }
    out.push_str(", mean ");
    if let (Some(size), Some(unit)) = (w.mean_size, &w.unit) {
        let _ = write!(out, "{} {unit} = ", fmt_g((size * 1e4).round() / 1e4));
    }
    let _ = write!(out, "{:.4} packets; {}; {} @ {})", w.mean_packets, w.checksum, w.source, w.commit);
    out
}

fn lengths(r: &RunResult) -> Vec<u32> {
    let mut v: Vec<u32> = r.strategies.iter().flat_map(|s| s.by_len.iter().map(|l| l.len)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// True when the run kept statistics per size bucket (a column `len` is then the bucket of
/// lengths up to `len`, written `≤len`).
fn bucketed(r: &RunResult) -> bool {
    r.strategies.iter().flat_map(|s| s.by_len.iter()).any(|l| l.bucket.is_some())
}

/// A column's length label: `20`, or `≤20` for a size bucket.
fn col(r: &RunResult, len: u32) -> String {
    if bucketed(r) {
        format!("≤{len}")
    } else {
        len.to_string()
    }
}

/// Per size bucket and strategy: the bucket's lengths and size percentiles, count, latency mean,
/// p50, p99, and slowdown mean, p50, p99 (slowdown = (latency + 1) / length). Empty when the run
/// kept statistics per length.
pub fn bucket_table(r: &RunResult) -> String {
    if !bucketed(r) {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nPer size bucket (buckets by size percentile; slowdown = (latency + 1) / length, 1 = sent at once), traffic {}%:",
        fmt_g(r.traffic_pct)
    );
    let _ = writeln!(s, "α\tpercentiles\tlengths\tcount\tlat_mean\tlat_p50\tlat_p99\tsd_mean\tsd_p50\tsd_p99");
    for st in &r.strategies {
        for l in st.by_len.iter().chain(std::iter::once(&st.overall)) {
            let (pct, lens) = match l.bucket {
                Some(b) => (format!("{:.1}-{:.1}", 100.0 * b.pct_low, 100.0 * b.pct_high), format!("{}-{}", b.low, b.high)),
                None => ("all".into(), "all".into()),
            };
            let _ = writeln!(
                s,
                "{}\t{pct}\t{lens}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                st.label,
                l.count,
                sig(l.mean_tu),
                sig(l.p50_tu),
                sig(l.p99_tu),
                sig(l.slowdown_mean),
                sig(l.slowdown_p50),
                sig(l.slowdown_p99)
            );
        }
    }
    s
}

fn mean_for(s: &StrategyResult, len: u32) -> Option<f64> {
    s.by_len.iter().find(|l| l.len == len).map(|l| l.mean_tu)
}

/// The report's raw-data table: `Traffic = 50%; packets = 5,928,080.` then
/// `α qlen lat1 … lat20 avlat`, TAB separated, two decimals.
pub fn raw_table(r: &RunResult) -> String {
    let lens = lengths(r);
    let mut s = String::new();
    let _ = writeln!(s, "Traffic = {}%; packets = {}.", fmt_g(r.traffic_pct), thousands(r.packets_in));
    let mut head = vec!["α".to_string(), "qlen".into()];
    head.extend(lens.iter().map(|&l| format!("lat{}", col(r, l))));
    head.push("avlat".into());
    let _ = writeln!(s, "{}", head.join("\t"));
    for st in &r.strategies {
        let mut row = vec![st.label.clone(), format!("{:.2}", st.qlen_pkts)];
        for &l in &lens {
            row.push(mean_for(st, l).map_or("-".into(), |m| format!("{m:.2}")));
        }
        row.push(format!("{:.2}", st.overall.mean_tu));
        let _ = writeln!(s, "{}", row.join("\t"));
    }
    s
}

/// Further statistics beyond the report: percentiles, confidence intervals, §12 fairness.
pub fn extra_tables(r: &RunResult, batches: u32) -> String {
    let lens = lengths(r);
    let mut s = String::new();
    let cols = |prefix: &str| {
        let mut h = vec!["α".to_string()];
        h.extend(lens.iter().map(|&l| format!("{prefix}{}", col(r, l))));
        h.push(format!("{prefix}all"));
        h.join("\t")
    };
    let _ = writeln!(
        s,
        "\nLatency percentiles p50/p99/max (time units; percentiles within 1.6% of latency+1, max exact), traffic {}%:",
        fmt_g(r.traffic_pct)
    );
    let _ = writeln!(s, "{}", cols("len"));
    for st in &r.strategies {
        let mut row = vec![st.label.clone()];
        for &l in &lens {
            row.push(
                st.by_len
                    .iter()
                    .find(|x| x.len == l)
                    .map_or("-".into(), |x| format!("{}/{}/{}", sig(x.p50_tu), sig(x.p99_tu), sig(x.max_tu))),
            );
        }
        let o = &st.overall;
        row.push(format!("{}/{}/{}", sig(o.p50_tu), sig(o.p99_tu), sig(o.max_tu)));
        let _ = writeln!(s, "{}", row.join("\t"));
    }
    let _ = writeln!(
        s,
        "\n95% confidence half-widths of the mean latencies (batch means, {batches} batches), traffic {}%:",
        fmt_g(r.traffic_pct)
    );
    let _ = writeln!(s, "{}", cols("±lat"));
    for st in &r.strategies {
        let mut row = vec![st.label.clone()];
        for &l in &lens {
            row.push(st.by_len.iter().find(|x| x.len == l).map_or("-".into(), |x| fmt_ci(x.ci95_tu)));
        }
        row.push(fmt_ci(st.overall.ci95_tu));
        let _ = writeln!(s, "{}", row.join("\t"));
    }
    let sf = r.strategies.iter().find(|x| x.label == "SF").map(|x| x.overall.mean_tu);
    let _ = writeln!(s, "\nFairness (§12): effective packet period (latency + 1) / length, and overall latency relative to SF:");
    let _ = writeln!(s, "α\tperiod_min\tperiod_max\trange\tavlat/SF");
    for st in &r.strategies {
        let rel = sf.filter(|v| *v > 0.0).map_or("-".into(), |v| format!("{:.3}", st.overall.mean_tu / v));
        let _ = writeln!(
            s,
            "{}\t{:.2}\t{:.2}\t{:.2}\t{}",
            st.label,
            st.period_min,
            st.period_max,
            st.period_max - st.period_min,
            rel
        );
    }
    if r.strategies.iter().any(|x| !x.by_class.is_empty()) {
        let _ = writeln!(s, "\nLatency per §10 α class (mean time units; class order as given to --msg-alpha):");
        for st in &r.strategies {
            let cells: Vec<String> =
                st.by_class.iter().map(|c| format!("class{}: {:.2} (n={})", c.len, c.mean_tu, c.count)).collect();
            let _ = writeln!(s, "{}\t{}", st.label, cells.join("\t"));
        }
    }
    s.push_str(&bucket_table(r));
    s.push_str(&crate::questions::class_len_table(r));
    s.push_str(&crate::questions::reorder_table(r));
    s.push_str(&crate::questions::alpha_chosen_table(r));
    if r.interrupted {
        let _ = writeln!(s, "\n(interrupted: statistics cover the {} packets that arrived)", thousands(r.packets_in));
    }
    s
}

/// About three significant digits (percentiles are binned, so more would overstate them).
fn sig(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn fmt_ci(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else {
        format!("{v:.3}")
    }
}

fn centi(x: f64) -> i64 {
    (100.0 * x + 0.5).floor() as i64
}

/// The listing's `>>` lines for every checkpoint and for the end of the run.
pub fn classic_lines(r: &RunResult) -> String {
    let mut s = String::new();
    let t = fmt_g(r.traffic_pct);
    for c in &r.checkpoints {
        s.push('\n');
        for (i, (alpha, q, out, lens, avg)) in c.rows.iter().enumerate() {
            let lats: Vec<String> = lens.iter().map(|m| centi(*m).to_string()).collect();
            let label = r.strategies.get(i).map_or("", |st| st.label.as_str());
            let _ = writeln!(
                s,
                ">> {t} {} {} {} {} {} {}",
                crate::questions::classic_alpha(*alpha, label),
                centi(*q),
                crate::questions::row_packets_in(c, i),
                out,
                lats.join(" "),
                centi(*avg)
            );
        }
    }
    s.push('\n');
    for st in &r.strategies {
        let lats: Vec<String> = st.by_len.iter().map(|l| centi(l.mean_tu).to_string()).collect();
        let _ = writeln!(
            s,
            ">> {t} {} {} {} {} {} {}",
            crate::questions::classic_alpha(st.listing_alpha, &st.label),
            centi(st.qlen_pkts),
            if r.closed_apps.is_some() { st.packets_in } else { r.packets_in },
            st.packets_out,
            lats.join(" "),
            centi(st.overall.mean_tu)
        );
    }
    s
}

/// CSV header for [`csv_rows`]. The last five columns are filled on size-bucket rows (a named
/// workload, or more than 64 lengths): the bucket's size percentiles (fractions) and the mean,
/// p50 and p99 slowdown ((latency + 1) / length); on per-length rows they are empty.
pub const CSV_HEADER: [&str; 18] = [
    "traffic_pct",
    "seed",
    "strategy",
    "listing_alpha",
    "len_pkts",
    "count",
    "mean_lat_tu",
    "ci95_lat_tu",
    "p50_lat_tu",
    "p99_lat_tu",
    "max_lat_tu",
    "qlen_pkts",
    "packets_in",
    "bucket_pct_low",
    "bucket_pct_high",
    "slowdown_mean",
    "slowdown_p50",
    "slowdown_p99",
];

/// A slowdown cell: empty where it is not kept (NaN).
fn slowdown(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        String::new()
    }
}

/// One CSV row per (strategy, length), plus a `len_pkts = 0` row for all messages.
pub fn csv_rows(r: &RunResult) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for st in &r.strategies {
        for l in st.by_len.iter().chain(std::iter::once(&st.overall)) {
            rows.push(vec![
                fmt_g(r.traffic_pct),
                r.seed.to_string(),
                st.label.clone(),
                fmt_g(st.listing_alpha),
                l.len.to_string(),
                l.count.to_string(),
                format!("{:.6}", l.mean_tu),
                format!("{:.6}", l.ci95_tu),
                format!("{:.3}", l.p50_tu),
                format!("{:.3}", l.p99_tu),
                format!("{:.3}", l.max_tu),
                format!("{:.4}", st.qlen_pkts),
                r.packets_in.to_string(),
                l.bucket.map_or(String::new(), |b| format!("{:.6}", b.pct_low)),
                l.bucket.map_or(String::new(), |b| format!("{:.6}", b.pct_high)),
                slowdown(l.slowdown_mean),
                slowdown(l.slowdown_p50),
                slowdown(l.slowdown_p99),
            ]);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn formats_like_the_report_and_listing() {
        assert_eq!(thousands(5_928_080), "5,928,080");
        assert_eq!(thousands(12), "12");
        assert_eq!(fmt_g(90.0), "90");
        assert_eq!(fmt_g(0.01), "0.01");
        assert_eq!(fmt_g(-2.0), "-2");
        assert_eq!(fmt_g(1e6), "1e+06");
        assert_eq!(centi(5.455), 546);
    }
}
