//! Statistics for the keep/discard decision: descriptive statistics, the
//! paired and Welch t-tests, the minimum detectable effect, and a seeded PRNG.
//!
//! Design choices:
//! - Pure functions over `&[f64]`, no I/O, no panics on any input. Descriptive statistics
//!   return `NaN` when they are undefined (empty input, or fewer than two values for a
//!   variance) so callers can compose them freely; the tests return `None` instead, because
//!   a decision must never be taken on an undefined statistic.
//! - The t statistics are written by hand (a few lines each) and only the Student-t
//!   distribution comes from `statrs`; every number is pinned in the tests against
//!   scipy, computed independently.
//! - A zero-variance sample is legitimate (instruction counts, binary sizes): identical
//!   differences must decide at the first look without a division by zero, so
//!   [`paired_t`] handles `sd == 0` explicitly, and detects "all values identical"
//!   exactly rather than trusting a variance that rounding left at 1e-34.
//! - `statrs`' quantile function asserts its argument lies in `[0, 1]` and its CDF
//!   panics on `NaN`; the wrappers [`t_quantile`] and [`t_sf`] screen inputs first.
//! - [`SplitMix64`] is here rather than in a crate because simulations and the
//!   randomized pair order must be reproducible from a seed recorded in the state, on
//!   every platform and every version of every dependency.

use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};

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

/// Result of a one-sided t-test.
// Deliberately not Serialize: t is ±inf for zero-variance samples, which
// serde_json writes as `null` and then refuses to read back as f64.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TTest {
    /// Number of observations (for Welch: both samples together).
    pub n: usize,
    /// Estimated effect: mean of the differences (paired) or mean(a) − mean(b) (Welch).
    pub mean: f64,
    /// Standard deviation behind `se`: of the differences (paired); for Welch the
    /// "effective" pooled sd, `se / sqrt(1/n_a + 1/n_b)`.
    pub sd: f64,
    /// Standard error of `mean`.
    pub se: f64,
    /// t statistic against the null value (±inf when the variance is zero).
    pub t: f64,
    /// Degrees of freedom (Welch–Satterthwaite for Welch).
    pub df: f64,
    /// One-sided p-value for H1: the effect is greater than the null value.
    pub p_one_sided: f64,
    /// Two-sided 95% confidence interval of `mean`.
    pub ci95: (f64, f64),
}

/// One-sample t-test of the paired differences `d` against `mu0`, H1: mean(d) > mu0.
///
/// `None` for fewer than two values or any non-finite input. Zero variance is decided
/// without dividing: p = 0 when the mean exceeds `mu0`, 1 when below, 0.5 when equal.
pub fn paired_t(d: &[f64], mu0: f64) -> Option<TTest> {
    if d.len() < 2 || !mu0.is_finite() || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = d.len();
    let m = mean(d);
    let s = sd(d);
    let df = (n - 1) as f64;
    if s == 0.0 {
        return Some(zero_variance(n, m, mu0, df));
    }
    let se = s / (n as f64).sqrt();
    Some(finish(n, m, s, se, m - mu0, df))
}

/// Welch's unequal-variance t-test, H1: mean(a) > mean(b).
///
/// `None` when either sample has fewer than two values or any input is non-finite.
/// When both variances are zero the df is undefined; it is reported as n_a + n_b − 2
/// and the decision follows the zero-variance rule of [`paired_t`].
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<TTest> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let diff = mean(a) - mean(b);
    let (qa, qb) = (variance(a) / na, variance(b) / nb);
    let se = (qa + qb).sqrt();
    let n = a.len() + b.len();
    if se == 0.0 {
        return Some(zero_variance(n, diff, 0.0, na + nb - 2.0));
    }
    let df = (qa + qb).powi(2) / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let s = se / (1.0 / na + 1.0 / nb).sqrt();
    Some(finish(n, diff, s, se, diff, df))
}

fn finish(n: usize, mean: f64, sd: f64, se: f64, excess: f64, df: f64) -> TTest {
    let t = excess / se;
    let half = t_quantile(0.975, df) * se;
    TTest {
        n,
        mean,
        sd,
        se,
        t,
        df,
        p_one_sided: t_sf(t, df),
        ci95: (mean - half, mean + half),
    }
}

fn zero_variance(n: usize, mean: f64, mu0: f64, df: f64) -> TTest {
    let (t, p) = if mean > mu0 {
        (f64::INFINITY, 0.0)
    } else if mean < mu0 {
        (f64::NEG_INFINITY, 1.0)
    } else {
        (0.0, 0.5)
    };
    TTest {
        n,
        mean,
        sd: 0.0,
        se: 0.0,
        t,
        df,
        p_one_sided: p,
        ci95: (mean, mean),
    }
}

/// The `Some(v)` when every value is bit-for-bit the same `v`.
fn constant_value(values: &[f64]) -> Option<f64> {
    let first = *values.first()?;
    values
        .iter()
        .all(|x| x.to_bits() == first.to_bits())
        .then_some(first)
}

/// Quantile of Student's t with `df` degrees of freedom: the t with P(T ≤ t) = p.
///
/// p ≤ 0 → −inf, p ≥ 1 → +inf; `NaN` for a `NaN` p or a df that is not positive.
/// An infinite df is the standard normal.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if df.is_infinite() {
        // statrs' t quantile goes through an incomplete beta with a = df/2 = inf.
        return Normal::standard().inverse_cdf(p);
    }
    let Ok(dist) = StudentsT::new(0.0, 1.0, df) else {
        return f64::NAN;
    };
    // statrs' inverse (an inverse incomplete beta) loses digits at large df: 4e-4 relative
    // error at df = 1e6, where Welch df can land. Its CDF stays accurate, so a few Newton
    // steps on the tail nearest p restore full precision.
    let mut q = dist.inverse_cdf(p);
    for _ in 0..4 {
        let density = dist.pdf(q);
        if !q.is_finite() || density.is_nan() || density <= 0.0 {
            break;
        }
        let residual = if p < 0.5 {
            dist.cdf(q) - p
        } else {
            (1.0 - p) - dist.sf(q)
        };
        let step = residual / density;
        q -= step;
        if step.abs() <= 1e-15 * (1.0 + q.abs()) {
            break;
        }
    }
    q
}

/// Survival function of Student's t: P(T > t). `NaN` for a `NaN` t or a df that is not
/// positive; ±inf are fine (0 and 1).
pub fn t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => dist.sf(t),
        Err(_) => f64::NAN,
    }
}

/// Smallest true mean difference that a one-sided paired t-test at level `alpha` detects
/// with probability `power` from `n` pairs whose differences have sd `sd_d`:
/// (t₁₋α,ₙ₋₁ + t_power,ₙ₋₁) · sd_d / √n.
///
/// With fewer than two pairs nothing is detectable: +inf. Note the 0.72·s_h for 12
/// pairs uses normal quantiles; with t quantiles (this function) the factor is 0.77.
pub fn min_detectable_effect(sd_d: f64, n: usize, alpha: f64, power: f64) -> f64 {
    if n < 2 {
        return f64::INFINITY;
    }
    let df = (n - 1) as f64;
    (t_quantile(1.0 - alpha, df) + t_quantile(power, df)) * sd_d / (n as f64).sqrt()
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

/// Upper quantile of the F distribution, for "did the noise change?".
pub fn f_quantile(p: f64, d1: f64, d2: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, FisherSnedecor};
    if !(p > 0.0 && p < 1.0 && d1 > 0.0 && d2 > 0.0) {
        return f64::NAN;
    }
    match FisherSnedecor::new(d1, d2) {
        Ok(f) => f.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

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

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny, fast, seedable generator whose output
/// is identical on every platform. Not for cryptography.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n), without modulo bias (Lemire's multiply-and-reject).
    /// `below(0)` is 0 rather than a panic.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Standard normal deviate by Box–Muller. Uses two uniforms per call and discards the
    /// sine half: the struct holds only the state, so every call is reproducible from it.
    pub fn normal(&mut self) -> f64 {
        // 1 − u is in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    macro_rules! assert_close {
        ($a:expr, $b:expr) => {
            assert_close!($a, $b, 1e-9)
        };
        ($a:expr, $b:expr, $tol:expr) => {{
            let (a, b) = ($a, $b);
            assert!(close(a, b, $tol), "{} = {a}, expected {b}", stringify!($a));
        }};
    }

    const D: [f64; 8] = [0.021, 0.034, -0.005, 0.012, 0.027, 0.018, 0.009, 0.041];

    #[test]
    fn descriptive() {
        // numpy: mean(D)=0.019625, std(D, ddof=1)=0.014637891143974844,
        // var(D, ddof=1)=0.00021426785714285718
        assert_close!(mean(&D), 0.019625);
        assert_close!(variance(&D), 0.000_214_267_857_142_857_18);
        assert_close!(sd(&D), 0.014_637_891_143_974_844);
        let x = [3.1, 1.2, 9.9, 4.4, 2.2, 7.0, 5.5];
        // numpy.median -> 4.4; scipy.stats.median_abs_deviation -> 2.2
        assert_close!(median(&x), 4.4);
        assert_close!(mad(&x), 2.2);
        assert_close!(median(&[1.0, 3.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn quantile_type7() {
        let x = [3.1, 1.2, 9.9, 4.4, 2.2, 7.0, 5.5];
        // numpy.quantile(x, q) (method='linear', type 7)
        for (q, want) in [
            (0.0, 1.2),
            (0.1, 1.800_000_000_000_000_3),
            (0.25, 2.650_000_000_000_000_4),
            (0.5, 4.4),
            (0.9, 8.160_000_000_000_002),
            (1.0, 9.9),
        ] {
            assert_close!(quantile(&x, q), want, 1e-12);
        }
        assert_close!(quantile(&x, -3.0), 1.2);
        assert_close!(quantile(&x, 7.0), 9.9);
        assert_eq!(quantile(&[5.0], 0.3), 5.0);
    }

    #[test]
    fn undefined_inputs_are_nan_not_panics() {
        assert!(mean(&[]).is_nan());
        assert!(variance(&[1.0]).is_nan());
        assert!(sd(&[]).is_nan());
        assert!(median(&[]).is_nan());
        assert!(mad(&[]).is_nan());
        assert!(quantile(&[1.0, 2.0], f64::NAN).is_nan());
        assert_eq!(median(&[f64::NAN, 1.0, 2.0]), 2.0);
        assert_eq!(variance(&[0.1, 0.1, 0.1]), 0.0);
        assert_eq!(mean(&[0.1, 0.1, 0.1]), 0.1);
    }

    #[test]
    fn winsorize_clamps() {
        assert_eq!(
            winsorize(&[-5.0, 0.5, 1.0, 9.0], 1.0, 2.0),
            vec![-1.0, 0.5, 1.0, 3.0]
        );
        assert_eq!(winsorize(&[-5.0, 9.0], 1.0, -2.0), vec![-1.0, 3.0]);
        assert_eq!(winsorize(&[-5.0, 9.0], f64::NAN, 2.0), vec![-5.0, 9.0]);
        assert_eq!(winsorize(&[-5.0, 9.0], 0.0, f64::INFINITY), vec![-5.0, 9.0]);
        assert!(winsorize(&[], 0.0, 1.0).is_empty());
    }

    #[test]
    fn paired_t_matches_scipy() {
        // scipy.stats.ttest_1samp(D, 0, alternative='greater')
        //   -> t=3.792068254722046, p=0.003392286553908946, df=7
        // ttest_1samp(D, 0).confidence_interval(0.95)
        //   -> (0.007387416755098764, 0.03186258324490124)
        let r = paired_t(&D, 0.0).unwrap();
        assert_eq!(r.n, 8);
        assert_close!(r.t, 3.792_068_254_722_046);
        assert_close!(r.p_one_sided, 0.003_392_286_553_908_946, 1e-7);
        assert_close!(r.df, 7.0);
        assert_close!(r.se, 0.014_637_891_143_974_844 / 8f64.sqrt());
        assert_close!(r.ci95.0, 0.007_387_416_755_098_764, 1e-7);
        assert_close!(r.ci95.1, 0.031_862_583_244_901_24, 1e-7);
        // scipy.stats.ttest_1samp(D, 0.01, alternative='greater')
        //   -> t=1.859804175882787, p=0.0526208618625782
        let r = paired_t(&D, 0.01).unwrap();
        assert_close!(r.t, 1.859_804_175_882_787);
        assert_close!(r.p_one_sided, 0.052_620_861_862_578_2, 1e-7);
        // The CI is of the mean, independent of mu0.
        assert_close!(r.ci95.0, 0.007_387_416_755_098_764, 1e-7);
    }

    #[test]
    fn paired_t_zero_variance_decides_without_dividing() {
        let up = paired_t(&[0.1, 0.1, 0.1], 0.0).unwrap();
        assert_eq!((up.p_one_sided, up.t, up.sd), (0.0, f64::INFINITY, 0.0));
        assert_eq!(up.ci95, (0.1, 0.1));
        let down = paired_t(&[-0.2; 4], 0.0).unwrap();
        assert_eq!((down.p_one_sided, down.t), (1.0, f64::NEG_INFINITY));
        // Equal to mu0 exactly, even though 3 × 0.1 / 3 ≠ 0.1 in floating point.
        let eq = paired_t(&[0.1, 0.1, 0.1], 0.1).unwrap();
        assert_eq!((eq.p_one_sided, eq.t), (0.5, 0.0));
        // A zero-variance sample below a positive threshold is not a keep.
        assert_eq!(paired_t(&[0.001; 3], 0.01).unwrap().p_one_sided, 1.0);
    }

    #[test]
    fn paired_t_rejects_degenerate_input() {
        assert!(paired_t(&[], 0.0).is_none());
        assert!(paired_t(&[1.0], 0.0).is_none());
        assert!(paired_t(&[1.0, f64::NAN], 0.0).is_none());
        assert!(paired_t(&[1.0, f64::INFINITY], 0.0).is_none());
        assert!(paired_t(&[1.0, 2.0], f64::NAN).is_none());
    }

    #[test]
    fn welch_matches_scipy() {
        let a = [10.2, 9.8, 10.5, 10.9, 10.1, 10.4];
        let b = [9.1, 9.9, 9.4, 9.0, 9.6, 9.3, 9.8, 9.2];
        // scipy.stats.ttest_ind(a, b, equal_var=False, alternative='greater')
        //   -> t=4.701704914818571, p=0.0004219610485760522, df=9.98019202754379
        // .confidence_interval(0.95) (two-sided) -> (0.47556660970349457, 1.332766723629839)
        let r = welch_t(&a, &b).unwrap();
        assert_eq!(r.n, 14);
        assert_close!(r.t, 4.701_704_914_818_571);
        assert_close!(r.df, 9.980_192_027_543_79);
        assert_close!(r.p_one_sided, 0.000_421_961_048_576_052_2, 1e-6);
        assert_close!(r.ci95.0, 0.475_566_609_703_494_57, 1e-7);
        assert_close!(r.ci95.1, 1.332_766_723_629_839, 1e-7);
        assert_close!(r.se, r.sd * (1.0 / 6.0 + 1.0 / 8.0f64).sqrt());
        // Reversed: ttest_ind(b, a, ..., alternative='greater') -> p=0.9995780389514239
        let r = welch_t(&b, &a).unwrap();
        assert_close!(r.p_one_sided, 0.999_578_038_951_423_9, 1e-9);
    }

    #[test]
    fn welch_degenerate() {
        assert!(welch_t(&[1.0], &[1.0, 2.0]).is_none());
        assert!(welch_t(&[1.0, 2.0], &[f64::NAN, 2.0]).is_none());
        let r = welch_t(&[2.0, 2.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!((r.p_one_sided, r.mean, r.df), (0.0, 1.0, 3.0));
    }

    #[test]
    fn t_distribution_matches_scipy() {
        // scipy.stats.t.ppf(p, df)
        for (p, df, want) in [
            (0.975, 5.0, 2.570_581_835_636_314_6),
            (0.95, 11.0, 1.795_884_818_704_043_3),
            (0.8, 11.0, 0.875_529_978_073_881_9),
            (0.9831, 11.0, 2.423_444_825_349_005_5),
            (0.025, 3.0, -3.182_446_305_283_708_6),
            (0.5, 7.0, 0.0),
            (0.999, 2.5, 13.822_193_110_865_96),
            (0.9, 1e6, 1.281_552_412_129_939),
        ] {
            assert_close!(t_quantile(p, df), want, 1e-8);
        }
        // scipy.stats.t.sf(t, df)
        for (t, df, want) in [
            (2.0, 5.0, 0.050_969_739_414_929_174),
            (-1.3, 11.0, 0.889_909_368_650_079_1),
            (0.0, 4.0, 0.5),
            (10.0, 3.0, 0.001_064_199_529_207_075_1),
            (1.5, 2.5, 0.123_918_226_543_148_09),
        ] {
            assert_close!(t_sf(t, df), want, 1e-9);
        }
        // scipy.stats.t.sf(30, 20) -> 2.0976126619998272e-18 (relative accuracy)
        assert!((t_sf(30.0, 20.0) / 2.097_612_661_999_827_2e-18 - 1.0).abs() < 1e-6);
        // scipy.stats.norm.ppf(0.975) -> 1.959963984540054
        assert_close!(t_quantile(0.975, f64::INFINITY), 1.959_963_984_540_054);
    }

    #[test]
    fn t_functions_never_panic() {
        assert_eq!(t_quantile(0.0, 5.0), f64::NEG_INFINITY);
        assert_eq!(t_quantile(1.5, 5.0), f64::INFINITY);
        assert!(t_quantile(f64::NAN, 5.0).is_nan());
        assert!(t_quantile(0.5, 0.0).is_nan());
        assert!(t_quantile(0.5, -1.0).is_nan());
        assert!(t_sf(f64::NAN, 3.0).is_nan());
        assert!(t_sf(1.0, f64::NAN).is_nan());
        assert_eq!(t_sf(f64::INFINITY, 3.0), 0.0);
        assert_eq!(t_sf(f64::NEG_INFINITY, 3.0), 1.0);
        assert_close!(t_sf(1.0, f64::INFINITY), 0.158_655_253_931_457_05);
    }

    #[test]
    fn mde_matches_scipy() {
        // (t.ppf(1-a, n-1) + t.ppf(power, n-1)) * sd / sqrt(n) with scipy.stats.t:
        // (0.03, 12, 0.05, 0.8) -> 0.023135130780553265
        // (1.0, 12, 0.0169, 0.8) -> 0.9523319954029985
        // (0.02, 5, 0.05, 0.9) -> 0.032781231136663314
        assert_close!(
            min_detectable_effect(0.03, 12, 0.05, 0.8),
            0.023_135_130_780_553_265,
            1e-8
        );
        assert_close!(
            min_detectable_effect(1.0, 12, 0.0169, 0.8),
            0.952_331_995_402_998_5,
            1e-8
        );
        assert_close!(
            min_detectable_effect(0.02, 5, 0.05, 0.9),
            0.032_781_231_136_663_314,
            1e-8
        );
        assert_eq!(min_detectable_effect(0.03, 1, 0.05, 0.8), f64::INFINITY);
        assert_eq!(min_detectable_effect(0.0, 12, 0.05, 0.8), 0.0);
    }

    #[test]
    fn splitmix_reference_values() {
        // Reference: the published SplitMix64 (Vigna's splitmix64.c), seed 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        // Same algorithm in Python (64-bit masked arithmetic), seed 42.
        let mut r = SplitMix64::new(42);
        let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                0xbdd7_3226_2feb_6e95,
                0x28ef_e333_b266_f103,
                0x4752_6757_130f_9f52,
                0x581c_e1ff_0e4a_e394,
                0x09bc_585a_2448_23f2,
            ]
        );
        // (x >> 11) * 2**-53 in Python, seed 42.
        let mut r = SplitMix64::new(42);
        assert_eq!(r.next_f64(), 0.741_564_878_771_823_3);
        assert_eq!(r.next_f64(), 0.159_910_392_876_920_1);
        assert_eq!(r.next_f64(), 0.278_601_130_255_138_66);
    }

    #[test]
    fn splitmix_derived_draws() {
        // Python: Lemire's method with seed 7, n = 10 -> [3, 0, 9, 5, 4, 2, 4, 3]
        let mut r = SplitMix64::new(7);
        let got: Vec<u64> = (0..8).map(|_| r.below(10)).collect();
        assert_eq!(got, [3, 0, 9, 5, 4, 2, 4, 3]);
        assert_eq!(r.below(0), 0);
        assert_eq!(r.below(1), 0);
        // Python: sqrt(-2 ln(1-u1)) cos(2π u2), seed 42
        let mut r = SplitMix64::new(42);
        for want in [
            0.882_248_906_222_268_8,
            -0.450_849_875_718_860_1,
            0.188_352_634_115_931_5,
        ] {
            assert_close!(r.normal(), want, 1e-12);
        }
        // Moments of many draws, as a smoke test of the transform.
        let mut r = SplitMix64::new(1);
        let xs: Vec<f64> = (0..20_000).map(|_| r.normal()).collect();
        assert!(mean(&xs).abs() < 0.03);
        assert!((sd(&xs) - 1.0).abs() < 0.03);
        let mut r = SplitMix64::new(3);
        assert!((0..10_000).all(|_| (0.0..1.0).contains(&r.next_f64())));
    }
    #[test]
    fn pooled_variance_weights_by_degrees_of_freedom() {
        // ((1-2)^2+(3-2)^2 + (10-12)^2+(14-12)^2+(12-12)^2) / (1 + 2) = 10/3
        let (v, df) =
            pooled_variance([&[1.0, 3.0][..], &[10.0, 14.0, 12.0][..], &[5.0][..]]).unwrap();
        assert!((v - 10.0 / 3.0).abs() < 1e-12);
        assert_eq!(df, 3.0);
        assert!(pooled_variance([&[1.0][..]]).is_none());
    }

    #[test]
    fn f_quantiles_match_scipy() {
        // scipy.stats.f.ppf(0.99, d1, d2)
        for (d1, d2, want) in [
            (2.0, 9.0, 8.021517309932058),
            (4.0, 30.0, 4.017876836587524),
            (7.0, 30.0, 3.3044988866923948),
            (11.0, 20.0, 3.294108428721851),
        ] {
            let got = f_quantile(0.99, d1, d2);
            assert!(
                (got - want).abs() < 1e-6 * want,
                "F.99({d1},{d2}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn mann_kendall_matches_an_independent_implementation() {
        // Reference: direct O(n^2) Python with numpy; Sen slope also equals
        // scipy.stats.theilslopes(x).slope = 0.6416666666666666.
        let mk = mann_kendall(&[1.0, 2.3, 2.1, 3.5, 4.0, 3.9, 5.2, 6.1]).unwrap();
        assert_eq!(mk.s, 24.0);
        assert!((mk.var_s - 65.33333333333333).abs() < 1e-9);
        assert!((mk.z - 2.8455120410060126).abs() < 1e-9);
        assert!((mk.sen_slope - 0.6416666666666666).abs() < 1e-12);
        // With ties: var = (n(n-1)(2n+5) - Σ t(t-1)(2t+5)) / 18 = 119.333…
        let mk = mann_kendall(&[5.0, 5.0, 4.0, 4.0, 4.0, 3.0, 6.0, 2.0, 2.0, 1.0]).unwrap();
        assert_eq!(mk.s, -28.0);
        assert!((mk.var_s - 119.33333333333333).abs() < 1e-9);
        assert!((mk.z - -2.4716267006742814).abs() < 1e-9);
        assert!((mk.sen_slope - -0.42857142857142855).abs() < 1e-12);
        assert!(mann_kendall(&[1.0, f64::NAN, 2.0]).is_none());
    }
}
