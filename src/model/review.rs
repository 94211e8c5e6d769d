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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Simplified {
    pub tree: String,
    pub measured: bool,
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
