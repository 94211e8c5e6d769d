//! Every stop reason, end to end: fake agents that go in circles, make
//! everything worse or promise gains that never come are stopped by the
//! runner within the documented number of iterations; a human `ack`
//! restarts the loop.

use crate::test::{Test, bench, knob_brief};
use ooda::testing::archive::history::Verdict;

/// Fast decisions (3 pairs), and no stall: only the red light under test may stop.
const CONFIG: &str = "defaults:\n  pairs: 3\n  calibration_pairs: 3\n  stall_after: 1000\n";

/// Knob-independent metric: seeded uniform ±1% noise around 100.
fn noop_bench() -> String {
    bench("100", 0.02)
}

/// A script agent whose PLAN answer is computed from the iteration number by
/// `$PLAN_X` (the knob value), `$PLAN_DIR` (the declared direction) and the
/// fixed prediction `$PLAN_EFFECT ± $PLAN_SD`. EXECUTE changes nothing else.
const AGENT: &str = r#"#!/bin/sh
cat > /dev/null
i=$OODA_ITERATION
case "$OODA_PHASE" in
  plan)
    x=$(awk -v i="$i" "BEGIN { print $PLAN_X }")
    dir=$(awk -v i="$i" "BEGIN { print $PLAN_DIR }")
    printf '{"hypothesis": "try X=%s (attempt %s)", "change": "X to %s", "cites": [%s], "axes": [{"name": "X", "direction": "%s"}], "predicted_effect": %s, "predicted_sd": %s, "knobs": {"X": %s}}' "$x" "$i" "$x" "$((i - 1))" "$dir" "$PLAN_EFFECT" "$PLAN_SD" "$x" > "$OODA_OUTPUT_FILE"
    ;;
  execute) echo "set X" ;;
  learn) printf '{"patterns": [], "next": "go on"}' > "$OODA_OUTPUT_FILE" ;;
esac
"#;

struct Scenario<'a> {
    bench: &'a str,
    x: &'a str,
    dir: &'a str,
    effect: &'a str,
    sd: &'a str,
}

fn night(s: Scenario) -> Test {
    let (t, r) = night_of(s, "30");
    assert_eq!(
        r.code, 3,
        "expected a red light\n{}\n{}",
        r.stdout, r.stderr
    );
    t
}

/// A scenario's night of at most `max` iterations, and how `run` ended.
fn night_of(s: Scenario, max: &str) -> (Test, crate::test::Run) {
    let t = Test::new();
    t.write("ooda.yaml", CONFIG);
    t.script("bench.sh", s.bench);
    t.script("ooda-agent.sh", AGENT);
    t.brief(
        "r",
        &knob_brief("")
            .replace("agent: builtin", "agent: script")
            .replace("int: [10, 80], default: 10", "int: [1, 200], default: 10"),
    );
    t.commit("red light scenario");
    let env = [
        ("PLAN_X", s.x),
        ("PLAN_DIR", s.dir),
        ("PLAN_EFFECT", s.effect),
        ("PLAN_SD", s.sd),
    ];
    let r = t.ooda_env(&["run", "r", "--max-iterations", max], &env);
    (t, r)
}

fn stopped(t: &Test) -> (u32, String, String) {
    let last = *t.iterations("r").last().unwrap();
    let stop = t
        .record("r", last)
        .stop
        .expect("the last iteration carries the stop");
    (last, stop.reason.as_str().to_string(), stop.detail)
}

#[test]
fn flip_flopping_a_knob_is_red_oscillation_within_sixteen_iterations() {
    // X alternates around 40 with a growing distance: directions reverse every
    // time and the steps never shrink (no magnitudes are declared).
    let t = night(Scenario {
        bench: &noop_bench(),
        x: "40 + (i % 2 == 0 ? 1 : -1) * (5 + i)",
        dir: "(i % 2 == 0) ? \"up\" : \"down\"",
        effect: "0.0",
        sd: "0.05",
    });
    let (last, reason, detail) = stopped(&t);
    assert_eq!(reason, "red_oscillation", "{detail}");
    assert_eq!(last, 16, "flip_window = 16 changes");
    assert!(detail.contains("axis X"), "{detail}");
    let summary = t.read("iterations/r/summary.md");
    assert!(summary.contains("RED — red_oscillation"), "{summary}");
    // Later ticks refuse until a human acknowledges, then the loop runs again.
    let refused = t.ooda(&["tick", "r"]).expect(3);
    assert!(
        refused.stderr.contains("red_oscillation") && refused.stderr.contains("ooda ack r"),
        "{}",
        refused.stderr
    );
    let acked = t
        .ooda(&["ack", "r", "--note", "looked at it", "--json"])
        .expect(0);
    let doc: serde_json::Value = serde_json::from_str(&acked.stdout).unwrap();
    assert_eq!(doc["acknowledged"], true, "{doc}");
    let again = t.ooda(&["ack", "r", "--json"]).expect(0);
    let doc: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(doc["acknowledged"], false, "{doc}");
    let env = [
        ("PLAN_X", "100 + i"),
        ("PLAN_DIR", "\"up\""),
        ("PLAN_EFFECT", "0.0"),
        ("PLAN_SD", "0.05"),
    ];
    t.ooda_env(&["tick", "r"], &env).expect(0);
    assert!(
        t.record("r", 17)
            .acknowledged
            .unwrap()
            .contains("looked at it")
    );
}

#[test]
fn making_every_change_worse_is_red_divergence_within_twelve_iterations() {
    // The metric grows with X; the agent raises X every time, predicting
    // nothing (0, "no idea", still counts): every candidate is a significant
    // regression, and a worse one each time.
    let worse = bench("100 + 2 * x", 0.02);
    let t = night(Scenario {
        bench: &worse,
        x: "10 + 5 * i",
        dir: "\"up\"",
        effect: "0.0",
        sd: "1.0",
    });
    let (last, reason, detail) = stopped(&t);
    assert_eq!(reason, "red_divergence", "{detail}");
    assert_eq!(last, 12, "trend_window = 12 measured iterations");
    assert!(detail.contains("significantly worse"), "{detail}");
    for i in 1..=12 {
        assert_eq!(t.record("r", i).verdict, Verdict::Discard);
    }
}

#[test]
fn exploring_points_predicted_worse_is_not_divergence() {
    // The same night, but each step is an exploration the agent expects to
    // be worse: finding it worse is calibration, and the night goes on past
    // the 12 iterations that made the night above RED.
    let worse = bench("100 + 2 * x", 0.02);
    let (t, r) = night_of(
        Scenario {
            bench: &worse,
            x: "10 + 5 * i",
            dir: "\"up\"",
            effect: "-0.3",
            sd: "1.0",
        },
        "14",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(t.iterations("r").len(), 15);
    assert!(t.state("r")["stop"].is_null(), "{}", t.state("r"));
    for i in 1..=14 {
        let rec = t.record("r", i);
        assert_eq!(
            rec.discard,
            Some(ooda::testing::model::DiscardKind::Worse),
            "{i}"
        );
    }
}

#[test]
fn promising_gains_that_never_come_is_red_model_mismatch_within_ten_iterations() {
    let t = night(Scenario {
        bench: &noop_bench(),
        x: "10 + i",
        dir: "\"up\"",
        effect: "0.2",
        sd: "0.05",
    });
    let (last, reason, detail) = stopped(&t);
    assert_eq!(reason, "red_model_mismatch", "{detail}");
    assert_eq!(last, 10, "mismatch_window = 10 predictions");
    assert!(detail.contains("optimistic"), "{detail}");
    t.ooda(&["tick", "r"]).expect(3);
    // From cron there is no $USER: git's user.name says who acknowledged.
    t.git(&["config", "user.name", "Night Owl"]);
    let out = t
        .command(&["ack", "r"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("Acknowledged by Night Owl at"), "{said}");
    let env = [
        ("PLAN_X", "100 + i"),
        ("PLAN_DIR", "\"up\""),
        ("PLAN_EFFECT", "0.0"),
        ("PLAN_SD", "0.05"),
    ];
    t.ooda_env(&["tick", "r"], &env).expect(0);
    assert_eq!(t.iterations("r").len(), 12);
}

#[test]
fn a_slower_machine_with_nothing_kept_is_yellow_not_red() {
    // Every run is 0.2% slower than the one before: the re-measured base trends
    // up although nothing changes. With no keep, that can only be the machine.
    let drifting = bench("100 * (1 + 0.002 * n)", 0.02);
    let t = Test::new();
    // One look of 3 pairs tests at the full α: a strict α keeps the
    // no-ops of this night from being kept by chance (the light is about
    // a night with nothing kept).
    t.write("ooda.yaml", &format!("{CONFIG}  alpha: 0.01\n"));
    t.script("bench.sh", &drifting);
    t.brief("d", &knob_brief("budget: { iterations: 14 }\n"));
    t.commit("drift");
    t.ooda(&["run", "d"]).expect(4);
    let alarms: Vec<_> = (1..=14).flat_map(|i| t.record("d", i).alarms).collect();
    let drift = alarms
        .iter()
        .find(|a| a.kind.as_str() == "machine_drift")
        .expect("a machine_drift warning");
    assert!(
        drift.evidence.contains("Mann-Kendall"),
        "{}",
        drift.evidence
    );
    assert!(
        t.read("iterations/d/summary.md")
            .contains("YELLOW machine_drift")
    );
}

#[test]
fn stalled_is_a_plain_stop_with_exit_zero() {
    let t = Test::new();
    t.write(
        "ooda.yaml",
        "defaults:\n  pairs: 3\n  calibration_pairs: 3\n  stall_after: 3\n",
    );
    t.script("bench.sh", &noop_bench());
    t.brief("s", &knob_brief(""));
    t.commit("stall");
    let r = t.ooda(&["run", "s"]).expect(0);
    assert!(r.stdout.contains("stalled"), "{}", r.stdout);
    assert!(t.read("iterations/s/summary.md").contains("DONE — stalled"));
    // Nothing to do afterwards, still exit 0.
    let again = t.ooda(&["tick", "s"]).expect(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
}

#[test]
fn the_wall_clock_budget_stops_with_exit_four() {
    let t = Test::new();
    t.brief("w", &knob_brief("budget: { wall: 1s }\n"));
    t.commit("wall");
    t.ooda(&["tick", "w"]).expect(0);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let r = t.ooda(&["tick", "w"]).expect(4);
    assert!(r.stdout.contains("budget_wall"), "{}", r.stdout);
    // Raising the budget lets the run continue.
    t.brief("w", &knob_brief("budget: { wall: 1h }\n"));
    t.ooda(&["tick", "w"]).expect(0);
}

/// A claude-json fake that reports 1,000 tokens and $0.25 per call.
fn claude_night(budget: &str) -> Test {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/agent-outputs/claude-json.json")).unwrap();
    let t = Test::new();
    let out = |answer: &str| {
        let mut v = fixture.clone();
        v["result"] = format!("```ooda\n{answer}\n```").into();
        v["total_cost_usd"] = 0.25.into();
        v["usage"] = serde_json::json!({"input_tokens": 600, "output_tokens": 400});
        v.to_string()
    };
    let plan = out(
        r#"{"hypothesis": "X=30 is better (attempt $OODA_ITERATION)", "change": "X", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.1, "predicted_sd": 0.1, "knobs": {"X": 30}}"#,
    );
    let execute = out(r#"{"change": "set X"}"#);
    let learn = out(r#"{"patterns": []}"#);
    t.write("plan.out", &plan);
    t.write("execute.out", &execute);
    t.write("learn.out", &learn);
    t.script(
        "agent.sh",
        "#!/bin/sh\ncat > /dev/null\ncat \"$OODA_TEST_DIR/$OODA_PHASE.out\"\n",
    );
    t.ignore(&["/plan.out", "/execute.out", "/learn.out"]);
    t.write(
        "ooda.yaml",
        &format!(
            "{}agents:\n  fake: {{command: [./agent.sh], format: claude-json, timeout: 20s}}\n",
            crate::test::QUIET_CONFIG
        ),
    );
    t.brief(
        "c",
        &knob_brief(budget).replace("agent: builtin", "agent: fake"),
    );
    t.commit("claude fake");
    t
}

#[test]
fn the_cost_budget_stops_after_the_iteration_that_used_it() {
    let t = claude_night("budget: { cost_usd: 0.5 }\n");
    let r = t.ooda(&["run", "c"]).expect(4);
    assert!(r.stdout.contains("budget_cost"), "{}", r.stdout);
    // PLAN and EXECUTE at $0.25 each use the budget during iteration 1: it is
    // not measured (the budget is enforced before EVALUATE) but archived.
    assert_eq!(t.iterations("c"), vec![0, 1]);
    let r1 = t.record("c", 1);
    assert!((r1.cost_usd - 0.5).abs() < 1e-9, "{}", r1.cost_usd);
    assert_eq!(r1.verdict, Verdict::Invalid);
    assert!(
        r1.reason
            .starts_with("budget reached before EVALUATE: budget_cost"),
        "{}",
        r1.reason
    );
    assert!(r1.measured.is_none());
}

#[test]
fn the_token_budget_stops_after_the_iteration_that_used_it() {
    let t = claude_night("budget: { tokens: 2k }\n");
    let r = t.ooda(&["run", "c"]).expect(4);
    assert!(r.stdout.contains("budget_tokens"), "{}", r.stdout);
    assert_eq!(t.iterations("c"), vec![0, 1]);
}

/// Cand guards fail from iteration 2 on: after a keep, five failures in a row.
const FAILS_FROM_TWO: &str = "#!/bin/sh\n[ \"$OODA_SIDE\" = cand ] && [ \"$OODA_ITERATION\" -ge 2 ] && { echo 'guard says no' >&2; exit 1; }\nexit 0\n";

#[test]
fn a_red_stop_still_confirms_the_gain_kept_before_it() {
    let t = Test::new();
    t.write("ooda.yaml", CONFIG);
    t.script("bench.sh", &crate::test::gain_bench());
    t.script("guard.sh", FAILS_FROM_TWO);
    t.brief(
        "f",
        &crate::test::side_env(&knob_brief("guards: [./guard.sh]\n").replace(
            "  protect: [\"bench.sh\"]",
            "  protect: [\"bench.sh\", \"guard.sh\"]",
        )),
    );
    t.commit("guarded");
    let r = t.ooda(&["run", "f"]).expect(3);
    assert!(r.stdout.contains("red_failure_streak"), "{}", r.stdout);
    assert_eq!(t.record("f", 1).verdict, Verdict::Keep);
    let last = *t.iterations("f").last().unwrap();
    let c = t
        .record("f", last)
        .confirmation
        .expect("the RED stop ran a confirmation test");
    assert!(c.ci.0 > 0.0, "{:?}", c.ci);
    assert!(c.pairs.len() <= 20);
    let summary = t.read("iterations/f/summary.md");
    assert!(summary.contains("RED"), "{summary}");
    assert!(
        summary.contains(&format!(
            "**confirmed gain** (start vs best, after iteration {last})"
        )),
        "{summary}"
    );
}

#[test]
fn a_wall_budget_stop_confirms_past_the_wall() {
    let t = Test::new();
    t.write("ooda.yaml", crate::test::QUIET_CONFIG);
    t.script("bench.sh", &crate::test::gain_bench());
    // Long enough that two ticks end inside it on a loaded machine.
    t.brief("w", &knob_brief("budget: { wall: 8s }\n"));
    t.commit("wall");
    let start = std::time::Instant::now();
    t.ooda(&["tick", "w"]).expect(0);
    t.ooda(&["tick", "w"]).expect(0);
    assert_eq!(
        t.record("w", 1).verdict,
        Verdict::Keep,
        "{}",
        t.record("w", 1).reason
    );
    std::thread::sleep(
        std::time::Duration::from_secs(8).saturating_sub(start.elapsed())
            + std::time::Duration::from_millis(200),
    );
    let r = t.ooda(&["tick", "w"]).expect(4);
    assert!(r.stdout.contains("budget_wall"), "{}", r.stdout);
    let rec = t.record("w", 1);
    assert!(
        rec.confirmation.is_some(),
        "the wall stop confirmed the keep"
    );
    assert_eq!(rec.stop.unwrap().reason.as_str(), "budget_wall");
    assert!(
        t.read("iterations/w/summary.md")
            .contains("**confirmed gain**")
    );
}

#[test]
fn a_confirmation_that_cannot_be_measured_says_why_in_the_summary() {
    let t = Test::new();
    t.write("ooda.yaml", crate::test::QUIET_CONFIG);
    t.script(
        "bench.sh",
        &crate::test::bench_after(
            "[ \"$OODA_SIDE\" = anchor ] && { echo 'no such input' >&2; exit 1; }\n",
            crate::test::ANY_MOVE_GAINS,
            0.02,
        ),
    );
    t.brief(
        "c",
        &crate::test::side_env(&knob_brief("budget: { iterations: 1 }\n")),
    );
    t.commit("anchor fails");
    t.ooda(&["run", "c"]).expect(4);
    let rec = t.record("c", 1);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", rec.reason);
    assert!(rec.confirmation.is_none());
    let why = rec.confirmation_failed.expect("the failure is recorded");
    assert!(why.contains("exited with code 1"), "{why}");
    let summary = t.read("iterations/c/summary.md");
    assert!(
        summary.contains("| confirmed gain | could not be measured after iteration 1: metric command `./bench.sh` exited with code 1"),
        "{summary}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&t.read("iterations/c/summary.json")).unwrap();
    assert_eq!(json["confirmation_failed"]["after_iteration"], 1);
    // Tried once: the stop does not run the failing test a second time.
    let started = t
        .events("c")
        .iter()
        .filter(|e| e["type"] == "confirmation_started")
        .count();
    assert_eq!(started, 1);
    assert!(json["confirmed"].is_null());
}
