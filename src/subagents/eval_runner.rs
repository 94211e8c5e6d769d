//! The eval-runner as the subagent it is.
//!
//! The decision itself is statistics and runs in ooda (`eval/`), but the
//! eval-runner is a delegation like any other: its commands hang under it
//! in the trace, and its report (the comparison it made) is archived as
//! `artifacts/iter-NNN/<name>.evaluate.json`. EVALUATE measures a candidate
//! through it, and a simplifier's version the same way.

use serde_json::Value;

use super::Definition;
use super::dispatch::{self, Answer};
use crate::driver::Step;
use crate::error::Result;
use crate::model::SubagentReport;

/// Runs `measure` as the eval-runner `def` (builtin: ooda's own code)
/// under its own span, and archives `answer` of what it measured as its
/// report; without a definition (none installed, or nothing to measure) it
/// runs in the step itself. `tag` names a second pass in one iteration (a
/// simplified candidate) so its report does not overwrite the first.
pub(crate) fn measure<T>(
    step: &Step,
    def: Option<&Definition>,
    tag: Option<&str>,
    measure: impl FnOnce(&Step) -> Result<T>,
    answer: impl FnOnce(&T) -> Value,
) -> Result<(T, Option<SubagentReport>)> {
    let Some(def) = def else {
        return Ok((measure(step)?, None));
    };
    let started = dispatch::begin_alone(step.span, def, "builtin")?;
    let out = measure(&step.under(&started.span))?;
    let a = Answer {
        body: answer(&out),
        ..Default::default()
    };
    let (report, ..) = dispatch::end(
        started,
        step.dir,
        step.iteration,
        def,
        "builtin".into(),
        a,
        tag,
    )?;
    Ok((out, Some(report)))
}
