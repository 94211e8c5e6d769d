use crate::test::{Test, knob_brief};

#[test]
fn a_knob_run_keeps_real_gains_on_the_branch_and_leaves_the_checkout_alone() {
    let t = Test::new();
    t.brief("speed", &knob_brief("budget: { iterations: 6 }\n"));
    t.commit("brief");
    let before = t.checkout_fingerprint();
    let start = t.git(&["rev-parse", "HEAD"]);

    let run = t.ooda(&["run", "speed"]).expect(4);
    assert!(run.stdout.contains("budget_iterations"), "{}", run.stdout);

    assert_eq!(t.iterations("speed"), (0..=6).collect::<Vec<_>>());
    let base = t.record("speed", 0);
    assert!(base.calibration.is_some());
    let keeps: Vec<_> = (1..=6)
        .map(|i| t.record("speed", i))
        .filter(|r| r.verdict == ooda::testing::archive::history::Verdict::Keep)
        .collect();
    assert!(!keeps.is_empty(), "the landscape has a 30%+ gain to find");
    // Every keep is a commit on the branch, in order, with the knobs file.
    let log = t.git(&["rev-list", "--reverse", &format!("{start}..ooda/speed")]);
    let commits: Vec<&str> = log.lines().collect();
    let kept: Vec<String> = keeps.iter().map(|r| r.commit.clone().unwrap()).collect();
    assert_eq!(commits, kept.iter().map(String::as_str).collect::<Vec<_>>());
    let last = keeps.last().unwrap();
    let env = t.git(&["show", "ooda/speed:ooda.knobs.env"]);
    assert!(env.contains(&format!("X={}", last.knobs["X"])), "{env}");
    // Discards keep their diff.
    for i in 1..=6 {
        let r = t.record("speed", i);
        if r.verdict == ooda::testing::archive::history::Verdict::Discard {
            let a = r.artifact.expect("discard has an artifact");
            assert!(
                t.read(&format!("iterations/speed/{a}"))
                    .contains("ooda.knobs.env")
            );
        }
    }
    let summary = t.read("iterations/speed/summary.md");
    assert!(summary.contains("STOPPED — budget_iterations"), "{summary}");
    assert!(
        summary.contains(&format!("git diff {}...ooda/speed", &start[..10])),
        "{summary}"
    );
    assert!(summary.contains("[6](iter-006.md)"));
    // The chart: titled with the headline, a marker per measured iteration
    // (1 to 6) beside the legend's, axis labels saying the direction.
    let svg = t.read("iterations/speed/progress.svg");
    let headline = summary
        .lines()
        .find_map(|l| l.strip_prefix("**Result:** "))
        .unwrap();
    assert!(headline.starts_with("confirmed gain +"), "{summary}");
    assert!(svg.contains("\nt: confirmed +"), "{svg}");
    assert!(svg.matches("<circle").count() > 6, "{svg}");
    assert!(svg.contains("\niteration\n</text>"), "{svg}");
    assert!(
        svg.contains("\ngain over the start, up is better (t lower is better)\n</text>"),
        "{svg}"
    );
    assert_eq!(
        t.checkout_fingerprint(),
        before,
        "the user's checkout changed"
    );

    // Events form a tree: every parent id names an earlier event.
    let events = t.events("speed");
    let ids: std::collections::HashSet<String> = events
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    for e in &events {
        if let Some(p) = e["parent_id"].as_str() {
            assert!(ids.contains(p), "dangling parent in {e}");
        }
    }
    for ty in [
        "run_started",
        "iteration_started",
        "phase_started",
        "checkpoint",
        "plan",
        "measurement",
        "decision",
        "verdict",
        "learn_archived",
        "run_finished",
    ] {
        assert!(events.iter().any(|e| e["type"] == ty), "no {ty} event");
    }

    // A stopped run stays stopped: the next tick exits 4 and does nothing.
    t.ooda(&["tick", "speed"]).expect(4);
    assert_eq!(t.iterations("speed").len(), 7);
}

#[test]
fn tick_does_exactly_one_iteration() {
    let t = Test::new();
    t.brief("one", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "one"]).expect(0);
    assert_eq!(t.iterations("one"), vec![0]);
    let r = t.ooda(&["tick", "one", "--json"]).expect(0);
    // JSON Lines: the iteration, then the result.
    let lines: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", r.stdout);
    assert_eq!(lines[0]["iteration"], 1);
    assert_eq!(lines[1]["outcome"], "result");
    assert_eq!(lines[1]["summary"], "iterations/one/summary.md");
    assert!(lines[1]["headline"]["kind"].is_string(), "{}", r.stdout);
    assert_eq!(t.iterations("one"), vec![0, 1]);
    assert_eq!(t.state("one")["next_iteration"], 2);
}

#[test]
fn a_crashing_candidate_is_a_crash() {
    let t = Test::new();
    t.script("bench.sh", &crate::test::bench_after("if [ \"$OODA_ITERATION\" != 0 ] && [ \"$OODA_SIDE\" = cand ]; then echo 'panicked at kernel' >&2; exit 3; fi\n", "100", 0.01));
    t.brief("c", &crate::test::side_env(&knob_brief("")));
    t.commit("brief");
    t.ooda(&["tick", "c"]).expect(0);
    t.ooda(&["tick", "c"]).expect(0);
    let r = t.record("c", 1);
    assert_eq!(r.verdict, ooda::testing::archive::history::Verdict::Crash);
    assert!(r.reason.contains("exited with code 3"), "{}", r.reason);
    assert!(r.failure_output.unwrap().contains("panicked at kernel"));
    assert!(r.measured.is_none());
}

#[test]
fn failing_guards_are_invalid_unmeasured_and_five_in_a_row_are_red_until_ack() {
    let t = Test::new();
    t.script("guard.sh", "#!/bin/sh\nif [ \"$OODA_SIDE\" = cand ]; then echo 'error: guard says no' >&2; exit 1; fi\n");
    let brief = knob_brief("").replace(
        "agent: builtin\n",
        "agent: builtin\nguards: [\"./guard.sh\"]\n",
    );
    t.brief("g", &crate::test::side_env(&brief));
    t.commit("brief");
    let run = t.ooda(&["run", "g"]).expect(3);
    assert!(run.stdout.contains("red_failure_streak"), "{}", run.stdout);
    assert_eq!(t.iterations("g"), (0..=5).collect::<Vec<_>>());
    for i in 1..=5 {
        let r = t.record("g", i);
        assert_eq!(r.verdict, ooda::testing::archive::history::Verdict::Invalid);
        assert!(r.measured.is_none(), "an invalid candidate was measured");
        assert!(
            r.failure_output
                .as_deref()
                .unwrap_or("")
                .contains("guard says no")
        );
    }
    assert_eq!(
        t.record("g", 5).stop.unwrap().reason.as_str(),
        "red_failure_streak"
    );
    assert!(
        t.read("iterations/g/summary.md")
            .contains("RED — red_failure_streak")
    );
    let refused = t.ooda(&["tick", "g"]).expect(3);
    assert!(refused.stderr.contains("ooda ack g"), "{}", refused.stderr);
    assert_eq!(t.iterations("g").len(), 6);

    t.ooda(&["ack", "g", "--note", "guard fixed"]).expect(0);
    t.ooda(&["tick", "g"]).expect(0);
    let r = t.record("g", 6);
    assert!(r.acknowledged.unwrap().contains("guard fixed"));
}

/// Quiet by default (issue 46): a night written to a file is a line per
/// iteration and the stop on stdout, the result last, and nothing routine
/// on stderr; a tick is two lines; `ooda status` is one line of at most
/// 120 characters per Brief. With `-v` every phase is a line again.
#[test]
fn a_night_to_a_log_is_a_line_per_iteration_and_ends_with_the_result() {
    let t = Test::new();
    t.brief("q", &knob_brief("budget: { iterations: 6 }\n"));
    t.brief(
        "a-second-brief-with-a-long-name",
        &knob_brief("budget: { iterations: 6 }\n"),
    );
    t.commit("two Briefs");
    let r = t.ooda(&["run", "q"]);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    let lines = r.stdout.lines().count() + r.stderr.lines().count();
    assert!(
        lines <= 2 * 6,
        "{lines} lines for 6 iterations:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    let last = r.stdout.lines().last().unwrap();
    assert!(
        last.starts_with("q: ") && last.ends_with(" — iterations/q/summary.md"),
        "{last}"
    );
    // The same result as the report's first line and status.
    let summary = t.read("iterations/q/summary.md");
    let result = summary
        .lines()
        .find_map(|l| l.strip_prefix("**Result:** "))
        .unwrap();
    let short = last
        .strip_prefix("q: ")
        .unwrap()
        .split(" — ")
        .next()
        .unwrap()
        .split(", ")
        .skip(1)
        .collect::<Vec<_>>()
        .join(", ");
    let number = short.split_once(' ').map(|(_, n)| n).unwrap();
    assert!(result.contains(number), "{result} vs {last}");
    t.ooda(&["tick", "a-second-brief-with-a-long-name"])
        .expect(0);
    let tick = t
        .ooda(&["tick", "a-second-brief-with-a-long-name"])
        .expect(0);
    assert_eq!(
        tick.stdout.lines().count() + tick.stderr.lines().count(),
        2,
        "{}{}",
        tick.stdout,
        tick.stderr
    );
    let status = t.ooda(&["status", "--color", "never"]).expect(0).stdout;
    assert_eq!(status.lines().count(), 2, "{status}");
    for l in status.lines() {
        assert!(l.chars().count() <= 120, "{} chars: {l}", l.chars().count());
    }
    assert!(status.contains(number), "{status}");
    // -v: every phase is a timestamped line again.
    let v = t
        .ooda(&["-v", "tick", "a-second-brief-with-a-long-name"])
        .expect(0);
    assert!(v.stderr.contains("iteration 2: PLAN"), "{}", v.stderr);
}
