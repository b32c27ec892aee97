//! Criterion benchmarks of every policy: nanoseconds per enqueue+dequeue pair with 1, 16 and 1024
//! backlogged flows (each holding 4 one-packet messages of 60..1500 bytes), the cost the real
//! harness's scheduler thread pays per packet. Run: `cargo bench -p schedlab-policy --bench policies`
//! (short: `-- --quick`). Thread-level throughput is measured by `schedlab sched` itself.
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use schedlab_policy::{Alpha, AlphaSched, AnyPolicy, Drr, Fifo, FlowWeight, Message, Policy, Qfq, Wf2qPlus};
use std::time::Duration;

/// Every policy the harness can run, by name.
fn policies(weights: &[FlowWeight]) -> Vec<(&'static str, AnyPolicy<u64>)> {
    vec![
        ("fifo", AnyPolicy::Fifo(Fifo::new())),
        ("drr", AnyPolicy::Drr(Drr::new(weights))),
        ("wf2qp", AnyPolicy::Wf2qPlus(Wf2qPlus::new(weights))),
        ("qfq", AnyPolicy::Qfq(Qfq::new(weights))),
        ("alpha10", AnyPolicy::Alpha(AlphaSched::with_alpha(Alpha::new(10.0).expect("10 is a valid alpha")))),
        ("sf", AnyPolicy::Alpha(AlphaSched::shortest_first())),
    ]
}

fn bytes(k: u64) -> u32 {
    60 + ((k * 389) % 1441) as u32
}

fn pairs(c: &mut Criterion) {
    let mut g = c.benchmark_group("enqueue_dequeue_pair");
    g.sample_size(20).measurement_time(Duration::from_millis(500)).warm_up_time(Duration::from_millis(200));
    for flows in [1usize, 16, 1024] {
        let weights: Vec<FlowWeight> = (0..flows).map(|i| FlowWeight::new(1 + (i % 4) as u32, 1500)).collect();
        for (name, mut p) in policies(&weights) {
            let mut k = 0u64;
            for f in 0..flows as u32 {
                for _ in 0..4 {
                    p.enqueue(Message::new(k, f, 1).with_bytes(bytes(k))).unwrap();
                    k += 1;
                }
            }
            g.bench_with_input(BenchmarkId::new(name, flows), &flows, |b, _| {
                b.iter(|| {
                    let pk = p.dequeue().unwrap();
                    k += 1;
                    p.enqueue(Message::new(black_box(k), pk.flow, 1).with_bytes(bytes(k))).unwrap();
                    black_box(pk.item)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, pairs);
criterion_main!(benches);
