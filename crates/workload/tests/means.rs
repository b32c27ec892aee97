//! Done-when of issue 36, item 1: 10 M sizes drawn from each named workload have a mean within
//! 0.5% of the table's step mean (the stated one where the source states it), and within 0.5% of
//! the interpolated mean when interpolation is chosen. Seeded; the seed is in every message.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_workload::{all, Reading};

const DRAWS: u32 = 10_000_000;
const SEED: u64 = 36;

fn sampled_mean(draw: impl Fn(f64) -> f64, seed: u64) -> f64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut sum = 0.0;
    for _ in 0..DRAWS {
        sum += draw(rng.random::<f64>());
    }
    sum / f64::from(DRAWS)
}

#[test]
fn ten_million_draws_match_the_stated_and_interpolated_means() {
    for (k, w) in all().into_iter().enumerate() {
        let seed = SEED + k as u64;
        let step = sampled_mean(|u| w.sample(Reading::Step, u), seed);
        let want = w.stated_mean.unwrap_or_else(|| w.mean(Reading::Step));
        let err = (step - want).abs() / want;
        assert!(err < 0.005, "{} (seed {seed}): step mean {step} vs stated {want} ({:.3}%)", w.name, 100.0 * err);
        let interp = sampled_mean(|u| w.sample(Reading::Interpolated, u), seed);
        let want = w.mean(Reading::Interpolated);
        let err = (interp - want).abs() / want;
        assert!(err < 0.005, "{} (seed {seed}): interpolated mean {interp} vs {want} ({:.3}%)", w.name, 100.0 * err);
        println!("{}: step {step:.4} interp {interp:.4} (seed {seed})", w.name);
    }
}
