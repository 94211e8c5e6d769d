//! PLAN: the main agent proposes one change with a falsifiable prediction.
//!
//! The driver validates what it proposes (an agent gets the validator's
//! message back for another try); this phase hands it the best point and
//! records an accepted plan. A rejection is a [`Cut`](crate::model::Cut)
//! the machine stores: the iteration is archived `invalid`, unmeasured, or
//! `blocked` when the agent changed what it must not touch while planning.

use crate::driver::{Driver, Proposal, Turn};
use crate::error::Result;
use crate::events::Event;

pub(crate) fn run(t: &Turn, driver: &dyn Driver) -> Result<Proposal> {
    let best = crate::brief::points::point_in(t.base_dir, t.brief)?;
    let mut proposal = driver.plan(t, &best)?;
    // An agent that changed what it must not touch while planning has its
    // plan blocked, like a change made in EXECUTE.
    if let Proposal::Plan {
        rejected, breach, ..
    } = &mut proposal
        && let Some(b) = breach.take()
    {
        let b = b.during("planning");
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
