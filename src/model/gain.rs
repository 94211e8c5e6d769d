/// A relative gain as people read it: `+12.3%`, `-4.0%`, and a change to
/// at least twice as bad as `3.98× worse` (a minimized metric's gain has no
/// lower bound, and "-298.0%" reads as nothing).
pub(crate) fn gain_text(g: f64) -> String {
    if g <= -1.0 {
        format!("{:.2}× worse", 1.0 - g)
    } else {
        format!("{:+.1}%", g * 100.0)
    }
}

/// A gain with its interval: `+12.3% [+8.0, +16.1]`, or, for a large
/// regression, `3.98× worse [4.10×, 3.90×]`.
pub(crate) fn gain_ci_text(g: f64, ci: (f64, f64)) -> String {
    if g <= -1.0 && ci.1 <= -1.0 {
        format!(
            "{:.2}× worse [{:.2}×, {:.2}×]",
            1.0 - g,
            1.0 - ci.0,
            1.0 - ci.1
        )
    } else if g <= -1.0 || ci.0 <= -1.0 {
        format!(
            "{} [{}, {}]",
            gain_text(g),
            gain_text(ci.0),
            gain_text(ci.1)
        )
    } else {
        format!(
            "{:+.1}% [{:+.1}, {:+.1}]",
            g * 100.0,
            ci.0 * 100.0,
            ci.1 * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_regressions_read_as_ratios() {
        assert_eq!(gain_text(0.123), "+12.3%");
        assert_eq!(gain_text(-0.04), "-4.0%");
        assert_eq!(gain_text(-2.98), "3.98× worse");
        assert_eq!(gain_ci_text(0.1, (0.05, 0.15)), "+10.0% [+5.0, +15.0]");
        assert_eq!(
            gain_ci_text(-2.98, (-3.1, -2.9)),
            "3.98× worse [4.10×, 3.90×]"
        );
        assert_eq!(
            gain_ci_text(-0.9, (-1.5, -0.3)),
            "-90.0% [2.50× worse, -30.0%]"
        );
    }
}
