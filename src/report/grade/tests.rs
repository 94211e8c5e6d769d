use chrono::Utc;

use super::*;
use crate::model::AgentCall;

fn rec(i: u32, verdict: Verdict) -> IterationRecord {
    let mut r = IterationRecord::new(i, verdict);
    r.reason = format!("reason {i}");
    r
}

fn inputs<'a>(
    history: &'a [IterationRecord],
    anomalies: &'a [Logged],
    budget: &'a Budget,
    stop: Option<&'a Stop>,
) -> Inputs<'a> {
    // The rows live as long as the test: leaked, as a test may.
    let facts: &'a [Fact] = Box::leak(Fact::all_of(history).into_boxed_slice());
    Inputs {
        graded: history.iter().collect(),
        facts,
        attempt: history
            .iter()
            .rev()
            .find(|r| r.confirmation.is_some() || r.confirmation_failed.is_some()),
        run: None,
        anomalies,
        budget,
        stop,
        started: None,
    }
}

fn stop(reason: StopReason) -> Stop {
    Stop {
        reason,
        detail: "why".into(),
        at: Utc::now(),
        iteration: 3,
        setting: None,
    }
}

#[test]
fn a_clean_night_passes() {
    let h = vec![
        rec(0, Verdict::Baseline),
        rec(1, Verdict::Keep),
        rec(2, Verdict::Discard),
        rec(3, Verdict::Discard),
    ];
    let b = Budget {
        iterations: Some(10),
        ..Budget::default()
    };
    let e = evaluate(&inputs(&h, &[], &b, Some(&stop(StopReason::Stalled))));
    assert_eq!(e.run.grade, Grade::Pass, "{:?}", e.run);
    assert!(e.iterations.iter().all(|g| g.grade == Grade::Pass));
    assert_eq!(e.run.text(), "pass");
}

#[test]
fn each_iteration_check_warns_or_fails_with_its_reason() {
    let mut no_answer = rec(1, Verdict::Invalid);
    no_answer.agent_calls = vec![
        AgentCall::new(Phase::Plan, 1, CallOutcome::NoResult),
        AgentCall::new(Phase::Plan, 2, CallOutcome::NoResult),
    ];
    let mut retried = rec(2, Verdict::Keep);
    retried.agent_calls = vec![
        AgentCall::new(Phase::Plan, 1, CallOutcome::Failed),
        AgentCall::new(Phase::Plan, 2, CallOutcome::Ok),
    ];
    let mut slow = rec(3, Verdict::Discard);
    slow.agent_calls = vec![AgentCall::new(Phase::Execute, 1, CallOutcome::TimedOut)];
    let crashed = rec(4, Verdict::Crash);
    let mut outage = rec(5, Verdict::Invalid);
    outage.agent_calls = vec![AgentCall::new(Phase::Plan, 1, CallOutcome::Unavailable)];
    let anomalous = rec(6, Verdict::Discard);
    let h = vec![
        rec(0, Verdict::Baseline),
        no_answer,
        retried,
        slow,
        crashed,
        outage,
        anomalous,
    ];
    let anomalies = vec![Logged {
        iteration: Some(6),
        rule: "token_spike".into(),
        severity: "high".into(),
        evidence: "50000 tokens, 10× the median".into(),
        node: None,
    }];
    let b = Budget::default();
    let e = evaluate(&inputs(&h, &anomalies, &b, None));
    let got: Vec<(Grade, Vec<&str>)> = e
        .iterations
        .iter()
        .map(|g| (g.grade, g.findings.iter().map(|f| f.check).collect()))
        .collect();
    assert_eq!(
        got,
        [
            (Grade::Pass, vec![]),
            (Grade::Fail, vec!["final_answer", "verdict"]),
            (Grade::Warn, vec!["agent_calls"]),
            (Grade::Fail, vec!["time_limit"]),
            (Grade::Warn, vec!["verdict"]),
            (Grade::Warn, vec!["model_calls"]),
            (Grade::Fail, vec!["anomaly"]),
        ]
    );
    assert!(
        e.iterations[1]
            .text()
            .contains("no final answer: PLAN's agent ended without a readable result"),
        "{}",
        e.iterations[1].text()
    );
    assert!(e.iterations[2].text().contains("PLAN needed 2 attempts"));
    // Three of six failed: half or more fails the run, naming them.
    let it = e
        .run
        .findings
        .iter()
        .find(|f| f.check == "iterations")
        .unwrap();
    assert_eq!(it.grade, Grade::Fail);
    assert!(
        it.reason
            .contains("3 of 6 iteration(s) failed their checks (1, 3, 6)"),
        "{}",
        it.reason
    );
}

#[test]
fn run_checks_red_stop_late_keep_and_no_keep() {
    let b = Budget {
        iterations: Some(10),
        ..Budget::default()
    };
    let mut h: Vec<IterationRecord> = vec![rec(0, Verdict::Baseline)];
    h.extend((1..=10).map(|i| {
        rec(
            i,
            if i == 9 {
                Verdict::Keep
            } else {
                Verdict::Discard
            },
        )
    }));
    let e = evaluate(&inputs(
        &h,
        &[],
        &b,
        Some(&stop(StopReason::BudgetIterations)),
    ));
    assert_eq!(e.run.grade, Grade::Warn);
    assert!(
        e.run.findings[0].reason.contains("still improving")
            && e.run.findings[0].reason.contains("iteration 9"),
        "{:?}",
        e.run
    );
    // The keep was early: the budget ended a search that had settled.
    h[9].verdict = Verdict::Discard;
    h[2].verdict = Verdict::Keep;
    let e = evaluate(&inputs(
        &h,
        &[],
        &b,
        Some(&stop(StopReason::BudgetIterations)),
    ));
    assert_eq!(e.run.grade, Grade::Pass, "{:?}", e.run);
    // RED fails the run; no keep at all warns.
    h[2].verdict = Verdict::Discard;
    let e = evaluate(&inputs(&h, &[], &b, Some(&stop(StopReason::RedDivergence))));
    assert_eq!(e.run.grade, Grade::Fail);
    let checks: Vec<&str> = e.run.findings.iter().map(|f| f.check).collect();
    assert_eq!(checks, ["stop", "progress"]);
}

#[test]
fn a_judges_answer_is_read_or_refused_with_the_key() {
    let v = serde_json::json!({
        "verdict": "warn",
        "why": "two keeps rely on one noisy benchmark",
        "iterations": [{"iteration": 3, "verdict": "fail", "why": "gamed"}],
    });
    let j = judgement_of("judge", &v).unwrap();
    assert_eq!(j.grade, Grade::Warn);
    assert_eq!(j.iterations[0].grade, Grade::Fail);
    let bad = serde_json::json!({"verdict": "ok"});
    assert!(
        judgement_of("judge", &bad)
            .unwrap_err()
            .contains("`verdict` must be")
    );
    let bad = serde_json::json!({"verdict": "pass", "iterations": [{"verdict": "pass"}]});
    assert!(
        judgement_of("judge", &bad)
            .unwrap_err()
            .contains("iterations[0]: `iteration`")
    );
}

#[test]
fn a_budget_cut_a_block_and_a_superseded_confirmation_are_not_failures() {
    let mut cut = rec(1, Verdict::Invalid);
    cut.reason = crate::model::Cut::Budget {
        phase: Phase::Execute,
        reason: StopReason::BudgetCost,
        detail: "$5.00 of $5.00".into(),
    }
    .reason();
    let mut blocked = rec(2, Verdict::Blocked);
    blocked.reason = "changed bench.sh, which the Brief protects".into();
    let mut kept = rec(3, Verdict::Keep);
    kept.confirmation_failed = Some("the metric failed on the start".into());
    let mut again = rec(4, Verdict::Discard);
    again.confirmation = Some(crate::model::Confirmation {
        start: "a".into(),
        best: "b".into(),
        pairs: Vec::new(),
        best_median: 1.0,
        start_median: 2.0,
        effect: 0.5,
        ci: (0.4, 0.6),
        p: 0.001,
        why: "confirmed".into(),
    });
    let h = vec![rec(0, Verdict::Baseline), cut, blocked, kept, again];
    let anomalies = vec![
        Logged {
            iteration: Some(1),
            rule: "budget_cut".into(),
            severity: "warn".into(),
            evidence: "cut".into(),
            node: None,
        },
        Logged {
            iteration: None,
            rule: "budget_near".into(),
            severity: "high".into(),
            evidence: "100% used".into(),
            node: None,
        },
    ];
    let b = Budget::default();
    let e = evaluate(&inputs(
        &h,
        &anomalies,
        &b,
        Some(&stop(StopReason::BudgetCost)),
    ));
    let grades: Vec<Grade> = e.iterations.iter().map(|g| g.grade).collect();
    assert_eq!(
        grades,
        [
            Grade::Pass,
            Grade::Warn,
            Grade::Warn,
            Grade::Pass,
            Grade::Pass
        ]
    );
    assert!(
        e.iterations[1]
            .text()
            .contains("not measured: budget reached"),
        "{:?}",
        e.iterations[1]
    );
    assert_eq!(e.run.grade, Grade::Pass, "{:?}", e.run);
}
