//! Budgets: iterations, wall clock, tokens and cost.
//!
//! Checked before an iteration starts and before each phase that spends
//! (`next.rs` turns the answer into a stop or a cut). Agent calls of an
//! iteration not yet archived count too, so a budget cannot be overrun by
//! the iteration that crosses it.

use chrono::Utc;

use crate::brief::format_duration;
use crate::model::{Budget, IterationRecord, Stop, StopReason, Usage};
use crate::state::State;

/// The first limit of `budget` that is used up, as a stop.
pub(crate) fn stop(budget: &Budget, state: &State, history: &[IterationRecord]) -> Option<Stop> {
    let in_flight = state
        .current
        .as_ref()
        .filter(|c| !c.done.archived())
        .map(|c| Usage::sum(c.agent_calls.iter().map(|call| &call.usage)))
        .unwrap_or_default();
    let done = history.len().saturating_sub(1) as u32;
    let last = history.last().map(|r| r.iteration).unwrap_or(0);
    let mk = |reason, detail: String| {
        Some(Stop {
            reason,
            detail,
            at: Utc::now(),
            iteration: last,
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
    let tokens: u64 = history.iter().map(|r| r.tokens).sum::<u64>() + in_flight.total();
    if let Some(t) = budget.tokens
        && tokens >= t
    {
        return mk(
            StopReason::BudgetTokens,
            format!("{tokens} of {t} tokens used"),
        );
    }
    let cost: f64 =
        history.iter().map(|r| r.cost_usd).sum::<f64>() + in_flight.cost_usd.unwrap_or(0.0);
    if let Some(c) = budget.cost_usd
        && c > 0.0
        && cost >= c
    {
        return mk(
            StopReason::BudgetCost,
            format!("${cost:.2} of ${c:.2} used"),
        );
    }
    None
}
