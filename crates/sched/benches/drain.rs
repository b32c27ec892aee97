//! The scheduler's drain cost per packet, on one thread, with no other core involved: the drain
//! row of `scripts/sched-crosscheck.sh` replayed step by step. That row offers far more than
//! either scheduler can move (one client, bursts of 4 packets of 1500 bytes requested at
//! 100 Tb/s, a ring of 4096 slots, an unlimited link, the queue limit at its default 20/19 for
//! one flow, `-alg rr`, no timestamps), so its ring stays full and every
//! scheduler pass finds a backlog. Here the client, every [`PASSES_PER_POLL`] passes (its `-c`
//! poll of 5 us against passes of about 50 ns), counts the marks of the released packets and
//! refills its ring to the brim in bursts of 4; the scheduler makes its passes at a synthetic
//! clock advanced by [`PASS_NS`] per pass.
//!
//! The two sides are two functions kept out of line ([`sched_pass`], [`client_poll`]), so that
//! `callgrind_annotate --inclusive=yes` splits the instructions: the scheduler's Ir per packet is
//! `sched_pass`'s inclusive Ir over the packets; the whole bench's Ir over the packets includes
//! the client. Because nothing crosses between CPUs and the clock is synthetic, the figures are
//! the code's own cost, stable under load when counted in instructions:
//!
//! ```sh
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/deps/drain-HASH 2000000
//! callgrind_annotate --inclusive=yes cg.out | grep -E 'PROGRAM TOTALS|sched_pass|client_poll'
//! ```
//!
//! The wall-clock figure it prints is only meaningful on a quiet machine.
//!
//! Usage: `cargo bench -p schedlab-sched --bench drain [-- PACKETS]` (default 20,000,000).
//! It checks exact accounting (every packet pushed is counted released, none dropped by the
//! scheduler, the queue limit never exceeded) and exits non-zero otherwise.

use std::time::Instant;

use schedlab_policy::{BuildOptions, Drr, FlowWeight, PolicySpec};
use schedlab_sched::harness::{Core, Item};
use schedlab_sched::ring::{channel, Producer};

/// The row's ring (`-q 4096`).
const QUEUE: usize = 4096;
/// The row's burst and packet length.
const BURST: u64 = 4;
const LEN: u32 = 1500;
/// Synthetic time per scheduler pass, and passes between two polls of the client (5 us).
const PASS_NS: u64 = 50;
const PASSES_PER_POLL: u64 = 100;

/// One scheduler pass (out of line: its inclusive Ir is the scheduler's cost).
#[inline(never)]
fn sched_pass(core: &mut Core<Drr<Item>>, now: u64) -> usize {
    core.pass(now)
}

/// The client's poll: counts the released packets (no stamps, as the harness without timestamp
/// records), then refills the ring in bursts of 4 while a whole burst fits, up to `budget`
/// packets. Returns (counted, pushed).
#[inline(never)]
fn client_poll(prod: &mut Producer, now: u64, budget: u64, dropped: &mut u64) -> (u64, u64) {
    let n = prod.marks(u64::MAX);
    prod.consume(n, false, |c| *dropped += u64::from(c.dropped));
    let mut pushed = 0;
    while prod.space() >= BURST && pushed + BURST <= budget {
        prod.push_singles(BURST as u32, LEN, now);
        pushed += BURST;
    }
    prod.flush();
    (n, pushed)
}

fn main() {
    // `cargo bench` passes `--bench`; take the first argument that is a number.
    let packets: u64 = std::env::args().skip(1).find_map(|a| a.replace('_', "").parse().ok()).unwrap_or(20_000_000);
    let spec = PolicySpec::parse("rr", schedlab_policy::Dialect::Sched).expect("rr is in the sched vocabulary");
    let flows = [FlowWeight::new(1, 1500)];
    let policy = match spec.build::<Item>(&BuildOptions::default().flows(&flows)) {
        schedlab_policy::AnyPolicy::Drr(p) => p,
        _ => panic!("-alg rr is DRR in the sched dialect"),
    };
    let (mut prod, mut cons) = channel(QUEUE);
    cons.set_stamps(false);
    let mut core = Core::new(policy, vec![cons], None, 500, false).with_queue_limit(20, 19);
    let mut now = 1_000_000u64;
    let mut pushed = 0u64;
    let mut counted = 0u64;
    let mut dropped = 0u64;
    let mut max_inside = 0u64;
    let t = Instant::now();
    let mut idle_polls = 0;
    loop {
        // Offer `packets` (rounded up to whole bursts), then let the scheduler drain the rest.
        let (n, p) = client_poll(&mut prod, now, packets.div_ceil(BURST) * BURST - pushed, &mut dropped);
        counted += n;
        pushed += p;
        for _ in 0..PASSES_PER_POLL {
            now += PASS_NS;
            sched_pass(&mut core, now);
            max_inside = max_inside.max(core.taken(0) - core.released[0]);
        }
        if pushed >= packets && counted == pushed {
            break;
        }
        // A scheduler that stops releasing would loop forever: give up (and fail below).
        idle_polls = if n == 0 && p == 0 { idle_polls + 1 } else { 0 };
        if idle_polls > 10 {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "drain: {counted} packets, {:.2} ns/packet ({:.1} Mpps) on one thread (client included), {} passes ({:.1} packets \
         per pass), {} deferred visits",
        secs * 1e9 / counted as f64,
        counted as f64 / secs / 1e6,
        core.passes,
        counted as f64 / core.passes as f64,
        core.counters.qlimit_deferred
    );
    if counted != pushed || dropped != 0 || core.released[0] != pushed || core.sched_drops[0] != 0 || max_inside > 20 {
        eprintln!(
            "drain: accounting FAILED: pushed {pushed}, counted {counted}, released {}, dropped {dropped}, scheduler drops {}, \
             at most {max_inside} packets inside the scheduler (limit 20)",
            core.released[0], core.sched_drops[0]
        );
        std::process::exit(1);
    }
}
