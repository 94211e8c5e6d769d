//! PLAN: the main agent proposes one change with a falsifiable prediction.
//!
//! The driver validates what it proposes (an agent gets the validator's
//! message back for another try); this phase hands it the best point and
//! records an accepted plan. A rejection is a [`Cut`](crate::model::Cut)
//! the machine stores: the iteration is archived `invalid`, unmeasured, or
//! `blocked` when the agent changed what it must not touch while planning.

use crate::archive::state::InFlight;
use crate::driver::{Driver, Proposal, Step};
use crate::error::Result;
use crate::events::Event;
use crate::workspace::Workspace;

/// PLAN's output: the driver's proposal.
pub(crate) struct Planned(Proposal);

impl Planned {
    /// Stores an accepted or rejected plan; the detail of a search with
    /// nothing left to try, which ends the run (`stalled`) instead.
    pub(super) fn apply(self, c: &mut InFlight) -> Option<String> {
        match self.0 {
            Proposal::Plan {
                plan,
                rejected,
                calls,
                breach,
            } => {
                c.cut = rejected;
                c.tamper = breach.and_then(|b| b.tamper(crate::model::Phase::Plan));
                c.plan = Some(plan);
                c.agent_calls.extend(calls);
                None
            }
            Proposal::Exhausted { detail } => Some(detail),
        }
    }
}

/// Asks the driver for a plan. What the agent left in the worktree that git
/// ignores is dropped (`execute::dropping_ignored`): a plan changes nothing.
pub(crate) fn run(t: &Step, ws: &Workspace, driver: &dyn Driver) -> Result<Planned> {
    super::execute::dropping_ignored(t, ws, driver, || propose(t, driver))
        .map(|(proposal, _)| Planned(proposal))
}

fn propose(t: &Step, driver: &dyn Driver) -> Result<Proposal> {
    let best = crate::brief::points::point_in(t.base_dir, t.brief)?;
    let mut proposal = driver.plan(t, &best)?;
    // An agent that changed what it must not touch while planning has its
    // plan blocked, like a change made in EXECUTE.
    if let Proposal::Plan {
        rejected, breach, ..
    } = &mut proposal
        && let Some(b) = breach.take()
    {
        let b = b.during(crate::model::Phase::Plan);
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::ScopeViolation,
            message: b.message.clone(),
        })?;
        *rejected = Some(crate::model::Cut::Scope {
            message: b.message.clone(),
        });
        *breach = Some(b);
    }
    if let Proposal::Plan {
        plan,
        rejected: None,
        ..
    } = &proposal
    {
        t.span.emit(Event::Plan {
            hypothesis: plan.hypothesis.clone(),
            change: plan.change.clone(),
            predicted_effect: plan.predicted_effect,
            predicted_sd: plan.predicted_sd,
            cites: plan.cites.clone(),
        })?;
    }
    Ok(proposal)
}
