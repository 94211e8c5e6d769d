//! `ooda report BRIEF [--json]`: print `summary.md` (or `summary.json`).

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;

pub(crate) fn run(g: &Globals, brief: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let name = project.run_name(brief)?;
    let dir = project.iterations_dir(&name);
    let layout = crate::archive::layout::Layout::of(&dir);
    let path = if g.json {
        layout.summary_json()
    } else {
        layout.summary()
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::Input(format!(
            "{}: {e} (no run yet? start one with `ooda tick {}`)",
            path.display(),
            name
        ))
    })?;
    out(&text)?;
    Ok(Exit::Ok)
}
