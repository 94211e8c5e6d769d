//! `ooda check BRIEF [--measure N]`: validate, and try the commands.

use super::output::progress_printer;
use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::interrupt::Interrupt;
use crate::project::Project;

pub(crate) fn run(g: &Globals, brief: &str, measure: Option<u32>) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let b = project.load_brief(brief)?;
    out(&crate::check::describe(&b, &project))?;
    if let Some(n) = measure {
        if n == 0 {
            return Err(Error::Input("--measure needs at least 1 run".into()));
        }
        let interrupt = Interrupt::install();
        let progress = progress_printer(g.quiet);
        out(&crate::check::measure(
            &project,
            &b,
            n,
            interrupt.flag(),
            progress,
        )?)?;
    }
    Ok(Exit::Ok)
}
