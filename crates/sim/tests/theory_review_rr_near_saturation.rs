//! Review of the RR closed form near saturation (crate::theory, `SizeBased::rr_starts`).
//!
//! RR's linear system is solved iteratively and the solver stopped when a plain sweep changed
//! no T_s by more than 1e-11 relative. Near ρ = 1 a small change does not mean a small error:
//! the sweep contracts by about ρ, so the error is about change / (1 − ρ). From its start
//! (processor sharing, T_s = s·E[S]/(1−ρ)) the first sweep changes T by O(1) time units, under
//! 1e-11 relative once 1 − ρ < 1e-11, and the solver returned the starting guess: 60% above
//! the exact mean for one-packet messages (where RR is FIFO), 33% above for two-packet ones.
//!
//! Both cases here have exact answers in terms of the same f64 ρ (1 − ρ is exact for ρ ≥ 1/2):
//! - one packet: T₁ = ρR/(1−ρ), the M/G/1 wait;
//! - two packets: T₁ = (ρR + λ)/(1 − λ − 2λ²) with λ = ρ/2, and 1 − λ − 2λ² = (1−ρ)(2+ρ)/2;
//!   T₂ = T₁ + 1 + 2λT₁ (the hand derivation of theory.rs's own test),
//!
//! with R = E[S²]/(2E[S]) = 0.625 for the report's service. The solver must answer within 1e-4
//! relative (far below any simulation's half-width at such loads) or not at all (`None`: the
//! table then shows "-"), and it must still answer up to 1 − ρ = 1e-9.

use schedlab_sim::model::{LengthDist, Service};
use schedlab_sim::theory::SizeBased;

/// (T₁, T₂) exact for messages of exactly `len` packets (1 or 2), report service.
fn exact(len: u32, rho: f64) -> Vec<f64> {
    let r = 0.625;
    let one_minus = 1.0 - rho;
    if len == 1 {
        return vec![0.0, rho * r / one_minus];
    }
    let lambda = rho / 2.0;
    let t1 = (rho * r + lambda) / (one_minus * (2.0 + rho) / 2.0);
    vec![0.0, t1, t1 + 1.0 + 2.0 * lambda * t1]
}

#[test]
fn rr_is_exact_or_absent_as_the_load_approaches_one() {
    let mut answered = 0;
    for len in [1u32, 2] {
        let dist = LengthDist::new(&[(i64::from(len), i64::from(len), 100.0)]).unwrap();
        for k in 1..=15 {
            let traffic = 100.0 - 100.0 * 10f64.powi(-k);
            if traffic >= 100.0 {
                continue;
            }
            let sb = SizeBased::new(&dist, Service::Report, traffic).unwrap();
            let want = exact(len, sb.q.rho);
            match sb.rr_starts() {
                Some(t) => {
                    assert_eq!(t.len(), want.len());
                    for s in 1..t.len() {
                        let rel = (t[s] - want[s]).abs() / want[s];
                        assert!(
                            rel <= 1e-4,
                            "{len}-packet messages, 1 - rho = 1e-{k}: T_{s} = {} vs exact {}: {rel:e} off",
                            t[s],
                            want[s]
                        );
                    }
                    answered += 1;
                }
                None => assert!(k > 9, "{len}-packet messages, 1 - rho = 1e-{k}: the solver gave up"),
            }
            // What the tables print: the per-group mean is RR's T_len, or NaN (shown as "-").
            let (_, all, first) = sb.by_groups(&[(len, len)]);
            assert!(all.rr.is_nan() || (all.rr - want[len as usize]).abs() <= 1e-4 * want[len as usize], "{len}: {}", all.rr);
            assert!(first.is_nan() || (first - want[1]).abs() <= 1e-4 * want[1], "{len}: first {first}");
        }
    }
    assert!(answered >= 18, "answered {answered} cases");
}
