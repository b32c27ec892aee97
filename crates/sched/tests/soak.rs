//! Soak: many more clients than cores, rings of 4 and 8 slots, every `-alg`, plain and
//! distributed (`-D`), one run after another in one process. After every run the books balance
//! exactly per client and overall (generated = transmitted + dropped + queued, cross-checked with
//! the scheduler's own counters), and the process holds as many file descriptors and threads as
//! before the first run (no leaked eventfd, semaphore, ring or client thread).
//!
//! One test function in its own test binary: no other test's threads disturb the counts.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use schedlab_policy::FlowWeight;
use schedlab_sched::harness::{run, Config, PolicySpec, RunResult};
use schedlab_sched::traffic::Spec;
use schedlab_sched::units::{Bps, Nanos};

const CLIENTS: usize = 32;

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir}: {e}")).count()
}

/// Open descriptors and threads of this process.
fn resources() -> (usize, usize) {
    (count("/proc/self/fd"), count("/proc/self/task"))
}

/// Checks the books; returns (transmitted, ring drops) over all clients.
fn check_books(what: &str, r: &RunResult) -> (u64, u64) {
    let (mut gen, mut parts) = (0u64, 0u64);
    let mut in_policy = 0;
    for (c, cl) in r.clients.iter().enumerate() {
        let sum = cl.transmitted + cl.ring_drops + cl.sched_drops + cl.queued_at_stop;
        assert_eq!(cl.generated, sum, "{what}: client {c}: generated = transmitted + dropped + queued");
        assert_eq!(cl.transmitted, r.sched.released[c], "{what}: client {c}: transmitted vs released");
        assert_eq!(cl.sched_drops, r.sched.sched_drops[c], "{what}: client {c}: scheduler drops");
        let pushed = cl.generated - cl.ring_drops;
        assert!(r.sched.taken[c] <= pushed, "{what}: client {c}: taken more than pushed");
        in_policy += r.sched.taken[c] - r.sched.released[c] - r.sched.sched_drops[c];
        gen += cl.generated;
        parts += sum;
    }
    assert_eq!(gen, parts, "{what}: overall");
    assert_eq!(in_policy, r.sched.policy_queued, "{what}: packets inside the policy at stop");
    (r.clients.iter().map(|c| c.transmitted).sum(), r.clients.iter().map(|c| c.ring_drops).sum())
}

#[test]
fn many_clients_tiny_rings_every_algorithm_books_balance_and_nothing_leaks() {
    let algs = [
        PolicySpec::Fifo,
        PolicySpec::Drr,
        PolicySpec::Wf2qPlus,
        PolicySpec::Qfq,
        PolicySpec::Alpha(10.0),
        PolicySpec::ShortestFirst,
    ];
    let started = Instant::now();
    let before = resources();
    // Liveness over the whole soak (a loaded machine may starve one run's scheduler thread).
    let (mut transmitted, mut ring_drops) = (0, 0);
    for (k, alg) in algs.into_iter().enumerate() {
        for (queue, distributed) in [(4usize, false), (8, true)] {
            let programs = (0..CLIENTS)
                .map(|i| vec![Spec::fixed(Nanos(250_000_000), Bps(40_000_000), 100 + 50 * (i as u32 % 20), 1 + (i % 4) as u32)])
                .collect();
            let flows = (0..CLIENTS).map(|i| FlowWeight::new(1 + (i % 3) as u32, 1500)).collect();
            let mut cfg = Config::new(programs, alg.clone(), flows);
            cfg.queue = queue;
            cfg.bandwidth = Some(Bps(50_000_000));
            cfg.sched_poll = Nanos(2_000);
            cfg.distributed = distributed;
            cfg.seed = k as u64 + 1;
            cfg.duration_cap = Some(Nanos(400_000_000));
            let what = format!("{} -q {queue}{}", alg.name(), if distributed { " -D" } else { "" });
            let r = run(&cfg, &AtomicBool::new(false)).unwrap_or_else(|e| panic!("{what}: {e:#}"));
            assert!(!r.interrupted);
            assert_eq!(r.clients.len(), CLIENTS);
            let (t, d) = check_books(&what, &r);
            transmitted += t;
            ring_drops += d;
            drop(r);
            assert_eq!(resources(), before, "{what}: (fds, threads) after the run vs before the first");
        }
    }
    assert!(transmitted > 0, "nothing transmitted in any run");
    assert!(ring_drops > 0, "the tiny rings never filled: not a soak");
    eprintln!("soak: {transmitted} packets transmitted, {ring_drops} dropped at full rings");
    eprintln!("soak: 6 algorithms x 2 configurations x {CLIENTS} clients in {:.1} s", started.elapsed().as_secs_f64());
}
