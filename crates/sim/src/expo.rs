//! Exponential variates by the ziggurat method (Marsaglia & Tsang, "The Ziggurat Method for
//! Generating Random Variables", J. Stat. Softw. 5(8), 2000), inlined into the path generator.
//!
//! The generator draws about 1.2 exponentials per simulated packet (one service time per packet,
//! one gap per message), so this is on the hot path. The density `e^-x` is covered by 1024
//! strips of equal area `V`: strip 0 is the base rectangle plus the tail beyond `R`, strips
//! 1..1023 are rectangles under the curve. One 64-bit draw picks the strip (low 10 bits) and a
//! position in it (top 53 bits); 99.36% of draws land inside the strip's inner rectangle and
//! return after one multiply and one compare (the mean of `x[i+1]/x[i]` over the strips). With
//! Marsaglia and Tsang's 256 strips it was 97.78%: the slow path's mispredicted branch and
//! wedge test, for one draw in 45, cost more than the fast path itself. 1024 strips keep the
//! fast path's two tables in 16 kB, within the L1 cache. The rest fall back to an exact rejection test, or for strip 0 to
//! `R + Exp(1)` (the tail is memoryless). The result is exactly Exp(1) distributed up to the
//! 53-bit resolution of the position; the tests below check moments, the tail and a KS distance.

use rand::{Rng, RngCore};

/// Number of strips (a power of two: the strip is the draw's low bits).
const STRIPS: usize = 1024;
/// Right edge of the last full strip: the `R` for which [`STRIPS`] strips of area
/// `V = e^-R (R + 1)` close the density exactly (solved to 25 digits with mpmath; the test
/// `tables_close_the_ziggurat` checks the closure).
const R: f64 = 9.256_164_544_265_543;
/// Area of each strip.
const V: f64 = 0.000_979_678_990_662_020_9;
const SCALE: f64 = 1.0 / (1u64 << 53) as f64;

/// Strip tables: `x[i]` is the right edge of strip `i` (kept halved, as `half_x`; `x[0]` the base's effective width,
/// `x[1] = R`, decreasing to `x[STRIPS] = 0`), `f[i] = e^-x[i]`.
#[derive(Clone, Debug)]
pub struct Ziggurat {
    f: [f64; STRIPS + 1],
    /// The fast path's two tables, both halved: `half_scaled[i] = x[i] * 2^-54` (the position's
    /// scale folded into the edge) and `half_x[i] = x[i] / 2`. Scaling by a power of two is exact,
    /// so `pos * half_scaled[i]` is exactly half of `pos * 2^-53 * x[i]` rounded, and comparing it
    /// with `half_x[i + 1]` decides as comparing the whole with `x[i + 1]`: the fast path yields
    /// X/2 for the draw X with no multiplication, which the report's service time 0.5 + 0.5·X
    /// wants, and [`Ziggurat::sample`] doubles it back (exactly) for everything else.
    half_scaled: [f64; STRIPS + 1],
    half_x: [f64; STRIPS + 1],
    /// Per strip `i` in 1..STRIPS, the bounds that decide most wedge tests without `exp` (see
    /// [`Wedge`]); entry 0 is unused (strip 0's slow path is the tail).
    wedge: [Wedge; STRIPS],
}

/// The linear bounds of one strip's wedge test. On strip `i` the slow path has a point `(x, y)`
/// with `x` in `[a, b] = [x[i+1], x[i]]` and `y` in `[f[i], f[i+1]]`, and accepts it when
/// `y < exp(-x)` (the float `exp`). `e^-x` is convex, so on `[a, b]` it lies below its chord
/// `c(x) = e^-b + m (x - b)` through `(a, e^-a)` and `(b, e^-b)`, and above `c(x) - gap`, where
/// `gap` is the chord's largest height above the curve (at the point where the curve's slope is
/// `m`: the chord minus `gap` is the tangent parallel to the chord). With
/// `s = y - (fb + m (x - b))` computed in floats, the test is decided without `exp` when
/// `s >= hi` (above the chord: rejected) or `s < lo` (below the parallel tangent: accepted); only
/// the band between, a few percent of the wedge's points, calls `exp`.
///
/// Why the decision is the exact test's, bit for bit: let `eb = e^-b`, the smallest value of the
/// curve on the strip. Every quantity in `s` (`y`, `fb`, `|m (x - b)| <= e^-a - e^-b`, the chord)
/// is at most `e^-a <= 4 eb`, and `e^-a - e^-b >= e^-a / 512` (both checked for every strip by
/// `wedge_bounds_are_well_conditioned`). So: `fb` and the endpoint values are within 1 ulp of
/// their reals (glibc's `exp` is within 1 ulp), `m` within a relative `2^-52 * 2 * 512 * 2 =
/// 2^-41` (the cancellation in `e^-a - e^-b` costs at most a factor 512), `x - b` within half an
/// ulp of `b`, and the product and three sums add at most 4 half-ulps of quantities `<= 4 eb`:
/// the computed `s` is within `2^-38 eb` of the real `y - c(x)`. The computed `gap` is within
/// `2^-38 eb` of the real one as well (its evaluation point is off by a few ulps, at a maximum:
/// a second-order change). The margins are `hi = 2^-24 eb` and `lo = -(gap + 2^-24 eb)`, so
///
/// * `s >= hi` gives `y >= c(x) + 2^-24 eb - 2^-38 eb > e^-x + 2^-25 eb`, and the float
///   `exp(-x) <= e^-x (1 + 2^-52) <= e^-x + 2^-50 eb`: `y < exp(-x)` is false;
/// * `s < lo` gives `y < c(x) - gap - 2^-24 eb + 2^-37 eb <= e^-x - 2^-25 eb`, and the float
///   `exp(-x) >= e^-x - 2^-50 eb`: `y < exp(-x)` is true.
///
/// `wedge_decides_as_exp` checks it on millions of points, many right at `hi`, `lo` and the curve.
#[derive(Clone, Copy, Debug, Default)]
struct Wedge {
    /// `x[i]`, the strip's right edge, and `exp(-x[i])`.
    b: f64,
    fb: f64,
    /// The chord's slope (negative).
    m: f64,
    /// Below it, `s` accepts; at or above `hi`, it rejects.
    lo: f64,
    hi: f64,
}

impl Wedge {
    fn new(a: f64, b: f64) -> Self {
        let (fa, fb) = ((-a).exp(), (-b).exp());
        let m = (fa - fb) / (a - b);
        // The curve's slope -e^-x equals m at x = -ln(-m), inside [a, b] (mean value theorem).
        let at = (-(-m).ln()).clamp(a, b);
        let gap = (fb + m * (at - b) - (-at).exp()).max(0.0);
        let margin = fb * (1.0 / (1u64 << 24) as f64);
        Wedge { b, fb, m, lo: -(gap + margin), hi: margin }
    }
}

impl Default for Ziggurat {
    fn default() -> Self {
        Self::new()
    }
}

impl Ziggurat {
    /// The tables, built once per process.
    pub fn shared() -> &'static Ziggurat {
        static TABLES: std::sync::OnceLock<Ziggurat> = std::sync::OnceLock::new();
        TABLES.get_or_init(Ziggurat::new)
    }

    /// Builds the tables (about 1024 logarithms).
    pub fn new() -> Self {
        let mut x = [0.0; STRIPS + 1];
        let mut f = [0.0; STRIPS + 1];
        x[1] = R;
        f[1] = (-R).exp();
        x[0] = V / f[1];
        f[0] = 0.0;
        for i in 1..STRIPS - 1 {
            // Strip i spans [0, x[i]] × [f[i], f[i+1]] with area V.
            f[i + 1] = V / x[i] + f[i];
            x[i + 1] = -f[i + 1].ln();
        }
        x[STRIPS] = 0.0;
        f[STRIPS] = 1.0;
        let half_scaled = x.map(|e| e * (0.5 * SCALE));
        let half_x = x.map(|e| 0.5 * e);
        let mut wedge = [Wedge::default(); STRIPS];
        for i in 1..STRIPS {
            wedge[i] = Wedge::new(x[i + 1], x[i]);
        }
        Ziggurat { f, half_scaled, half_x, wedge }
    }

    /// One Exp(1) variate.
    #[inline(always)]
    pub fn sample<G: RngCore + Clone>(&self, rng: &mut G) -> f64 {
        2.0 * self.sample_half(rng)
    }

    /// Half of one Exp(1) variate, exactly: the same draw as [`Ziggurat::sample`], halved.
    #[inline(always)]
    pub fn sample_half<G: RngCore + Clone>(&self, rng: &mut G) -> f64 {
        loop {
            let bits = rng.next_u64();
            let i = (bits & (STRIPS as u64 - 1)) as usize;
            let h = (bits >> 11) as f64 * self.half_scaled[i];
            if h < self.half_x[i + 1] {
                return h;
            }
            // The rare slow path takes the random state by value and hands it back: the state
            // never has its address taken, so a caller's loop keeps it in registers (through
            // memory, it put a store-to-load round trip on every draw's chain).
            let (v, next) = self.slow(rng.clone(), i, 2.0 * h);
            *rng = next;
            if let Some(v) = v {
                return 0.5 * v;
            }
        }
    }

    /// The draw of strip `i` at `x` fell outside the strip's inner rectangle: the tail (strip 0)
    /// or the rejection test; `None` when rejected. Returns the random state it leaves.
    #[cold]
    #[inline(never)]
    fn slow<G: RngCore>(&self, mut rng: G, i: usize, x: f64) -> (Option<f64>, G) {
        let u: f64 = rng.random();
        let v = if i == 0 {
            // The tail beyond R: R + Exp(1), by inversion (1 - u is in (0, 1]).
            Some(R - (1.0 - u).ln())
        } else if self.under(i, x, u) {
            Some(x)
        } else {
            None
        };
        (v, rng)
    }

    /// The wedge test of strip `i` (1..STRIPS) at `x` (in `[x[i+1], x[i]]`) with height fraction `u`:
    /// whether the point is under the curve, `y < exp(-x)` for `y = f[i] + u (f[i+1] - f[i])`;
    /// decided by the linear bounds of [`Wedge`] unless the point lies in the thin band between
    /// them (then by `exp`, as before). The same answer as [`Ziggurat::under_exact`] always.
    #[inline]
    fn under(&self, i: usize, x: f64, u: f64) -> bool {
        let y = self.f[i] + u * (self.f[i + 1] - self.f[i]);
        let w = &self.wedge[i];
        let s = y - (w.fb + w.m * (x - w.b));
        if s >= w.hi {
            false
        } else if s < w.lo {
            true
        } else {
            y < (-x).exp()
        }
    }

    /// `x[i]`, the right edge of strip `i`.
    #[cfg(test)]
    fn x(&self, i: usize) -> f64 {
        2.0 * self.half_x[i]
    }

    /// The wedge test by `exp` alone (the reference for [`Ziggurat::under`]).
    #[cfg(test)]
    fn under_exact(&self, i: usize, x: f64, u: f64) -> bool {
        self.f[i] + u * (self.f[i + 1] - self.f[i]) < (-x).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn tables_close_the_ziggurat() {
        let z = Ziggurat::new();
        // The last computed strip's top lands on 1: the strips above the base fill the density.
        let last = STRIPS - 1;
        assert!(z.x(last) > 0.0 && z.x(last) < 0.05, "x[{last}] = {}", z.x(last));
        let top = V / z.x(last) + z.f[last];
        assert!((top - 1.0).abs() < 1e-12, "the last strip's top is {top}");
        for i in 1..STRIPS {
            assert!(z.x(i) > z.x(i + 1), "edges decrease at {i}");
        }
        // Base strip: rectangle up to R plus the tail, area V.
        let base = R * z.f[1] + z.f[1];
        assert!((base - V).abs() < 1e-12, "base area {base}");
    }

    #[test]
    fn moments_tail_and_distribution_match_exp1() {
        let z = Ziggurat::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
        let n = 2_000_000;
        let mut v: Vec<f64> = (0..n).map(|_| z.sample(&mut rng)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        // Standard errors: 1/sqrt(n) = 0.0007 for the mean, sqrt(8/n) = 0.002 for the variance.
        assert!((mean - 1.0).abs() < 0.004, "mean {mean}");
        assert!((var - 1.0).abs() < 0.012, "variance {var}");
        let beyond = |t: f64| v.iter().filter(|&&x| x > t).count() as f64 / n as f64;
        for t in [0.5f64, 1.0, 3.0, 6.0] {
            let p = (-t).exp();
            let se = (p * (1.0 - p) / n as f64).sqrt();
            assert!((beyond(t) - p).abs() < 5.0 * se, "P(X > {t}) = {} vs {p}", beyond(t));
        }
        assert!(v.iter().all(|&x| x >= 0.0 && x.is_finite()));
        // Kolmogorov–Smirnov distance against 1 - e^-x; the 0.1% critical value is 1.95/sqrt(n).
        v.sort_by(f64::total_cmp);
        let d = v
            .iter()
            .enumerate()
            .map(|(k, &x)| {
                let c = 1.0 - (-x).exp();
                (c - k as f64 / n as f64).abs().max(((k + 1) as f64 / n as f64 - c).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 1.95 / (n as f64).sqrt(), "KS distance {d}");
    }

    /// The folded scale changes no draw: for every strip and positions across the 53 bits
    /// (random ones, and the extremes), one product gives the bits the two products gave.
    #[test]
    fn folded_scale_gives_the_same_draws() {
        let z = Ziggurat::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        let extremes = [0u64, 1, 2, (1 << 52) - 1, 1 << 52, (1 << 53) - 1];
        for i in 0..=STRIPS {
            let random = (0..20_000).map(|_| rng.next_u64() >> 11);
            for pos in extremes.into_iter().chain(random) {
                let two = pos as f64 * SCALE * z.x(i);
                let one = pos as f64 * z.half_scaled[i];
                assert_eq!((0.5 * two).to_bits(), one.to_bits(), "strip {i}, position {pos}");
                assert_eq!(two < z.x((i + 1).min(STRIPS)), one < z.half_x[(i + 1).min(STRIPS)], "strip {i}, position {pos}");
            }
        }
    }

    /// The conditions [`Wedge`]'s error bound rests on, for every strip.
    #[test]
    fn wedge_bounds_are_well_conditioned() {
        let z = Ziggurat::new();
        for i in 1..STRIPS {
            let (a, b) = (z.x(i + 1), z.x(i));
            let (fa, fb) = ((-a).exp(), (-b).exp());
            assert!(fa <= 4.0 * fb, "strip {i}: e^-a {fa} > 4 e^-b {fb}");
            assert!(fa - fb >= fa / 512.0, "strip {i}: e^-a - e^-b = {} < e^-a / 512", fa - fb);
            // The strip's heights lie between the curve's values at its edges (to within an ulp).
            assert!(z.f[i] >= fb * (1.0 - 1e-15) && z.f[i + 1] <= fa * (1.0 + 1e-15), "strip {i}");
            let w = &z.wedge[i];
            assert!(w.lo < 0.0 && w.hi > 0.0 && w.m < 0.0, "strip {i}: {w:?}");
        }
    }

    /// The bounded wedge test decides as the test by `exp` alone: for every strip, at random
    /// points, at the strip's corners, and at heights within a few hundred ulps of the two bounds
    /// and of the curve (where a wrong margin would show). Also reports how rarely `exp` is needed.
    #[test]
    fn wedge_decides_as_exp() {
        let z = Ziggurat::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(23);
        let (mut n, mut random, mut band) = (0u64, 0u64, 0u64);
        let mut check = |i: usize, x: f64, u: f64| {
            if !(0.0..1.0).contains(&u) {
                return false;
            }
            assert_eq!(z.under(i, x, u), z.under_exact(i, x, u), "strip {i}, x {x:e}, u {u:e}");
            n += 1;
            let w = &z.wedge[i];
            let y = z.f[i] + u * (z.f[i + 1] - z.f[i]);
            let s = y - (w.fb + w.m * (x - w.b));
            s >= w.lo && s < w.hi
        };
        for i in 1..STRIPS {
            let (a, b) = (z.x(i + 1), z.x(i));
            let h = z.f[i + 1] - z.f[i];
            let w = z.wedge[i];
            // Random points over the strip's slow-path rectangle.
            for _ in 0..2_000 {
                let x = a + (b - a) * rng.random::<f64>();
                random += 1;
                band += u64::from(check(i, x.clamp(a, b), rng.random()));
            }
            // Edges and heights at the bounds: u landing y on each bound's height at x, then
            // the neighbouring u's ulp by ulp.
            let xs = (0..16).map(|k| a + (b - a) * k as f64 / 15.0).chain([a, b, a.next_up(), b.next_down()]);
            for x in xs.filter(|x| (a..=b).contains(x)) {
                let chord = w.fb + w.m * (x - w.b);
                for target in [chord + w.hi, chord + w.lo, (-x).exp(), chord] {
                    let mut u = (target - z.f[i]) / h;
                    for _ in 0..300 {
                        u = u.next_down();
                    }
                    for _ in 0..600 {
                        let _ = check(i, x, u);
                        u = u.next_up();
                    }
                }
                let _ = check(i, x, 0.0);
                let _ = check(i, x, 1.0f64.next_down());
            }
        }
        eprintln!("{n} points, {band} of {random} random ones in the band");
        assert!(n > 5_000_000, "{n} points");
        // Of the random points (uniform over the strips, not weighted as the draws are), a few
        // percent call exp.
        assert!((band as f64) < 0.05 * random as f64, "{band} of {random} in the band");
    }

    #[test]
    fn tail_draws_exceed_r() {
        // Force the tail branch: strip 0 with a position beyond R.
        let z = Ziggurat::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for _ in 0..1000 {
            let (v, next) = z.slow(rng, 0, R + 0.1);
            rng = next;
            let v = v.expect("the tail always accepts");
            assert!(v >= R);
        }
    }
}
