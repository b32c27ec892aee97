//! The clock every sample is taken with, what it costs, and the seed-shaped line prefix.
//!
//! Samples are read with `clock_gettime(CLOCK_MONOTONIC)` (the vDSO path on Linux, nanosecond
//! units). Reading a clock is not free: [`measure`] reports the cost of one read so a
//! per-operation figure can be judged against it (a 40 ns trylock sampled with a 20 ns clock is
//! mostly clock).

/// Nanoseconds on `CLOCK_MONOTONIC`: the front-end kit's one clock read.
pub use schedlab_report::frontend::now_ns;

/// Busy-waits (without sleeping) until `deadline_ns` on [`now_ns`]'s clock.
#[inline]
pub fn spin_until(deadline_ns: u64) {
    while now_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

/// What the sampling clock is and what one read of it costs, measured on this machine: the type
/// the primitives' results record (`schedlab_report::results::prims::ClockInfo`).
pub use schedlab_report::results::prims::ClockInfo;

/// Measures the clock (about 20 000 reads, well under a millisecond).
pub fn measure() -> ClockInfo {
    let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `res` is a valid, writable timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) };
    const N: usize = 10_000;
    let mut deltas = Vec::with_capacity(N);
    for _ in 0..N {
        let a = now_ns();
        let b = now_ns();
        deltas.push(b - a);
    }
    // Best of ten batches: a batch that was preempted says nothing about the clock.
    let mut sink = 0u64;
    let amortized = (0..10)
        .map(|_| {
            let start = now_ns();
            for _ in 0..N / 10 {
                sink = sink.wrapping_add(now_ns());
            }
            (now_ns() - start) as f64 / (N / 10) as f64
        })
        .fold(f64::INFINITY, f64::min);
    std::hint::black_box(sink);
    deltas.sort_unstable();
    ClockInfo {
        clock: "CLOCK_MONOTONIC (clock_gettime)".to_string(),
        resolution_ns: res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64,
        read_cost_amortized_ns: amortized,
        read_cost_p50_ns: deltas[N / 2],
        read_cost_min_ns: deltas[0],
    }
}

/// One human line about the clock.
pub fn line(c: &ClockInfo) -> String {
    format!(
        "clock: {}, resolution {} ns, one read costs {:.1} ns amortized (back-to-back p50 {} ns, min {} ns)",
        c.clock, c.resolution_ns, c.read_cost_amortized_ns, c.read_cost_p50_ns, c.read_cost_min_ns
    )
}

/// Formats like C's `printf("%.*e")`: `2.031e+08` (Rust's `{:e}` would print `2.031e8`).
pub fn c_exp(x: f64, precision: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let s = format!("{:.*e}", precision, x);
    match s.split_once('e') {
        Some((mant, exp)) => {
            let e: i32 = exp.parse().unwrap_or(0);
            format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())
        }
        None => s,
    }
}

/// Start of a run: line prefixes carry the seconds elapsed since it.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    start_ns: u64,
}

impl Default for RunClock {
    fn default() -> Self {
        Self::start()
    }
}

impl RunClock {
    /// Starts counting now.
    pub fn start() -> RunClock {
        RunClock { start_ns: now_ns() }
    }
    /// Seconds since the start.
    pub fn elapsed_s(&self) -> f64 {
        now_ns().saturating_sub(self.start_ns) as f64 / 1e9
    }
    /// The seed's prefix: `001.843513 fn_busy    [1] ` — seconds since start, the reporting function
    /// padded to 10 columns, and in brackets the CPU the reporting thread ran on (the original
    /// printed its source line number there).
    pub fn prefix(&self, func: &str, cpu: i32) -> String {
        format!("{:010.6} {:<10} [{}] ", self.elapsed_s(), func, cpu)
    }
}

/// The CPU the calling thread is running on now (-1 if it cannot be told).
pub fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu has no preconditions.
    unsafe { libc::sched_getcpu() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_exp_matches_printf() {
        assert_eq!(c_exp(2.031e8, 3), "2.031e+08");
        assert_eq!(c_exp(0.0, 6), "0.000000e+00");
        assert_eq!(c_exp(57.0, 3), "5.700e+01");
        assert_eq!(c_exp(1.5e-7, 2), "1.50e-07");
        assert_eq!(c_exp(1.0e123, 1), "1.0e+123");
    }

    #[test]
    fn clock_is_monotonic_and_cheap_enough_to_measure() {
        let c = measure();
        assert!(c.resolution_ns >= 1);
        assert!(c.read_cost_amortized_ns > 0.0);
        assert!(c.read_cost_min_ns <= c.read_cost_p50_ns);
        let a = now_ns();
        spin_until(a + 100_000);
        assert!(now_ns() - a >= 100_000);
    }

    #[test]
    fn prefix_has_seed_shape() {
        let rc = RunClock::start();
        let p = rc.prefix("fn_busy", 1);
        assert_eq!(p.len(), "000.000000 fn_busy    [1] ".len(), "{p:?}");
        assert!(p[11..].starts_with("fn_busy    [1] "), "{p:?}");
        assert_eq!(&p[3..4], ".");
    }
}
