//! `ooda tick BRIEF`: exactly one iteration (or the rest of one), for cron.

use super::Globals;
use super::output::{open_machine, report_step};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;
use crate::run::interrupt::Interrupt;

pub(crate) fn run(g: &Globals, brief: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let interrupt = Interrupt::install();
    let mut machine = open_machine(g, &project, brief, &interrupt)?;
    let outcome = machine.step()?;
    let exit = report_step(
        &project,
        &machine.brief().name,
        &outcome,
        true,
        g.json,
        g.quiet,
    )?;
    // A signal during the last checkpoint: the work is saved, but the
    // caller asked us to stop and must learn that we were interrupted.
    if interrupt.is_set() {
        return Err(Error::Interrupted);
    }
    Ok(exit)
}
