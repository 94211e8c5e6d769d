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
