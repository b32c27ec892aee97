//! The harness's clock: nanoseconds on the `CLOCK_MONOTONIC` time line, read on the hot paths
//! (every client loop iteration, two reads per scheduler pass) with one `rdtscp` instead of a
//! `clock_gettime` call when the kernel itself keeps time with the TSC.
//!
//! Measured on the 2-vCPU VM of the cross-check: `clock_gettime(CLOCK_MONOTONIC)` costs 28.6 ns
//! a call, `rdtsc` 11.3 ns; in a profile of `schedlab sched` with 60-byte packets the clock was a
//! third of the client's time and a quarter of the scheduler's. The original (PSPAT `sched`)
//! reads the TSC directly.
//!
//! - The TSC is used only on x86_64 and only when the kernel's current clocksource is `tsc`: the
//!   kernel then vouches that it is invariant and synchronised across CPUs (it checks both
//!   before it selects it). Otherwise [`Clock::now`] is `clock_gettime(CLOCK_MONOTONIC)`
//!   ([`schedlab_report::frontend::now_ns`]).
//! - Calibration, once per process: two (TSC, `CLOCK_MONOTONIC`) pairs 10 ms apart, each pair
//!   the narrowest of a few `rdtscp` brackets around one `clock_gettime`; the scale is kept in
//!   2^-32 ns per tick and anchored at the second pair. A bracket is about 50 ns wide, so the scale
//!   is exact to about 10 ppm: over a 1 s run the readings stay within about 10 µs of
//!   `CLOCK_MONOTONIC`; every duration the harness measures comes from this one clock.
//! - `rdtscp` waits until every earlier instruction has executed and earlier loads are globally
//!   visible, so a clock read placed after a load that saw the other side's store reads a later
//!   time than the other side's read before that store (the ordering the harness's timestamp
//!   discipline relies on; `rdtsc` alone could execute before the load).
//! - [`Clock::now_unordered`] is a plain `rdtsc`, for the one read whose user checks the value
//!   against what it loaded (the scheduler's visit read, `sch_enq`: a message stamped later stays
//!   in its ring for the next visit), so that read does not wait for the ring's cache misses.

use std::sync::OnceLock;

use schedlab_report::frontend::now_ns;

/// A calibrated clock (a small `Copy` value: each thread keeps its own copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    tsc: bool,
    tsc0: u64,
    ns0: u64,
    /// Nanoseconds per tick, 2^-32 units.
    mult: u64,
}

impl Clock {
    /// The process's clock (calibrated on first use, about 10 ms).
    pub fn get() -> Clock {
        static CLOCK: OnceLock<Clock> = OnceLock::new();
        *CLOCK.get_or_init(Clock::calibrate)
    }

    /// `clock_gettime(CLOCK_MONOTONIC)` only (for tests and as the fallback).
    pub fn monotonic() -> Clock {
        Clock { tsc: false, tsc0: 0, ns0: 0, mult: 0 }
    }

    /// The source: `"tsc"` or `"clock_gettime"`.
    pub fn source(&self) -> &'static str {
        if self.tsc {
            "tsc"
        } else {
            "clock_gettime"
        }
    }

    fn calibrate() -> Clock {
        if !tsc_is_kernel_clocksource() {
            return Clock::monotonic();
        }
        let Some((t0, n0)) = pair() else { return Clock::monotonic() };
        std::thread::sleep(std::time::Duration::from_millis(10));
        let Some((t1, n1)) = pair() else { return Clock::monotonic() };
        if t1 <= t0 || n1 <= n0 {
            return Clock::monotonic();
        }
        let mult = ((u128::from(n1 - n0) << 32) / u128::from(t1 - t0)).min(u128::from(u64::MAX)) as u64;
        Clock { tsc: true, tsc0: t1, ns0: n1, mult }
    }

    /// Nanoseconds on the `CLOCK_MONOTONIC` time line, read after every earlier instruction
    /// (`rdtscp`; see the module documentation).
    #[inline(always)]
    pub fn now(&self) -> u64 {
        if self.tsc {
            self.scale(rdtscp())
        } else {
            now_ns()
        }
    }

    /// Like [`Clock::now`] but without waiting for earlier instructions (`rdtsc`): the read may
    /// execute before loads that precede it in the program. For a caller that checks what it
    /// read against the value (the scheduler's visit read: `Consumer::take` leaves a message
    /// stamped later than it in the ring).
    #[inline(always)]
    pub fn now_unordered(&self) -> u64 {
        if self.tsc {
            self.scale(rdtsc())
        } else {
            now_ns()
        }
    }

    #[inline(always)]
    fn scale(&self, tsc: u64) -> u64 {
        // A TSC below the anchor (another CPU's reading a few ticks behind, right after
        // calibration) reads as the anchor.
        let d = tsc.saturating_sub(self.tsc0);
        self.ns0 + ((u128::from(d) * u128::from(self.mult)) >> 32) as u64
    }
}

/// The kernel keeps time with the TSC (x86_64 only).
fn tsc_is_kernel_clocksource() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc")
}

/// The narrowest of five `rdtscp` brackets around one `clock_gettime`: (bracket middle, ns).
fn pair() -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..5 {
        let a = rdtscp();
        let n = now_ns();
        let b = rdtscp();
        if b < a {
            continue;
        }
        if best.is_none_or(|(w, _, _)| b - a < w) {
            best = Some((b - a, a + (b - a) / 2, n));
        }
    }
    best.map(|(_, t, n)| (t, n))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` only reads the time-stamp counter and IA32_TSC_AUX into registers; it is
    // used only when the kernel's clocksource is the TSC, which implies the CPU has it.
    unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtscp() -> u64 {
    0
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` only reads the time-stamp counter into registers; used only when the
    // kernel's clocksource is the TSC, which implies the CPU has it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock follows `CLOCK_MONOTONIC`: monotonic on one thread, and within 100 µs of it
    /// over 50 ms (far wider than the calibration's error, far narrower than a wrong scale).
    #[test]
    fn follows_clock_monotonic() {
        let c = Clock::get();
        let (a, ma) = (c.now(), now_ns());
        let mut last = a;
        for _ in 0..100_000 {
            let t = c.now();
            assert!(t >= last, "{} clock went back: {last} then {t}", c.source());
            last = t;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (b, mb) = (c.now(), now_ns());
        let (d, md) = (b - a, mb - ma);
        assert!(d.abs_diff(md) < 100_000, "{}: {d} ns against CLOCK_MONOTONIC's {md} ns", c.source());
        assert!(c.now().abs_diff(now_ns()) < 1_000_000, "on the CLOCK_MONOTONIC time line");
        assert_eq!(Clock::monotonic().source(), "clock_gettime");
    }
}
