//! A group of messages that saw none (a §10 α class with no message in a short run) reports
//! no latency: NaN (JSON `null`), not a mean, p50, p99 and max of 0 that read as measured.

use schedlab_sim::engine::{run, Control};
use schedlab_sim::model::{parse_alpha_classes, parse_strategy};
use schedlab_sim::SimConfig;

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
