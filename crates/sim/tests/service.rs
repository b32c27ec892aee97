//! The service models (`--service`), trace time units, and the flow-level strategies with
//! per-application weights.

use std::sync::Arc;

use schedlab_sim::engine::{run, Arrivals, Control, SimConfig};
use schedlab_sim::model::{parse_strategy, LengthDist, Service, Strategy, TraceArrival};

fn single_packets(traffic: f64, packets: u64, service: Service, strategies: Vec<Strategy>) -> SimConfig {
    SimConfig { strategies, dist: LengthDist::new(&[(1, 1, 100.0)]).unwrap(), service, ..SimConfig::report(traffic, packets, 11) }
}

/// Single-packet messages make the model M/G/1, whose mean queue (packets waiting, not in
/// service) is Pollaczek–Khinchine's λ²E[S²]/(2(1−ρ)): at ρ = 0.5, 0.25 for det (E[S²] = 1),
/// 0.3125 for the report's 0.5 + Exp(0.5) (E[S²] = 1.25) and 0.5 for exp (E[S²] = 2).
#[test]
fn each_service_model_gives_its_m_g_1_queue() {
    for (service, lq) in [(Service::Det, 0.25), (Service::Report, 0.3125), (Service::Exp, 0.5)] {
        let r = run(&single_packets(50.0, 2_000_000, service, vec![Strategy::Fifo]), &Control::default());
        let rel = (r.qlen_pkts - lq).abs() / lq;
        assert!(rel < 0.04, "{service:?}: qlen {} vs theory {lq}", r.qlen_pkts);
        // The mean latency (time to the start of service) is Lq / λ by Little's law.
        let w = r.strategies[0].overall.mean_tu;
        assert!((w - lq / 0.5).abs() / (lq / 0.5) < 0.05, "{service:?}: latency {w}");
    }
}

/// The report's model is the default and unchanged: `SimConfig::report` uses it.
#[test]
fn the_report_service_is_the_default() {
    assert_eq!(SimConfig::report(50.0, 10, 1).service, Service::Report);
    assert_eq!(Service::default(), Service::Report);
}

/// With a deterministic service a trace's latencies are exact: FIFO sends 0,1,2 then 3.
#[test]
fn deterministic_service_makes_trace_latencies_exact() {
    let tr = vec![TraceArrival { time: 0.0, len: 3, app: 0 }, TraceArrival { time: 1.0, len: 1, app: 0 }];
    let cfg = SimConfig {
        arrivals: Arrivals::Trace(Arc::new(tr)),
        service: Service::Det,
        strategies: vec![Strategy::Fifo, parse_strategy("SF").unwrap()],
        ..SimConfig::report(50.0, 10, 1)
    };
    let r = run(&cfg, &Control::default());
    let fifo = &r.strategies[0];
    // Message 1: last packet starts at 2 (latency 2); message 2 waits from 1 to 3 (latency 2).
    assert_eq!(fifo.by_len.iter().map(|l| (l.len, l.mean_tu)).collect::<Vec<_>>(), [(1, 2.0), (3, 2.0)]);
    // SF: message 2 (1 packet) goes before the remaining 2 packets of message 1: starts at 1.
    let sf = &r.strategies[1];
    assert_eq!(sf.by_len.iter().map(|l| (l.len, l.mean_tu)).collect::<Vec<_>>(), [(1, 0.0), (3, 3.0)]);
}

/// Flow-level strategies run in the simulator with one flow per application, and the weights
/// shift service: two backlogged applications, app 0 sending 1-packet and app 1 2-packet
/// messages; giving app 1 weight 3 lowers its latency and raises app 0's.
#[test]
fn flow_level_strategies_follow_the_weights() {
    let mut tr = Vec::new();
    for _ in 0..60 {
        tr.push(TraceArrival { time: 0.0, len: 1, app: 0 });
        tr.push(TraceArrival { time: 0.0, len: 2, app: 1 });
    }
    let strategies: Vec<Strategy> = ["drr", "wf2qp", "qfq"].iter().map(|s| parse_strategy(s).unwrap()).collect();
    let base = SimConfig {
        arrivals: Arrivals::Trace(Arc::new(tr)),
        service: Service::Det,
        apps: 2,
        strategies,
        ..SimConfig::report(50.0, 10, 1)
    };
    let equal = run(&base, &Control::default());
    let weighted = run(&SimConfig { weights: vec![1, 3], ..base.clone() }, &Control::default());
    for (e, w) in equal.strategies.iter().zip(&weighted.strategies) {
        assert_eq!(e.packets_out, 180, "{}", e.label);
        assert_eq!(e.overall.count, 120, "{}", e.label);
        let lat = |s: &schedlab_sim::engine::StrategyResult, len| s.by_len.iter().find(|l| l.len == len).unwrap().mean_tu;
        assert!(lat(w, 2) < lat(e, 2) && lat(w, 1) > lat(e, 1), "{}: weights had no effect", e.label);
    }
    assert_eq!(equal.strategies.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["DRR", "WF2Q+", "QFQ"]);
}
