//! Batch statistics: Student t half-widths at every batch count, and groups that saw no message.

use schedlab_sim::engine::{ci95, run, t975, Control};
use schedlab_sim::model::{parse_alpha_classes, parse_strategy};
use schedlab_sim::SimConfig;

/// t₀.₉₇₅ from standard tables.
const TABLE: [(usize, f64); 6] = [(31, 2.0395), (35, 2.0301), (40, 2.0211), (49, 2.0096), (60, 2.0003), (120, 1.9799)];

#[test]
fn t_quantile_beyond_thirty_degrees_of_freedom() {
    for (df, t) in TABLE {
        assert!((t975(df) - t).abs() < 5e-4, "df {df}: {} vs tables {t}", t975(df));
    }
    for df in 1..500 {
        assert!(t975(df + 1) < t975(df), "t975 decreases with df: df {df}");
    }
}

#[test]
fn half_width_of_forty_one_batch_means_uses_t_with_forty_df() {
    // 41 batch means 0, 1, ..., 40: mean 20, sample variance 41·42/12 = 143.5.
    let xs: Vec<f64> = (0..41).map(f64::from).collect();
    let se = (143.5f64 / 41.0).sqrt();
    let hw = ci95(&xs);
    assert!((hw - 2.0211 * se).abs() < 5e-4 * se, "half-width {hw}, t(40)·SE = {}", 2.0211 * se);
}

/// A group of messages that saw none (a §10 α class with no message in a short run) reports
/// no latency: NaN (JSON `null`), not a mean, p50, p99 and max of 0 that read as measured.
#[test]
fn an_alpha_class_without_messages_has_no_latency() {
    let cfg = SimConfig {
        strategies: vec![parse_strategy("prio").unwrap()],
        msg_alpha: parse_alpha_classes("1:99.999,100:0.001").unwrap(),
        ..SimConfig::report(50.0, 200, 1)
    };
    let r = run(&cfg, &Control::default());
    let classes = &r.strategies[0].by_class;
    assert_eq!(classes.len(), 2);
    assert!(classes[0].count > 0);
    let empty = &classes[1];
    assert_eq!(empty.count, 0, "the 0.001% class drew no message in 200 packets");
    for (name, v) in [("mean", empty.mean_tu), ("p50", empty.p50_tu), ("p99", empty.p99_tu), ("max", empty.max_tu)] {
        assert!(v.is_nan(), "{name} of no message is {v}");
    }
    let json = serde_json::to_value(empty).unwrap();
    assert!(json["mean_tu"].is_null() && json["max_tu"].is_null(), "{json}");
}
