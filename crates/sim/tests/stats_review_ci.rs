//! Batch-means half-widths: Student t with (batches − 1) degrees of freedom at every batch
//! count, not the normal quantile once there are more than 31 batches.

use schedlab_sim::engine::{ci95, t975};

/// t₀.₉₇₅ from standard tables.
const TABLE: [(usize, f64); 6] = [(31, 2.0395), (35, 2.0301), (40, 2.0211), (49, 2.0096), (60, 2.0003), (120, 1.9799)];

#[test]
fn t_quantile_beyond_thirty_degrees_of_freedom() {
    for (df, t) in TABLE {
        assert!((t975(df) - t).abs() < 5e-4, "df {df}: {} vs tables {t}", t975(df));
    }
    for df in 1..500 {
        assert!(t975(df + 1) < t975(df), "t975 decreases with df: df {df}");
    }
}

#[test]
fn half_width_of_forty_one_batch_means_uses_t_with_forty_df() {
    // 41 batch means 0, 1, ..., 40: mean 20, sample variance 41·42/12 = 143.5.
    let xs: Vec<f64> = (0..41).map(f64::from).collect();
    let se = (143.5f64 / 41.0).sqrt();
    let hw = ci95(&xs);
    assert!((hw - 2.0211 * se).abs() < 5e-4 * se, "half-width {hw}, t(40)·SE = {}", 2.0211 * se);
}
