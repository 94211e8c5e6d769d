use serde::{Deserialize, Serialize};

use super::{Phase, StopReason, Verdict};

/// Why an iteration was cut short before (or instead of) being measured.
///
/// The phase that cuts says so with a value of this type; EVALUATE turns it
/// into the iteration's verdict and reason, and the reason text is what the
/// archive has always said, so iteration files read the same as before.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Cut {
    /// No plan was accepted: the validator's rule (or `agent` when the agent
    /// itself failed) and its message; `attempts` when the agent had several tries.
    PlanRejected {
        rule: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempts: Option<u32>,
    },
    /// The agent's EXECUTE step failed or changed nothing.
    ExecuteFailed { message: String },
    /// The change broke the scope (a protected path, a path outside
    /// `scope.allow`, a file outside the candidate worktree).
    Scope { message: String },
    /// A budget ran out before `phase` could spend more.
    Budget {
        phase: Phase,
        reason: StopReason,
        detail: String,
    },
    /// The agent's API stayed unavailable (HTTP 429/5xx, a timeout) after
    /// ooda waited `waited_seconds` for it during `phase`: not a failure of
    /// the agent, and not counted toward the failure streak.
    Unavailable {
        phase: Phase,
        waited_seconds: f64,
        message: String,
    },
}

impl Cut {
    /// `invalid` for what the agent failed to do, `blocked` for what it was
    /// not allowed to do (which counts toward the scope red light). A keep
    /// the reviewer refused is no cut: it was measured (see `Review`).
    pub(crate) fn verdict(&self) -> Verdict {
        match self {
            Cut::PlanRejected { .. }
            | Cut::ExecuteFailed { .. }
            | Cut::Budget { .. }
            | Cut::Unavailable { .. } => Verdict::Invalid,
            Cut::Scope { .. } => Verdict::Blocked,
        }
    }

    /// The reason as the iteration file states it.
    pub(crate) fn reason(&self) -> String {
        match self {
            Cut::PlanRejected {
                rule,
                message,
                attempts: Some(n),
            } => format!("plan rejected ({rule}) after {n} attempts: {message}"),
            Cut::PlanRejected { rule, message, .. } => {
                format!("plan rejected ({rule}): {message}")
            }
            Cut::ExecuteFailed { message } => format!("execute failed: {message}"),
            Cut::Scope { message } => message.clone(),
            Cut::Budget {
                phase,
                reason,
                detail,
            } => format!(
                "budget reached before {}: {} ({detail}); the candidate was not measured",
                phase.as_str().to_uppercase(),
                reason.as_str()
            ),
            Cut::Unavailable {
                phase,
                waited_seconds,
                message,
            } => format!(
                "agent unavailable in {} (waited {} for it): {message}",
                phase.as_str().to_uppercase(),
                crate::validate::units::format_duration(std::time::Duration::from_secs_f64(
                    waited_seconds.max(0.0)
                ))
            ),
        }
    }

    /// Reads a reason written by an ooda whose state kept it as text
    /// (`state.json` version 1): the inverse of [`Cut::reason`]. Text that
    /// names no invalid cause was a scope block, as version 1 treated it.
    pub(crate) fn from_reason(text: &str) -> Cut {
        if let Some(rest) = text.strip_prefix("plan rejected (")
            && let Some((rule, rest)) = rest.split_once(')')
        {
            if let Some(rest) = rest.strip_prefix(" after ")
                && let Some((n, message)) = rest.split_once(" attempts: ")
                && let Ok(n) = n.parse()
            {
                return Cut::PlanRejected {
                    rule: rule.to_string(),
                    message: message.to_string(),
                    attempts: Some(n),
                };
            }
            if let Some(message) = rest.strip_prefix(": ") {
                return Cut::PlanRejected {
                    rule: rule.to_string(),
                    message: message.to_string(),
                    attempts: None,
                };
            }
        }
        if let Some(message) = text.strip_prefix("execute failed: ") {
            return Cut::ExecuteFailed {
                message: message.to_string(),
            };
        }
        if let Some(rest) = text.strip_prefix("budget reached before ")
            && let Some((phase, rest)) = rest.split_once(": ")
            && let Some(phase) = Phase::ALL
                .into_iter()
                .find(|p| p.as_str().to_uppercase() == phase)
            && let Some((reason, rest)) = rest.split_once(" (")
            && let Some(reason) = StopReason::parse(reason)
            && let Some(detail) = rest.strip_suffix("); the candidate was not measured")
        {
            return Cut::Budget {
                phase,
                reason,
                detail: detail.to_string(),
            };
        }
        // Version 1 called everything it did not recognize as invalid a
        // scope block; a reason that starts like an invalid one but does not
        // parse stays invalid, its text kept whole.
        if ["plan rejected", "budget reached before"]
            .iter()
            .any(|p| text.starts_with(p))
        {
            return Cut::ExecuteFailed {
                message: text.to_string(),
            };
        }
        Cut::Scope {
            message: text.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Cut> {
        vec![
            Cut::PlanRejected {
                rule: "cites".into(),
                message: "iteration 9 does not exist (cite 0–3)".into(),
                attempts: None,
            },
            Cut::PlanRejected {
                rule: "format".into(),
                message: "no `ooda` block: answer with one".into(),
                attempts: Some(3),
            },
            Cut::PlanRejected {
                rule: "agent".into(),
                message: "the agent exited with code 2: fatal (x)".into(),
                attempts: None,
            },
            Cut::ExecuteFailed {
                message: "the agent changed nothing, so there is nothing to measure".into(),
            },
            Cut::Scope {
                message: "changed protected path(s) bench.sh (scope.protect: bench.sh); protected paths must stay as they are, so that the measurement stays honest".into(),
            },
            Cut::Budget {
                phase: Phase::Evaluate,
                reason: StopReason::BudgetTokens,
                detail: "120 of 100 tokens used".into(),
            },
        ]
    }

    #[test]
    fn reasons_read_back_as_the_same_cut() {
        for cut in all() {
            assert_eq!(Cut::from_reason(&cut.reason()), cut, "{}", cut.reason());
        }
    }

    #[test]
    fn verdicts_and_the_reasons_version_one_wrote() {
        let budget = Cut::Budget {
            phase: Phase::Execute,
            reason: StopReason::BudgetWall,
            detail: "8h of 8h wall-clock time used".into(),
        };
        assert_eq!(
            budget.reason(),
            "budget reached before EXECUTE: budget_wall (8h of 8h wall-clock time used); the candidate was not measured"
        );
        assert_eq!(budget.verdict(), Verdict::Invalid);
        assert_eq!(
            Cut::from_reason("the agent changed files outside the candidate worktree: /x/y"),
            Cut::Scope {
                message: "the agent changed files outside the candidate worktree: /x/y".into()
            }
        );
        assert_eq!(
            Cut::from_reason("plan rejected (agent): the agent timed out after 5m").verdict(),
            Verdict::Invalid
        );
        // Messages with parentheses and colons of their own still parse.
        let odd = Cut::PlanRejected {
            rule: "agent".into(),
            message: "the agent exited with code 1: error (x): y".into(),
            attempts: None,
        };
        assert_eq!(Cut::from_reason(&odd.reason()), odd);
        let budget = Cut::Budget {
            phase: Phase::Execute,
            reason: StopReason::BudgetCost,
            detail: "$2.00 (of $1.50) used".into(),
        };
        assert_eq!(Cut::from_reason(&budget.reason()), budget);
        // A malformed invalid reason stays invalid.
        assert_eq!(
            Cut::from_reason("plan rejected, somehow").verdict(),
            Verdict::Invalid
        );
    }
}
