//! `ooda trace BRIEF [ITER] [--json]`: the call tree of the run, from
//! `events.jsonl`.

use std::path::{Path, PathBuf};

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::phases::replay::{Outcome, PlanSummary};
use crate::project::Project;
use crate::report::trace::{self, Kind, Node, Style};

/// The Brief's name, its iterations folder and the runs its log holds;
/// an error naming the file when there is no log yet.
pub(super) fn runs(g: &Globals, brief: &str) -> Result<(String, PathBuf, Vec<Node>)> {
    let project = Project::discover(g.root.as_deref())?;
    let name = project.run_name(brief)?;
    let dir = project.iterations_dir(&name);
    let log = crate::archive::layout::Layout::of(&dir).events();
    let (records, skipped) = crate::events::read_counted(&dir)?;
    if skipped > 0 && !g.quiet {
        eprintln!(
            "warning: {}: {skipped} line(s) could not be read and are left out (cut by a crash, or written by a newer ooda)",
            log.display()
        );
    }
    if records.is_empty() {
        let archived = crate::archive::history::load(&dir)
            .map(|h| h.len())
            .unwrap_or(0);
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
            let history = crate::archive::history::load(&dir)?;
            let case = resolve(spec, &name, &dir, &runs, &history)?;
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
                    crate::archive::layout::Layout::of(&dir).events().display(),
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

/// One side: its tree and what it planned and measured.
pub(super) struct Case {
    pub(super) label: String,
    pub(super) node: Node,
    pub(super) plan: Option<PlanSummary>,
    pub(super) outcome: Option<Outcome>,
    /// A replay (of some phases only).
    pub(super) replay: bool,
}

/// `7` (iteration 7 of the run), `7r` (its latest replay), `7r2` (its
/// second replay) or a replay's folder name (`iter-007-…`).
pub(super) fn resolve(
    spec: &str,
    brief: &str,
    dir: &Path,
    runs: &[Node],
    history: &[crate::model::IterationRecord],
) -> Result<Case> {
    let spec = spec.trim();
    let replays = crate::phases::replay::list(dir);
    let bad = || {
        Error::Input(format!(
            "`{spec}` names no iteration or replay of {brief}: use an iteration number (`7`), its latest replay (`7r`), its k-th replay (`7r2`) or a replay folder under {} ({})",
            crate::phases::replay::replays_dir(dir).display(),
            if replays.is_empty() {
                "there are none yet: `ooda replay BRIEF ITER` makes one".to_string()
            } else {
                replays
                    .iter()
                    .map(|(_, r)| r.id.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    };
    if let Ok(n) = spec.parse::<u32>() {
        let node = runs
            .iter()
            .rev()
            .find_map(|r| trace::iteration(r, n))
            .ok_or_else(|| {
                Error::Input(format!(
                    "iteration {n} is not in {}; `ooda trace {brief}` lists the iterations",
                    crate::archive::layout::Layout::of(dir).events().display()
                ))
            })?
            .clone();
        let rec = history.iter().find(|r| r.iteration == n);
        return Ok(Case {
            label: format!("iteration {n} of the run"),
            node,
            plan: rec.map(PlanSummary::of),
            outcome: rec.map(Outcome::of),
            replay: false,
        });
    }
    // A folder name first: `iter-002-…` holds an `r` too.
    let picked = match replays.iter().find(|(_, r)| r.id == spec) {
        Some(p) => p,
        None => {
            let (n, k) = replay_number(spec).ok_or_else(bad)?;
            let of: Vec<_> = replays.iter().filter(|(_, r)| r.iteration == n).collect();
            let found = match k {
                None => of.last().copied(),
                Some(k) => k.checked_sub(1).and_then(|i| of.get(i).copied()),
            };
            found.ok_or_else(|| {
                Error::Input(match (of.len(), k) {
                    (0, _) if n == 0 => format!(
                        "`{spec}`: iteration 0 of {brief} is the baseline; it planned nothing, so it has no replay"
                    ),
                    (0, _) => format!(
                        "`{spec}`: iteration {n} of {brief} has not been replayed; `ooda replay {brief} {n}` replays it"
                    ),
                    (have, _) => format!(
                        "`{spec}`: iteration {n} of {brief} has {have} replay(s), `{n}r1`–`{n}r{have}`"
                    ),
                })
            })?
        }
    };
    let (rdir, rec) = picked;
    let records = crate::events::read_all(rdir)?;
    let node = trace::build(&records)
        .iter()
        .find_map(|r| trace::iteration(r, rec.iteration))
        .cloned()
        .ok_or_else(|| {
            Error::Input(if crate::archive::layout::Layout::of(rdir).events().exists() {
                format!(
                    "{}: the replay's events.jsonl holds no iteration",
                    rdir.display()
                )
            } else {
                format!(
                    "{}: only its replay.json is left (`ooda gc` keeps the rest of an iteration's latest replay only): compare with the latest replay, or replay the iteration again",
                    rdir.display()
                )
            })
        })?;
    Ok(Case {
        label: format!(
            "replay {} ({}, {})",
            rec.id,
            rec.driver,
            if rec.full { "full" } else { "PLAN only" }
        ),
        node,
        plan: rec.plan.clone(),
        outcome: rec.outcome.clone(),
        replay: true,
    })
}

/// `7r` → (7, None), `7r2` → (7, Some(2)); anything else → None.
fn replay_number(spec: &str) -> Option<(u32, Option<usize>)> {
    let (n, k) = spec.split_once('r')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(n) || !(k.is_empty() || digits(k)) {
        return None;
    }
    Some((n.parse().ok()?, k.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_specs() {
        assert_eq!(replay_number("7r"), Some((7, None)));
        assert_eq!(replay_number("7r2"), Some((7, Some(2))));
        assert_eq!(replay_number("iter-002-20261201T000000.000"), None);
        assert_eq!(replay_number("r2"), None);
        assert_eq!(replay_number("7rx"), None);
    }
}
