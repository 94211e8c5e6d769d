use serde::{Deserialize, Serialize};

use super::{Alarm, Comparison, Cut, DiscardKind, GuardResult, Verdict};

/// What EVALUATE ended in, before REVIEW and COMMIT act on it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct EvalOutcome {
    pub verdict: Verdict,
    /// Why a measured discard was not kept (see [`DiscardKind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<DiscardKind>,
    pub reason: String,
    pub guards: Vec<GuardResult>,
    pub comparison: Option<Comparison>,
    pub failure_output: Option<String>,
    /// The base, not the candidate, failed: the candidate's point is untried.
    #[serde(default)]
    pub base_failed: bool,
    /// YELLOW alarms raised while evaluating (e.g. an identical candidate).
    #[serde(default)]
    pub alarms: Vec<Alarm>,
    /// What the timed runs wrote in their worktrees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_writes: Option<super::RunWrites>,
}

impl EvalOutcome {
    /// The outcome of an iteration that was cut short before it was measured.
    pub(crate) fn cut(cut: &Cut) -> EvalOutcome {
        EvalOutcome::unmeasured(cut.verdict(), cut.reason())
    }

    /// A verdict with nothing measured (no guards ran, no pairs).
    pub(crate) fn unmeasured(verdict: Verdict, reason: String) -> EvalOutcome {
        EvalOutcome {
            verdict,
            discard: None,
            reason,
            guards: Vec::new(),
            comparison: None,
            failure_output: None,
            base_failed: false,
            alarms: Vec::new(),
            run_writes: None,
        }
    }
}
