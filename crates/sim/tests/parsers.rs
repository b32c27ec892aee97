//! The simulator's parsers never panic, whatever they are fed: they return a value or an error
//! (the same inputs the cargo-fuzz target in `fuzz/` explores without bounds).

use proptest::prelude::*;
use schedlab_sim::model::{parse_alpha_classes, parse_strategy, read_trace, LengthDist};

fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("schedlab-fuzz-{}-{name}", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn strategy_and_class_parsers_never_panic(s in "\\PC{0,40}", t in "[-0-9a-zA-Z:.,'e ]{0,40}") {
        let _ = parse_strategy(&s);
        let _ = parse_strategy(&t);
        let _ = parse_alpha_classes(&s);
        let _ = parse_alpha_classes(&t);
    }

    #[test]
    fn file_parsers_never_panic(lines in prop::collection::vec("[-0-9a-z.#e ]{0,24}", 0..12), raw in prop::collection::vec(any::<u8>(), 0..200)) {
        let text = lines.join("\n");
        let p = temp("dist", text.as_bytes());
        if let Ok(d) = LengthDist::from_file(&p) {
            prop_assert!(d.mean() >= 1.0);
        }
        let q = temp("trace", text.as_bytes());
        if let Ok(t) = read_trace(&q) {
            prop_assert!(t.windows(2).all(|w| w[0].time <= w[1].time));
        }
        let r = temp("raw", &raw);
        let _ = LengthDist::from_file(&r);
        let _ = read_trace(&r);
        for f in [p, q, r] { let _ = std::fs::remove_file(f); }
    }
}
