//! Regressions found in review: each scenario once lost or corrupted work.

use crate::test::{Test, knob_brief};

fn keeps(t: &Test, brief: &str) -> Vec<ooda::testing::archive::history::IterationRecord> {
    t.records(brief)
        .into_iter()
        .skip(1)
        .filter(|r| r.verdict == ooda::testing::archive::history::Verdict::Keep)
        .collect()
}

#[test]
fn an_ignored_knobs_file_is_still_committed_with_each_keep() {
    let t = Test::new();
    t.ignore(&["*.env"]);
    t.brief("ig", &knob_brief("budget: { iterations: 4 }\n"));
    t.commit("brief");
    t.ooda(&["run", "ig"]).expect(4);
    let kept = keeps(&t, "ig");
    assert!(!kept.is_empty());
    let last = kept.last().unwrap();
    let env = t.git(&[
        "show",
        &format!("{}:ooda.knobs.env", last.commit.as_deref().unwrap()),
    ]);
    assert!(env.contains(&format!("X={}", last.knobs["X"])), "{env}");
}

#[test]
fn deleting_the_worktrees_after_a_keep_never_moves_the_branch_back() {
    let t = Test::new();
    t.script("bench.sh", &crate::test::gain_bench());
    t.brief("wt", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "wt"]).expect(0);
    // Any move is a big gain on this landscape: iteration 1 is a keep.
    let r = t.ooda_env(&["tick", "wt"], &[("OODA_FAILPOINT", "after:commit")]);
    assert_eq!(r.code, -1);
    std::fs::remove_dir_all(t.path().join(".ooda/worktrees")).unwrap();
    t.git(&["worktree", "prune"]);
    t.ooda(&["tick", "wt"]).expect(0);
    let kept = keeps(&t, "wt");
    assert!(!kept.is_empty(), "iteration 1 should be a keep");
    let tip = t.git(&["rev-parse", "ooda/wt"]);
    assert_eq!(Some(tip.as_str()), kept[0].commit.as_deref());
}

/// git's records of the worktrees (`.git/worktrees/*/{gitdir,commondir}`).
fn worktree_records(t: &Test) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(t.path().join(".git/worktrees")).unwrap() {
        let dir = e.unwrap().path();
        for f in ["gitdir", "commondir"] {
            let text = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            out.push(format!("{name}/{f}: {}", text.trim()));
        }
    }
    out.sort();
    out
}

/// A copied project carries git's records of the original's worktrees,
/// which name the original's folders and repository: the copy makes its
/// own, and the original is not touched (libgit2's prune would have
/// deleted its records, by the repository they name).
#[test]
fn a_copied_project_ticks_on_its_own_and_leaves_the_original_alone() {
    let t = Test::new();
    t.brief("cp", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "cp"]).expect(0);
    t.ooda(&["tick", "cp"]).expect(0);
    let (snapshot, refs, records) = (t.snapshot(), t.ooda_refs(), worktree_records(&t));
    let copy = t.copy();
    copy.ooda(&["tick", "cp"]).expect(0);
    assert_eq!(copy.iterations("cp"), vec![0, 1, 2]);
    t.snapshot().assert_same(&snapshot, "a tick in a copy");
    assert_eq!(t.ooda_refs(), refs);
    assert_eq!(worktree_records(&t), records);
    let own = copy.path().canonicalize().unwrap();
    for r in worktree_records(&copy) {
        if r.contains("/commondir: ") {
            assert!(r.ends_with(": ../.."), "{r}");
        } else {
            assert!(r.contains(&own.display().to_string()), "{r}");
        }
    }
    t.ooda(&["tick", "cp"]).expect(0);
    assert_eq!(t.iterations("cp"), vec![0, 1, 2]);
}

/// `ooda reset` in a copy removes the copy's worktrees, never the
/// original's (git's records in the copy name the original's folders).
#[test]
fn a_reset_in_a_copy_leaves_the_originals_worktrees() {
    let t = Test::new();
    t.brief("rc", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "rc"]).expect(0);
    let copy = t.copy();
    copy.ooda(&["reset", "rc", "--yes"]).expect(0);
    assert!(!copy.exists(".ooda/worktrees/rc/cand"));
    for which in ["cand", "base"] {
        assert!(
            t.exists(&format!(".ooda/worktrees/rc/{which}/bench.sh")),
            "{which}"
        );
    }
    t.ooda(&["tick", "rc"]).expect(0);
    assert_eq!(t.iterations("rc"), vec![0, 1]);
}

/// Two checkouts of one repository (a linked git worktree) running a Brief
/// of the same name share its branch and git's records: the second is
/// refused with what to do, and the first is left running.
#[test]
fn one_brief_name_in_two_checkouts_of_a_repository_is_refused() {
    let t = Test::new();
    t.brief("same", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "same"]).expect(0);
    let other = tempfile::tempdir().unwrap();
    let linked = other.path().join("wt");
    t.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "other",
        linked.to_str().unwrap(),
    ]);
    let out = t
        .command(&["tick", "same"])
        .current_dir(&linked)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("rename one of the two Briefs"), "{err}");
    t.ooda(&["tick", "same"]).expect(0);
    assert_eq!(t.iterations("same"), vec![0, 1]);
}

/// A moved project folder (here: a copy whose original is then deleted):
/// git itself works in it at once, before any tick (git's records of
/// ooda's worktrees name the repository relatively, as `git worktree add`
/// does, not by the old absolute path), and the next tick goes on.
#[test]
fn git_works_in_a_moved_project() {
    let t = Test::new();
    t.brief("mv", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "mv"]).expect(0);
    t.ooda(&["check", "mv", "--measure", "1"]).expect(0);
    let moved = t.copy();
    drop(t);
    moved.git(&["worktree", "list"]);
    moved.git(&["gc", "-q"]);
    moved.ooda(&["tick", "mv"]).expect(0);
    moved.git(&["worktree", "list"]);
    moved.git(&["gc", "-q"]);
    assert_eq!(moved.iterations("mv"), vec![0, 1]);
}

/// A knob range narrowed mid-run so that it no longer holds the run's
/// best: `check` names it as a problem and every tick says what to do
/// (widen the range back, or reset), not just which internal file failed.
#[test]
fn a_range_narrowed_past_the_best_says_what_to_do() {
    let t = Test::new();
    t.script("bench.sh", &crate::test::gain_bench());
    t.brief("nr", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "nr"]).expect(0);
    t.ooda(&["tick", "nr"]).expect(0);
    assert!(!keeps(&t, "nr").is_empty(), "iteration 1 should be a keep");
    let env = t.git(&["show", "ooda/nr:ooda.knobs.env"]);
    let v: i64 = env
        .lines()
        .find_map(|l| l.strip_prefix("X="))
        .unwrap()
        .parse()
        .unwrap();
    let range = if v < 80 {
        format!("[{}, 80], default: {}", v + 1, v + 1)
    } else {
        "[10, 79], default: 10".into()
    };
    t.brief(
        "nr",
        &knob_brief("").replace("[10, 80], default: 10", &range),
    );
    t.commit("narrowed");
    let r = t.ooda(&["check", "nr"]).expect(2);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("the run's best"), "{all}");
    assert!(
        all.contains(&format!("`{v}` is not a valid value for knob X")),
        "{all}"
    );
    assert!(all.contains("ooda reset nr"), "{all}");
    let r = t.ooda(&["tick", "nr"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("widen the range") && r.stderr.contains("ooda reset nr"),
        "{}",
        r.stderr
    );
}

/// A Brief renamed mid-run leaves its run behind under the old name:
/// `status` shows it and says what to do, and `report`, `trace` and `reset`
/// reach it by that name although its file is gone.
#[test]
fn a_run_whose_brief_was_renamed_is_still_reachable() {
    let t = Test::new();
    t.brief("old", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "old"]).expect(0);
    t.ooda(&["tick", "old"]).expect(0);
    t.git(&["mv", "briefs/old.md", "briefs/new.md"]);
    t.commit("renamed");
    let r = t.ooda(&["status"]).expect(0);
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("old "))
        .unwrap_or_default();
    assert!(
        line.contains("NO BRIEF") && line.contains("ooda status old"),
        "{}",
        r.stdout
    );
    let detail = t.ooda(&["status", "old"]).expect(0).stdout;
    assert!(detail.contains("ooda reset old"), "{detail}");
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("new ") && l.contains("NEW")),
        "{}",
        r.stdout
    );
    let one = t.ooda(&["status", "old", "--json"]).expect(0);
    assert!(one.stdout.contains("\"NO BRIEF\""), "{}", one.stdout);
    assert!(
        t.ooda(&["report", "old"])
            .expect(0)
            .stdout
            .contains("# old")
    );
    t.ooda(&["trace", "old"]).expect(0);
    t.ooda(&["reset", "old", "--yes"]).expect(0);
    assert!(!t.ooda(&["status"]).expect(0).stdout.contains("old "));
    assert!(t.git(&["branch", "--list", "ooda/old"]).is_empty());
    // A name with neither a Brief nor a run is still an error.
    let r = t.ooda(&["report", "nothing"]).expect(2);
    assert!(
        r.stderr.contains("no Brief named `nothing`"),
        "{}",
        r.stderr
    );
}

/// A branch `ooda/<brief>` left from an earlier run stops every tick
/// before a run exists; `status` says so instead of a quiet NEW.
#[test]
fn status_names_a_leftover_branch_that_stops_every_tick() {
    let t = Test::new();
    t.brief("lb", &knob_brief(""));
    t.commit("brief");
    t.git(&["branch", "ooda/lb", "HEAD~1"]);
    let r = t.ooda(&["tick", "lb"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("branch ooda/lb already exists"),
        "{}",
        r.stderr
    );
    let s = t.ooda(&["status"]).expect(0).stdout;
    let line = s.lines().find(|l| l.starts_with("lb ")).unwrap_or_default();
    assert!(
        line.contains("ERROR") && line.contains("branch ooda/lb already exists"),
        "{s}"
    );
    assert!(line.contains("ooda status lb"), "{s}");
    let detail = t.ooda(&["status", "lb"]).expect(0).stdout;
    assert!(detail.contains("ooda reset lb"), "{detail}");
    let c = t.ooda(&["check", "lb"]).expect(2);
    assert!(
        c.stdout.contains("branch ooda/lb already exists")
            || c.stderr.contains("branch ooda/lb already exists"),
        "{}{}",
        c.stdout,
        c.stderr
    );
}

#[test]
fn a_recreated_base_worktree_is_set_up_again() {
    let t = Test::new();
    // The bench is "built" by setup into an ignored folder.
    t.ignore(&["/out/"]);
    let brief = knob_brief("").replace(
        "command: ./bench.sh",
        "command: ./out/bench\n  setup: mkdir -p out && cp bench.sh out/bench",
    );
    t.brief("su", &brief);
    t.commit("brief");
    t.ooda(&["tick", "su"]).expect(0);
    t.ooda(&["tick", "su"]).expect(0);
    std::fs::remove_dir_all(t.path().join(".ooda/worktrees")).unwrap();
    t.git(&["worktree", "prune"]);
    t.ooda(&["tick", "su"]).expect(0);
    let r = t.record("su", 2);
    assert_ne!(
        r.verdict,
        ooda::testing::archive::history::Verdict::Crash,
        "{}",
        r.reason
    );
}

#[test]
fn a_dot_slash_knobs_file_is_ooda_s_own() {
    let t = Test::new();
    t.brief("ds", &knob_brief("knobs_file: ./k.env\n"));
    t.commit("brief");
    t.ooda(&["tick", "ds"]).expect(0);
    t.ooda(&["tick", "ds"]).expect(0);
    assert_ne!(
        t.record("ds", 1).verdict,
        ooda::testing::archive::history::Verdict::Blocked,
        "{}",
        t.record("ds", 1).reason
    );
}

#[test]
fn a_project_below_the_git_top_is_refused_clearly() {
    let t = Test::new();
    t.write("proj/ooda.yaml", "");
    t.write("proj/briefs/p.md", &knob_brief(""));
    t.commit("nested");
    // Every command says so first, `init` included (its .gitignore lines
    // would not cover the top), never a misleading "not committed".
    for args in [&["tick", "p"][..], &["check", "p"], &["init"], &["status"]] {
        let out = t
            .command(args)
            .current_dir(t.path().join("proj"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("not the top of its git work tree"),
            "{args:?}: {err}"
        );
        assert!(err.contains("cd proj && ./bench.sh"), "{args:?}: {err}");
    }
    assert!(!t.exists("proj/.gitignore"));
}

#[test]
fn a_deleted_iteration_file_is_named_not_silently_skipped() {
    let t = Test::new();
    t.brief("del", &knob_brief(""));
    t.commit("brief");
    for _ in 0..3 {
        t.ooda(&["tick", "del"]).expect(0);
    }
    std::fs::remove_file(t.path().join("iterations/del/iter-002.md")).unwrap();
    let r = t.ooda(&["tick", "del"]).expect(1);
    assert!(
        r.stderr.contains("iter-002.md") && r.stderr.contains("missing"),
        "{}",
        r.stderr
    );
    assert_eq!(t.iterations("del"), vec![0, 1]);
}

#[test]
fn a_baseline_killed_after_archiving_is_not_measured_again() {
    let t = Test::new();
    t.brief("b0", &knob_brief(""));
    t.commit("brief");
    let r = t.ooda_env(
        &["tick", "b0"],
        &[("OODA_FAILPOINT", "after:baseline-archived")],
    );
    assert_eq!(r.code, -1);
    let archived = t.read("iterations/b0/iter-000.md");
    let r = t.ooda(&["tick", "b0", "--json"]).expect(0);
    assert!(r.stdout.contains("\"iteration\":1"), "{}", r.stdout);
    assert_eq!(t.read("iterations/b0/iter-000.md"), archived);
}

/// PLAN/EXECUTE make a real gain (X 10 → 40); LEARN vandalizes the worktree
/// (a new file, the protected bench) and then hangs until interrupted.
const VANDAL: &str = r##"#!/bin/sh
cat > /dev/null
case "$OODA_PHASE" in
  plan) printf '{"hypothesis": "X=40", "change": "X", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.3, "predicted_sd": 0.2, "knobs": {"X": 40}}' > "$OODA_OUTPUT_FILE" ;;
  execute) echo "set X" ;;
  learn)
    echo evil > src/evil.txt
    echo "# tampered" >> bench.sh
    if [ ! -e "$MARKS/learned" ]; then touch "$MARKS/learning"; sleep 60; fi
    printf '{"patterns": []}' > "$OODA_OUTPUT_FILE"
    ;;
esac
"##;

#[test]
fn an_interrupted_learn_never_commits_what_the_agent_wrote_after_measuring() {
    let t = Test::new();
    t.script("ooda-agent.sh", VANDAL);
    t.brief(
        "v",
        &knob_brief("").replace("agent: builtin", "agent: script"),
    );
    // The agent's markers, outside the checkout, writable for it.
    let marks = tempfile::tempdir().unwrap();
    let marks_dir = marks.path().to_str().unwrap();
    t.write(
        "ooda.yaml",
        &format!("{}sandbox: {{writable: [$MARKS]}}\n", t.read("ooda.yaml")),
    );
    t.commit("vandal");
    t.ooda_env(&["tick", "v"], &[("MARKS", marks_dir)])
        .expect(0);
    let child = t
        .command(&["tick", "v"])
        .env("MARKS", marks_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !marks.path().join("learning").exists() {
        assert!(std::time::Instant::now() < deadline, "LEARN never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(marks.path().join("learned"), "").unwrap();
    t.ooda_env(&["tick", "v"], &[("MARKS", marks_dir)])
        .expect(0);
    let r = t.record("v", 1);
    assert_eq!(
        r.verdict,
        ooda::testing::archive::history::Verdict::Keep,
        "{}",
        r.reason
    );
    let files = t.git(&["show", "--name-only", "--format=", &r.commit.unwrap()]);
    assert_eq!(
        files.trim(),
        "ooda.knobs.env",
        "the kept commit holds only what was measured"
    );
}

#[test]
fn with_the_sandbox_off_an_agent_rewriting_the_archive_is_blocked() {
    forger_is_blocked(
        r##"echo "# forged" >> "$OODA_ITERATIONS_DIR/iter-000.md""##,
        "iter-000.md",
    );
}

/// The index is believed while its stamps match the files (history/index.rs):
/// a forged line is as much tampering as a forged file.
#[test]
fn with_the_sandbox_off_an_agent_forging_the_index_is_blocked() {
    forger_is_blocked(
        r#"tail -n 1 "$OODA_ITERATIONS_DIR/index.jsonl" | sed 's/"verdict":"baseline"/"verdict":"keep"/' >> "$OODA_ITERATIONS_DIR/index.jsonl""#,
        "index.jsonl",
    );
}

fn forger_is_blocked(execute: &str, named: &str) {
    let t = Test::new();
    t.script(
        "ooda-agent.sh",
        &r##"#!/bin/sh
cat > /dev/null
case "$OODA_PHASE" in
  plan) printf '{"hypothesis": "X=40", "change": "X", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.3, "predicted_sd": 0.2, "knobs": {"X": 40}}' > "$OODA_OUTPUT_FILE" ;;
  execute) EXECUTE; echo done ;;
  learn) printf '{"patterns": []}' > "$OODA_OUTPUT_FILE" ;;
esac
"##
        .replace("EXECUTE", execute),
    );
    t.brief(
        "h",
        &knob_brief("").replace("agent: builtin", "agent: script"),
    );
    // Inside the sandbox the write is refused (attacks.rs); this is the
    // fence, which catches it when there is no sandbox.
    t.write(
        "ooda.yaml",
        &format!("{}sandbox: off\n", t.read("ooda.yaml")),
    );
    t.commit("forger");
    t.ooda(&["tick", "h"]).expect(0);
    t.ooda(&["tick", "h"]).expect(3);
    assert_eq!(t.state("h")["stop"]["reason"], "red_tamper");
    let r = t.record("h", 1);
    assert_eq!(
        r.verdict,
        ooda::testing::archive::history::Verdict::Blocked,
        "{}",
        r.reason
    );
    assert!(r.reason.contains(named), "{}", r.reason);
    // Nothing forged is believed afterwards.
    assert_eq!(
        t.record("h", 0).verdict,
        ooda::testing::archive::history::Verdict::Baseline
    );
    let dir = t.path().join("iterations/h");
    let h = ooda::testing::archive::history::load(&dir).unwrap();
    assert_eq!(
        h[0].verdict,
        ooda::testing::archive::history::Verdict::Baseline
    );
}
