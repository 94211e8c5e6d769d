//! `ooda status --tasks`: each iteration and each delegation as a task with
//! a state, read from the trace.
//!
//! The log says what happened; a night that looks stuck needs what is
//! happening: which iteration, in which state, waiting for which subagent,
//! since when. The states are events (`task_state`), so this is the same
//! reading of `events.jsonl` as `ooda trace`, cut down to the tasks.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::model::TaskState;
use crate::report::trace::{Kind, Node};

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Task {
    /// The event id that opened it (the iteration's, the delegation id).
    pub id: String,
    /// `iteration` or `delegation`.
    pub kind: &'static str,
    /// `iteration 7`, or the subagent's name.
    pub name: String,
    pub iteration: Option<u32>,
    pub state: TaskState,
    /// When it entered its state.
    pub since: DateTime<Utc>,
    pub detail: Option<String>,
    /// The phase it is in (an iteration's latest), or runs in (a delegation's).
    pub phase: Option<String>,
    /// The task it works for (a delegation's iteration).
    pub parent: Option<String>,
    /// How many states it went through.
    pub transitions: usize,
    /// Left unfinished by a process that died (see [`of`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub abandoned: bool,
}

/// Every task of `run` with a recorded state, in the order they began
/// (what a killed tick left unfinished reads `cancelled`, "abandoned":
/// [`crate::report::trace::build`] closes it).
pub(crate) fn of(run: &Node) -> Vec<Task> {
    let mut out = Vec::new();
    collect(run, None, None, &mut out);
    out
}

fn collect(n: &Node, parent: Option<&str>, phase: Option<&str>, out: &mut Vec<Task>) {
    let kind = match n.kind {
        Kind::Iteration => Some("iteration"),
        Kind::Subagent => Some("delegation"),
        _ => None,
    };
    let mut me = parent;
    if let (Some(kind), Some(last)) = (kind, n.states.last()) {
        out.push(Task {
            id: n.id.clone(),
            kind,
            name: n.name.clone(),
            iteration: n.iteration,
            state: last.state,
            since: last.at,
            detail: last.detail.clone(),
            phase: match n.kind {
                Kind::Iteration => n
                    .children
                    .iter()
                    .rev()
                    .find(|c| c.kind == Kind::Phase)
                    .map(|c| c.name.clone()),
                _ => phase.map(str::to_string),
            },
            parent: parent.map(str::to_string),
            transitions: n.states.len(),
            abandoned: last.state == TaskState::Cancelled
                && last
                    .detail
                    .as_deref()
                    .is_some_and(|d| d.starts_with("abandoned")),
        });
        me = Some(&n.id);
    }
    let phase = match n.kind {
        Kind::Phase => Some(n.name.as_str()),
        _ => phase,
    };
    for c in &n.children {
        collect(c, me, phase, out);
    }
}

/// The tasks worth a look: every one not finished, and the last `recent`
/// finished iterations (with their delegations that did not succeed).
pub(crate) fn shown(tasks: &[Task], recent: usize) -> Vec<&Task> {
    let finished: Vec<&str> = tasks
        .iter()
        .filter(|t| t.kind == "iteration" && t.state.is_final())
        .map(|t| t.id.as_str())
        .collect();
    let keep: Vec<&str> = finished.iter().rev().take(recent).copied().collect();
    let open: Vec<&str> = tasks
        .iter()
        .filter(|t| !t.state.is_final())
        .map(|t| t.id.as_str())
        .collect();
    tasks
        .iter()
        .filter(|t| {
            let parent = t.parent.as_deref();
            !t.state.is_final()
                || (t.kind == "iteration" && keep.contains(&t.id.as_str()))
                || parent.is_some_and(|p| open.contains(&p))
                || (t.state != TaskState::Succeeded && parent.is_some_and(|p| keep.contains(&p)))
                // A run-level delegation (a judge at the stop) that failed.
                || (t.kind == "delegation" && parent.is_none() && t.state != TaskState::Succeeded)
        })
        .collect()
}

/// `4m 10s`, `2h 03m`, `12s`.
pub(crate) fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, Span, read_all};
    use crate::model::{Phase, Role};

    /// The span of a run logged to `dir/events.jsonl`.
    fn run_in(dir: &std::path::Path) -> Span {
        Span::open(dir, "r", Vec::new())
            .unwrap()
            .child(Event::RunStarted {
                brief: "b".into(),
                start_commit: "c".into(),
                seed: 1,
            })
            .unwrap()
    }

    #[test]
    fn states_come_from_the_log_and_a_waiting_iteration_names_its_child() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path());
        for n in 1..=2u32 {
            let it = run
                .with_iteration(Some(n))
                .child(Event::IterationStarted {
                    brief_hash: "h".into(),
                })
                .unwrap();
            it.task_state(TaskState::Planning, None).unwrap();
            it.task_state(TaskState::Running, None).unwrap();
            let phase = it
                .child(Event::PhaseStarted {
                    phase: Phase::Review,
                })
                .unwrap();
            phase
                .task_state(TaskState::WaitingChild, Some("waiting for r".into()))
                .unwrap();
            let sub = phase
                .child(Event::SubagentStarted {
                    name: "r".into(),
                    role: Role::Review,
                    driver: "builtin".into(),
                    delegation: "d".into(),
                    sees: vec![],
                })
                .unwrap();
            sub.task_state(TaskState::Running, None).unwrap();
            if n == 1 {
                sub.task_state(TaskState::Succeeded, None).unwrap();
                phase.task_state(TaskState::Running, None).unwrap();
                it.task_state(TaskState::Succeeded, Some("keep".into()))
                    .unwrap();
            }
        }
        let runs = crate::report::trace::build(&read_all(dir.path()).unwrap());
        let tasks = of(&runs[0]);
        let states: Vec<(&str, TaskState)> =
            tasks.iter().map(|t| (t.name.as_str(), t.state)).collect();
        assert_eq!(
            states,
            [
                ("iteration 1", TaskState::Succeeded),
                ("r", TaskState::Succeeded),
                ("iteration 2", TaskState::WaitingChild),
                ("r", TaskState::Running),
            ]
        );
        assert_eq!(tasks[3].parent.as_deref(), Some(tasks[2].id.as_str()));
        assert_eq!(tasks[2].detail.as_deref(), Some("waiting for r"));
        assert_eq!(tasks[0].transitions, 5);
        assert_eq!(tasks[2].phase.as_deref(), Some("review"));
        assert_eq!(tasks[3].phase.as_deref(), Some("review"));
        // What is shown: what is not finished, and the last finished one
        // without its delegations that went well.
        let names: Vec<&str> = shown(&tasks, 1).iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["iteration 1", "iteration 2", "r"]);
        assert_eq!(age(250), "4m 10s");
        assert_eq!(age(7380), "2h 03m");
    }

    #[test]
    fn what_a_killed_tick_left_unfinished_reads_as_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path());
        let start = |n: u32| {
            run.with_iteration(Some(n))
                .child(Event::IterationStarted {
                    brief_hash: "h".into(),
                })
                .unwrap()
        };
        // A baseline killed mid-way, then measured again.
        start(0).task_state(TaskState::Running, None).unwrap();
        let again = start(0);
        again.task_state(TaskState::Running, None).unwrap();
        again.task_state(TaskState::Succeeded, None).unwrap();
        // A delegation killed mid-way; the next tick resumes the iteration.
        let it = start(1);
        it.wait_for("waiting for r".into()).unwrap();
        let sub = it
            .child(Event::SubagentStarted {
                name: "r".into(),
                role: Role::Review,
                driver: "builtin".into(),
                delegation: "d".into(),
                sees: vec![],
            })
            .unwrap();
        sub.task_state(TaskState::Running, None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        it.task_state(TaskState::Running, Some("in review".into()))
            .unwrap();
        let runs = crate::report::trace::build(&read_all(dir.path()).unwrap());
        let tasks = of(&runs[0]);
        let got: Vec<(&str, TaskState, bool)> = tasks
            .iter()
            .map(|t| (t.name.as_str(), t.state, t.abandoned))
            .collect();
        assert_eq!(
            got,
            [
                ("iteration 0", TaskState::Cancelled, true),
                ("iteration 0", TaskState::Succeeded, false),
                ("iteration 1", TaskState::Running, false),
                ("r", TaskState::Cancelled, true),
            ]
        );
        assert!(tasks[3].detail.as_deref().unwrap().starts_with("abandoned"));
    }
}
