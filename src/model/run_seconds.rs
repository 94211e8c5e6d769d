use serde::{Deserialize, Serialize};

/// How long one run of the metric command took on each side of a decision:
/// the median wall-clock seconds of its timed runs.
///
/// Why it is kept: the builtin search plans with time. A far corner of a
/// knob space can be several times slower to run than the best (SQLite's
/// were 3 to 7 times), so what a point costs to measure is predicted from
/// these, as its effect is from the pairs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct RunSeconds {
    /// `None` for a screen: its runs are compared with the base's runs on
    /// record, and no base run was timed with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<f64>,
    pub cand: f64,
}
