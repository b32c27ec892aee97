//! `schedlab sweep SPEC.toml`: sweep specs, with any `file = "..."` distribution given as text
//! (no file is read). Input: `SPEC \0 DISTRIBUTION-FILE`. Any panic is a bug; an accepted spec has
//! cells numbered 0..n with valid traffic levels and packet counts.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use schedlab_fuzz::{parts, text};
use schedlab_sim::LengthDist;
use schedlab_sweep::spec::Sweep;

fuzz_target!(|data: &[u8]| {
    let [spec, dist] = parts::<2>(data);
    let (spec, dist) = (text(spec), text(dist));
    let load = |f: &str| LengthDist::parse(&dist, Path::new(f));
    let Ok(s) = Sweep::parse_with(&spec, "fuzz.toml", &load) else { return };
    assert!(!s.cells.is_empty());
    for (i, c) in s.cells.iter().enumerate() {
        assert_eq!(c.cell, i as u64);
        assert_eq!(c.cells_total, s.cells.len() as u64);
        assert!(c.traffic_pct > 0.0 && c.traffic_pct < 100.0 && c.packets >= 1, "{c:?}");
        let _ = c.key();
    }
    let _ = s.shard(1, 2);
});
