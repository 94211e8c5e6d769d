//! Two trees aligned node by node: what stayed, what was added or removed,
//! what changed (status, verdict, duration, tokens, failures).
//!
//! Replaying an iteration answers "would today's setup do better?" only if
//! the two runs can be put side by side. Children are aligned by a longest
//! common subsequence of their keys (kind, name, and the phase of an agent
//! call), so one extra tool call shows as one added node instead of
//! shifting everything after it. Runs of commands of one role are compared
//! as one node with a count: a replay that measured 8 pairs instead of 16
//! is one changed line, not sixteen.

use serde::Serialize;

use crate::report::trace::{Kind, Node, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Change {
    Same,
    Changed,
    Added,
    Removed,
}

/// One side of an aligned node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Side {
    /// The node's own name (an agent call's profile, a request's model):
    /// two nodes can line up and still be named differently.
    pub name: String,
    pub status: Status,
    pub verdict: Option<String>,
    pub seconds: Option<f64>,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    pub error: Option<String>,
    /// How many nodes it stands for (a run of commands), else 1.
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub depth: usize,
    pub kind: Kind,
    pub name: String,
    pub change: Change,
    pub a: Option<Side>,
    pub b: Option<Side>,
    /// What differs, in words (`status ok → failed`, `tokens 1200 → 800`).
    pub diffs: Vec<String>,
}

/// A node with its runs of commands folded, as compared.
struct Folded<'a> {
    node: &'a Node,
    count: usize,
    seconds: Option<f64>,
    status: Status,
    children: Vec<Folded<'a>>,
}

fn fold(n: &Node) -> Folded<'_> {
    let mut children: Vec<Folded> = Vec::new();
    for c in &n.children {
        if c.kind == Kind::Command
            && let Some(last) = children.last_mut()
            && last.node.kind == Kind::Command
            && last.node.name == c.name
        {
            last.count += 1;
            last.seconds = Some(last.seconds.unwrap_or(0.0) + c.seconds.unwrap_or(0.0));
            if c.status != Status::Ok {
                last.status = c.status;
            }
            continue;
        }
        children.push(fold(c));
    }
    Folded {
        node: n,
        count: 1,
        seconds: n.seconds,
        status: n.status,
        children,
    }
}

/// What makes two nodes the same step. An agent call is its phase and
/// attempt, not its profile's name (a replay with another agent still
/// lines up call by call); a model request is its number in the call, not
/// its model; everything else its kind and name.
fn key(f: &Folded) -> (Kind, String, Option<String>) {
    let attr = |k: &str| {
        f.node.attributes.get(k).map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        })
    };
    match f.node.kind {
        Kind::AgentCall => (
            Kind::AgentCall,
            attr("phase").unwrap_or_default(),
            attr("attempt"),
        ),
        Kind::ModelRequest => (Kind::ModelRequest, String::new(), attr("request")),
        k => (k, f.node.name.clone(), attr("phase")),
    }
}

fn side(f: &Folded) -> Side {
    Side {
        name: f.node.name.clone(),
        status: f.status,
        verdict: f.node.verdict.clone(),
        seconds: f.seconds,
        tokens: f.node.usage.total(),
        cost_usd: f.node.usage.cost_usd,
        error: f.node.error.clone(),
        count: f.count,
    }
}

/// Whether two durations differ enough to mention: by a fifth and half a
/// second (timings of the same work always wobble a little).
fn slower(a: f64, b: f64) -> bool {
    (a - b).abs() > 0.5 && (a - b).abs() > 0.2 * a.max(b)
}

fn diffs(a: &Side, b: &Side) -> Vec<String> {
    let mut d = Vec::new();
    if a.name != b.name {
        d.push(format!("{} → {}", a.name, b.name));
    }
    if a.status != b.status {
        d.push(format!(
            "status {} → {}",
            a.status.as_str(),
            b.status.as_str()
        ));
    }
    if a.verdict != b.verdict {
        d.push(format!(
            "verdict {} → {}",
            a.verdict.as_deref().unwrap_or("none"),
            b.verdict.as_deref().unwrap_or("none")
        ));
    }
    if a.count != b.count {
        d.push(format!("runs {} → {}", a.count, b.count));
    }
    if a.tokens != b.tokens {
        d.push(format!("tokens {} → {}", a.tokens, b.tokens));
    }
    if let (Some(x), Some(y)) = (a.seconds, b.seconds)
        && slower(x, y)
    {
        d.push(format!("{x:.1}s → {y:.1}s"));
    }
    if a.error != b.error {
        match (&a.error, &b.error) {
            (None, Some(e)) => d.push(format!("fails: {}", crate::text::clip::clip(e, 120))),
            (Some(_), None) => d.push("no longer fails".into()),
            _ => d.push("fails differently".into()),
        }
    }
    d
}

/// The aligned rows of `a` and `b`, depth first.
pub(crate) fn align(a: &Node, b: &Node) -> Vec<Row> {
    let (fa, fb) = (fold(a), fold(b));
    let mut rows = Vec::new();
    pair(&fa, &fb, 0, &mut rows);
    rows
}

fn pair(a: &Folded, b: &Folded, depth: usize, rows: &mut Vec<Row>) {
    let (sa, sb) = (side(a), side(b));
    let d = diffs(&sa, &sb);
    rows.push(Row {
        depth,
        kind: a.node.kind,
        name: a.node.name.clone(),
        change: if d.is_empty() {
            Change::Same
        } else {
            Change::Changed
        },
        a: Some(sa),
        b: Some(sb),
        diffs: d,
    });
    let ka: Vec<_> = a.children.iter().map(key).collect();
    let kb: Vec<_> = b.children.iter().map(key).collect();
    // Longest common subsequence of the child keys.
    let (n, m) = (ka.len(), kb.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if ka[i] == kb[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && ka[i] == kb[j] {
            pair(&a.children[i], &b.children[j], depth + 1, rows);
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            one(&b.children[j], depth + 1, Change::Added, rows);
            j += 1;
        } else {
            one(&a.children[i], depth + 1, Change::Removed, rows);
            i += 1;
        }
    }
}

/// A node only one side has, with everything below it.
fn one(f: &Folded, depth: usize, change: Change, rows: &mut Vec<Row>) {
    let s = side(f);
    let (a, b) = match change {
        Change::Added => (None, Some(s)),
        _ => (Some(s), None),
    };
    rows.push(Row {
        depth,
        kind: f.node.kind,
        name: f.node.name.clone(),
        change,
        a,
        b,
        diffs: Vec::new(),
    });
    for c in &f.children {
        one(c, depth + 1, change, rows);
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn node(kind: Kind, name: &str, children: Vec<Node>) -> Node {
        let mut n = Node::new(name, kind, name.to_string(), Some(1), Utc::now());
        n.status = Status::Ok;
        n.seconds = Some(1.0);
        n.children = children;
        n
    }

    #[test]
    fn one_extra_call_is_one_added_row_and_command_runs_compare_by_count() {
        let tool = |n: &str| node(Kind::ToolCall, n, vec![]);
        let metric = || node(Kind::Command, "metric", vec![]);
        let mut call_b = node(
            Kind::AgentCall,
            "claude",
            vec![tool("read_file"), tool("grep"), tool("edit_file")],
        );
        call_b.usage.input = 900;
        let a = node(
            Kind::Iteration,
            "iteration 7",
            vec![
                node(
                    Kind::Phase,
                    "plan",
                    vec![node(
                        Kind::AgentCall,
                        "claude",
                        vec![tool("read_file"), tool("edit_file")],
                    )],
                ),
                node(
                    Kind::Phase,
                    "evaluate",
                    vec![metric(), metric(), metric(), metric()],
                ),
            ],
        );
        let mut failed = metric();
        failed.status = Status::Failed;
        let b = node(
            Kind::Iteration,
            "iteration 7",
            vec![
                node(Kind::Phase, "plan", vec![call_b]),
                node(Kind::Phase, "evaluate", vec![metric(), failed]),
            ],
        );
        let rows = align(&a, &b);
        let find = |name: &str| rows.iter().find(|r| r.name == name).unwrap();
        assert_eq!(find("grep").change, Change::Added);
        assert_eq!(find("edit_file").change, Change::Same);
        assert_eq!(find("read_file").change, Change::Same);
        assert_eq!(find("claude").change, Change::Changed);
        assert_eq!(find("claude").diffs, ["tokens 0 → 900"]);
        let m = find("metric");
        assert_eq!(m.change, Change::Changed);
        assert!(m.diffs.contains(&"runs 4 → 2".to_string()), "{:?}", m.diffs);
        assert!(
            m.diffs.contains(&"status ok → failed".to_string()),
            "{:?}",
            m.diffs
        );
        assert_eq!(
            rows.iter().filter(|r| r.change == Change::Removed).count(),
            0
        );
    }

    #[test]
    fn agent_calls_line_up_by_phase_and_attempt_and_requests_by_number() {
        let call = |name: &str, attempt: u32, model: &str| {
            let mut req = node(Kind::ModelRequest, &format!("chat {model}"), vec![]);
            req.attributes.insert("request".into(), 1.into());
            let mut c = node(Kind::AgentCall, name, vec![req]);
            c.attributes.insert("phase".into(), "plan".into());
            c.attributes.insert("attempt".into(), attempt.into());
            c
        };
        let a = node(Kind::Phase, "plan", vec![call("claude", 1, "opus")]);
        let b = node(
            Kind::Phase,
            "plan",
            vec![call("llm:local", 1, "qwen"), call("llm:local", 2, "qwen")],
        );
        let rows = align(&a, &b);
        let changes: Vec<(&str, Change)> =
            rows.iter().map(|r| (r.name.as_str(), r.change)).collect();
        assert_eq!(
            changes,
            [
                ("plan", Change::Same),
                ("claude", Change::Changed),
                ("chat opus", Change::Changed),
                ("llm:local", Change::Added),
                ("chat qwen", Change::Added),
            ]
        );
        assert_eq!(rows[1].diffs, ["claude → llm:local"]);
    }
}
