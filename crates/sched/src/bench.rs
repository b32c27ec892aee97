//! Micro-benchmarks behind `schedlab sched --bench` (and the criterion bench): the cost of one
//! enqueue+dequeue pair per policy with many backlogged flows, the bare ring's throughput, and the
//! whole harness's throughput in the same run (the ratio is the harness's overhead).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use schedlab_policy::{Alpha, FlowWeight, Message, Policy};

use crate::harness::{now_ns, run, Alg, Config, Item, RtYield};
use crate::ring::channel;
use crate::traffic::{Spec, Traffic};
use crate::units::{Bps, Nanos};

/// The algorithms measured, by `-alg` name.
pub fn algorithms() -> Vec<Alg> {
    vec![
        Alg::Fifo,
        Alg::Rr,
        Alg::Wf2qp,
        Alg::Qfq,
        Alg::Alpha(Alpha::new(10.0).expect("10 is a valid alpha")),
        Alg::Sf,
    ]
}

/// Nanoseconds per enqueue+dequeue pair with `flows` backlogged flows (each holding 4 one-packet
/// messages of 60..1500 bytes), over `pairs` pairs after a warm-up.
pub fn pair_ns(alg: Alg, flows: usize, pairs: u64) -> f64 {
    let weights: Vec<FlowWeight> = (0..flows).map(|i| FlowWeight::new(1 + (i % 4) as u32, 1500)).collect();
    let mut p = alg.build(&weights);
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

/// Packets per second through the bare ring: one producer pushing 1-packet messages, one consumer
/// taking and releasing each at once, the producer counting the marks, for `dur`.
pub fn bare_ring_pps(queue: usize, dur: Nanos) -> f64 {
    let (mut p, mut c) = channel(queue);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let consumer = std::thread::spawn(move || {
        let mut rt = RtYield::new();
        while !s2.load(Ordering::Relaxed) {
            let now = now_ns();
            rt.tick(now);
            let mut any = false;
            while let Some(m) = c.take(now) {
                c.release(m.pos, now, false);
                any = true;
            }
            if !any {
                std::hint::spin_loop();
            }
        }
    });
    let start = now_ns();
    let end = start + dur.0;
    let mut done = 0u64;
    let mut rt = RtYield::new();
    loop {
        let now = now_ns();
        if now >= end {
            break;
        }
        rt.tick(now);
        if p.space() > 0 {
            p.push(1, 60, now);
        }
        done += p.poll(|_| {});
    }
    let elapsed = now_ns() - start;
    stop.store(true, Ordering::Relaxed);
    let _ = consumer.join();
    done as f64 * 1e9 / elapsed as f64
}

/// Transmitted packets per second of the whole harness: 1 client, rr, 60-byte packets, zero
/// polling intervals, unlimited bandwidth, for `dur`.
pub fn harness_pps(queue: usize, dur: Nanos, sched_cpu: Option<usize>) -> anyhow::Result<f64> {
    let spec = Spec::fixed(dur, Bps(1_000_000_000_000_000), 60, 1);
    let cfg = Config {
        threads: 1,
        traffic: Traffic { programs: vec![vec![spec]], warnings: vec![] },
        queue,
        bandwidth: None,
        sched_poll: Nanos(0),
        client_poll: Nanos(0),
        sched_cpu,
        batch: 500,
        distributed: false,
        duration_cap: None,
        alg: Alg::Rr,
        flows: vec![FlowWeight::new(1, 1500)],
        ts_limit: 0,
        trace: false,
        seed: 1,
        messages: false,
    };
    let r = run(&cfg, &AtomicBool::new(false))?;
    Ok(r.clients[0].transmitted as f64 * 1e9 / r.elapsed.0.max(1) as f64)
}
