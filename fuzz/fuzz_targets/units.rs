//! Every unit-suffixed value a user types: rates, durations, counts and sizes (the front-end
//! kit's one parser, schedlab_report::units, which sched, sim, predict and sweep use), time units (sim), -D durations (prims), sizes and rounds (echo), message sizes and windows (rdma),
//! percentages (hist), shards (sweep). Any panic is a bug; accepted values are positive and finite
//! where documented, and the sched units print back to the same value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_echo::Size;
use schedlab_rdma::types::{MsgSize, Op};
use schedlab_report::units::{parse_bps, parse_count, parse_duration, parse_size, MAX_COUNT};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(b) = parse_bps(s) {
        assert_eq!(parse_bps(&b.0.to_string()), Ok(b), "{s}: bandwidth prints back");
    }
    for unit in [1, 1000, 1_000_000_000] {
        if let Ok(d) = parse_duration(s, unit) {
            assert!(d.0 < u64::MAX / 2, "{s}: {d:?}");
            assert_eq!(parse_duration(&format!("{}ns", d.0), unit), Ok(d), "{s}: duration prints back");
        }
    }
    if let Ok(n) = parse_count(s) {
        assert!((1..=MAX_COUNT).contains(&n), "{s}: count {n}");
        assert_eq!(parse_count(&n.to_string()), Ok(n), "{s}: count prints back");
    }
    if let Ok(z) = parse_size(s) {
        assert!(z >= 1 && z < u64::MAX / 2, "{s}: size {z}");
        assert_eq!(parse_size(&z.to_string()), Ok(z), "{s}: size prints back");
    }
    if let Ok(u) = schedlab_sim::model::parse_time_unit(s) {
        assert!(u.is_finite() && u > 0.0, "{s}: time unit {u}");
    }
    if let Ok(ns) = schedlab_prims::cli::parse_duration_ns(s) {
        assert!((1_000_000..32_000_000_000_000_000).contains(&ns), "{s}: -D {ns} ns");
    }
    if let Ok(z) = s.parse::<Size>() {
        assert!(z.bytes() >= 1 && z.bytes() <= schedlab_echo::size::MAX_SIZE, "{s}: {z:?}");
        assert_eq!(z.to_string().parse::<Size>().ok(), Some(z), "{s}: size prints back");
    }
    if let Ok(r) = schedlab_echo::cli::parse_rounds(s) {
        assert!(r >= 1);
    }
    if let Ok(p) = schedlab_echo::stats::parse_percent(s) {
        assert!((0.0..100.0).contains(&p), "{s}: {p}%");
    }
    if let Ok(m) = s.parse::<MsgSize>() {
        assert!(m.bytes() >= 1);
    }
    if let Ok(op) = s.parse::<Op>() {
        assert_eq!(op.number().to_string().parse::<Op>().ok(), Some(op));
    }
    if let Ok(w) = schedlab_rdma::cli::parse_window_us(s) {
        assert!(w.is_finite() && w > 0.0, "{s}: window {w} us");
    }
    if let Ok((i, n)) = schedlab_sweep::spec::parse_shard(s) {
        assert!(1 <= i && i <= n);
    }
});
