//! Measured vs predicted: the recorded messages of a harness run, their arrivals replayed through
//! the simulator with the same policy and a deterministic service time, and the comparison per
//! message length. Pure functions of the records (no threads, no clock), so they are tested on
//! synthetic runs.
//!
//! Definitions (all in ns):
//! - a message *arrives* when its client generated it (`cli_enq` of its first packet);
//! - its *queueing latency* is from its arrival to the release of its last packet (`sch_deq`),
//!   i.e. to the start of that packet's transmission: the simulator's message latency;
//! - the measured time splits into *ring wait* (`sch_enq − cli_enq`, first packet), *scheduler
//!   queue* (`sch_deq` last − `sch_enq` first) and, after it, *release-to-seen*
//!   (`cli_deq − sch_deq`, last packet: how late the client notices).

use schedlab_policy::Policy;
use schedlab_report::disturb::Disturbance;
use schedlab_report::Summary;
use schedlab_sched::messages::MsgRecord;
use schedlab_sim::replay::{replay, ReplayArrival, ReplayError};

/// Service time of one packet of `bytes` on a `link_bps` link, ns.
pub fn service_ns(bytes: u32, link_bps: u64) -> f64 {
    f64::from(bytes) * 8.0 * 1e9 / link_bps as f64
}

/// The simulator's input built from the recorded messages.
#[derive(Clone, Debug)]
pub struct Trace {
    pub arrivals: Vec<ReplayArrival>,
    /// For each arrival, the message (index into the records) it belongs to.
    pub owner: Vec<usize>,
    /// Time origin: `cli_enq` of the first arrival, ns.
    pub t0: u64,
}

/// Arrivals as the policy saw them: one per message for message-level policies (a burst is one
/// message), one per packet otherwise (the harness pushes a burst packet by packet). Messages the
/// full ring refused did not arrive; `msgs` must be in arrival order ([`schedlab_sched::messages::merged`]).
pub fn trace_of(msgs: &[MsgRecord], link_bps: u64, message_level: bool) -> Trace {
    let t0 = msgs.iter().find(|m| m.pushed > 0).map_or(0, |m| m.cli_enq_ns);
    let mut arrivals = Vec::new();
    let mut owner = Vec::new();
    for (i, m) in msgs.iter().enumerate().filter(|(_, m)| m.pushed > 0) {
        let a = ReplayArrival {
            time: (m.cli_enq_ns - t0) as f64,
            client: m.client,
            packets: 1,
            bytes: m.packet_bytes,
            service: service_ns(m.packet_bytes, link_bps),
        };
        if message_level {
            arrivals.push(ReplayArrival { packets: m.pushed, ..a });
            owner.push(i);
        } else {
            for _ in 0..m.pushed {
                arrivals.push(a);
                owner.push(i);
            }
        }
    }
    Trace { arrivals, owner, t0 }
}

/// Per message: the simulator's queueing latency (ns), `None` when it was not replayed whole.
pub fn predict<P: Policy<usize>>(policy: P, msgs: &[MsgRecord], trace: &Trace) -> Result<Vec<Option<f64>>, ReplayError> {
    let r = replay(policy, &trace.arrivals)?;
    let mut last: Vec<Option<f64>> = vec![None; msgs.len()];
    let mut refused = vec![false; msgs.len()];
    for &i in &r.refused {
        refused[trace.owner[i]] = true;
    }
    for (a, s) in r.last_start.iter().enumerate() {
        let m = trace.owner[a];
        if let Some(s) = s {
            last[m] = Some(last[m].map_or(*s, |x: f64| x.max(*s)));
        }
    }
    Ok(msgs
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if refused[i] || m.pushed < m.packets {
                return None;
            }
            last[i].map(|s| s - (m.cli_enq_ns - trace.t0) as f64)
        })
        .collect())
}

/// Mean, median and 99th percentile, µs.
/// Latency figures, the time breakdown and one comparison row: the typed result's parts
/// (`schedlab_report::results::predict`), which `predict --json` writes.
pub use schedlab_report::results::predict::{Breakdown, CompareRow as Row, Lat, LenBucket};
/// Most distinct lengths compared one row each; with more, rows are size buckets (`sim`'s rule).
pub use schedlab_sim::engine::MAX_LENGTH_COLUMNS;

/// Mean, p50 and p99 in µs of latencies in ns (NaN for no finite sample).
fn lat_of_ns(v: &[f64]) -> Lat {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Lat { mean_us: f64::NAN, p50_us: f64::NAN, p99_us: f64::NAN };
    }
    let s = Summary::of_f64(&v);
    Lat { mean_us: s.mean / 1e3, p50_us: s.p50 / 1e3, p99_us: s.p99 / 1e3 }
}

/// Compares the delivered messages that the simulator also delivered, per length (or, with more
/// than [`MAX_LENGTH_COLUMNS`] distinct lengths, per size bucket by the compared messages' own
/// size percentiles, as `sim` buckets) and overall (the last row, `len_pkts` 0).
pub fn compare(msgs: &[MsgRecord], predicted: &[Option<f64>]) -> Vec<Row> {
    let both: Vec<(&MsgRecord, f64)> =
        msgs.iter().zip(predicted).filter(|(m, _)| m.delivered()).filter_map(|(m, p)| p.map(|p| (m, p))).collect();
    let mut all: Vec<u32> = both.iter().map(|(m, _)| m.packets).collect();
    all.sort_unstable();
    let mut lens = all.clone();
    lens.dedup();
    let row = |len: u32, bucket: Option<LenBucket>, sel: Vec<&(&MsgRecord, f64)>| -> Row {
        let meas: Vec<f64> = sel.iter().map(|(m, _)| m.queueing_ns() as f64).collect();
        let pred: Vec<f64> = sel.iter().map(|(_, p)| *p).collect();
        let n = sel.len().max(1) as f64;
        let mean = |f: &dyn Fn(&MsgRecord) -> f64| sel.iter().map(|(m, _)| f(m)).sum::<f64>() / n / 1e3;
        let (measured, predicted) = (lat_of_ns(&meas), lat_of_ns(&pred));
        Row {
            len_pkts: len,
            bucket,
            count: sel.len(),
            ratio_mean: if predicted.mean_us > 0.0 { measured.mean_us / predicted.mean_us } else { f64::NAN },
            measured,
            predicted,
            breakdown: Breakdown {
                ring_wait_us: mean(&|m| m.sch_enq_ns as f64 - m.cli_enq_ns as f64),
                sched_queue_us: mean(&|m| m.sch_deq_ns as f64 - m.sch_enq_ns as f64),
                release_to_seen_us: mean(&|m| m.cli_deq_ns as f64 - m.sch_deq_ns as f64),
            },
        }
    };
    let mut rows: Vec<Row> = if lens.len() <= MAX_LENGTH_COLUMNS {
        lens.iter().map(|&l| row(l, None, both.iter().filter(|(m, _)| m.packets == l).collect())).collect()
    } else {
        schedlab_sim::engine::empirical_buckets(&all)
            .into_iter()
            .map(|b| {
                let lb = LenBucket { low: b.low, high: b.high, pct_low: b.pct_low, pct_high: b.pct_high };
                row(b.high, Some(lb), both.iter().filter(|(m, _)| (b.low..=b.high).contains(&m.packets)).collect())
            })
            .collect()
    };
    rows.push(row(0, None, both.iter().collect()));
    rows
}

/// The agreement the comparison claims to resolve: measured and predicted mean latency within 5%.
pub const AGREEMENT: f64 = 0.05;

/// The share of [`AGREEMENT`] the harness's own delays may take before a run is *disturbed*: half.
/// The measured mean is the model's answer plus what the harness adds (a late pickup, a stalled
/// pass); for the run to test the model within 5%, the harness may use at most half of that budget
/// and the model's own error the rest. With the whole budget (5%) given to the harness, a quiet run
/// (20 runs × fifo, alpha:10, sf; `docs/notes/2026-11-28-predict-verdict.md`) picked arrivals up
/// 2.86 us late against a 105 us prediction (2.7%) and read 1.056: passed as "kept up", yet outside
/// the agreement it claims.
pub const HARNESS_BUDGET: f64 = AGREEMENT / 2.0;

/// Why a run that kept up with the link was nevertheless disturbed (empty: not disturbed).
///
/// The model picks an arrival up the instant it arrives; the harness picks it up at the
/// scheduler's next pass. Two readings of that delay, each compared with
/// [`HARNESS_BUDGET`] × the predicted mean latency (`predicted_mean_us`):
/// 1. the measured pickup delay: the mean ring wait (`sch_enq − cli_enq`) of the messages
///    (`ring_wait_us`); it adds to a message's measured latency up to its whole length;
/// 2. the scheduler thread's own loop: the mean wait of an arrival at a random instant for the
///    next pass, Σ gap² / 2 Σ gap over its passes ([`Disturbance::mean_residual_ns`]). One stall
///    of G in a run of T adds G² / 2T: in a 1 s run, a 3 ms preemption adds 4.5 µs.
///
/// Involuntary switches and migrations alone are not a reason (a switch of a few µs to the
/// run's own main thread moves nothing); they are named in the reason when the gaps they caused
/// are. The clients' gaps are not judged: a client late to generate moves its recorded arrival,
/// which is what the simulator replays.
pub fn disturbance_reasons(ring_wait_us: f64, predicted_mean_us: f64, sched: Option<&Disturbance>) -> Vec<String> {
    let limit_us = HARNESS_BUDGET * predicted_mean_us;
    let mut reasons = Vec::new();
    if limit_us.is_nan() || limit_us <= 0.0 {
        return reasons;
    }
    let why = |d: &Disturbance| {
        format!(
            "the scheduler thread had {} involuntary switch{} and {} migration{}, longest gap between passes {:.1} us",
            d.involuntary_switches,
            if d.involuntary_switches == 1 { "" } else { "es" },
            d.migrations,
            if d.migrations == 1 { "" } else { "s" },
            d.max_gap_ns as f64 / 1e3
        )
    };
    if ring_wait_us > limit_us {
        reasons.push(format!(
            "DISTURBED: the scheduler picked arrivals up {ring_wait_us:.2} us late on average (ring wait; the model picks them up at once), \
             more than {:.1}% of the predicted mean latency {predicted_mean_us:.2} us{}",
            HARNESS_BUDGET * 100.0,
            sched.map_or(String::new(), |d| format!("; {}", why(d)))
        ));
    }
    if let Some(d) = sched {
        let residual_us = d.mean_residual_ns / 1e3;
        if residual_us > limit_us {
            reasons.push(format!(
                "DISTURBED: {}; an arrival at a random instant waited {residual_us:.2} us on average for the next pass, \
                 more than {:.1}% of the predicted mean latency {predicted_mean_us:.2} us",
                why(d),
                HARNESS_BUDGET * 100.0
            ));
        }
    }
    reasons
}

/// For a run that did not keep up: whether the scheduler thread lost its CPU for longer than a
/// packet takes (`service_ns`), which lets the emulated link fall behind; `None` otherwise.
pub fn preemption_note(sched: Option<&Disturbance>, service_ns: f64) -> Option<String> {
    let d = sched?;
    (d.involuntary_switches > 0 && d.max_gap_ns as f64 > service_ns).then(|| {
        format!(
            "the scheduler thread lost its CPU {} time{} (involuntary switches), the longest for {:.1} us where a packet takes {:.1} us: \
             another process competed for the CPU",
            d.involuntary_switches,
            if d.involuntary_switches == 1 { "" } else { "s" },
            d.max_gap_ns as f64 / 1e3,
            service_ns / 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_policy::{AlphaSched, Fifo};

    fn msg(client: u32, packets: u32, cli_enq: u64, sch_enq: u64, sch_deq: u64) -> MsgRecord {
        MsgRecord {
            client,
            packets,
            pushed: packets,
            packet_bytes: 1500,
            first_pos: 0,
            cli_enq_ns: cli_enq,
            sch_enq_ns: sch_enq,
            sch_deq_ns: sch_deq,
            cli_deq_ns: sch_deq + 100,
            seen: packets,
            dropped: false,
            entry: 0,
        }
    }

    #[test]
    fn an_ideal_harness_matches_the_prediction_exactly() {
        // 1 Gb/s, 1500 B: 12 us per packet. Two messages; FIFO releases the second after the first.
        let msgs = vec![msg(0, 2, 1_000, 1_000, 13_000), msg(1, 1, 2_000, 2_000, 25_000)];
        let tr = trace_of(&msgs, 1_000_000_000, true);
        assert_eq!(tr.arrivals.len(), 2);
        let p = predict(Fifo::new(), &msgs, &tr).unwrap();
        assert_eq!(p, vec![Some(12_000.0), Some(23_000.0)]);
        let rows = compare(&msgs, &p);
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| (r.ratio_mean - 1.0).abs() < 1e-12), "{rows:?}");
        assert_eq!(rows[2].count, 2);
        assert!((rows[2].breakdown.release_to_seen_us - 0.1).abs() < 1e-12);
        // Per packet (the harness pushes non-message-level bursts packet by packet): same FIFO result.
        let tr = trace_of(&msgs, 1_000_000_000, false);
        assert_eq!(tr.arrivals.len(), 3);
        assert_eq!(predict(Fifo::new(), &msgs, &tr).unwrap(), p);
    }

    fn sched_thread(max_gap_ns: u64, residual_ns: f64, involuntary: u64) -> Disturbance {
        Disturbance {
            thread: "sched".into(),
            window_ns: 1_000_000_000,
            involuntary_switches: involuntary,
            voluntary_switches: 0,
            migrations: 0,
            migrations_source: schedlab_report::disturb::MigrationSource::ProcSched,
            loop_iterations: 1_000_000,
            max_gap_ns,
            max_gap_end_ns: 0,
            mean_residual_ns: residual_ns,
        }
    }

    #[test]
    fn a_late_pickup_or_a_stalled_scheduler_is_a_disturbance() {
        // The run: ring wait 12.9 us where 0.3 us is usual; predicted mean 40 us (limit 1 us).
        let quiet = sched_thread(20_000, 150.0, 2);
        assert!(disturbance_reasons(0.3, 40.0, Some(&quiet)).is_empty(), "switches alone are no reason");
        let r = disturbance_reasons(12.9, 40.0, Some(&quiet));
        assert_eq!(r.len(), 1);
        assert!(r[0].contains("12.90 us late") && r[0].contains("2 involuntary switches"), "{r:?}");
        // One 3 ms stall in 1 s: residual 4.5 us > 1 us, even with no arrival caught in it.
        let stalled = sched_thread(3_000_000, 4_500.0, 1);
        let r = disturbance_reasons(0.3, 40.0, Some(&stalled));
        assert!(r.len() == 1 && r[0].contains("3000.0 us") && r[0].contains("4.50 us on average"), "{r:?}");
        // The limit scales with the prediction: the same stall is within 2.5% of a 200 us mean.
        assert!(disturbance_reasons(0.3, 200.0, Some(&stalled)).is_empty());
        // The quiet run that read 1.056: a 2.86 us pickup delay is 2.7% of its 105.4 us prediction.
        let r = disturbance_reasons(2.86, 105.4, Some(&quiet));
        assert!(r.len() == 1 && r[0].contains("2.86 us late") && r[0].contains("2.5%"), "{r:?}");
        assert!(disturbance_reasons(2.6, 105.4, Some(&quiet)).is_empty(), "2.5% of 105.4 us is 2.635 us");
        // No prediction (NaN), no judgement.
        assert!(disturbance_reasons(12.9, f64::NAN, None).is_empty());
        // A run that did not keep up names the preemption when a gap exceeded a packet time.
        assert!(preemption_note(Some(&stalled), 12_000.0).unwrap().contains("lost its CPU 1 time "));
        assert!(preemption_note(Some(&quiet), 24_000.0).is_none());
        assert!(preemption_note(Some(&sched_thread(3_000_000, 4_500.0, 0)), 12_000.0).is_none());
    }

    #[test]
    fn refused_and_undelivered_messages_are_left_out() {
        let mut m = vec![msg(0, 3, 0, 10, 20), msg(0, 2, 5, 0, 0), msg(1, 1, 7, 8, 9)];
        m[1].pushed = 0;
        m[1].dropped = true;
        let tr = trace_of(&m, 8_000_000_000, true);
        assert_eq!(tr.owner, vec![0, 2]);
        let p = predict(AlphaSched::shortest_first(), &m, &tr).unwrap();
        assert!(p[1].is_none() && p[0].is_some() && p[2].is_some());
        let rows = compare(&m, &p);
        assert_eq!(rows.last().unwrap().count, 2);
        assert_eq!(rows.iter().map(|r| r.len_pkts).collect::<Vec<_>>(), vec![1, 3, 0]);
    }

    /// Many lengths (a named workload's): rows are size buckets by the messages' own size
    /// percentiles, at most one per edge of `sim`'s buckets plus the all-messages row, every
    /// message in exactly one bucket; few lengths keep one row per length.
    #[test]
    fn many_lengths_are_bucketed_few_are_not() {
        // 1000 messages, lengths 1..=200 (each five times): 200 distinct lengths.
        let msgs: Vec<MsgRecord> = (0..1000u64).map(|i| msg(0, (i % 200) as u32 + 1, i, i, i + 10)).collect();
        let p: Vec<Option<f64>> = msgs.iter().map(|m| Some(m.packets as f64 * 1000.0)).collect();
        let rows = compare(&msgs, &p);
        let edges = schedlab_sim::engine::BUCKET_EDGES.len();
        assert!(rows.len() <= edges + 1 && rows.len() > 5, "{} rows", rows.len());
        let (buckets, all) = rows.split_at(rows.len() - 1);
        assert!(buckets.iter().all(|r| r.bucket.is_some()) && all[0].bucket.is_none() && all[0].len_pkts == 0);
        assert_eq!(buckets.iter().map(|r| r.count).sum::<usize>(), 1000, "every message in one bucket");
        for w in buckets.windows(2) {
            let (a, b) = (w[0].bucket.unwrap(), w[1].bucket.unwrap());
            assert_eq!(b.low, a.high + 1, "buckets tile the lengths");
            assert!((b.pct_low - a.pct_high).abs() < 1e-12);
        }
        let first = buckets[0].bucket.unwrap();
        assert_eq!((first.low, first.high, buckets[0].len_pkts), (1, 20, 20), "the first decile: lengths 1-20");
        assert!((first.pct_high - 0.1).abs() < 1e-12);
        // 64 distinct lengths: one row each.
        let few: Vec<MsgRecord> = (0..640u64).map(|i| msg(0, (i % 64) as u32 + 1, i, i, i + 10)).collect();
        let rows = compare(&few, &vec![Some(1.0); few.len()]);
        assert_eq!(rows.len(), 65);
        assert!(rows.iter().all(|r| r.bucket.is_none()));
    }
}
