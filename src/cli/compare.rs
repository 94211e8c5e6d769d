//! `ooda compare BRIEF A B [--json]`: two iterations, or an iteration and a
//! replay, side by side.

use std::fmt::Write as _;

use serde_json::json;

use super::trace::Case;
use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;
use crate::phases::replay::{Outcome, PlanSummary};
use crate::report::compare::{Change, Row};
use crate::report::trace::Node;

pub(crate) fn run(g: &Globals, brief: &str, a: &str, b: &str) -> Result<Exit> {
    let (name, dir, runs) = super::trace::runs(g, brief)?;
    let history = crate::archive::history::load(&dir)?;
    let case = |spec: &str| super::trace::resolve(spec, &name, &dir, &runs, &history);
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
    let rows = crate::report::compare::align(&a.node, &b.node);
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
            crate::text::clip::clip(&p.hypothesis, 90),
            p.predicted_effect
                .map(|e| format!(" (predicted {})", crate::text::number::effect(e)))
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
