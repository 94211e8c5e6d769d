//! The one way an effect, its interval and its test are written.
//!
//! A relative gain `g` is in the Brief's direction (`+0.10` = 10% better):
//! for a minimized metric `g = 1 − cand/base`, for a maximized one
//! `g = cand/base − 1`. Each has one unbounded side (a minimized metric can
//! get any number of times worse, a maximized one any number of times
//! better), where a percentage reads as nothing ("-549.8%"). So past
//! [`FACTOR`] on that side every number of the text (the estimate and both
//! bounds) is written as the ratio cand/base with "×"; otherwise all three
//! are percentages. Never one unit for the estimate and another for a
//! bound, and the bounds are always low to high.
//!
//! Which side is unbounded follows from the numbers: only a minimized
//! metric has `g ≤ −1`, only a maximized one `g ≥ 1`.
//!
//! A p-value is never written without what it was compared with
//! ([`p_value`]), and a one-sided bound says its level and whether it used
//! the pooled noise history ([`bound`]).

/// From this ratio of the candidate's value to the base's on the unbounded
/// side (twice the base's value or more), effects are written as factors.
pub(crate) const FACTOR: f64 = 2.0;

/// A gain alone: `+12.3%`, `-0.35%`, `3.98× worse`.
pub(crate) fn effect(g: f64) -> String {
    Texts::of(&[g]).point(g)
}

/// A gain and its interval, in one unit, low bound first:
/// `+12.3% [+8.0, +16.1]`, `3.98× worse [3.90×, 4.10×]`.
pub(crate) fn effect_ci(g: f64, ci: (f64, f64)) -> String {
    let t = Texts::of(&[g, ci.0, ci.1]);
    // Low to high in the unit written: a minimized metric's worst bound is
    // its lowest gain and its highest ratio.
    let (lo, hi) = if t.ratio(ci.0) <= t.ratio(ci.1) {
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
    /// Percentages with this many decimals (two when every number is below
    /// one percent, so `+0.35%` is not `+0.3%` beside `+0.4%`).
    Percent(usize),
    /// Ratios cand/base. `Some(word)` when all are past the base on the
    /// unbounded side ("worse" for a minimized metric, "better" for a
    /// maximized one); `None` when some are on the other side of it.
    Factor {
        minimize: bool,
        word: Option<&'static str>,
    },
}

impl Texts {
    fn of(gs: &[f64]) -> Texts {
        let finite = || gs.iter().copied().filter(|g| g.is_finite());
        let worse = finite().any(|g| g <= 1.0 - FACTOR);
        let better = finite().any(|g| g >= FACTOR - 1.0);
        if worse || better {
            // A minimized metric's gains are below 1, a maximized one's
            // above −1: `worse` and `better` together cannot come from one
            // metric, and then "worse" wins as the safer reading.
            let minimize = worse;
            let ratio = |g: f64| if minimize { 1.0 - g } else { 1.0 + g };
            let past = finite().all(|g| ratio(g) > 1.0);
            let word = past.then_some(if minimize { "worse" } else { "better" });
            return Texts::Factor { minimize, word };
        }
        let small = finite().all(|g| g.abs() < 0.01);
        Texts::Percent(if small { 2 } else { 1 })
    }

    fn ratio(&self, g: f64) -> f64 {
        match self {
            Texts::Factor { minimize: true, .. } => 1.0 - g,
            _ => 1.0 + g,
        }
    }

    fn point(&self, g: f64) -> String {
        if !g.is_finite() {
            return "—".into();
        }
        match self {
            Texts::Percent(d) => format!("{:+.*}%", *d, g * 100.0),
            Texts::Factor { word: Some(w), .. } => format!("{:.2}× {w}", self.ratio(g)),
            Texts::Factor { word: None, .. } => format!("{:.2}× the base", self.ratio(g)),
        }
    }

    fn bound(&self, g: f64) -> String {
        if !g.is_finite() {
            return "—".into();
        }
        match self {
            Texts::Percent(d) => format!("{:+.*}", *d, g * 100.0),
            Texts::Factor { .. } => format!("{:.2}×", self.ratio(g)),
        }
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
            (true, 6.0, 10.41, 3.46, "6.00× worse [3.46×, 10.41×]"),
            (false, 6.0, 3.46, 10.41, "6.00× better [3.46×, 10.41×]"),
            // Only a bound past it: still one unit.
            (true, 1.482, 3.17, 1.01, "1.48× worse [1.01×, 3.17×]"),
            (false, 1.5, 1.1, 2.5, "1.50× better [1.10×, 2.50×]"),
            // Some on the other side of the base: ratios to the base.
            (true, 1.6, 0.7, 5.1, "1.60× the base [0.70×, 5.10×]"),
            (false, 2.5, 0.8, 4.0, "2.50× the base [0.80×, 4.00×]"),
            // Exactly the factor.
            (true, 2.0, 1.9, 2.1, "2.00× worse [1.90×, 2.10×]"),
            (false, 2.0, 1.9, 2.1, "2.00× better [1.90×, 2.10×]"),
            // No change.
            (true, 1.0, 1.0, 1.0, "+0.00% [+0.00, +0.00]"),
        ];
        for &(min, e, a, b, want) in table {
            let got = effect_ci(g(min, 1.0, e), (g(min, 1.0, a), g(min, 1.0, b)));
            assert_eq!(got, want, "minimize {min}, {e} [{a}, {b}]");
        }
        assert_eq!(effect(g(true, 1.0, 3.98)), "3.98× worse");
        assert_eq!(effect(g(false, 1.0, 3.98)), "3.98× better");
        assert_eq!(effect(0.123), "+12.3%");
        assert_eq!(effect(-0.004), "-0.40%");
        assert_eq!(effect(f64::NAN), "—");
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
