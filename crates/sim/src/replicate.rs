//! Independent replications: seeds `seed`, `seed + 1`, … of one configuration, and the mean
//! over them in the shape of one run, so the report's tables print the means per cell and the
//! half-width columns show Student-t 95% half-widths across the replications.

use crate::engine::{AlphaChosen, ClassLen, LatStats, RunResult, SimConfig, StrategyResult};
use crate::stats::{half_width, mean};

/// The configurations of `n` replications of `cfg`: seeds `cfg.seed`, `cfg.seed + 1`, …
pub fn replications(cfg: &SimConfig, n: u32) -> Vec<SimConfig> {
    (0..u64::from(n)).map(|i| SimConfig { seed: cfg.seed.wrapping_add(i), ..cfg.clone() }).collect()
}

fn merge_lat(len: u32, xs: &[&LatStats]) -> LatStats {
    let m = |f: fn(&LatStats) -> f64| mean(&xs.iter().map(|x| f(x)).collect::<Vec<_>>());
    LatStats {
        len,
        count: xs.iter().map(|x| x.count).sum(),
        mean_tu: m(|x| x.mean_tu),
        ci95_tu: half_width(&xs.iter().map(|x| x.mean_tu).collect::<Vec<_>>()),
        p50_tu: m(|x| x.p50_tu),
        p99_tu: m(|x| x.p99_tu),
        max_tu: xs.iter().map(|x| x.max_tu).fold(f64::NEG_INFINITY, f64::max),
        bucket: xs.first().and_then(|x| x.bucket),
        slowdown_mean: m(|x| x.slowdown_mean),
        slowdown_p50: m(|x| x.slowdown_p50),
        slowdown_p99: m(|x| x.slowdown_p99),
        batch_means: Vec::new(),
    }
}

/// One result whose cells are the means over `reps` (same configuration, different seeds):
/// `ci95` fields are half-widths across replications, counts and packets are totals, maxima are
/// maxima, percentiles are means of the replications' percentiles. `reps` must not be empty.
pub fn merge(reps: &[RunResult]) -> RunResult {
    let first = &reps[0];
    let qlens: Vec<f64> = reps.iter().map(|r| r.qlen_pkts).collect();
    let qlen = mean(&qlens);
    let strategies = first
        .strategies
        .iter()
        .enumerate()
        .map(|(i, s0)| {
            let all: Vec<&StrategyResult> = reps.iter().filter_map(|r| r.strategies.get(i)).collect();
            let lens = crate::stats::lengths(reps);
            let by_len: Vec<LatStats> = lens
                .iter()
                .filter_map(|&l| {
                    let xs: Vec<&LatStats> = all.iter().filter_map(|s| s.by_len.iter().find(|x| x.len == l)).collect();
                    (!xs.is_empty()).then(|| merge_lat(l, &xs))
                })
                .collect();
            let overall = merge_lat(0, &all.iter().map(|s| &s.overall).collect::<Vec<_>>());
            let by_class = (0..s0.by_class.len())
                .map(|c| merge_lat(c as u32, &all.iter().filter_map(|s| s.by_class.get(c)).collect::<Vec<_>>()))
                .collect();
            let periods: Vec<f64> = by_len.iter().map(|s| s.slowdown_mean).collect();
            StrategyResult {
                label: s0.label.clone(),
                listing_alpha: s0.listing_alpha,
                period_min: periods.iter().copied().fold(f64::INFINITY, f64::min),
                period_max: periods.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                by_len,
                overall,
                by_class,
                reordered: all.iter().map(|s| s.reordered).sum(),
                packets_out: all.iter().map(|s| s.packets_out).sum(),
                qlen_pkts: mean(&all.iter().map(|s| s.qlen_pkts).collect::<Vec<_>>()),
                clock_renormalisations: all.iter().map(|s| s.clock_renormalisations).sum(),
                by_class_len: merge_class_len(&all),
                alpha_chosen: merge_alpha_chosen(&all),
                in_order_applies: s0.in_order_applies,
                packets_in: all.iter().map(|s| s.packets_in).sum(),
                sim_time_tu: all.iter().map(|s| s.sim_time_tu).sum(),
                qlen_ci95_pkts: half_width(&all.iter().map(|s| s.qlen_pkts).collect::<Vec<_>>()),
                offered_load: s0.offered_load,
                carried_load: mean(&all.iter().map(|s| s.carried_load).collect::<Vec<_>>()),
            }
        })
        .collect();
    RunResult {
        traffic_pct: first.traffic_pct,
        seed: first.seed,
        packets_in: reps.iter().map(|r| r.packets_in).sum(),
        sim_time_tu: reps.iter().map(|r| r.sim_time_tu).sum(),
        qlen_pkts: qlen,
        qlen_ci95_pkts: half_width(&qlens),
        qlen_batch_means: Vec::new(),
        strategies,
        checkpoints: Vec::new(),
        interrupted: reps.iter().any(|r| r.interrupted),
        closed_apps: first.closed_apps,
        apps: first.apps,
        in_order: first.in_order,
        workload: first.workload.clone(),
    }
}

/// §10 (class, length) cells: means over the replications that saw the cell, half-widths across them.
fn merge_class_len(all: &[&StrategyResult]) -> Vec<ClassLen> {
    let mut keys: Vec<(u32, u32, f64)> =
        all.iter().flat_map(|s| s.by_class_len.iter().map(|c| (c.class, c.len, c.alpha))).collect();
    keys.sort_by_key(|a| (a.0, a.1));
    keys.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
    keys.into_iter()
        .map(|(class, len, alpha)| {
            let xs: Vec<&ClassLen> =
                all.iter().filter_map(|s| s.by_class_len.iter().find(|c| c.class == class && c.len == len)).collect();
            let means: Vec<f64> = xs.iter().map(|c| c.mean_tu).collect();
            ClassLen {
                class,
                alpha,
                len,
                count: xs.iter().map(|c| c.count).sum(),
                mean_tu: mean(&means),
                ci95_tu: half_width(&means),
            }
        })
        .collect()
}

/// §13: the α tracking chose, over the replications (means of the means and percentiles).
fn merge_alpha_chosen(all: &[&StrategyResult]) -> Option<AlphaChosen> {
    let xs: Vec<&AlphaChosen> = all.iter().filter_map(|s| s.alpha_chosen.as_ref()).collect();
    if xs.is_empty() {
        return None;
    }
    let m = |f: fn(&AlphaChosen) -> f64| mean(&xs.iter().map(|x| f(x)).collect::<Vec<_>>());
    Some(AlphaChosen {
        samples: xs.iter().map(|x| x.samples).sum(),
        mean: m(|x| x.mean),
        p10: m(|x| x.p10),
        p50: m(|x| x.p50),
        p90: m(|x| x.p90),
        min: xs.iter().map(|x| x.min).fold(f64::INFINITY, f64::min),
        max: xs.iter().map(|x| x.max).fold(f64::NEG_INFINITY, f64::max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{run, Control};

    #[test]
    fn merged_cells_are_means_and_half_widths_across_replications() {
        let cfg =
            SimConfig { strategies: vec![crate::model::parse_strategy("FIFO").unwrap()], ..SimConfig::report(70.0, 60_000, 3) };
        let cfgs = replications(&cfg, 3);
        assert_eq!(cfgs.iter().map(|c| c.seed).collect::<Vec<_>>(), [3, 4, 5]);
        let reps: Vec<RunResult> = cfgs.iter().map(|c| run(c, &Control::default())).collect();
        assert!(reps[0].qlen_pkts != reps[1].qlen_pkts, "different seeds give different paths");
        let m = merge(&reps);
        let q: Vec<f64> = reps.iter().map(|r| r.qlen_pkts).collect();
        assert!((m.qlen_pkts - (q[0] + q[1] + q[2]) / 3.0).abs() < 1e-12);
        let sd = (q.iter().map(|x| (x - m.qlen_pkts).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((m.qlen_ci95_pkts - 4.303 * sd / 3f64.sqrt()).abs() < 1e-9);
        let a: Vec<f64> = reps.iter().map(|r| r.strategies[0].overall.mean_tu).collect();
        assert!((m.strategies[0].overall.mean_tu - (a[0] + a[1] + a[2]) / 3.0).abs() < 1e-12);
        assert_eq!(m.packets_in, reps.iter().map(|r| r.packets_in).sum::<u64>());
    }
}
