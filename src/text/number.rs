//! The one way an effect, its interval and its test are written.
//!
//! A relative gain `g` is in the Brief's direction (`+0.10` = 10% better):
//! for a minimized metric `g = 1 − cand/base`, for a maximized one
//! `g = cand/base − 1`. Each has one unbounded side (a minimized metric can
//! get any number of times worse, a maximized one any number of times
//! better), where a percentage reads as nothing ("-549.8%"), and one side
//! where percentages crowd against 100% ("+100.0%" for a 8,700× speed-up).
//! So past [`FACTOR`] on the unbounded side, or [`BOUNDED_FACTOR`] on the
//! other, every number of the text (the estimate and both bounds) is
//! written as a factor with "×"; otherwise all three are percentages, with
//! the decimals that keep them apart from ±100%. Never one unit for the
//! estimate and another for a bound, and the bounds are always low to high.
//!
//! The bounded side needs the metric's [`Sense`] (a gain of 0.95 is 20×
//! faster for a minimized metric, +95% for a maximized one); without it
//! the unbounded side still follows from the numbers (only a minimized
//! metric has `g ≤ −1`, only a maximized one `g ≥ 1`).
//!
//! A p-value is never written without what it was compared with
//! ([`p_value`]), and a one-sided bound says its level and whether it used
//! the pooled noise history ([`upper_bound`]).

/// From this ratio of the candidate's value to the base's on the unbounded
/// side (twice the base's value or more), effects are written as factors.
pub(crate) const FACTOR: f64 = 2.0;

/// From this factor on the bounded side (ten times better for a minimized
/// metric, ten times worse for a maximized one), effects are written as
/// factors: below it a percentage still reads (+80% is 5× faster).
pub(crate) const BOUNDED_FACTOR: f64 = 10.0;

/// Whether a metric is minimized or maximized, as the formatter needs it
/// (the layer below the Brief's `Direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sense {
    Minimize,
    Maximize,
}

/// A gain alone: `+12.3%`, `-0.35%`, `3.98× worse`.
pub(crate) fn effect(g: f64) -> String {
    Texts::of(&[g], None).point(g)
}

/// [`effect`] of a metric whose sense is known: `8721× better`.
pub(crate) fn effect_in(sense: Sense, g: f64) -> String {
    Texts::of(&[g], Some(sense)).point(g)
}

/// A gain and its interval, in one unit, low bound first:
/// `+12.3% [+8.0, +16.1]`, `3.98× worse [3.90×, 4.10×]`.
pub(crate) fn effect_ci(g: f64, ci: (f64, f64)) -> String {
    interval(None, g, ci)
}

/// [`effect_ci`] of a metric whose sense is known:
/// `8721× better [7002×, 10862×]`.
pub(crate) fn effect_ci_in(sense: Sense, g: f64, ci: (f64, f64)) -> String {
    interval(Some(sense), g, ci)
}

fn interval(sense: Option<Sense>, g: f64, ci: (f64, f64)) -> String {
    let t = Texts::of(&[g, ci.0, ci.1], sense);
    // Low to high in the unit written.
    let (lo, hi) = if t.shown(ci.0) <= t.shown(ci.1) {
        ci
    } else {
        (ci.1, ci.0)
    };
    format!("{} [{}, {}]", t.point(g), t.bound(lo), t.bound(hi))
}

/// A prediction and its spread: `+5.0% (sd 5.0%)`.
pub(crate) fn predicted(g: f64, sd: f64) -> String {
    format!("{} (sd {:.1}%)", effect(g), sd * 100.0)
}

/// A p-value with the level it was compared with:
/// `p = 0.041 > α′ = 0.014`. `alpha` not finite or not positive (an old
/// record without it) leaves the comparison out.
pub(crate) fn p_value(p: f64, alpha: f64) -> String {
    if !(alpha.is_finite() && alpha > 0.0) {
        let ps = probability(p, None);
        let eq = if ps.starts_with('<') { "" } else { "= " };
        return format!("p {eq}{ps}");
    }
    let sign = if p <= alpha { '≤' } else { '>' };
    // Both to the digits that tell them apart.
    let (ps, ast) = (probability(p, Some(alpha)), probability(alpha, Some(p)));
    let eq = if ps.starts_with('<') { "" } else { "= " };
    format!("p {eq}{ps} {sign} α′ = {ast}")
}

/// A one-sided upper bound with its level and the noise it used:
/// `90% upper bound +10.6% (pooled noise)`.
pub(crate) fn upper_bound(level: u32, g: f64, pooled: bool) -> String {
    format!(
        "{level}% upper bound {}{}",
        effect(g),
        if pooled {
            " (pooled noise)"
        } else {
            " (this series' noise)"
        }
    )
}

/// How a set of gains written together is written: the unit chosen once
/// for all of them.
enum Texts {
    /// Percentages with this many decimals.
    Percent(usize),
    /// Factors: of the ratio cand/base (`minimize` says which way the
    /// gains run), written as `word` when all are on one side of the base
    /// (the factor being how many times worse or better), as "× the base"
    /// (the ratio itself) when they straddle it.
    Factor { minimize: bool, side: Option<Side> },
}

/// Which side of the base a set of factors all lie on.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// The ratio cand/base above 1.
    Above,
    Below,
}

impl Texts {
    fn of(gs: &[f64], sense: Option<Sense>) -> Texts {
        let finite: Vec<f64> = gs.iter().copied().filter(|g| g.is_finite()).collect();
        let minimize = match sense {
            Some(s) => Some(s == Sense::Minimize),
            // A minimized metric's gains are below 1, a maximized one's
            // above −1: the unbounded side says which.
            None if finite.iter().any(|g| *g <= 1.0 - FACTOR) => Some(true),
            None if finite.iter().any(|g| *g >= FACTOR - 1.0) => Some(false),
            None => None,
        };
        if let Some(minimize) = minimize {
            let ratio = |g: f64| if minimize { 1.0 - g } else { 1.0 + g };
            let far = finite
                .iter()
                .any(|g| ratio(*g) >= FACTOR || ratio(*g) <= 1.0 / BOUNDED_FACTOR);
            if far {
                let side = if finite.iter().all(|g| ratio(*g) > 1.0) {
                    Some(Side::Above)
                } else if finite.iter().all(|g| ratio(*g) < 1.0) {
                    Some(Side::Below)
                } else {
                    None
                };
                return Texts::Factor { minimize, side };
            }
        }
        // Two decimals when every number is below one percent (and not
        // all exactly none).
        let small = finite.iter().all(|g| g.abs() < 0.01) && finite.iter().any(|g| *g != 0.0);
        // Never `+100.0%` for what is not: near ±100%, two significant
        // digits of what the estimate (the first) leaves to 100, up to
        // four decimals.
        let near = gs
            .first()
            .filter(|g| g.is_finite() && g.abs() < 1.0)
            .map(|g| (-(100.0 - g.abs() * 100.0).log10()).ceil() as i64 + 1)
            .unwrap_or(0);
        let decimals = near.clamp(if small { 2 } else { 1 }, 4) as usize;
        Texts::Percent(decimals)
    }

    fn ratio(&self, g: f64) -> f64 {
        match self {
            Texts::Factor { minimize: true, .. } => 1.0 - g,
            _ => 1.0 + g,
        }
    }

    /// The number written for `g`, for ordering bounds.
    fn shown(&self, g: f64) -> f64 {
        match self {
            Texts::Percent(_) => g,
            Texts::Factor {
                side: Some(Side::Below),
                ..
            } => 1.0 / self.ratio(g),
            Texts::Factor { .. } => self.ratio(g),
        }
    }

    fn word(&self) -> &'static str {
        match self {
            Texts::Factor {
                minimize,
                side: Some(side),
            } => match (minimize, side) {
                (true, Side::Above) | (false, Side::Below) => "worse",
                _ => "better",
            },
            _ => "the base",
        }
    }

    fn point(&self, g: f64) -> String {
        if !g.is_finite() {
            return "—".into();
        }
        match self {
            // `+0.0`, never `-0.0`.
            Texts::Percent(d) => format!("{:+.*}%", *d, g * 100.0 + 0.0),
            Texts::Factor { .. } => format!("{}× {}", factor(self.shown(g)), self.word()),
        }
    }

    fn bound(&self, g: f64) -> String {
        if !g.is_finite() {
            return "—".into();
        }
        match self {
            Texts::Percent(d) => format!("{:+.*}", *d, g * 100.0 + 0.0),
            Texts::Factor { .. } => format!("{}×", factor(self.shown(g))),
        }
    }
}

/// A factor to three significant digits at most (`3.98`, `43.1`, `8721`).
fn factor(f: f64) -> String {
    if f < 10.0 {
        format!("{f:.2}")
    } else if f < 100.0 {
        format!("{f:.1}")
    } else if f < 1e6 {
        format!("{f:.0}")
    } else if f.is_finite() {
        // A benchmark printing 1e300 must not put 300 digits in a reason.
        format!("{f:.2e}")
    } else {
        "∞".into()
    }
}

/// A probability to three decimals, more when `other` would print the
/// same and differs (so `p = 0.0139 > α′ = 0.0138`, never `0.014 > 0.014`),
/// and `< 0.001` below that.
fn probability(x: f64, other: Option<f64>) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x < 0.001 && other.is_none_or(|o| o >= 0.001) {
        return "< 0.001".into();
    }
    let mut digits = 3;
    while digits < 6
        && let Some(o) = other
        && o != x
        && format!("{x:.digits$}") == format!("{o:.digits$}")
    {
        digits += 1;
    }
    // Small levels (α′ of a late look) read better with two significant
    // digits than as 0.001.
    while digits < 6 && x > 0.0 && x < 10f64.powi(-(digits as i32 - 1)) {
        digits += 1;
    }
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gain of `cand` over `base` in a direction, as the eval-runner
    /// computes it.
    fn g(minimize: bool, base: f64, cand: f64) -> f64 {
        if minimize {
            1.0 - cand / base
        } else {
            cand / base - 1.0
        }
    }

    #[test]
    fn every_sign_magnitude_and_direction_is_written_one_way() {
        // (minimize, cand/base of estimate, low, high as the caller has
        // them (any order), text).
        let table: &[(bool, f64, f64, f64, &str)] = &[
            // Small, both signs, both directions.
            (true, 0.9, 0.85, 0.95, "+10.0% [+5.0, +15.0]"),
            (true, 1.1, 1.15, 1.05, "-10.0% [-15.0, -5.0]"),
            (false, 1.1, 1.05, 1.15, "+10.0% [+5.0, +15.0]"),
            (false, 0.9, 0.85, 0.95, "-10.0% [-15.0, -5.0]"),
            // Crossing zero.
            (true, 0.98, 1.03, 0.93, "+2.0% [-3.0, +7.0]"),
            (false, 1.02, 0.97, 1.07, "+2.0% [-3.0, +7.0]"),
            // Below one percent: two decimals for all three.
            (true, 0.9965, 1.0012, 0.9919, "+0.35% [-0.12, +0.81]"),
            (false, 0.9965, 0.9919, 1.0012, "-0.35% [-0.81, +0.12]"),
            // Large on the bounded side stays a percentage.
            (true, 0.2, 0.3, 0.1, "+80.0% [+70.0, +90.0]"),
            (false, 0.2, 0.1, 0.3, "-80.0% [-90.0, -70.0]"),
            // Past the factor on the unbounded side: all three factors,
            // low to high.
            (true, 6.0, 10.41, 3.46, "6.00× worse [3.46×, 10.4×]"),
            (false, 6.0, 3.46, 10.41, "6.00× better [3.46×, 10.4×]"),
            // Only a bound past it: still one unit.
            (true, 1.482, 3.17, 1.01, "1.48× worse [1.01×, 3.17×]"),
            (false, 1.5, 1.1, 2.5, "1.50× better [1.10×, 2.50×]"),
            // Some on the other side of the base: ratios to the base.
            (true, 1.6, 0.7, 5.1, "1.60× the base [0.70×, 5.10×]"),
            (true, 2.0, 1.5, 1e300, "2.00× worse [1.50×, 1.00e300×]"),
            (false, 2.5, 0.8, 4.0, "2.50× the base [0.80×, 4.00×]"),
            // Exactly the factor.
            (true, 2.0, 1.9, 2.1, "2.00× worse [1.90×, 2.10×]"),
            (false, 2.0, 1.9, 2.1, "2.00× better [1.90×, 2.10×]"),
            // Near 100% on the bounded side without the sense: decimals.
            (
                true,
                0.000115,
                0.00009,
                0.00014,
                "+99.989% [+99.986, +99.991]",
            ),
            // No change.
            (true, 1.0, 1.0, 1.0, "+0.0% [+0.0, +0.0]"),
        ];
        for &(min, e, a, b, want) in table {
            let got = effect_ci(g(min, 1.0, e), (g(min, 1.0, a), g(min, 1.0, b)));
            assert_eq!(got, want, "minimize {min}, {e} [{a}, {b}]");
        }
        // With the sense: past ten times on the bounded side, factors.
        let min = Sense::Minimize;
        let max = Sense::Maximize;
        assert_eq!(
            effect_ci_in(
                min,
                g(true, 1.0, 0.000115),
                (g(true, 1.0, 0.00014), g(true, 1.0, 0.00009))
            ),
            "8696× better [7143×, 11111×]"
        );
        assert_eq!(
            effect_ci_in(
                max,
                g(false, 1.0, 0.05),
                (g(false, 1.0, 0.04), g(false, 1.0, 0.07))
            ),
            "20.0× worse [14.3×, 25.0×]"
        );
        // Below it, percentages (the quickstart's 4.9×).
        assert_eq!(
            effect_ci_in(min, 0.795, (0.793, 0.796)),
            "+79.5% [+79.3, +79.6]"
        );
        assert_eq!(effect_in(max, 0.95), "+95.0%");
        assert_eq!(effect_in(min, 0.95), "20.0× better");
        assert_eq!(effect_in(max, 52.26), "53.3× better");
        // The sense agrees with what the numbers say alone.
        for (e, a, b) in [(6.0, 10.41, 3.46), (0.9, 0.85, 0.95), (1.6, 0.7, 5.1)] {
            assert_eq!(
                effect_ci_in(min, g(true, 1.0, e), (g(true, 1.0, a), g(true, 1.0, b))),
                effect_ci(g(true, 1.0, e), (g(true, 1.0, a), g(true, 1.0, b)))
            );
        }
        assert_eq!(effect(g(true, 1.0, 3.98)), "3.98× worse");
        assert_eq!(effect(g(false, 1.0, 3.98)), "3.98× better");
        assert_eq!(effect(0.123), "+12.3%");
        assert_eq!(effect(-0.004), "-0.40%");
        assert_eq!(effect(f64::NAN), "—");
        assert_eq!(effect(-0.0), "+0.0%");
        assert_eq!(predicted(0.05, 0.05), "+5.0% (sd 5.0%)");
    }

    #[test]
    fn a_p_value_says_what_it_was_compared_with() {
        assert_eq!(p_value(0.041, 0.0139), "p = 0.041 > α′ = 0.014");
        assert_eq!(p_value(0.003, 0.0139), "p = 0.0030 ≤ α′ = 0.014");
        assert_eq!(p_value(0.0139, 0.0138), "p = 0.0139 > α′ = 0.0138");
        assert_eq!(p_value(0.0002, 0.025), "p < 0.001 ≤ α′ = 0.025");
        assert_eq!(p_value(0.2, f64::NAN), "p = 0.200");
        assert_eq!(p_value(0.2, 0.0), "p = 0.200");
    }

    #[test]
    fn a_bound_says_its_level_and_noise() {
        assert_eq!(
            upper_bound(90, 0.106, true),
            "90% upper bound +10.6% (pooled noise)"
        );
        assert_eq!(
            upper_bound(90, -0.035, false),
            "90% upper bound -3.5% (this series' noise)"
        );
    }
}
