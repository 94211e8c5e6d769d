//! One agent step as a tool loop: request, tool calls, results, until the
//! model calls `finish` (or the step runs out of requests or time).
//!
//! What comes back is a [`Reply`], the same value a command agent's run
//! gives, so the phases read an llm step exactly as they read a CLI's.
//! Everything the loop meets is data: a failed request, a tool error, a
//! refused prompt becomes the call's outcome and problem, never a panic.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::Client;
use super::context::{Layers, Memory, Turn};
use super::store::Store;
use super::tools::{self, Bench, Done};
use super::wire::{Message, Request};
use crate::agent_output::Source;
use crate::brief::Brief;
use crate::config::{Config, ModelTier, TIERS};
use crate::driver::command::{AgentCall, CallOutcome, Invocation, Reply};
use crate::error::Result;
use crate::events::{Event, Span};
use crate::executor::Lease;
use crate::model::{AnomalyKind, Phase, Usage};

/// Requests one step may make.
pub const MAX_REQUESTS: u32 = 40;
/// Times a model that answers in prose is asked to call `finish`.
const NUDGES: u32 = 2;
/// Longest one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// L2's request limits.
const CONDENSE_TIMEOUT: Duration = Duration::from_secs(60);
const CONDENSE_INPUT: usize = 60_000;

/// The llm driver for one Brief (or one subagent): which model, which
/// commands, which numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct LlmSetup {
    /// What the Brief or definition asked for: a tier or a model id.
    pub choice: String,
    pub tier: ModelTier,
    /// L2's condenser; `None` when `models.light` is not set.
    pub light: Option<ModelTier>,
    /// The commands `run_command` may run.
    pub allowed: Vec<String>,
    pub layers: Layers,
    pub max_requests: u32,
    /// How long one allowed command may run.
    pub command_timeout: Duration,
}

impl LlmSetup {
    /// Resolves `model` (a tier, a model id, or `None` for `heavy`)
    /// against `ooda.yaml`'s `models`. The message says what to add when a
    /// tier is missing and which variable holds no key.
    pub fn resolve(
        config: &Config,
        brief: &Brief,
        model: Option<&str>,
    ) -> std::result::Result<LlmSetup, String> {
        let choice = model.unwrap_or("heavy").trim().to_string();
        let tier = if TIERS.contains(&choice.as_str()) {
            config.models.get(&choice).cloned().ok_or_else(|| {
                format!(
                    "the llm driver uses the `{choice}` model tier, and ooda.yaml has no `models.{choice}`: add e.g. `models: {{{choice}: {{provider: openai, model: gpt-4.1, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}}}}`"
                )
            })?
        } else {
            // A model id: served by the endpoint of the first tier that is set.
            let base = ["heavy", "medium", "light"]
                .iter()
                .find_map(|t| config.models.get(*t))
                .ok_or_else(|| {
                    format!(
                        "model `{choice}` needs an endpoint: ooda.yaml has no `models` tier to take the provider, base_url and api_key_env from; add e.g. `models: {{heavy: {{provider: openai, model: {choice}, base_url: http://127.0.0.1:8000/v1}}}}`"
                    )
                })?;
            ModelTier {
                model: choice.clone(),
                ..base.clone()
            }
        };
        if let Some(var) = &tier.api_key_env
            && std::env::var(var)
                .map(|v| v.trim().is_empty())
                .unwrap_or(true)
        {
            return Err(format!(
                "the `{choice}` model's key is read from the environment variable {var} (models: api_key_env), which is not set here: export it where ooda runs (cron and the daemon too), or remove api_key_env for a local server that needs no key"
            ));
        }
        let mut allowed: Vec<String> = brief.guards.clone();
        allowed.push(brief.metric.command.clone());
        allowed.extend(brief.metric.setup.clone());
        allowed.extend(brief.tools_allow.iter().cloned());
        allowed.retain(|c| !c.trim().is_empty());
        allowed.dedup();
        Ok(LlmSetup {
            choice,
            tier,
            light: config.models.get("light").cloned(),
            allowed,
            layers: Layers::default(),
            max_requests: MAX_REQUESTS,
            command_timeout: brief.metric.timeout.max(Duration::from_secs(60)),
        })
    }

    /// How iteration files name it: `llm:<model>`.
    pub fn name(&self) -> String {
        format!("llm:{}", self.tier.model)
    }

    /// What `ooda check` and the events say runs.
    pub fn describe(&self) -> String {
        format!(
            "{} {} at {}",
            self.tier.provider.as_str(),
            self.tier.model,
            self.tier.base_url()
        )
    }

    /// Runs one step. See the module documentation.
    pub fn run(
        &self,
        inv: &Invocation,
        lease: &dyn Lease,
        cancel: &AtomicBool,
        timeout: Duration,
    ) -> Result<Reply> {
        Loop::new(self, inv, lease, cancel, timeout)?.run()
    }
}

struct Loop<'a> {
    setup: &'a LlmSetup,
    inv: &'a Invocation<'a>,
    cancel: &'a AtomicBool,
    bench: Bench<'a>,
    client: Client,
    store: Store,
    memory: Memory,
    system: String,
    specs: Vec<super::wire::ToolSpec>,
    span: &'a Span,
    usage: Usage,
    model: Option<String>,
    transcript: std::path::PathBuf,
    started: Instant,
    timeout: Duration,
    requests: u32,
}

impl<'a> Loop<'a> {
    fn new(
        setup: &'a LlmSetup,
        inv: &'a Invocation<'a>,
        lease: &'a dyn Lease,
        cancel: &'a AtomicBool,
        timeout: Duration,
    ) -> Result<Loop<'a>> {
        crate::atomic::create_dir_all(inv.files_dir)?;
        let stem = stem(inv);
        let prompt = crate::compress::redact(inv.prompt);
        crate::atomic::write_atomic(
            &inv.files_dir.join(format!("{stem}.prompt.md")),
            prompt.as_bytes(),
        )?;
        let transcript = inv.files_dir.join(format!("{stem}.transcript.jsonl"));
        crate::atomic::write_atomic(&transcript, b"")?;
        let edits = inv.phase == Phase::Execute;
        let bench = Bench {
            root: inv.cwd,
            edits,
            allowed: &setup.allowed,
            lease,
            cancel,
            command_timeout: setup.command_timeout,
            output_cap: inv.output_cap,
        };
        Ok(Loop {
            setup,
            inv,
            cancel,
            bench,
            client: Client::new(&setup.tier, REQUEST_TIMEOUT.min(timeout))?,
            store: Store::new(&inv.files_dir.join(format!("{stem}.refs")), "r"),
            memory: Memory::new(inv.prompt),
            system: system_prompt(inv, edits, &setup.allowed),
            specs: tools::specs(edits, !setup.allowed.is_empty()),
            span: inv.span,
            usage: Usage::default(),
            model: None,
            transcript,
            started: Instant::now(),
            timeout,
            requests: 0,
        })
    }

    fn run(mut self) -> Result<Reply> {
        let mut nudges = 0;
        let mut last_text = String::new();
        let end = loop {
            if self.requests >= self.setup.max_requests {
                break Err((
                    CallOutcome::NoResult,
                    format!(
                        "the model did not call finish within {} requests",
                        self.setup.max_requests
                    ),
                ));
            }
            if self.started.elapsed() >= self.timeout {
                break Err((
                    CallOutcome::TimedOut,
                    format!(
                        "the step timed out after {}",
                        crate::brief::format_duration(self.timeout)
                    ),
                ));
            }
            let prompt = match self.prompt()? {
                Ok(p) => p,
                Err(problem) => break Err((CallOutcome::Failed, problem)),
            };
            self.requests += 1;
            let (system, messages) = (prompt.system, prompt.messages);
            self.span.emit(Event::ModelRequest {
                request: self.requests,
                model: self.setup.tier.model.clone(),
                messages: messages.len(),
                prompt_chars: prompt.chars,
                prompt_tokens_estimate: (prompt.chars as u64).div_ceil(4),
            })?;
            let req = Request {
                system: &system,
                messages: &messages,
                tools: &self.specs,
                max_output: self.setup.tier.max_output,
                temperature: None,
            };
            let answer = match self.ask(&self.client, &req)? {
                Ok(a) => a,
                Err(problem) => break Err((CallOutcome::Failed, problem)),
            };
            let setup = self.setup;
            self.count(&answer, &setup.tier);
            if !answer.model.is_empty() {
                self.model = Some(answer.model.clone());
            }
            last_text = answer.text.clone();
            self.memory.steps = self.requests;
            let reply = super::openai::message(&answer);
            self.log(&reply)?;
            self.memory.transcript.push(Turn::plain(reply));
            self.memory.depends.clear();
            if answer.calls.is_empty() {
                if let Ok((v, _)) = crate::agent_output::result_json(None, Some(&answer.text)) {
                    break Ok(v);
                }
                if nudges == NUDGES {
                    break Err((
                        CallOutcome::NoResult,
                        "the model answered in prose and never called finish with the step's JSON answer".into(),
                    ));
                }
                nudges += 1;
                let nudge = Message::user(
                    "Call the finish tool with the step's JSON answer as `answer` (or use the other tools first if the work is not done).",
                );
                self.log(&nudge)?;
                self.memory.transcript.push(Turn::plain(nudge));
                continue;
            }
            let mut finished = None;
            // One decision per model call: its block covers all its actions.
            let d = super::decision::attribute(&answer.text, answer.calls.first());
            self.span.emit(Event::DecisionAttribution {
                tool_call_id: answer.calls.first().map(|c| c.id.clone()),
                goal: d.goal,
                options: d.options,
                choice: d.choice,
                why: d.why,
                expected: d.expected,
                source: d.source,
            })?;
            for call in &answer.calls {
                self.span.emit(Event::ToolCall {
                    tool_call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: crate::compress::redact(&crate::prompt::clip(
                        &call.arguments.to_string(),
                        2_000,
                    )),
                })?;
                let turn = if call.name == tools::FINISH && finished.is_none() {
                    match call.arguments.get("answer") {
                        Some(v @ Value::Object(_)) => {
                            finished = Some(v.clone());
                            Turn::plain(Message::tool(&call.id, "received", false))
                        }
                        _ => Turn::plain(Message::tool(
                            &call.id,
                            "finish needs `answer`: the step's JSON object (e.g. {\"answer\": {\"hypothesis\": …}}); call it again",
                            true,
                        )),
                    }
                } else {
                    self.tool(call)?
                };
                self.span.emit(Event::ToolResult {
                    tool_call_id: call.id.clone(),
                    tool: call.name.clone(),
                    ok: !turn.msg.is_error,
                    chars: turn.msg.text.chars().count(),
                    stored: turn.stored.clone(),
                    error: turn
                        .msg
                        .is_error
                        .then(|| crate::prompt::clip(&turn.msg.text, 300)),
                })?;
                self.log(&turn.msg)?;
                self.memory.transcript.push(turn);
            }
            if let Some(v) = finished {
                break Ok(v);
            }
        };
        self.reply(end, &last_text)
    }

    /// The next prompt: the window fitted, compacted when near the window.
    fn prompt(&mut self) -> Result<std::result::Result<super::context::Prompt, String>> {
        let l = &self.setup.layers;
        self.memory.fit_window(l, &mut self.store)?;
        if let Some((before, after, removed)) = self.memory.compact(
            &self.system,
            &mut self.store,
            l,
            self.setup.tier.context_window,
        )? {
            self.span.emit(Event::Compaction {
                before_tokens: before,
                after_tokens: after,
                messages_removed: removed,
            })?;
        }
        match self.memory.assemble(&self.system, &self.store, l) {
            Ok(p) => Ok(Ok(p)),
            Err(v) => {
                self.span.emit(Event::Anomaly {
                    kind: AnomalyKind::ContextDuplicate,
                    message: v.to_string(),
                })?;
                Ok(Err(format!("the prompt builder refused the prompt: {v}")))
            }
        }
    }

    /// One request with its events; a final failure is the problem text.
    fn ask(
        &self,
        client: &Client,
        req: &Request,
    ) -> Result<std::result::Result<super::wire::Completion, String>> {
        let request = self.requests;
        let span = self.span;
        let out = client.complete(req, self.cancel, |e, wait| {
            let _ = span.emit(Event::ModelRetry {
                request,
                status: e.status,
                kind: e.kind.clone(),
                wait_seconds: wait.as_secs_f64(),
            });
        })?;
        let tier = client.tier();
        match out {
            Ok(a) => {
                let t = a.completion.tokens;
                let cost = (tier.price_in.is_some() || tier.price_out.is_some())
                    .then(|| tier.cost(t.input, t.output));
                span.emit(Event::ModelResponse {
                    request,
                    model: a.completion.model.clone(),
                    tokens_in: t.input,
                    tokens_out: t.output,
                    cached: t.cached,
                    reasoning: t.reasoning,
                    latency_seconds: a.latency.as_secs_f64(),
                    cost_usd: cost,
                    finish_reason: a.completion.finish.clone(),
                    tries: a.tries,
                    error: None,
                })?;
                Ok(Ok(a.completion))
            }
            Err(e) => {
                span.emit(Event::ModelResponse {
                    request,
                    model: tier.model.clone(),
                    tokens_in: 0,
                    tokens_out: 0,
                    cached: 0,
                    reasoning: 0,
                    latency_seconds: 0.0,
                    cost_usd: None,
                    finish_reason: String::new(),
                    tries: e.tries,
                    error: Some(e.describe()),
                })?;
                Ok(Err(e.describe()))
            }
        }
    }

    /// Runs one tool call and returns its transcript turn (L1 applied).
    fn tool(&mut self, call: &super::wire::ToolCall) -> Result<Turn> {
        let args = &call.arguments;
        let text = match call.name.as_str() {
            tools::FETCH => {
                let id = args.get("ref").and_then(Value::as_str).unwrap_or_default();
                let Some(contents) = self.store.contents(id) else {
                    let known: Vec<&str> = self.store.refs.iter().map(|r| r.id.as_str()).collect();
                    return Ok(Turn::plain(Message::tool(
                        &call.id,
                        format!(
                            "there is no stored ref `{id}`; the data index lists them: {}",
                            known.join(", ")
                        ),
                        true,
                    )));
                };
                let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
                let length = args
                    .get("length")
                    .and_then(Value::as_u64)
                    .unwrap_or(8_000)
                    .min(8_000) as usize;
                let total = contents.chars().count();
                let slice: String = contents.chars().skip(offset).take(length).collect();
                let more = if offset + length < total {
                    format!(
                        "\n[chars {offset}-{} of {total}; fetch again with offset {} for more]",
                        offset + slice.chars().count(),
                        offset + length
                    )
                } else {
                    String::new()
                };
                let mut t = Turn::plain(Message::tool(&call.id, format!("{slice}{more}"), false));
                t.fetched = Some(id.to_string());
                return Ok(t);
            }
            tools::INSIGHT => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                self.memory.add_insight(text, &self.setup.layers);
                return Ok(Turn::plain(Message::tool(
                    &call.id,
                    "kept in working memory",
                    false,
                )));
            }
            _ => match self.bench.run(&call.name, args)? {
                Done::Text(t) => t,
                Done::Error(e) => return Ok(Turn::plain(Message::tool(&call.id, e, true))),
            },
        };
        let l = &self.setup.layers;
        let (shown, store) = super::context::triage(&call.name, &text, l);
        if !store {
            return Ok(Turn::plain(Message::tool(&call.id, shown, false)));
        }
        let r = self.store.put(&call.name, &text)?.clone();
        let summary = if shown.chars().count() > l.condense_chars && self.setup.light.is_some() {
            Some(self.condense(&r.tool, &shown)?)
        } else {
            super::context::plain_summary(&call.name, &text, l)
        };
        if let Some(summary) = summary {
            self.store.set_summary(&r.id, summary);
        }
        let r = self.store.get(&r.id).cloned().unwrap_or(r);
        self.span.emit(Event::ArtifactStored {
            reference: r.id.clone(),
            path: r
                .path
                .strip_prefix(self.inv.iterations_dir)
                .unwrap_or(&r.path)
                .display()
                .to_string(),
            bytes: std::fs::metadata(&r.path).map(|m| m.len()).unwrap_or(0),
        })?;
        Ok(self.memory.stored(&call.id, &r))
    }

    /// L2: the `light` tier's condensation of a large result, or the
    /// structured truncation when it fails (or no light tier is set).
    fn condense(&mut self, tool: &str, text: &str) -> Result<String> {
        let l = &self.setup.layers;
        let fallback = || {
            json!({"__fallbackTruncated": true, "head": text.chars().take(l.fallback_chars).collect::<String>()}).to_string()
        };
        let Some(light) = &self.setup.light else {
            return Ok(fallback());
        };
        let client = Client::new(light, CONDENSE_TIMEOUT)?;
        let input: String = text.chars().take(CONDENSE_INPUT).collect();
        let ask = [Message::user(format!(
            "Condense this `{tool}` result into at most {} characters for an agent that will decide its next step from it. Keep every error and warning line, every id, hash, number and name exactly as written; say what kinds of lines you left out.\n\n{input}",
            l.condense_max
        ))];
        let req = Request {
            system: "You condense tool output. Never invent values; copy them exactly.",
            messages: &ask,
            tools: &[],
            max_output: (l.condense_max as u64 / 3).max(256),
            temperature: Some(0.3),
        };
        self.requests += 1;
        self.span.emit(Event::ModelRequest {
            request: self.requests,
            model: light.model.clone(),
            messages: 1,
            prompt_chars: input.chars().count(),
            prompt_tokens_estimate: (input.chars().count() as u64).div_ceil(4),
        })?;
        let out = self.ask(&client, &req)?;
        Ok(match out {
            Ok(c) if !c.text.trim().is_empty() => {
                self.count(&c, light);
                crate::prompt::clip(c.text.trim(), l.condense_max)
            }
            _ => fallback(),
        })
    }

    fn count(&mut self, c: &super::wire::Completion, tier: &ModelTier) {
        let t = c.tokens;
        let cost = (tier.price_in.is_some() || tier.price_out.is_some())
            .then(|| tier.cost(t.input, t.output));
        self.usage.add(&Usage {
            input: t.input,
            cached: t.cached,
            output: t.output,
            cost_usd: cost,
        });
    }

    /// Appends one message to the step's transcript file (redacted).
    fn log(&mut self, m: &Message) -> Result<()> {
        use std::io::Write;
        let line = crate::compress::redact(&serde_json::to_string(m).unwrap_or_default());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .map_err(|e| {
                crate::error::Error::io(format!("writing {}", self.transcript.display()), e)
            })?;
        writeln!(f, "{line}").map_err(|e| {
            crate::error::Error::io(format!("writing {}", self.transcript.display()), e)
        })?;
        Ok(())
    }

    fn reply(
        self,
        end: std::result::Result<Value, (CallOutcome, String)>,
        last_text: &str,
    ) -> Result<Reply> {
        let seconds = self.started.elapsed().as_secs_f64();
        let (outcome, problem, result) = match end {
            Ok(v) => {
                let clean = crate::compress::redact(&v.to_string());
                crate::atomic::write_atomic(
                    &self
                        .inv
                        .files_dir
                        .join(format!("{}.result.json", stem(self.inv))),
                    clean.as_bytes(),
                )?;
                (CallOutcome::Ok, None, Ok((v, Source::FinishTool)))
            }
            Err((o, p)) => (o, Some(crate::compress::redact(&p)), Err(p)),
        };
        let call = AgentCall {
            phase: self.inv.phase,
            attempt: self.inv.attempt,
            outcome,
            exit_code: None,
            seconds: (seconds * 10.0).round() / 10.0,
            usage: self.usage,
            model: self.model.or_else(|| Some(self.setup.tier.model.clone())),
            problem,
            warnings: Vec::new(),
            waited: 0.0,
            output: Some(relative(self.inv.iterations_dir, &self.transcript)),
        };
        Ok(Reply {
            call,
            result,
            tool_error: None,
            excerpt: crate::compress::redact(&crate::prompt::clip(last_text, 4_000)),
        })
    }
}

fn stem(inv: &Invocation) -> String {
    let name = match inv.subagent {
        Some((name, _)) => name.to_string(),
        None => inv.phase.as_str().to_string(),
    };
    if inv.attempt > 1 {
        format!("{name}-{}", inv.attempt)
    } else {
        name
    }
}

fn relative(base: &Path, p: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

/// The instructions every request starts with.
fn system_prompt(inv: &Invocation, edits: bool, allowed: &[String]) -> String {
    let who = match inv.subagent {
        Some((name, role)) => format!("the `{name}` subagent ({} role)", role.as_str()),
        None => format!(
            "the main agent, in the {} phase",
            inv.phase.as_str().to_uppercase()
        ),
    };
    instructions(&who, edits, allowed)
}

/// The system prompt's instructions for `who` (the benchmark uses them too).
pub fn instructions(who: &str, edits: bool, allowed: &[String]) -> String {
    let work = if edits {
        "You change files in the worktree with edit_file and write_file; make the one change the task describes and nothing else."
    } else {
        "This step only reads: do not try to change files."
    };
    let commands = if allowed.is_empty() {
        "No commands may be run in this Brief.".to_string()
    } else {
        format!(
            "Commands you may run with run_command: {}.",
            allowed
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "You are {who} of ooda, an unattended optimization loop. You work only through the tools; paths are relative to the worktree root. {work} {commands}\n\
         \n\
         With each action, first write a short decision block: <decision>goal: … | options: … | choice: … | why: … | expected: …</decision>\n\
         \n\
         Large results are stored and shown as {{\"__stored\": true, \"__refId\": …, \"__summary\": …}}: the summary is not the data. When you need an exact value (an id, a list item, a number), call fetch_stored with the ref; never guess one. Keep what you establish with add_insight: old turns are folded into a handover as the step goes on.\n\
         \n\
         End the step by calling finish with the JSON answer the task asks for as `answer`. Where the task asks for a fenced `ooda` block or an output file, give that JSON to finish instead."
    )
}
