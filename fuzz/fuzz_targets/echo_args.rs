//! `schedlab hist` and the echo family's text inputs: hist's numbers (with --trim-slowest), the
//! sockperf summary that echo-bench reads, --mode names, /proc status fields, numeric socket
//! addresses, sizes and rounds. Input: `NUMBERS \0 WORD`. Any panic is a bug; hist's summary of
//! accepted numbers is ordered (min <= p50 <= max) and its histogram renders.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_echo::server::Mode;
use schedlab_echo::{stats, Size};
use schedlab_fuzz::{parts, text};
use schedlab_report::Summary;

fuzz_target!(|data: &[u8]| {
    let [nums, word] = parts::<2>(data);
    let (nums, word) = (text(nums), text(word));
    let word = word.as_ref();
    let _ = schedlab_echo::bench::parse_sockperf(&nums);
    let _ = schedlab_echo::sys::parse_status_kib(&nums, word);
    if let Ok(m) = word.parse::<Mode>() {
        assert_eq!(m.name().parse::<Mode>().ok(), Some(m));
    }
    let _ = word.parse::<std::net::SocketAddr>();
    let _ = word.parse::<Size>();
    let _ = schedlab_echo::cli::parse_rounds(word);
    if let Ok(mut v) = stats::parse_numbers(&nums, "fuzz") {
        assert!(v.iter().all(|x| x.is_finite()));
        if let Ok(p) = stats::parse_percent(word) {
            stats::trim_slowest(&mut v, p);
        }
        if v.is_empty() {
            return;
        }
        let s = Summary::of_f64(&v);
        assert!(s.min <= s.p50 && s.p50 <= s.max, "{s:?}");
        let _ = (stats::mm_line(&s), stats::percentile_line(&s), stats::csv_row("fuzz", &s));
        let _ = stats::log2_histogram(&v, 60);
    }
});
