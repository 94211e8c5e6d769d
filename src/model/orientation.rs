//! ORIENT's output, as the checkpoint holds it: the statistics the next
//! decision will use. Computed by the eval-runner (`eval/orientation.rs`).

use serde::{Deserialize, Serialize};

use super::NoiseHistory;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Orientation {
    /// The pooled noise of the archive: the A/A calibration plus every
    /// iteration's within-iteration spread (`None` before any measurement).
    pub noise: Option<NoiseHistory>,
    /// The minimum detectable gain in force, as a relative gain.
    pub theta1: f64,
    /// The per-look level α′ of the sequential test.
    pub alpha_look: f64,
    /// δ₀ = ln(1 + noise floor), the practical minimum effect.
    pub delta0: f64,
    /// What the runner's analysis has to say to the next PLAN: the
    /// pipeline-analyzer's latest report and the last iteration's alarms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<String>,
}
