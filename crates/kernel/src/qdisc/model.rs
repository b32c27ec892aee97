//! The model's answer: the same arrivals through schedlab-policy's code (the code the simulator
//! and the harness run) on an ideal link at the bottleneck rate.
//!
//! Arrivals are the senders' schedule (client `i`'s bursts every `gap`, each a message on flow
//! `i`); a packet of `L` bytes holds the link `L × 8 / rate` seconds; each flow's queue (the fifo's
//! one queue) drops a message that does not fit in `queue_pkts`, as the kernel's per-class pfifo
//! does. Delivered bytes count in the same window as the kernel's receiver.

use schedlab_policy::{Drr, Fifo, FlowWeight, Message, Policy, Qfq};
use schedlab_report::Hist;

use super::{fill_shares, Alg, FlowResult, OtherAnswer, Plan};

/// Runs the model; `None` for the kernel-only qdiscs (prio, fq, fq_codel).
pub fn run(plan: &Plan) -> Option<OtherAnswer> {
    let weights: Vec<FlowWeight> = plan.flows.iter().map(|f| FlowWeight::new(f.weight, f.max_len)).collect();
    let mut policy: Box<dyn Policy<u64>> = match plan.alg {
        Alg::Fifo => Box::new(Fifo::new()),
        Alg::Drr => Box::new(Drr::new(&weights)),
        // Linux's qfq is QFQ+: the same aggregates (plain QFQ with one class per aggregate).
        Alg::Qfq => Box::new(Qfq::with_aggregates(&weights, plan.qfq_agg_classes)),
        Alg::Prio | Alg::Fq | Alg::FqCodel => return None,
    };
    // (arrival ns, flow, packets, packet bytes), in time order (ties: lower flow first).
    let mut arrivals: Vec<(u64, u32, u32, u32)> = Vec::new();
    for (i, program) in plan.clients.iter().enumerate() {
        let mut t0 = 0u64;
        for s in program {
            let end = t0 + s.duration_ns;
            if let Some(gap) = s.gap_ns() {
                let mut t = t0;
                while t < end {
                    arrivals.push((t, i as u32, s.burst, s.pkt_len));
                    t += gap;
                }
            }
            t0 = end;
        }
    }
    arrivals.sort_unstable();
    let n = plan.flows.len();
    let win_lo = (plan.warmup_s * 1e9) as u64;
    let win_hi = (plan.duration_s() * 1e9) as u64;
    let in_win = |t: u64| (win_lo..win_hi).contains(&t);
    let mut flows: Vec<FlowResult> = (0..n).map(|i| FlowResult { flow: i, ..Default::default() }).collect();
    let mut delays: Vec<Hist> = (0..n).map(|_| Hist::new()).collect();
    let mut queued = vec![0u64; n];
    let mut total_queued = 0u64;
    let mut link_free = 0u64;
    let ps_per_byte = 8_000_000_000_000u128 / u128::from(plan.link_bps);
    let mut serve_until = |limit: u64,
                           policy: &mut Box<dyn Policy<u64>>,
                           link_free: &mut u64,
                           flows: &mut [FlowResult],
                           queued: &mut [u64],
                           total: &mut u64| {
        while *link_free <= limit {
            let Some(p) = policy.dequeue() else { break };
            let f = p.flow as usize;
            queued[f] -= 1;
            *total -= 1;
            *link_free += (u128::from(p.bytes) * ps_per_byte / 1000) as u64;
            if in_win(*link_free) {
                flows[f].bytes += u64::from(p.bytes);
                flows[f].pkts += 1;
                if p.last {
                    delays[f].record(*link_free - p.item);
                }
            }
        }
    };
    for &(t, flow, packets, bytes) in &arrivals {
        serve_until(t, &mut policy, &mut link_free, &mut flows, &mut queued, &mut total_queued);
        if policy.is_empty() && link_free < t {
            link_free = t;
        }
        let f = flow as usize;
        let full = match plan.alg {
            Alg::Fifo => total_queued + u64::from(packets) > u64::from(plan.queue_pkts),
            _ => queued[f] + u64::from(packets) > u64::from(plan.queue_pkts),
        };
        if in_win(t) {
            flows[f].offered_pkts += u64::from(packets);
            if full || queued[f] > 0 {
                flows[f].backlogged = true;
            }
        }
        if full {
            if in_win(t) {
                flows[f].drops += u64::from(packets);
            }
            continue;
        }
        let msg = Message::new(t, flow, packets).with_bytes(bytes);
        if policy.enqueue(msg).is_err() {
            // Flows were checked against the plan; a refusal here would be a bug in the plan.
            flows[f].drops += u64::from(packets);
            continue;
        }
        queued[f] += u64::from(packets);
        total_queued += u64::from(packets);
    }
    serve_until(u64::MAX, &mut policy, &mut link_free, &mut flows, &mut queued, &mut total_queued);
    fill_shares(&mut flows, (win_hi - win_lo) as f64 / 1e9);
    for (f, d) in flows.iter_mut().zip(&delays) {
        f.delay_us = (!d.is_empty()).then(|| d.summary(1000.0));
    }
    Some(OtherAnswer {
        source: format!(
            "model: schedlab-policy {} on an ideal {} b/s link, the senders' schedule",
            plan.alg.qdisc(),
            plan.link_bps
        ),
        flows,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Flow, Step};
    use super::*;

    fn plan(alg: Alg, w: [u32; 2], rate: [u64; 2]) -> Plan {
        Plan {
            alg,
            flows: vec![Flow { weight: w[0], max_len: 1500 }, Flow { weight: w[1], max_len: 1500 }],
            clients: rate
                .iter()
                .map(|&r| vec![Step { duration_ns: 4_000_000_000, rate_bps: r, pkt_len: 1500, burst: 1 }])
                .collect(),
            link_bps: 5_000_000,
            queue_pkts: 1000,
            warmup_s: 1.0,
            traffic: "t".into(),
            seed: 1,
            qfq_agg_classes: super::super::LINUX_QFQ_AGG_CLASSES,
        }
    }

    #[test]
    fn drr_gives_backlogged_flows_their_weights() {
        let a = run(&plan(Alg::Drr, [100, 1], [10_000_000, 10_000_000])).unwrap();
        assert!((a.flows[0].share - 100.0 / 101.0).abs() < 0.005, "{:?}", a.flows);
        assert!(a.flows[0].backlogged && a.flows[1].backlogged);
        // Delivered at the link rate in the window.
        let rate: f64 = a.flows.iter().map(|f| f.rate_bps).sum();
        assert!((rate - 5e6).abs() < 0.02 * 5e6, "{rate}");
        let a = run(&plan(Alg::Qfq, [3, 1], [10_000_000, 10_000_000])).unwrap();
        assert!((a.flows[0].share - 0.75).abs() < 0.01, "{:?}", a.flows);
    }

    /// The seed's flowsets (weight 100, then sixteen of weight 1), flows 0 and 1 sending: the model
    /// runs Linux's QFQ+ with the plan's classes per aggregate, so flow 1 gets its aggregate's weight.
    #[test]
    fn qfq_runs_qfq_plus_with_the_plans_aggregates() {
        for (agg, want) in [(8u32, 100.0 / 108.0), (1, 100.0 / 101.0)] {
            let mut p = plan(Alg::Qfq, [100, 1], [10_000_000, 10_000_000]);
            p.flows.extend(std::iter::repeat_n(Flow { weight: 1, max_len: 1500 }, 15));
            p.clients.extend(std::iter::repeat_n(vec![], 15));
            p.qfq_agg_classes = agg;
            let a = run(&p).unwrap();
            assert!((a.flows[0].share - want).abs() < 0.01, "{agg} per aggregate: {:?}", &a.flows[..2]);
        }
    }

    #[test]
    fn fifo_shares_follow_the_offered_rates() {
        // Offered 3:1 into a full tail-drop FIFO: whichever sender arrives next takes the slot a
        // departure frees, so the heavier sender gets most of the link, near its offered 0.75 but
        // not exactly (the paced senders' phases decide who is next; 0.79 here). Fair queueing
        // over equal weights would give 0.5.
        let a = run(&plan(Alg::Fifo, [1, 1], [12_000_000, 4_000_000])).unwrap();
        assert!((0.65..0.85).contains(&a.flows[0].share), "{:?}", a.flows);
        assert!(run(&plan(Alg::Fq, [1, 1], [1, 1])).is_none());
    }

    #[test]
    fn an_underloaded_link_delivers_what_is_offered_with_no_backlog() {
        let a = run(&plan(Alg::Drr, [100, 1], [1_000_000, 1_000_000])).unwrap();
        assert!((a.flows[0].share - 0.5).abs() < 0.01, "{:?}", a.flows);
        assert!(!a.flows[0].backlogged && !a.flows[1].backlogged);
        // One packet each: 1500 B at 5 Mb/s is 2.4 ms.
        let d = a.flows[0].delay_us.unwrap();
        assert!(d.p50 >= 2390.0 && d.p50 <= 2410.0 + 2400.0, "{d:?}");
    }
}
