//! The Mann-Kendall trend test: is the re-measured base drifting?

use super::median;

/// Mann-Kendall trend test with the tie correction of the variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannKendall {
    pub s: f64,
    pub var_s: f64,
    /// Continuity-corrected standard normal statistic (positive = upward).
    pub z: f64,
    /// Sen's slope: the median of all pairwise slopes, per index step.
    pub sen_slope: f64,
}

pub fn mann_kendall(x: &[f64]) -> Option<MannKendall> {
    let n = x.len();
    if n < 3 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = 0.0;
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n - 1 {
        for j in i + 1..n {
            let diff = x[j] - x[i];
            s += if diff > 0.0 {
                1.0
            } else if diff < 0.0 {
                -1.0
            } else {
                0.0
            };
            slopes.push(diff / (j - i) as f64);
        }
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j + 1;
    }
    let nf = n as f64;
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let z = if var_s <= 0.0 {
        0.0
    } else if s > 0.0 {
        (s - 1.0) / var_s.sqrt()
    } else if s < 0.0 {
        (s + 1.0) / var_s.sqrt()
    } else {
        0.0
    };
    Some(MannKendall {
        s,
        var_s,
        z,
        sen_slope: median(&slopes),
    })
}
