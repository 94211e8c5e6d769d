//! The numbers of a run, summed over its trace: tokens and cost per phase
//! and per subagent, cache hits, model latency, tool calls and their error
//! rate, benchmark runs and wall time per phase, keep rate, pace.
//!
//! They are computed from the same tree `ooda trace` draws (`report/trace/`), so
//! a number in `summary.md` can always be found again on a node.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::archive::history::fact::Fact;
use crate::model::{Usage, Verdict};
use crate::report::trace::{Kind, Node, Status};

/// Tokens and cost of a group of agent calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Spend {
    pub calls: usize,
    pub failed: usize,
    pub usage: Usage,
    pub seconds: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct ToolStats {
    pub calls: usize,
    pub errors: usize,
}

impl ToolStats {
    pub(crate) fn error_rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.errors as f64 / self.calls as f64
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct PhaseTime {
    /// How many times the phase ran.
    pub runs: usize,
    pub seconds: f64,
    /// Metric runs (one per side of a pair) made in it.
    pub benchmark_runs: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Metrics {
    /// Agent calls by the phase they ran for (`review` for a reviewer's).
    pub by_phase: BTreeMap<String, Spend>,
    /// Agent calls by subagent name (the main agent's are not in here).
    pub by_subagent: BTreeMap<String, Spend>,
    pub all: Spend,
    /// Cached share of the input tokens (None: no tokens reported).
    pub cache_hit_rate: Option<f64>,
    /// Seconds per model request (the llm driver), else per agent call.
    pub latency_p50: Option<f64>,
    pub latency_p95: Option<f64>,
    /// What the latencies are of: `model_request` or `agent_call`.
    pub latency_of: Option<String>,
    pub tools: BTreeMap<String, ToolStats>,
    pub phases: BTreeMap<String, PhaseTime>,
    pub benchmark_runs: usize,
    /// Keeps among the iterations that were decided (baseline not counted).
    pub keep_rate: Option<f64>,
    pub iterations_per_hour: Option<f64>,
    /// When older events were sealed (`events/`): the time of the first
    /// live one, where these numbers start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    Some(sorted[i.min(sorted.len() - 1)])
}

fn add(s: &mut Spend, n: &Node) {
    s.calls += 1;
    if n.status == Status::Failed {
        s.failed += 1;
    }
    s.usage.add(&n.usage);
    s.seconds += n.seconds.unwrap_or(0.0);
}

/// Where a node is: the phase and the subagent it is inside of.
#[derive(Clone, Copy)]
struct At<'a> {
    phase: Option<&'a str>,
    subagent: Option<&'a str>,
}

/// One run of a phase (or of a confirmation): its time and metric runs.
fn time(p: &mut PhaseTime, n: &Node) {
    p.runs += 1;
    p.seconds += n.seconds.unwrap_or(0.0);
    p.benchmark_runs += n
        .walk()
        .iter()
        .filter(|c| c.kind == Kind::Command && c.name == "metric")
        .count();
}

fn walk(n: &Node, at: At, m: &mut Metrics, requests: &mut Vec<f64>, calls: &mut Vec<f64>) {
    match n.kind {
        Kind::AgentCall => {
            // Counted under the phase that ran it (a reviewer's under review).
            let phase = at.phase.or(n.attribute("phase")).unwrap_or("?");
            add(m.by_phase.entry(phase.to_string()).or_default(), n);
            if let Some(s) = at.subagent {
                add(m.by_subagent.entry(s.to_string()).or_default(), n);
            }
            add(&mut m.all, n);
            if let Some(s) = n.seconds {
                calls.push(s);
            }
        }
        Kind::ModelRequest => {
            if let Some(s) = n.seconds.filter(|_| n.status == Status::Ok) {
                requests.push(s);
            }
        }
        Kind::ToolCall => {
            let t = m.tools.entry(n.name.clone()).or_default();
            t.calls += 1;
            if n.status == Status::Failed {
                t.errors += 1;
            }
        }
        Kind::Phase => time(m.phases.entry(n.name.clone()).or_default(), n),
        // A confirmation test outside any phase (at the stop, after a
        // resume) is a row of its own, not the baseline's.
        Kind::Confirmation if at.phase.is_none() => {
            time(m.phases.entry("confirmation".into()).or_default(), n)
        }
        Kind::Command if n.name == "metric" => m.benchmark_runs += 1,
        _ => {}
    }
    let at = match n.kind {
        Kind::Phase => At {
            phase: Some(&n.name),
            ..at
        },
        Kind::Subagent => At {
            subagent: Some(&n.name),
            ..at
        },
        _ => at,
    };
    for c in &n.children {
        walk(c, at, m, requests, calls);
    }
}

/// The metrics of `runs` (a Brief's trace) and its archive.
pub(crate) fn of(runs: &[Node], history: &[Fact]) -> Metrics {
    let mut m = Metrics::default();
    let (mut requests, mut calls) = (Vec::new(), Vec::new());
    for r in runs {
        let at = At {
            phase: None,
            subagent: None,
        };
        walk(r, at, &mut m, &mut requests, &mut calls);
    }
    if m.all.usage.input > 0 {
        m.cache_hit_rate = Some(m.all.usage.cached as f64 / m.all.usage.input as f64);
    }
    let (lat, of) = if requests.is_empty() {
        (calls, "agent_call")
    } else {
        (requests, "model_request")
    };
    let mut lat = lat;
    lat.sort_by(f64::total_cmp);
    if !lat.is_empty() {
        m.latency_p50 = quantile(&lat, 0.5);
        m.latency_p95 = quantile(&lat, 0.95);
        m.latency_of = Some(of.into());
    }
    let decided: Vec<&Fact> = history
        .iter()
        .filter(|r| r.iteration > 0 && !r.is(Verdict::Baseline))
        .collect();
    if !decided.is_empty() {
        let keeps = decided.iter().filter(|r| r.is(Verdict::Keep)).count();
        m.keep_rate = Some(keeps as f64 / decided.len() as f64);
    }
    if let (Some(first), Some(last)) = (history.first(), history.last()) {
        let hours = (last.finished - first.started) as f64 / 3600.0;
        if hours > 0.0 && !decided.is_empty() {
            m.iterations_per_hour = Some(decided.len() as f64 / hours);
        }
    }
    m
}

fn money(u: &Usage) -> String {
    u.cost_usd
        .map(crate::validate::units::format_usd)
        .unwrap_or_else(|| "not reported".into())
}

/// The "Metrics" section of `summary.md` (empty before anything ran).
pub(crate) fn section(m: &Metrics) -> String {
    if m.phases.is_empty() && m.all.calls == 0 {
        return String::new();
    }
    let mut s = String::from("## Metrics\n\n");
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    let mut facts = Vec::new();
    if let Some(k) = m.keep_rate {
        facts.push(format!("keep rate {}", pct(k)));
    }
    if let Some(r) = m.iterations_per_hour {
        facts.push(format!("{r:.1} iterations per hour"));
    }
    facts.push(format!("{} benchmark runs", m.benchmark_runs));
    if let Some(c) = m.cache_hit_rate {
        facts.push(format!("cache hits {} of input tokens", pct(c)));
    }
    if let (Some(a), Some(b), Some(of)) = (m.latency_p50, m.latency_p95, &m.latency_of) {
        let what = if of == "model_request" {
            "model latency"
        } else {
            "agent call time"
        };
        facts.push(format!("{what} p50 {a:.1}s, p95 {b:.1}s"));
    }
    let _ = writeln!(s, "{}.\n", facts.join(", "));
    if let Some(t) = m.since {
        let _ = writeln!(
            s,
            "From the events since {} (the older ones are sealed in `events/`; `ooda trace` reads them all).\n",
            t.format("%Y-%m-%d %H:%M UTC")
        );
    }
    let agents = m.all.calls > 0;
    let _ = writeln!(
        s,
        "{}",
        if agents {
            "| phase | ran | wall seconds | benchmark runs | agent calls | tokens in | tokens out | cost |\n|---|---|---|---|---|---|---|---|"
        } else {
            "| phase | ran | wall seconds | benchmark runs |\n|---|---|---|---|"
        }
    );
    // In the loop's order; the baseline's runs are in no phase.
    let mut names: Vec<&str> = crate::model::Phase::ALL
        .iter()
        .map(|p| p.as_str())
        .collect();
    names.extend(
        m.phases
            .keys()
            .map(String::as_str)
            .filter(|k| !names.contains(k))
            .collect::<Vec<_>>(),
    );
    for name in names {
        let Some(p) = m.phases.get(name) else {
            continue;
        };
        let _ = write!(
            s,
            "| {name} | {} | {:.0} | {} |",
            p.runs, p.seconds, p.benchmark_runs
        );
        if agents {
            let spend = m.by_phase.get(name).cloned().unwrap_or_default();
            let _ = write!(
                s,
                " {} | {} | {} | {} |",
                spend.calls,
                spend.usage.input,
                spend.usage.output,
                if spend.calls > 0 {
                    money(&spend.usage)
                } else {
                    String::new()
                }
            );
        }
        s.push('\n');
    }
    let in_phases: usize = m.phases.values().map(|p| p.benchmark_runs).sum();
    if m.benchmark_runs > in_phases {
        let _ = writeln!(
            s,
            "| baseline (iteration 0) | 1 | | {} |{}",
            m.benchmark_runs - in_phases,
            if agents { " | | | |" } else { "" }
        );
    }
    s.push('\n');
    if !m.by_subagent.is_empty() {
        let _ = writeln!(
            s,
            "| subagent | calls | failed | tokens in | tokens out | cost |\n|---|---|---|---|---|---|"
        );
        for (name, sp) in &m.by_subagent {
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} |",
                sp.calls,
                sp.failed,
                sp.usage.input,
                sp.usage.output,
                money(&sp.usage)
            );
        }
        s.push('\n');
    }
    if !m.tools.is_empty() {
        let _ = writeln!(
            s,
            "| tool | calls | errors | error rate |\n|---|---|---|---|"
        );
        for (name, t) in &m.tools {
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} |",
                t.calls,
                t.errors,
                pct(t.error_rate())
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn node(kind: Kind, name: &str, secs: f64, children: Vec<Node>) -> Node {
        let mut n = Node::new(name, kind, name.into(), Some(1), Utc::now());
        n.status = Status::Ok;
        n.seconds = Some(secs);
        n.children = children;
        n
    }

    #[test]
    fn calls_count_under_their_phase_and_subagent_and_latency_prefers_requests() {
        let mut plan_call = node(
            Kind::AgentCall,
            "claude",
            10.0,
            vec![
                node(Kind::ModelRequest, "chat m", 1.0, vec![]),
                node(Kind::ModelRequest, "chat m", 3.0, vec![]),
                node(Kind::ToolCall, "read_file", 0.1, vec![]),
            ],
        );
        plan_call.set("phase", "plan");
        plan_call.usage = Usage {
            input: 100,
            cached: 25,
            output: 10,
            cost_usd: Some(0.5),
            ..Usage::default()
        };
        let mut bad_tool = node(Kind::ToolCall, "read_file", 0.1, vec![]);
        bad_tool.status = Status::Failed;
        let mut review_call = node(Kind::AgentCall, "claude", 4.0, vec![bad_tool]);
        review_call.set("phase", "plan");
        review_call.usage = Usage {
            input: 100,
            cached: 75,
            output: 10,
            cost_usd: Some(0.25),
            ..Usage::default()
        };
        let run = node(
            Kind::Run,
            "run",
            100.0,
            vec![node(
                Kind::Iteration,
                "iteration 1",
                50.0,
                vec![
                    node(Kind::Phase, "plan", 11.0, vec![plan_call]),
                    node(
                        Kind::Phase,
                        "evaluate",
                        20.0,
                        vec![node(
                            Kind::Subagent,
                            "eval-runner",
                            20.0,
                            vec![
                                node(Kind::Command, "metric", 1.0, vec![]),
                                node(Kind::Command, "metric", 1.0, vec![]),
                            ],
                        )],
                    ),
                    node(
                        Kind::Phase,
                        "review",
                        5.0,
                        vec![node(
                            Kind::Subagent,
                            "code-reviewer",
                            5.0,
                            vec![review_call],
                        )],
                    ),
                ],
            )],
        );
        let m = of(&[run], &[]);
        assert_eq!(m.by_phase["plan"].calls, 1);
        assert_eq!(m.by_phase["review"].calls, 1, "{:?}", m.by_phase);
        assert_eq!(m.by_subagent["code-reviewer"].usage.cost_usd, Some(0.25));
        assert_eq!(m.all.usage.input, 200);
        assert_eq!(m.cache_hit_rate, Some(0.5));
        assert_eq!(m.latency_of.as_deref(), Some("model_request"));
        assert_eq!((m.latency_p50, m.latency_p95), (Some(3.0), Some(3.0)));
        assert_eq!(
            m.tools["read_file"],
            ToolStats {
                calls: 2,
                errors: 1
            }
        );
        assert_eq!(m.benchmark_runs, 2);
        assert_eq!(m.phases["evaluate"].benchmark_runs, 2);
        let s = section(&m);
        assert!(s.contains("| read_file | 2 | 1 | 50% |"), "{s}");
        assert!(s.contains("| review | 1 | 5 | 0 | 1 | 100 | 10 |"), "{s}");
    }
}
