use serde::{Deserialize, Serialize};

use super::Point;

/// A direction of change a plan declares (a knob, or any name the agent gives).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Axis {
    pub name: String,
    pub direction: String,
    /// The size of the move on this axis, when known (knob steps), so the
    /// oscillation detector can tell bisection from flip-flopping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
}

/// `TILE up`: how the archive, the prompts and the ledger name a direction.
impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.direction)
    }
}

/// The PLAN result: one change, with a falsifiable prediction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Plan {
    pub hypothesis: String,
    #[serde(default)]
    pub change: String,
    #[serde(default)]
    pub cites: Vec<u32>,
    #[serde(default)]
    pub axes: Vec<Axis>,
    pub predicted_effect: f64,
    pub predicted_sd: f64,
    #[serde(default)]
    pub knobs: Point,
    /// Screen before measuring in full: one run of the candidate against
    /// the base's recent runs, and the paired test only when that run shows
    /// a clear gain. For exploratory points, where most tries find nothing
    /// and a full test of each would spend the night on a few of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub screen: bool,
}

/// A named pattern: a lesson worth carrying to later plans.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Pattern {
    pub name: String,
    pub lesson: String,
}

/// The LEARN result: prose the archive keeps beside the runner's data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LearnResult {
    #[serde(default)]
    pub patterns: Vec<Pattern>,
    #[serde(default)]
    pub falsified: Option<String>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default)]
    pub narrative: Option<String>,
}
