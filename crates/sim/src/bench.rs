//! `schedlab bench`: simulator throughput in simulated arrival-stream packets per second for the
//! report's 13-strategy lock-step run, on one core or with the lanes replayed on several threads,
//! with a same-run baseline (the event loop and random numbers alone, no queue) so the figure can
//! be read as a ratio on a noisy machine. Several thread counts alternate, repetition by
//! repetition, so that their ratio (the lane-parallel scaling) is measured under the same load.

use std::time::Instant;

use crate::engine::{run_threads, Control, SimConfig};

/// One measured repetition.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchSample {
    pub wall_s: f64,
    /// CPU time of the process, all threads (excludes time spent waiting for a busy core).
    pub cpu_s: f64,
    pub packets: u64,
    /// Arrival packets per wall-clock second.
    pub rate_pps: f64,
    /// Arrival packets per CPU second of the process.
    pub cpu_rate_pps: f64,
}

/// Benchmark results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    /// Threads the lanes were replayed on.
    pub threads: usize,
    pub traffic_pct: f64,
    pub strategies: usize,
    pub packets_per_rep: u64,
    pub samples: Vec<BenchSample>,
    pub median_rate_pps: f64,
    /// Median arrival packets per CPU second (robust when other processes share the cores).
    pub median_cpu_rate_pps: f64,
    /// Per strategy lane: median rate × number of strategies.
    pub median_lane_rate_pps: f64,
    pub baseline_median_rate_pps: f64,
    /// Median rate divided by the baseline's (fraction of time not spent in queues).
    pub ratio_to_baseline: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// CPU time consumed by the calling thread, in seconds.
pub fn thread_cpu_s() -> f64 {
    cpu_clock_s(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time consumed by the whole process (all threads), in seconds.
pub fn process_cpu_s() -> f64 {
    cpu_clock_s(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn cpu_clock_s(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn time_one(cfg: &SimConfig, threads: usize) -> BenchSample {
    let ctl = Control::default();
    let c0 = process_cpu_s();
    let t0 = Instant::now();
    let r = std::hint::black_box(run_threads(std::hint::black_box(cfg), &ctl, threads));
    let wall = t0.elapsed().as_secs_f64();
    let cpu = process_cpu_s() - c0;
    BenchSample {
        wall_s: wall,
        cpu_s: cpu,
        packets: r.packets_in,
        rate_pps: r.packets_in as f64 / wall,
        cpu_rate_pps: r.packets_in as f64 / cpu,
    }
}

/// Runs `reps` timed repetitions (after one warm-up) of `cfg` for each thread count in `threads`,
/// alternating the counts and the baseline within each repetition; one result per thread count,
/// in the order given.
pub fn bench(cfg: &SimConfig, reps: usize, threads: &[usize]) -> Vec<BenchResult> {
    let threads: Vec<usize> = if threads.is_empty() { vec![1] } else { threads.iter().map(|&t| t.max(1)).collect() };
    let base_cfg = SimConfig { strategies: Vec::new(), ..cfg.clone() };
    for &t in &threads {
        let _ = time_one(&SimConfig { packets: cfg.packets / 10 + 1, ..cfg.clone() }, t);
    }
    let mut samples: Vec<Vec<BenchSample>> = threads.iter().map(|_| Vec::new()).collect();
    let mut base = Vec::new();
    for _ in 0..reps.max(1) {
        for (k, &t) in threads.iter().enumerate() {
            samples[k].push(time_one(cfg, t));
        }
        base.push(time_one(&base_cfg, 1).rate_pps);
    }
    let bmed = median(base);
    threads
        .iter()
        .zip(samples)
        .map(|(&t, samples)| {
            let med = median(samples.iter().map(|s| s.rate_pps).collect());
            let cmed = median(samples.iter().map(|s| s.cpu_rate_pps).collect());
            BenchResult {
                threads: t,
                traffic_pct: cfg.traffic,
                strategies: cfg.strategies.len(),
                packets_per_rep: cfg.packets,
                samples,
                median_rate_pps: med,
                median_cpu_rate_pps: cmed,
                median_lane_rate_pps: med * cfg.strategies.len() as f64,
                baseline_median_rate_pps: bmed,
                ratio_to_baseline: med / bmed,
            }
        })
        .collect()
}
