//! `ooda report BRIEF [--json]`: print `summary.md` (or `summary.json`).

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;

pub(crate) fn run(g: &Globals, brief: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let b = project.load_brief(brief)?;
    let file = if g.json { "summary.json" } else { "summary.md" };
    let path = project.iterations_dir(&b.name).join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::Input(format!(
            "{}: {e} (no run yet? start one with `ooda tick {}`)",
            path.display(),
            b.name
        ))
    })?;
    out(&text)?;
    Ok(Exit::Ok)
}
