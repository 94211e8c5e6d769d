//! `ooda new NAME`: a Brief from the template.

use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;
use crate::project::Project;

pub(crate) fn run(g: &Globals, name: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let path = crate::cli::scaffold::new_brief(&project.root, name)?;
    out(&format!(
        "created {}: edit it, then `ooda check {name} --measure 5`\n",
        path.display()
    ))?;
    Ok(Exit::Ok)
}
