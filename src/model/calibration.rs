use serde::{Deserialize, Serialize};

use super::Pair;

/// Iteration 0's A/A pairs: the same tree on both sides.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Calibration {
    pub pairs: Vec<Pair>,
    pub median: f64,
    /// Standard deviation of ln(value) over all runs.
    pub run_sd: f64,
    /// Standard deviation of the A/A log ratios: the noise a decision faces.
    pub noise_sd: f64,
    pub mean_d: f64,
    pub pairs_per_decision: u32,
    pub theta1: f64,
    /// The per-look level α′ of the sequential test, simulated once per run.
    #[serde(default)]
    pub alpha_look: Option<f64>,
    /// What to try when the noise hides the gains the user cares about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}
