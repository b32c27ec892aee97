//! Criterion benchmarks: ns per enqueue+dequeue pair per policy with 1, 16 and 1024 backlogged
//! flows. Run: `cargo bench -p schedlab-sched --bench sched` (short: `-- --quick`). The ring and
//! harness throughput ratio is measured by `schedlab sched --bench` (threads, not criterion).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use schedlab_policy::{FlowWeight, Message, Policy};
use schedlab_sched::bench::algorithms;
use schedlab_sched::harness::Item;

fn pairs(c: &mut Criterion) {
    let mut g = c.benchmark_group("enqueue_dequeue_pair");
    g.sample_size(20).measurement_time(std::time::Duration::from_millis(500)).warm_up_time(std::time::Duration::from_millis(200));
    for alg in algorithms() {
        for flows in [1usize, 16, 1024] {
            let weights: Vec<FlowWeight> = (0..flows).map(|i| FlowWeight::new(1 + (i % 4) as u32, 1500)).collect();
            let mut p = alg.build(&weights);
            for f in 0..flows {
                for k in 0..4u64 {
                    p.enqueue(Message::new(Item { client: f as u32, pos: k }, f as u32, 1).with_bytes(60 + (k as u32 * 389) % 1441)).unwrap();
                }
            }
            let mut k = 0u64;
            g.bench_with_input(BenchmarkId::new(alg.name(), flows), &flows, |b, _| {
                b.iter(|| {
                    let pk = p.dequeue().unwrap();
                    k += 1;
                    p.enqueue(Message::new(Item { client: pk.flow, pos: k }, pk.flow, 1).with_bytes(60 + ((k * 389) % 1441) as u32)).unwrap();
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, pairs);
criterion_main!(benches);
