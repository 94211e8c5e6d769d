use serde::{Deserialize, Serialize};

use super::SubagentReport;

/// What REVIEW decided about a kept candidate: every reviewer's report, and
/// the simplifier's version of it on its way. `phases::next` routes it: a
/// block goes on to LEARN as a discard of kind `blocked_by_review`, a
/// simplification still [`SimplifyStage::Proposed`] goes back to EVALUATE
/// for its non-inferiority test.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Review {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<SubagentReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simplified: Option<Simplification>,
}

/// The simplifier's version of a kept candidate, in flight: proposed, then
/// measured against the kept one for non-inferiority, then reviewed, then
/// committed instead of it or not ([`SimplifyStage`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Simplification {
    pub tree: String,
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
    pub stage: SimplifyStage,
    /// The reviewers' reports on the simplified diff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<SubagentReport>,
    /// Why it was or was not taken, in words.
    #[serde(default)]
    pub reason: String,
}

/// Where a simplification is: the order of its lifecycle, one stage at a
/// time, each carrying what it has.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SimplifyStage {
    /// Proposed: EVALUATE measures it against the keep next (out of
    /// budget, the keep stands untested against it).
    Proposed,
    /// Measured no worse than the keep: REVIEW judges its diff next.
    Measured(NonInferiority),
    /// Settled and not taken: refused before any test, measured worse, or
    /// blocked by a reviewer (with its test, when it had one).
    Rejected(Option<NonInferiority>),
    /// Settled and taken: its tree is committed instead of the keep.
    Accepted(NonInferiority),
}

impl SimplifyStage {
    /// The non-inferiority test, once it ran.
    pub(crate) fn test(&self) -> Option<&NonInferiority> {
        match self {
            SimplifyStage::Proposed => None,
            SimplifyStage::Measured(t) | SimplifyStage::Accepted(t) => Some(t),
            SimplifyStage::Rejected(t) => t.as_ref(),
        }
    }

    /// Nothing is left to do: taken or not.
    pub(crate) fn settled(&self) -> bool {
        matches!(
            self,
            SimplifyStage::Rejected(_) | SimplifyStage::Accepted(_)
        )
    }
}

impl Simplification {
    /// A proposal: the simplifier's tree against the kept one.
    pub(crate) fn proposed(tree: String, kept_tree: String, lines_before: usize) -> Simplification {
        Simplification {
            tree,
            kept_tree,
            lines_before,
            lines_after: 0,
            changed_paths: Vec::new(),
            stage: SimplifyStage::Proposed,
            reports: Vec::new(),
            reason: String::new(),
        }
    }

    /// Whether its tree is what gets committed.
    pub(crate) fn accepted(&self) -> bool {
        matches!(self.stage, SimplifyStage::Accepted(_))
    }

    /// The record the iteration file keeps of it (its format predates the
    /// stages: three flags and the test).
    pub(crate) fn archived(&self) -> Simplified {
        Simplified {
            tree: self.tree.clone(),
            measured: self.stage != SimplifyStage::Proposed,
            kept_tree: self.kept_tree.clone(),
            lines_before: self.lines_before,
            lines_after: self.lines_after,
            changed_paths: self.changed_paths.clone(),
            test: self.stage.test().cloned(),
            reviewed: self.stage.settled(),
            reports: self.reports.clone(),
            accepted: self.accepted(),
            reason: self.reason.clone(),
        }
    }
}

/// A simplification as the iteration file records it, settled or not.
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
    pub(crate) fn blocked(&self) -> Option<String> {
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
