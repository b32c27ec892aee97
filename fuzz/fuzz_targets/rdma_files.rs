//! `schedlab rdma -o FILE` files and `schedlab rdma share A B` inputs, read through a reader (no
//! file): the two flow files, a sidecar FILE.json, and a line with the share options
//! (`WINDOW [SIZE-A [SIZE-B]]`) that is also fed to the QP connection-line parser. Input:
//! `A \0 B \0 SIDECAR \0 OPTIONS`. Any panic is a bug; a read flow is in order and writes back
//! to the same text, and the analysis gives a bounded, non-empty window series.
#![no_main]
use std::io::Cursor;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use schedlab_fuzz::{parts, text};
use schedlab_rdma::app::flow_input;
use schedlab_rdma::cli::parse_window_us;
use schedlab_rdma::record::{parse_sidecar, read_flow, write_flow, FlowFile};
use schedlab_rdma::share::{analyse, MAX_WINDOWS};
use schedlab_rdma::types::{MsgSize, QpInfo};

fn read(bytes: &[u8], name: &str) -> Option<FlowFile> {
    let f = read_flow(Cursor::new(bytes), Path::new(name)).ok()?;
    assert!(!f.records.is_empty());
    for w in f.records.windows(2) {
        assert!(w[0].completed < w[1].completed && w[0].time_us <= w[1].time_us, "{w:?}");
    }
    for r in &f.records {
        assert!(r.time_us.is_finite() && r.time_us >= 0.0 && r.lat_us.is_finite() && r.lat_us >= 0.0, "{r:?}");
    }
    // Writing and reading back is stable after one round (times are written with 2 decimals).
    let mut w1 = Vec::new();
    write_flow(&mut w1, f.meta.as_ref(), &f.records).unwrap();
    let again = read_flow(Cursor::new(&w1), Path::new(name)).expect("a written flow reads back");
    let mut w2 = Vec::new();
    write_flow(&mut w2, again.meta.as_ref(), &again.records).unwrap();
    assert_eq!(String::from_utf8_lossy(&w1), String::from_utf8_lossy(&w2));
    Some(f)
}

fuzz_target!(|data: &[u8]| {
    let [a, b, side, opts] = parts::<4>(data);
    let opts = text(opts);
    if let Ok(q) = QpInfo::from_line(&opts) {
        assert_eq!(QpInfo::from_line(&q.to_line()), Ok(q), "a QP line prints back");
    }
    let sidecar = parse_sidecar(&text(side), Path::new("A.txt.json")).ok();
    let (Some(mut fa), Some(fb)) = (read(a, "A.txt"), read(b, "B.txt")) else { return };
    if fa.meta.is_none() {
        fa.meta = sidecar;
    }
    let mut words = opts.split_whitespace();
    let window = words.next().and_then(|w| parse_window_us(w).ok()).unwrap_or(40_000.0);
    let size_a = words.next().and_then(|w| w.parse::<MsgSize>().ok());
    let size_b = words.next().and_then(|w| w.parse::<MsgSize>().ok()).or(Some(MsgSize::new(1500).unwrap()));
    let (Ok(ia), Ok(ib)) =
        (flow_input('A', Path::new("A.txt"), fa, size_a, None), flow_input('B', Path::new("B.txt"), fb, size_b, None))
    else {
        return;
    };
    if let Ok(r) = analyse(&ia, &ib, window) {
        assert!(!r.windows.is_empty() && r.windows.len() <= MAX_WINDOWS, "{} windows", r.windows.len());
        if r.flows.iter().all(|f| f.gbps.is_finite()) {
            assert!(r.jain >= 0.5 - 1e-9 && r.jain <= 1.0 + 1e-9, "jain {}", r.jain);
        }
    }
});
