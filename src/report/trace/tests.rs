use super::*;
use crate::events::{Span, read_all};
use crate::model::{Phase, Role};

fn log(emit: impl FnOnce(&Span)) -> Vec<Node> {
    let dir = tempfile::tempdir().unwrap();
    let root = Span::open(dir.path(), "r1", Vec::new()).unwrap();
    emit(&root);
    build(&read_all(dir.path()).unwrap())
}

fn run_started() -> Event {
    Event::RunStarted {
        brief: "b".into(),
        start_commit: "abc".into(),
        seed: 1,
    }
}

fn call(phase: Phase, attempt: u32) -> Event {
    Event::ModelCall {
        phase,
        profile: "claude".into(),
        attempt,
        attempts: 3,
        command: "claude -p".into(),
        prompt_chars: 10,
        model: None,
    }
}

fn result(phase: Phase, attempt: u32, outcome: CallOutcome, tokens: u64) -> Event {
    Event::ModelResult {
        phase,
        attempt,
        outcome,
        exit_code: Some(0),
        seconds: 2.0,
        tokens_in: tokens,
        tokens_out: 1,
        cached: 0,
        cache_write: 0,
        reasoning: 0,
        cost_usd: Some(0.5),
        model: None,
        problem: None,
        files: Vec::new(),
    }
}

fn command(span: &Span, role: &str, outcome: CommandOutcome) {
    span.child(Event::CommandStarted {
        role: role.into(),
        worktree: "cand".into(),
        command: "./bench".into(),
    })
    .unwrap()
    .emit(Event::CommandFinished {
        role: role.into(),
        outcome,
        exit_code: Some(if outcome == CommandOutcome::Success {
            0
        } else {
            1
        }),
        seconds: 0.5,
        truncated_bytes: 0,
    })
    .unwrap();
}

#[test]
fn results_pair_with_their_calls_by_parent_and_usage_sums_up_once() {
    let runs = log(|root| {
        let run = root.child(run_started()).unwrap();
        let it = run
            .with_iteration(Some(1))
            .child(Event::IterationStarted {
                brief_hash: "h".into(),
            })
            .unwrap();
        let plan = it
            .child(Event::PhaseStarted { phase: Phase::Plan })
            .unwrap();
        // This release: the result under its call.
        let c = plan.child(call(Phase::Plan, 1)).unwrap();
        c.emit(Event::ModelRequest {
            request: 1,
            provider: "openai".into(),
            model: "m".into(),
            messages: 2,
            prompt_chars: 40,
            prompt_tokens_estimate: 10,
        })
        .unwrap();
        c.emit(Event::ModelResponse {
            request: 1,
            model: "m".into(),
            tokens_in: 100,
            tokens_out: 1,
            cached: 0,
            reasoning: 0,
            cache_write: 0,
            latency_seconds: 0.5,
            cost_usd: Some(0.5),
            finish_reason: "stop".into(),
            tries: 1,
            error: None,
        })
        .unwrap();
        c.emit(result(Phase::Plan, 1, CallOutcome::Rejected, 100))
            .unwrap();
        // An older log: the result beside its call.
        plan.emit(call(Phase::Plan, 2)).unwrap();
        plan.emit(result(Phase::Plan, 2, CallOutcome::Ok, 50))
            .unwrap();
        plan.emit(Event::PhaseFinished {
            phase: Phase::Plan,
            seconds: 3.0,
        })
        .unwrap();
        it.emit(Event::Verdict {
            verdict: Verdict::Discard,
        })
        .unwrap();
    });
    assert_eq!(runs.len(), 1);
    let it = iteration(&runs[0], 1).unwrap();
    assert_eq!(it.verdict.as_deref(), Some("discard"));
    let plan = &it.children[0];
    assert_eq!((plan.kind, plan.status), (Kind::Phase, Status::Ok));
    assert_eq!(plan.seconds, Some(3.0));
    let calls = &plan.children;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].status, Status::Failed);
    assert_eq!(calls[0].verdict.as_deref(), Some("rejected"));
    assert_eq!(calls[0].children[0].kind, Kind::ModelRequest);
    assert_eq!(calls[0].children[0].usage.input, 100);
    assert_eq!(calls[1].status, Status::Ok);
    assert_eq!(calls[1].usage.input, 50);
    // The request's 100 tokens are the first call's, not counted again.
    assert_eq!(it.usage.input, 150);
    assert_eq!(runs[0].usage.cost_usd, Some(1.0));
    assert!(it.has_failure());
}

#[test]
fn a_log_without_its_start_still_makes_one_run_and_open_work_is_unfinished() {
    let runs = log(|root| {
        let it = root
            .with_iteration(Some(4))
            .child(Event::IterationStarted {
                brief_hash: "h".into(),
            })
            .unwrap();
        let ev = it
            .child(Event::PhaseStarted {
                phase: Phase::Evaluate,
            })
            .unwrap();
        let sub = ev
            .child(Event::SubagentStarted {
                name: "eval-runner".into(),
                role: Role::Evaluate,
                driver: "builtin".into(),
                delegation: "d".into(),
                sees: vec![],
            })
            .unwrap();
        command(&sub, "metric", CommandOutcome::Success);
        command(&sub, "metric", CommandOutcome::Success);
        command(&sub, "metric", CommandOutcome::Failed);
        it.emit(Event::Interrupted {
            phase: Some(Phase::Evaluate),
        })
        .unwrap();
    });
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kind, Kind::Run);
    let it = iteration(&runs[0], 4).unwrap();
    assert_eq!(it.status, Status::Cancelled);
    let sub = &it.children[0].children[0];
    assert_eq!(sub.status, Status::Unfinished);
    assert_eq!(sub.children.len(), 3);
    assert!(sub.end.is_some() && sub.end >= Some(sub.children[2].start));
    let text = render(
        &[it],
        Style {
            color: false,
            verbose: false,
            depth: None,
        },
    );
    assert!(
        text.contains("metric ×2 (cand 2)  success  1.00s"),
        "{text}"
    );
    assert!(text.contains("✗ metric (cand)  failed"), "{text}");
    assert!(text.contains("⊘ iteration 4"), "{text}");
    assert!(text.contains("· interrupted after evaluate"), "{text}");
    let verbose = render(
        &[it],
        Style {
            color: false,
            verbose: true,
            depth: None,
        },
    );
    assert_eq!(verbose.matches("metric (cand)").count(), 3, "{verbose}");
}

#[test]
fn a_decision_logged_before_its_tool_call_moves_onto_it() {
    let runs = log(|root| {
        let run = root.child(run_started()).unwrap();
        let c = run.child(call(Phase::Execute, 1)).unwrap();
        c.emit(Event::DecisionAttribution {
            tool_call_id: Some("t1".into()),
            goal: "g".into(),
            options: vec!["a".into(), "b".into()],
            choice: "a".into(),
            why: "w".into(),
            expected: "e".into(),
            source: "block".into(),
        })
        .unwrap();
        c.emit(Event::ToolCall {
            tool_call_id: "t1".into(),
            tool: "read_file".into(),
            arguments: "{}".into(),
            written_as: None,
        })
        .unwrap();
        c.emit(Event::ToolResult {
            tool_call_id: "t1".into(),
            tool: "read_file".into(),
            ok: false,
            chars: 0,
            stored: None,
            error: Some("no such file".into()),
        })
        .unwrap();
    });
    let c = &runs[0].children[0];
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    let tool = &c.children[0];
    assert_eq!((tool.kind, tool.status), (Kind::ToolCall, Status::Failed));
    assert_eq!(tool.error.as_deref(), Some("no such file"));
    assert_eq!(tool.notes.len(), 1);
    assert!(
        tool.notes[0].text.contains("options: a | b"),
        "{:?}",
        tool.notes
    );
    assert_eq!(tool.notes[0].kind, "decision_attribution");
}

#[test]
fn tool_call_ids_are_unique_per_agent_call_only() {
    // A driver that numbers its calls `call_1`, `call_2`, … in every step.
    let runs = log(|root| {
        let run = root.child(run_started()).unwrap();
        for (attempt, ok) in [(1, false), (2, true)] {
            let c = run.child(call(Phase::Execute, attempt)).unwrap();
            c.emit(Event::DecisionAttribution {
                tool_call_id: Some("call_1".into()),
                goal: "g".into(),
                options: vec![],
                choice: format!("try {attempt}"),
                why: "w".into(),
                expected: "e".into(),
                source: "block".into(),
            })
            .unwrap();
            c.emit(Event::ToolCall {
                tool_call_id: "call_1".into(),
                tool: "read_file".into(),
                arguments: "{}".into(),
                written_as: None,
            })
            .unwrap();
            c.emit(Event::ToolResult {
                tool_call_id: "call_1".into(),
                tool: "read_file".into(),
                ok,
                chars: 3,
                stored: None,
                error: (!ok).then(|| "no such file".to_string()),
            })
            .unwrap();
        }
    });
    let status: Vec<Status> = runs[0]
        .children
        .iter()
        .map(|c| c.children[0].status)
        .collect();
    assert_eq!(status, [Status::Failed, Status::Ok]);
    for (i, c) in runs[0].children.iter().enumerate() {
        let notes: Vec<&str> = c.children[0]
            .notes
            .iter()
            .map(|n| n.text.as_str())
            .collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains(&format!("try {}", i + 1)), "{notes:?}");
        assert!(c.notes.is_empty(), "{:?}", c.notes);
    }
}

#[test]
fn a_warning_before_the_start_of_a_run_does_not_make_a_second_root() {
    let runs = log(|root| {
        let run = root.at("run-r1", None);
        run.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::StateRebuilt,
            message: "rebuilt".into(),
        })
        .unwrap();
        root.emit_with_id("run-r1", run_started()).unwrap();
        run.with_iteration(Some(0))
            .child(Event::IterationStarted {
                brief_hash: "h".into(),
            })
            .unwrap();
    });
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].attribute("brief"), Some("b"));
    assert_eq!(runs[0].children.len(), 1);
    assert_eq!(runs[0].notes.len(), 1);
}

#[test]
fn a_parent_ends_no_earlier_than_its_children() {
    let runs = log(|root| {
        let run = root.child(run_started()).unwrap();
        let it = run
            .with_iteration(Some(1))
            .child(Event::IterationStarted {
                brief_hash: "h".into(),
            })
            .unwrap();
        let p = it
            .child(Event::PhaseStarted { phase: Phase::Plan })
            .unwrap();
        p.emit(Event::PhaseFinished {
            phase: Phase::Plan,
            seconds: 0.0,
        })
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        // Logged under the phase after its finish (a late tool result).
        p.child(call(Phase::Plan, 1))
            .unwrap()
            .emit(result(Phase::Plan, 1, CallOutcome::Ok, 5))
            .unwrap();
    });
    for n in runs[0].walk() {
        for c in &n.children {
            assert!(c.end <= n.end, "{} ends after {}", c.name, n.name);
        }
    }
}
