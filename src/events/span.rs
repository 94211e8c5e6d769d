//! A node of the event tree that anyone may log under.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Utc;

use super::{Event, EventFile, Record, Sink};
use crate::error::Result;
use crate::model::TaskState;

/// What every span of one process shares: the run, the id counter, the sinks.
struct Hub {
    run_id: String,
    prefix: String,
    counter: AtomicU64,
    sinks: Vec<Arc<dyn Sink>>,
    /// Per task, how many groups of subagents it waits for: two running at
    /// once (the analyzer beside the eval-runner) must both end before the
    /// task runs again.
    waiting: Mutex<HashMap<String, usize>>,
}

/// A handle on one node of the event tree: what it emits is its child.
///
/// Cloning is cheap and a clone may move to another thread, so two things
/// running at once each log under their own span instead of sharing a
/// `&mut` log and handing parent ids around. Ids are unique across processes
/// (a tick per cron call): they start with the pid and the process start time.
#[derive(Clone)]
pub(crate) struct Span {
    hub: Arc<Hub>,
    id: Option<String>,
    iteration: Option<u32>,
    /// The task this span is part of (the iteration or delegation that
    /// opened it, or an enclosing one): where [`Span::task_state`] logs.
    task: Option<String>,
}

impl Span {
    /// The root of a tree whose records go to `sinks`, in order.
    pub(crate) fn new(run_id: &str, sinks: Vec<Arc<dyn Sink>>) -> Span {
        let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default() as u64;
        Span {
            hub: Arc::new(Hub {
                run_id: run_id.to_string(),
                prefix: format!("{:x}{:x}", std::process::id(), nanos & 0xffff_ffff),
                counter: AtomicU64::new(0),
                sinks,
                waiting: Mutex::new(HashMap::new()),
            }),
            id: None,
            iteration: None,
            task: None,
        }
    }

    /// The root of a tree written to `dir/events.jsonl`, then to `watchers`.
    pub(crate) fn open(dir: &Path, run_id: &str, watchers: Vec<Arc<dyn Sink>>) -> Result<Span> {
        let mut sinks: Vec<Arc<dyn Sink>> = vec![Arc::new(EventFile::open(dir)?)];
        sinks.extend(watchers);
        Ok(Span::new(run_id, sinks))
    }

    #[cfg(test)]
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub(crate) fn iteration(&self) -> Option<u32> {
        self.iteration
    }

    pub(crate) fn new_id(&self) -> String {
        let n = self.hub.counter.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.hub.prefix)
    }

    /// The span of an event emitted earlier (the run, an iteration resumed
    /// by a later tick), to log under it again.
    pub(crate) fn at(&self, id: &str, iteration: Option<u32>) -> Span {
        Span {
            hub: self.hub.clone(),
            id: Some(id.to_string()),
            iteration,
            task: None,
        }
    }

    /// This span as a task of its own (an iteration's span found again by
    /// its id): what is logged under it belongs to that task.
    pub(crate) fn into_task(mut self) -> Span {
        self.task = self.id.clone();
        self
    }

    /// Records that the task this span belongs to is now `state`; nothing
    /// when it belongs to none (run-level work, a test's span).
    pub(crate) fn task_state(&self, state: TaskState, detail: Option<String>) -> Result<()> {
        let Some(task) = &self.task else {
            return Ok(());
        };
        self.at(task, self.iteration)
            .emit(Event::TaskState { state, detail })
            .map(|_| ())
    }

    /// The same node, with its events tagged with another iteration.
    pub(crate) fn with_iteration(&self, iteration: Option<u32>) -> Span {
        Span {
            iteration,
            ..self.clone()
        }
    }

    /// The task this span belongs to now waits for subagents (`detail`
    /// names them) until the matching [`Span::done_waiting`].
    pub(crate) fn wait_for(&self, detail: String) -> Result<()> {
        let Some(task) = &self.task else {
            return Ok(());
        };
        // The state is logged under the lock: two groups starting and
        // ending at once must not log their states out of order.
        let mut w = self.hub.waiting.lock().unwrap_or_else(|p| p.into_inner());
        *w.entry(task.clone()).or_default() += 1;
        self.task_state(TaskState::WaitingChild, Some(detail))
    }

    /// A group of subagents [`Span::wait_for`] named is done; when none is
    /// left, the task is running again.
    pub(crate) fn done_waiting(&self) -> Result<()> {
        let Some(task) = &self.task else {
            return Ok(());
        };
        let mut w = self.hub.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let n = w.entry(task.clone()).or_default();
        *n = n.saturating_sub(1);
        match *n {
            0 => self.task_state(TaskState::Running, None),
            _ => Ok(()),
        }
    }

    /// Records `event` under this span and returns its id.
    pub(crate) fn emit(&self, event: Event) -> Result<String> {
        let id = self.new_id();
        self.emit_with_id(&id, event)?;
        Ok(id)
    }

    /// Records `event` under this span with an id chosen beforehand (one
    /// that was saved in the state before the event could be written).
    pub(crate) fn emit_with_id(&self, id: &str, event: Event) -> Result<()> {
        let record = Record {
            ts: Utc::now(),
            run_id: self.hub.run_id.clone(),
            iteration: self.iteration,
            id: id.to_string(),
            parent_id: self.id.clone(),
            event,
        };
        let mut first = Ok(());
        for (i, sink) in self.hub.sinks.iter().enumerate() {
            let r = sink.record(&record);
            if i == 0 {
                first = r;
            }
        }
        first
    }

    /// Records `event` with `id` unless a record with that id is already
    /// there: for an event that marks a step done, which a step resumed
    /// after a kill would otherwise record twice.
    pub(crate) fn emit_once(&self, id: &str, event: Event) -> Result<()> {
        if self.hub.sinks.first().is_some_and(|s| s.recorded(id)) {
            return Ok(());
        }
        self.emit_with_id(id, event)
    }

    /// Records `event` and returns the span it opens.
    pub(crate) fn child(&self, event: Event) -> Result<Span> {
        let id = self.new_id();
        self.child_with_id(&id, event)
    }

    /// [`Span::child`] with an id chosen beforehand.
    pub(crate) fn child_with_id(&self, id: &str, event: Event) -> Result<Span> {
        let opens_task = matches!(
            event,
            Event::IterationStarted { .. } | Event::SubagentStarted { .. }
        );
        self.emit_with_id(id, event)?;
        let child = self.at(id, self.iteration);
        Ok(match opens_task {
            true => child.into_task(),
            false => Span {
                task: self.task.clone(),
                ..child
            },
        })
    }

    /// Makes every record so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        for sink in &self.hub.sinks {
            sink.sync()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Collect(Mutex<Vec<Record>>);

    impl Sink for Collect {
        fn record(&self, r: &Record) -> Result<()> {
            self.0.lock().unwrap().push(r.clone());
            Ok(())
        }
    }

    #[test]
    fn an_event_marking_a_step_is_recorded_once_across_processes() {
        let dir = tempfile::tempdir().unwrap();
        let verdict = || Event::Verdict {
            verdict: crate::model::Verdict::Keep,
        };
        let first = Span::open(dir.path(), "r", Vec::new()).unwrap();
        first.emit_once("it-1-verdict", verdict()).unwrap();
        first.emit(verdict()).unwrap();
        // A second process (the step resumed after a kill) opens the file anew.
        let again = Span::open(dir.path(), "r", Vec::new()).unwrap();
        again.emit_once("it-1-verdict", verdict()).unwrap();
        again.emit_once("it-2-verdict", verdict()).unwrap();
        let ids: Vec<String> = super::super::read_all(dir.path())
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids.len(), 3, "{ids:?}");
        assert_eq!(ids.iter().filter(|i| *i == "it-1-verdict").count(), 1);
    }

    #[test]
    fn two_threads_log_under_their_own_spans() {
        let sink = Arc::new(Collect::default());
        let root = Span::new("r", vec![sink.clone()]);
        let phase = root
            .with_iteration(Some(3))
            .child(Event::PhaseStarted {
                phase: crate::model::Phase::Evaluate,
            })
            .unwrap();
        std::thread::scope(|s| {
            for who in ["reviewer", "simplifier"] {
                let span = phase.clone();
                s.spawn(move || {
                    let me = span
                        .child(Event::LearnArchived { path: who.into() })
                        .unwrap();
                    for pair in 0..50 {
                        me.emit(Event::Measurement {
                            pair,
                            side: who.into(),
                            value: 1.0,
                        })
                        .unwrap();
                    }
                });
            }
        });
        let all = sink.0.lock().unwrap();
        assert_eq!(all.len(), 1 + 2 * 51);
        let ids: std::collections::BTreeSet<&str> = all.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), all.len(), "ids are unique");
        for r in all.iter() {
            let Event::Measurement { side, .. } = &r.event else {
                continue;
            };
            let parent = all
                .iter()
                .find(|p| Some(&p.id) == r.parent_id.as_ref())
                .unwrap();
            assert!(matches!(&parent.event, Event::LearnArchived { path } if *path == *side));
            assert_eq!(r.iteration, Some(3));
        }
    }
}
