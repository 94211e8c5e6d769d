//! One agent step as a tool loop: request, tool calls, results, until the
//! model calls `finish` (or the step runs out of requests or time).
//!
//! What comes back is a [`Reply`], the same value a command agent's run
//! gives, so the phases read an llm step exactly as they read a CLI's.
//! Everything the loop meets is data: a failed request, a tool error, a
//! refused prompt becomes the call's outcome and problem, never a panic.
//! The step's deadline holds inside requests and commands too: each try,
//! retry wait and command gets at most what is left of it.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::Client;
use super::context::{Layers, Memory, Turn, Window};
use super::retry::ApiError;
use super::store::Store;
use super::text_calls;
use super::tools::{self, Bench, Done};
use super::wire::{Completion, Message, Request, ToolCall, ToolSpec};
use crate::brief::Brief;
use crate::config::{Config, ModelTier, TIERS, ToolsMode};
use crate::driver::agent::reply::{Source, relative};
use crate::driver::agent::{Invocation, Reply};
use crate::error::Result;
use crate::events::{Event, Span};
use crate::model::{AgentCall, CallOutcome};
use crate::model::{AnomalyKind, Phase, Usage, sign};
use crate::run::executor::Lease;

/// Requests one step may make (L2's included).
pub(crate) const MAX_REQUESTS: u32 = 40;
/// Times a model that answers in prose is asked to call `finish`.
const NUDGES: u32 = 2;
/// ... when it writes calls or edits as text, which small models get wrong
/// more often and fix when told exactly what was wrong (aider allows three
/// reflections too).
const TEXT_NUDGES: u32 = 3;
/// L2's request limits: one condensation may take this long in all.
const CONDENSE_TIMEOUT: Duration = Duration::from_secs(60);
const CONDENSE_INPUT: usize = 60_000;

/// The llm driver for one Brief (or one subagent): which model, which
/// commands, which numbers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LlmSetup {
    /// What the Brief or definition asked for: a tier or a model id.
    pub choice: String,
    pub tier: ModelTier,
    /// L2's condenser; `None` when `models.light` is not set.
    pub light: Option<ModelTier>,
    /// The commands `run_command` may run.
    pub allowed: Vec<String>,
    pub layers: Layers,
    pub max_requests: u32,
    /// How long one allowed command may run (as long as a guard may).
    pub command_timeout: Duration,
    /// Every tier's `api_key_env`: emptied for the commands the agent
    /// runs, and their values scrubbed from everything written.
    pub secret_vars: Vec<String>,
    /// How the model is offered its tools (the tier's `tools`, else what
    /// the preflight found, else native).
    pub tools: ToolsMode,
}

impl LlmSetup {
    /// Resolves `model` (a tier, a model id, or `None` for `heavy`)
    /// against `ooda.yaml`'s `models`. The message says what to add when a
    /// tier is missing and which variable holds no key.
    pub(crate) fn resolve(
        config: &Config,
        brief: &Brief,
        model: Option<&str>,
    ) -> std::result::Result<LlmSetup, String> {
        let choice = model.unwrap_or("heavy").trim().to_string();
        // `hevy` is a typo, not a model id.
        if !TIERS.contains(&choice.as_str())
            && choice.chars().all(|c| c.is_ascii_lowercase())
            && let Some(tier) = crate::validate::yaml::suggest(&choice, TIERS)
        {
            return Err(format!(
                "model `{choice}` is neither a tier nor a model id ooda can tell apart from one: did you mean `{tier}`? (a tier is light, medium or heavy; a model id is sent to the first tier's endpoint)"
            ));
        }
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
        let tools = tier
            .tools
            .or_else(|| recorded_tools(&brief.path, &tier))
            .unwrap_or(ToolsMode::Native);
        let mut secret_vars: Vec<String> = config
            .models
            .values()
            .filter_map(|t| t.api_key_env.clone())
            .collect();
        secret_vars.sort();
        secret_vars.dedup();
        Ok(LlmSetup {
            choice,
            tier,
            light: config.models.get("light").cloned(),
            allowed,
            layers: Layers::default(),
            max_requests: MAX_REQUESTS,
            command_timeout: crate::eval::long_timeout(brief),
            secret_vars,
            tools,
        })
    }

    /// How iteration files name it: `llm:<model>`.
    pub(crate) fn name(&self) -> String {
        format!("llm:{}", self.tier.model)
    }

    /// What `ooda check` and the events say runs.
    pub(crate) fn describe(&self) -> String {
        format!("{}, {}", endpoint(&self.tier), self.tools.describe())
    }

    /// Runs one step. See the module documentation.
    pub(crate) fn run(
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
    /// The tools sent with each request (none unless `tools: native`).
    specs: Vec<super::wire::ToolSpec>,
    /// The tools a call written as text may name.
    offered: Vec<super::wire::ToolSpec>,
    /// `max_output` for the next request: lowered after a request timed
    /// out, so a retry is not doomed the same way.
    max_output: std::cell::Cell<u64>,
    seen: Seen,
    /// The previous answer's text, to tell a repeated one.
    last_text: Option<String>,
    span: &'a Span,
    usage: Usage,
    model: Option<String>,
    transcript: std::path::PathBuf,
    stem: String,
    started: Instant,
    deadline: Instant,
    timeout: Duration,
    requests: u32,
    window: Window,
    /// The values of `secret_vars`, held in memory only, to scrub.
    secrets: Vec<String>,
    /// Refs announced with `artifact_stored` so far.
    announced: usize,
}

/// What the step saw of the model's way of working, for the call's
/// warnings: the morning report says why a model got nothing done.
#[derive(Default)]
struct Seen {
    structured: usize,
    /// Calls written as text, by form.
    text: std::collections::BTreeMap<&'static str, usize>,
    /// Answers cut off at `max_output`.
    cut_off: u32,
    blocks_applied: usize,
    blocks_failed: usize,
    /// Files written whole from a fenced block (aider's `whole` format).
    whole_files: usize,
    /// Objects that meant a call and were wrong.
    wrong_calls: usize,
}

impl Seen {
    fn warnings(&self, mode: ToolsMode, phase: Phase, max_output: u64) -> Vec<String> {
        let mut w = Vec::new();
        let text: usize = self.text.values().sum();
        if text > 0 {
            let forms: Vec<String> = self
                .text
                .iter()
                .map(|(f, n)| format!("{n} as {f}"))
                .collect();
            w.push(format!(
                "the model wrote {text} tool call(s) as text ({}); {}",
                forms.join(", "),
                sign::CALLS_AS_TEXT
            ));
        }
        if self.structured == 0 && text == 0 && mode != ToolsMode::None && phase == Phase::Execute {
            w.push(format!("the model {}", sign::NO_TOOL_CALLS));
        }
        if self.cut_off > 0 {
            w.push(format!(
                "{} answer(s) were {} ({max_output} tokens)",
                self.cut_off,
                sign::CUT_OFF
            ));
        }
        if self.wrong_calls > 0 {
            w.push(format!(
                "{} tool call(s) written as text {} and were not run",
                self.wrong_calls,
                sign::NOT_VALIDATED
            ));
        }
        if self.whole_files > 0 {
            w.push(format!(
                "the model wrote {} file(s) whole in a fenced block; they were written",
                self.whole_files
            ));
        }
        if self.blocks_failed > 0 {
            w.push(format!(
                "{} of {} {}",
                self.blocks_failed,
                self.blocks_failed + self.blocks_applied,
                sign::BLOCKS_FAILED
            ));
        }
        w
    }
}

/// How a step ended.
enum End {
    /// The model called `finish` with the step's answer (or gave it as a
    /// fenced or bare JSON object).
    Answer(Value, Source),
    /// EXECUTE ended in prose: its edit is the answer, as for an agent CLI
    /// (the JSON answer of EXECUTE is optional).
    Prose,
    /// No answer: the call's outcome and why.
    Stopped(CallOutcome, String),
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
        let stem = inv.stem();
        let secrets: Vec<String> = setup
            .secret_vars
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| v.chars().count() >= 8)
            .collect();
        let scrub = |t: &str| scrub(&secrets, t);
        crate::atomic::write_atomic(
            &inv.files_dir.join(format!("{stem}.prompt.md")),
            scrub(inv.prompt).as_bytes(),
        )?;
        let transcript = inv.files_dir.join(format!("{stem}.transcript.jsonl"));
        crate::atomic::write_atomic(&transcript, b"")?;
        let edits = inv.phase == Phase::Execute;
        let bench = Bench {
            root: inv.cwd,
            // The main agent's prompt names files of the archive; a
            // subagent's context is only what its definition gives it.
            archive: inv
                .subagent
                .is_none()
                .then(|| inv.iterations_dir.canonicalize().ok())
                .flatten(),
            blank_env: setup.secret_vars.clone(),
            edits,
            allowed: &setup.allowed,
            lease,
            cancel,
            command_timeout: setup.command_timeout,
            output_cap: inv.output_cap,
            explorer: Default::default(),
        };
        let offered = match setup.tools {
            ToolsMode::None => tools::specs(false, false)
                .into_iter()
                .filter(|s| s.name == tools::FINISH)
                .collect(),
            _ => tools::specs(edits, !setup.allowed.is_empty()),
        };
        let specs = match setup.tools {
            ToolsMode::Native => offered.clone(),
            _ => Vec::new(),
        };
        let mut prompt = scrub(inv.prompt);
        // A model without native tools is shown the files up front: a
        // small model that must first ask for each one rarely gets there.
        if setup.tools != ToolsMode::Native && edits && inv.subagent.is_none() {
            prompt.push_str(&files_shown(&bench, inv));
        }
        let schema_chars: usize = offered
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.schema.to_string().len())
            .sum();
        let started = Instant::now();
        Ok(Loop {
            setup,
            inv,
            cancel,
            bench,
            client: Client::new(&setup.tier)?,
            store: Store::new(&inv.files_dir.join(format!("{stem}.refs")), "r"),
            memory: Memory::new(&prompt),
            system: system_prompt(inv, edits, &setup.allowed, setup.tools, &offered),
            specs,
            offered,
            max_output: std::cell::Cell::new(setup.tier.max_output),
            seen: Seen::default(),
            last_text: None,
            span: inv.span,
            usage: Usage::default(),
            model: None,
            transcript,
            stem,
            started,
            deadline: started + timeout,
            timeout,
            requests: 0,
            window: Window {
                tokens: setup.tier.context_window,
                overhead: (schema_chars as u64).div_ceil(4),
                ratio: 1.0,
                reserve: setup.tier.max_output,
            },
            secrets,
            announced: 0,
        })
    }

    fn scrub(&self, text: &str) -> String {
        scrub(&self.secrets, text)
    }

    /// What a subagent was shown (its prompt), for telling its own answer
    /// from material it quotes; empty for the main agent.
    fn shown(&self) -> &str {
        if self.inv.subagent.is_some() {
            self.inv.prompt
        } else {
            ""
        }
    }

    /// An EXECUTE answer before any file was changed: small models describe
    /// the change instead of making it. Told so while nudges are left; then
    /// the answer stands, and the iteration says the agent changed nothing.
    fn answers_too_early(&self, main_execute: bool, nudges: u32) -> bool {
        main_execute
            && !self.inv.sets_knobs
            && nudges < self.nudges()
            && !worktree_changed(self.inv.cwd)
    }

    /// A message to the model, in the transcript and the log.
    fn tell(&mut self, text: String) -> Result<()> {
        let m = Message::user(text);
        self.log(&m)?;
        self.memory.transcript.push(Turn::plain(m));
        Ok(())
    }

    fn nudges(&self) -> u32 {
        match self.setup.tools {
            ToolsMode::Native => NUDGES,
            _ => TEXT_NUDGES,
        }
    }

    fn timed_out(&self) -> End {
        End::Stopped(
            CallOutcome::TimedOut,
            format!(
                "the step timed out after {}",
                crate::brief::format_duration(self.timeout)
            ),
        )
    }

    fn run(mut self) -> Result<Reply> {
        let mut nudges = 0;
        let mut squeezed = false;
        let end: End = loop {
            if self.requests >= self.setup.max_requests {
                break End::Stopped(
                    CallOutcome::NoResult,
                    format!(
                        "the model did not call finish within {} requests",
                        self.setup.max_requests
                    ),
                );
            }
            if Instant::now() >= self.deadline {
                break self.timed_out();
            }
            let prompt = match self.prompt()? {
                Ok(p) => p,
                Err(problem) => break End::Stopped(CallOutcome::Failed, problem),
            };
            self.requests += 1;
            let estimate = self.window.estimate(prompt.chars);
            self.span.emit(Event::ModelRequest {
                request: self.requests,
                provider: self.setup.tier.provider.as_str().to_string(),
                model: self.setup.tier.model.clone(),
                messages: prompt.messages.len(),
                prompt_chars: prompt.chars,
                prompt_tokens_estimate: estimate,
            })?;
            let req = Request {
                system: &prompt.system,
                messages: &prompt.messages,
                tools: &self.specs,
                max_output: self.max_output.get(),
                temperature: None,
            };
            let mut answer = match self.ask(&self.client, &req, self.deadline, true)? {
                Ok(a) => a,
                // The prompt was too long for the server after all (the
                // estimate is an estimate): fold what the rules allow and
                // send it once more.
                Err(e) if too_long(&e) && !squeezed && self.memory.split(usize::MAX) > 0 => {
                    squeezed = true;
                    let folded = self.memory.squeeze(
                        &self.system,
                        &mut self.store,
                        &self.setup.layers,
                        &self.window,
                    )?;
                    self.folded(folded)?;
                    continue;
                }
                Err(e) if e.kind == "step_timeout" || Instant::now() >= self.deadline => {
                    break self.timed_out();
                }
                // A server that cannot be reached, or says it is busy or
                // down, is an outage: waited out as a CLI's is, never the
                // agent's failure.
                Err(e) if e.outage() => {
                    break End::Stopped(
                        CallOutcome::Unavailable,
                        format!("agent unavailable: {}", self.scrub(&e.describe())),
                    );
                }
                Err(e) => break End::Stopped(CallOutcome::Failed, self.scrub(&e.describe())),
            };
            squeezed = false;
            let setup = self.setup;
            self.count(&answer, &setup.tier);
            if answer.tokens.input > 0 {
                // The API's count of this prompt over the estimate, for
                // the next one (prompts in other scripts take more tokens
                // per character).
                let est = estimate.saturating_sub(self.window.overhead).max(1) as f64;
                let seen = answer
                    .tokens
                    .input
                    .saturating_sub(self.window.overhead)
                    .max(1) as f64;
                self.window.ratio = (seen / est * self.window.ratio).clamp(0.5, 4.0);
            }
            if !answer.model.is_empty() {
                self.model = Some(answer.model.clone());
            }
            // The same words again after being told what was wrong: the
            // model is not taking the feedback in.
            if answer.calls.is_empty()
                && nudges > 0
                && !answer.text.trim().is_empty()
                && self.last_text.as_deref() == Some(answer.text.trim())
            {
                self.span.emit(Event::Anomaly {
                    kind: AnomalyKind::RepeatedAnswer,
                    message: format!(
                        "request {}: the model repeated its previous answer word for word ({} chars)",
                        self.requests,
                        answer.text.trim().chars().count()
                    ),
                })?;
            }
            self.last_text = Some(answer.text.trim().to_string());
            self.seen.structured += answer.calls.len();
            if answer.cut_off() {
                self.seen.cut_off += 1;
            }
            let main_execute = self.inv.phase == Phase::Execute && self.inv.subagent.is_none();
            // Edits written as blocks come first, whatever else the answer
            // holds (an answer, a finish written as text, after them).
            let mut failed = Vec::new();
            // Without native tools EXECUTE may edit by blocks: the format
            // small models know best (aider's), whatever else they manage.
            if main_execute && self.setup.tools != ToolsMode::Native && answer.calls.is_empty() {
                let mut blocks = super::edit_blocks::parse(&answer.text);
                // A block that changes nothing is no edit; one for a file
                // shown read only (the benchmark, its tests) is refused here,
                // where the model can still be told, not by the scope check
                // after the step, which blocks the whole change.
                blocks.retain(|b| b.search != b.replace);
                let (ro, blocks): (Vec<_>, Vec<_>) = blocks
                    .into_iter()
                    .partition(|b| self.inv.files.read.contains(&b.path));
                let applied = super::edit_blocks::apply(&self.bench, &blocks)?;
                failed = applied.failed;
                for b in &ro {
                    failed.push(format!(
                        "This block was not applied: {} is shown read only (the Brief does not let the agent change it); change only the files shown without \"(read only)\":\n```\n{}\n```",
                        b.path, b.written
                    ));
                }
                self.seen.blocks_applied += applied.done.len();
                self.seen.blocks_failed += failed.len();
                if blocks.is_empty() && ro.is_empty() {
                    for (path, content) in super::edit_blocks::whole_files(
                        &self.bench,
                        &answer.text,
                        self.inv.files.editable(),
                    ) {
                        match self.bench.run(
                            tools::WRITE,
                            &serde_json::json!({"path": path, "content": content}),
                        )? {
                            Done::Text(_) => self.seen.whole_files += 1,
                            Done::Error(e) => failed
                                .push(format!("The new version of {path} was not written: {e}")),
                        }
                    }
                }
            }
            let read =
                crate::driver::agent::reply::result_json(None, Some(&answer.text), self.shown());
            let mut written_as = Vec::new();
            let mut wrong = Vec::new();
            // A subagent's own fenced verdict is read by the rules that keep
            // a planted one out; a finish it wrote as text does not outrank
            // it.
            let own_answer = self.inv.subagent.is_some() && read.is_ok();
            if answer.calls.is_empty() && failed.is_empty() && !own_answer {
                let found =
                    text_calls::read(&answer.text, &self.offered, self.requests, self.shown());
                for (call, form) in found.calls {
                    *self.seen.text.entry(form.as_str()).or_default() += 1;
                    written_as.push(form.as_str());
                    answer.calls.push(call);
                }
                self.seen.wrong_calls += found.problems.len();
                wrong = found.problems;
            }
            // Arguments above the cap are neither run nor kept: the
            // transcript sends every call back with each request.
            for call in &mut answer.calls {
                tools::cap_arguments(call);
            }
            self.memory.steps = self.requests;
            let reply = answer.message();
            self.log_answer(&reply, self.requests)?;
            self.memory.transcript.push(Turn::plain(reply));
            self.memory.depends.clear();
            if answer.calls.is_empty() {
                let unread = unread_block(&read);
                if failed.is_empty()
                    && let Ok((v, source)) = read
                {
                    if !self.answers_too_early(main_execute, nudges) {
                        break End::Answer(v, source);
                    }
                    nudges += 1;
                    self.tell(unchanged_nudge(self.setup.tools))?;
                    continue;
                }
                // Prose after the edit is the end of EXECUTE; prose before
                // any ("let me look at the code first") is nudged on.
                if main_execute && failed.is_empty() && worktree_changed(self.inv.cwd) {
                    break End::Prose;
                }
                if nudges == self.nudges() {
                    let why = if !failed.is_empty() {
                        format!("the model's {}", sign::BLOCKS_FAILED)
                    } else if answer.cut_off() {
                        format!(
                            "the model's answer was {} ({} tokens) and never finished",
                            sign::CUT_OFF,
                            self.max_output.get()
                        )
                    } else if !wrong.is_empty() {
                        format!(
                            "the model's tool calls {} ({})",
                            sign::NOT_VALIDATED,
                            wrong[0]
                        )
                    } else if let Some(why) = &unread {
                        format!("the model's answer could not be read ({why})")
                    } else if self.setup.tools == ToolsMode::None && main_execute {
                        "the model answered in prose with no search/replace block and no JSON answer".to_string()
                    } else if self.setup.tools == ToolsMode::None {
                        "the model answered in prose and never gave the step's JSON answer in a fenced ```ooda block".to_string()
                    } else {
                        "the model answered in prose and never called finish with the step's JSON answer".to_string()
                    };
                    break End::Stopped(CallOutcome::NoResult, why);
                }
                nudges += 1;
                self.tell(nudge(
                    self.setup.tools,
                    main_execute && self.setup.tools != ToolsMode::Native,
                    &answer,
                    &failed,
                    &wrong,
                    unread.as_deref(),
                    self.max_output.get(),
                ))?;
                continue;
            }
            // One decision per model call: its block covers all its actions.
            let d = super::decision::attribute(&answer.text, answer.calls.first());
            self.span.emit(Event::DecisionAttribution {
                tool_call_id: answer.calls.first().map(|c| c.id.clone()),
                goal: self.scrub(&d.goal),
                options: d.options.iter().map(|o| self.scrub(o)).collect(),
                choice: self.scrub(&d.choice),
                why: self.scrub(&d.why),
                expected: self.scrub(&d.expected),
                source: d.source,
            })?;
            let mut finished = None;
            for (i, call) in answer.calls.iter().enumerate() {
                self.span.emit(Event::ToolCall {
                    tool_call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: crate::text::clip::clip(
                        &self.scrub(&call.arguments.to_string()),
                        2_000,
                    ),
                    written_as: written_as.get(i).map(|f| f.to_string()),
                })?;
                let turn = if finished.is_some() {
                    // Nothing after finish is read, or run.
                    Turn::plain(Message::tool(
                        &call.id,
                        "not run: finish ended the step",
                        false,
                    ))
                } else if call.name == tools::FINISH {
                    match call.arguments.get("answer") {
                        Some(v @ Value::Object(_)) => {
                            finished = Some(v.clone());
                            Turn::plain(Message::tool(&call.id, "received", false))
                        }
                        _ => Turn::plain(Message::tool(
                            &call.id,
                            "finish needs `answer`: the step's JSON object, with the fields the task shows (e.g. {\"answer\": {…}}); call it again",
                            true,
                        )),
                    }
                } else {
                    self.bench.command_timeout = self
                        .setup
                        .command_timeout
                        .min(self.deadline.saturating_duration_since(Instant::now()))
                        .max(Duration::from_secs(1));
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
                        .then(|| crate::text::clip::clip(&self.scrub(&turn.msg.text), 300)),
                })?;
                self.log(&turn.msg)?;
                self.memory.transcript.push(turn);
            }
            if let Some(v) = finished {
                if self.answers_too_early(main_execute, nudges) {
                    nudges += 1;
                    self.tell(unchanged_nudge(self.setup.tools))?;
                    continue;
                }
                let source = if written_as.is_empty() {
                    Source::FinishTool
                } else {
                    Source::TextCall
                };
                break End::Answer(v, source);
            }
        };
        self.reply(end)
    }

    /// The next prompt: the window fitted, compacted when near the window.
    fn prompt(&mut self) -> Result<std::result::Result<super::context::Prompt, String>> {
        let l = &self.setup.layers;
        let folded = self
            .memory
            .fit_window(&self.system, &mut self.store, l, &self.window)?;
        self.folded(folded)?;
        let compacted = self
            .memory
            .compact(&self.system, &mut self.store, l, &self.window)?;
        self.folded(compacted)?;
        self.announce()?;
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

    /// A fold, as a `compaction` event, and the refs it stored.
    fn folded(&mut self, fold: Option<(u64, u64, usize)>) -> Result<()> {
        if let Some((before, after, removed)) = fold {
            self.span.emit(Event::Compaction {
                before_tokens: before,
                after_tokens: after,
                messages_removed: removed,
            })?;
        }
        self.announce()
    }

    /// `artifact_stored` for every ref not announced yet (folds store
    /// results too).
    fn announce(&mut self) -> Result<()> {
        for r in &self.store.refs[self.announced..] {
            self.span.emit(Event::ArtifactStored {
                reference: format!("{}/{}", self.stem, r.id),
                path: relative(self.inv.iterations_dir, &r.path),
                bytes: std::fs::metadata(&r.path).map(|m| m.len()).unwrap_or(0),
            })?;
        }
        self.announced = self.store.refs.len();
        Ok(())
    }

    /// One request with its events. `main`: a request of the step itself,
    /// whose lowered `max_output` (after a timeout) the step keeps; L2's
    /// condensation has a limit of its own.
    fn ask(
        &self,
        client: &Client,
        req: &Request,
        deadline: Instant,
        main: bool,
    ) -> Result<std::result::Result<Completion, ApiError>> {
        let request = self.requests;
        let span = self.span;
        let out = client.complete(req, request, self.cancel, deadline, |e, wait| {
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
                if main && a.max_output < self.max_output.get() {
                    self.max_output.set(a.max_output);
                }
                let t = a.completion.tokens;
                span.emit(Event::ModelResponse {
                    request,
                    model: a.completion.model.clone(),
                    tokens_in: t.input,
                    tokens_out: t.output,
                    cached: t.cached,
                    reasoning: t.reasoning,
                    cache_write: t.cache_write,
                    latency_seconds: a.latency.as_secs_f64(),
                    cost_usd: priced(tier).then(|| tier.cost(t.input, t.output)),
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
                    cache_write: 0,
                    latency_seconds: 0.0,
                    cost_usd: None,
                    finish_reason: String::new(),
                    tries: e.tries,
                    error: Some(self.scrub(&e.describe())),
                })?;
                Ok(Err(e))
            }
        }
    }

    /// Runs one tool call and returns its transcript turn (L1 and L2 applied).
    fn tool(&mut self, call: &ToolCall) -> Result<Turn> {
        let args = &call.arguments;
        let text = match call.name.as_str() {
            tools::FETCH => return Ok(self.fetch(call)),
            tools::INSIGHT => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                self.memory
                    .add_insight(&self.scrub(text), &self.setup.layers);
                return Ok(Turn::plain(Message::tool(
                    &call.id,
                    "kept in working memory",
                    false,
                )));
            }
            _ => match self.bench.run(&call.name, args)? {
                Done::Text(t) => self.scrub(&super::context::clean(&t)),
                Done::Error(e) => {
                    return Ok(Turn::plain(Message::tool(&call.id, self.scrub(&e), true)));
                }
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
            super::context::plain_summary(&call.name, &text, &shown, l)
        };
        if let Some(summary) = summary {
            self.store.set_summary(&r.id, summary);
        }
        self.announce()?;
        let r = self.store.get(&r.id).cloned().unwrap_or(r);
        Ok(self.memory.stored(&call.id, &r))
    }

    /// `fetch_stored`: a page of a stored result, exactly.
    fn fetch(&self, call: &ToolCall) -> Turn {
        let args = &call.arguments;
        let id = args.get("ref").and_then(Value::as_str).unwrap_or_default();
        let Some(contents) = self.store.contents(id) else {
            let known: Vec<&str> = self.store.refs.iter().map(|r| r.id.as_str()).collect();
            return Turn::plain(Message::tool(
                &call.id,
                format!(
                    "there is no stored ref `{id}`; the data index lists them: {}",
                    known.join(", ")
                ),
                true,
            ));
        };
        let offset = usize::try_from(args.get("offset").and_then(Value::as_u64).unwrap_or(0))
            .unwrap_or(usize::MAX);
        let length = args
            .get("length")
            .and_then(Value::as_u64)
            .unwrap_or(8_000)
            .clamp(1, 8_000) as usize;
        let total = contents.chars().count();
        if offset >= total && total > 0 {
            return Turn::plain(Message::tool(
                &call.id,
                format!(
                    "`offset` {offset} is past the end of {id} ({total} chars); start below {total}"
                ),
                true,
            ));
        }
        let slice: String = contents.chars().skip(offset).take(length).collect();
        let end = offset.saturating_add(slice.chars().count());
        let more = if end < total {
            format!("\n[chars {offset}-{end} of {total}; fetch again with offset {end} for more]")
        } else {
            String::new()
        };
        let mut t = Turn::plain(Message::tool(&call.id, format!("{slice}{more}"), false));
        // The whole ref, fetched: the stub elsewhere becomes a pointer. A
        // page is not the ref in another form; its summary stays.
        if offset == 0 && more.is_empty() {
            t.fetched = Some(id.to_string());
        }
        t
    }

    /// L2: the `light` tier's condensation of a large result, or the
    /// structured truncation when there is none or it fails (within 60 s
    /// in all, retries included).
    fn condense(&mut self, tool: &str, text: &str) -> Result<String> {
        let l = &self.setup.layers;
        let fallback = || super::context::fallback(text, l);
        let Some(light) = &self.setup.light else {
            return Ok(fallback());
        };
        if self.requests >= self.setup.max_requests {
            return Ok(fallback());
        }
        let client = Client::new(light)?;
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
            provider: light.provider.as_str().to_string(),
            model: light.model.clone(),
            messages: 1,
            prompt_chars: input.chars().count(),
            prompt_tokens_estimate: (input.chars().count() as u64).div_ceil(4),
        })?;
        let deadline = self.deadline.min(Instant::now() + CONDENSE_TIMEOUT);
        let out = self.ask(&client, &req, deadline, false)?;
        Ok(match out {
            Ok(c) if !c.text.trim().is_empty() => {
                self.count(&c, light);
                self.scrub(&crate::text::clip::clip(c.text.trim(), l.condense_max))
            }
            _ => fallback(),
        })
    }

    fn count(&mut self, c: &Completion, tier: &ModelTier) {
        let t = c.tokens;
        self.usage.add(&Usage {
            input: t.input,
            cached: t.cached,
            output: t.output,
            cache_write: t.cache_write,
            reasoning: t.reasoning,
            cost_usd: priced(tier).then(|| tier.cost(t.input, t.output)),
        });
    }

    /// Appends one message to the step's transcript file, redacted as
    /// JSON (values inside escaped strings too) and scrubbed.
    fn log(&mut self, m: &Message) -> Result<()> {
        self.write_line(serde_json::to_value(m).unwrap_or_default())
    }

    /// The model's answer, with the number of the request it answered, so
    /// a trace can show each request what it was sent and what came back.
    fn log_answer(&mut self, m: &Message, request: u32) -> Result<()> {
        let mut v = serde_json::to_value(m).unwrap_or_default();
        v["request"] = request.into();
        self.write_line(v)
    }

    fn write_line(&mut self, mut v: serde_json::Value) -> Result<()> {
        use std::io::Write;
        crate::text::redact::redact_json(&mut v);
        let line = self.scrub(&v.to_string());
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

    fn reply(self, end: End) -> Result<Reply> {
        let seconds = self.started.elapsed().as_secs_f64();
        let (outcome, problem, result) = match end {
            End::Answer(v, source) => {
                let mut clean = v.clone();
                crate::text::redact::redact_json(&mut clean);
                crate::atomic::write_atomic(
                    &self
                        .inv
                        .files_dir
                        .join(format!("{}.result.json", self.stem)),
                    self.scrub(&clean.to_string()).as_bytes(),
                )?;
                (CallOutcome::Ok, None, Ok((v, source)))
            }
            End::Prose => (
                CallOutcome::Ok,
                None,
                Err("the model ended EXECUTE in prose, without the optional JSON answer".into()),
            ),
            End::Stopped(o, p) => {
                let p = self.scrub(&p);
                (o, Some(crate::text::redact::redact(&p)), Err(p))
            }
        };
        let warnings = self
            .seen
            .warnings(self.setup.tools, self.inv.phase, self.max_output.get());
        let call = AgentCall {
            phase: self.inv.phase,
            attempt: self.inv.attempt,
            outcome,
            exit_code: None,
            seconds: (seconds * 10.0).round() / 10.0,
            usage: self.usage,
            model: self.model.or_else(|| Some(self.setup.tier.model.clone())),
            problem,
            warnings,
            waited: 0.0,
            output: Some(relative(self.inv.iterations_dir, &self.transcript)),
            files: Vec::new(),
        };
        Ok(Reply {
            call,
            result,
            tool_error: None,
        })
    }
}

/// `openai qwen15 at http://127.0.0.1:8080/v1`: the key of the preflight's
/// record too.
pub(crate) fn endpoint(tier: &ModelTier) -> String {
    format!(
        "{} {} at {}",
        tier.provider.as_str(),
        tier.model,
        tier.base_url()
    )
}

/// Where `ooda check --preflight` records how each model calls tools:
/// `.ooda/preflight/tools.json` of the project holding `brief_path`.
pub(crate) fn tools_record(root: &std::path::Path) -> std::path::PathBuf {
    root.join(".ooda").join("preflight").join("tools.json")
}

/// What the preflight found for this tier, when it ran in this project.
fn recorded_tools(brief_path: &std::path::Path, tier: &ModelTier) -> Option<ToolsMode> {
    let root = brief_path
        .ancestors()
        .skip(1)
        .find(|d| d.join("ooda.yaml").is_file())?;
    let text = crate::atomic::read_string(tools_record(root)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    serde_json::from_value(v.get(endpoint(tier))?.clone()).ok()
}

/// Whether the tier has prices (else no cost is claimed).
fn priced(tier: &ModelTier) -> bool {
    tier.price_in.is_some() || tier.price_out.is_some()
}

/// A refusal because the prompt is longer than the model takes.
fn too_long(e: &ApiError) -> bool {
    let said = format!("{} {}", e.kind, e.message).to_lowercase();
    matches!(e.status, Some(400 | 413 | 422))
        && [
            "context_length",
            "context length",
            "too long",
            "maximum context",
            "too many tokens",
        ]
        .iter()
        .any(|w| said.contains(w))
}

/// `text` redacted, with every secret value replaced.
fn scrub(secrets: &[String], text: &str) -> String {
    let mut t = crate::text::redact::redact(text);
    for s in secrets {
        if t.contains(s.as_str()) {
            t = t.replace(s.as_str(), "[REDACTED]");
        }
    }
    t
}

/// Whether the worktree at `dir` holds any change against its HEAD (an
/// edit, a new file): EXECUTE starts from a clean one.
fn worktree_changed(dir: &std::path::Path) -> bool {
    let Ok(repo) = git2::Repository::open(dir) else {
        return false;
    };
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).include_ignored(false);
    repo.statuses(Some(&mut opts)).is_ok_and(|s| !s.is_empty())
}

/// What the model is told after an answer that ended nothing: the
/// blocks that did not apply, the calls that did not validate, that it
/// was cut off, or how to end the step.
pub(crate) fn nudge(
    mode: ToolsMode,
    edits_as_text: bool,
    answer: &Completion,
    failed: &[String],
    wrong: &[String],
    unread: Option<&str>,
    max_output: u64,
) -> String {
    let mut parts = Vec::new();
    if let Some(why) = unread {
        parts.push(format!("Your answer could not be read: {why}."));
    }
    if !failed.is_empty() {
        parts.push(format!(
            "{} of your search/replace blocks were not applied (the others were, and stay):\n\n{}\n\nWrite corrected blocks for these only, with SEARCH copied exactly from the file's current lines.",
            failed.len(),
            failed.join("\n\n")
        ));
    }
    for w in wrong {
        parts.push(format!("Your tool call was not run: {w}."));
    }
    if answer.cut_off() {
        let what = match (mode, edits_as_text) {
            (_, true) => "fewer, smaller search/replace blocks, no explanation",
            (ToolsMode::None, false) => "only the fenced ```ooda JSON answer",
            _ => "one tool call, or the finish call with the JSON answer, without explanation",
        };
        parts.push(format!(
            "Your answer was cut off at {} tokens, the limit for one answer: answer shorter ({what}).",
            if answer.tokens.output > 0 {
                answer.tokens.output
            } else {
                max_output
            }
        ));
    }
    if parts.is_empty() {
        parts.push(match (mode, edits_as_text) {
            (ToolsMode::Native, _) => "Call the finish tool with the step's JSON answer as `answer` (or use the other tools first if the work is not done).".to_string(),
            (ToolsMode::Text, _) => format!(
                "Write a tool call as <tool_call>{{\"name\": \"<tool>\", \"arguments\": {{…}}}}</tool_call> (or use the other tools first if the work is not done); end the step with {}.",
                FINISH_AS_TEXT
            ),
            (ToolsMode::None, true) => format!("Write the change as search/replace blocks: {}. Then end with the step's JSON answer in a fenced ```ooda block.", super::edit_blocks::SHAPE),
            (ToolsMode::None, false) => "Answer with the step's JSON answer in a fenced ```ooda block, exactly the fields the task shows.".to_string(),
        });
    }
    parts.join("\n\n")
}

/// Why a fenced answer the model clearly gave could not be read (a block
/// that is not JSON); `None` when there was no such block.
pub(crate) fn unread_block(read: &std::result::Result<(Value, Source), String>) -> Option<String> {
    match read {
        Err(e) if e.contains("```ooda block is not") => Some(e.clone()),
        _ => None,
    }
}

/// What an EXECUTE that answered before changing anything is told.
fn unchanged_nudge(mode: ToolsMode) -> String {
    let how = match mode {
        ToolsMode::Native => {
            "with edit_file (read_file the exact lines first) or write_file".to_string()
        }
        ToolsMode::Text => format!(
            "as search/replace blocks ({}) or with <tool_call>{{\"name\": \"edit_file\", \"arguments\": {{\"path\": …, \"old\": …, \"new\": …}}}}</tool_call>",
            super::edit_blocks::SHAPE
        ),
        ToolsMode::None => format!("as search/replace blocks: {}", super::edit_blocks::SHAPE),
    };
    format!(
        "No file has been changed yet: your answer describes a change, and only a change made to the files is measured. Make the change now, {how}; then end the step."
    )
}

/// How a model without native tools ends a step.
const FINISH_AS_TEXT: &str = "<tool_call>{\"name\": \"finish\", \"arguments\": {\"answer\": {…the step's JSON…}}}</tool_call>";

/// The files an EXECUTE step without tools edits, as they are now: the
/// model cannot read them. The plan's files, else the worktree's list.
fn files_shown(bench: &Bench, inv: &Invocation) -> String {
    const MAX: usize = 48_000;
    let mut out = String::from("\n\n## The files, as they are now\n");
    let mut used = 0;
    let editable = inv.files.editable();
    let named: Vec<&String> = editable.iter().chain(&inv.files.read).collect();
    for f in &named {
        let Ok(text) = bench.file_text(f) else {
            continue;
        };
        if used + text.len() > MAX {
            out.push_str(&format!(
                "\n{f}: not shown ({} bytes; over what the prompt holds)\n",
                text.len()
            ));
            continue;
        }
        used += text.len();
        let ro = if editable.contains(f) {
            ""
        } else {
            " (read only)"
        };
        out.push_str(&format!(
            "\n{f}{ro}\n```\n{text}{}```\n",
            if text.ends_with('\n') { "" } else { "\n" }
        ));
    }
    if !named.is_empty() {
        // Small models weigh the end of the prompt most: it says what to
        // write now.
        out.push_str(&format!(
            "\nNow make the change to these files: write search/replace blocks ({}), or the whole new file in a fenced block after its path. Then the ```ooda answer.\n",
            super::edit_blocks::SHAPE
        ));
    }
    if named.is_empty() {
        let listed = bench
            .run(tools::LIST, &serde_json::json!({"dir": "."}))
            .ok()
            .and_then(|d| match d {
                Done::Text(t) => Some(t),
                Done::Error(_) => None,
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "\nThe plan names no file of the worktree. Its files:\n{}\n",
            crate::text::clip::clip(&listed, 4_000)
        ));
    }
    out
}

/// The instructions every request starts with.
fn system_prompt(
    inv: &Invocation,
    edits: bool,
    allowed: &[String],
    mode: ToolsMode,
    offered: &[ToolSpec],
) -> String {
    let who = match inv.subagent {
        Some((name, role)) => format!("the `{name}` subagent ({} role)", role.as_str()),
        None => format!(
            "the main agent, in the {} phase",
            inv.phase.as_str().to_uppercase()
        ),
    };
    match mode {
        ToolsMode::Native => instructions(&who, edits, allowed),
        ToolsMode::Text => {
            let mut t = text_instructions(&who, edits, allowed, offered);
            if edits && inv.subagent.is_none() {
                t.push_str(&format!(
                    "\n\nTo change a file you may also skip edit_file: {}",
                    super::edit_blocks::HOW
                ));
            }
            t
        }
        ToolsMode::None => {
            let work = if edits && inv.subagent.is_none() {
                format!("You cannot call tools. {}", super::edit_blocks::HOW)
            } else {
                "You cannot call tools or read files: answer from what the task shows.".to_string()
            };
            format!(
                "You are {who} of ooda, an unattended optimization loop. {work}\n\nEnd with the JSON answer the task asks for in a fenced ```ooda block."
            )
        }
    }
}

/// The system prompt of `tools: text`: each tool with its arguments'
/// schema, and how a call is written.
fn text_instructions(who: &str, edits: bool, allowed: &[String], offered: &[ToolSpec]) -> String {
    let native = instructions(who, edits, allowed);
    let mut tools = String::new();
    for t in offered {
        tools.push_str(&format!(
            "- {}: {}\n  arguments: {}\n",
            t.name, t.description, t.schema
        ));
    }
    format!(
        "{native}\n\nThe tools are not given to you by the API: call one by writing, on its own,\n<tool_call>{{\"name\": \"<tool>\", \"arguments\": {{…}}}}</tool_call>\nooda runs it and answers with its result. One call per answer; wait for the result. The tools:\n{tools}\nEnd the step with {FINISH_AS_TEXT}."
    )
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
