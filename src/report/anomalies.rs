//! Anomalies read off the trace: the signs that a night is going wrong in
//! ways no verdict says — the same failure again and again, a budget nearly
//! spent, an agent that answers with nothing, a tool it does not have,
//! a context folded over and over, tools that mostly fail, an iteration
//! that spent far more tokens than the others.
//!
//! The rules are pure functions of the trace (`report/trace/`), the archive and
//! the budget, so CHECK can run them after every iteration and the morning
//! report can list them with the node each points to. Each is logged once
//! (an `anomaly_found` event keyed by rule and node); the cost and token
//! rules can be set in `ooda.yaml` to stop the run RED.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{Budget, Watch};
use crate::report::trace::{Kind, Node, Status};

/// A tool needs this many calls before its error rate means anything.
const TOOL_MIN_CALLS: usize = 5;

/// A run needs this many iterations with tokens before a spike is one.
const SPIKE_MIN_ITERATIONS: usize = 5;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Found {
    pub rule: &'static str,
    /// `high` for what should stop a careful reader: a budget nearly gone,
    /// a spike, a tool the agent does not have.
    pub severity: &'static str,
    pub iteration: Option<u32>,
    /// The trace node it points to (`ooda trace BRIEF ITER` shows it).
    pub node: Option<String>,
    pub evidence: String,
}

impl Found {
    /// What makes it the same anomaly again: logged once.
    pub(crate) fn key(&self) -> String {
        format!(
            "{}:{}",
            self.rule,
            self.node
                .clone()
                .unwrap_or_else(|| self.iteration.map(|i| i.to_string()).unwrap_or_default())
        )
    }
}

/// What was spent, against the budget.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spent {
    pub iterations: u32,
    pub wall_seconds: f64,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// A failure's text with what varies from one occurrence to the next
/// (numbers, ids, hashes) taken out, so the same failure is seen as one.
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::new();
    let mut last_digit = false;
    for c in text.chars().take(400) {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
            continue;
        }
        last_digit = false;
        out.push(c.to_ascii_lowercase());
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn nodes(runs: &[Node]) -> Vec<&Node> {
    runs.iter().flat_map(Node::walk).collect()
}

/// Every anomaly of the run as it stands.
pub(crate) fn detect(
    runs: &[Node],
    history: &[crate::archive::history::fact::Fact],
    budget: &Budget,
    spent: Spent,
    w: &Watch,
) -> Vec<Found> {
    let all = nodes(runs);
    let mut out = Vec::new();
    // The same failure again and again.
    let mut failures: BTreeMap<(Kind, String, String), Vec<&Node>> = BTreeMap::new();
    for n in &all {
        if n.status == Status::Failed
            && matches!(
                n.kind,
                Kind::AgentCall | Kind::ToolCall | Kind::ModelRequest
            )
        {
            let why = n
                .error
                .as_deref()
                .or(n.verdict.as_deref())
                .unwrap_or("failed");
            failures
                .entry((n.kind, n.name.clone(), normalize(why)))
                .or_default()
                .push(n);
        }
    }
    for ((kind, name, why), ns) in &failures {
        if ns.len() >= w.repeated_failure {
            let last = ns[ns.len() - 1];
            out.push(Found {
                rule: "repeated_failure",
                severity: "warn",
                iteration: last.iteration,
                node: Some(last.id.clone()),
                evidence: format!(
                    "{} `{name}` failed {} times the same way: {}",
                    kind.as_str(),
                    ns.len(),
                    crate::text::clip::clip(why, 160)
                ),
            });
        }
    }
    // A budget nearly spent.
    let limits = [
        (
            "iterations",
            budget.iterations.map(f64::from),
            f64::from(spent.iterations),
        ),
        (
            "wall time",
            budget.wall.map(|d| d.as_secs_f64()),
            spent.wall_seconds,
        ),
        (
            "tokens",
            budget.tokens.map(|t| t as f64),
            spent.tokens as f64,
        ),
        ("cost", budget.cost_usd, spent.cost_usd),
    ];
    for (what, limit, used) in limits {
        if let Some(limit) = limit.filter(|l| *l > 0.0)
            && used / limit >= w.budget_used
        {
            // Information: a run that uses its budget gets here by design.
            // The node names the limit, so a raised budget is judged anew.
            out.push(Found {
                rule: "budget_near",
                severity: "info",
                iteration: None,
                node: Some(format!(
                    "budget:{what}:{}",
                    crate::text::clip::fmt_num(limit)
                )),
                evidence: format!(
                    "{what}: {:.0}% of the budget used ({} of {})",
                    used / limit * 100.0,
                    crate::text::clip::fmt_num(used),
                    crate::text::clip::fmt_num(limit)
                ),
            });
        }
    }
    // Empty answers in a row, unknown tools, compaction churn.
    let calls: Vec<&&Node> = all.iter().filter(|n| n.kind == Kind::AgentCall).collect();
    let mut streak: Vec<&Node> = Vec::new();
    for c in &calls {
        if c.verdict.as_deref() == Some("no_result") {
            streak.push(c);
            if streak.len() == w.empty_responses {
                out.push(Found {
                    rule: "empty_responses",
                    severity: "warn",
                    iteration: c.iteration,
                    node: Some(c.id.clone()),
                    evidence: format!(
                        "{} agent calls in a row gave no usable answer (the last: {})",
                        streak.len(),
                        crate::text::clip::clip(c.error.as_deref().unwrap_or("no result"), 160)
                    ),
                });
            }
        } else {
            streak.clear();
        }
        let folds = c.notes.iter().filter(|n| n.kind == "compaction").count();
        if folds >= w.compactions {
            out.push(Found {
                rule: "compaction_churn",
                severity: "warn",
                iteration: c.iteration,
                node: Some(c.id.clone()),
                evidence: format!(
                    "the {} step of `{}` folded its context {folds} times",
                    c.attribute("phase").unwrap_or("?"),
                    c.name
                ),
            });
        }
    }
    let mut tools: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for n in all.iter().filter(|n| n.kind == Kind::ToolCall) {
        let t = tools.entry(n.name.as_str()).or_default();
        t.0 += 1;
        if n.status == Status::Failed {
            t.1 += 1;
            let e = n.error.as_deref().unwrap_or("").to_ascii_lowercase();
            // ooda's own driver says "there is no tool `x`"; other
            // agents' wordings too.
            if e.contains("unknown tool")
                || e.contains("no tool named")
                || e.contains("there is no tool")
            {
                out.push(Found {
                    rule: "unknown_tool",
                    severity: "high",
                    iteration: n.iteration,
                    node: Some(n.id.clone()),
                    evidence: format!(
                        "the model called `{}`, a tool it does not have: {}",
                        n.name,
                        crate::text::clip::clip(&e, 160)
                    ),
                });
            }
        }
    }
    for (name, (calls, errors)) in tools {
        if calls >= TOOL_MIN_CALLS && errors as f64 / calls as f64 > w.tool_error_rate {
            out.push(Found {
                rule: "tool_errors",
                severity: "warn",
                // A rate over the whole run: no one iteration's.
                iteration: None,
                node: Some(format!("tool:{name}")),
                evidence: format!(
                    "`{name}` failed {errors} of {calls} calls ({:.0}%)",
                    errors as f64 / calls as f64 * 100.0
                ),
            });
        }
    }
    // An iteration far above the run's median in tokens.
    let spent_by: Vec<(u32, u64)> = history
        .iter()
        .filter(|r| r.iteration > 0 && r.tokens > 0)
        .map(|r| (r.iteration, r.tokens))
        .collect();
    if spent_by.len() >= SPIKE_MIN_ITERATIONS {
        let mut t: Vec<f64> = spent_by.iter().map(|(_, t)| *t as f64).collect();
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        for (it, tokens) in &spent_by {
            if median > 0.0 && *tokens as f64 > w.token_spike * median {
                out.push(Found {
                    rule: "token_spike",
                    severity: "high",
                    iteration: Some(*it),
                    node: Some(format!("iteration:{it}")),
                    evidence: format!(
                        "iteration {it} used {tokens} tokens, {:.1}× the run's median ({median:.0})",
                        *tokens as f64 / median
                    ),
                });
            }
        }
    }
    out
}

/// The anomalies already logged, by key.
pub(crate) fn logged(records: &[crate::events::Record]) -> BTreeSet<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            crate::events::Event::AnomalyFound { fingerprint, .. } => Some(fingerprint.clone()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn node(kind: Kind, name: &str, status: Status, error: Option<&str>) -> Node {
        let mut n = Node::new(
            &format!("{name}-{}", unique()),
            kind,
            name.into(),
            Some(1),
            Utc::now(),
        );
        n.status = status;
        n.error = error.map(str::to_string);
        n
    }

    /// Distinct node ids: a rule may key on them.
    fn unique() -> usize {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        N.fetch_add(1, Ordering::Relaxed)
    }

    fn rules(found: &[Found]) -> Vec<&str> {
        found.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn each_rule_fires_on_its_pattern_and_not_below_it() {
        let w = Watch::default();
        let none = Budget::default();
        // Three reads failing the same way (only the line number differs).
        let fail = |l: u32| {
            node(
                Kind::ToolCall,
                "read_file",
                Status::Failed,
                Some(&format!("no such file src/a.rs line {l}")),
            )
        };
        let mut call = node(Kind::AgentCall, "llm:m", Status::Ok, None);
        call.children = vec![
            fail(1),
            fail(22),
            node(Kind::ToolCall, "read_file", Status::Ok, None),
        ];
        let run = |c: Vec<Node>| {
            let mut r = node(Kind::Run, "run", Status::Ok, None);
            r.children = c;
            r
        };
        assert!(detect(&[run(vec![call.clone()])], &[], &none, Spent::default(), &w).is_empty());
        call.children.push(fail(333));
        let f = detect(&[run(vec![call.clone()])], &[], &none, Spent::default(), &w);
        assert_eq!(rules(&f), ["repeated_failure"]);
        assert!(
            f[0].evidence.contains("failed 3 times"),
            "{}",
            f[0].evidence
        );
        // 3 errors of 4 calls is not enough calls; 5 with 3 errors is.
        call.children
            .push(node(Kind::ToolCall, "read_file", Status::Ok, None));
        let f = detect(&[run(vec![call.clone()])], &[], &none, Spent::default(), &w);
        assert!(rules(&f).contains(&"tool_errors"), "{f:?}");

        let unknown = node(
            Kind::ToolCall,
            "delete_repo",
            Status::Failed,
            Some("unknown tool `delete_repo`"),
        );
        let f = detect(&[run(vec![unknown])], &[], &none, Spent::default(), &w);
        assert_eq!(rules(&f), ["unknown_tool"]);

        let empty = || {
            let mut c = node(Kind::AgentCall, "claude", Status::Failed, Some("empty"));
            c.verdict = Some("no_result".into());
            c
        };
        let ok = node(Kind::AgentCall, "claude", Status::Ok, None);
        let f = detect(
            &[run(vec![empty(), ok.clone(), empty()])],
            &[],
            &none,
            Spent::default(),
            &w,
        );
        assert!(!rules(&f).contains(&"empty_responses"));
        let f = detect(
            &[run(vec![empty(), empty()])],
            &[],
            &none,
            Spent::default(),
            &w,
        );
        assert!(rules(&f).contains(&"empty_responses"));

        let mut churn = node(Kind::AgentCall, "llm:m", Status::Ok, None);
        for _ in 0..3 {
            churn.notes.push(crate::report::trace::Note {
                at: Utc::now(),
                kind: "compaction".into(),
                text: "x".into(),
            });
        }
        assert_eq!(
            rules(&detect(
                &[run(vec![churn])],
                &[],
                &none,
                Spent::default(),
                &w
            )),
            ["compaction_churn"]
        );

        let budget = Budget {
            tokens: Some(1000),
            ..Budget::default()
        };
        let spent = Spent {
            tokens: 799,
            ..Spent::default()
        };
        assert!(detect(&[], &[], &budget, spent, &w).is_empty());
        let spent = Spent {
            tokens: 800,
            ..Spent::default()
        };
        let f = detect(&[], &[], &budget, spent, &w);
        assert_eq!(rules(&f), ["budget_near"]);
        assert!(f[0].evidence.contains("80%"), "{}", f[0].evidence);

        use crate::model::IterationRecord;
        let mut history: Vec<IterationRecord> = (0..7)
            .map(|i| {
                let mut r = IterationRecord::new(i, crate::model::Verdict::Discard);
                r.tokens = 1000;
                r
            })
            .collect();
        let rows = |h: &[IterationRecord]| crate::archive::history::fact::Fact::all_of(h);
        assert!(detect(&[], &rows(&history), &none, Spent::default(), &w).is_empty());
        history[5].tokens = 3500;
        let f = detect(&[], &rows(&history), &none, Spent::default(), &w);
        assert_eq!(rules(&f), ["token_spike"]);
        assert_eq!(f[0].iteration, Some(5));
    }

    #[test]
    fn normalizing_keeps_the_words_and_drops_what_varies() {
        assert_eq!(
            normalize("HTTP 500 after 5 tries (req 123abc)"),
            "http # after # tries (req #abc)"
        );
        assert_eq!(normalize("x  y\n z"), "x y z");
    }
}
