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
    let name = project.run_name(brief)?;
    let dir = project.iterations_dir(&name);
    let log = dir.join("events.jsonl");
    let (records, skipped) = crate::events::read_counted(&dir)?;
    if skipped > 0 && !g.quiet {
        eprintln!(
            "warning: {}: {skipped} line(s) could not be read and are left out (cut by a crash, or written by a newer ooda)",
            log.display()
        );
    }
    if records.is_empty() {
        let archived = crate::history::load(&dir).map(|h| h.len()).unwrap_or(0);
        let why = match (log.exists(), archived) {
            (_, 0) => format!(
                "no events yet (no run of {} here? start one with `ooda tick {}`)",
                name, name
            ),
            (false, n) => format!(
                "the log is missing although {n} iteration file(s) are archived beside it; the trace is built from the log alone, so it cannot be drawn (the iteration files still hold each verdict)"
            ),
            (true, n) => format!(
                "no readable event although {n} iteration file(s) are archived beside it; the log is damaged"
            ),
        };
        return Err(Error::Input(format!("{}: {why}", log.display())));
    }
    Ok((name, dir, trace::build(&records)))
}

pub(crate) fn run(g: &Globals, brief: &str, spec: Option<&str>) -> Result<Exit> {
    let (name, dir, runs) = runs(g, brief)?;
    let iteration = match spec.map(|s| s.trim().parse::<u32>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            let spec = spec.unwrap_or_default();
            let history = crate::history::load(&dir)?;
            let case = super::compare::resolve(spec, &name, &dir, &runs, &history)?;
            if !g.json {
                out(&format!("{}\n", case.label))?;
            }
            return show(g, &name, Some(spec), &[&case.node], false);
        }
    };
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
    let spec = iteration.map(|n| n.to_string());
    show(g, &name, spec.as_deref(), &shown, iteration.is_none())
}

/// Prints `shown` as a tree (the whole run folded to its iterations when
/// `overview`) or as JSON.
fn show(
    g: &Globals,
    name: &str,
    spec: Option<&str>,
    shown: &[&Node],
    overview: bool,
) -> Result<Exit> {
    if g.json {
        // `iteration` is the number asked for; a replay's spec is `of`.
        let doc = serde_json::json!({
            "schema": trace::TRACE_SCHEMA,
            "brief": name,
            "iteration": shown.first().and_then(|n| n.iteration),
            "of": spec,
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
        depth: if overview { Some(1) } else { None },
    };
    let mut text = trace::render(shown, style);
    if overview {
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
