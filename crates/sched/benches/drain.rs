//! The scheduler's drain cost per packet, on one thread, with no other core involved: the
//! saturating-drain row of `scripts/sched-crosscheck.sh` (one client, bursts of 4 packets of
//! 1500 bytes, a 500 Gb/s link, the queue limit at 20/19, `-alg rr`, no timestamps) replayed
//! step by step. Each step the client pushes one burst (four one-packet messages, published with
//! their line of entries), the scheduler makes one pass at a synthetic clock advanced by the
//! burst's transmission time (96 ns at 500 Gb/s, so the link is never the limit), and the client
//! counts the marks of the released packets (without stamps, as the harness does then).
//!
//! Because nothing crosses between CPUs and the clock is synthetic, the figure is the code's own
//! cost (instructions, branches, L1 hits), stable under load when measured by instruction count:
//! `valgrind --tool=callgrind target/release/deps/drain-* 2000000` gives instructions per packet
//! as Ir / packets. The wall-clock figure it prints is only meaningful on a quiet machine.
//!
//! Usage: `cargo bench -p schedlab-sched --bench drain [-- PACKETS]` (default 20,000,000).
//! It checks exact accounting (every packet pushed is counted released, none dropped) and exits
//! non-zero otherwise.

use std::time::Instant;

use schedlab_policy::{BuildOptions, FlowWeight, PolicySpec};
use schedlab_sched::harness::{Core, Item};
use schedlab_sched::ring::channel;
use schedlab_sched::units::Bps;

fn main() {
    // `cargo bench` passes `--bench`; take the first argument that is a number.
    let packets: u64 = std::env::args().skip(1).find_map(|a| a.replace('_', "").parse().ok()).unwrap_or(20_000_000);
    let spec = PolicySpec::parse("rr", schedlab_policy::Dialect::Sched).expect("rr is in the sched vocabulary");
    let flows = [FlowWeight::new(1, 1500)];
    let policy = match spec.build::<Item>(&BuildOptions::default().flows(&flows)) {
        schedlab_policy::AnyPolicy::Drr(p) => p,
        _ => panic!("-alg rr is DRR in the sched dialect"),
    };
    let (mut prod, mut cons) = channel(500);
    cons.set_stamps(false);
    let mut core = Core::new(policy, vec![cons], Some(Bps(500_000_000_000)), 500, false).with_queue_limit(20, 19);
    const BURST: u32 = 4;
    const LEN: u32 = 1500;
    // 4 × 1500 B at 500 Gb/s.
    const STEP_NS: u64 = 96;
    let mut now = 1_000_000u64;
    let mut pushed = 0u64;
    let mut counted = 0u64;
    let mut dropped = 0u64;
    let t = Instant::now();
    while pushed < packets {
        let fit = prod.space().min(u64::from(BURST));
        for _ in 0..fit {
            prod.push(1, LEN, now);
        }
        prod.flush();
        pushed += fit;
        now += STEP_NS;
        core.pass(now);
        let n = prod.marks(u64::MAX);
        prod.consume(n, false, |c| dropped += u64::from(c.dropped));
        counted += n;
    }
    // Drain what is left.
    let mut idle = 0;
    while counted < pushed && idle < 1000 {
        now += STEP_NS;
        let work = core.pass(now);
        let n = prod.marks(u64::MAX);
        prod.consume(n, false, |c| dropped += u64::from(c.dropped));
        counted += n;
        idle = if work == 0 && n == 0 { idle + 1 } else { 0 };
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "drain: {pushed} packets, {:.2} ns/packet ({:.1} Mpps) on one thread, {} passes, {} deferred visits",
        secs * 1e9 / pushed as f64,
        pushed as f64 / secs / 1e6,
        core.passes,
        core.counters.qlimit_deferred
    );
    if counted != pushed || dropped != 0 || core.released[0] != pushed {
        eprintln!(
            "drain: accounting FAILED: pushed {pushed}, counted {counted}, released {}, dropped {dropped}",
            core.released[0]
        );
        std::process::exit(1);
    }
}
