//! The typed, append-only trajectory of a Brief (`events.jsonl`, DESIGN.md §12).
//!
//! Each line is one JSON object with a `type` tag (snake_case), a timestamp,
//! the run id, the iteration, its own id and its parent's id. Parent ids make
//! the log a tree (run → iteration → phase → command) so traces and metrics can
//! be built later from the file alone. The schema is a closed enum: adding a
//! field is cheap, but nothing writes free-form lines.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::Phase;

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
        predicted_effect: f64,
        predicted_sd: f64,
        cites: Vec<u32>,
    },
    PlanRejected {
        rule: String,
        message: String,
    },
    /// A command agent started one step (DESIGN.md §7).
    ModelCall {
        phase: String,
        profile: String,
        attempt: u32,
        command: String,
        prompt_chars: usize,
    },
    /// How that step ended, with the usage its output reported.
    ModelResult {
        phase: String,
        attempt: u32,
        outcome: String,
        exit_code: Option<i32>,
        seconds: f64,
        tokens_in: u64,
        tokens_out: u64,
        cached: u64,
        cost_usd: Option<f64>,
        model: Option<String>,
        problem: Option<String>,
    },
    CommandStarted {
        role: String,
        worktree: String,
        command: String,
    },
    CommandFinished {
        role: String,
        outcome: String,
        exit_code: Option<i32>,
        seconds: f64,
        truncated_bytes: u64,
    },
    Measurement {
        pair: u32,
        side: String,
        value: f64,
    },
    Decision {
        verdict: String,
        reason: String,
    },
    Verdict {
        verdict: String,
    },
    ArtifactStored {
        #[serde(rename = "ref")]
        reference: String,
        path: String,
        bytes: u64,
    },
    Anomaly {
        kind: String,
        message: String,
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

/// Appends events for one process. Ids are unique across processes (a tick
/// per cron call) because they start with the pid and the process start time.
pub struct EventLog {
    path: PathBuf,
    file: File,
    pub run_id: String,
    prefix: String,
    counter: AtomicU64,
}

impl EventLog {
    pub fn open(dir: &Path, run_id: &str) -> Result<EventLog> {
        let path = dir.join("events.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default() as u64;
        Ok(EventLog {
            path,
            file,
            run_id: run_id.to_string(),
            prefix: format!("{:x}{:x}", std::process::id(), nanos & 0xffff_ffff),
            counter: AtomicU64::new(0),
        })
    }

    pub fn new_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.prefix)
    }

    /// Appends an event and returns its id, for children to name as parent.
    pub fn emit(
        &mut self,
        iteration: Option<u32>,
        parent: Option<&str>,
        event: Event,
    ) -> Result<String> {
        let id = self.new_id();
        self.emit_with_id(&id, iteration, parent, event)?;
        Ok(id)
    }

    pub fn emit_with_id(
        &mut self,
        id: &str,
        iteration: Option<u32>,
        parent: Option<&str>,
        event: Event,
    ) -> Result<()> {
        let record = Record {
            ts: Utc::now(),
            run_id: self.run_id.clone(),
            iteration,
            id: id.to_string(),
            parent_id: parent.map(str::to_string),
            event,
        };
        // Secrets never reach disk: every string of every event is redacted
        // (commands, hypotheses, agent messages), whatever its field.
        let mut value = serde_json::to_value(&record)
            .map_err(|e| Error::Internal(format!("serializing an event: {e}")))?;
        redact_strings(&mut value);
        let mut line = value.to_string();
        line.push('\n');
        // One write call per line: O_APPEND keeps concurrent writers' lines whole.
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| Error::io(format!("appending to {}", self.path.display()), e))
    }

    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }
}

fn redact_strings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            let r = crate::compress::redact(s);
            if r != *s {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_strings),
        serde_json::Value::Object(o) => o.values_mut().for_each(redact_strings),
        _ => {}
    }
}

/// The time of the last event, read from the end of the file only (status
/// must stay fast when the log is large).
pub fn last_timestamp(dir: &Path) -> Option<DateTime<Utc>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(dir.join("events.jsonl")).ok()?;
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

/// Reads every well-formed record; a torn last line (a kill mid-write) is skipped.
pub fn read_all(dir: &Path) -> Result<Vec<Record>> {
    let path = dir.join("events.jsonl");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_with_type_tag_and_parent() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(dir.path(), "run-1").unwrap();
        let it = log
            .emit(
                Some(1),
                None,
                Event::IterationStarted {
                    brief_hash: "h".into(),
                },
            )
            .unwrap();
        log.emit(
            Some(1),
            Some(&it),
            Event::PhaseStarted { phase: Phase::Plan },
        )
        .unwrap();
        let text = std::fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["type"], "iteration_started");
        let all = read_all(dir.path()).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].parent_id.as_deref(), Some(it.as_str()));
        assert_eq!(all[1].event, Event::PhaseStarted { phase: Phase::Plan });
    }

    #[test]
    fn secrets_never_reach_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(dir.path(), "r").unwrap();
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
        log.emit(
            None,
            None,
            Event::Anomaly {
                kind: "x".into(),
                message: format!("the agent said {key}"),
            },
        )
        .unwrap();
        let text = std::fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
        assert!(!text.contains(key), "{text}");
        assert_eq!(read_all(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(dir.path(), "r").unwrap();
        log.emit(
            None,
            None,
            Event::Verdict {
                verdict: "keep".into(),
            },
        )
        .unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("events.jsonl"))
            .unwrap();
        f.write_all(b"{\"ts\":\"2026-").unwrap();
        assert_eq!(read_all(dir.path()).unwrap().len(), 1);
    }
}
