//! `ooda status [BRIEF] [--json]`.

use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;
use crate::project::Project;

pub(crate) fn run(g: &Globals, brief: Option<&str>) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let rows = crate::status::collect(&project, brief)?;
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        ))?;
    } else {
        out(&crate::status::render(&rows, g.color))?;
    }
    Ok(Exit::Ok)
}
