//! `ooda init [DIR]`: scaffold a project.

use std::path::PathBuf;

use serde_json::json;

use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;

pub(crate) fn run(g: &Globals, dir: Option<PathBuf>) -> Result<Exit> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    let report = crate::cli::scaffold::init(&dir)?;
    if g.json {
        out(&format!(
            "{}\n",
            json!({"created": report.created, "kept": report.kept, "gitignore_added": report.gitignore_added})
        ))?;
        return Ok(Exit::Ok);
    }
    for p in &report.created {
        out(&format!("created {}\n", p.display()))?;
    }
    for p in &report.kept {
        out(&format!("kept    {} (exists)\n", p.display()))?;
    }
    if !report.gitignore_added.is_empty() {
        out(&format!(
            "added to .gitignore: {}\n",
            report.gitignore_added.join(" ")
        ))?;
    }
    out("next: `ooda new NAME` to write a Brief, then `ooda check NAME --measure 5`\n")?;
    Ok(Exit::Ok)
}
