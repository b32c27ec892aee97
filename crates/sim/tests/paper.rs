//! Statistical reproduction of the report's raw-data tables (§15).
//!
//! For every cell, ours must match the report within its statistical error:
//!
//! `|ours − paper| ≤ Z · sqrt(se_ours² + se_paper²) + 0.005`
//!
//! where `se_ours` is our standard error from batch means (20 batches), `se_paper` is the report's
//! own single-run noise, estimated as `se_ours · sqrt(N_ours / N_paper)` from the packet counts the
//! report prints, and `0.005` is the report's rounding to two decimals.
//!
//! **Family-wise error.** `se_ours` is estimated from 20 batch means, so a cell's standardized
//! deviation `(ours − paper) / (se_ours · sqrt(1 + N_ours/N_paper))` follows Student's t with 19
//! degrees of freedom, not the normal law: its two-sided tail at 4.5 is 2.5·10⁻⁴ (the normal
//! law's is 6.8·10⁻⁶). The four tables hold 4 · (1 qlen + 13 strategies · 7 latencies) = 368
//! distinct cells, and by the union bound (Bonferroni, which holds however the cells of one sample
//! path depend on each other) the chance that *any* cell of a correct simulator fails is at most
//! 368 · P(|t₁₉| > Z). At Z = 4.5 that is 9.0%; at **Z = 5.5** it is 368 · 2.64·10⁻⁵ = **0.97%**,
//! the bound this file claims. (The 0.01% table's cells have no batch noise at all and only use
//! the rounding term, so the real rate is lower still.) The price: a model error must exceed
//! 5.5 standard errors to be caught; `the_comparison_rejects_a_wrong_table` shows a wrong RR
//! model still is.
//!
//! The 0.01% table gives no packet count; its cells scatter around their exact expectations
//! (0, 1, 2, 3, 4, 19 and 3.7) by about ±0.03, which a run of roughly 20,000 packets explains, so
//! `N_paper = 20,000` is assumed there.
//!
//! CI runs shorter versions (`N_ours` below, a few seconds in release); the full reproduction at
//! the report's own packet counts (about two minutes) is `scripts/paper-check.sh`, whose last run
//! is recorded in docs/notes/2026-11-28-paper-check.md.

use schedlab_sim::engine::{run, Control, RunResult, SimConfig};

/// Family-wise false-alarm bound over the 368 cells: 368 · P(|t₁₉| > 5.5) = 0.97% (module doc).
const Z: f64 = 5.5;
const ROUND: f64 = 0.005;

struct Table {
    traffic: f64,
    paper_packets: f64,
    /// Rows: label, qlen, lat1..lat5, lat20, avlat.
    rows: &'static str,
}

const T0_01: Table = Table {
    traffic: 0.01,
    paper_packets: 20_000.0,
    rows: "RR' 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
RR 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
FIFO 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
1 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
2 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
3 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
6 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
10 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
20 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
30 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
60 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
100 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74
SF 0.00 0.00 1.02 2.02 3.01 3.99 18.97 3.74",
};

const T1: Table = Table {
    traffic: 1.0,
    paper_packets: 454_428.0,
    rows: "RR' 0.05 0.01 1.02 2.03 3.05 4.04 19.19 3.73
RR 0.05 0.02 1.03 2.03 3.05 4.03 19.18 3.73
FIFO 0.05 0.07 1.06 2.06 3.06 4.04 19.05 3.74
1 0.05 0.03 1.03 2.03 3.04 4.02 19.09 3.72
2 0.05 0.02 1.02 2.02 3.04 4.02 19.11 3.72
3 0.05 0.01 1.02 2.02 3.03 4.02 19.12 3.72
6 0.05 0.01 1.02 2.02 3.03 4.02 19.13 3.71
10 0.05 0.01 1.02 2.01 3.03 4.02 19.13 3.71
20 0.05 0.01 1.02 2.01 3.03 4.02 19.14 3.71
30 0.05 0.01 1.02 2.01 3.03 4.02 19.14 3.71
60 0.05 0.01 1.02 2.01 3.03 4.02 19.14 3.71
100 0.05 0.01 1.02 2.01 3.03 4.02 19.14 3.71
SF 0.05 0.01 1.02 2.01 3.03 4.02 19.14 3.71",
};

const T50: Table = Table {
    traffic: 50.0,
    paper_packets: 5_928_080.0,
    rows: "RR' 5.08 0.35 2.45 4.53 6.64 8.68 39.05 7.98
RR 5.08 1.18 2.97 4.79 6.67 8.53 37.56 8.10
FIFO 5.08 5.46 6.41 7.42 8.46 9.45 24.41 9.14
1 5.08 2.77 4.00 5.23 6.50 7.69 27.49 7.46
2 5.08 1.57 2.86 4.18 5.57 6.93 29.13 6.71
3 5.08 1.04 2.31 3.69 5.13 6.55 30.03 6.37
6 5.08 0.60 1.82 3.16 4.62 6.13 31.22 6.06
10 5.08 0.49 1.69 2.98 4.41 5.95 31.81 5.98
20 5.08 0.43 1.62 2.89 4.28 5.80 32.31 5.94
30 5.08 0.42 1.59 2.86 4.24 5.75 32.52 5.93
60 5.08 0.41 1.58 2.84 4.21 5.71 32.65 5.92
100 5.08 0.41 1.58 2.83 4.21 5.70 32.67 5.92
SF 5.08 0.41 1.58 2.83 4.21 5.70 32.68 5.92",
};

const T95: Table = Table {
    traffic: 95.0,
    paper_packets: 353_635_860.0,
    rows: "RR' 102.69 0.74 23.31 45.80 68.28 90.62 422.94 83.46
RR 102.69 18.25 36.85 55.44 74.09 92.71 374.23 87.34
FIFO 102.69 103.33 104.34 105.29 106.31 107.26 122.30 107.01
1 102.69 95.00 96.86 98.64 100.46 102.19 130.66 101.83
2 102.69 87.00 89.64 92.23 94.87 97.44 138.68 96.88
3 102.69 79.64 82.93 86.24 89.63 92.97 146.20 92.27
6 102.69 61.06 65.68 70.54 75.73 80.99 166.03 80.32
10 102.69 43.00 48.27 54.09 60.71 67.75 187.10 68.00
20 102.69 18.36 23.13 28.76 35.85 44.60 221.10 49.24
30 102.69 8.33 11.92 16.45 22.49 30.90 239.12 40.13
60 102.69 1.65 3.49 5.91 9.41 15.28 257.30 32.16
100 102.69 0.98 2.46 4.33 6.97 11.52 261.50 30.87
SF 102.69 0.79 2.19 3.90 6.22 10.06 264.23 30.59",
};

/// Compares every cell; returns the failures as text (empty when all match).
fn compare(t: &Table, r: &RunResult) -> (Vec<String>, f64) {
    let n_ours = r.packets_in as f64;
    let scale = (1.0 + n_ours / t.paper_packets).sqrt(); // sqrt(se_o² + se_p²) / se_o
    let t19 = 2.093; // t quantile for 19 degrees of freedom
    let mut bad = Vec::new();
    let mut worst: f64 = 0.0;
    for line in t.rows.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let label = f[0];
        let paper: Vec<f64> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
        let s = r.strategies.iter().find(|s| s.label == label).unwrap_or_else(|| panic!("no row {label}"));
        let mut cells = vec![("qlen", r.qlen_pkts, r.qlen_ci95_pkts)];
        for (i, len) in [1u32, 2, 3, 4, 5, 20].iter().enumerate() {
            let l = s.by_len.iter().find(|x| x.len == *len).unwrap_or_else(|| panic!("{label}: no length {len}"));
            cells.push((["lat1", "lat2", "lat3", "lat4", "lat5", "lat20"][i], l.mean_tu, l.ci95_tu));
        }
        cells.push(("avlat", s.overall.mean_tu, s.overall.ci95_tu));
        for ((name, ours, ci), want) in cells.into_iter().zip(paper) {
            let se = if ci.is_nan() { 0.0 } else { ci / t19 };
            let tol = Z * se * scale + ROUND;
            let dev = (ours - want).abs();
            worst = worst.max(dev / tol);
            if dev > tol {
                bad.push(format!(
                    "traffic {}%: {label} {name}: ours {ours:.3} (±{ci:.3}) vs report {want:.2}; |diff| {dev:.3} > tolerance {tol:.3}",
                    t.traffic
                ));
            }
        }
    }
    (bad, worst)
}

fn check(t: &Table, packets: u64, seed: u64) {
    let cfg = SimConfig::report(t.traffic, packets, seed);
    let r = run(&cfg, &Control::default());
    let (bad, worst) = compare(t, &r);
    eprintln!("traffic {}%: {} packets, seed {seed}: worst cell at {:.2} of its tolerance", t.traffic, r.packets_in, worst);
    assert!(bad.is_empty(), "{} cells off:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn reproduces_0_01_percent() {
    check(&T0_01, 2_000_000, 11);
}

#[test]
fn reproduces_1_percent() {
    check(&T1, 2_000_000, 12);
}

#[test]
fn reproduces_50_percent() {
    check(&T50, 6_000_000, 13);
}

#[test]
fn reproduces_95_percent() {
    check(&T95, 40_000_000, 14);
}

/// The report's own packet counts (95%: 353 M packets, about a minute per run). Run by
/// `scripts/paper-check.sh` (ignored in the default suite only for its length).
#[test]
#[ignore = "about two minutes: run scripts/paper-check.sh"]
fn full_reproduction_at_the_reports_packet_counts() {
    check(&T0_01, 20_000_000, 21);
    check(&T1, 454_428, 22);
    check(&T50, 5_928_080, 23);
    check(&T95, 353_635_860, 24);
}

/// A wrong model must fail this test: RR re-queued at the *end* of service (the textbook version
/// REFERENCE.md warns about) is emulated by shifting RR's numbers, and the comparison must reject it.
#[test]
fn the_comparison_rejects_a_wrong_table() {
    let cfg = SimConfig::report(50.0, 3_000_000, 5);
    let mut r = run(&cfg, &Control::default());
    let rr = r.strategies.iter_mut().find(|s| s.label == "RR").unwrap();
    for l in &mut rr.by_len {
        l.mean_tu *= 0.67;
    }
    let (bad, _) = compare(&T50, &r);
    assert!(bad.iter().any(|b| b.contains("RR lat1")), "{bad:?}");
}
