use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Why a run ended. Red reasons wait for `ooda ack`; budget reasons wait for
/// a raised budget; the others are final.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    GoalReached,
    BudgetIterations,
    BudgetWall,
    BudgetCost,
    BudgetTokens,
    Stalled,
    Interrupted,
    RedOscillation,
    RedDivergence,
    RedModelMismatch,
    RedFailureStreak,
    /// Iterations in a row never reached EVALUATE (the agent produced no
    /// change to measure).
    RedAgentIneffective,
    RedScope,
    /// Without the sandbox, an agent step changed what it must not touch
    /// (the user's checkout, refs, git config or hooks, a Brief, ooda.yaml).
    RedTamper,
    /// An anomaly rule `anomalies.stop_on` names fired (a budget nearly
    /// spent, an iteration's tokens far above the run's median).
    RedAnomaly,
}

impl StopReason {
    pub const ALL: [StopReason; 15] = [
        StopReason::GoalReached,
        StopReason::BudgetIterations,
        StopReason::BudgetWall,
        StopReason::BudgetCost,
        StopReason::BudgetTokens,
        StopReason::Stalled,
        StopReason::Interrupted,
        StopReason::RedOscillation,
        StopReason::RedDivergence,
        StopReason::RedModelMismatch,
        StopReason::RedFailureStreak,
        StopReason::RedAgentIneffective,
        StopReason::RedScope,
        StopReason::RedTamper,
        StopReason::RedAnomaly,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::GoalReached => "goal_reached",
            StopReason::BudgetIterations => "budget_iterations",
            StopReason::BudgetWall => "budget_wall",
            StopReason::BudgetCost => "budget_cost",
            StopReason::BudgetTokens => "budget_tokens",
            StopReason::Stalled => "stalled",
            StopReason::Interrupted => "interrupted",
            StopReason::RedOscillation => "red_oscillation",
            StopReason::RedDivergence => "red_divergence",
            StopReason::RedModelMismatch => "red_model_mismatch",
            StopReason::RedFailureStreak => "red_failure_streak",
            StopReason::RedAgentIneffective => "red_agent_ineffective",
            StopReason::RedScope => "red_scope",
            StopReason::RedTamper => "red_tamper",
            StopReason::RedAnomaly => "red_anomaly",
        }
    }

    /// The reason spelled as `as_str` spells it.
    pub fn parse(text: &str) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.as_str() == text)
    }

    pub fn is_red(self) -> bool {
        matches!(
            self,
            StopReason::RedOscillation
                | StopReason::RedDivergence
                | StopReason::RedModelMismatch
                | StopReason::RedFailureStreak
                | StopReason::RedAgentIneffective
                | StopReason::RedScope
                | StopReason::RedTamper
                | StopReason::RedAnomaly
        )
    }

    pub fn is_budget(self) -> bool {
        matches!(
            self,
            StopReason::BudgetIterations
                | StopReason::BudgetWall
                | StopReason::BudgetCost
                | StopReason::BudgetTokens
        )
    }
}

/// A stop, with the evidence in words a human can check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stop {
    pub reason: StopReason,
    /// The evidence, in words a human can check.
    pub detail: String,
    pub at: DateTime<Utc>,
    pub iteration: u32,
    /// The setting of `ooda.yaml` that decided it (`defaults.stall_after`,
    /// a red light's threshold), when one did: raised, the stop is decided
    /// again and may be lifted (`phases/check.rs`, `lifted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
}

/// A Brief's status as `summary.md` and `ooda status` show it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum Status {
    Green,
    Yellow,
    Red,
    Done,
    Stopped,
}

impl Status {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Status::Green => "GREEN",
            Status::Yellow => "YELLOW",
            Status::Red => "RED",
            Status::Done => "DONE",
            Status::Stopped => "STOPPED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn red_and_budget_reasons_follow_their_names() {
        for r in StopReason::ALL {
            assert_eq!(r.is_red(), r.as_str().starts_with("red_"), "{r:?}");
            assert_eq!(r.is_budget(), r.as_str().starts_with("budget_"), "{r:?}");
            assert_eq!(StopReason::parse(r.as_str()), Some(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
    }
}
