use serde::{Deserialize, Serialize};

use super::Role;

/// One finding of a reviewer: where, which rule, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Finding {
    #[serde(default)]
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub rule: String,
    pub why: String,
    /// Shown, flagged, but not a reason to block (a builtin rule that can
    /// be honest code: a `console.log`, a binary file, test configuration).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advisory: bool,
}

impl Finding {
    /// `src/a.rs:12 [todo] a new TODO`, as iteration files list it.
    pub fn text(&self) -> String {
        let place = match (self.file.as_str(), self.line) {
            ("", _) => String::new(),
            (f, Some(l)) => format!("{f}:{l} "),
            (f, None) => format!("{f} "),
        };
        let note = if self.advisory { " (advisory)" } else { "" };
        format!("{place}[{}] {}{note}", self.rule, self.why)
    }
}

/// A reviewer's answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    Approve,
    Block,
}

/// How a subagent's run ended. A subagent that fails is data: its
/// definition's `on_error` decides what its failure means.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SubagentOutcome {
    /// It ran and answered.
    Done,
    /// It failed (non-zero exit, no readable answer, an edit it must not make).
    Failed,
    /// It was cut at its timeout.
    TimedOut,
    /// It could not run here (a command subagent without a command profile).
    Skipped,
}

impl SubagentOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentOutcome::Done => "done",
            SubagentOutcome::Failed => "failed",
            SubagentOutcome::TimedOut => "timed_out",
            SubagentOutcome::Skipped => "skipped",
        }
    }
}

/// What one subagent did in one iteration, as the iteration file keeps it.
/// The whole report (with the context it was given, by name) is archived as
/// JSON under `artifacts/`, at `report`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SubagentReport {
    /// The definition's name (its file stem).
    pub name: String,
    pub role: Role,
    /// `builtin` or `command:<profile>`.
    pub driver: String,
    /// The id of its `subagent_started` event: where its trace hangs.
    pub delegation: String,
    pub outcome: SubagentOutcome,
    pub seconds: f64,
    /// Why it failed or was skipped, and what `on_error` made of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// A reviewer's verdict (after `on_error`, for one that failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<ReviewVerdict>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The reviewer suspects the change games the benchmark: flagged in
    /// `summary.md` even when it approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspicious: bool,
    /// A command synthesizer's paragraph for this keep's note (kept here so
    /// later notes of the run are rendered with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrative: Option<String>,
    /// The report as JSON, relative to the iterations folder. Its model
    /// calls are the iteration's `agent_calls` of phase `review`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
}

impl SubagentReport {
    /// Whether this report blocks the keep.
    pub fn blocks(&self) -> bool {
        self.verdict == Some(ReviewVerdict::Block)
    }
}
