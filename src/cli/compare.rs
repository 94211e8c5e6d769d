//! `ooda compare BRIEF A B [--json]`: two iterations, or an iteration and a
//! replay, side by side.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use super::{Globals, out};
use crate::compare::{Change, Row};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::replay::{Outcome, PlanSummary};
use crate::trace::{self, Node};

/// One side: its tree and what it planned and measured.
pub(super) struct Case {
    pub(super) label: String,
    pub(super) node: Node,
    plan: Option<PlanSummary>,
    outcome: Option<Outcome>,
    /// A replay (of some phases only).
    replay: bool,
}

pub(crate) fn run(g: &Globals, brief: &str, a: &str, b: &str) -> Result<Exit> {
    let (name, dir, runs) = super::trace::runs(g, brief)?;
    let history = crate::history::load(&dir)?;
    let case = |spec: &str| resolve(spec, &name, &dir, &runs, &history);
    let (mut a, mut b) = (case(a)?, case(b)?);
    // A replay runs PLAN (and with --full EXECUTE and EVALUATE) only: the
    // other side is compared through the phases the replay ran, not shown
    // with everything after them removed.
    let through = |x: &Case, other: &mut Case| {
        if x.replay {
            let phases: Vec<String> = x.node.children.iter().map(|c| c.name.clone()).collect();
            trim(&mut other.node, &phases);
        }
    };
    through(&a, &mut b);
    through(&b, &mut a);
    // A PLAN-only replay decided nothing: the night's verdict has nothing
    // to be compared with (the plans are, above the tree).
    if [&a, &b].iter().any(|c| c.replay && c.outcome.is_none()) {
        a.node.verdict = None;
        b.node.verdict = None;
    }
    let rows = crate::compare::align(&a.node, &b.node);
    if g.json {
        let doc = json!({
            "schema": 1,
            "brief": name,
            "a": {"label": a.label, "plan": a.plan, "outcome": a.outcome},
            "b": {"label": b.label, "plan": b.plan, "outcome": b.outcome},
            "nodes": rows,
        });
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ))?;
        return Ok(Exit::Ok);
    }
    let mut s = String::new();
    let _ = writeln!(s, "A  {}\nB  {}", a.label, b.label);
    let plan = |p: &Option<PlanSummary>| match p {
        None => "no plan".to_string(),
        Some(p) => format!(
            "{}{}",
            crate::prompt::clip(&p.hypothesis, 90),
            p.predicted_effect
                .map(|e| format!(" (predicted {:+.1}%)", e * 100.0))
                .unwrap_or_default()
        ),
    };
    let _ = writeln!(s, "\nplan\n  A  {}\n  B  {}", plan(&a.plan), plan(&b.plan));
    let outcome = |o: &Option<Outcome>| match o {
        None => "not measured".to_string(),
        Some(o) => super::replay::outcome_line(o),
    };
    let _ = writeln!(
        s,
        "verdict\n  A  {}\n  B  {}",
        outcome(&a.outcome),
        outcome(&b.outcome)
    );
    let counts = |c: Change| rows.iter().filter(|r| r.change == c).count();
    let _ = writeln!(
        s,
        "\ntree: {} same, {} changed, {} added (B only), {} removed (A only)",
        counts(Change::Same),
        counts(Change::Changed),
        counts(Change::Added),
        counts(Change::Removed)
    );
    for r in &rows {
        line(&mut s, r, g.color);
    }
    out(&s)?;
    Ok(Exit::Ok)
}

/// `n` with only the phases in `phases`, its tokens, cost and duration
/// recomputed from what is left: an iteration cut to its PLAN is compared
/// with a replay's PLAN as a PLAN, not as a whole night's iteration.
fn trim(n: &mut Node, phases: &[String]) {
    n.children.retain(|c| phases.contains(&c.name));
    n.usage = crate::model::Usage::sum(n.children.iter().map(|c| &c.usage));
    if let Some(end) = n.children.iter().filter_map(|c| c.end).max() {
        n.end = Some(end);
        n.seconds = Some(n.seconds_until(end));
    }
}

fn line(s: &mut String, r: &Row, color: bool) {
    let (mark, code) = match r.change {
        Change::Same => ("=", "2"),
        Change::Changed => ("~", "33"),
        Change::Added => ("+", "32"),
        Change::Removed => ("-", "31"),
    };
    let count =
        r.a.as_ref()
            .or(r.b.as_ref())
            .map(|x| x.count)
            .filter(|&c| c > 1)
            .map(|c| format!(" ×{c}"))
            .unwrap_or_default();
    // `iteration 7`, `phase plan`, `tool_call read_file`: the kind once.
    let what = if r.name.starts_with(r.kind.as_str()) {
        r.name.clone()
    } else {
        format!("{} {}", r.kind.as_str(), r.name)
    };
    let text = format!(
        "{mark} {}{what}{count}{}",
        "  ".repeat(r.depth),
        if r.diffs.is_empty() {
            String::new()
        } else {
            format!("  ({})", r.diffs.join("; "))
        }
    );
    if color && r.change != Change::Same {
        let _ = writeln!(s, "\x1b[{code}m{text}\x1b[0m");
    } else {
        let _ = writeln!(s, "{text}");
    }
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
    let replays = crate::replay::list(dir);
    let bad = || {
        Error::Input(format!(
            "`{spec}` names no iteration or replay of {brief}: use an iteration number (`7`), its latest replay (`7r`), its k-th replay (`7r2`) or a replay folder under {} ({})",
            crate::replay::replays_dir(dir).display(),
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
                    dir.join("events.jsonl").display()
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
            Error::Input(if rdir.join("events.jsonl").exists() {
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
