use serde::{Deserialize, Serialize};

/// Why a measured candidate was not kept. Only a candidate shown worse, or
/// shown unable to reach the smallest gain this setup can see, is
/// falsified; one the measurement could not settle is inconclusive, and a
/// 95% interval that excludes zero must never be filed under "falsified".
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DiscardKind {
    /// Significantly worse than the base: the 95% interval is below zero.
    Worse,
    /// The interval rules out a gain of θ₁ or more: the rule's 90% bound
    /// (pooled noise) and the 95% interval shown (this iteration's own).
    Futile,
    /// Neither: it may be tried again.
    Inconclusive,
    /// Screened out: an exploratory point whose single run showed no sign
    /// of the clear gain the screen looks for. One run settles nothing about
    /// the direction, so it falsifies nothing and does not count towards a
    /// stall.
    Screened,
    /// Measured as a keep, refused by a reviewer (gaming the benchmark, a
    /// weakened test, a debug print). It says nothing about the direction,
    /// so it falsifies nothing; it counts toward the failure streak.
    BlockedByReview,
    /// A change its own plan expected to make no difference (a clean-up, a
    /// refactor, a rename) and measured as making none (futile or
    /// inconclusive). A null change that stayed null is not a direction
    /// that failed: it falsifies nothing, and is not offered again as one.
    Neutral,
}

impl DiscardKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiscardKind::Worse => "worse",
            DiscardKind::Futile => "futile",
            DiscardKind::Inconclusive => "inconclusive",
            DiscardKind::Screened => "screened",
            DiscardKind::BlockedByReview => "blocked_by_review",
            DiscardKind::Neutral => "neutral",
        }
    }

    /// A measured "no" that must not be retried.
    pub fn falsifies(self) -> bool {
        matches!(self, DiscardKind::Worse | DiscardKind::Futile)
    }

    /// The kind of a discard from its 95% interval (gains in the Brief's
    /// direction) and whether the futility bound (the one-sided 90% upper
    /// bound, on the log scale the rule works in) is below θ₁.
    pub fn of(ci95: (f64, f64), futile: bool) -> DiscardKind {
        if ci95.1 < 0.0 {
            DiscardKind::Worse
        } else if futile {
            DiscardKind::Futile
        } else {
            DiscardKind::Inconclusive
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_that_excludes_zero_upwards_is_never_falsified() {
        // +21.7% [+2.8, +44.0], with θ₁ 8%: not kept at its α′, but not "no" either.
        assert_eq!(
            DiscardKind::of((0.028, 0.44), false),
            DiscardKind::Inconclusive
        );
        assert_eq!(DiscardKind::of((-0.2, -0.05), true), DiscardKind::Worse);
        assert_eq!(DiscardKind::of((-0.03, 0.06), true), DiscardKind::Futile);
        assert!(DiscardKind::Worse.falsifies() && DiscardKind::Futile.falsifies());
        assert!(!DiscardKind::Inconclusive.falsifies());
        assert!(!DiscardKind::BlockedByReview.falsifies());
        assert!(!DiscardKind::Screened.falsifies());
        assert!(!DiscardKind::Neutral.falsifies());
    }
}
