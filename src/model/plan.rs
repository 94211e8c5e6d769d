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

/// Words in a plan's axes that say the change is meant to change nothing
/// measurable, matched as whole words (lowercased, split at anything but a
/// letter or digit): `style` is not `stylesheet`. Two-word forms are
/// joined: `clean-up`, `clean up` and `no-op` read `cleanup` and `noop`.
const NULL_BY_DESIGN: [&str; 16] = [
    "refactor",
    "refactoring",
    "refactored",
    "cleanup",
    "tidy",
    "tidying",
    "rename",
    "renaming",
    "renamed",
    "readability",
    "style",
    "cosmetic",
    "noop",
    "neutral",
    "reformat",
    "formatting",
];

impl Plan {
    /// The plan itself expected no gain: a code change (no knobs) whose
    /// predicted effect is below the minimum detectable gain `theta1`
    /// either way, or one its axes call a clean-up (a refactor, a rename)
    /// that predicted no gain of `theta1` or more (perhaps a small cost).
    /// When such a change measures as no change, nothing was falsified: the
    /// direction was never expected to help. A plan that predicted a gain
    /// was, whatever it calls itself; a knob point is a search's probe,
    /// whose futility is what the search learns from, so it never is.
    pub(crate) fn null_by_design(&self, theta1: f64) -> bool {
        if !self.knobs.is_empty() || self.predicted_effect >= theta1 {
            return false;
        }
        let said = self.axes.iter().any(|a| {
            let text = format!("{} {}", a.name, a.direction).to_lowercase();
            let words: Vec<&str> = text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            let joined = words.windows(2).map(|p| format!("{}{}", p[0], p[1]));
            words
                .iter()
                .map(|w| w.to_string())
                .chain(joined)
                .any(|w| NULL_BY_DESIGN.contains(&w.as_str()))
        });
        said || self.predicted_effect.abs() < theta1
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(effect: f64, axis: &str) -> Plan {
        Plan {
            hypothesis: "h".into(),
            axes: vec![Axis {
                name: axis.into(),
                direction: "apply".into(),
                step: None,
            }],
            predicted_effect: effect,
            ..Plan::default()
        }
    }

    #[test]
    fn a_plan_that_expects_nothing_is_null_by_design() {
        // Below θ₁ either way: the plan did not expect a detectable change.
        assert!(plan(0.0, "parser").null_by_design(0.05));
        assert!(plan(-0.01, "parser").null_by_design(0.05));
        // A clean-up by its axes, expecting no gain (a small cost, even).
        assert!(plan(-0.08, "Refactoring of the lexer").null_by_design(0.05));
        assert!(plan(-0.08, "rename locals").null_by_design(0.05));
        assert!(plan(-0.08, "a clean-up").null_by_design(0.05));
        assert!(plan(-0.08, "no-op").null_by_design(0.05));
        // Whole words only: a stylesheet is a direction.
        assert!(!plan(-0.08, "stylesheet").null_by_design(0.05));
        // A plan that expected a gain is a direction, whatever it calls itself.
        assert!(!plan(0.08, "parser").null_by_design(0.05));
        assert!(!plan(0.08, "refactor the parser").null_by_design(0.05));
        // A knob point is the search's probe, never null by design.
        let mut knob = plan(0.0, "TILE");
        knob.knobs
            .insert("TILE".into(), crate::model::KnobValue::Int(8));
        assert!(!knob.null_by_design(0.05));
    }
}
