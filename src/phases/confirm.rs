//! The confirmation test: the start-of-run commit against the current best.
//!
//! A kept candidate's own runs overstate its gain (the winner's curse), so
//! the gain the morning report states, a reached goal, and the anchor test
//! of the divergence light come from fresh pairs of the two commits: 12,
//! and 20 when the first 12 leave the sign of the gain open. A failure to
//! measure is recorded as an anomaly, not a verdict: the iteration itself is
//! already decided.

use super::{Step, oid};
use crate::archive::state::State;
use crate::error::Result;
use crate::eval::{self, RunFailure, Side, Worktree};
use crate::events::Event;
use crate::model::Confirmation;
use crate::stats::SplitMix64;
use crate::workspace::Workspace;

/// What a confirmation test came to.
#[derive(Debug)]
pub(crate) enum Confirmed {
    /// Nothing to confirm: the best is the start commit.
    Nothing,
    Measured(Confirmation),
    /// It could not be measured, and why (a setup or metric failure).
    Failed(String),
}

impl Confirmed {
    /// The measured test, and why it could not be measured: at most one.
    pub(crate) fn into_parts(self) -> (Option<Confirmation>, Option<String>) {
        match self {
            Confirmed::Nothing => (None, None),
            Confirmed::Measured(c) => (Some(c), None),
            Confirmed::Failed(why) => (None, Some(why)),
        }
    }
}

/// A signal while it measures is an `Err(Interrupted)`: the stop is not
/// recorded, so the next tick decides it again and confirms then.
pub(crate) fn run(step: &Step, ws: &Workspace, state: &State, iteration: u32) -> Result<Confirmed> {
    if state.best_commit == state.start_commit {
        return Ok(Confirmed::Nothing);
    }
    let span = step.span.child(Event::ConfirmationStarted {
        start: state.start_commit.clone(),
        best: state.best_commit.clone(),
    })?;
    let step = Step {
        span: &span,
        ..*step
    };
    let anchor_dir = ws.scratch("anchor", oid(&state.start_commit)?)?;
    let anchor = Worktree::new(Side::Anchor, anchor_dir, step.brief)?;
    let best = step.worktree(Side::Base)?;
    let setup_key = step.base_setup_key(&state.best_commit)?;
    let skip_base_setup = ws.base_setup_done(&setup_key);
    let mut rng =
        SplitMix64::new(state.seed ^ u64::from(iteration).wrapping_mul(0xA076_1D64_78BD_642F));
    let lease = step.measuring(iteration, "confirm")?;
    let mut ev = step.evaluator(lease.as_ref());
    ev.journal = Some(step.journal(
        iteration,
        "confirm",
        &format!("{}|{}", state.start_commit, state.best_commit),
    ));
    let mut failure = ev.setup(&anchor)?;
    if failure.is_none() && !skip_base_setup {
        failure = ev.setup(&best)?;
    }
    let measured = match failure {
        Some(f) => Err(f),
        None => ev
            .measure_pairs(
                &anchor,
                &best,
                eval::CONFIRM_LOOKS[1],
                &mut rng,
                |p| p.len() == eval::CONFIRM_LOOKS[0] && eval::confirmation_settled(p),
                // Both are kept commits, already measured as they are.
                || false,
            )?
            .map_err(|(_, f)| f),
    };
    match measured {
        Ok(pairs) => {
            if !skip_base_setup {
                ws.record_base_setup(&setup_key)?;
            }
            let conf = eval::confirm(
                step.brief.metric.direction,
                &state.start_commit,
                &state.best_commit,
                pairs,
            );
            span.emit(Event::Confirmed {
                effect: conf.effect,
                ci: conf.ci,
                p: conf.p,
                pairs: conf.pairs.len() as u32,
                why: conf.why.clone(),
            })?;
            Ok(Confirmed::Measured(conf))
        }
        Err(RunFailure::Failed { reason, .. }) => {
            span.emit(Event::Anomaly {
                kind: crate::model::AnomalyKind::ConfirmationFailed,
                message: reason.clone(),
            })?;
            Ok(Confirmed::Failed(reason))
        }
    }
}
