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
struct Case {
    label: String,
    node: Node,
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
            other.node.children.retain(|c| phases.contains(&c.name));
        }
    };
    through(&a, &mut b);
    through(&b, &mut a);
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
fn resolve(
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
    let picked = if let Some((n, k)) = spec.split_once('r') {
        let n: u32 = n.parse().map_err(|_| bad())?;
        let of: Vec<_> = replays.iter().filter(|(_, r)| r.iteration == n).collect();
        match k {
            "" => of.last().copied(),
            k => {
                let k: usize = k.parse().map_err(|_| bad())?;
                k.checked_sub(1).and_then(|i| of.get(i).copied())
            }
        }
    } else {
        None
    };
    let (rdir, rec) = picked
        .or_else(|| replays.iter().find(|(_, r)| r.id == spec))
        .ok_or_else(bad)?;
    let records = crate::events::read_all(rdir)?;
    let node = trace::build(&records)
        .iter()
        .find_map(|r| trace::iteration(r, rec.iteration))
        .cloned()
        .ok_or_else(|| {
            Error::Input(format!(
                "{}: the replay's events.jsonl holds no iteration",
                rdir.display()
            ))
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
