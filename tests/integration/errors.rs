//! Bad input gets a clear message naming the file, line or key, and the
//! exit code; nothing already archived is lost.

use std::fs::OpenOptions;
use std::io::Write;

use crate::test::{Test, knob_brief};

#[test]
fn malformed_briefs_are_reported_all_at_once_with_file_and_line() {
    let t = Test::new();
    let text = knob_brief("")
        .replace("direction: minimize", "direction: fastest")
        .replace("timeout: 20s", "timeout: 5 minutes")
        .replace("# Success\nt drops.\n\n", "");
    t.brief("bad", &text);
    let r = t.ooda(&["check", "bad"]).expect(2);
    let err = r.stderr;
    assert!(
        err.contains("briefs/bad.md:5") && err.contains("metric.direction"),
        "{err}"
    );
    assert!(err.contains("metric.timeout"), "{err}");
    assert!(err.contains("Success"), "{err}");
    // tick refuses the same Brief with the same message, before touching git.
    let r = t.ooda(&["tick", "bad"]).expect(2);
    assert!(r.stderr.contains("metric.direction"));
    assert!(!t.exists(".ooda"));
}

#[test]
fn unknown_key_suggests_the_right_one() {
    let t = Test::new();
    t.brief("typo", &knob_brief("").replace("scope:", "scopes:"));
    let r = t.ooda(&["check", "typo"]).expect(2);
    assert!(
        r.stderr.contains("scopes") && r.stderr.contains("scope"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_unknown_agent_profile_is_refused_clearly() {
    let t = Test::new();
    t.brief(
        "ai",
        &knob_brief("").replace("agent: builtin", "agent: cluade"),
    );
    t.commit("brief");
    let r = t.ooda(&["tick", "ai"]).expect(2);
    assert!(
        r.stderr.contains(
            "briefs/ai.md:12: agent: `cluade` is not an agent profile (did you mean `claude`?)"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn a_second_tick_is_busy_with_the_holder_named() {
    let t = Test::new();
    t.brief("b", &knob_brief(""));
    t.commit("brief");
    std::fs::create_dir_all(t.path().join("iterations/b")).unwrap();
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(t.path().join("iterations/b/.lock"))
        .unwrap();
    f.try_lock().unwrap();
    f.write_all(b"pid 4242 since 2026-11-29T23:00:00Z\n")
        .unwrap();
    let r = t.ooda(&["tick", "b"]).expect(5);
    assert!(
        r.stderr
            .contains("busy: held by pid 4242 since 2026-11-29T23:00:00Z"),
        "{}",
        r.stderr
    );
    drop(f);
    t.ooda(&["tick", "b"]).expect(0);
}

#[test]
fn a_damaged_iteration_file_is_named_and_nothing_is_overwritten() {
    let t = Test::new();
    t.brief("d", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "d"]).expect(0);
    t.ooda(&["tick", "d"]).expect(0);
    t.write("iterations/d/iter-001.md", "---\niteration: [oops\n---\n");
    let r = t.ooda(&["tick", "d"]).expect(1);
    assert!(r.stderr.contains("iter-001.md"), "{}", r.stderr);
    assert_eq!(t.iterations("d"), vec![0, 1]);
    assert_eq!(
        t.read("iterations/d/iter-001.md"),
        "---\niteration: [oops\n---\n"
    );
}

#[test]
fn a_baseline_that_cannot_be_measured_says_how_to_fix_it() {
    let t = Test::new();
    t.script("bench.sh", "#!/bin/sh\necho 'no metric here'\n");
    t.brief("m", &knob_brief(""));
    t.commit("brief");
    let r = t.ooda(&["tick", "m"]).expect(2);
    assert!(
        r.stderr.contains("METRIC") || r.stderr.contains("metric"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ooda check m --measure 3"),
        "{}",
        r.stderr
    );
    assert!(t.iterations("m").is_empty());
}

#[test]
fn a_deleted_archive_is_never_baselined_over() {
    let t = Test::new();
    t.script("bench.sh", &crate::test::gain_bench());
    t.brief("lost", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "lost"]).expect(0);
    t.ooda(&["tick", "lost"]).expect(0);
    assert_eq!(
        t.record("lost", 1).verdict,
        ooda::testing::archive::history::Verdict::Keep
    );
    // What `rm -rf $OODA_ITERATIONS_DIR/*` does.
    for e in std::fs::read_dir(t.path().join("iterations/lost")).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    let tip = t.git(&["rev-parse", "ooda/lost"]);
    let r = t.ooda(&["tick", "lost"]).expect(1);
    assert!(
        r.stderr
            .contains("no iteration files, but branch ooda/lost already exists")
            && r.stderr
                .contains("Restore the earlier iterations/lost/ folder")
            && r.stderr.contains("`ooda reset lost`"),
        "{}",
        r.stderr
    );
    // Nothing was baselined over it, and the kept commit is where it was.
    assert!(t.iterations("lost").is_empty());
    assert_eq!(t.git(&["rev-parse", "ooda/lost"]), tip);
}

#[test]
fn a_second_metric_line_appended_by_the_candidate_is_a_crash_not_a_measurement() {
    let t = Test::new();
    // The candidate side prints a perfect number after the benchmark's own.
    let rigged = format!(
        "{}[ \"$OODA_SIDE\" = cand ] && [ \"$OODA_ITERATION\" != 0 ] && echo 'METRIC t=1'\nexit 0\n",
        crate::test::knob_bench()
    );
    t.script("bench.sh", &rigged);
    t.brief("r", &crate::test::side_env(&knob_brief("")));
    t.commit("brief");
    t.ooda(&["tick", "r"]).expect(0);
    t.ooda(&["tick", "r"]).expect(0);
    let rec = t.record("r", 1);
    assert_eq!(
        rec.verdict,
        ooda::testing::archive::history::Verdict::Crash,
        "{}",
        rec.reason
    );
    assert!(
        rec.reason
            .contains("`METRIC t` is printed 2 times with 2 different values"),
        "{}",
        rec.reason
    );
    assert!(rec.commit.is_none());
}

#[test]
fn a_hanging_command_times_out_as_a_crash() {
    let t = Test::new();
    t.script("bench.sh", &crate::test::bench_after("if [ \"$OODA_ITERATION\" != 0 ] && [ \"$OODA_SIDE\" = cand ]; then sleep 60 & wait; fi\n", crate::test::LANDSCAPE, 0.01));
    t.brief(
        "h",
        &crate::test::side_env(&knob_brief("").replace("timeout: 20s", "timeout: 1s")),
    );
    t.commit("brief");
    t.ooda(&["tick", "h"]).expect(0);
    t.ooda(&["tick", "h"]).expect(0);
    let r = t.record("h", 1);
    assert_eq!(r.verdict, ooda::testing::archive::history::Verdict::Crash);
    assert!(r.reason.contains("timed out"), "{}", r.reason);
}

#[test]
fn outside_a_git_repository_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ooda"))
        .args(["status"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("git init"));
}

#[test]
fn an_old_branch_without_history_is_not_overwritten() {
    let t = Test::new();
    t.brief("o", &knob_brief(""));
    t.commit("brief");
    t.git(&["branch", "ooda/o", "HEAD"]);
    t.write("src/lib.txt", "newer\n");
    t.commit("newer");
    // The branch holds nothing the checkout lacks: a leftover, not a lost
    // archive (that is `a_deleted_archive_is_never_baselined_over`).
    let r = t.ooda(&["tick", "o"]).expect(2);
    assert!(r.stderr.contains("ooda reset o"), "{}", r.stderr);
}

#[test]
fn trace_names_what_is_missing_and_how_to_get_it() {
    let t = Test::new();
    t.brief("b", &knob_brief(""));
    t.commit("a Brief");
    let r = t.ooda(&["trace", "b"]).expect(2);
    assert!(
        r.stderr.contains("events.jsonl") && r.stderr.contains("ooda tick b"),
        "{}",
        r.stderr
    );
    t.ooda(&["tick", "b"]).expect(0);
    let r = t.ooda(&["trace", "b", "3"]).expect(2);
    assert!(
        r.stderr.contains("iteration 3 is not in")
            && r.stderr.contains("it has iteration 0")
            && r.stderr.contains("`ooda trace b`"),
        "{}",
        r.stderr
    );
    let r = t.ooda(&["trace", "b", "0"]).expect(0);
    assert!(
        r.stdout.starts_with("iteration 0  baseline"),
        "{}",
        r.stdout
    );
    // An export written over the archive would replace the log it came from.
    let log = t.path().join("iterations/b/events.jsonl");
    let before = std::fs::read(&log).unwrap();
    std::fs::create_dir_all(t.path().join("iterations/other")).unwrap();
    for target in [
        "iterations/b/events.jsonl",
        "iterations/b/night.jsonl",
        "iterations/other/events.jsonl",
    ] {
        let r = t.ooda(&["export", "b", "--otlp", target]).expect(2);
        assert!(
            r.stderr.contains("where ooda keeps the archives") && r.stderr.contains("elsewhere"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(std::fs::read(&log).unwrap(), before, "the log is intact");
    let r = t.ooda(&["export", "b", "--otlp", "iterations"]).expect(2);
    assert!(r.stderr.contains("is a directory"), "{}", r.stderr);
    // Nor over a file that is not an earlier export (the Brief itself).
    let brief = t.read("briefs/b.md");
    let r = t.ooda(&["export", "b", "--otlp", "briefs/b.md"]).expect(2);
    assert!(r.stderr.contains("is not an OTLP export"), "{}", r.stderr);
    assert_eq!(t.read("briefs/b.md"), brief);
    let r = t
        .ooda(&["export", "b", "--otlp", "no/such/dir/x.jsonl"])
        .expect(2);
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
    let r = t
        .ooda(&["export", "b", "--otlp", "night.jsonl", "--json"])
        .expect(0);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["traces"], 1, "{doc}");
    // Again over the earlier export: fine.
    t.ooda(&["export", "b", "--otlp", "night.jsonl"]).expect(0);
    // A torn line is named, not silently dropped; a log that is gone is
    // told apart from a Brief that never ran.
    let mut text = before.clone();
    text.extend_from_slice(b"{\"ts\": \"2026-\n");
    std::fs::write(&log, &text).unwrap();
    let r = t.ooda(&["trace", "b"]).expect(0);
    assert!(
        r.stderr.contains("1 line(s) could not be read"),
        "{}",
        r.stderr
    );
    std::fs::remove_file(&log).unwrap();
    let r = t.ooda(&["trace", "b"]).expect(2);
    assert!(
        r.stderr
            .contains("the log is missing although 1 iteration file(s) are archived"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_metric_program_the_setup_builds_is_not_reported_missing() {
    let t = Test::new();
    let built = knob_brief("").replace(
        "  command: ./bench.sh\n",
        "  command: ./build/bench\n  setup: mkdir -p build && cp bench.sh build/bench\n",
    );
    t.brief("b", &built);
    t.brief(
        "typo",
        &knob_brief("").replace("command: ./bench.sh", "command: ./bnech.sh"),
    );
    // With a setup, a program that is there is still checked: not executable.
    t.write("notexec.sh", "#!/bin/sh\necho 'METRIC t=1'\n");
    t.brief(
        "noexec",
        &knob_brief("").replace(
            "  command: ./bench.sh\n",
            "  command: ./notexec.sh\n  setup: \"true\"\n",
        ),
    );
    t.commit("Briefs");
    let r = t.ooda(&["check", "b"]).expect(0);
    assert!(!r.stderr.contains("does not exist"), "{}", r.stderr);
    t.ooda(&["check", "b", "--measure", "2"]).expect(0);
    // Without a setup to build it, a missing program is named at once.
    let r = t.ooda(&["check", "typo"]).expect(2);
    assert!(
        r.stderr.contains("`./bnech.sh` does not exist"),
        "{}",
        r.stderr
    );
    let r = t.ooda(&["check", "noexec"]).expect(2);
    assert!(
        r.stderr.contains("`./notexec.sh` is not executable"),
        "{}",
        r.stderr
    );
}

#[test]
fn with_json_an_error_is_json_on_stdout_too() {
    let t = Test::new();
    t.write("ooda.yaml", "defaults: {alpha: 7}\n");
    let r = t.ooda(&["--json", "status"]).expect(2);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["exit"], 2, "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(msg.contains("ooda.yaml:1: defaults.alpha"), "{msg}");
    assert!(r.stderr.contains(msg), "{}", r.stderr);
    // Without --json stdout stays empty.
    assert_eq!(t.ooda(&["status"]).expect(2).stdout, "");
}
