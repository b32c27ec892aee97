//! Size buckets by size percentile: edges that fall on the same length share one bucket (as
//! `docs/guide/workloads.md` says), so a big atom (60% of messages of one length) makes one
//! bucket, not one per edge with the lengths after it cut one by one.

use proptest::prelude::*;
use schedlab_sim::engine::{empirical_buckets, run, Bucket, Control, BUCKET_EDGES};
use schedlab_sim::model::parse_strategy;
use schedlab_sim::{LengthDist, SimConfig};

/// The distinct lengths at the bucket edges, by nearest rank, increasing: what the buckets' tops
/// must be.
fn edge_lengths(sorted: &[u32]) -> Vec<u32> {
    let n = sorted.len();
    let mut v: Vec<u32> = BUCKET_EDGES
        .iter()
        .map(|&e| {
            // Nearest rank in integer arithmetic: the smallest k with k ≥ e·n.
            let k = (1..=n).find(|&k| k as f64 >= e * n as f64 - 1e-9).unwrap_or(n);
            sorted[k - 1]
        })
        .collect();
    v.dedup();
    v
}

fn check(b: &[Bucket], sorted: &[u32]) {
    let tops: Vec<u32> = b.iter().map(|x| x.high).collect();
    assert_eq!(tops, edge_lengths(sorted), "bucket tops are the distinct edge lengths: {b:?}");
    let n = sorted.len() as f64;
    for (i, x) in b.iter().enumerate() {
        let want_low = if i == 0 { sorted[0].max(1) } else { b[i - 1].high + 1 };
        assert_eq!(x.low, want_low, "buckets are contiguous: {b:?}");
        let below = sorted.iter().filter(|&&y| y < x.low).count() as f64 / n;
        let upto = sorted.iter().filter(|&&y| y <= x.high).count() as f64 / n;
        assert_eq!((x.pct_low, x.pct_high), (below, upto), "bucket {x:?}");
    }
}

#[test]
fn an_atom_of_sixty_percent_is_one_bucket() {
    let mut v: Vec<u32> = vec![1; 600];
    v.extend(2..402);
    let b = empirical_buckets(&v);
    check(&b, &v);
    assert_eq!((b[0].low, b[0].high, b[0].pct_high), (1, 1, 0.6));
    assert_eq!((b[1].low, b[1].high), (2, 101), "the 60-70% bucket: {b:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn buckets_are_cut_at_the_size_percentiles(
        atoms in proptest::collection::vec((1u32..50, 1usize..400), 1..8),
        spread in proptest::collection::vec(1u32..5000, 0..300),
    ) {
        let mut v: Vec<u32> = atoms.iter().flat_map(|&(len, k)| std::iter::repeat_n(len, k)).chain(spread).collect();
        v.sort_unstable();
        check(&empirical_buckets(&v), &v);
    }
}

/// A run of W4 (60% of messages one packet long): its buckets, as the run reports them.
#[test]
fn w4_runs_with_one_bucket_per_distinct_edge() {
    let d = LengthDist::workload("w4", None, None).unwrap();
    let cfg =
        SimConfig { strategies: vec![parse_strategy("FIFO").unwrap()], dist: d.clone(), ..SimConfig::report(50.0, 200_000, 1) };
    let r = run(&cfg, &Control::default());
    let got: Vec<(u32, u32)> = r.strategies[0].by_len.iter().map(|l| l.bucket.map(|b| (b.low, b.high)).unwrap()).collect();
    let mut tops: Vec<u32> = BUCKET_EDGES.iter().map(|&e| d.quantile(e)).collect();
    tops.dedup();
    let mut want = Vec::new();
    let mut low = 1;
    for t in tops {
        want.push((low, t));
        low = t + 1;
    }
    // Every bucket saw messages in 200k packets but possibly the top one.
    assert!(
        got.len() <= want.len() && got.len() + 1 >= want.len() && got[..] == want[..got.len()],
        "buckets {got:?}, size percentiles give {want:?}"
    );
    assert!(r.strategies[0].by_len[0].bucket.unwrap().pct_high > 0.5, "the one-packet atom in one bucket");
}

#[test]
#[ignore = "prints the buckets of the named workloads"]
fn print_workload_buckets() {
    for w in ["w1", "w2", "w3", "w4", "pfabric-datamining", "pfabric-websearch"] {
        let d = LengthDist::workload(w, None, None).unwrap();
        let mut tops: Vec<u32> = BUCKET_EDGES.iter().map(|&e| d.quantile(e)).collect();
        tops.dedup();
        println!("{w}: {tops:?}");
    }
}
