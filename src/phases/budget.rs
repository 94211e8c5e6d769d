//! Budgets: iterations, wall clock, tokens and cost.
//!
//! Checked before an iteration starts and before each phase that spends
//! (`next.rs` turns the answer into a stop or a cut). Agent calls of an
//! iteration not yet archived count too, so a budget cannot be overrun by
//! the iteration that crosses it.

use chrono::Utc;

use crate::archive::history::View;
use crate::archive::state::State;
use crate::brief::format_duration;
use crate::model::{Budget, Stop, StopReason, Usage};

/// The first limit of `budget` that is used up, as a stop.
pub(crate) fn stop(budget: &Budget, state: &State, history: View) -> Option<Stop> {
    let in_flight = state
        .current
        .as_ref()
        .filter(|c| !c.done.archived())
        .map(|c| Usage::sum(c.agent_calls.iter().map(|call| &call.usage)))
        .unwrap_or_default();
    let done = history.len().saturating_sub(1) as u32;
    let last = history.facts().last().map(|r| r.iteration).unwrap_or(0);
    let (tokens_done, cost_done) = history.spent();
    let mk = |reason, detail: String| {
        Some(Stop {
            reason,
            detail,
            at: Utc::now(),
            iteration: last,
            setting: None,
        })
    };
    if let Some(n) = budget.iterations
        && done >= n
    {
        return mk(
            StopReason::BudgetIterations,
            format!("{done} of {n} iterations used"),
        );
    }
    if let Some(w) = budget.wall {
        let elapsed = (Utc::now() - state.created_at).to_std().unwrap_or_default();
        if elapsed >= w {
            return mk(
                StopReason::BudgetWall,
                format!(
                    "{} of {} wall-clock time used",
                    format_duration(elapsed),
                    format_duration(w)
                ),
            );
        }
    }
    let tokens: u64 = tokens_done + in_flight.total();
    // 0 is "no limit", as for cost: a Brief can lift a default limit.
    if let Some(t) = budget.tokens
        && t > 0
        && tokens >= t
    {
        return mk(
            StopReason::BudgetTokens,
            format!("{tokens} of {t} tokens used"),
        );
    }
    let cost: f64 = cost_done + in_flight.cost_usd.unwrap_or(0.0);
    if let Some(c) = budget.cost_usd
        && c > 0.0
        && cost >= c
    {
        return mk(
            StopReason::BudgetCost,
            format!(
                "{} of {} used",
                crate::validate::units::format_usd(cost),
                crate::validate::units::format_usd(c)
            ),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;

    fn state() -> State {
        State {
            version: crate::archive::state::STATE_VERSION,
            brief: "b".into(),
            run_id: "r".into(),
            seed: 0,
            created_at: Utc::now(),
            start_commit: String::new(),
            best_commit: String::new(),
            brief_hash: String::new(),
            next_iteration: 2,
            stop: None,
            yellow: None,
            pending_ack: None,
            current: None,
            unconfined: None,
            tick_mark: None,
            failing: None,
        }
    }

    use crate::model::IterationRecord;

    fn spent(tokens: u64, cost: f64) -> crate::archive::history::History {
        let mut r = IterationRecord::new(1, Verdict::Discard);
        r.tokens = tokens;
        r.cost_usd = cost;
        crate::archive::history::History::of(vec![IterationRecord::new(0, Verdict::Baseline), r])
    }

    #[test]
    fn zero_token_and_cost_limits_mean_no_limit() {
        let history = spent(5_000, 2.0);
        let zero = Budget {
            tokens: Some(0),
            cost_usd: Some(0.0),
            ..Budget::default()
        };
        assert_eq!(stop(&zero, &state(), history.view()), None);
        let tight = Budget {
            tokens: Some(4_000),
            ..Budget::default()
        };
        let s = stop(&tight, &state(), history.view()).unwrap();
        assert_eq!(s.reason, StopReason::BudgetTokens);
        assert_eq!(s.detail, "5000 of 4000 tokens used");
        let cheap = Budget {
            cost_usd: Some(0.005),
            ..Budget::default()
        };
        let s = stop(&cheap, &state(), spent(0, 0.0072).view()).unwrap();
        assert_eq!(s.detail, "$0.0072 of $0.0050 used");
    }
}
