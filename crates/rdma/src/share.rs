//! How two concurrent flows shared the link.
//!
//! The seed's method: take the flow that finished first (its last completion time `T`); find how
//! many messages the other flow had completed by `T` (its last completion at or before `T`, at
//! time `t`); then
//! `Gbps(first) = bytes x count x 8 / T` and `Gbps(other) = bytes x completed x 8 / t`
//! (times in seconds, result in 1e9 bit/s). Beyond it: throughput over time in fixed windows,
//! latency percentiles per flow, and Jain's fairness index `(a + b)^2 / (2 (a^2 + b^2))`.

use serde::Serialize;
use thiserror::Error;

use schedlab_report::{Hist, Summary};

use crate::record::MsgRecord;

/// Errors of the analysis.
#[derive(Debug, Error, PartialEq)]
pub enum ShareError {
    #[error("flow {flow}: message size unknown: give --size-{lower} BYTES (the file has neither a sidecar FILE.json nor a schedlab header line)")]
    NoSize { flow: char, lower: char },
    #[error("flow {flow} has no messages")]
    NoMessages { flow: char },
    #[error("window must be positive (got {0} us)")]
    BadWindow(f64),
    #[error(
        "a {window_us} us window over {span_us} us of flows gives more than {MAX_WINDOWS} windows: choose a longer --window"
    )]
    TooManyWindows { window_us: f64, span_us: f64 },
    #[error("--{opt} {given} disagrees with the header line of flow {flow}'s file ({header}); drop the option or fix the file")]
    Conflict { flow: char, opt: &'static str, given: u64, header: u64 },
}

/// Most windows in the throughput-over-time series (8 bytes per flow and window).
pub const MAX_WINDOWS: usize = 10_000_000;

/// One flow as the analysis needs it.
#[derive(Clone, Debug)]
pub struct FlowInput {
    /// `A` or `B`.
    pub name: char,
    /// Where it came from (for output).
    pub source: String,
    /// Backend label from the file header, if any.
    pub backend: Option<String>,
    pub bytes_per_msg: u64,
    /// Messages the run was asked for (from header or option); `None` = unknown.
    pub count: Option<u64>,
    pub records: Vec<MsgRecord>,
}

/// One flow's share and one window's throughput: the typed result parts
/// (`schedlab_report::results::rdma_share`), which `rdma share --json` writes.
pub use schedlab_report::results::rdma_share::{FlowShare, Window};

/// The whole analysis.
#[derive(Clone, Debug, Serialize)]
pub struct ShareReport {
    pub flows: [FlowShare; 2],
    /// Jain's fairness index of the two share rates.
    pub jain: f64,
    pub window_us: f64,
    pub windows: Vec<Window>,
}

/// Jain's fairness index of non-negative rates (1 = all equal; 1/n = one takes everything).
pub fn jain(rates: &[f64]) -> f64 {
    let s: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        1.0
    } else {
        s * s / (rates.len() as f64 * sq)
    }
}

/// Bits per microsecond is megabits per second; Gbps = bytes * 8 / (us * 1e3).
fn gbps(bytes: f64, us: f64) -> f64 {
    if us > 0.0 {
        bytes * 8.0 / (us * 1e3)
    } else {
        0.0
    }
}

/// Completed count at time `t`: the last record at or before `t`.
pub fn completed_at(records: &[MsgRecord], t: f64) -> Option<MsgRecord> {
    let i = records.partition_point(|r| r.time_us <= t);
    i.checked_sub(1).map(|i| records[i])
}

/// Bytes completed per window of `window_us`, as Gbps, for `n` windows from time 0.
pub fn windowed_gbps(records: &[MsgRecord], bytes_per_msg: u64, window_us: f64, n: usize) -> Vec<f64> {
    let mut bytes = vec![0f64; n];
    let mut prev = 0u64;
    for r in records {
        let k = ((r.time_us / window_us).floor() as usize).min(n.saturating_sub(1));
        if let Some(b) = bytes.get_mut(k) {
            *b += (r.completed - prev) as f64 * bytes_per_msg as f64;
        }
        prev = r.completed;
    }
    bytes.into_iter().map(|b| gbps(b, window_us)).collect()
}

fn latency(records: &[MsgRecord]) -> Summary {
    let mut h = Hist::new();
    for r in records {
        h.record((r.lat_us * 1000.0).round() as u64);
    }
    h.summary(1000.0)
}

/// Runs the analysis.
pub fn analyse(a: &FlowInput, b: &FlowInput, window_us: f64) -> Result<ShareReport, ShareError> {
    if !(window_us > 0.0 && window_us.is_finite()) {
        return Err(ShareError::BadWindow(window_us));
    }
    let flows = [a, b];
    let mut ends = [0f64; 2];
    for (i, f) in flows.iter().enumerate() {
        ends[i] = f.records.last().ok_or(ShareError::NoMessages { flow: f.name })?.time_us;
    }
    let first = if ends[1] < ends[0] { 1 } else { 0 };
    let cut = ends[first];
    let share = |i: usize| -> FlowShare {
        let f = flows[i];
        let at = if i == first { f.records.last().copied() } else { completed_at(&f.records, cut) };
        let (completed, t) = at.map(|r| (r.completed, r.time_us)).unwrap_or((0, cut));
        let last = f.records.last().map(|r| r.completed).unwrap_or(0);
        FlowShare {
            name: f.name.to_string(),
            source: f.source.clone(),
            backend: f.backend.clone().unwrap_or_else(|| "unknown (no sidecar or schedlab header)".into()),
            bytes_per_msg: f.bytes_per_msg,
            count: f.count,
            finished_first: i == first,
            completed_at_cut: completed,
            cut_time_us: t,
            end_time_us: ends[i],
            gbps: gbps(f.bytes_per_msg as f64 * completed as f64, t),
            lat_us: latency(&f.records),
            incomplete: f.count.is_some_and(|c| last < c),
        }
    };
    let shares = [share(0), share(1)];
    // Checked in f64 before any conversion: a tiny window over a long (or absurd) time span
    // would otherwise overflow the count or allocate without bound.
    let span = ends[0].max(ends[1]);
    let windows_f = (span / window_us).floor() + 1.0;
    let bounded = windows_f <= MAX_WINDOWS as f64; // false for NaN too
    if !bounded {
        return Err(ShareError::TooManyWindows { window_us, span_us: span });
    }
    let n = (windows_f as usize).max(1);
    let wa = windowed_gbps(&a.records, a.bytes_per_msg, window_us, n);
    let wb = windowed_gbps(&b.records, b.bytes_per_msg, window_us, n);
    let windows = (0..n)
        .map(|k| Window {
            start_ms: k as f64 * window_us / 1e3,
            end_ms: (k + 1) as f64 * window_us / 1e3,
            a_gbps: wa[k],
            b_gbps: wb[k],
            jain: jain(&[wa[k], wb[k]]),
        })
        .collect();
    Ok(ShareReport { jain: jain(&[shares[0].gbps, shares[1].gbps]), flows: shares, window_us, windows })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(name: char, bytes: u64, recs: Vec<MsgRecord>) -> FlowInput {
        FlowInput { name, source: format!("{name}.txt"), backend: None, bytes_per_msg: bytes, count: None, records: recs }
    }

    fn rec(completed: u64, time_us: f64) -> MsgRecord {
        MsgRecord { completed, time_us, lat_us: 1.0 }
    }

    /// The seed's example: 1 GB x 1000 finishes at 283344584 us; the 1 MB flow had completed
    /// 727326 of 1000000 messages at 283344457 us.
    fn seed_flows() -> (FlowInput, FlowInput) {
        let a = flow('A', 1_000_000_000, vec![rec(1, 283_344.0), rec(999, 283_000_000.0), rec(1000, 283_344_584.0)]);
        let b = flow(
            'B',
            1_000_000,
            vec![
                rec(1, 400.0),
                rec(727_325, 283_344_100.0),
                rec(727_326, 283_344_457.0),
                rec(727_327, 283_344_800.0),
                rec(1_000_000, 390_000_000.0),
            ],
        );
        (a, b)
    }

    #[test]
    fn reproduces_the_seed_example() {
        let (a, b) = seed_flows();
        let r = analyse(&a, &b, 40_000.0).unwrap();
        assert!(r.flows[0].finished_first && !r.flows[1].finished_first);
        assert_eq!(r.flows[1].completed_at_cut, 727_326);
        assert_eq!(r.flows[1].cut_time_us, 283_344_457.0);
        assert_eq!(format!("{:.3}", r.flows[0].gbps), "28.234");
        assert_eq!(format!("{:.3}", r.flows[1].gbps), "20.535");
        // The seed's own arithmetic.
        assert!((r.flows[0].gbps - 1e12 / 1e9 * 8.0 / (283_344_584.0 / 1e6)).abs() < 1e-9);
        assert!((r.flows[1].gbps - 1e12 / 1e9 * (727_326.0 / 1e6) * 8.0 / (283_344_457.0 / 1e6)).abs() < 1e-9);
        // Order of the arguments does not matter.
        let r2 = analyse(&b, &a, 40_000.0).unwrap();
        assert!(r2.flows[1].finished_first);
        assert_eq!(format!("{:.3}", r2.flows[0].gbps), "20.535");
        assert!((r.jain - jain(&[28.234, 20.535])).abs() < 1e-4);
    }

    #[test]
    fn other_flow_with_nothing_done_gets_zero() {
        let a = flow('A', 100, vec![rec(1, 10.0)]);
        let b = flow('B', 100, vec![rec(1, 50.0)]);
        let r = analyse(&a, &b, 5.0).unwrap();
        assert_eq!((r.flows[1].completed_at_cut, r.flows[1].gbps), (0, 0.0));
        assert_eq!(r.jain, 0.5);
    }

    #[test]
    fn windowed_throughput_counts_bytes_per_window() {
        // 1000-byte messages: 3 in [0,10) us, none in [10,20), 2 in [20,30).
        let recs = vec![rec(1, 1.0), rec(2, 5.0), rec(3, 9.99), rec(4, 20.0), rec(5, 29.0)];
        let w = windowed_gbps(&recs, 1000, 10.0, 3);
        // 3000 bytes in 10 us = 2.4 Gbps.
        assert_eq!(w, vec![2.4, 0.0, 1.6]);
        // Sparse counts (every 10th line) still count every message.
        let sparse = vec![rec(10, 1.0), rec(20, 15.0)];
        assert_eq!(windowed_gbps(&sparse, 1000, 10.0, 2), vec![8.0, 8.0]);
        // The total bytes over all windows equal the bytes moved.
        let (a, b) = seed_flows();
        let r = analyse(&a, &b, 1e6).unwrap();
        let total_b: f64 = r.windows.iter().map(|w| w.b_gbps * 1e6 * 1e3 / 8.0).sum();
        assert!((total_b - 1e12).abs() < 1.0, "{total_b}");
        // Per window, Jain's index against values worked out by hand, (1+r)²/(2(1+r²)) with r the
        // ratio of the two rates: window 0 holds A's first 1 GB message and B's first 1 MB one
        // (r = 0.001: 0.500999999), windows 1..=282 are idle (1 by definition), window 283 holds
        // A's other 999 GB and B's next 727,326 MB (r = 0.728054054: 0.975832821), and the last
        // window (390) only B's last 272,673 MB (one flow alone: 0.5). A message counted in the
        // wrong window changes these.
        assert_eq!(r.windows.len(), 391);
        assert!((r.windows[0].jain - 0.500_999_999).abs() < 1e-9, "{:?}", r.windows[0]);
        assert!(r.windows[1..283].iter().all(|w| w.jain == 1.0 && w.a_gbps == 0.0 && w.b_gbps == 0.0));
        assert!((r.windows[283].jain - 0.975_832_821).abs() < 1e-9, "{:?}", r.windows[283]);
        assert!(r.windows[284..390].iter().all(|w| w.jain == 1.0));
        assert_eq!((r.windows[390].a_gbps, r.windows[390].jain), (0.0, 0.5));
    }

    #[test]
    fn jain_bounds() {
        assert_eq!(jain(&[3.0, 3.0]), 1.0);
        assert_eq!(jain(&[3.0, 0.0]), 0.5);
        assert_eq!(jain(&[0.0, 0.0]), 1.0);
    }

    #[test]
    fn rejects_bad_window_and_empty_flows() {
        let (a, b) = seed_flows();
        assert_eq!(analyse(&a, &b, 0.0).unwrap_err(), ShareError::BadWindow(0.0));
        let empty = flow('B', 1, vec![]);
        assert_eq!(analyse(&a, &empty, 1.0).unwrap_err(), ShareError::NoMessages { flow: 'B' });
    }

    /// Fuzz regression (fuzz/regressions/rdma_files): a tiny window over a long span overflowed
    /// the window count (a panic in debug builds, one wrong window in release) or allocated
    /// without bound.
    #[test]
    fn too_many_windows_is_an_error_not_a_panic() {
        let a = flow('A', 1, vec![rec(1, 1e300)]);
        let b = flow('B', 1, vec![rec(1, 1.0)]);
        assert!(matches!(analyse(&a, &b, 1.0), Err(ShareError::TooManyWindows { .. })));
        let a = flow('A', 1, vec![rec(1, 1e9)]);
        assert!(matches!(analyse(&a, &b, 1e-3), Err(ShareError::TooManyWindows { .. })));
        // At the limit it still works.
        let a = flow('A', 1, vec![rec(1, 1000.0)]);
        assert_eq!(analyse(&a, &b, 1.0).unwrap().windows.len(), 1001);
    }
}
