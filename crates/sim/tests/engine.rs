//! Simulator invariants: lock step, work conservation, the open questions' modes, interruption.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use proptest::prelude::*;
use schedlab_sim::engine::{run, Arrivals, Control, SimConfig};
use schedlab_sim::model::{parse_alpha_classes, report_defaults, LengthDist, Strategy, TraceArrival};

fn all_strategies() -> Vec<Strategy> {
    let mut v = report_defaults();
    v.push(Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 });
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Work conservation: every strategy sends exactly the same packets, and with a finite α every
    /// message is delivered once the queues drain (a trace run ends only when all are delivered).
    #[test]
    fn work_conservation_and_delivery(seed in 0u64..1000, traffic in 5.0f64..98.0) {
        let cfg = SimConfig { strategies: all_strategies(), ..SimConfig::report(traffic, 20_000, seed) };
        let r = run(&cfg, &Control::default());
        let out = r.strategies[0].packets_out;
        prop_assert!(r.strategies.iter().all(|s| s.packets_out == out), "packets out differ");
        prop_assert!(out <= r.packets_in);

        // A trace drained to the end: all messages of every strategy delivered.
        let tr: Vec<TraceArrival> = (0..400).map(|i| TraceArrival { time: i as f64 * (4.7 / (traffic / 100.0)), len: 1 + (i * 13 % 20), app: i % 3 }).collect();
        let packets: u64 = tr.iter().map(|a| u64::from(a.len)).sum();
        let cfg = SimConfig { arrivals: Arrivals::Trace(Arc::new(tr)), apps: 3, ..cfg };
        let r = run(&cfg, &Control::default());
        for s in &r.strategies {
            prop_assert_eq!(s.packets_out, packets, "{} did not send everything", s.label);
            prop_assert_eq!(s.overall.count, 400, "{} did not deliver every message", s.label);
        }
    }
}

#[test]
fn same_seed_same_result_different_seed_different_result() {
    let a = run(&SimConfig::report(80.0, 200_000, 7), &Control::default());
    let b = run(&SimConfig::report(80.0, 200_000, 7), &Control::default());
    let c = run(&SimConfig::report(80.0, 200_000, 8), &Control::default());
    assert_eq!(format!("{:?}", a.strategies), format!("{:?}", b.strategies));
    assert_ne!(a.strategies[0].overall.mean_tu, c.strategies[0].overall.mean_tu);
    assert_eq!(a.seed, 7);
}

#[test]
fn qlen_is_the_same_for_every_strategy_and_near_theory_at_light_load() {
    // M/G/1 with E[S]=1, E[S^2]=1.5 and batch arrivals is complex; at 1% load the mean number of
    // queued packets is tiny but positive.
    let r = run(&SimConfig::report(1.0, 500_000, 3), &Control::default());
    assert!(r.qlen_pkts > 0.0 && r.qlen_pkts < 0.2, "{}", r.qlen_pkts);
    assert!(r.strategies.iter().all(|s| s.qlen_pkts == r.qlen_pkts));
}

#[test]
fn latency_ordering_matches_the_report_at_high_load() {
    let r = run(&SimConfig::report(90.0, 2_000_000, 4), &Control::default());
    let avg = |l: &str| r.strategies.iter().find(|s| s.label == l).unwrap().overall.mean_tu;
    // §8: SF is optimal; α = 100 is close; FIFO is the worst for average latency.
    assert!(avg("SF") <= avg("100") + 1e-9);
    assert!(avg("100") < avg("10"));
    assert!(avg("10") < avg("RR"));
    assert!(avg("RR") < avg("FIFO"));
    // Each row's fairness range is computed from (lat + 1) / len.
    let s = &r.strategies[0];
    assert!(s.period_min <= s.period_max);
}

#[test]
fn in_order_removes_reordering() {
    let mut cfg = SimConfig::report(90.0, 300_000, 5);
    cfg.apps = 4;
    cfg.strategies = vec![Strategy::Fifo, Strategy::Alpha(10.0), Strategy::ShortestFirst];
    let r = run(&cfg, &Control::default());
    assert_eq!(r.strategies[0].reordered, 0, "FIFO never reorders");
    assert!(r.strategies[1].reordered > 0 && r.strategies[2].reordered > 0);
    cfg.in_order = true;
    let r = run(&cfg, &Control::default());
    assert!(r.strategies.iter().all(|s| s.reordered == 0), "{:?}", r.strategies.iter().map(|s| s.reordered).collect::<Vec<_>>());
}

#[test]
fn per_message_alpha_favours_the_low_alpha_class() {
    let mut cfg = SimConfig::report(95.0, 500_000, 6);
    cfg.msg_alpha = parse_alpha_classes("1:50,100:50").unwrap();
    cfg.strategies = vec![Strategy::Alpha(10.0), Strategy::Prio];
    let r = run(&cfg, &Control::default());
    let prio = &r.strategies[1];
    assert_eq!(prio.by_class.len(), 2);
    // §10: "messages with high α can be displaced by messages with low α": on the same mix of
    // lengths, the low-α class waits less.
    assert!(prio.by_class[0].mean_tu < prio.by_class[1].mean_tu, "{:?}", prio.by_class);
    // Without per-message α the two classes are statistically alike.
    let fixed = &r.strategies[0];
    let (a, b) = (fixed.by_class[0].mean_tu, fixed.by_class[1].mean_tu);
    assert!((a - b).abs() / a < 0.2, "{a} vs {b}");
}

#[test]
fn closed_loop_bounds_the_queue() {
    let mut cfg = SimConfig::report(95.0, 300_000, 7);
    cfg.arrivals = Arrivals::Closed { apps: 8 };
    cfg.apps = 8;
    cfg.strategies = vec![Strategy::Fifo, Strategy::ShortestFirst];
    let r = run(&cfg, &Control::default());
    // With 8 applications at most 8 messages are ever queued: 8 x 20 packets is the hard bound.
    for s in &r.strategies {
        assert!(s.qlen_pkts < 160.0, "{}: {}", s.label, s.qlen_pkts);
        assert!(s.overall.count > 10_000);
    }
    // In closed loop the latencies are far lower than in the open-loop 95% table.
    assert!(r.strategies[0].overall.mean_tu < 60.0);
}

#[test]
fn tracking_alpha_lies_between_its_limits() {
    let mut cfg = SimConfig::report(95.0, 1_000_000, 8);
    cfg.strategies = vec![Strategy::Alpha(1.0), Strategy::Track { low: 1.0, high: 100.0, gain: 1.0 }, Strategy::Alpha(100.0)];
    let r = run(&cfg, &Control::default());
    let (lo, tr, hi) = (r.strategies[0].overall.mean_tu, r.strategies[1].overall.mean_tu, r.strategies[2].overall.mean_tu);
    assert!(hi <= tr && tr <= lo, "α=100 {hi}, tracking {tr}, α=1 {lo}");
}

#[test]
fn stop_flag_interrupts_with_partial_results() {
    let ctl = Control::default();
    ctl.stop.store(true, Ordering::Relaxed);
    let r = run(&SimConfig::report(50.0, 100_000_000, 1), &ctl);
    assert!(r.interrupted);
    assert!(r.packets_in < 1_000_000, "stopped early: {}", r.packets_in);
    assert!(r.strategies[0].overall.count > 0);
}

#[test]
fn checkpoints_follow_the_listing_schedule() {
    let mut cfg = SimConfig::report(50.0, 200_000, 9);
    cfg.checkpoints = true;
    let r = run(&cfg, &Control::default());
    let times: Vec<f64> = r.checkpoints.iter().map(|c| c.time_tu).collect();
    assert!(times.len() >= 5);
    for (k, t) in times.iter().enumerate() {
        let want = 200_000.0 * (1.1f64.powi(k as i32 + 1) - 1.0);
        assert!((t - want).abs() < 1e-6 * want, "checkpoint {k}: {t} vs {want}");
    }
    // Cumulative: packets in never decrease.
    assert!(r.checkpoints.windows(2).all(|w| w[0].packets_in <= w[1].packets_in));
}

#[test]
fn custom_distribution_changes_the_lengths_seen() {
    let mut cfg = SimConfig::report(50.0, 200_000, 10);
    cfg.dist = LengthDist::new(&[(2, 2, 50.0), (8, 10, 50.0)]).unwrap();
    let r = run(&cfg, &Control::default());
    let lens: Vec<u32> = r.strategies[0].by_len.iter().map(|l| l.len).collect();
    assert_eq!(lens, vec![2, 8, 9, 10]);
}
