//! The report's open questions, as the simulator answers them (§2 closed loop, §10 per-message α,
//! §11 in-order delivery, §13 tracking α): the statistics and tables that say what a run did,
//! beyond the report's raw table.
//!
//! - §2: offered and carried load and the sample path's own fields per strategy (in closed loop
//!   every strategy has its own sample path, so `qlen`, the simulated time and the load differ
//!   per row); the listing's `>>` lines of every strategy.
//! - §10: latency per α class *and* message length.
//! - §11: the reordering table, always printed with several applications, its rows marked when
//!   in-order delivery does not apply to the strategy.
//! - §13: the α a tracking strategy chose.

use std::fmt::Write as _;

use crate::engine::{Checkpoint, RunResult};
use crate::format::fmt_g;

/// Listing α codes below this are strategies the listing never had (prio −3, DRR −4, WF2Q+ −5,
/// QFQ −6, tracking −7, tracking at insertion −8): the `>>` lines name them by their label.
const BEYOND_LISTING: f64 = -2.5;

/// The α field of a `>>` line: the listing's number, or the label for strategies it never had.
pub fn classic_alpha(listing_alpha: f64, label: &str) -> String {
    if listing_alpha < BEYOND_LISTING {
        label.to_string()
    } else {
        fmt_g(listing_alpha)
    }
}

/// Closed loop (§2): what `-t` means and the load each strategy carried.
pub fn closed_loop_table(r: &RunResult) -> String {
    let Some(n) = r.closed_apps else { return String::new() };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nClosed loop (§2), {n} application{}: each sends its next message an exponential think time (mean N x E[length] x 100 / traffic) after its previous one is delivered (its last packet starts service).",
        if n == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        s,
        "Traffic = {}% is the offered load (carried with zero queueing delay); the load carried is lower. Each strategy has its own sample path: qlen, time and load differ per row.",
        fmt_g(r.traffic_pct)
    );
    let _ = writeln!(s, "α\toffered\tcarried\tqlen\t±qlen\tpackets_in\ttime_tu");
    for st in &r.strategies {
        let _ = writeln!(
            s,
            "{}\t{:.3}\t{:.3}\t{:.2}\t{}\t{}\t{:.0}",
            st.label,
            st.offered_load,
            st.carried_load,
            st.qlen_pkts,
            if st.qlen_ci95_pkts.is_nan() { "n/a".into() } else { format!("{:.2}", st.qlen_ci95_pkts) },
            st.packets_in,
            st.sim_time_tu
        );
    }
    s
}

/// §13: the α each tracking strategy chose.
pub fn alpha_chosen_table(r: &RunResult) -> String {
    if r.strategies.iter().all(|s| s.alpha_chosen.is_none()) {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(s, "\nα chosen by tracking (§13), over the packet starts (the busy time):");
    let _ = writeln!(s, "α\tmean\tp10\tp50\tp90\tmin\tmax");
    for st in &r.strategies {
        if let Some(a) = &st.alpha_chosen {
            let _ = writeln!(
                s,
                "{}\t{:.2}\t{}\t{}\t{}\t{}\t{}",
                st.label,
                a.mean,
                fmt_g(a.p10),
                fmt_g(a.p50),
                fmt_g(a.p90),
                fmt_g(a.min),
                fmt_g(a.max)
            );
        }
    }
    s
}

/// §10: mean latency per α class and length (the report's claim is about the short messages of
/// the low-α class).
pub fn class_len_table(r: &RunResult) -> String {
    if r.strategies.iter().all(|s| s.by_class_len.is_empty()) {
        return String::new();
    }
    let mut lens: Vec<u32> = r.strategies.iter().flat_map(|s| s.by_class_len.iter().map(|c| c.len)).collect();
    lens.sort_unstable();
    lens.dedup();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nLatency per §10 α class and length (mean time units ± 95% half-width; only prio gives the classes their α):"
    );
    let mut head = vec!["α".to_string(), "class".into()];
    head.extend(lens.iter().map(|l| format!("lat{l}")));
    let _ = writeln!(s, "{}", head.join("\t"));
    for st in &r.strategies {
        let mut classes: Vec<(u32, f64)> = st.by_class_len.iter().map(|c| (c.class, c.alpha)).collect();
        classes.dedup();
        for (class, alpha) in classes {
            let mut row = vec![st.label.clone(), format!("{class}:α={}", fmt_g(alpha))];
            for &l in &lens {
                row.push(st.by_class_len.iter().find(|c| c.class == class && c.len == l).map_or("-".into(), |c| {
                    if c.ci95_tu.is_nan() {
                        format!("{:.2}", c.mean_tu)
                    } else {
                        format!("{:.2}±{:.2}", c.mean_tu, c.ci95_tu)
                    }
                }));
            }
            let _ = writeln!(s, "{}", row.join("\t"));
        }
    }
    s
}

/// §11: messages delivered after a later message of their application, per strategy; printed
/// whenever there are several applications, zeros included.
pub fn reorder_table(r: &RunResult) -> String {
    if r.apps < 2 {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nMessages delivered after a later message of their application (§11; {} applications, --in-order {}):",
        r.apps,
        if r.in_order { "on" } else { "off" }
    );
    for st in &r.strategies {
        let note = match (st.in_order_applies, r.in_order, st.label.as_str()) {
            (_, _, "FIFO") => "\t(FIFO: in order by construction)",
            (true, true, _) => "\t(in order: kept by --in-order)",
            (true, false, _) => "",
            (false, true, _) => "\t(--in-order does not apply: not an alpha strategy)",
            (false, false, _) => "",
        };
        let _ = writeln!(s, "{}\t{}{note}", st.label, st.reordered);
    }
    s
}

/// Checkpoint rows' own packets-in (closed loop), or the block's.
pub(crate) fn row_packets_in(c: &Checkpoint, i: usize) -> u64 {
    c.row_packets_in.get(i).copied().unwrap_or(c.packets_in)
}
