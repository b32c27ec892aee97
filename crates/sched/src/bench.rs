//! Micro-benchmarks behind `schedlab sched --bench` (and the criterion bench): the cost of one
//! enqueue+dequeue pair per policy with many backlogged flows. Throughput is measured against
//! the original `sched` by `scripts/sched-crosscheck.sh` (same run, alternating, medians): the
//! single-process ring/harness trials it replaces varied 0.43-1.20x from run to run.

use std::time::Instant;

use schedlab_policy::{BuildOptions, FlowWeight, Message, Policy, PolicySpec};

use crate::harness::Item;

/// The policies measured: one of each of the vocabulary (`PolicySpec::examples`).
pub fn algorithms() -> Vec<PolicySpec> {
    PolicySpec::examples()
}

/// Nanoseconds per enqueue+dequeue pair with `flows` backlogged flows (each holding 4 one-packet
/// messages of 60..1500 bytes), over `pairs` pairs after a warm-up.
pub fn pair_ns(alg: &PolicySpec, flows: usize, pairs: u64) -> f64 {
    let weights: Vec<FlowWeight> = (0..flows).map(|i| FlowWeight::new(1 + (i % 4) as u32, 1500)).collect();
    let mut p = alg.build(&BuildOptions::default().flows(&weights));
    let len = |k: u64| 60 + ((k * 389) % 1441) as u32;
    let mut k = 0u64;
    for f in 0..flows {
        for _ in 0..4 {
            k += 1;
            p.enqueue(Message::new(Item { client: f as u32, pos: k }, f as u32, 1).with_bytes(len(k))).expect("configured flow");
        }
    }
    let step = |p: &mut schedlab_policy::AnyPolicy<Item>, k: u64| {
        let pk = p.dequeue().expect("backlogged");
        let f = pk.flow;
        p.enqueue(Message::new(Item { client: f, pos: k }, f, 1).with_bytes(len(k))).expect("configured flow");
    };
    for i in 0..pairs / 10 {
        step(&mut p, i);
    }
    let t = Instant::now();
    for i in 0..pairs {
        step(&mut p, std::hint::black_box(i));
    }
    t.elapsed().as_nanos() as f64 / pairs as f64
}
