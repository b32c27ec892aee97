//! `semtest`: wake-up latency between thread pairs.
//!
//! A pair is two threads, "marco" and "polo", and two channels of one [`Mechanism`]. Marco takes
//! a timestamp, notifies polo and waits; polo wakes, notifies marco back. In round-trip mode (the
//! original's) marco's second timestamp closes the sample: two wake-ups. In one-way mode (what
//! rt-tests' `ptsematest` measures) polo closes the sample as soon as it wakes, against marco's
//! timestamp (same clock, shared through memory). The first `warmup` iterations are not recorded.
//!
//! Where the `interval` sleep goes matters as much as the primitive. In round-trip mode marco
//! sleeps after each sample (the original), so every sample starts on a CPU that has just left
//! idle. In one-way mode polo sleeps before releasing marco (as `ptsematest`'s receiver does), so
//! marco timestamps right after being woken, on an awake CPU. On this kind of VM, where idle
//! vCPUs halt, starting from idle roughly doubles a same-core one-way wake-up (≈6.5 µs against
//! ≈3.5 µs), so the two structures are not interchangeable.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use schedlab_report::disturb::{Disturbance, Probe};
use schedlab_report::Hist;
use serde::Serialize;

use crate::chan::{Mechanism, Notifier};
use crate::clock::{current_cpu, now_ns};
use crate::place::{self, stop_requested, Gate, RtRequest, ThreadRequest};
use schedlab_report::results;

use crate::{serde_name, PrimsError};

/// What one sample measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    RoundTrip,
    OneWay,
}

/// Where the two threads of each pair run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// The original's `-a`: marco of pair c on CPU c, polo on a random permutation of the CPUs.
    Permuted,
    /// Both threads of pair c on CPU c.
    SameCore,
    /// Marco of pair c on CPU c, polo on the next CPU.
    CrossCore,
    /// No pinning (the original's `-A`).
    Unpinned,
    /// Every pair's marco on the first CPU, polo on the second.
    Fixed(usize, usize),
}

impl Placement {
    /// Parses `same-core|cross-core|unpinned|permuted|CPU:CPU`.
    pub fn parse(s: &str) -> Result<Placement, PrimsError> {
        Ok(match s {
            "same-core" | "same" => Placement::SameCore,
            "cross-core" | "cross" => Placement::CrossCore,
            "unpinned" | "none" => Placement::Unpinned,
            "permuted" | "seed" => Placement::Permuted,
            other => {
                let bad = || {
                    PrimsError::BadInput(format!(
                        "--placement '{other}': expected same-core, cross-core, unpinned, permuted or CPU:CPU (e.g. 0:1)"
                    ))
                };
                let (a, b) = other.split_once(':').ok_or_else(bad)?;
                Placement::Fixed(a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?)
            }
        })
    }
    /// Name for the output.
    pub fn describe(&self) -> String {
        match self {
            Placement::Permuted => "permuted (marco on CPU c, polo on a random permutation)".into(),
            Placement::SameCore => "same-core".into(),
            Placement::CrossCore => "cross-core".into(),
            Placement::Unpinned => "unpinned".into(),
            Placement::Fixed(a, b) => format!("{a}:{b}"),
        }
    }
}

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct SemtestConfig {
    pub pairs: usize,
    pub iterations: u64,
    pub warmup: u64,
    pub mode: Mode,
    pub primitive: Mechanism,
    pub placement: Placement,
    pub rt: Option<RtRequest>,
    pub interval_us: u64,
    pub mlockall: bool,
    pub allow_degraded: bool,
    /// Seed of the polo permutation (placement `permuted`).
    pub seed: u64,
    /// Stop after this long (`-D`), even before `iterations`.
    pub duration_ns: Option<u64>,
}

/// Mean and median of per-pair values (the original's "usvg" and "middle"): the result type's.
pub use schedlab_report::results::semtest::Global;
/// One pair's figures, in microseconds: the result type's.
pub use schedlab_report::results::semtest::SemtestPair;
/// A whole run: the result type's.
pub use schedlab_report::results::semtest::SemtestRun;

/// What [`run`] measured: the typed run (`schedlab.semtest`'s `run`) and each pair's latency
/// samples (for `--histfile`), which the result does not carry.
#[derive(Clone, Debug)]
pub struct Measured {
    pub run: SemtestRun,
    /// Per pair, in the order of `run.pairs`: the samples behind its `lat_us`, ns.
    pub hists: Vec<Hist>,
}

impl SemtestConfig {
    /// The configuration as the typed result records it.
    pub fn to_result(&self) -> results::semtest::SemtestConfig {
        use results::semtest as t;
        t::SemtestConfig {
            pairs: self.pairs,
            iterations: self.iterations,
            warmup: self.warmup,
            mode: serde_name(&self.mode),
            primitive: serde_name(&self.primitive),
            placement: match self.placement {
                Placement::Permuted => t::Placement::Permuted,
                Placement::SameCore => t::Placement::SameCore,
                Placement::CrossCore => t::Placement::CrossCore,
                Placement::Unpinned => t::Placement::Unpinned,
                Placement::Fixed(a, b) => t::Placement::Fixed(a, b),
            },
            rt: self.rt,
            interval_us: self.interval_us,
            mlockall: self.mlockall,
            allow_degraded: self.allow_degraded,
            seed: self.seed,
            duration_ns: self.duration_ns,
        }
    }
}

/// Median (mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The (Max)/(Min) summaries over per-pair values.
pub fn globals(pairs: &[SemtestPair]) -> (Global, Global) {
    let maxes: Vec<f64> = pairs.iter().filter(|p| p.lat_us.count > 0).map(|p| p.lat_us.max).collect();
    let mins: Vec<f64> = pairs.iter().filter(|p| p.lat_us.count > 0).map(|p| p.lat_us.min).collect();
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    (
        Global { value_us: maxes.iter().copied().fold(0.0, f64::max), avg_us: mean(&maxes), middle_us: median(&maxes) },
        Global {
            value_us: if mins.is_empty() { 0.0 } else { mins.iter().copied().fold(f64::INFINITY, f64::min) },
            avg_us: mean(&mins),
            middle_us: median(&mins),
        },
    )
}

/// A small deterministic permutation (splitmix64 + Fisher-Yates).
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// CPU requests of one pair: (marco, polo); `None` = not pinned.
pub type PairCpus = (Option<usize>, Option<usize>);

/// CPU requests (marco, polo) of each pair; refuses impossible placements.
pub fn pair_cpus(cfg: &SemtestConfig, cpus: &[usize]) -> Result<Vec<PairCpus>, PrimsError> {
    if cfg.pairs == 0 {
        return Err(PrimsError::BadInput("-n 0: at least one pair of threads is needed".into()));
    }
    let pinned_per_cpu = matches!(cfg.placement, Placement::Permuted | Placement::SameCore | Placement::CrossCore);
    if pinned_per_cpu && cfg.pairs > cpus.len() {
        return Err(PrimsError::BadInput(format!(
            "-n {}: one pair per CPU with pinning, but only {} CPUs are available ({cpus:?}); use -n {} or fewer, or -A / --placement unpinned",
            cfg.pairs,
            cpus.len(),
            cpus.len()
        )));
    }
    if cfg.placement == Placement::CrossCore && cpus.len() < 2 {
        return Err(PrimsError::BadInput("--placement cross-core needs at least 2 CPUs".into()));
    }
    let perm = permutation(cfg.pairs, cfg.seed);
    let n = cpus.len();
    Ok((0..cfg.pairs)
        .map(|c| match cfg.placement {
            Placement::Permuted => (Some(cpus[c]), Some(cpus[perm[c]])),
            Placement::SameCore => (Some(cpus[c]), Some(cpus[c])),
            Placement::CrossCore => (Some(cpus[c]), Some(cpus[(c + 1) % n])),
            Placement::Unpinned => (None, None),
            Placement::Fixed(a, b) => (Some(a), Some(b)),
        })
        .collect())
}

struct Pair {
    to_polo: Box<dyn Notifier>,
    to_marco: Box<dyn Notifier>,
    sent_at: AtomicU64,
    done: AtomicBool,
}

fn marco(p: &Pair, cfg: &SemtestConfig, c: usize) -> std::io::Result<Side> {
    let mut h = Hist::new();
    let mut probe = Probe::start(now_ns());
    let total = cfg.warmup.saturating_add(cfg.iterations);
    let interval = std::time::Duration::from_micros(cfg.interval_us);
    let deadline = cfg.duration_ns.map(|d| now_ns().saturating_add(d));
    let mut result = Ok(());
    for i in 0..total {
        if stop_requested() || deadline.is_some_and(|d| now_ns() >= d) {
            break;
        }
        let t0 = now_ns();
        p.sent_at.store(t0, Ordering::Release);
        if let Err(e) = p.to_polo.notify().and_then(|_| p.to_marco.wait()) {
            result = Err(e);
            break;
        }
        let t1 = now_ns();
        probe.tick(t1);
        if cfg.mode == Mode::RoundTrip && i >= cfg.warmup {
            h.record(t1 - t0);
        }
        if cfg.mode == Mode::RoundTrip && cfg.interval_us > 0 {
            std::thread::sleep(interval);
        }
    }
    p.done.store(true, Ordering::SeqCst);
    let _ = p.to_polo.notify();
    result.map(|_| (h, current_cpu(), probe.finish(&format!("marco {c}"))))
}

fn polo(p: &Pair, cfg: &SemtestConfig, c: usize) -> std::io::Result<Side> {
    let mut h = Hist::new();
    let mut probe = Probe::start(now_ns());
    let interval = std::time::Duration::from_micros(cfg.interval_us);
    let mut seen = 0u64;
    loop {
        p.to_polo.wait()?;
        let t = now_ns();
        probe.tick(t);
        if p.done.load(Ordering::SeqCst) {
            break;
        }
        if cfg.mode == Mode::OneWay && seen >= cfg.warmup {
            h.record(t.saturating_sub(p.sent_at.load(Ordering::Acquire)));
        }
        seen += 1;
        if cfg.mode == Mode::OneWay && cfg.interval_us > 0 {
            std::thread::sleep(interval);
        }
        p.to_marco.notify()?;
    }
    Ok((h, current_cpu(), probe.finish(&format!("polo {c}"))))
}

/// One thread's samples, its CPU at the end, what disturbed it.
type Side = (Hist, i32, Disturbance);
type Outcome = Option<std::io::Result<Side>>;

/// Runs the pairs. `Err(Degraded)` before measuring when pinning, the RT policy or mlockall
/// was asked for and refused (unless `allow_degraded`).
pub fn run(cfg: &SemtestConfig) -> Result<Measured, PrimsError> {
    let cpus = schedlab_report::machine::online_cpus();
    let placement = pair_cpus(cfg, &cpus)?;
    if cfg.iterations == 0 {
        return Err(PrimsError::BadInput("-i 0: at least one iteration is needed".into()));
    }
    if let Some(rt) = cfg.rt {
        if !(1..=99).contains(&rt.priority) {
            return Err(PrimsError::BadInput(format!("-p {}: real-time priorities are 1 to 99", rt.priority)));
        }
    }
    let requested: Vec<(&str, usize)> = placement
        .iter()
        .flat_map(|(a, b)| [("--placement", *a), ("--placement", *b)])
        .filter_map(|(w, c)| c.map(|c| (w, c)))
        .collect();
    place::check_cpus(requested)?;
    let pairs: Vec<Arc<Pair>> = (0..cfg.pairs)
        .map(|_| {
            Ok(Arc::new(Pair {
                to_polo: cfg.primitive.create()?,
                to_marco: cfg.primitive.create()?,
                sent_at: AtomicU64::new(0),
                done: AtomicBool::new(false),
            }))
        })
        .collect::<Result<_, PrimsError>>()?;
    let mlock = place::mlockall(cfg.mlockall);
    let extra: Vec<String> = mlock.error.iter().cloned().collect();
    let gate = Arc::new(Gate::new(2 * cfg.pairs, cfg.allow_degraded));
    let start = now_ns();
    let mut handles = Vec::new();
    for (c, pair) in pairs.iter().enumerate() {
        for (k, role) in ["marco", "polo"].into_iter().enumerate() {
            let cpu = if k == 0 { placement[c].0 } else { placement[c].1 };
            let req = ThreadRequest { role: format!("{role} {c}"), cpu, rt: cfg.rt };
            let (pair, gate2, cfg2) = (pair.clone(), gate.clone(), cfg.clone());
            let h = std::thread::Builder::new()
                .name(format!("{role}-{c}"))
                .spawn(move || -> Outcome {
                    gate2.enter(2 * c + k, &req)?;
                    Some(if k == 0 { marco(&pair, &cfg2, c) } else { polo(&pair, &cfg2, c) })
                })
                .map_err(|e| PrimsError::Os { what: "spawning a thread", err: e });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Send the threads already started home, then report.
                    gate.cancel();
                    for h in handles {
                        let _ = h.join();
                    }
                    place::munlockall(&mlock);
                    return Err(e);
                }
            }
        }
    }
    let verdict = gate.verdict(&extra);
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.push(h.join().map_err(|_| PrimsError::Worker("a semtest thread panicked".into()))?);
    }
    let duration_s = (now_ns() - start) as f64 / 1e9;
    place::munlockall(&mlock);
    let threads = verdict?;
    let (mut pairs, mut hists) = (Vec::new(), Vec::new());
    let mut all = Hist::new();
    for (c, chunk) in outcomes.chunks(2).enumerate() {
        let get = |o: &Outcome| -> Result<Side, PrimsError> {
            match o {
                Some(Ok((h, cpu, d))) => Ok((h.clone(), *cpu, d.clone())),
                Some(Err(e)) => {
                    Err(PrimsError::Os { what: "pair notification", err: std::io::Error::new(e.kind(), e.to_string()) })
                }
                None => Err(PrimsError::Worker("a semtest thread did not run".into())),
            }
        };
        let ((hm, cm, dm), (hp, cp, dp)) = (get(&chunk[0])?, get(&chunk[1])?);
        let hist = if cfg.mode == Mode::RoundTrip { hm } else { hp };
        all.merge(&hist);
        pairs.push(SemtestPair {
            index: c,
            marco_cpu_requested: placement[c].0,
            polo_cpu_requested: placement[c].1,
            marco_cpu_at_end: cm,
            polo_cpu_at_end: cp,
            lat_us: hist.summary(1000.0),
            marco_disturbance: dm,
            polo_disturbance: dp,
        });
        hists.push(hist);
    }
    let (max_global, min_global) = globals(&pairs);
    let run = SemtestRun {
        config: cfg.to_result(),
        degraded: place::degraded_lines(&threads, &extra),
        mlock,
        threads,
        pairs,
        max_global,
        min_global,
        all_lat_us: all.summary(1000.0),
        duration_s,
        interrupted: stop_requested(),
    };
    Ok(Measured { run, hists })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg(pairs: usize, mode: Mode, placement: Placement) -> SemtestConfig {
        SemtestConfig {
            pairs,
            iterations: 300,
            warmup: 10,
            mode,
            primitive: Mechanism::Sem,
            placement,
            rt: None,
            interval_us: 0,
            mlockall: false,
            allow_degraded: false,
            seed: 7,
            duration_ns: None,
        }
    }

    #[test]
    fn duration_ends_an_unbounded_run() {
        let mut c = cfg(1, Mode::RoundTrip, Placement::Unpinned);
        c.iterations = u64::MAX;
        c.interval_us = 100;
        c.duration_ns = Some(100_000_000);
        let t = std::time::Instant::now();
        let r = run(&c).unwrap().run;
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(r.pairs[0].lat_us.count > 10, "{:?}", r.pairs[0].lat_us);
        assert!(!r.interrupted);
    }

    #[test]
    fn both_modes_record_every_iteration() {
        for mode in [Mode::RoundTrip, Mode::OneWay] {
            for m in [Mechanism::Sem, Mechanism::Futex, Mechanism::Pipe] {
                let mut c = cfg(1, mode, Placement::Unpinned);
                c.primitive = m;
                let r = run(&c).unwrap().run;
                assert_eq!(r.pairs[0].lat_us.count, 300, "{mode:?} {m}");
                assert!(r.pairs[0].lat_us.min > 0.0);
                assert!(r.min_global.value_us <= r.max_global.value_us);
            }
        }
    }

    #[test]
    fn round_trip_is_not_shorter_than_one_way_at_the_median() {
        // Two wake-ups against one, same placement. The two modes run alternately, seven short
        // runs each, so a busy spell of the machine lands on both; the medians of their p50s are
        // compared, with slack for a noisy VM.
        let (mut rt, mut ow) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            rt.push(run(&cfg(1, Mode::RoundTrip, Placement::SameCore)).unwrap().run.pairs[0].lat_us.p50);
            ow.push(run(&cfg(1, Mode::OneWay, Placement::SameCore)).unwrap().run.pairs[0].lat_us.p50);
        }
        let (rt_p50, ow_p50) = (median(&rt), median(&ow));
        assert!(rt_p50 * 1.5 >= ow_p50, "round trip p50s {rt:?}, one way p50s {ow:?}");
    }

    #[test]
    fn same_core_placement_is_read_back() {
        let cpus = schedlab_report::machine::online_cpus();
        let r = run(&cfg(1, Mode::OneWay, Placement::SameCore)).unwrap().run;
        assert_eq!(r.pairs[0].marco_cpu_at_end as usize, cpus[0]);
        assert_eq!(r.pairs[0].polo_cpu_at_end as usize, cpus[0]);
        assert!(r.threads.iter().all(|t| t.got.allowed_cpus == vec![cpus[0]]));
    }

    #[test]
    fn impossible_requests_are_refused() {
        let n = schedlab_report::machine::online_cpus().len();
        let e = pair_cpus(&cfg(n + 1, Mode::OneWay, Placement::Permuted), &(0..n).collect::<Vec<_>>()).unwrap_err();
        assert!(e.to_string().contains("only"), "{e}");
        assert!(pair_cpus(&cfg(0, Mode::OneWay, Placement::Unpinned), &[0]).is_err());
        assert!(run(&cfg(1, Mode::OneWay, Placement::Fixed(0, 4000))).unwrap_err().to_string().contains("4000"));
        assert!(Placement::parse("0:x").is_err());
        assert_eq!(Placement::parse("1:0").unwrap(), Placement::Fixed(1, 0));
    }

    #[test]
    fn min_global_is_the_smallest_minimum() {
        let mk = |min: f64, max: f64| SemtestPair {
            index: 0,
            marco_cpu_requested: None,
            polo_cpu_requested: None,
            marco_cpu_at_end: 0,
            polo_cpu_at_end: 0,
            lat_us: schedlab_report::Summary { count: 1, min, max, ..Default::default() },
            marco_disturbance: Probe::start(0).finish("marco 0"),
            polo_disturbance: Probe::start(0).finish("polo 0"),
        };
        let (mx, mn) = globals(&[mk(5.0, 303.0), mk(4.0, 173.0), mk(6.0, 154.0)]);
        assert_eq!(mn.value_us, 4.0);
        assert_eq!(mx.value_us, 303.0);
        assert_eq!(mn.middle_us, 5.0);
        assert!((mx.avg_us - 210.0).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn permutation_is_a_permutation(n in 1usize..64, seed in any::<u64>()) {
            let mut p = permutation(n, seed);
            p.sort_unstable();
            prop_assert_eq!(p, (0..n).collect::<Vec<_>>());
        }

        #[test]
        fn median_lies_between_min_and_max(v in proptest::collection::vec(0.0f64..1e6, 1..50)) {
            let m = median(&v);
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            prop_assert!(lo <= m && m <= hi);
        }
    }
}
