//! A Brief that runs for months: the event log sealed without losing the
//! trace, `ooda gc` giving back disk, `ooda status` saying what is used.

use crate::test::*;

/// A Brief whose setup leaves a git-ignored build output in each worktree.
fn building_brief() -> String {
    knob_brief("").replace(
        "  timeout: 20s\n",
        "  timeout: 20s\n  setup: mkdir -p build && head -c 200000 /dev/zero > build/out.bin\n",
    )
}

fn spans(t: &Test, brief: &str) -> usize {
    t.ooda(&["export", brief, "--otlp", "-"])
        .expect(0)
        .stdout
        .lines()
        .map(|l| l.matches("\"spanId\"").count())
        .sum()
}

#[test]
fn a_large_event_log_is_sealed_and_every_reader_of_the_trace_still_sees_all_of_it() {
    let t = Test::new();
    t.write(
        "ooda.yaml",
        &format!("{QUIET_CONFIG}  events_segment: 1MiB\nanomalies:\n  budget_used: 0.2\n"),
    );
    t.brief("z", &knob_brief("budget: { iterations: 20 }\n"));
    t.commit("brief");
    for _ in 0..5 {
        t.ooda(&["tick", "z"]).expect(0);
    }
    let budget_near = |t: &Test| {
        let all = ooda::testing::events::read_all(&t.path().join("iterations/z")).unwrap();
        all.iter()
            .filter(|r| {
                r.run_id != "older"
                    && matches!(&r.event, ooda::testing::events::Event::AnomalyFound { rule, .. } if rule == "budget_near")
            })
            .count()
    };
    assert_eq!(budget_near(&t), 1, "4 of 20 iterations is past 20%");
    let log = t.path().join("iterations/z/events.jsonl");
    let ours = std::fs::read_to_string(&log).unwrap();
    // An older run before it, as a month of nights would leave: its own
    // run id and event ids, so the trace holds two runs.
    let mut older = String::new();
    let mut k = 0;
    while older.len() < 1_200_000 {
        for line in ours.lines() {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            v["run_id"] = "older".into();
            for f in ["id", "parent_id"] {
                if let Some(id) = v[f].as_str() {
                    v[f] = format!("old{k}-{id}").into();
                }
            }
            older.push_str(&v.to_string());
            older.push('\n');
        }
        k += 1;
    }
    std::fs::write(&log, format!("{older}{ours}")).unwrap();
    let trace_before = t.ooda(&["trace", "z", "1"]).expect(0).stdout;
    let spans_before = spans(&t, "z");

    t.ooda(&["tick", "z"]).expect(0);
    let sealed = t.path().join("iterations/z/events/000001.jsonl.gz");
    assert!(sealed.exists(), "the log over 1 MiB was sealed");
    assert!(
        std::fs::metadata(&sealed).unwrap().len() < 300_000,
        "and compressed"
    );
    let live = std::fs::read_to_string(&log).unwrap();
    assert!(live.len() < ours.len(), "the live log holds this tick only");
    assert!(!live.contains("\"older\""));
    // Nothing the trace needs was lost: iteration 1's tree is drawn as it
    // was, and the export has every span it had, and this tick's.
    assert_eq!(t.ooda(&["trace", "z", "1"]).expect(0).stdout, trace_before);
    assert!(spans(&t, "z") > spans_before);
    // The summary says where its numbers start.
    let summary = t.read("iterations/z/summary.md");
    assert!(
        summary.contains("(the older ones are sealed in `events/`"),
        "{summary}"
    );
    // What the rules found before the seal stays found: the budget rule,
    // which looks at the whole history, does not log it again.
    assert_eq!(budget_near(&t), 1);
    assert!(summary.contains("budget_near"), "{summary}");
    // The next tick does not seal again, and reads on; the tasks of the
    // run are still shown.
    t.ooda(&["tick", "z"]).expect(0);
    assert!(!t.exists("iterations/z/events/000002.jsonl.gz"));
    assert_eq!(t.iterations("z"), (0..=6).collect::<Vec<u32>>());
    assert_eq!(budget_near(&t), 1);
    let tasks = t.ooda(&["status", "z", "--tasks"]).expect(0).stdout;
    assert!(tasks.contains("iteration 6"), "{tasks}");
}

#[test]
fn gc_frees_build_outputs_old_artifacts_and_replays_and_says_how_much() {
    let t = Test::new();
    t.write(".gitignore", &format!("{}build/\n", t.read(".gitignore")));
    t.write(
        "ooda.yaml",
        &format!("{QUIET_CONFIG}  keep_artifacts: all\n"),
    );
    t.brief("z", &building_brief());
    t.commit("brief");
    for _ in 0..6 {
        t.ooda(&["tick", "z"]).expect(0);
    }
    let discarded: Vec<u32> = t
        .iterations("z")
        .into_iter()
        .filter(|n| t.exists(&format!("iterations/z/artifacts/iter-{n:03}.diff")))
        .collect();
    assert!(!discarded.is_empty(), "some iteration was discarded");
    assert!(t.exists(".ooda/worktrees/z/base/build/out.bin"));

    // Status says what the Brief takes on disk.
    // As the last tick measured it (a walk at every status would cost a
    // metadata read per file of every build tree).
    let st = t.ooda(&["status", "z"]).expect(0).stdout;
    assert!(
        st.contains("\n  disk        ") && st.contains(", measured "),
        "{st}"
    );
    let js: serde_json::Value =
        serde_json::from_str(&t.ooda(&["--json", "status", "z"]).expect(0).stdout).unwrap();
    assert!(js[0]["worktree_bytes"].as_u64().unwrap() > 400_000, "{js}");
    assert!(js[0]["archive_bytes"].as_u64().unwrap() > 0, "{js}");

    // A dry run says what would go and removes nothing.
    let dry = t.ooda(&["gc", "z", "--dry-run"]).expect(0).stdout;
    assert!(dry.contains("z: would free "), "{dry}");
    assert!(dry.contains("build outputs in the worktrees"), "{dry}");
    assert!(
        !dry.contains("artifacts:"),
        "keep_artifacts: all keeps them: {dry}"
    );
    assert!(t.exists(".ooda/worktrees/z/base/build/out.bin"));

    // With a retention of 1, the artifacts of every discard before the latest iteration go.
    t.write("ooda.yaml", &format!("{QUIET_CONFIG}  keep_artifacts: 1\n"));
    let before = t.snapshot();
    let r = t.ooda(&["--json", "gc", "z"]).expect(0).stdout;
    let v: serde_json::Value = serde_json::from_str(&r).unwrap();
    let latest = *t.iterations("z").last().unwrap();
    let old: Vec<u32> = discarded.iter().copied().filter(|n| *n < latest).collect();
    let what: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["what"].as_str().unwrap())
        .collect();
    assert!(what.contains(&"worktree_outputs"), "{v}");
    assert_eq!(what.contains(&"artifacts"), !old.is_empty(), "{v}");
    assert!(v["freed"].as_u64().unwrap() >= 400_000, "{v}");
    for n in &old {
        assert!(!t.exists(&format!("iterations/z/artifacts/iter-{n:03}.diff")));
    }
    // The iteration files, the record, are all there.
    for n in t.iterations("z") {
        assert!(t.exists(&format!("iterations/z/iter-{n:03}.md")));
    }
    assert!(!t.exists(".ooda/worktrees/z/base/build/out.bin"));
    assert!(!t.exists(".ooda/worktrees/z/cand/build"));
    // The user's checkout, branch and refs are as they were.
    t.snapshot().assert_same(&before, "ooda gc");

    // Nothing more to free; and the next tick sets the base up again.
    let again = t.ooda(&["gc", "z"]).expect(0).stdout;
    assert!(again.contains("z: nothing to free"), "{again}");
    t.ooda(&["tick", "z"]).expect(0);
    assert!(t.exists(".ooda/worktrees/z/base/build/out.bin"));
}

#[test]
fn gc_never_takes_the_candidate_of_an_iteration_in_flight_nor_ooda_s_own_files() {
    let t = Test::new();
    // The knobs file is matched by an ignore pattern: it is still ooda's.
    t.write(
        ".gitignore",
        &format!("{}build/\n*.env\n", t.read(".gitignore")),
    );
    t.brief("z", &building_brief());
    t.commit("brief");
    t.ooda(&["tick", "z"]).expect(0);
    // Killed after EXECUTE: the candidate waits in cand for EVALUATE.
    t.ooda_env(&["tick", "z"], &[("OODA_FAILPOINT", "after:execute")]);
    assert!(
        t.state("z")["current"].is_object(),
        "an iteration is in flight"
    );
    let knobs = ".ooda/worktrees/z/cand/ooda.knobs.env";
    assert!(t.exists(knobs));
    let knobs_before = t.read(knobs);
    // A folder that is no worktree git knows of is left alone.
    t.write(".ooda/worktrees/z/stray/build/keep.bin", "x");
    let r = t.ooda(&["gc", "z"]).expect(0).stdout;
    assert!(r.contains("an iteration is in flight"), "{r}");
    assert!(
        r.contains("stray is not a worktree git knows of: left alone (ooda does not make it"),
        "{r}"
    );
    assert!(t.exists(".ooda/worktrees/z/stray/build/keep.bin"));
    assert_eq!(t.read(knobs), knobs_before);
    assert!(
        t.exists(".ooda/worktrees/z/cand/build/out.bin"),
        "cand untouched"
    );
    assert!(
        !t.exists(".ooda/worktrees/z/base/build/out.bin"),
        "base cleaned"
    );
    // The iteration resumes and is decided as it would have been.
    t.ooda(&["tick", "z"]).expect(0);
    let verdict = t.record("z", 1).verdict;
    assert!(
        matches!(
            verdict,
            ooda::testing::archive::history::Verdict::Keep
                | ooda::testing::archive::history::Verdict::Discard
        ),
        "{verdict:?}"
    );
    // Once archived, gc takes cand's build output but never its knobs
    // file (there after a keep; a discard's sync removed it).
    let had_knobs = t.exists(knobs);
    t.ooda(&["gc", "z"]).expect(0);
    assert!(!t.exists(".ooda/worktrees/z/cand/build"));
    assert_eq!(t.exists(knobs), had_knobs);
}

#[test]
fn each_tick_keeps_the_artifacts_of_exactly_the_last_keep_artifacts_iterations() {
    let t = Test::new();
    t.write("ooda.yaml", &format!("{QUIET_CONFIG}  keep_artifacts: 2\n"));
    t.brief("z", &knob_brief(""));
    t.commit("brief");
    // Iterations 1, 5 and 6 are discards (seed 1): the eighth tick moves
    // 5 out of the window.
    for _ in 0..8 {
        t.ooda(&["tick", "z"]).expect(0);
    }
    let latest = *t.iterations("z").last().unwrap();
    let with_diff: Vec<u32> = t
        .iterations("z")
        .into_iter()
        .filter(|n| t.exists(&format!("iterations/z/artifacts/iter-{n:03}.diff")))
        .filter(|n| {
            !matches!(
                t.record("z", *n).verdict,
                ooda::testing::archive::history::Verdict::Keep
                    | ooda::testing::archive::history::Verdict::Baseline
            )
        })
        .collect();
    assert!(
        with_diff.iter().all(|n| *n + 2 > latest),
        "only discards among the last 2 keep a diff: {with_diff:?} (latest {latest})"
    );
    // The tick left what gc would: nothing of the artifacts is left to prune.
    let v: serde_json::Value =
        serde_json::from_str(&t.ooda(&["--json", "gc", "z", "--dry-run"]).expect(0).stdout)
            .unwrap();
    assert!(
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["what"] != "artifacts"),
        "{v}"
    );
}
