//! `ooda check BRIEF [--measure N] [--preflight] [--json]`: validate, and try
//! the commands and the agent.

mod committed;
mod describe;
mod measure;
mod preflight;

use super::output::progress_printer;
use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;
use crate::run::interrupt::Interrupt;

pub(crate) fn run(g: &Globals, brief: &str, measure: Option<u32>, preflight: bool) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let b = match project.load_brief(brief) {
        Ok(b) => b,
        Err(e) => {
            if g.json {
                let problems: Vec<String> = match &e {
                    Error::Brief(be) => be.problems.iter().map(|p| p.to_string()).collect(),
                    other => vec![other.to_string()],
                };
                out(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "brief": brief,
                        "valid": false,
                        "problems": problems,
                    }))
                    .unwrap_or_default()
                ))?;
            }
            return Err(e);
        }
    };
    let mut data = crate::cli::check::describe::describe_json(&b, &project);
    let say = |text: &str| if g.json { Ok(()) } else { out(text) };
    say(&crate::cli::check::describe::describe(&b, &project))?;
    let problems = crate::cli::check::describe::problems(&b, &project);
    let mut failed = (!problems.is_empty()).then(|| {
        Error::Input(format!(
            "{}: the Brief is valid but cannot run: {} (fix it and commit, then check again)",
            b.path.display(),
            problems.join("; ")
        ))
    });
    let interrupt = (preflight || measure.is_some()).then(Interrupt::install);
    let cancel = || interrupt.as_ref().map(|i| i.flag());
    if preflight
        && failed.is_none()
        && let Some(cancel) = cancel()
    {
        let (report, ok, json) =
            preflight::preflight(&project, &b, cancel, progress_printer(g.quiet))?;
        say(&report)?;
        data["preflight"] = json;
        if !ok {
            failed = Some(Error::Input(format!(
                "{}: the agent's preflight failed (above); fix the agent's profile, key or flags before leaving it a night",
                b.path.display()
            )));
        }
    }
    if let Some(n) = measure {
        if n == 0 {
            return Err(Error::Input("--measure needs at least 1 run".into()));
        }
        if failed.is_none()
            && let Some(cancel) = cancel()
        {
            let progress = progress_printer(g.quiet);
            let (report, json) = measure::measure(&project, &b, n, cancel, progress)?;
            say(&report)?;
            data["measure"] = json;
        }
    }
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&data).unwrap_or_default()
        ))?;
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(Exit::Ok),
    }
}
