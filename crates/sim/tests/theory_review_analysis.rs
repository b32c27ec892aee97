//! Review of how the statistics put queueing theory beside a run (`stats::analyse` and
//! `LevelStats::text`): theory only where its model is the run's, and every comparison shown.

use schedlab_sim::engine::{run, Control, SimConfig};
use schedlab_sim::model::parse_strategy;
use schedlab_sim::stats::{analyse, Options};

fn config(strategies: &[&str], packets: u64) -> SimConfig {
    SimConfig {
        strategies: strategies.iter().map(|s| parse_strategy(s).unwrap()).collect(),
        ..SimConfig::report(80.0, packets, 3)
    }
}

/// `--in-order` (§11) keeps each application's messages in order in the alpha strategies, SF
/// included, so SF is no longer SRPT and its closed form is not this run's. It used to be
/// printed and flagged anyway: at 80% with two applications, SF's one-packet messages waited
/// 19.5 time units in the simulation against 0.66 by the SRPT formula, every SF cell starred.
/// FIFO and RR do not look at applications and keep their theory.
#[test]
fn in_order_runs_get_no_srpt_theory() {
    let cfg = SimConfig { apps: 2, in_order: true, ..config(&["FIFO", "RR", "SF"], 400_000) };
    let r = run(&cfg, &Control::default());
    let st = analyse(&cfg, std::slice::from_ref(&r), &Options::default());
    let cells = |label: &str| &st.strategies.iter().find(|s| s.label == label).expect("ran").cells;
    for c in cells("SF") {
        assert!(
            c.analytic.is_none() && c.flagged.is_none(),
            "SF length {}: SRPT theory {:?} beside an in-order run ({})",
            c.len,
            c.analytic,
            c.mean
        );
    }
    for label in ["FIFO", "RR"] {
        assert!(cells(label).iter().all(|c| c.analytic.is_some()), "{label} keeps its theory");
    }
    let th = st.theory.as_ref().expect("Poisson arrivals");
    assert!(th.sf_avlat_tu.is_nan(), "sf_avlat_tu {}", th.sf_avlat_tu);
    assert!(th.rr_avlat_tu.is_finite() && th.fifo_avlat_tu.is_finite());
    // Without --in-order the same run has SF's theory, and it agrees.
    let cfg = SimConfig { apps: 2, ..config(&["SF"], 400_000) };
    let r = run(&cfg, &Control::default());
    let st = analyse(&cfg, std::slice::from_ref(&r), &Options::default());
    assert!(st.strategies[0].cells.iter().all(|c| c.analytic.is_some()));
}

/// The queue length's theory holds for every strategy, but the table showed it (and its flag)
/// only in FIFO's row: a run without FIFO printed an empty qlen column, so a qlen disagreement
/// could not be seen. It now goes in the first row shown.
#[test]
fn qlen_theory_is_shown_without_fifo() {
    let cfg = config(&["RR", "SF"], 200_000);
    let r = run(&cfg, &Control::default());
    let st = analyse(&cfg, std::slice::from_ref(&r), &Options::default());
    let text = st.text(false, false);
    let th = st.theory.as_ref().expect("Poisson arrivals");
    let section = text.split("Queueing theory beside the model").nth(1).expect("a theory table");
    let row = |name: &str| -> Vec<String> {
        section
            .lines()
            .find(|l| l.split('\t').next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{section}"))
            .split('\t')
            .map(String::from)
            .collect()
    };
    let (sim, theo) = (row("RR"), row("RR (theory)"));
    assert!(sim[1].starts_with(&format!("{:.2}±", st.qlen.mean)), "RR row's qlen column {:?}\n{section}", sim[1]);
    assert_eq!(theo[1], format!("{:.2}", th.qlen_pkts), "\n{section}");
    // Only once: SF's row leaves it out.
    assert_eq!(row("SF")[1], "", "\n{section}");
    assert_eq!(row("SF (theory)")[1], "", "\n{section}");
    // With FIFO it stays in FIFO's row, as before.
    let cfg = config(&["SF", "FIFO"], 200_000);
    let r = run(&cfg, &Control::default());
    let st = analyse(&cfg, std::slice::from_ref(&r), &Options::default());
    let text = st.text(false, false);
    let section = text.split("Queueing theory beside the model").nth(1).expect("a theory table");
    let fifo = section.lines().find(|l| l.starts_with("FIFO\t")).expect("FIFO row");
    assert!(fifo.split('\t').nth(1).is_some_and(|c| c.starts_with(&format!("{:.2}±", st.qlen.mean))), "{section}");
}
