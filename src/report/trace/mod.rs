//! The call tree of a run, rebuilt from `events.jsonl` alone.
//!
//! An agent's path differs from run to run, so a flat log does not say why an
//! iteration did what it did. Every event carries its own id and its parent's
//! (`events/span.rs`), so the tree — run → iteration → phase → subagent or
//! agent call → model request → tool call, with the setup, guard and metric
//! commands where they ran — is read from the ids, never guessed from
//! timestamps. The few pairs the log writes as siblings (a model request and
//! its response, a tool call and its result) are joined by the ids they
//! carry: the request number under one call, the `tool_call_id`.
//!
//! `ooda trace` draws this tree, `ooda export --otlp` turns it into
//! OpenTelemetry spans, and the metrics of `summary.md` are sums over it, so
//! all three agree by construction.

mod node;
mod render;

pub(crate) use node::{Kind, Node, Note, Status, Transition};
pub(crate) use render::{Style, render};

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::events::{Event, Record};
use crate::model::CommandOutcome;
use crate::model::{CallOutcome, SubagentOutcome, TaskState, Usage, Verdict};

/// Version of the `ooda trace --json` document.
pub(crate) const TRACE_SCHEMA: u32 = 1;

/// The runs in `records`, in the order they started: one tree each.
pub(crate) fn build(records: &[Record]) -> Vec<Node> {
    let mut b = Builder::default();
    for r in records {
        b.add(r);
    }
    let mut runs = b.finish();
    for run in &mut runs {
        abandon(run);
    }
    runs
}

/// What a process killed outright left unfinished, once the log shows it
/// was moved past — the same iteration started again, or its iteration went
/// on while a delegation never reported — ends `cancelled` ("abandoned"):
/// no state says it still runs.
fn abandon(run: &mut Node) {
    let abandoned = |n: &mut Node, at: DateTime<Utc>, why: &str| {
        let was = match n.states.last() {
            Some(t) => match &t.detail {
                Some(d) => format!("{}: {d}", t.state.as_str()),
                None => t.state.as_str().to_string(),
            },
            None => "unfinished".into(),
        };
        n.states.push(Transition {
            at,
            state: TaskState::Cancelled,
            detail: Some(format!("abandoned: {why} (it was {was})")),
        });
        if n.status == Status::Unfinished {
            n.status = Status::Cancelled;
        }
    };
    // Work done at the run's level (the judge, the synthesizers at a stop)
    // was left by a process that logged nothing more, when a later record
    // of the run comes from another process (ids start with the process).
    let process = |id: &str| id.rsplit_once('-').map(|(p, _)| p.to_string());
    let later: Vec<(DateTime<Utc>, Option<String>)> = run
        .children
        .iter()
        .map(|c| (c.start, process(&c.id)))
        .collect();
    for d in run.children.iter_mut().filter(|c| c.kind == Kind::Subagent) {
        let Some(since) = d.states.last().map(|t| t.at) else {
            continue;
        };
        if d.state().is_some_and(|s| !s.is_final())
            && let Some((at, _)) = later
                .iter()
                .find(|(at, p)| *at > since && *p != process(&d.id))
        {
            abandoned(d, *at, "a later tick went on without it");
        }
    }
    let open = |n: &Node| n.state().is_some_and(|s| !s.is_final());
    let count = run.children.len();
    for i in 0..count {
        let (head, tail) = run.children.split_at_mut(i + 1);
        let it = &mut head[i];
        if it.kind != Kind::Iteration {
            continue;
        }
        let again = tail
            .iter()
            .find(|o| o.kind == Kind::Iteration && o.iteration == it.iteration);
        if open(it)
            && let Some(o) = again
        {
            abandoned(it, o.start, "a later tick started this iteration again");
        }
        // Its delegations, against the iteration's own later states.
        let moved: Vec<(DateTime<Utc>, TaskState)> =
            it.states.iter().map(|t| (t.at, t.state)).collect();
        let gone = it.state() == Some(TaskState::Cancelled);
        let mut subs: Vec<&mut Node> = Vec::new();
        fn delegations<'n>(n: &'n mut Node, out: &mut Vec<&'n mut Node>) {
            for c in &mut n.children {
                if c.kind == Kind::Subagent {
                    out.push(c);
                } else {
                    delegations(c, out);
                }
            }
        }
        delegations(it, &mut subs);
        for d in subs {
            let Some(since) = d.states.last().map(|t| t.at) else {
                continue;
            };
            if !open(d) {
                continue;
            }
            let later = moved
                .iter()
                .find(|(at, s)| *at > since && *s != TaskState::WaitingChild)
                .map(|(at, _)| *at);
            if let Some(at) = later.or(gone.then_some(since)) {
                abandoned(d, at, "its iteration went on without it");
            }
        }
    }
}

/// The iteration `n` of a run, if the log has it.
pub(crate) fn iteration(run: &Node, n: u32) -> Option<&Node> {
    // The last of that number: an iteration started again after a kill (a
    // baseline measured again) left its first attempt behind.
    run.children
        .iter()
        .rev()
        .find(|c| c.kind == Kind::Iteration && c.iteration == Some(n))
}

/// The word for a serialized enum (`approve`, `timed_out`).
fn word<T: Serialize>(t: &T) -> String {
    match serde_json::to_value(t) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn percent(x: f64) -> String {
    crate::text::number::effect(x)
}

/// The nodes as a flat arena while the log is read; parents by index.
#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    parent: Vec<Option<usize>>,
    /// Every event id, mapped to the node it opened or the node it was
    /// logged under, so a child of any event finds its nearest node.
    by_id: HashMap<String, usize>,
    /// Run nodes by run id: where a record with no known parent goes.
    runs: HashMap<String, usize>,
    /// Open model requests: (the call's node, request number) → node.
    requests: HashMap<(usize, u32), usize>,
    /// Tool calls by (their agent call's node, tool_call_id): a driver
    /// that makes ids up (`call_1`) repeats them from one call to the next.
    tools: HashMap<(usize, String), usize>,
    /// The latest time anything below a node was logged.
    last: Vec<DateTime<Utc>>,
    kids: Vec<Vec<usize>>,
    /// Decisions logged before the tool call they explain: (node, note).
    decided: HashMap<(usize, String), (usize, Note)>,
}

impl Builder {
    fn add(&mut self, r: &Record) {
        // A warning logged under the run before its start (a state rebuilt
        // as the archive opened) made a stand-in run node: the start fills
        // it in rather than opening a second root with the same id.
        if let Event::RunStarted {
            brief,
            start_commit,
            seed,
        } = &r.event
            && let Some(&idx) = self.runs.get(&r.run_id)
        {
            let n = &mut self.nodes[idx];
            n.set("brief", brief.as_str());
            n.set("start_commit", start_commit.as_str());
            n.set("seed", *seed);
            n.start = n.start.min(r.ts);
            self.by_id.insert(r.id.clone(), idx);
            return;
        }
        let parent = self.parent_of(r);
        let opened = match &r.event {
            Event::RunStarted {
                brief,
                start_commit,
                seed,
            } => {
                let mut n = self.node(r, Kind::Run, format!("run {}", r.run_id));
                n.set("brief", brief.as_str());
                n.set("start_commit", start_commit.as_str());
                n.set("seed", *seed);
                n.set("run_id", r.run_id.as_str());
                Some(n)
            }
            Event::IterationStarted { brief_hash } => {
                let mut n = self.node(
                    r,
                    Kind::Iteration,
                    format!("iteration {}", r.iteration.unwrap_or(0)),
                );
                n.set("brief_hash", brief_hash.as_str());
                Some(n)
            }
            Event::PhaseStarted { phase } => {
                Some(self.node(r, Kind::Phase, phase.as_str().to_string()))
            }
            Event::SubagentStarted {
                name,
                role,
                driver,
                delegation,
                sees,
            } => {
                let mut n = self.node(r, Kind::Subagent, name.clone());
                n.set("role", role.as_str());
                n.set("driver", driver.as_str());
                n.set("delegation", delegation.as_str());
                n.set("sees", sees.clone());
                Some(n)
            }
            Event::ModelCall {
                phase,
                profile,
                attempt,
                attempts,
                command,
                prompt_chars,
                model,
            } => {
                let mut n = self.node(r, Kind::AgentCall, profile.clone());
                if let Some(m) = model {
                    n.set("requested_model", m.as_str());
                }
                n.set("phase", phase.as_str());
                n.set("attempt", *attempt);
                n.set("attempts", *attempts);
                n.set("command", command.as_str());
                n.set("prompt_chars", *prompt_chars);
                Some(n)
            }
            Event::CommandStarted {
                role,
                worktree,
                command,
            } => {
                let mut n = self.node(r, Kind::Command, role.clone());
                n.set("worktree", worktree.as_str());
                n.set("command", command.as_str());
                Some(n)
            }
            Event::ConfirmationStarted { start, best } => {
                let mut n = self.node(r, Kind::Confirmation, "confirmation".into());
                n.set("start", start.as_str());
                n.set("best", best.as_str());
                Some(n)
            }
            Event::ModelRequest {
                request,
                provider,
                model,
                messages,
                prompt_chars,
                prompt_tokens_estimate,
            } => {
                let mut n = self.node(r, Kind::ModelRequest, format!("chat {model}"));
                n.set("request", *request);
                n.set("model", model.as_str());
                if !provider.is_empty() {
                    n.set("provider", provider.as_str());
                }
                n.set("messages", *messages);
                n.set("prompt_chars", *prompt_chars);
                n.set("prompt_tokens_estimate", *prompt_tokens_estimate);
                Some(n)
            }
            Event::ToolCall {
                tool_call_id,
                tool,
                arguments,
                ..
            } => {
                let mut n = self.node(r, Kind::ToolCall, tool.clone());
                n.set("tool_call_id", tool_call_id.as_str());
                n.set("arguments", arguments.as_str());
                Some(n)
            }
            _ => None,
        };
        if let Some(node) = opened {
            let idx = self.push(node, parent);
            self.by_id.insert(r.id.clone(), idx);
            match &r.event {
                Event::RunStarted { .. } => {
                    self.runs.insert(r.run_id.clone(), idx);
                }
                Event::ModelRequest { request, .. } => {
                    if let Some(p) = parent {
                        self.requests.insert((p, *request), idx);
                    }
                }
                Event::ToolCall { tool_call_id, .. } => {
                    let scope = (self.call_of(parent.unwrap_or(idx)), tool_call_id.clone());
                    self.tools.insert(scope.clone(), idx);
                    // The model's decision block comes before the call it
                    // explains: it moves onto the call.
                    if let Some((at, note)) = self.decided.remove(&scope) {
                        let notes = &mut self.nodes[at].notes;
                        if let Some(i) = notes.iter().position(|n| *n == note) {
                            notes.remove(i);
                        }
                        self.nodes[idx].notes.push(note);
                    }
                }
                _ => {}
            }
            return;
        }
        if let Some(p) = parent {
            self.by_id.insert(r.id.clone(), p);
            self.touch(p, r.ts);
            self.close(p, r);
        }
    }

    fn node(&self, r: &Record, kind: Kind, name: String) -> Node {
        Node::new(&r.id, kind, name, r.iteration, r.ts)
    }

    fn push(&mut self, node: Node, parent: Option<usize>) -> usize {
        let ts = node.start;
        self.nodes.push(node);
        self.parent.push(parent);
        self.last.push(ts);
        self.kids.push(Vec::new());
        let idx = self.nodes.len() - 1;
        if let Some(p) = parent {
            self.kids[p].push(idx);
            self.touch(p, ts);
        }
        idx
    }

    /// The node a record belongs under: its parent's, else its run's (a
    /// log whose start was cut off gets a run node of its own).
    fn parent_of(&mut self, r: &Record) -> Option<usize> {
        if matches!(r.event, Event::RunStarted { .. }) {
            return None;
        }
        if let Some(p) = r.parent_id.as_ref().and_then(|id| self.by_id.get(id)) {
            return Some(*p);
        }
        if let Some(run) = self.runs.get(&r.run_id) {
            return Some(*run);
        }
        let mut n = Node::new(
            &format!("run-{}", r.run_id),
            Kind::Run,
            format!("run {}", r.run_id),
            None,
            r.ts,
        );
        n.set("run_id", r.run_id.as_str());
        let idx = self.push(n, None);
        self.runs.insert(r.run_id.clone(), idx);
        self.by_id.insert(format!("run-{}", r.run_id), idx);
        Some(idx)
    }

    fn touch(&mut self, mut idx: usize, ts: DateTime<Utc>) {
        loop {
            if self.last[idx] < ts {
                self.last[idx] = ts;
            }
            match self.parent[idx] {
                Some(p) => idx = p,
                None => break,
            }
        }
    }

    fn note(&mut self, idx: usize, r: &Record, text: String) {
        self.nodes[idx].notes.push(Note {
            at: r.ts,
            kind: word(&EventType(&r.event)),
            text,
        });
    }

    /// The agent call `idx` is in (or `idx`): where tool call ids are unique.
    fn call_of(&self, idx: usize) -> usize {
        self.up(idx, Kind::AgentCall).unwrap_or(idx)
    }

    /// The nearest node of `kind` at or above `idx`.
    fn up(&self, mut idx: usize, kind: Kind) -> Option<usize> {
        loop {
            if self.nodes[idx].kind == kind {
                return Some(idx);
            }
            idx = self.parent[idx]?;
        }
    }

    /// Applies a record that ends, annotates or counts toward node `p`.
    fn close(&mut self, p: usize, r: &Record) {
        match &r.event {
            Event::PhaseFinished { seconds, .. } => {
                let n = &mut self.nodes[p];
                n.end = Some(r.ts);
                n.seconds = Some(*seconds);
                if n.status == Status::Unfinished {
                    n.status = Status::Ok;
                }
            }
            Event::SubagentFinished {
                outcome,
                seconds,
                verdict,
                findings,
                problem,
                ..
            } => {
                let n = &mut self.nodes[p];
                n.end = Some(r.ts);
                n.seconds = Some(*seconds);
                n.status = match outcome {
                    SubagentOutcome::Done | SubagentOutcome::Skipped => Status::Ok,
                    SubagentOutcome::Failed | SubagentOutcome::TimedOut => Status::Failed,
                };
                n.verdict = Some(match verdict {
                    Some(v) => word(v),
                    None => outcome.as_str().to_string(),
                });
                n.set("findings", *findings);
                n.error.clone_from(problem);
            }
            Event::ModelResult {
                phase,
                attempt,
                outcome,
                exit_code,
                seconds,
                tokens_in,
                tokens_out,
                cached,
                cache_write,
                reasoning,
                cost_usd,
                model,
                problem,
                files,
            } => {
                // Older logs wrote the result beside its call: the latest
                // call of that phase and attempt without a result is its.
                let call = if self.nodes[p].kind == Kind::AgentCall {
                    Some(p)
                } else {
                    self.kids[p].iter().copied().rev().find(|&c| {
                        let n = &self.nodes[c];
                        n.kind == Kind::AgentCall
                            && n.verdict.is_none()
                            && n.attribute("phase") == Some(phase.as_str())
                            && n.attributes.get("attempt").and_then(|v| v.as_u64())
                                == Some(u64::from(*attempt))
                    })
                };
                let Some(c) = call else {
                    self.note(p, r, format!("agent call ended {}", outcome.as_str()));
                    return;
                };
                let n = &mut self.nodes[c];
                n.end = Some(r.ts);
                n.seconds = Some(*seconds);
                n.status = match outcome {
                    CallOutcome::Ok => Status::Ok,
                    _ => Status::Failed,
                };
                n.verdict = Some(outcome.as_str().to_string());
                n.usage = Usage {
                    input: *tokens_in,
                    cached: *cached,
                    output: *tokens_out,
                    cache_write: *cache_write,
                    reasoning: *reasoning,
                    cost_usd: *cost_usd,
                };
                if let Some(m) = model {
                    n.set("model", m.as_str());
                }
                if let Some(code) = exit_code {
                    n.set("exit_code", *code);
                }
                n.error.clone_from(problem);
                if !files.is_empty() {
                    n.set("files", files.join(", "));
                    self.note(c, r, format!("files: {}", files.join(", ")));
                }
            }
            Event::CommandFinished {
                outcome,
                exit_code,
                seconds,
                truncated_bytes,
                ..
            } => {
                let n = &mut self.nodes[p];
                n.end = Some(r.ts);
                n.seconds = Some(*seconds);
                n.status = match outcome {
                    CommandOutcome::Success => Status::Ok,
                    CommandOutcome::Interrupted => Status::Cancelled,
                    _ => Status::Failed,
                };
                n.verdict = Some(word(outcome));
                if let Some(code) = exit_code {
                    n.set("exit_code", *code);
                }
                if *truncated_bytes > 0 {
                    n.set("truncated_bytes", *truncated_bytes);
                }
            }
            Event::PairMeasured {
                pair,
                max_pairs,
                running_effect,
                half_width,
                ..
            } => {
                let n = &mut self.nodes[p];
                n.set("pairs", *pair);
                n.set("max_pairs", *max_pairs);
                n.set("running_effect", *running_effect);
                if let Some(h) = half_width {
                    n.set("half_width", *h);
                }
            }
            Event::Confirmed {
                effect,
                ci,
                p: pv,
                pairs,
                why,
            } => {
                let n = &mut self.nodes[p];
                n.end = Some(r.ts);
                n.status = Status::Ok;
                n.verdict = Some(percent(*effect));
                n.set("effect", *effect);
                n.set("ci", vec![ci.0, ci.1]);
                n.set("p", *pv);
                n.set("pairs", *pairs);
                self.note(p, r, why.clone());
            }
            Event::Decision { verdict, reason } => {
                self.note(p, r, format!("{}: {reason}", verdict.as_str()));
                if let Some(it) = self.up(p, Kind::Iteration) {
                    self.nodes[it].set("reason", reason.as_str());
                }
            }
            Event::Verdict { verdict } => {
                let it = self.up(p, Kind::Iteration).unwrap_or(p);
                let n = &mut self.nodes[it];
                n.end = Some(r.ts);
                n.verdict = Some(verdict.as_str().to_string());
                n.status = match verdict {
                    Verdict::Crash | Verdict::Invalid => Status::Failed,
                    _ => Status::Ok,
                };
            }
            Event::LearnArchived { .. } => {
                // The baseline has no verdict event: its archive ends it.
                let n = &mut self.nodes[p];
                if n.kind == Kind::Iteration && n.iteration == Some(0) && n.verdict.is_none() {
                    n.end = Some(r.ts);
                    n.verdict = Some("baseline".into());
                    n.status = Status::Ok;
                }
            }
            Event::Plan {
                hypothesis,
                change,
                predicted_effect,
                predicted_sd,
                cites,
            } => {
                let cites = if cites.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", cites {}",
                        cites
                            .iter()
                            .map(|c| format!("iter-{c:03}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                };
                self.note(
                    p,
                    r,
                    format!(
                        "plan: {hypothesis} (predicted {}{cites})",
                        crate::text::number::predicted(*predicted_effect, *predicted_sd)
                    ),
                );
                if let Some(it) = self.up(p, Kind::Iteration) {
                    let n = &mut self.nodes[it];
                    n.set("hypothesis", hypothesis.as_str());
                    if !change.is_empty() {
                        n.set("change", change.as_str());
                    }
                    n.set("predicted_effect", *predicted_effect);
                    n.set("predicted_sd", *predicted_sd);
                }
            }
            Event::PlanRejected { rule, message } => {
                self.note(p, r, format!("plan refused ({rule}): {message}"));
            }
            Event::AgentUnavailable {
                reason,
                wait_seconds,
                ..
            } => self.note(
                p,
                r,
                format!("agent unavailable ({reason}); trying again in {wait_seconds:.0}s"),
            ),
            Event::ModelRetry {
                request,
                status,
                kind,
                wait_seconds,
            } => {
                let target = self.requests.get(&(p, *request)).copied().unwrap_or(p);
                let status = status.map(|s| format!("HTTP {s} ")).unwrap_or_default();
                self.note(
                    target,
                    r,
                    format!("retry: {status}{kind}, again in {wait_seconds:.1}s"),
                );
            }
            Event::ModelResponse {
                request,
                model,
                tokens_in,
                tokens_out,
                cached,
                reasoning,
                cache_write,
                latency_seconds,
                cost_usd,
                finish_reason,
                tries,
                error,
            } => {
                let Some(&q) = self.requests.get(&(p, *request)) else {
                    return;
                };
                self.touch(q, r.ts);
                let n = &mut self.nodes[q];
                n.end = Some(r.ts);
                n.seconds = Some(*latency_seconds);
                n.status = if error.is_some() {
                    Status::Failed
                } else {
                    Status::Ok
                };
                n.usage = Usage {
                    input: *tokens_in,
                    cached: *cached,
                    output: *tokens_out,
                    cache_write: *cache_write,
                    reasoning: *reasoning,
                    cost_usd: *cost_usd,
                };
                n.set("response_model", model.as_str());
                n.set("finish_reason", finish_reason.as_str());
                n.set("tries", *tries);
                n.set("reasoning_tokens", *reasoning);
                n.verdict = Some(if error.is_some() {
                    "failed".into()
                } else {
                    finish_reason.clone()
                });
                n.error.clone_from(error);
            }
            Event::ToolResult {
                tool_call_id,
                ok,
                chars,
                stored,
                error,
                ..
            } => {
                let scope = (self.call_of(p), tool_call_id.clone());
                let Some(&t) = self.tools.get(&scope) else {
                    return;
                };
                self.touch(t, r.ts);
                let n = &mut self.nodes[t];
                n.end = Some(r.ts);
                n.seconds = Some(n.seconds_until(r.ts));
                n.status = if *ok { Status::Ok } else { Status::Failed };
                n.verdict = Some(if *ok { "ok" } else { "error" }.into());
                n.set("chars", *chars);
                if let Some(s) = stored {
                    n.set("stored", s.as_str());
                }
                n.error.clone_from(error);
            }
            Event::DecisionAttribution {
                tool_call_id,
                goal,
                options,
                choice,
                why,
                expected,
                source,
            } => {
                let call = self.call_of(p);
                let known = tool_call_id
                    .as_ref()
                    .and_then(|id| self.tools.get(&(call, id.clone())).copied());
                let target = known.unwrap_or(p);
                let options = if options.is_empty() {
                    String::new()
                } else {
                    format!("; options: {}", options.join(" | "))
                };
                self.note(
                    target,
                    r,
                    format!(
                        "decision ({source}): {choice} — {why}; goal: {goal}{options}; expects: {expected}"
                    ),
                );
                if let (None, Some(id)) = (known, tool_call_id) {
                    let note = self.nodes[p].notes.last().cloned();
                    if let Some(note) = note {
                        self.decided.insert((call, id.clone()), (p, note));
                    }
                }
            }
            Event::Compaction {
                before_tokens,
                after_tokens,
                messages_removed,
            } => self.note(
                p,
                r,
                format!(
                    "compaction: {before_tokens} → {after_tokens} tokens, {messages_removed} messages folded"
                ),
            ),
            Event::Anomaly { kind, message } => {
                if matches!(kind, crate::model::AnomalyKind::ConfirmationFailed)
                    && self.nodes[p].kind == Kind::Confirmation
                {
                    self.nodes[p].status = Status::Failed;
                    self.nodes[p].error = Some(message.clone());
                }
                self.note(p, r, format!("anomaly {}: {message}", kind.as_str()));
            }
            Event::StopLifted { reason, detail } => {
                self.note(p, r, format!("stop lifted ({}): {detail}", reason.as_str()))
            }
            Event::EnvironmentChange { paths, reason } => self.note(
                p,
                r,
                format!("environment changed {}: {reason}", paths.join(", ")),
            ),
            Event::AnomalyFound {
                rule,
                severity,
                evidence,
                node,
                ..
            } => {
                // On the node it points to, when that node is in the tree.
                let target = node
                    .as_ref()
                    .and_then(|id| self.by_id.get(id).copied())
                    .unwrap_or(p);
                self.note(target, r, format!("anomaly {rule} ({severity}): {evidence}"));
            }
            Event::RedLight { reason, evidence } => {
                self.note(p, r, format!("RED {reason}: {evidence}"))
            }
            Event::ReplayFinished { full, problem } => {
                let it = self.up(p, Kind::Iteration).unwrap_or(p);
                let n = &mut self.nodes[it];
                n.end = Some(r.ts);
                n.status = if problem.is_some() {
                    Status::Failed
                } else {
                    Status::Ok
                };
                n.error.clone_from(problem);
                if n.verdict.is_none() {
                    n.verdict = Some(if *full { "replayed" } else { "replayed (plan)" }.into());
                }
            }
            Event::RunFinished {
                reason,
                detail,
                result,
            } => {
                let run = self.up(p, Kind::Run).unwrap_or(p);
                let n = &mut self.nodes[run];
                n.end = Some(r.ts);
                n.status = Status::Ok;
                n.verdict = Some(reason.clone());
                if let Some(res) = result {
                    n.set("result", res.text.clone());
                    n.set("result_kind", res.kind.clone());
                    if let Some(g) = res.gain {
                        n.set("gain", g);
                    }
                    if let Some(ci) = res.ci {
                        n.set("gain_ci_low", ci.0);
                        n.set("gain_ci_high", ci.1);
                    }
                }
                let said = result
                    .as_ref()
                    .map(|res| format!("; {}", res.text))
                    .unwrap_or_default();
                self.note(run, r, format!("stopped: {reason} — {detail}{said}"));
            }
            Event::Interrupted { phase } => {
                self.nodes[p].status = Status::Cancelled;
                let at = phase.map(|ph| format!(" after {}", ph.as_str()));
                self.note(p, r, format!("interrupted{}", at.unwrap_or_default()));
            }
            Event::IterationResumed { after_phase } => {
                self.note(p, r, format!("resumed after {}", after_phase.as_str()))
            }
            Event::BriefChanged { old_hash, new_hash } => self.note(
                p,
                r,
                format!("the Brief changed ({} → {})", short(old_hash), short(new_hash)),
            ),
            Event::Acknowledged { by, note } => self.note(
                p,
                r,
                format!(
                    "acknowledged by {by}{}",
                    note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
                ),
            ),
            Event::MeasureLockWaiting { holder, .. } => {
                self.note(p, r, format!("waiting for the measurement lock ({holder})"))
            }
            Event::MeasureLockAcquired { waited_seconds } => self.note(
                p,
                r,
                format!("measurement lock taken after {waited_seconds:.0}s"),
            ),
            Event::PairsResumed { pairs } => self.note(
                p,
                r,
                format!("went on from {pairs} pair(s) measured before it was cut short"),
            ),
            Event::ClusterFault {
                kind, message, ..
            } => self.note(p, r, format!("{kind} fault (no verdict): {message}")),
            Event::ScheduledTick {
                schedule,
                late_seconds,
                missed,
                ..
            } => self.note(
                p,
                r,
                format!("tick ({schedule}), {late_seconds:.0}s late, {missed} missed"),
            ),
            Event::ScheduledTickSkipped {
                schedule, reason, ..
            } => self.note(p, r, format!("tick ({schedule}) skipped: {reason}")),
            Event::Judged { judgement } => {
                // Kept whole, on the run, for the export's
                // `gen_ai.evaluation.*` events (on the run's span and each
                // graded iteration's, found without walking the tree).
                if let (Ok(v), Some(run)) = (serde_json::to_value(judgement), self.up(p, Kind::Run)) {
                    let list = self.nodes[run]
                        .attributes
                        .entry("judgements")
                        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                    if let serde_json::Value::Array(items) = list {
                        items.push(v);
                    }
                }
                self.note(
                    p,
                    r,
                    format!(
                        "judged the run {}: {}",
                        judgement.grade.as_str(),
                        judgement.why
                    ),
                )
            }
            Event::TaskState { state, detail } => {
                let n = &mut self.nodes[p];
                n.states.push(Transition {
                    at: r.ts,
                    state: *state,
                    detail: detail.clone(),
                });
                // A task that ended with no other end event (an iteration
                // PLAN found nothing for) ends as its state says.
                // A cut iteration's invalid verdict marked it failed; a
                // budget cut says cancelled, which is what it was.
                if n.kind == Kind::Iteration
                    && *state == TaskState::Cancelled
                    && n.status == Status::Failed
                {
                    n.status = Status::Cancelled;
                }
                if n.status == Status::Unfinished && state.is_final() {
                    n.status = match state {
                        TaskState::Failed => Status::Failed,
                        TaskState::Cancelled => Status::Cancelled,
                        _ => Status::Ok,
                    };
                    if n.status != Status::Ok && n.error.is_none() {
                        n.error.clone_from(detail);
                    }
                    n.end.get_or_insert(r.ts);
                }
            }
            Event::ScheduledTickFinished { outcome, seconds } => {
                self.note(p, r, format!("tick ended: {outcome} after {seconds:.0}s"))
            }
            // Counted by the commands and pairs around them, or machine
            // bookkeeping that says nothing about why.
            Event::Measurement { .. }
            | Event::Checkpoint { .. }
            | Event::ArtifactStored { .. }
            | Event::RunStarted { .. }
            | Event::IterationStarted { .. }
            | Event::PhaseStarted { .. }
            | Event::SubagentStarted { .. }
            | Event::ModelCall { .. }
            | Event::CommandStarted { .. }
            | Event::ConfirmationStarted { .. }
            | Event::ModelRequest { .. }
            | Event::ToolCall { .. } => {}
        }
    }

    /// Assembles the arena into trees; fills in ends, durations and sums.
    fn finish(self) -> Vec<Node> {
        let Builder {
            nodes,
            parent,
            last,
            ..
        } = self;
        let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
        // Children come after their parent in the arena: attach from the back.
        let mut roots = Vec::new();
        for i in (0..slots.len()).rev() {
            let mut n = slots[i].take().expect("each node is taken once");
            n.children.reverse();
            // A node ends when the last thing under it did: a phase's
            // finish is logged as it returns, but a child's own end (a tool
            // result stamped later) must not stick out past its parent.
            let below = n.children.iter().filter_map(|c| c.end).max();
            n.end = match (n.end, below) {
                (None, b) => Some(b.map_or(last[i], |b| b.max(last[i]))),
                (Some(e), Some(b)) if b > e => Some(b),
                (e, _) => e,
            };
            if n.seconds.is_none() {
                n.seconds = n.end.map(|e| n.seconds_until(e));
            }
            // An agent call's usage is what its result reported, which
            // already counts its model requests; one cut off before its
            // result counts the requests that were answered.
            let own = matches!(
                n.kind,
                Kind::AgentCall | Kind::ModelRequest | Kind::ToolCall
            );
            if !own || (n.kind == Kind::AgentCall && n.usage.is_empty()) {
                n.usage = Usage::sum(n.children.iter().map(|c| &c.usage));
            }
            match parent[i] {
                Some(p) => slots[p]
                    .as_mut()
                    .expect("a parent comes before its children")
                    .children
                    .push(n),
                None => roots.push(n),
            }
        }
        roots.reverse();
        roots
    }
}

fn short(hash: &str) -> &str {
    hash.get(..8).unwrap_or(hash)
}

/// Serializes to the event's `type` tag only.
struct EventType<'a>(&'a Event);

impl Serialize for EventType<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let v = serde_json::to_value(self.0).map_err(serde::ser::Error::custom)?;
        s.serialize_str(v["type"].as_str().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests;
