use serde::{Deserialize, Serialize};

use super::SubagentReport;

/// What REVIEW decided about a kept candidate: every reviewer's report, and
/// (once the simplifier exists) a simpler equivalent to measure.
/// `phases::next` routes it: a block goes on to LEARN as a discard of kind
/// `blocked_by_review`, a simplified candidate not yet measured goes back to
/// EVALUATE for its non-inferiority test.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Review {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<SubagentReport>,
    /// A simpler equivalent change, as a tree, and whether EVALUATE has
    /// measured it against the kept candidate yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simplified: Option<Simplified>,
}

/// The simplifier's version of a kept candidate, on its way: measured
/// against the kept one for non-inferiority, then reviewed, then (both
/// passed) committed instead of it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Simplified {
    pub tree: String,
    /// EVALUATE has run the non-inferiority test (or skipped it).
    pub measured: bool,
    /// The kept candidate's tree (what the candidate worktree holds).
    #[serde(default)]
    pub kept_tree: String,
    /// Lines the change touches (base to candidate), kept and simplified.
    #[serde(default)]
    pub lines_before: usize,
    #[serde(default)]
    pub lines_after: usize,
    /// The simplified candidate's changed paths.
    #[serde(default)]
    pub changed_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<NonInferiority>,
    /// REVIEW has looked at the simplified diff (after a passed test).
    #[serde(default)]
    pub reviewed: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<super::SubagentReport>,
    /// What is committed is the simplified tree.
    #[serde(default)]
    pub accepted: bool,
    /// Why it was or was not taken, in words.
    #[serde(default)]
    pub reason: String,
}

/// The paired test of a simplified candidate against the kept one: it may
/// be worse by less than `margin` (a fraction), no more.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NonInferiority {
    pub margin: f64,
    pub non_inferior: bool,
    /// Gain of the simplified over the kept, with its 95% interval.
    pub effect: f64,
    pub ci: (f64, f64),
    pub p: f64,
    pub pairs: u32,
    pub reason: String,
}

impl Review {
    /// The findings of the reports that block, in one line; `None` when no
    /// reviewer blocked.
    pub fn blocked(&self) -> Option<String> {
        let blocking: Vec<String> = self
            .reports
            .iter()
            .filter(|r| r.blocks())
            .map(|r| {
                let what: Vec<String> = r.findings.iter().map(|f| f.text()).collect();
                match (what.is_empty(), &r.problem) {
                    (false, _) => format!("{}: {}", r.name, what.join("; ")),
                    (true, Some(p)) => format!("{}: {p}", r.name),
                    (true, None) => format!("{}: blocked without findings", r.name),
                }
            })
            .collect();
        (!blocking.is_empty()).then(|| blocking.join(" | "))
    }
}
