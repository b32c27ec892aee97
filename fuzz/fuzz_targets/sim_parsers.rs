//! `schedlab sim`'s parsers, all from text (no temporary file): strategies (-a, --alphas, both
//! policy dialects), --msg-alpha classes, --weights, --service, --time-unit, and the texts of
//! --dist length files and --trace arrival traces. Input: `TEXT \0 TIME-UNIT`. Any panic is a bug;
//! accepted distributions have a mean within their lengths, accepted traces are in order.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use schedlab_fuzz::{parts, text};
use schedlab_policy::{Dialect, PolicySpec};
use schedlab_sim::model::{
    parse_alpha_classes, parse_strategy, parse_time_unit, parse_trace, parse_weights, Service, MAX_LEN, MAX_WEIGHT,
};
use schedlab_sim::LengthDist;

fuzz_target!(|data: &[u8]| {
    let [a, b] = parts::<2>(data);
    let s = text(a);
    let s = s.as_ref();
    for dialect in [Dialect::Sim, Dialect::Sched] {
        if let Ok(p) = PolicySpec::parse(s, dialect) {
            let _ = (p.name(), p.label(), p.family(), p.flow_level());
        }
    }
    let _ = parse_strategy(s);
    let _ = Service::parse(s);
    if let Ok(c) = parse_alpha_classes(s) {
        let sum: f64 = c.iter().map(|x| x.frac).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{s}: fractions sum to {sum}");
    }
    if let Ok(w) = parse_weights(s) {
        assert!(!w.is_empty() && w.len() <= 1 << 16);
        assert!(w.iter().all(|&x| (1..=MAX_WEIGHT).contains(&x)));
    }
    if let Ok(d) = LengthDist::parse(s, Path::new("fuzz.dist")) {
        let m = d.mean();
        assert!(m.is_finite() && m >= 1.0 - 1e-9 && m <= f64::from(d.max_len()) + 1e-9, "mean {m} of {d:?}");
        for u in [0.0, 0.5, 0.999_999] {
            let x = d.sample(u);
            assert!(x >= 1 && x <= d.max_len() && x <= MAX_LEN, "sample({u}) = {x}");
        }
    }
    let unit = parse_time_unit(&text(b)).unwrap_or(1.0);
    if let Ok(tr) = parse_trace(s, Path::new("fuzz.trace"), unit) {
        assert!(!tr.is_empty());
        for w in tr.windows(2) {
            assert!(w[0].time <= w[1].time, "out of order: {w:?}");
        }
        for x in &tr {
            assert!(x.time.is_finite() && x.time >= 0.0, "{x:?}");
            assert!((1..=MAX_LEN).contains(&x.len), "{x:?}");
        }
    }
});
