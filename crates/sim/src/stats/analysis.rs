//! Per traffic level: steady-state estimates (after an optional warm-up), across replications
//! when there are several, theory beside FIFO, batch-means diagnostics and warnings.

use std::fmt::Write as _;

use serde::Serialize;

use super::compare::{compare, Comparison};
use super::{estimate, finite, half_width, lag1_autocorrelation, lat_for, lengths, mean, mser};
use crate::engine::{Arrivals, RunResult, SimConfig};
use crate::model::Strategy;
use crate::output::{fmt_g, thousands};
use crate::theory::{Analytic, MxG1, SizeBased, RELAXATIONS_NEEDED};

/// Initial transient to delete from the steady-state statistics (`--warmup`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Warmup {
    None,
    /// The batches holding the first this many arrival packets.
    Packets(u64),
    /// MSER on the queue-length batch means ([`super::mser`]), per replication.
    Auto,
}

impl Warmup {
    /// Parses `--warmup`: `auto`, `0`/`none`, or a packet count (`5M`).
    pub fn parse(s: &str) -> Result<Warmup, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "mser" => Ok(Warmup::Auto),
            "none" | "0" => Ok(Warmup::None),
            _ => schedlab_report::units::parse_count(s)
                .map(Warmup::Packets)
                .map_err(|e| format!("{e}; or 'auto' (MSER on the batch means)")),
        }
    }
}

/// What the statistics are asked for.
#[derive(Clone, Debug)]
pub struct Options {
    pub warmup: Warmup,
    /// The strategy to compare every other one with (`--compare`).
    pub compare: Option<Strategy>,
    /// A lag-1 autocorrelation of the queue-length batch means above this is a warning.
    pub max_lag1: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { warmup: Warmup::None, compare: None, max_lag1: MAX_LAG1 }
    }
}

/// Batch means whose lag-1 autocorrelation exceeds this are called correlated (with 20 batches
/// the estimate's standard error is about 0.22, so independent batches pass 99% of the time).
pub const MAX_LAG1: f64 = 0.5;

/// Fewer retained batches than this give too noisy an autocorrelation to warn on.
const MIN_BATCHES_FOR_LAG1: usize = 8;

/// One cell (queue length, or a strategy's mean latency for a length; `len` 0 = all messages).
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub len: u32,
    /// Steady-state estimate: the cumulative mean without warm-up, else the mean of the batch
    /// means after it; over replications, the mean of the replications' estimates.
    pub mean: f64,
    /// 95% half-width: batch means (one replication) or Student t across replications.
    pub ci95: f64,
    /// Each replication's estimate, in seed order (null where the length did not occur).
    pub per_replication: Vec<Option<f64>>,
    /// Queueing theory's value, when the model has a closed form for this cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analytic: Option<f64>,
    /// The simulated value differs from `analytic` by more than `ci95`; absent (undetermined)
    /// when there is no analytic value or no half-width to judge by (too few batches or messages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flagged: Option<bool>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StrategyCells {
    pub label: String,
    pub cells: Vec<Cell>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WarmupInfo {
    /// `none`, `packets` or `MSER on the queue-length batch means`.
    pub rule: String,
    /// Per replication: batches deleted and the arrival packets they held.
    pub batches_deleted: Vec<usize>,
    pub packets_deleted: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Diagnostics {
    /// Batches per replication and arrival packets per batch.
    pub batches: u32,
    pub batch_packets: u64,
    /// Arrival packets per replication.
    pub packets: u64,
    /// Per replication, over the batches kept after the warm-up.
    pub qlen_lag1_autocorrelation: Vec<f64>,
    /// Per strategy, per replication: lag-1 autocorrelation of the avlat batch means.
    pub avlat_lag1_autocorrelation: Vec<(String, Vec<f64>)>,
    /// M^X/G/1 relaxation time and the packets a run of this load needs (Poisson arrivals only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relaxation_time_tu: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_needed: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Theory {
    pub model: &'static str,
    pub rho: f64,
    pub mean_len_pkts: f64,
    pub mean_sq_len_pkts: f64,
    pub mean_service_tu: f64,
    pub mean_sq_service_tu: f64,
    pub qlen_pkts: f64,
    pub fifo_first_packet_wait_tu: f64,
    pub fifo_avlat_tu: f64,
    /// RR's mean wait for a message's first packet (W₁ of `theory`'s module doc).
    pub rr_first_packet_wait_tu: f64,
    /// Mean latency over all messages under RR and SF by the closed forms.
    pub rr_avlat_tu: f64,
    pub sf_avlat_tu: f64,
}

/// The statistics of one traffic level.
#[derive(Clone, Debug, Serialize)]
pub struct LevelStats {
    pub traffic_pct: f64,
    pub replications: usize,
    pub seeds: Vec<u64>,
    /// How `ci95` was computed.
    pub method: String,
    pub warmup: WarmupInfo,
    pub diagnostics: Diagnostics,
    pub qlen: Cell,
    pub strategies: Vec<StrategyCells>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theory: Option<Theory>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    pub warnings: Vec<String>,
}

/// Which strategy's closed form a cell takes.
type PickAnalytic = fn(&Analytic) -> f64;

/// Combines per-replication estimates into one cell.
fn combine(len: u32, per: Vec<Option<(f64, f64)>>) -> Cell {
    let (m, hw) = if per.len() == 1 {
        per[0].unwrap_or((f64::NAN, f64::NAN))
    } else {
        let v: Vec<f64> = per.iter().flatten().map(|x| x.0).filter(|x| x.is_finite()).collect();
        (mean(&v), half_width(&v))
    };
    Cell { len, mean: m, ci95: hw, per_replication: per.iter().map(|x| x.map(|p| p.0)).collect(), analytic: None, flagged: None }
}

fn set_theory(c: &mut Cell, value: f64) {
    c.analytic = Some(value);
    // No half-width (NaN: too few batches or messages): undetermined, neither agreeing nor not.
    c.flagged = c.ci95.is_finite().then(|| (c.mean - value).abs() > c.ci95);
}

/// Arrival packets per batch, as the engine cut them.
fn batch_packets(cfg: &SimConfig) -> u64 {
    let target = match &cfg.arrivals {
        Arrivals::Trace(v) => v.iter().map(|a| u64::from(a.len)).sum(),
        _ => cfg.packets.max(1),
    };
    (target / u64::from(cfg.batches.max(1))).max(1)
}

/// Batches a `--warmup PACKETS` deletes (the batches holding any of the first PACKETS).
pub fn warmup_batches(cfg: &SimConfig, packets: u64) -> u64 {
    packets.div_ceil(batch_packets(cfg))
}

/// Analyses one traffic level: `reps` are its replications (seeds in order), `cfg` its
/// configuration (that of the first replication).
pub fn analyse(cfg: &SimConfig, reps: &[RunResult], opt: &Options) -> LevelStats {
    let bp = batch_packets(cfg);
    let ds: Vec<usize> = reps
        .iter()
        .map(|r| match opt.warmup {
            Warmup::None => 0,
            Warmup::Packets(w) => w.div_ceil(bp) as usize,
            Warmup::Auto => mser(&r.qlen_batch_means),
        })
        .collect();
    let n = reps.len();
    let qlen = combine(
        0,
        reps.iter().zip(&ds).map(|(r, &d)| Some(estimate(&r.qlen_batch_means, d, (r.qlen_pkts, r.qlen_ci95_pkts)))).collect(),
    );
    let lens = lengths(reps);
    let nstrat = reps.first().map_or(0, |r| r.strategies.len());
    let mut strategies = Vec::new();
    for i in 0..nstrat {
        let cells = lens
            .iter()
            .copied()
            .chain(std::iter::once(0))
            .map(|len| {
                combine(
                    len,
                    reps.iter()
                        .zip(&ds)
                        .map(|(r, &d)| lat_for(r, i, len).map(|l| estimate(&l.batch_means, d, (l.mean_tu, l.ci95_tu))))
                        .collect(),
                )
            })
            .collect();
        strategies.push(StrategyCells { label: reps[0].strategies[i].label.clone(), cells });
    }

    let mut out = LevelStats {
        traffic_pct: cfg.traffic,
        replications: n,
        seeds: reps.iter().map(|r| r.seed).collect(),
        method: if n > 1 {
            format!("Student t across {n} independent replications ({} degrees of freedom)", n - 1)
        } else {
            format!("batch means ({} batches)", cfg.batches)
        },
        warmup: WarmupInfo {
            rule: match opt.warmup {
                Warmup::None => "none".into(),
                Warmup::Packets(w) => format!("the first {w} arrival packets (whole batches)"),
                Warmup::Auto => "auto: MSER on the queue-length batch means (at most half the run)".into(),
            },
            batches_deleted: ds.clone(),
            packets_deleted: ds.iter().map(|&d| d as u64 * bp).collect(),
        },
        diagnostics: Diagnostics {
            batches: cfg.batches,
            batch_packets: bp,
            packets: reps.first().map_or(0, |r| r.packets_in),
            qlen_lag1_autocorrelation: reps
                .iter()
                .zip(&ds)
                .map(|(r, &d)| lag1_autocorrelation(r.qlen_batch_means.get(d..).unwrap_or(&[])))
                .collect(),
            avlat_lag1_autocorrelation: (0..nstrat)
                .map(|i| {
                    let v = reps
                        .iter()
                        .zip(&ds)
                        .map(|(r, &d)| lag1_autocorrelation(&finite(r.strategies[i].overall.batch_means.get(d..).unwrap_or(&[]))))
                        .collect();
                    (reps[0].strategies[i].label.clone(), v)
                })
                .collect(),
            relaxation_time_tu: None,
            packets_needed: None,
        },
        qlen,
        strategies,
        theory: None,
        comparison: None,
        warnings: Vec::new(),
    };

    // Theory: Poisson arrivals of messages from a length distribution are an M^X/G/1 queue.
    let q = match cfg.arrivals {
        Arrivals::Poisson => MxG1::new(&cfg.dist, cfg.service, cfg.traffic),
        _ => None,
    };
    if let Some(q) = q {
        set_theory(&mut out.qlen, q.qlen());
        // FIFO (M^X/G/1), RR (round robin at packet granularity) and SF (SRPT at packet
        // granularity, atoms kept apart), each exact in the mean (crate::theory): per length, or averaged over each size bucket.
        let groups: Vec<(u32, u32)> = lens
            .iter()
            .map(|&l| {
                let b = reps[0].strategies.iter().flat_map(|s| s.by_len.iter()).find(|x| x.len == l).and_then(|x| x.bucket);
                b.map_or((l, l), |b| (b.low, b.high))
            })
            .collect();
        let sb = SizeBased::new(&cfg.dist, cfg.service, cfg.traffic).expect("the same load as q");
        // RR's solver runs only for a run with RR in it.
        let with_rr = out.strategies.iter().any(|s| s.label == "RR");
        let (vals, all, rr_first) = sb.by_groups(&groups, with_rr);
        let pick: [(&str, PickAnalytic); 3] = [("FIFO", |a| a.fifo), ("RR", |a| a.rr), ("SF", |a| a.sf)];
        // §11 in-order delivery holds SF's messages behind their application's earlier ones: not
        // SRPT, so no SRPT theory (FIFO and RR do not look at applications).
        let srpt = !cfg.in_order;
        for (label, f) in pick.into_iter().filter(|p| srpt || p.0 != "SF") {
            for s in out.strategies.iter_mut().filter(|s| s.label == label) {
                for c in &mut s.cells {
                    let v = if c.len == 0 {
                        f(&all)
                    } else {
                        lens.iter().position(|&l| l == c.len).map_or(f64::NAN, |i| f(&vals[i]))
                    };
                    if v.is_finite() {
                        set_theory(c, v);
                    }
                }
            }
        }
        out.theory = Some(Theory {
            model: "M^X/G/1 (Poisson messages, X = message length, S = packet service); RR: round robin by turns (exact mean-value recursion), SF: SRPT (Schrage-Miller with atoms), both at packet granularity",
            rho: q.rho,
            mean_len_pkts: q.ex,
            mean_sq_len_pkts: q.ex2,
            mean_service_tu: q.es,
            mean_sq_service_tu: q.es2,
            qlen_pkts: q.qlen(),
            fifo_first_packet_wait_tu: q.batch_wait(),
            fifo_avlat_tu: q.fifo_avlat(),
            rr_first_packet_wait_tu: rr_first,
            rr_avlat_tu: all.rr,
            sf_avlat_tu: if srpt { all.sf } else { f64::NAN },
        });
        out.diagnostics.relaxation_time_tu = Some(q.relaxation_time());
        out.diagnostics.packets_needed = Some(q.packets_needed());
    }

    // Warnings: a run short for its load, correlated batches.
    let t = fmt_g(cfg.traffic);
    let packets = out.diagnostics.packets;
    let mut needed = 0.0f64;
    if let Some(q) = q {
        if (packets as f64) < q.packets_needed() && !reps.iter().any(|r| r.interrupted) {
            needed = q.packets_needed();
            out.warnings.push(format!(
                "traffic {t}%: {} arrival packets{} is short for this load: its relaxation time is about {} time units \
                 (it grows like 1/(1-ρ)²), so steady-state means need about {} packets ({} relaxation times); these \
                 statistics still carry the start-up transient and their 95% half-widths understate the error",
                thousands(packets),
                if n > 1 { " per replication" } else { "" },
                sci(q.relaxation_time()),
                sci(needed),
                RELAXATIONS_NEEDED
            ));
        }
    }
    let r1s = finite(&out.diagnostics.qlen_lag1_autocorrelation);
    let kept = cfg.batches as usize - ds.iter().copied().max().unwrap_or(0).min(cfg.batches as usize);
    let r1 = mean(&r1s);
    if kept >= MIN_BATCHES_FOR_LAG1 && r1 > opt.max_lag1 {
        // Batch means with lag-1 correlation r behave like (1-r)/(1+r) as many independent ones.
        let factor = ((1.0 + r1) / (1.0 - r1).max(1e-3)).max(2.0);
        let want = needed.max(packets as f64 * factor);
        out.warnings.push(format!(
            "traffic {t}%: the queue-length batch means are correlated (lag-1 autocorrelation {r1:.2} over {kept} batches{}): \
             the 95% half-widths are too narrow; run about {} arrival packets{}",
            if n > 1 { ", mean over replications" } else { "" },
            sci(want),
            if n > 1 { " per replication" } else { " or use --replications" }
        ));
    }
    if let Some(base) = &opt.compare {
        out.comparison = compare(reps, &ds, base);
    }
    out
}

/// `4.3e9`-style rounding for the orders of magnitude in warnings.
pub fn sci(x: f64) -> String {
    if x < 1e5 {
        format!("{}", x.round() as u64)
    } else {
        let e = x.log10().floor() as i32;
        format!("{:.1}e{e}", x / 10f64.powi(e))
    }
}

fn pm(c: &Cell) -> String {
    if c.ci95.is_finite() {
        format!("{:.2}±{:.2}", c.mean, c.ci95)
    } else {
        format!("{:.2}±n/a", c.mean)
    }
}

impl LevelStats {
    fn lens(&self) -> Vec<u32> {
        self.strategies.first().map_or(Vec::new(), |s| s.cells.iter().map(|c| c.len).filter(|&l| l > 0).collect())
    }

    fn header(&self, prefix: &str) -> String {
        let mut h = vec![prefix.to_string(), "qlen".into()];
        h.extend(self.lens().iter().map(|l| format!("lat{l}")));
        h.push("avlat".into());
        h.join("\t")
    }

    /// Text: theory beside FIFO, steady-state means after a warm-up, paired differences, and
    /// with `verbose` the batch-means diagnostics. `brief` keeps only the paired differences.
    pub fn text(&self, brief: bool, verbose: bool) -> String {
        let mut s = String::new();
        let t = fmt_g(self.traffic_pct);
        let warm = self.warmup.batches_deleted.iter().any(|&d| d > 0);
        if !brief && warm {
            let _ = writeln!(
                s,
                "\nSteady state after the warm-up ({}; batches deleted per replication: {:?}), mean ± 95% half-width ({}), traffic {t}%:",
                self.warmup.rule, self.warmup.batches_deleted, self.method
            );
            let _ = writeln!(s, "{}", self.header("α"));
            for st in &self.strategies {
                let mut row = vec![st.label.clone(), pm(&self.qlen)];
                row.extend(st.cells.iter().map(pm));
                let _ = writeln!(s, "{}", row.join("\t"));
            }
        }
        if let (false, Some(th)) = (brief, &self.theory) {
            let _ = writeln!(
                s,
                "\nQueueing theory beside the model (M^X/G/1, ρ = {}; qlen holds for every strategy; RR: round robin, SF: SRPT, both at packet granularity): simulated ± 95% half-width and the analytic value under it, * = differs from theory by more than its half-width, ? = no half-width to judge by, traffic {t}%:",
                fmt_g(th.rho)
            );
            let _ = writeln!(s, "{}", self.header(""));
            let flag = |c: &Cell| match (c.analytic, c.flagged) {
                (_, Some(true)) => "*",
                (Some(_), None) => "?",
                _ => "",
            };
            // FIFO first, then RR and SF where they ran: the simulated row and the analytic one
            // under it; qlen (the same for every strategy) in the first of them.
            let mut any = false;
            for name in ["FIFO", "RR", "SF"] {
                let Some(st) = self.strategies.iter().find(|x| x.label == name) else { continue };
                let first = !any;
                any = true;
                let mut sim =
                    vec![name.to_string(), if first { format!("{}{}", pm(&self.qlen), flag(&self.qlen)) } else { "".into() }];
                let mut theo = vec![format!("{name} (theory)"), if first { format!("{:.2}", th.qlen_pkts) } else { "".into() }];
                for l in self.lens().into_iter().chain(std::iter::once(0)) {
                    match st.cells.iter().find(|c| c.len == l) {
                        Some(c) => {
                            sim.push(format!("{}{}", pm(c), flag(c)));
                            theo.push(c.analytic.map_or("-".into(), |a| format!("{a:.2}")));
                        }
                        None => {
                            sim.push("-".into());
                            theo.push("-".into());
                        }
                    }
                }
                let _ = writeln!(s, "{}", sim.join("\t"));
                let _ = writeln!(s, "{}", theo.join("\t"));
            }
            if !any {
                let _ = writeln!(s, "simulated\t{}{}", pm(&self.qlen), flag(&self.qlen));
                let _ = writeln!(s, "FIFO (theory)\t{:.2}", th.qlen_pkts);
            }
        }
        if let Some(c) = &self.comparison {
            s.push_str(&c.text(self.traffic_pct));
        }
        if verbose {
            let d = &self.diagnostics;
            let _ = writeln!(
                s,
                "\nBatch-means diagnostics, traffic {t}%: {} batches of {} arrival packets per replication; warm-up {} (batches deleted: {:?})",
                d.batches,
                thousands(d.batch_packets),
                self.warmup.rule,
                self.warmup.batches_deleted
            );
            let r = |v: &[f64]| v.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(",");
            let _ = writeln!(s, "lag-1 autocorrelation of the batch means: qlen {}", r(&d.qlen_lag1_autocorrelation));
            let lat: Vec<String> = d.avlat_lag1_autocorrelation.iter().map(|(l, v)| format!("{l} {}", r(v))).collect();
            let _ = writeln!(s, "  avlat: {}", lat.join("; "));
            if let (Some(rt), Some(need)) = (d.relaxation_time_tu, d.packets_needed) {
                let _ = writeln!(
                    s,
                    "relaxation time ≈ {} time units (M^X/G/1); a steady-state run needs ≈ {} arrival packets ({} relaxation times); this one has {}",
                    sci(rt),
                    sci(need),
                    RELAXATIONS_NEEDED,
                    thousands(d.packets)
                );
            }
        }
        s
    }
}
