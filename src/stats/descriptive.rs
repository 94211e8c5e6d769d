//! Descriptive statistics: the mean, spread and order statistics of one
//! sample, winsorizing, and pooling the noise of several.

/// Arithmetic mean; `NaN` for an empty slice.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    if let Some(v) = constant_value(values) {
        // Summing n copies of 0.1 and dividing by n does not give back 0.1; a constant
        // sample must have its value as mean so that zero-variance tests compare exactly.
        return v;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance (divisor n − 1); `NaN` for fewer than two values.
pub fn variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    if constant_value(values).is_some() {
        return 0.0;
    }
    let m = mean(values);
    // Two-pass with the compensating term: exact enough for log-ratios around 1e-3 with
    // sums of squares that would otherwise cancel.
    let (ss, s) = values.iter().fold((0.0, 0.0), |(ss, s), &x| {
        let d = x - m;
        (ss + d * d, s + d)
    });
    let n = values.len() as f64;
    ((ss - s * s / n) / (n - 1.0)).max(0.0)
}

/// Sample standard deviation (divisor n − 1); `NaN` for fewer than two values.
pub fn sd(values: &[f64]) -> f64 {
    variance(values).sqrt()
}

/// Median; `NaN` for an empty slice. `NaN`s in the input sort last (total order).
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// Raw median absolute deviation from the median (not scaled: multiply by 1.4826 for a
/// consistent estimate of σ under normality). `NaN` for an empty slice.
pub fn mad(values: &[f64]) -> f64 {
    let m = median(values);
    let dev: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Quantile with linear interpolation between order statistics (Hyndman–Fan type 7, the
/// default of R and numpy). `p` is clamped to `[0, 1]`; `NaN` for an empty slice or a
/// `NaN` p.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() || p.is_nan() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p = p.clamp(0.0, 1.0);
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let frac = h - lo as f64;
    if frac == 0.0 {
        // Avoids 0 * inf = NaN when the neighbour is infinite.
        return sorted[lo];
    }
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

/// Clamps each value to `center ± half_width`. A negative half width is taken as its
/// absolute value; a `NaN` center or half width leaves the values unchanged (there is
/// nothing sensible to clamp to, and `f64::clamp` would panic).
pub fn winsorize(values: &[f64], center: f64, half_width: f64) -> Vec<f64> {
    let hw = half_width.abs();
    if center.is_nan() || hw.is_nan() {
        return values.to_vec();
    }
    let (lo, hi) = (center - hw, center + hw);
    values
        .iter()
        .map(|&x| {
            if x < lo {
                lo
            } else if x > hi {
                hi
            } else {
                x
            }
        })
        .collect()
}

/// Clamps each value to median ± 3ŝ with ŝ = max(s_floor, 1.4826·MAD).
pub fn winsorize_robust(d: &[f64], s_floor: f64) -> Vec<f64> {
    if d.len() < 3 {
        return d.to_vec();
    }
    let m = median(d);
    let s = s_floor.max(1.4826 * mad(d));
    if s == 0.0 || !s.is_finite() {
        return d.to_vec();
    }
    winsorize(d, m, 3.0 * s)
}

/// One sample's share of the pooled noise: the sum of squared deviations
/// of its values winsorized by [`winsorize_robust`], and their degrees of
/// freedom; (0, 0) for a sample [`pooled_variance`] skips.
pub fn noise_share(d: &[f64]) -> (f64, f64) {
    squares(&winsorize_robust(d, 0.0)).unwrap_or((0.0, 0.0))
}

/// Pooled variance of several samples' residuals: Σ SS_j / Σ (n_j − 1), and
/// its degrees of freedom. Samples with fewer than two values add nothing.
pub fn pooled_variance<'a>(samples: impl IntoIterator<Item = &'a [f64]>) -> Option<(f64, f64)> {
    let (ss, df) = samples
        .into_iter()
        .filter_map(squares)
        .fold((0.0, 0.0), |(ss, df), (s, d)| (ss + s, df + d));
    (df > 0.0).then(|| (ss / df, df))
}

/// A sample's sum of squared deviations from its mean and its degrees of
/// freedom; none for fewer than two values or a non-finite one.
fn squares(x: &[f64]) -> Option<(f64, f64)> {
    if x.len() < 2 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let m = mean(x);
    Some((
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>(),
        (x.len() - 1) as f64,
    ))
}

/// The `Some(v)` when every value is bit-for-bit the same `v`.
pub(super) fn constant_value(values: &[f64]) -> Option<f64> {
    let first = *values.first()?;
    values
        .iter()
        .all(|x| x.to_bits() == first.to_bits())
        .then_some(first)
}
