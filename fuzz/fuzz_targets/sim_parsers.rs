//! Feeds arbitrary bytes to every parser of `schedlab sim`: strategy names, --msg-alpha classes,
//! length-distribution files and arrival traces. Any panic is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_sim::model::{parse_alpha_classes, read_trace, LengthDist, Strategy};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = Strategy::parse(s);
        let _ = parse_alpha_classes(s);
    }
    let p = std::env::temp_dir().join(format!("schedlab-fuzz-{}", std::process::id()));
    if std::fs::write(&p, data).is_ok() {
        let _ = LengthDist::from_file(&p);
        let _ = read_trace(&p);
    }
});
