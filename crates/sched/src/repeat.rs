//! `schedlab sched --repeat N`: the same configuration run N times with the same seed (so only
//! the machine varies), each run judged disturbed or not by a rule derived from the rings, the
//! disturbed runs dropped, counted and explained, and the headline figures of the kept runs
//! summarised (median, minimum, maximum, largest deviation from the median).
//!
//! ## The rule (sched has no model, so the threshold comes from the buffers)
//! A client's ring of `Q` packets (`-q`) and the scheduler's queue limit (`-qmax`) are what let
//! the harness ride out a thread that does not run for a while. For an active client with a
//! traffic entry of rate `R` (bits/s) and packets of `L` bytes, over its entries with `R > 0`:
//!
//! - **ring fill time** `Q × L × 8 / R`: how long its ring takes to fill at its offered rate
//!   while nobody empties it. A scheduler thread whose longest loop gap exceeds the shortest
//!   ring fill time of any active client was stalled long enough for a ring to fill: packets
//!   were refused because of the machine, not the policy, so the run is **disturbed**.
//! - **catch-up time** `min(Q, qmax) × L × 8 / R`: a client that did not run for a gap `G`
//!   generates the bursts it owes as soon as it runs again, `G × R` bits at once. When that is
//!   more than its ring, or the scheduler's queue limit, can take, packets are dropped because of
//!   the stall; the run is **disturbed**. (A stall that long also lets a backlogged flow run dry,
//!   so its share says nothing about the policy: the seed test's rule in `crates/cli/tests/sched.rs`.)
//!
//! In distributed mode (`-D`) the scheduler thread sleeps by design while the clients run the
//! passes, so only the clients' rule applies. An interrupted run is set aside too. The rule
//! sets aside runs whose stalls exceeded what the buffers absorb; it does not promise that the
//! kept runs agree (a stall shorter than the buffers still delays packets, and one near the end
//! of the program leaves them queued at the stop): read the spread.
//!
//! The judge and the summary are pure functions of the typed reports, tested on made-up ones;
//! [`run`] makes the runs (one without `--repeat`) and hands back every report, judged.

use std::sync::atomic::AtomicBool;

use schedlab_report::results::predict::{SetAside, Spread};
pub use schedlab_report::results::sched_repeat::{FlowSpread, SchedRepeat as Repeat, Summary};
use schedlab_report::MachineInfo;

use crate::config::Args;
use crate::harness::{Config, RunResult};
use crate::output::{report, Report};

/// What one `sched` command measured: its run, or `--repeat N`'s runs.
#[derive(Debug)]
pub struct Measured {
    /// Runs asked for (`--repeat`, 1 without it).
    pub asked: usize,
    /// One typed report per run made, in order (fewer than `asked` after Ctrl-C).
    pub reports: Vec<Report>,
    /// Per run, why it was set aside (empty: kept); judged only when more than one run was asked.
    pub reasons: Vec<Vec<String>>,
    /// The last run's raw result: its timestamps, messages and per-client records.
    pub last: RunResult,
}

impl Measured {
    /// The last run's typed report.
    pub fn report(&self) -> &Report {
        self.reports.last().expect("a measurement holds at least one run")
    }
    /// The summary over the kept runs (`None` for a single run).
    pub fn summary(&self) -> Option<Summary> {
        (self.asked > 1).then(|| summarise(&self.reports, &self.reasons))
    }
    /// The `--json` document of `--repeat N` (every run and the summary; `None` for a single run,
    /// whose document is [`Measured::report`]).
    pub fn document(&self) -> Option<Repeat> {
        self.summary().map(|summary| Repeat {
            schema: Default::default(),
            runs: self.reports.clone(),
            reasons: self.reasons.clone(),
            summary,
        })
    }
    /// The last run was stopped by Ctrl-C.
    pub fn interrupted(&self) -> bool {
        self.last.interrupted
    }
}

/// Runs `args`' configuration `args.repeat` times with the same seed (stopping after a run that
/// `interrupt` cut short), each run's report recording `machine` and `command`. With more than one
/// run each is judged by the module's rule and `each(k, n, report, reasons)` hears of it as soon as
/// it is made (the command prints its line there).
pub fn run(
    args: &Args,
    machine: &MachineInfo,
    command: &[String],
    interrupt: &AtomicBool,
    mut each: impl FnMut(usize, usize, &Report, &[String]) -> anyhow::Result<()>,
) -> anyhow::Result<Measured> {
    let n = args.repeat.max(1);
    let (mut reports, mut reasons) = (Vec::new(), Vec::new());
    let mut last = None;
    for k in 1..=n {
        let r = crate::harness::run(&args.cfg, interrupt)?;
        let rep = report(args, &r, machine.clone(), command.to_vec());
        if n > 1 {
            let why = judge(&args.cfg, &rep);
            each(k, n, &rep, &why)?;
            reasons.push(why);
        }
        reports.push(rep);
        let stop = r.interrupted;
        last = Some(r);
        if stop {
            break;
        }
    }
    let last = last.expect("at least one run is made");
    Ok(Measured { asked: n, reports, reasons, last })
}

/// What the rings of one active client hold, ns (see the module's rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingHold {
    pub client: usize,
    /// The ring fills at the client's offered rate in this time (its fastest entry).
    pub fill_ns: f64,
    /// min(ring, queue limit) fills at the client's offered rate in this time.
    pub catchup_ns: f64,
}

/// Per active client with traffic, what its ring holds (clients with no entry of rate > 0 are
/// left out: nothing of theirs can be disturbed).
pub fn ring_holds(cfg: &Config) -> Vec<RingHold> {
    cfg.traffic
        .programs
        .iter()
        .enumerate()
        .take(cfg.active)
        .filter_map(|(client, program)| {
            let ring = cfg.queue as f64;
            let buffer = ring.min(cfg.qmax as f64);
            let ns = |pkts: f64, len: u32, rate: f64| pkts * f64::from(len) * 8.0 * 1e9 / rate;
            let entries = program.iter().filter(|s| s.rate.0 > 0);
            let (mut fill_ns, mut catchup_ns, mut any) = (f64::INFINITY, f64::INFINITY, false);
            for s in entries {
                let r = s.rate.0 as f64;
                fill_ns = fill_ns.min(ns(ring, s.pkt_len, r));
                catchup_ns = catchup_ns.min(ns(buffer, s.pkt_len, r));
                any = true;
            }
            any.then_some(RingHold { client, fill_ns, catchup_ns })
        })
        .collect()
}

/// Why a run is disturbed by the module's rule (empty: kept).
pub fn judge(cfg: &Config, rep: &Report) -> Vec<String> {
    let holds = ring_holds(cfg);
    let mut reasons = Vec::new();
    if rep.interrupted {
        reasons.push("interrupted (Ctrl-C): a partial run".to_string());
    }
    let ms = |ns: f64| ns / 1e6;
    let thread = |name: &str| rep.disturbance.iter().find(|d| d.thread == name);
    if !cfg.distributed {
        let tightest = holds.iter().min_by(|a, b| a.fill_ns.total_cmp(&b.fill_ns));
        if let (Some(h), Some(d)) = (tightest, thread("sched")) {
            if d.max_gap_ns as f64 > h.fill_ns {
                reasons.push(format!(
                    "scheduler thread stalled {:.3} ms (at {:.3} s, {} involuntary switches), longer than client {}'s ring fills at its offered rate ({:.3} ms)",
                    ms(d.max_gap_ns as f64),
                    d.max_gap_end_ns as f64 / 1e9,
                    d.involuntary_switches,
                    h.client,
                    ms(h.fill_ns)
                ));
            }
        }
    }
    for h in &holds {
        if let Some(d) = thread(&format!("client{}", h.client)) {
            if d.max_gap_ns as f64 > h.catchup_ns {
                reasons.push(format!(
                    "client {} stalled {:.3} ms (at {:.3} s, {} involuntary switches), longer than its ring or the queue limit holds at its offered rate ({:.3} ms): its catch-up overflows",
                    h.client,
                    ms(d.max_gap_ns as f64),
                    d.max_gap_end_ns as f64 / 1e9,
                    d.involuntary_switches,
                    ms(h.catchup_ns)
                ));
            }
        }
    }
    reasons
}

/// The headline figures of one report: per client then total, (Mb/s, Mpps, p50 µs, p99 µs).
fn figures(rep: &Report) -> Vec<(String, [f64; 4])> {
    rep.clients
        .iter()
        .map(|c| (format!("client{}", c.client), [c.rate_bps / 1e6, c.rate_pps / 1e6, c.delay_us.p50, c.delay_us.p99]))
        .chain(std::iter::once((
            "total".to_string(),
            [rep.total_rate_bps / 1e6, rep.total_rate_pps / 1e6, rep.total_delay_us.p50, rep.total_delay_us.p99],
        )))
        .collect()
}

/// Summarises the runs (in the order they were made) with their reasons (empty: kept).
pub fn summarise(runs: &[Report], reasons: &[Vec<String>]) -> Summary {
    let kept: Vec<&Report> = runs.iter().zip(reasons).filter(|(_, r)| r.is_empty()).map(|(x, _)| x).collect();
    let names: Vec<String> = runs.first().map(|r| figures(r).into_iter().map(|(n, _)| n).collect()).unwrap_or_default();
    let per_kept: Vec<Vec<(String, [f64; 4])>> = kept.iter().map(|r| figures(r)).collect();
    let flows = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pick = |k: usize| -> Option<Spread> {
                Spread::of(&per_kept.iter().filter_map(|f| f.get(i).map(|(_, v)| v[k])).collect::<Vec<f64>>())
            };
            FlowSpread {
                flow: name.clone(),
                rate_mbps: pick(0),
                rate_mpps: pick(1),
                delay_p50_us: pick(2),
                delay_p99_us: pick(3),
            }
        })
        .collect();
    Summary {
        runs: runs.len(),
        kept: kept.len(),
        set_aside: reasons
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.is_empty())
            .map(|(i, r)| SetAside { run: i + 1, reasons: r.clone() })
            .collect(),
        flows,
    }
}

/// One line per run: `run 2/5: kept: total 19.97 Mb/s 0.0017 Mpps, delay p50 812.3 us p99
/// 1590.2 us` or `run 2/5: set aside (REASONS): total ...`, with `; NOT pinned: ...` when a pin
/// asked for failed (the run went on unpinned there).
pub fn run_line(k: usize, n: usize, rep: &Report, reasons: &[String]) -> String {
    let verdict = if reasons.is_empty() { "kept".to_string() } else { format!("set aside ({})", reasons.join("; ")) };
    let pins = crate::output::pin_failures(rep);
    format!(
        "run {k}/{n}: {verdict}: total {:.3} Mb/s {:.4} Mpps, delay p50 {:.1} us p99 {:.1} us, {} drops{}\n",
        rep.total_rate_bps / 1e6,
        rep.total_rate_pps / 1e6,
        rep.total_delay_us.p50,
        rep.total_delay_us.p99,
        rep.total_drops,
        if pins.is_empty() { String::new() } else { format!("; NOT pinned: {}", pins.join("; ")) }
    )
}

/// The human lines of the summary.
pub fn text(s: &Summary) -> String {
    let mut out = format!("over {} runs (same seed): {} kept, {} set aside as disturbed\n", s.runs, s.kept, s.set_aside.len());
    for a in &s.set_aside {
        out += &format!("  run {} set aside: {}\n", a.run, a.reasons.join("; "));
    }
    if s.kept == 0 {
        out += "no run kept: no median\n";
        return out;
    }
    let spread = |x: &Option<Spread>, digits: usize| match x {
        Some(v) => format!(
            "{:.d$} (min {:.d$}, max {:.d$}, at most {:.1}% from the median)",
            v.median,
            v.min,
            v.max,
            v.max_dev_pct,
            d = digits
        ),
        None => "n/a".to_string(),
    };
    out += "medians over the kept runs:\n";
    for f in &s.flows {
        out += &format!(
            "  {:<8} Mb/s {}; Mpps {}; delay us p50 {}; p99 {}\n",
            f.flow,
            spread(&f.rate_mbps, 3),
            spread(&f.rate_mpps, 4),
            spread(&f.delay_p50_us, 1),
            spread(&f.delay_p99_us, 1)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::Spec;
    use crate::units::{Bps, Nanos};
    use schedlab_policy::PolicySpec;
    use schedlab_report::disturb::Probe;

    /// Client 0 at 100 Mb/s, client 1 at 10 Mb/s, 1500-byte packets, a 100-packet ring, a queue
    /// limit of 50 packets: the rings fill in 12 ms and 120 ms, the queue limit in 6 ms and 60 ms.
    fn cfg() -> Config {
        let e = |mbps: u64| vec![Spec::fixed(Nanos(1_000_000_000), Bps(mbps * 1_000_000), 1500, 1)];
        let mut c = Config::new(vec![e(100), e(10)], PolicySpec::Fifo, vec![]);
        c.bandwidth = Some(Bps(20_000_000));
        c.qmax = 50;
        c
    }

    fn report(sched_gap_ms: f64, client_gaps_ms: [f64; 2], rate: f64) -> Report {
        let d = |name: &str, gap_ms: f64| {
            let mut d = Probe::start(0).finish(name);
            d.max_gap_ns = (gap_ms * 1e6) as u64;
            d
        };
        let text = include_str!("../tests/data/sched-report.json");
        let mut r: Report = serde_json::from_str(text).expect("the sample report reads");
        r.disturbance = vec![d("sched", sched_gap_ms), d("client0", client_gaps_ms[0]), d("client1", client_gaps_ms[1])];
        r.total_rate_bps = rate * 1e6;
        r
    }

    #[test]
    fn the_ring_times_come_from_the_queue_the_rates_and_the_link() {
        let h = ring_holds(&cfg());
        assert_eq!(h.len(), 2);
        assert!((h[0].fill_ns - 12e6).abs() < 1.0 && (h[0].catchup_ns - 6e6).abs() < 1.0, "{h:?}");
        assert!((h[1].fill_ns - 120e6).abs() < 1.0 && (h[1].catchup_ns - 60e6).abs() < 1.0, "{h:?}");
        let mut one = cfg();
        one.active = 1;
        assert_eq!(ring_holds(&one).len(), 1, "an inactive client (-k) holds nothing");
    }

    #[test]
    fn a_stall_longer_than_a_ring_holds_disturbs_the_run_and_a_shorter_one_does_not() {
        let c = cfg();
        assert!(judge(&c, &report(11.9, [5.9, 59.0], 20.0)).is_empty());
        let r = judge(&c, &report(12.5, [1.0, 1.0], 20.0));
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].contains("scheduler thread stalled 12.500 ms") && r[0].contains("client 0's ring fills"), "{r:?}");
        let r = judge(&c, &report(1.0, [6.1, 61.0], 20.0));
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].starts_with("client 0 stalled 6.100 ms") && r[1].starts_with("client 1 stalled 61.000"), "{r:?}");
        // -D: the scheduler thread sleeps by design.
        let mut d = cfg();
        d.distributed = true;
        assert!(judge(&d, &report(500.0, [1.0, 1.0], 20.0)).is_empty());
    }

    #[test]
    fn the_summary_drops_the_disturbed_runs_and_spreads_the_kept_ones() {
        let runs = vec![report(1.0, [1.0, 1.0], 19.0), report(50.0, [1.0, 1.0], 5.0), report(1.0, [1.0, 1.0], 21.0)];
        let reasons: Vec<Vec<String>> = runs.iter().map(|r| judge(&cfg(), r)).collect();
        let s = summarise(&runs, &reasons);
        assert_eq!((s.runs, s.kept), (3, 2));
        assert_eq!(s.set_aside.iter().map(|a| a.run).collect::<Vec<_>>(), vec![2]);
        let total = s.flows.iter().find(|f| f.flow == "total").unwrap();
        let m = total.rate_mbps.as_ref().unwrap();
        assert_eq!((m.median, m.min, m.max), (20.0, 19.0, 21.0));
        assert!((m.max_dev_pct - 5.0).abs() < 1e-9);
        let t = text(&s);
        assert!(
            t.contains("3 runs (same seed): 2 kept, 1 set aside") && t.contains("run 2 set aside: scheduler thread stalled"),
            "{t}"
        );
        assert!(run_line(2, 3, &runs[1], &reasons[1]).starts_with("run 2/3: set aside (scheduler"));
        let none = summarise(&runs[1..2], &reasons[1..2]);
        assert!(none.flows.iter().all(|f| f.rate_mbps.is_none()) && text(&none).contains("no run kept"));
    }
}
