//! Exponential variates by the ziggurat method (Marsaglia & Tsang, "The Ziggurat Method for
//! Generating Random Variables", J. Stat. Softw. 5(8), 2000), inlined into the path generator.
//!
//! The generator draws about 1.2 exponentials per simulated packet (one service time per packet,
//! one gap per message), so this is on the hot path. The density `e^-x` is covered by 256 strips
//! of equal area `V`: strip 0 is the base rectangle plus the tail beyond `R`, strips 1..255 are
//! rectangles under the curve. One 64-bit draw picks the strip (low 8 bits) and a position in it
//! (top 53 bits); 98.9% of draws land inside the strip's inner rectangle and return after one
//! multiply and one compare. The rest fall back to an exact rejection test, or for strip 0 to
//! `R + Exp(1)` (the tail is memoryless). The result is exactly Exp(1) distributed up to the
//! 53-bit resolution of the position; the tests below check moments, the tail and a KS distance.

use rand::{Rng, RngCore};

/// Right edge of the last full strip.
const R: f64 = 7.697_117_470_131_05;
/// Area of each strip.
const V: f64 = 0.003_949_659_822_581_557;
const SCALE: f64 = 1.0 / (1u64 << 53) as f64;

/// Strip tables: `x[i]` is the right edge of strip `i` (`x[0]` the base's effective width,
/// `x[1] = R`, decreasing to `x[256] = 0`), `f[i] = e^-x[i]`.
#[derive(Clone, Debug)]
pub struct Ziggurat {
    x: [f64; 257],
    f: [f64; 257],
    /// `x[i] * 2^-53`: the position's scale folded into the edge. Scaling by a power of two is
    /// exact, so `pos * scaled[i]` rounds the same real number as `pos * 2^-53 * x[i]` (bit for
    /// bit the same draws) with one multiplication fewer per draw.
    scaled: [f64; 257],
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

    /// Builds the tables (about 256 logarithms).
    pub fn new() -> Self {
        let mut x = [0.0; 257];
        let mut f = [0.0; 257];
        x[1] = R;
        f[1] = (-R).exp();
        x[0] = V / f[1];
        f[0] = 0.0;
        for i in 1..255 {
            // Strip i spans [0, x[i]] × [f[i], f[i+1]] with area V.
            f[i + 1] = V / x[i] + f[i];
            x[i + 1] = -f[i + 1].ln();
        }
        x[256] = 0.0;
        f[256] = 1.0;
        let scaled = x.map(|e| e * SCALE);
        Ziggurat { x, f, scaled }
    }

    /// One Exp(1) variate.
    #[inline(always)]
    pub fn sample<G: RngCore + Clone>(&self, rng: &mut G) -> f64 {
        loop {
            let bits = rng.next_u64();
            let i = (bits & 0xff) as usize;
            let x = (bits >> 11) as f64 * self.scaled[i];
            if x < self.x[i + 1] {
                return x;
            }
            // The rare slow path takes the random state by value and hands it back: the state
            // never has its address taken, so a caller's loop keeps it in registers (through
            // memory, it put a store-to-load round trip on every draw's chain).
            let (v, next) = self.slow(rng.clone(), i, x);
            *rng = next;
            if let Some(v) = v {
                return v;
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
        } else if self.f[i] + u * (self.f[i + 1] - self.f[i]) < (-x).exp() {
            // Under the curve within the wedge between the strip's two rectangles.
            Some(x)
        } else {
            None
        };
        (v, rng)
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
        // The last computed edge lands (almost) on 0: the 255 strips above the base fill the density.
        assert!(z.x[255] > 0.0 && z.x[255] < 0.2, "x[255] = {}", z.x[255]);
        assert!(z.f[255] < 1.0 && z.f[255] > 0.8);
        for i in 1..256 {
            assert!(z.x[i] > z.x[i + 1], "edges decrease at {i}");
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
        for i in 0..257 {
            let random = (0..20_000).map(|_| rng.next_u64() >> 11);
            for pos in extremes.into_iter().chain(random) {
                let two = pos as f64 * SCALE * z.x[i];
                let one = pos as f64 * z.scaled[i];
                assert_eq!(two.to_bits(), one.to_bits(), "strip {i}, position {pos}");
            }
        }
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
