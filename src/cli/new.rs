//! `ooda new NAME`: a Brief from the template.

use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;
use crate::project::Project;

pub(crate) fn run(g: &Globals, name: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let path = crate::cli::scaffold::new_brief(&project.root, name)?;
    if g.json {
        let doc = serde_json::json!({
            "brief": name,
            "created": path.display().to_string(),
            "next": format!("ooda check {name} --measure 5"),
        });
        out(&format!("{doc}\n"))?;
        return Ok(Exit::Ok);
    }
    out(&format!(
        "created {}: edit it, then `ooda check {name} --measure 5`\n",
        path.display()
    ))?;
    Ok(Exit::Ok)
}
