//! The trace drawn for a terminal: one line per node, notes beneath it.
//!
//! A night has thousands of measurement commands; drawn one per line they
//! would bury the few lines that explain a decision. So a run of equal,
//! successful commands is drawn as one line (`metric ×16`), and `--verbose`
//! draws each one.

use std::fmt::Write;

use super::{Kind, Node, Status};
use crate::model::Usage;

/// How much to draw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    pub color: bool,
    /// Every command on its own line, and notes unclipped.
    pub verbose: bool,
    /// Draw only this many levels below the first (None: all).
    pub depth: Option<usize>,
}

/// Draws `roots` and everything below them.
pub(crate) fn render(roots: &[&Node], style: Style) -> String {
    let mut out = String::new();
    for root in roots {
        line(&mut out, root, "", "", style, None);
        notes(&mut out, root, "", style, !root.children.is_empty());
        children(&mut out, root, "", style, 1);
    }
    out
}

fn children(out: &mut String, node: &Node, prefix: &str, style: Style, level: usize) {
    if style.depth.is_some_and(|d| level > d) {
        return;
    }
    let groups = group(&node.children, style.verbose);
    for (i, g) in groups.iter().enumerate() {
        let last = i + 1 == groups.len();
        let (branch, cont) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        let first = g[0];
        let below = format!("{prefix}{cont}");
        if g.len() > 1 {
            line(out, first, prefix, branch, style, Some(g));
            continue;
        }
        line(out, first, prefix, branch, style, None);
        let deeper = !first.children.is_empty() && style.depth.is_none_or(|d| level < d);
        notes(out, first, &below, style, deeper);
        children(out, first, &below, style, level + 1);
    }
}

/// Consecutive commands of one role that all succeeded, as one group.
fn group(nodes: &[Node], verbose: bool) -> Vec<Vec<&Node>> {
    let mut out: Vec<Vec<&Node>> = Vec::new();
    for n in nodes {
        let joins = !verbose
            && n.kind == Kind::Command
            && n.status == Status::Ok
            && n.notes.is_empty()
            && out.last().is_some_and(|g| {
                g[0].kind == Kind::Command && g[0].name == n.name && g[0].status == Status::Ok
            });
        match out.last_mut() {
            Some(g) if joins => g.push(n),
            _ => out.push(vec![n]),
        }
    }
    out
}

fn paint(style: Style, code: &str, text: &str) -> String {
    if style.color && !text.is_empty() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn line(
    out: &mut String,
    n: &Node,
    prefix: &str,
    branch: &str,
    style: Style,
    group: Option<&[&Node]>,
) {
    let mark = match n.status {
        Status::Failed => paint(style, "31;1", "✗ "),
        Status::Cancelled => paint(style, "33", "⊘ "),
        Status::Unfinished if n.kind != Kind::Run => paint(style, "2", "… "),
        _ => String::new(),
    };
    let mut parts = vec![paint(style, "1", &label(n, group))];
    if let Some(v) = &n.verdict {
        let v = match n.status {
            Status::Failed => paint(style, "31", v),
            _ if v == "keep" || v == "approve" => paint(style, "32", v),
            _ => v.clone(),
        };
        parts.push(v);
    }
    let seconds = match group {
        Some(g) => Some(g.iter().filter_map(|c| c.seconds).sum::<f64>()),
        None => n.seconds,
    };
    if let Some(s) = seconds {
        parts.push(paint(style, "2", &duration(s)));
    }
    let usage = usage(&n.usage);
    if !usage.is_empty() {
        parts.push(usage);
    }
    // A task not finished says where it stands (a finished one's verdict
    // says how it ended).
    if let Some(state) = n.state().filter(|s| !s.is_final()) {
        parts.push(paint(style, "33", &format!("[{}]", state.as_str())));
    }
    let _ = writeln!(out, "{prefix}{branch}{mark}{}", parts.join("  "));
}

fn notes(out: &mut String, n: &Node, prefix: &str, style: Style, more_below: bool) {
    let bar = if more_below { "│  " } else { "   " };
    let indent = format!("{prefix}{bar}");
    if let Some(e) = &n.error {
        let _ = writeln!(
            out,
            "{indent}{}",
            paint(style, "31", &format!("error: {}", clip(e, style)))
        );
    }
    if n.kind == Kind::Iteration {
        // What it tried and how it was judged, before what it logged.
        if let Some(h) = n.attribute("hypothesis") {
            let _ = writeln!(out, "{indent}· tried: {}", clip(h, style));
        }
        if let Some(c) = n
            .attribute("change")
            .filter(|c| Some(*c) != n.attribute("hypothesis"))
        {
            let _ = writeln!(out, "{indent}· change: {}", clip(c, style));
        }
        if let Some(r) = n.attribute("reason") {
            let _ = writeln!(out, "{indent}· {}", clip(r, style));
        }
    }
    for note in &n.notes {
        if n.kind == Kind::Iteration && note.kind == "decision" && n.attribute("reason").is_some() {
            continue;
        }
        let text = clip(&note.text, style);
        let text = if matches!(
            note.kind.as_str(),
            "anomaly" | "anomaly_found" | "red_light"
        ) {
            paint(style, "33", &text)
        } else {
            text
        };
        let _ = writeln!(out, "{indent}· {text}");
    }
}

fn clip(text: &str, style: Style) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if style.verbose || one.chars().count() <= 160 {
        return one;
    }
    let cut: String = one.chars().take(157).collect();
    format!("{cut}…")
}

fn label(n: &Node, group: Option<&[&Node]>) -> String {
    match n.kind {
        Kind::Run => match n.attribute("brief") {
            Some(b) => format!("{} ({b})", n.name),
            None => n.name.clone(),
        },
        Kind::Subagent => format!(
            "subagent {} ({})",
            n.name,
            n.attribute("driver").unwrap_or("?")
        ),
        Kind::AgentCall => {
            let attempt = n.attributes.get("attempt").and_then(|v| v.as_u64());
            let attempts = n.attributes.get("attempts").and_then(|v| v.as_u64());
            let tries = match (attempt, attempts) {
                (Some(a), Some(t)) if t > 1 => format!(", try {a}/{t}"),
                _ => String::new(),
            };
            let model = n
                .attribute("model")
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            format!(
                "agent {}{model} ({}{tries})",
                n.name,
                n.attribute("phase").unwrap_or("?")
            )
        }
        Kind::ModelRequest => match n.attributes.get("request").and_then(|v| v.as_u64()) {
            Some(r) => format!("{} #{r}", n.name),
            None => n.name.clone(),
        },
        Kind::ToolCall => {
            let args = n.attribute("arguments").unwrap_or("");
            let args: String = args.chars().take(60).collect();
            format!("tool {} {args}", n.name).trim_end().to_string()
        }
        Kind::Command => match group {
            Some(g) => {
                let mut sides: Vec<(String, usize)> = Vec::new();
                for c in g {
                    let w = c.attribute("worktree").unwrap_or("?").to_string();
                    match sides.iter_mut().find(|(s, _)| *s == w) {
                        Some((_, k)) => *k += 1,
                        None => sides.push((w, 1)),
                    }
                }
                let sides: Vec<String> = sides.iter().map(|(s, k)| format!("{s} {k}")).collect();
                format!("{} ×{} ({})", n.name, g.len(), sides.join(", "))
            }
            None => format!("{} ({})", n.name, n.attribute("worktree").unwrap_or("?")),
        },
        Kind::Iteration | Kind::Phase | Kind::Confirmation => n.name.clone(),
    }
}

fn duration(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1}m", s / 60.0)
    } else if s >= 10.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.2}s")
    }
}

fn usage(u: &Usage) -> String {
    if u.is_empty() {
        return String::new();
    }
    let mut s = format!("in {} · out {}", u.input, u.output);
    if u.cached > 0 {
        let _ = write!(s, " · cached {}", u.cached);
    }
    if let Some(c) = u.cost_usd {
        let _ = write!(s, " · {}", crate::validate::units::format_usd(c));
    }
    s
}
