//! `ooda trace BRIEF [ITER] [--json]`: the call tree of the run, from
//! `events.jsonl`.

use std::path::PathBuf;

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;
use crate::trace::{self, Kind, Node, Style};

/// The Brief's name, its iterations folder and the runs its log holds;
/// an error naming the file when there is no log yet.
pub(super) fn runs(g: &Globals, brief: &str) -> Result<(String, PathBuf, Vec<Node>)> {
    let project = Project::discover(g.root.as_deref())?;
    let b = project.load_brief(brief)?;
    let dir = project.iterations_dir(&b.name);
    let records = crate::events::read_all(&dir)?;
    if records.is_empty() {
        return Err(Error::Input(format!(
            "{}: no events yet (no run of {} here? start one with `ooda tick {}`)",
            dir.join("events.jsonl").display(),
            b.name,
            b.name
        )));
    }
    Ok((b.name, dir, trace::build(&records)))
}

pub(crate) fn run(g: &Globals, brief: &str, iteration: Option<u32>) -> Result<Exit> {
    let (name, dir, runs) = runs(g, brief)?;
    let shown: Vec<&Node> = match iteration {
        None => runs.iter().collect(),
        Some(n) => {
            let found: Vec<&Node> = runs.iter().filter_map(|r| trace::iteration(r, n)).collect();
            if found.is_empty() {
                return Err(Error::Input(format!(
                    "iteration {n} is not in {} ({}); `ooda trace {}` lists them",
                    dir.join("events.jsonl").display(),
                    present(&runs),
                    name
                )));
            }
            // A run started over keeps one log; the latest run's is meant.
            found.into_iter().last().into_iter().collect()
        }
    };
    if g.json {
        let doc = serde_json::json!({
            "schema": trace::TRACE_SCHEMA,
            "brief": name,
            "iteration": iteration,
            "nodes": shown,
        });
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ))?;
        return Ok(Exit::Ok);
    }
    let style = Style {
        color: g.color,
        verbose: g.verbose,
        depth: if iteration.is_none() { Some(1) } else { None },
    };
    let mut text = trace::render(&shown, style);
    if iteration.is_none() {
        text.push_str(&format!(
            "\n`ooda trace {} N` draws iteration N down to each command, model request and tool call.\n",
            name
        ));
    }
    out(&text)?;
    Ok(Exit::Ok)
}

/// "iterations 0–7" or "no iterations".
fn present(runs: &[Node]) -> String {
    let its: Vec<u32> = runs
        .iter()
        .flat_map(|r| r.children.iter())
        .filter(|c| c.kind == Kind::Iteration)
        .filter_map(|c| c.iteration)
        .collect();
    match (its.iter().min(), its.iter().max()) {
        (Some(a), Some(b)) if a == b => format!("it has iteration {a}"),
        (Some(a), Some(b)) => format!("it has iterations {a}–{b}"),
        _ => "it has no iterations yet".into(),
    }
}
