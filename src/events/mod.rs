//! The typed, append-only trajectory of a Brief (`events.jsonl`).
//!
//! Each line is one JSON object with a `type` tag (snake_case), a timestamp,
//! the run id, the iteration, its own id and its parent's id. Parent ids make
//! the log a tree (run → iteration → phase → command) so traces and metrics can
//! be built later from the file alone. The schema is a closed enum: adding a
//! field is cheap, but nothing writes free-form lines.
//!
//! Events are emitted through a [`Span`] (`span.rs`): a cloneable handle on
//! one node of that tree, safe to share between threads, so work running at
//! the same time (subagents beside EVALUATE) logs under its own parent
//! without anyone passing ids around. A span hands every record to its
//! [`Sink`]s (`sink.rs`): the file, and the progress display (`progress.rs`)
//! that turns the same events into the lines a human watches.

pub(crate) mod log;
mod progress;
pub(crate) mod segments;
mod sink;
mod span;

pub(crate) use progress::{Print, Progress, Shown};
pub(crate) use sink::{EventFile, Sink};
pub(crate) use span::Span;

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::CommandOutcome;
use crate::model::{
    AnomalyKind, CallOutcome, Phase, ReviewVerdict, Role, SubagentOutcome, TaskState, Verdict,
};

/// The headline a run stopped with, as [`Event::RunFinished`] carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    RunStarted {
        brief: String,
        start_commit: String,
        seed: u64,
    },
    IterationStarted {
        brief_hash: String,
    },
    IterationResumed {
        after_phase: Phase,
    },
    PhaseStarted {
        phase: Phase,
    },
    PhaseFinished {
        phase: Phase,
        seconds: f64,
    },
    Checkpoint {
        phase: Phase,
    },
    BriefChanged {
        old_hash: String,
        new_hash: String,
    },
    Plan {
        hypothesis: String,
        /// What the plan says it will change (empty in older logs).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        change: String,
        predicted_effect: f64,
        predicted_sd: f64,
        cites: Vec<u32>,
    },
    PlanRejected {
        rule: String,
        message: String,
    },
    /// A command agent started one step.
    ModelCall {
        phase: Phase,
        profile: String,
        attempt: u32,
        /// How many tries the step has at most.
        #[serde(default = "one")]
        attempts: u32,
        command: String,
        prompt_chars: usize,
        /// The model ooda asked the agent for (a subagent's resolved model,
        /// handed over as `OODA_MODEL`), when it chose one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// The agent's API was unavailable: the call is tried again after
    /// `wait_seconds` (`waited_seconds` already spent waiting in this step).
    AgentUnavailable {
        phase: Phase,
        attempt: u32,
        reason: String,
        wait_seconds: f64,
        waited_seconds: f64,
    },
    /// How that step ended, with the usage its output reported.
    ModelResult {
        phase: Phase,
        attempt: u32,
        outcome: CallOutcome,
        exit_code: Option<i32>,
        seconds: f64,
        tokens_in: u64,
        tokens_out: u64,
        cached: u64,
        /// Prompt tokens written to the cache, and output tokens spent
        /// reasoning, when the tool reports them (in the totals too).
        #[serde(default, skip_serializing_if = "crate::model::is_zero")]
        cache_write: u64,
        #[serde(default, skip_serializing_if = "crate::model::is_zero")]
        reasoning: u64,
        cost_usd: Option<f64>,
        /// The model the tool says answered.
        model: Option<String>,
        problem: Option<String>,
        /// The call's files (prompt, result, output, transcript), relative
        /// to the iterations folder.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
    },
    /// A subagent was dispatched: its span (whose id is `delegation`) holds
    /// whatever it runs, under the phase that triggered it.
    SubagentStarted {
        name: String,
        role: Role,
        driver: String,
        delegation: String,
        /// What its context holds, by name (`diff`, `rules`, …).
        sees: Vec<String>,
    },
    /// How it ended; a reviewer's verdict after its `on_error`.
    SubagentFinished {
        name: String,
        role: Role,
        delegation: String,
        outcome: SubagentOutcome,
        seconds: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict: Option<ReviewVerdict>,
        #[serde(default)]
        findings: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        problem: Option<String>,
    },
    CommandStarted {
        role: String,
        worktree: String,
        command: String,
    },
    CommandFinished {
        role: String,
        outcome: CommandOutcome,
        exit_code: Option<i32>,
        seconds: f64,
        truncated_bytes: u64,
    },
    Measurement {
        pair: u32,
        side: String,
        value: f64,
    },
    /// Both runs of one pair, and the running estimate after it.
    PairMeasured {
        pair: u32,
        max_pairs: u32,
        base: f64,
        cand: f64,
        /// The pair's log ratio, positive when the candidate is better.
        d: f64,
        /// The mean gain so far, in the Brief's direction.
        running_effect: f64,
        /// Half the 95% interval of the mean log ratio, from two pairs on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        half_width: Option<f64>,
        /// The running 95% interval of the gain (from this series' own
        /// spread, normal approximation), from two pairs on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        running_ci: Option<(f64, f64)>,
    },
    /// Another Brief holds the host-wide measurement lock: this one waits
    /// before its timed runs.
    MeasureLockWaiting {
        path: String,
        /// The holder as it wrote itself into the lock: `brief NAME in
        /// DIR (pid N) since TIME`.
        holder: String,
        /// How long this Brief has waited so far.
        #[serde(default)]
        waited_seconds: f64,
    },
    /// The lock was taken after a wait.
    MeasureLockAcquired {
        waited_seconds: f64,
    },
    /// A series of pairs goes on from the pairs measured before it was cut
    /// short (its Slurm job lost, ooda killed): they count as measured.
    PairsResumed {
        pairs: u32,
    },
    /// A measurement's Slurm job was lost to the cluster, or the
    /// controller stopped answering: nothing of it is a verdict on the
    /// change. `kind` is `cluster` (a fault of the cluster: node failure,
    /// preemption, time limit, a cancel by someone else), `unknown` (the
    /// controller did not answer within `slurm.controller_wait`), or
    /// `command` (a cancel while the candidate's own command ran, which it
    /// may have caused: counted towards the crash after three).
    ClusterFault {
        kind: String,
        job: String,
        state: String,
        message: String,
    },
    /// The confirmation test (start of run against the current best) begins.
    ConfirmationStarted {
        start: String,
        best: String,
    },
    /// Its result: the unbiased cumulative gain.
    Confirmed {
        effect: f64,
        ci: (f64, f64),
        p: f64,
        pairs: u32,
        why: String,
    },
    Decision {
        verdict: Verdict,
        reason: String,
    },
    Verdict {
        verdict: Verdict,
    },
    /// The llm driver sent one request to its model (under the agent
    /// call's `model_call`, whose span it is in).
    ModelRequest {
        request: u32,
        /// `openai` or `anthropic` (the wire format; empty in older logs).
        #[serde(default)]
        provider: String,
        model: String,
        messages: usize,
        prompt_chars: usize,
        /// Characters / 4: what the layers decide on before the API counts.
        prompt_tokens_estimate: u64,
    },
    /// The API was unavailable for one try; the request is sent again after
    /// `wait_seconds`.
    ModelRetry {
        request: u32,
        status: Option<u16>,
        kind: String,
        wait_seconds: f64,
    },
    /// One request's answer (or its final failure, in `error`).
    ModelResponse {
        request: u32,
        model: String,
        tokens_in: u64,
        tokens_out: u64,
        cached: u64,
        reasoning: u64,
        /// Prompt tokens written to the provider's cache (in `tokens_in`).
        #[serde(default, skip_serializing_if = "crate::model::is_zero")]
        cache_write: u64,
        latency_seconds: f64,
        cost_usd: Option<f64>,
        finish_reason: String,
        tries: u32,
        error: Option<String>,
    },
    /// The model called a tool; `tool_result` with the same id answers it.
    ToolCall {
        tool_call_id: String,
        tool: String,
        arguments: String,
        /// How the model wrote a call the API did not return as one
        /// (`tool_call tags`, `fenced JSON`, `bare JSON`, `function call`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        written_as: Option<String>,
    },
    ToolResult {
        tool_call_id: String,
        tool: String,
        ok: bool,
        chars: usize,
        /// The ref it was stored under (L1), when it was.
        stored: Option<String>,
        error: Option<String>,
    },
    /// Old turns were folded into the handover (L3).
    Compaction {
        before_tokens: u64,
        after_tokens: u64,
        messages_removed: usize,
    },
    /// Why the model took an action (its decision block, or a fallback).
    DecisionAttribution {
        tool_call_id: Option<String>,
        goal: String,
        options: Vec<String>,
        choice: String,
        why: String,
        expected: String,
        source: String,
    },
    /// The task this is logged under (an iteration, or a subagent's
    /// delegation) moved to `state`; `detail` says why or where.
    TaskState {
        state: TaskState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A judge subagent's verdict on the run (`role: judge`, at its end).
    Judged {
        judgement: crate::model::Judgement,
    },
    /// A replay (`ooda replay`) of the iteration ended: `full` when it
    /// also made and measured the change; `problem` when it could not.
    ReplayFinished {
        full: bool,
        problem: Option<String>,
    },
    ArtifactStored {
        #[serde(rename = "ref")]
        reference: String,
        path: String,
        bytes: u64,
    },
    Anomaly {
        kind: AnomalyKind,
        message: String,
    },
    /// A stop the configuration decided (a stall, a red light's threshold)
    /// was lifted because the configuration was raised: the run goes on.
    StopLifted {
        reason: crate::model::StopReason,
        detail: String,
    },
    /// Files outside the candidate worktree changed during an agent step
    /// where the agent could not write (`run/fence/reach.rs`): the
    /// environment's, recorded and not blamed.
    EnvironmentChange {
        paths: Vec<String>,
        reason: String,
    },
    /// A rule of `report/anomalies.rs` fired on the trace; `node` is the event
    /// id of the trace node it points to, when there is one; `fingerprint` is what
    /// makes it the same anomaly again (it is logged once).
    AnomalyFound {
        rule: String,
        severity: String,
        evidence: String,
        node: Option<String>,
        /// Named so the log's redaction (which hides values under keys
        /// like `key` or `token`) leaves it readable.
        fingerprint: String,
    },
    RedLight {
        reason: String,
        evidence: String,
    },
    Acknowledged {
        by: String,
        note: Option<String>,
    },
    LearnArchived {
        path: String,
    },
    Interrupted {
        phase: Option<Phase>,
    },
    RunFinished {
        reason: String,
        detail: String,
        /// What the run achieved (report/headline.rs): its kind
        /// (`confirmed`, `not_confirmed`, `chained_estimate`,
        /// `nothing_kept`), the gain and its 95% interval, and its words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<RunResult>,
    },
    /// A scheduler (`run --every/--cron`, `daemon`) starts a tick. `due` is
    /// the fire time; `missed` counts fire times that passed while the
    /// previous tick overran (they are not made up for).
    ScheduledTick {
        schedule: String,
        due: DateTime<Utc>,
        late_seconds: f64,
        missed: u32,
    },
    /// The scheduled tick ended: `outcome` is baseline, iteration, stopped,
    /// finished, red, budget, interrupted or error.
    ScheduledTickFinished {
        outcome: String,
        seconds: f64,
    },
    /// A fire time passed without a tick because another process held the lock.
    ScheduledTickSkipped {
        schedule: String,
        due: DateTime<Utc>,
        reason: String,
    },
}

fn one() -> u32 {
    1
}

impl Event {
    /// How an agent call ended, from its record.
    pub fn model_result(call: &crate::model::AgentCall) -> Event {
        Event::ModelResult {
            phase: call.phase,
            attempt: call.attempt,
            outcome: call.outcome,
            exit_code: call.exit_code,
            seconds: call.seconds,
            tokens_in: call.usage.input,
            tokens_out: call.usage.output,
            cached: call.usage.cached,
            cache_write: call.usage.cache_write,
            reasoning: call.usage.reasoning,
            cost_usd: call.usage.cost_usd,
            model: call.model.clone(),
            problem: call.problem.clone(),
            files: call.files.clone(),
        }
    }
}

/// The live event log, in the Brief's archive.
pub(crate) const FILE: &str = "events.jsonl";

/// One line of `events.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub ts: DateTime<Utc>,
    pub run_id: String,
    pub iteration: Option<u32>,
    pub id: String,
    pub parent_id: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

/// The time of the last event, read from the end of the file only (status
/// must stay fast when the log is large).
pub(crate) fn last_timestamp(dir: &Path) -> Option<DateTime<Utc>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = crate::atomic::open_regular(dir.join(FILE)).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(16 * 1024);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).ok()?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Record>(l).ok())
        .map(|r| r.ts)
}

/// Reads every well-formed record, the sealed segments first
/// (`segments.rs`); a torn last line (a kill mid-write) is skipped.
pub fn read_all(dir: &Path) -> Result<Vec<Record>> {
    Ok(read_counted(dir)?.0)
}

/// The records and how many non-empty lines could not be read (a line
/// cut by a crash, an event type from a newer ooda): readers that show
/// the log to a user say so rather than silently showing less. The
/// whole log: every sealed segment, then the live file.
pub(crate) fn read_counted(dir: &Path) -> Result<(Vec<Record>, usize)> {
    // A tick may seal while this reads: the live file read after the
    // segments would then start past the part just sealed. Read again
    // when the list of segments changed meanwhile.
    for _ in 0..3 {
        let sealed = segments::sealed(dir)?;
        let mut records = Vec::new();
        let mut skipped = 0;
        let mut gone = false;
        for path in &sealed {
            match segments::read(path)? {
                Some(text) => skipped += parse_into(&text, &mut records),
                None => gone = true,
            }
        }
        skipped += parse_into(&live_text(dir)?, &mut records);
        if !gone && segments::sealed(dir)? == sealed {
            return Ok((records, skipped));
        }
    }
    Err(Error::Busy(format!(
        "the event log of {} was being sealed while it was read: run the command again",
        dir.display()
    )))
}

/// The live file only: what the readers that run every tick (the anomaly
/// rules, the summary's metrics, `status --tasks`) read, so a tick costs
/// the same after a month of nights. It starts where the last seal left
/// off; a run older than that is in the sealed segments.
pub(crate) fn read_live(dir: &Path) -> Result<Vec<Record>> {
    // The starts of runs begun before the seal come first, so each run's
    // tree has its real root (`segments.rs`).
    let mut records = segments::sealed_run_starts(dir);
    let skipped = parse_into(&live_text(dir)?, &mut records);
    if skipped > 0 {
        warn_damaged(&dir.join(FILE), skipped);
    }
    Ok(records)
}

/// Says once per process that damaged lines of the live log were skipped:
/// they never stop a tick, but a user should know the log lost them.
fn warn_damaged(path: &Path, skipped: usize) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "warning: {}: {skipped} damaged line(s) (not JSON, or not UTF-8) are skipped; the iteration files hold every decision. To silence this, delete those lines from the file while no tick runs (`ooda trace` lists how many it leaves out)",
            path.display()
        );
    }
}

fn live_text(dir: &Path) -> Result<String> {
    let path = dir.join(FILE);
    // Lossy: a damaged line (a byte that is not UTF-8) costs that line,
    // which the parse then skips, never the whole log.
    match crate::atomic::read_file(&path) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Error::Corrupt {
            path: path.clone(),
            message: format!(
                "the event log could not be read ({e}); move it aside (`mv {} {}.damaged`): the iteration files hold every decision, and the next tick starts a new log",
                path.display(),
                path.display()
            ),
        }),
    }
}

/// Appends the well-formed records of `text`; returns how many non-empty
/// lines were not.
fn parse_into(text: &str, records: &mut Vec<Record>) -> usize {
    let mut skipped = 0;
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(l) {
            Ok(r) => records.push(r),
            Err(_) => skipped += 1,
        }
    }
    skipped
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn events_round_trip_with_type_tag_and_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = Span::open(dir.path(), "run-1", Vec::new()).unwrap();
        let it = root
            .with_iteration(Some(1))
            .child(Event::IterationStarted {
                brief_hash: "h".into(),
            })
            .unwrap();
        it.emit(Event::PhaseStarted { phase: Phase::Plan }).unwrap();
        let text = crate::atomic::read_string(dir.path().join("events.jsonl")).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["type"], "iteration_started");
        assert_eq!(first["iteration"], 1);
        let all = read_all(dir.path()).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].parent_id.as_deref(), it.id());
        assert_eq!(all[1].iteration, Some(1));
        assert_eq!(all[1].event, Event::PhaseStarted { phase: Phase::Plan });
    }

    #[test]
    fn secrets_never_reach_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let root = Span::open(dir.path(), "r", Vec::new()).unwrap();
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
        root.emit(Event::Anomaly {
            kind: AnomalyKind::StateRebuilt,
            message: format!("the agent said {key}"),
        })
        .unwrap();
        let text = crate::atomic::read_string(dir.path().join("events.jsonl")).unwrap();
        assert!(!text.contains(key), "{text}");
        assert_eq!(read_all(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = Span::open(dir.path(), "r", Vec::new()).unwrap();
        root.emit(Event::Verdict {
            verdict: Verdict::Keep,
        })
        .unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("events.jsonl"))
            .unwrap();
        f.write_all(b"{\"ts\":\"2026-").unwrap();
        assert_eq!(read_all(dir.path()).unwrap().len(), 1);
        assert_eq!(read_counted(dir.path()).unwrap().1, 1);
    }
}
