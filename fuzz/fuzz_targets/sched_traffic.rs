//! `schedlab sched -f FILE`: traffic programs (and the `dist:` lengths and `poisson` gaps inside).
//! The first byte picks the client count (1..=16), the rest is the file's text. Any panic is a bug;
//! a parsed program must also be one the harness can run: lengths and bursts in range, finite
//! mean bursts, distributions that print back to themselves.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_fuzz::text;
use schedlab_sched::traffic::{parse, MAX_BURST, MAX_PKT_LEN};
use schedlab_sched::workload::LenDist;

fuzz_target!(|data: &[u8]| {
    let Some((&t, rest)) = data.split_first() else { return };
    let threads = usize::from(t % 16) + 1;
    let text = text(rest);
    let Ok(tr) = parse(&text, "fuzz.txt", threads) else { return };
    assert_eq!(tr.programs.len(), threads);
    let _ = tr.longest();
    for s in tr.programs.iter().flatten() {
        assert!((1..=MAX_PKT_LEN).contains(&s.pkt_len), "{s:?}");
        assert!((1..=MAX_BURST).contains(&s.burst), "{s:?}");
        let mb = s.mean_burst();
        assert!(mb.is_finite() && mb >= 1.0 && mb <= f64::from(s.burst), "mean burst {mb} of {s:?}");
        let _ = s.gap_ps();
        if let Some(d) = &s.lengths {
            assert_eq!(d.max_len(), s.burst);
            assert_eq!(LenDist::parse(&d.to_string()).as_ref(), Ok(d), "a distribution prints back to itself");
            for u in [0.0, 0.25, 0.5, 0.999_999, 1.0] {
                let x = d.sample(u);
                assert!(x >= 1 && x <= d.max_len(), "sample({u}) = {x} of {d}");
            }
        }
    }
});
