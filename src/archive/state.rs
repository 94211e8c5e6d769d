//! `state.json`: the checkpoint of the phase machine.
//!
//! The state holds only what is needed to resume: where the run started,
//! the current best, which phase of which iteration last completed and that
//! phase's output. Everything else is derived from the archive
//! (`iter-*.md`) and git, which is why a deleted or corrupt state is rebuilt
//! rather than fatal. Writes are atomic (see `atomic.rs`).
//!
//! Each phase's output is a typed value here, and the iteration file is a
//! projection of them (`archive/mod.rs`), so a phase never re-reads what an
//! earlier one wrote as text. The file carries a version: a state written by
//! an earlier release is migrated when it is read (see [`migrate`]), never
//! thrown away while an iteration is in flight.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::error::{Error, Result};
use crate::model::Orientation;
use crate::model::{
    AgentCall, Alarm, Analysis, Confirmation, Cut, EvalOutcome, IterationRecord, LearnResult,
    NonInferiority, Phase, Plan, Review, SimplifyStage, Tamper, Verdict,
};

pub(crate) use crate::model::{Status, Stop};

/// Version 3: a simplification's stage instead of three flags, and typed
/// tamper and analysis records. Version 2: typed cuts (`cut` instead of the
/// `blocked` reason text), and the outputs of ORIENT, REVIEW and LEARN.
pub const STATE_VERSION: u32 = 3;

/// The iteration in progress and the outputs of its completed phases.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct InFlight {
    pub iteration: u32,
    pub started_at: DateTime<Utc>,
    pub event_id: String,
    pub brief_hash: String,
    /// The last phase whose checkpoint was written.
    pub done: Phase,
    /// What an agent changed without the sandbox that it must not touch, in
    /// any step so far: CHECK stops the run `red_tamper` on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tamper: Option<Tamper>,
    #[serde(default)]
    pub base_commit: String,
    /// ORIENT: the statistics PLAN, EVALUATE and the reports use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orientation: Option<Orientation>,
    #[serde(default)]
    pub plan: Option<Plan>,
    /// Why the iteration was cut short, once something cut it (PLAN,
    /// EXECUTE, a budget): EVALUATE then measures nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
    #[serde(default)]
    pub changed_paths: Vec<String>,
    #[serde(default)]
    pub tree: Option<String>,
    #[serde(default)]
    pub eval: Option<EvalOutcome>,
    /// REVIEW's reports on a keep and the simplification in flight (a
    /// block has already turned `eval` into a discard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// LEARN: the lessons and what else the iteration file needs from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<Learned>,
    /// The pipeline-analyzers' reports made beside EVALUATE, archived with
    /// the iteration (CHECK's plateau report takes precedence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Analysis>,
    /// Reports of the subagents other than the reviewers (the analyzer
    /// beside EVALUATE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<crate::model::SubagentReport>,
    /// The kept commit, prepared in LEARN, on the branch after COMMIT.
    #[serde(default)]
    pub commit: Option<String>,
    /// CHECK's decision, saved before it is applied (`Machine::check` in
    /// `phases/check.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckOutcome>,
    /// Every agent call of the iteration so far (PLAN, EXECUTE, LEARN), kept
    /// across checkpoints so the iteration file records each call and its cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_calls: Vec<AgentCall>,
    /// The cluster jobs its phases measured in so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<crate::model::ClusterJob>,
    /// Each time EVALUATE lost its cluster job under a measurement (the
    /// errors, in order): after [`LOST_JOBS_MAX`] the candidate is not
    /// measured again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_jobs: Vec<String>,
}

/// Lost cluster jobs after which a candidate (or its simplified version) is
/// recorded as failed rather than measured again: it can `scancel` its own
/// job, and would otherwise be measured again forever.
pub(crate) const LOST_JOBS_MAX: usize = 3;

impl InFlight {
    /// An iteration that has just started: nothing done but OBSERVE.
    pub(crate) fn new(
        iteration: u32,
        event_id: String,
        brief_hash: &str,
        base_commit: &str,
    ) -> InFlight {
        InFlight {
            iteration,
            started_at: Utc::now(),
            event_id,
            brief_hash: brief_hash.to_string(),
            done: Phase::Observe,
            tamper: None,
            base_commit: base_commit.to_string(),
            orientation: None,
            plan: None,
            cut: None,
            changed_paths: Vec::new(),
            tree: None,
            eval: None,
            review: None,
            learned: None,
            analysis: None,
            subagents: Vec::new(),
            commit: None,
            check: None,
            agent_calls: Vec::new(),
            jobs: Vec::new(),
            lost_jobs: Vec::new(),
        }
    }
}

/// What LEARN adds to an iteration besides the commit it prepares.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Learned {
    #[serde(default)]
    pub lessons: LearnResult,
    pub finished: DateTime<Utc>,
    /// Who played the main agent: `builtin` or `command:<profile>`.
    pub driver: String,
    /// The discarded diff, relative to the iterations folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// A human's acknowledgement that this iteration's file carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<String>,
}

impl Learned {
    /// LEARN's output as its archived record states it (a state written
    /// before LEARN's output was kept in it).
    pub(crate) fn from_record(r: &IterationRecord) -> Learned {
        Learned {
            lessons: LearnResult {
                patterns: r.patterns.clone(),
                falsified: r.falsified.clone(),
                next: r.next.clone(),
                narrative: r.narrative.clone(),
            },
            finished: r.finished,
            driver: r.driver.clone(),
            artifact: r.artifact.clone(),
            acknowledged: r.acknowledged.clone(),
        }
    }
}

/// What CHECK decided for an iteration.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct CheckOutcome {
    #[serde(default)]
    pub alarms: Vec<Alarm>,
    #[serde(default)]
    pub stop: Option<Stop>,
    /// A divergence rollback: (old tip, the commit the base goes back to).
    #[serde(default)]
    pub rollback: Option<(String, String)>,
    #[serde(default)]
    pub confirmation: Option<Confirmation>,
    /// Why a confirmation test due here could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_failed: Option<String>,
    /// The pipeline-analyzer's report, when a plateau called it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Analysis>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct State {
    pub version: u32,
    pub brief: String,
    pub run_id: String,
    pub seed: u64,
    pub created_at: DateTime<Utc>,
    pub start_commit: String,
    pub best_commit: String,
    pub brief_hash: String,
    /// The number the next iteration will get (0 until the baseline is archived).
    pub next_iteration: u32,
    #[serde(default)]
    pub stop: Option<Stop>,
    /// The latest YELLOW warning, shown as the status until an iteration passes without one.
    #[serde(default)]
    pub yellow: Option<Alarm>,
    /// A human's acknowledgement, to be written into the next iteration file.
    #[serde(default)]
    pub pending_ack: Option<String>,
    #[serde(default)]
    pub current: Option<InFlight>,
    /// Why the latest tick's commands ran without Landlock (`sandbox: off`,
    /// or no Landlock with the builtin driver); `summary.md` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfined: Option<String>,
    /// The mark (`OODA_STEP` in their environment) of every command the
    /// latest tick started: the next tick kills what still carries it, in
    /// case that tick and its helpers were killed together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_mark: Option<String>,
    /// Ticks that keep failing (a metric that cannot run, a cluster that
    /// refuses the job): without it a Brief whose every tick fails before
    /// its baseline reads GREEN. Cleared by the next tick that succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<Failing>,
}

/// The latest error of ticks that failed in a row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Failing {
    pub message: String,
    /// How many ticks in a row ended with an error.
    pub ticks: u32,
    pub since: DateTime<Utc>,
    pub last: DateTime<Utc>,
}

impl Failing {
    /// Counts one more failed tick, ending with `message`.
    pub(crate) fn after(
        previous: Option<&Failing>,
        message: String,
        now: DateTime<Utc>,
    ) -> Failing {
        match previous {
            Some(f) => Failing {
                message,
                ticks: f.ticks.saturating_add(1),
                since: f.since,
                last: now,
            },
            None => Failing {
                message,
                ticks: 1,
                since: now,
                last: now,
            },
        }
    }

    /// What status and summary say about it.
    pub(crate) fn describe(&self) -> String {
        let when = if self.ticks == 1 {
            format!(
                "the last tick failed ({})",
                self.last.format("%Y-%m-%d %H:%M UTC")
            )
        } else {
            format!(
                "the last {} ticks failed (since {})",
                self.ticks,
                self.since.format("%Y-%m-%d %H:%M UTC")
            )
        };
        // Lines joined as sentences, not run together: a line that ends
        // without punctuation gets a semicolon.
        let one_line = self
            .message
            .lines()
            .map(|l| crate::text::clip::clip(l, usize::MAX))
            .filter(|l| !l.is_empty())
            .reduce(|mut acc, l| {
                if !acc.ends_with(['.', ':', ';', '!', '?', ',']) {
                    acc.push(';');
                }
                acc.push(' ');
                acc.push_str(&l);
                acc
            })
            .unwrap_or_default();
        format!("{when}: {}", crate::text::clip::clip(&one_line, 360))
    }
}

impl State {
    /// What the run's state says; `ooda status` also shows YELLOW while
    /// ticks keep failing ([`State::failing`], which `summary.md`, written
    /// only by ticks that work, never shows).
    pub(crate) fn status(&self) -> Status {
        match &self.stop {
            None if self.yellow.is_some() => Status::Yellow,
            None => Status::Green,
            Some(s) if s.reason.is_red() => Status::Red,
            Some(s) if s.reason.is_budget() => Status::Stopped,
            Some(_) => Status::Done,
        }
    }

    pub(crate) fn path(dir: &Path) -> PathBuf {
        super::layout::Layout::of(dir).state()
    }

    pub(crate) fn save(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Internal(format!("serializing state: {e}")))?;
        write_atomic(&State::path(dir), text.as_bytes())
    }

    /// Rebuilds the state from the archive alone (after `state.json` was
    /// deleted or found corrupt). An iteration that was in flight and not yet
    /// archived is lost, and its number is reused: numbers never skip.
    pub(crate) fn rebuild(
        brief: &str,
        brief_hash: &str,
        history: &[IterationRecord],
        commit_exists: impl Fn(&str) -> bool,
    ) -> Option<State> {
        let first = history.first()?;
        // Replay the archive: keeps advance the best, a divergence rollback
        // moves it back.
        let mut best = first.base.clone();
        for r in history {
            if r.verdict == Verdict::Keep
                && let Some(c) = r.commit.as_ref().filter(|c| commit_exists(c))
            {
                best = c.clone();
            }
            if let Some(t) = r.rollback_to.as_ref().filter(|t| commit_exists(t)) {
                best = t.clone();
            }
        }
        let stop = history.last().and_then(|r| r.stop.clone());
        Some(State {
            version: STATE_VERSION,
            brief: brief.to_string(),
            run_id: first.run_id.clone(),
            seed: first.seed.unwrap_or(0),
            created_at: first.started,
            start_commit: first.base.clone(),
            best_commit: best,
            brief_hash: brief_hash.to_string(),
            next_iteration: history.len() as u32,
            stop,
            yellow: None,
            pending_ack: None,
            current: None,
            unconfined: None,
            tick_mark: None,
            failing: None,
        })
    }
}

/// What loading found on disk.
pub(crate) enum Loaded {
    Ok(Box<State>),
    Missing,
    /// Unreadable; the damaged file was moved aside to this path.
    Corrupt {
        moved_to: PathBuf,
        message: String,
    },
}

/// Reads the state without repairing anything (for `status`); a state of
/// an earlier version is migrated in memory only.
pub(crate) fn peek(dir: &Path) -> Result<Loaded> {
    let path = State::path(dir);
    match crate::atomic::read_file(&path) {
        Ok(t) => Ok(match parse(&t) {
            Ok(s) => Loaded::Ok(Box::new(s)),
            Err(message) => Loaded::Corrupt {
                moved_to: path,
                message,
            },
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Loaded::Missing),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

pub(crate) fn load(dir: &Path) -> Result<Loaded> {
    let path = State::path(dir);
    let text = match crate::atomic::read_file(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    if let Some(v) = newer_version(&text) {
        return Err(Error::Corrupt {
            path,
            message: format!(
                "state version {v} is newer than {STATE_VERSION}: a newer ooda wrote it; run that one, or delete the file to rebuild it from iterations/"
            ),
        });
    }
    match parse(&text) {
        Ok(s) => Ok(Loaded::Ok(Box::new(s))),
        Err(message) => {
            let moved_to = super::layout::Layout::of(dir)
                .corrupt_state(&Utc::now().format("%Y%m%dT%H%M%S").to_string());
            std::fs::rename(&path, &moved_to).map_err(|err| {
                Error::io(format!("moving the corrupt {} aside", path.display()), err)
            })?;
            Ok(Loaded::Corrupt { moved_to, message })
        }
    }
}

fn version_of(v: &serde_json::Value) -> Option<u64> {
    v.get("version").and_then(serde_json::Value::as_u64)
}

fn newer_version(text: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(text).ok()?;
    version_of(&v).filter(|&n| n > u64::from(STATE_VERSION))
}

/// The state in `text`, migrated to this version.
fn parse(text: &[u8]) -> std::result::Result<State, String> {
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let value = migrate(value)?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Brings a state of an earlier version up to [`STATE_VERSION`], step by
/// step, on its JSON form (the old Rust types no longer exist).
///
/// 1 → 2: the reason an iteration was cut short, kept as text in `blocked`,
/// becomes the typed `cut` (read back by [`Cut::from_reason`], which inverts
/// what version 1 wrote), and the YELLOW warning, kept as `kind: evidence`,
/// becomes an alarm. The outputs version 2 adds (ORIENT's, LEARN's) are
/// absent and filled in from the archive when the Brief is opened.
///
/// 2 → 3: a simplification's `measured`, `reviewed` and `accepted` flags
/// (and its test) become its [`SimplifyStage`]; a tamper's line becomes a
/// [`Tamper`] (its step read back from the words that name it), an
/// analysis's text one builtin report, which reads the same.
pub(crate) fn migrate(
    mut value: serde_json::Value,
) -> std::result::Result<serde_json::Value, String> {
    let version = version_of(&value).ok_or("no `version` number")?;
    if version == 1 {
        if let Some(cur) = value.get_mut("current").and_then(|c| c.as_object_mut())
            && let Some(blocked) = cur.remove("blocked")
            && let Some(reason) = blocked.as_str()
        {
            let cut = serde_json::to_value(Cut::from_reason(reason)).map_err(|e| e.to_string())?;
            cur.insert("cut".into(), cut);
        }
        if let Some(text) = value.get("yellow").and_then(|y| y.as_str()) {
            let (kind, evidence) = text.split_once(": ").unwrap_or(("", text));
            let alarm = Alarm::yellow(crate::model::AlarmKind::parse(kind), evidence.to_string());
            value["yellow"] = serde_json::to_value(alarm).map_err(|e| e.to_string())?;
        }
        value["version"] = serde_json::json!(2);
    }
    if version_of(&value) == Some(2) {
        if let Some(cur) = value.get_mut("current").and_then(|c| c.as_object_mut()) {
            if let Some(text) = cur.get("tamper").and_then(|t| t.as_str()) {
                let tamper =
                    serde_json::to_value(Tamper::from_text(text)).map_err(|e| e.to_string())?;
                cur.insert("tamper".into(), tamper);
            }
            analysis_from_text(cur.get_mut("analysis"))?;
            if let Some(check) = cur.get_mut("check").and_then(|c| c.as_object_mut()) {
                analysis_from_text(check.get_mut("analysis"))?;
            }
            if let Some(s) = cur
                .get_mut("review")
                .and_then(|r| r.get_mut("simplified"))
                .and_then(|s| s.as_object_mut())
            {
                let flag = |k: &str| {
                    s.get(k)
                        .and_then(serde_json::Value::as_bool)
                        .unwrap_or(false)
                };
                let (measured, reviewed, accepted) =
                    (flag("measured"), flag("reviewed"), flag("accepted"));
                let test: Option<NonInferiority> = match s.get("test") {
                    Some(t) if !t.is_null() => {
                        Some(serde_json::from_value(t.clone()).map_err(|e| e.to_string())?)
                    }
                    _ => None,
                };
                let stage = match (measured, reviewed, test) {
                    (false, _, _) => SimplifyStage::Proposed,
                    (true, true, Some(t)) if accepted => SimplifyStage::Accepted(t),
                    (true, true, test) => SimplifyStage::Rejected(test),
                    (true, false, Some(t)) => SimplifyStage::Measured(t),
                    // Measured with no test and not reviewed: no release
                    // wrote it; nothing of it can be committed.
                    (true, false, None) => SimplifyStage::Rejected(None),
                };
                for k in ["measured", "reviewed", "accepted", "test"] {
                    s.remove(k);
                }
                s.insert(
                    "stage".into(),
                    serde_json::to_value(stage).map_err(|e| e.to_string())?,
                );
            }
        }
        value["version"] = serde_json::json!(3);
    }
    Ok(value)
}

/// An analysis kept as text (version 2) as the one builtin report it reads
/// as.
fn analysis_from_text(v: Option<&mut serde_json::Value>) -> std::result::Result<(), String> {
    if let Some(v) = v
        && let Some(text) = v.as_str()
    {
        *v =
            serde_json::to_value(Analysis::builtin(text.to_string())).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State {
            version: STATE_VERSION,
            brief: "b".into(),
            run_id: "r".into(),
            seed: 7,
            created_at: Utc::now(),
            start_commit: "a".repeat(40),
            best_commit: "a".repeat(40),
            brief_hash: "h".into(),
            next_iteration: 3,
            stop: None,
            yellow: None,
            pending_ack: None,
            current: None,
            unconfined: None,
            tick_mark: None,
            failing: None,
        }
    }

    #[test]
    fn a_failing_ticks_lines_read_as_sentences() {
        let t = chrono::Utc::now();
        let f = Failing::after(
            None,
            "metric command `./b.sh` exited with code 1\nbroken\n\n  ooda measures the committed HEAD: commit it.".into(),
            t,
        );
        assert!(
            f.describe().ends_with(
                "exited with code 1; broken; ooda measures the committed HEAD: commit it."
            ),
            "{}",
            f.describe()
        );
    }

    #[test]
    fn save_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let s = state();
        s.save(dir.path()).unwrap();
        match load(dir.path()).unwrap() {
            Loaded::Ok(back) => assert_eq!(*back, s),
            _ => panic!("expected a state"),
        }
    }

    #[test]
    fn a_version_one_state_is_migrated_not_thrown_away() {
        let dir = tempfile::tempdir().unwrap();
        let mut v = serde_json::to_value(state()).unwrap();
        v["version"] = serde_json::json!(1);
        v["current"] = serde_json::json!({
            "iteration": 3,
            "started_at": "2026-01-01T00:00:00Z",
            "event_id": "e",
            "brief_hash": "h",
            "done": "execute",
            "base_commit": "a",
            "blocked": "plan rejected (cites) after 3 attempts: iteration 9 does not exist",
            "changed_paths": [],
            "tree": null,
            "eval": null,
            "commit": null
        });
        v["yellow"] = serde_json::json!("machine_drift: the base got slower");
        std::fs::write(State::path(dir.path()), v.to_string()).unwrap();
        let Loaded::Ok(s) = load(dir.path()).unwrap() else {
            panic!("expected the migrated state")
        };
        assert_eq!(
            s.yellow,
            Some(Alarm::yellow(
                crate::model::AlarmKind::MachineDrift,
                "the base got slower".into()
            ))
        );
        let cur = s.current.unwrap();
        assert_eq!(s.version, STATE_VERSION);
        assert_eq!(cur.done, Phase::Execute);
        assert_eq!(
            cur.cut,
            Some(Cut::PlanRejected {
                rule: "cites".into(),
                message: "iteration 9 does not exist".into(),
                attempts: Some(3)
            })
        );
        v["version"] = serde_json::json!(STATE_VERSION + 1);
        std::fs::write(State::path(dir.path()), v.to_string()).unwrap();
        let err = load(dir.path()).err().unwrap().to_string();
        assert!(err.contains("newer"), "{err}");
        assert!(
            State::path(dir.path()).exists(),
            "a newer state is left alone"
        );
    }

    /// A version-2 state: the simplification in flight as three flags, a
    /// tamper and an analysis as text.
    fn version_two(simplified: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::to_value(state()).unwrap();
        v["version"] = serde_json::json!(2);
        v["current"] = serde_json::json!({
            "iteration": 3,
            "started_at": "2026-01-01T00:00:00Z",
            "event_id": "e",
            "brief_hash": "h",
            "done": "evaluate",
            "base_commit": "a",
            "tamper": "while reviewing, the agent changed ooda.yaml",
            "analysis": "code-analyzer (command:x): bottleneck: parse\nthe builtin report",
            "check": {"alarms": [], "analysis": "4 iterations without a keep"},
            "review": {"simplified": simplified},
            "changed_paths": [],
            "tree": null,
            "eval": null,
            "commit": null
        });
        v
    }

    fn loaded(v: &serde_json::Value) -> State {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(State::path(dir.path()), v.to_string()).unwrap();
        match load(dir.path()).unwrap() {
            Loaded::Ok(s) => *s,
            _ => panic!("expected the migrated state"),
        }
    }

    #[test]
    fn a_version_two_simplification_becomes_its_stage() {
        let test = serde_json::json!({
            "margin": 0.02, "non_inferior": true, "effect": 0.0, "ci": [-0.01, 0.01],
            "p": 0.01, "pairs": 8, "reason": "non-inferior"
        });
        let flags = |measured: bool, reviewed: bool, accepted: bool, test: &serde_json::Value| {
            serde_json::json!({
                "tree": "t", "measured": measured, "kept_tree": "k", "lines_before": 52,
                "lines_after": 2, "changed_paths": ["src/lib.txt"], "test": test,
                "reviewed": reviewed, "reports": [], "accepted": accepted,
                "reason": "simplified from 52 to 2 changed lines"
            })
        };
        let stage = |s: serde_json::Value| {
            let st = loaded(&version_two(s));
            assert_eq!(st.version, STATE_VERSION);
            st.current.unwrap().review.unwrap().simplified.unwrap()
        };
        let none = serde_json::Value::Null;
        assert_eq!(
            stage(flags(false, false, false, &none)).stage,
            SimplifyStage::Proposed
        );
        let t: NonInferiority = serde_json::from_value(test.clone()).unwrap();
        let measured = stage(flags(true, false, false, &test));
        assert_eq!(measured.stage, SimplifyStage::Measured(t.clone()));
        assert_eq!((measured.lines_before, measured.lines_after), (52, 2));
        assert_eq!(
            stage(flags(true, true, true, &test)).stage,
            SimplifyStage::Accepted(t.clone())
        );
        assert_eq!(
            stage(flags(true, true, false, &test)).stage,
            SimplifyStage::Rejected(Some(t))
        );
        assert_eq!(
            stage(flags(true, true, false, &none)).stage,
            SimplifyStage::Rejected(None)
        );
        // A record with fields left out (hand-edited, or older) still loads:
        // the in-flight iteration is not thrown away for them.
        let sparse = serde_json::json!({"tree": "t", "measured": true, "test": test});
        let kept = stage(sparse);
        assert!(matches!(kept.stage, SimplifyStage::Measured(_)));
        assert_eq!((kept.kept_tree.as_str(), kept.reason.as_str()), ("", ""));
        // Each reads in the iteration file as the flags it was written as.
        let archived = stage(flags(true, false, false, &test)).archived();
        assert!(archived.measured && !archived.reviewed && !archived.accepted);
        assert!(archived.test.is_some());
    }

    #[test]
    fn a_version_two_tamper_and_analysis_read_as_they_did() {
        let st = loaded(&version_two(serde_json::Value::Null));
        let cur = st.current.unwrap();
        let tamper = cur.tamper.unwrap();
        assert_eq!(tamper.phase, Phase::Review);
        assert_eq!(
            tamper.to_string(),
            "while reviewing, the agent changed ooda.yaml"
        );
        assert_eq!(
            cur.analysis.unwrap().to_string(),
            "code-analyzer (command:x): bottleneck: parse\nthe builtin report"
        );
        assert_eq!(
            cur.check.unwrap().analysis.unwrap().to_string(),
            "4 iterations without a keep"
        );
    }

    #[test]
    fn truncated_state_is_moved_aside_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(State::path(dir.path()), "{\"version\": 1, \"bri").unwrap();
        match load(dir.path()).unwrap() {
            Loaded::Corrupt { moved_to, .. } => assert!(moved_to.exists()),
            _ => panic!("expected corrupt"),
        }
        assert!(matches!(load(dir.path()).unwrap(), Loaded::Missing));
    }

    #[test]
    fn rebuild_takes_last_existing_keep() {
        let mut h = vec![IterationRecord::new(0, Verdict::Baseline)];
        h[0].base = "s".repeat(40);
        h[0].seed = Some(9);
        let mut k = IterationRecord::new(1, Verdict::Keep);
        k.commit = Some("c".repeat(40));
        h.push(k);
        let mut gone = IterationRecord::new(2, Verdict::Keep);
        gone.commit = Some("d".repeat(40));
        h.push(gone);
        h.push(IterationRecord::new(3, Verdict::Discard));
        let s = State::rebuild("b", "h", &h, |c| c.starts_with('c')).unwrap();
        assert_eq!(s.best_commit, "c".repeat(40));
        assert_eq!(s.next_iteration, 4);
        assert_eq!(s.seed, 9);
        assert_eq!(s.start_commit, "s".repeat(40));
    }
}
