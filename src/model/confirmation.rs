use serde::{Deserialize, Serialize};

use super::Pair;

/// Start-of-run commit against the current best: the unbiased cumulative gain.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Confirmation {
    pub start: String,
    pub best: String,
    pub pairs: Vec<Pair>,
    /// Median of the best commit's runs in this test.
    pub best_median: f64,
    pub start_median: f64,
    pub effect: f64,
    pub ci: (f64, f64),
    pub p: f64,
    pub why: String,
}

impl Confirmation {
    /// The one-sided level of each of its two looks: its 97.5% interval
    /// excluding no gain is its one-sided p at most 0.0125, and two looks
    /// at that level keep the claim's one-sided level within 2.5%.
    pub const ALPHA: f64 = 0.0125;

    /// The level of the interval it reports.
    pub const LEVEL: &str = "97.5%";

    /// `p = 0.003 ≤ α′ = 0.0125`.
    pub fn p_text(&self) -> String {
        crate::text::number::p_value(self.p, Self::ALPHA)
    }
}
