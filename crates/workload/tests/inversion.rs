//! The CDF inversion at points worked out by hand from the reference tables
//! (`/work/shared/workloads/`): the first line, lines of zero mass, repeated sizes, the last line,
//! W1's analytic tail as HomaSimulation samples it, and the packet distributions against the
//! sizes they are cut from.

use std::collections::BTreeMap;

use schedlab_workload::{all, named, Reading, Unit, Workload, DEFAULT_BYTES_PER_PACKET};

const STEP: Reading = Reading::Step;
const INTERP: Reading = Reading::Interpolated;

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

/// (workload, reading, u, size) worked out from the tables' lines.
#[test]
fn sizes_at_the_tables_edges() {
    let cases: &[(&str, Reading, f64, f64)] = &[
        // W4: `50 0` (zero mass), `53 0.00074`, `56 0.00148`, ..., `8582787 0.9987`, `10000000 1.0`.
        ("w4", STEP, 0.0004, 53.0),
        ("w4", STEP, 0.00074, 53.0), // a CDF value itself: the smallest SIZE whose CDF is >= u
        ("w4", STEP, 0.00075, 56.0),
        ("w4", STEP, 0.9999, 10_000_000.0),
        ("w4", INTERP, 0.00037, 51.5), // the zero-mass line anchors the interpolation
        ("w4", INTERP, 0.00074, 53.0),
        ("w4", INTERP, 0.99935, 9_291_393.5),
        // pFabric web search: `6 1 0`, `6 1 0.15`, `13 1 0.2`, ..., `6667 1 0.97`, `20000 1 1`.
        ("pfabric-websearch", STEP, 0.1, 6.0),
        ("pfabric-websearch", STEP, 0.16, 13.0),
        ("pfabric-websearch", INTERP, 0.1, 6.0), // between two lines of size 6
        ("pfabric-websearch", INTERP, 0.175, 9.5),
        ("pfabric-websearch", INTERP, 0.985, 13_333.5),
        // pFabric data mining: `1 1 0`, `1 1 0.5`, `2 1 0.6`, ..., `666667 1 1`.
        ("pfabric-datamining", STEP, 0.25, 1.0),
        ("pfabric-datamining", STEP, 0.55, 2.0),
        ("pfabric-datamining", INTERP, 0.25, 1.0),
        ("pfabric-datamining", INTERP, 0.55, 1.5),
        ("pfabric-datamining", STEP, 0.999, 666_667.0),
        // W5: `1 0.025`, `2 0.05`, ..., `3333 0.900000`, `7001 0.902505`.
        ("w5", STEP, 0.01, 1.0),
        ("w5", INTERP, 0.01, 1.0), // the first line's mass is an atom at its size
        ("w5", INTERP, 0.0375, 1.5),
        ("w5", STEP, 0.901, 7001.0),
        ("w5", INTERP, 0.901, 3333.0 + 0.001 / 0.002505 * 3668.0),
        // W2: first line `2 0.0756033901818394`.
        ("w2", STEP, 0.05, 2.0),
        ("w2", INTERP, 0.05, 2.0),
        ("w2", STEP, 0.999_999, 3_529_904.0),
        // W1: `1 0.00583`, `2 0.18403`, ..., `15 0.47`, then the tail.
        ("w1", STEP, 0.0, 1.0),
        ("w1", STEP, 0.00583, 1.0),
        ("w1", STEP, 0.006, 2.0),
        ("w1", STEP, 0.47, 15.0),
        ("w1", INTERP, 0.47, 15.0),
    ];
    let mut wrong = Vec::new();
    for &(name, reading, u, want) in cases {
        let got = named(name).unwrap().sample(reading, u);
        if !close(got, want) {
            wrong.push(format!("{name} {reading:?} u = {u}: {got}, want {want}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A line of zero mass between two others (the CDF repeats): no u ever selects its size in the
/// step reading, and the interpolated reading spreads the next line's mass from it.
#[test]
fn a_repeated_probability_is_a_zero_width_step() {
    let mut w = named("w2").unwrap();
    w.sizes = vec![1.0, 2.0, 3.0, 4.0];
    w.cdf = vec![0.2, 0.2, 0.5, 1.0];
    assert_eq!(w.sample(STEP, 0.2), 1.0);
    assert_eq!(w.sample(STEP, 0.200_000_1), 3.0);
    assert_eq!(w.sample(STEP, 0.5), 3.0);
    assert_eq!(w.sample(INTERP, 0.2), 1.0);
    assert!(close(w.sample(INTERP, 0.35), 2.5));
    assert!(close(w.sample(INTERP, 0.75), 3.5));
    let step: Vec<(u32, u32)> = w.packet_ranges(STEP, 1).iter().map(|r| (r.low, r.high)).collect();
    assert_eq!(step, [(1, 1), (3, 3), (4, 4)], "no range for the zero-mass size");
}

/// `packet_ranges` is the distribution of the sizes `sample` draws, cut into packets: for every
/// table, reading and a few packet sizes, its mean against the lengths of a fine grid of u, and
/// in the step reading (single lengths) every length's probability (each grid point stands for
/// 1/N, so a length's share is off by at most a point per CDF line).
#[test]
fn packet_ranges_are_the_sampled_sizes_in_packets() {
    const N: u32 = 400_000;
    let mut wrong = Vec::new();
    for w in all() {
        let bpps: &[u32] = if w.unit == Unit::Bytes { &[64, 1460] } else { &[DEFAULT_BYTES_PER_PACKET] };
        for &bpp in bpps {
            for reading in [STEP, INTERP] {
                check_packets(&w, reading, bpp, N, &mut wrong);
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

fn check_packets(w: &Workload, reading: Reading, bpp: u32, n: u32, wrong: &mut Vec<String>) {
    let ranges = w.packet_ranges(reading, bpp);
    let mut counts: BTreeMap<u32, f64> = BTreeMap::new();
    let mut mean = 0.0;
    for i in 0..n {
        let x = w.sample(reading, (f64::from(i) + 0.5) / f64::from(n));
        let k = match w.unit {
            Unit::Bytes => (x / f64::from(bpp)).ceil().max(1.0),
            // YAPS: a drawn (interpolated) number of packets is rounded to the nearest.
            Unit::Packets => (x + 0.5).floor(),
        } as u32;
        *counts.entry(k).or_default() += 1.0 / f64::from(n);
        mean += f64::from(k) / f64::from(n);
    }
    let exact: f64 = ranges.iter().map(|r| r.prob * (f64::from(r.low) + f64::from(r.high)) / 2.0).sum();
    // 1e-3 of the mean bounds the grid's error on the heaviest tail (W3's largest message is
    // 5,000 times its mean; the grid's last point stands for 1/N of the mass).
    if (mean - exact).abs() > 1e-3 * exact {
        wrong.push(format!("{} {reading:?} {bpp} B/packet: grid mean {mean} vs exact {exact}", w.name));
    }
    if reading == STEP {
        let mut want: BTreeMap<u32, f64> = BTreeMap::new();
        for r in &ranges {
            assert_eq!(r.low, r.high, "{}: a step reading gives single lengths", w.name);
            *want.entry(r.low).or_default() += r.prob;
        }
        let slack = (w.points() as f64 + 2.0) / f64::from(n);
        for k in want.keys().chain(counts.keys()) {
            let (p, q) = (want.get(k).copied().unwrap_or(0.0), counts.get(k).copied().unwrap_or(0.0));
            if (p - q).abs() > slack {
                wrong.push(format!("{} step {bpp} B/packet: length {k}: exact {p}, grid {q}", w.name));
            }
        }
    }
}

/// The shipped tables are the reference data byte for byte: their FNV-1a 64 checksums, computed
/// in python3 over /work/shared/workloads/*.txt.
#[test]
fn checksums_are_the_reference_files() {
    let want = [
        ("w1", "78e57d0d3eb60e52"),
        ("w2", "1dadb5a4d3e9b17c"),
        ("w3", "a0b3c1f6da7b35a1"),
        ("w4", "d74b7defdaa35d7c"),
        ("w5", "e0a51f5170cb31d5"),
        ("pfabric-websearch", "5df0f502e3e8ae2a"),
        ("pfabric-datamining", "472b745f0014e62b"),
        ("w1-sampled", "88643bf27befb559"),
    ];
    for (name, sum) in want {
        assert_eq!(named(name).unwrap().checksum_hex(), format!("fnv1a64:{sum}"), "{name}");
    }
}
