use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::AlarmKind;

/// What an `anomaly` event is about: something the runner noticed and
/// wrote down without it deciding the iteration (a YELLOW alarm is one too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnomalyKind {
    /// `state.json` was behind the archive, or unreadable, and was rebuilt.
    StateRebuilt,
    /// An agent changed files outside the candidate worktree.
    ScopeViolation,
    /// An agent committed in the candidate worktree; the runner undid it.
    AgentCommit,
    /// An agent edited files during LEARN; the edits were discarded.
    AgentEditInLearn,
    /// An agent wrote git-ignored files in EXECUTE; they were removed before
    /// measuring (they would be measured but never committed).
    AgentIgnoredFiles,
    /// A budget ran out before a phase that spends.
    BudgetCut,
    /// This iteration's pair spread was far above the noise history.
    NoiseChanged,
    /// The confirmation test could not be measured.
    ConfirmationFailed,
    /// A kept candidate met the target but the confirmation did not.
    TargetNotConfirmed,
    /// The llm driver's prompt builder refused a prompt that would show one
    /// stored result in two forms.
    ContextDuplicate,
    /// The `notify:` command of `ooda.yaml` failed on a stop.
    NotifyFailed,
    /// A judge subagent could not judge the run, or broke its fence.
    JudgeFailed,
    /// The agent gave the same answer again after being told what was
    /// wrong with it (a small model at temperature 0 does).
    RepeatedAnswer,
    /// A plan's prediction is the example of the PLAN prompt, not an
    /// estimate of the model's own.
    ExamplePrediction,
    /// A YELLOW alarm of CHECK or EVALUATE.
    Alarm(AlarmKind),
}

impl AnomalyKind {
    pub fn as_str(&self) -> &str {
        match self {
            AnomalyKind::StateRebuilt => "state_rebuilt",
            AnomalyKind::ScopeViolation => "scope_violation",
            AnomalyKind::AgentCommit => "agent_commit",
            AnomalyKind::AgentEditInLearn => "agent_edit_in_learn",
            AnomalyKind::AgentIgnoredFiles => "agent_ignored_files",
            AnomalyKind::BudgetCut => "budget_cut",
            AnomalyKind::NoiseChanged => "noise_changed",
            AnomalyKind::ConfirmationFailed => "confirmation_failed",
            AnomalyKind::TargetNotConfirmed => "target_not_confirmed",
            AnomalyKind::ContextDuplicate => "context_duplicate",
            AnomalyKind::NotifyFailed => "notify_failed",
            AnomalyKind::JudgeFailed => "judge_failed",
            AnomalyKind::RepeatedAnswer => "repeated_answer",
            AnomalyKind::ExamplePrediction => "example_prediction",
            AnomalyKind::Alarm(k) => k.as_str(),
        }
    }

    /// An alarm kind's own spelling wins (`noise_changed` is both).
    pub fn parse(text: &str) -> AnomalyKind {
        [
            AnomalyKind::StateRebuilt,
            AnomalyKind::ScopeViolation,
            AnomalyKind::AgentCommit,
            AnomalyKind::AgentEditInLearn,
            AnomalyKind::AgentIgnoredFiles,
            AnomalyKind::BudgetCut,
            AnomalyKind::NoiseChanged,
            AnomalyKind::ConfirmationFailed,
            AnomalyKind::TargetNotConfirmed,
            AnomalyKind::ContextDuplicate,
            AnomalyKind::NotifyFailed,
            AnomalyKind::JudgeFailed,
            AnomalyKind::RepeatedAnswer,
            AnomalyKind::ExamplePrediction,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
        .unwrap_or_else(|| AnomalyKind::Alarm(AlarmKind::parse(text)))
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AnomalyKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AnomalyKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AnomalyKind, D::Error> {
        Ok(AnomalyKind::parse(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_back_as_written() {
        for k in [
            AnomalyKind::StateRebuilt,
            AnomalyKind::BudgetCut,
            AnomalyKind::Alarm(AlarmKind::Plateau),
            AnomalyKind::Alarm(AlarmKind::Other("new".into())),
        ] {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(
                serde_json::from_str::<AnomalyKind>(&json).unwrap(),
                k,
                "{json}"
            );
        }
    }
}
