//! The t-tests of the decision (paired, Welch), Student's t and F
//! quantiles, and the minimum detectable effect.

use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};

use super::{mean, sd, variance};

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

/// The paired t-test of [`paired_t`] with the spread `sd` given rather than
/// estimated, at the sample's own n − 1 degrees of freedom: for a sample
/// whose own spread is not to be believed (a few pairs that happen to
/// agree), a known larger spread in its place. `None` as for [`paired_t`],
/// or for an `sd` that is not positive and finite.
pub fn paired_t_with_sd(d: &[f64], mu0: f64, sd: f64) -> Option<TTest> {
    if d.len() < 2
        || !mu0.is_finite()
        || !(sd.is_finite() && sd > 0.0)
        || d.iter().any(|x| !x.is_finite())
    {
        return None;
    }
    let n = d.len();
    let m = mean(d);
    let se = sd / (n as f64).sqrt();
    Some(finish(n, m, sd, se, m - mu0, (n - 1) as f64))
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
