//! W1's analytic tail as HomaSimulation samples it (MsgSizeDistributions.cc
//! getFacebookSizeInterarrival, quoted in /work/shared/workloads/w1-facebook-memcached.txt):
//! whole bytes, capped at 0x40000000; its packets and its largest size follow from those.

use schedlab_workload::{named, Reading, DEFAULT_BYTES_PER_PACKET};

const STEP: Reading = Reading::Step;
const INTERP: Reading = Reading::Interpolated;

/// W1's tail is HomaSimulation's (MsgSizeDistributions.cc getFacebookSizeInterarrival):
/// `round(15 + (((1 − 0.47)/(1 − u))^k − 1)·σ/k)`, capped at 0x40000000 bytes, in both readings.
/// The sizes below are that formula evaluated in python3.
#[test]
fn w1_tail_sizes_are_homasimulations() {
    let w = named("w1").unwrap();
    for reading in [STEP, INTERP] {
        for (u, want) in [(0.470_000_01, 15.0), (0.5, 28.0), (0.9, 500.0), (0.99, 1854.0), (0.999_999, 60061.0)] {
            assert_eq!(w.sample(reading, u), want, "{reading:?} u = {u}");
        }
        let top = w.sample(reading, 1.0 - f64::EPSILON / 2.0);
        assert!(top.fract() == 0.0 && top <= f64::from(1u32 << 30), "{reading:?}: {top}");
        assert_eq!(w.sample(reading, 1.0), f64::from(1u32 << 30), "{reading:?}: capped, not infinite");
    }
}

/// W1 in packets follows from its whole-byte sizes: E[ceil(size / bpp)], computed in python3 as
/// the table's part plus Σ_k P(round(X) > k·bpp) = Σ_k P(X ≥ k·bpp + 0.5) over the GPD tail.
/// (Cutting the unrounded tail instead gives 185.353328 packets at 1 B and 3.583828 at 64 B.)
#[test]
fn w1_packets_come_from_whole_bytes() {
    let w = named("w1").unwrap();
    for (bpp, want) in [(1u32, 185.088019), (64, 3.580021), (DEFAULT_BYTES_PER_PACKET, 1.023187)] {
        let got = w.packet_mean(STEP, bpp);
        assert!((got - want).abs() < 2e-6 * want, "{bpp} B/packet: {got} packets, want {want}");
    }
}

/// The largest size: the last line, or for W1 where its tail's share falls below 1e-12 (the
/// size `packet_ranges` puts the rest of the tail at), 15 + ((0.53/1e-12)^k − 1)·σ/k =
/// 7452567.3 B in python3.
#[test]
fn max_size_includes_w1s_tail() {
    assert_eq!(named("w3").unwrap().max_size(), 15_158_197.0);
    assert_eq!(named("pfabric-datamining").unwrap().max_size(), 666_667.0);
    let m = named("w1").unwrap().max_size();
    assert_eq!(m, 7_452_567.0, "w1");
    let pkts = named("w1").unwrap().packet_ranges(STEP, 64).iter().map(|r| r.high).max().unwrap();
    assert_eq!(pkts, (m / 64.0).ceil() as u32, "w1 at 64 B/packet: longest {pkts} packets, max_size {m}");
}
