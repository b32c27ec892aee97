//! `--repeat N`: the same workload run N times per algorithm; the runs the verdict set aside
//! (cannot keep up, or disturbed) are dropped, counted and explained; the others give the median
//! and the spread of measured / predicted.
//!
//! Pure functions of the runs' outcomes (no harness), so they are tested on made-up outcomes.

/// What one run said, as far as the summary needs it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The verdict let the comparison stand (kept up, not disturbed).
    pub kept_up: bool,
    pub reasons: Vec<String>,
    /// Overall measured / predicted mean latency (NaN when not predicted).
    pub ratio: f64,
    pub measured_mean_us: f64,
    pub predicted_mean_us: f64,
}

/// A run set aside, the spread of the kept runs and one algorithm's summary: the typed result's
/// parts (`schedlab_report::results::predict`).
pub use schedlab_report::results::predict::{RepeatSummary as Summary, SetAside, Spread};

/// What `--repeat` needs of a run.
pub fn outcome(r: &schedlab_report::results::predict::AlgRun) -> Outcome {
    let all = r.rows.last();
    Outcome {
        kept_up: r.verdict.kept_up,
        reasons: r.verdict.reasons.clone(),
        ratio: all.map_or(f64::NAN, |a| a.ratio_mean),
        measured_mean_us: all.map_or(f64::NAN, |a| a.measured.mean_us),
        predicted_mean_us: all.map_or(f64::NAN, |a| a.predicted.mean_us),
    }
}

/// Summarises one algorithm's runs (in the order they were made).
pub fn summarise(alg: &str, runs: &[Outcome]) -> Summary {
    let kept: Vec<&Outcome> = runs.iter().filter(|o| o.kept_up).collect();
    let pick = |f: fn(&Outcome) -> f64| kept.iter().map(|o| f(o)).collect::<Vec<f64>>();
    Summary {
        alg: alg.to_string(),
        runs: runs.len(),
        kept: kept.len(),
        set_aside: runs
            .iter()
            .enumerate()
            .filter(|(_, o)| !o.kept_up)
            .map(|(i, o)| SetAside { run: i + 1, reasons: o.reasons.clone() })
            .collect(),
        ratio: Spread::of(&pick(|o| o.ratio)),
        measured_mean_us: Spread::of(&pick(|o| o.measured_mean_us)),
        predicted_mean_us: Spread::of(&pick(|o| o.predicted_mean_us)),
        kept_ratios: pick(|o| o.ratio),
    }
}

/// One line per run under `--repeat`: `run 3/20 alpha:10: kept, measured/predicted 1.012
/// (measured 41.20 us, predicted 40.71 us)` or `... set aside: REASONS`.
pub fn run_line(k: usize, n: usize, alg: &str, o: &Outcome) -> String {
    if o.kept_up {
        format!(
            "run {k}/{n} {alg}: kept, measured/predicted {:.3} (measured {:.2} us, predicted {:.2} us)\n",
            o.ratio, o.measured_mean_us, o.predicted_mean_us
        )
    } else if o.ratio.is_finite() {
        format!("run {k}/{n} {alg}: set aside (measured/predicted {:.3}): {}\n", o.ratio, o.reasons.join("; "))
    } else {
        format!("run {k}/{n} {alg}: set aside: {}\n", o.reasons.join("; "))
    }
}

/// The human lines of one summary.
pub fn text(s: &Summary) -> String {
    let mut out = format!("{}: {} runs, {} kept, {} set aside", s.alg, s.runs, s.kept, s.set_aside.len());
    match (&s.ratio, &s.measured_mean_us, &s.predicted_mean_us) {
        (Some(r), Some(m), Some(p)) => {
            out += &format!(
                "; measured/predicted median {:.3} (min {:.3}, max {:.3}, at most {:.1}% from the median); measured mean median {:.2} us, predicted {:.2} us\n",
                r.median, r.min, r.max, r.max_dev_pct, m.median, p.median
            );
        }
        _ => out += "; no run kept: no median\n",
    }
    for a in &s.set_aside {
        out += &format!("  run {} set aside: {}\n", a.run, a.reasons.join("; "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(kept_up: bool, ratio: f64) -> Outcome {
        Outcome {
            kept_up,
            reasons: if kept_up { vec![] } else { vec!["DISTURBED: late".into()] },
            ratio,
            measured_mean_us: 40.0 * ratio,
            predicted_mean_us: 40.0,
        }
    }

    #[test]
    fn disturbed_runs_are_dropped_counted_and_explained() {
        let runs = [o(true, 1.01), o(false, 1.16), o(true, 0.99), o(true, 1.03), o(false, f64::NAN)];
        let s = summarise("alpha:10", &runs);
        assert_eq!((s.runs, s.kept), (5, 3));
        assert_eq!(s.set_aside.iter().map(|a| a.run).collect::<Vec<_>>(), vec![2, 5]);
        let r = s.ratio.unwrap();
        assert_eq!((r.median, r.min, r.max), (1.01, 0.99, 1.03));
        assert!((r.max_dev_pct - 100.0 * 0.02 / 1.01).abs() < 1e-9);
        assert_eq!(s.kept_ratios, vec![1.01, 0.99, 1.03]);
        let t = text(&s);
        assert!(t.contains("5 runs, 3 kept, 2 set aside") && t.contains("run 2 set aside: DISTURBED: late"), "{t}");
    }

    #[test]
    fn an_even_count_takes_the_middle_pair_and_none_kept_has_no_median() {
        assert_eq!(Spread::of(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
        let s = summarise("fifo", &[o(false, 1.2)]);
        assert!(s.ratio.is_none());
        assert!(text(&s).contains("no run kept"));
    }
}
