//! Archives and checkpoints written by an earlier release keep working.
//!
//! `tests/fixtures/state-v1/` and `state-v1-learn/` were written by the
//! release whose `state.json` has version 1 (commit 4be4fe9), with the
//! ignored `make_*` tests below: a Brief's baseline, then a tick killed
//! right after EVALUATE's checkpoint (the state holds the measured pairs of
//! an iteration still in flight: version 1 saved nothing during EVALUATE
//! itself), or after LEARN's (a script agent; the state lacks the LEARN
//! call that the iteration file already has).

use std::path::Path;

use crate::test::{Test, knob_brief};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state-v1");

/// Writes the fixture with an earlier `ooda` binary:
/// `OODA_V1_BIN=/path/to/old/ooda cargo test --test integration make_state_v1_fixture -- --ignored`.
#[test]
#[ignore = "writes tests/fixtures/state-v1 with an earlier release's binary (OODA_V1_BIN)"]
fn make_state_v1_fixture() {
    let bin = std::env::var("OODA_V1_BIN").expect("OODA_V1_BIN names the earlier release's binary");
    let t = Test::pinned();
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    let run = |env: &[(&str, &str)]| {
        let mut c = t.command_of(Path::new(&bin), &["tick", "k"]);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("running the earlier ooda")
    };
    assert!(run(&[]).status.success(), "baseline");
    let killed = run(&[("OODA_FAILPOINT", "after:evaluate")]);
    assert_eq!(
        killed.status.code(),
        None,
        "killed by SIGKILL after EVALUATE"
    );
    let out = Path::new(FIXTURE);
    std::fs::create_dir_all(out.join("iterations/k")).unwrap();
    std::fs::create_dir_all(out.join("cand")).unwrap();
    for f in ["iter-000.md", "state.json", "events.jsonl"] {
        std::fs::copy(
            t.path().join("iterations/k").join(f),
            out.join("iterations/k").join(f),
        )
        .unwrap();
    }
    std::fs::copy(
        t.path().join(".ooda/worktrees/k/cand/ooda.knobs.env"),
        out.join("cand/ooda.knobs.env"),
    )
    .unwrap();
    std::fs::copy(t.path().join("counter"), out.join("counter")).unwrap();
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURE).join(rel)).unwrap()
}

#[test]
fn a_state_written_mid_iteration_by_the_earlier_release_resumes_with_its_pairs() {
    let t = Test::pinned();
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    let old: serde_json::Value = serde_json::from_str(&fixture("iterations/k/state.json")).unwrap();
    assert_eq!(old["version"], 1);
    assert_eq!(old["current"]["done"], "evaluate");
    let start = old["start_commit"].as_str().unwrap();
    assert_eq!(
        t.git(&["rev-parse", "HEAD"]),
        start,
        "the same repository as the fixture's"
    );
    // The baseline makes what the earlier release had made by then: the
    // branch and both worktrees at the start commit.
    t.ooda(&["tick", "k"]).expect(0);
    // Then the archive, and the candidate worktree as EXECUTE left it.
    for f in ["iter-000.md", "state.json", "events.jsonl"] {
        t.write(
            &format!("iterations/k/{f}"),
            &fixture(&format!("iterations/k/{f}")),
        );
    }
    t.write(
        ".ooda/worktrees/k/cand/ooda.knobs.env",
        &fixture("cand/ooda.knobs.env"),
    );
    t.write("counter", &fixture("counter"));
    let cand = t.path().join(".ooda/worktrees/k/cand");
    let git_cand = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&cand)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git_cand(&["add", "-A"]);
    assert_eq!(
        git_cand(&["write-tree"]),
        old["current"]["tree"].as_str().unwrap(),
        "the candidate is the tree that was measured"
    );
    let measurements = |t: &Test| {
        t.events("k")
            .iter()
            .filter(|e| e["type"] == "measurement" && e["iteration"] == 1)
            .count()
    };
    let before = measurements(&t);

    let r = t.ooda(&["tick", "k"]).expect(0);
    assert!(
        r.stdout.contains("iteration 1 keep"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stderr.contains("resuming iteration 1 after EVALUATE"),
        "{}",
        r.stderr
    );
    let rec = t.record("k", 1);
    let pairs: Vec<ooda::testing::model::Pair> =
        serde_json::from_value(old["current"]["eval"]["comparison"]["pairs"].clone()).unwrap();
    assert_eq!(
        rec.measured.unwrap().pairs,
        pairs,
        "decided on the pairs it had measured"
    );
    assert_eq!(
        rec.reason,
        old["current"]["eval"]["reason"].as_str().unwrap()
    );
    assert_eq!(
        t.read("counter"),
        fixture("counter"),
        "no metric command ran again"
    );
    assert_eq!(measurements(&t), before);
    let commit = rec.commit.expect("kept");
    assert_eq!(t.git(&["rev-parse", "ooda/k"]), commit);
    assert_eq!(
        t.git(&["rev-parse", &format!("{commit}^{{tree}}")]),
        old["current"]["tree"].as_str().unwrap()
    );
    assert_eq!(
        t.state("k")["version"],
        ooda::testing::archive::state::STATE_VERSION
    );
    assert_eq!(t.state("k")["next_iteration"], 2);
    // The run goes on from there.
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
}

const LEARN_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state-v1-learn");

/// A script agent that plans X = 80 (worse than the start) and counts its
/// LEARN calls in `$OODA_TEST_DIR/learned`.
const COUNTING_AGENT: &str = r#"#!/bin/sh
cat > /dev/null
case "$OODA_PHASE" in
  plan) printf '{"hypothesis": "X=80", "change": "X", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.1, "predicted_sd": 0.1, "knobs": {"X": 80}}' > "$OODA_OUTPUT_FILE" ;;
  learn) echo "$OODA_ITERATION" >> "$OODA_TEST_DIR/learned"; printf '{"patterns": [{"name": "x-80", "lesson": "too far"}]}' > "$OODA_OUTPUT_FILE" ;;
esac
"#;

fn counting_repo() -> Test {
    let t = Test::pinned();
    t.script("ooda-agent.sh", COUNTING_AGENT);
    t.ignore(&["/learned"]);
    t.brief(
        "k",
        &knob_brief("").replace("agent: builtin", "agent: script"),
    );
    t.commit("brief");
    t
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// `OODA_V1_BIN=/path/to/old/ooda cargo test --test integration make_state_v1_learn_fixture -- --ignored`.
#[test]
#[ignore = "writes tests/fixtures/state-v1-learn with an earlier release's binary (OODA_V1_BIN)"]
fn make_state_v1_learn_fixture() {
    let bin = std::env::var("OODA_V1_BIN").expect("OODA_V1_BIN names the earlier release's binary");
    let t = counting_repo();
    let run = |env: &[(&str, &str)]| {
        let mut c = t.command_of(Path::new(&bin), &["tick", "k"]);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("running the earlier ooda")
    };
    assert!(run(&[]).status.success(), "baseline");
    let killed = run(&[("OODA_FAILPOINT", "after:learn")]);
    assert_eq!(killed.status.code(), None, "killed by SIGKILL after LEARN");
    let out = Path::new(LEARN_FIXTURE);
    let _ = std::fs::remove_dir_all(out);
    copy_tree(&t.path().join("iterations/k"), &out.join("iterations/k"));
    let _ = std::fs::remove_file(out.join("iterations/k/.lock"));
    std::fs::copy(t.path().join("counter"), out.join("counter")).unwrap();
    std::fs::copy(t.path().join("learned"), out.join("learned")).unwrap();
}

#[test]
fn a_state_written_after_learn_by_the_earlier_release_keeps_the_learn_call() {
    let t = counting_repo();
    let dir = Path::new(LEARN_FIXTURE);
    let old: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("iterations/k/state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (old["version"].as_u64(), old["current"]["done"].as_str()),
        (Some(1), Some("learn"))
    );
    assert_eq!(
        t.git(&["rev-parse", "HEAD"]),
        old["start_commit"].as_str().unwrap()
    );
    t.ooda(&["tick", "k"]).expect(0);
    copy_tree(&dir.join("iterations/k"), &t.path().join("iterations/k"));
    for f in ["counter", "learned"] {
        std::fs::copy(dir.join(f), t.path().join(f)).unwrap();
    }
    let archived = t.read("iterations/k/iter-001.md");
    let calls: Vec<&str> = t
        .record("k", 1)
        .agent_calls
        .iter()
        .map(|c| c.phase.as_str())
        .collect();
    assert_eq!(
        calls,
        ["plan", "execute", "learn"],
        "what the earlier release archived"
    );

    let r = t.ooda(&["tick", "k"]).expect(0);
    assert!(
        r.stderr.contains("resuming iteration 1 after LEARN"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("iteration 1 discard"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(t.read("learned"), "1\n", "LEARN is not asked again");
    assert_eq!(
        t.read("counter"),
        std::fs::read_to_string(dir.join("counter")).unwrap()
    );
    // CHECK added nothing at iteration 1: the file is exactly as LEARN wrote it.
    assert_eq!(t.read("iterations/k/iter-001.md"), archived);
    assert_eq!(t.state("k")["next_iteration"], 2);
}

/// `tests/fixtures/state-v2-simplify/project.tar.gz`: a whole project (its
/// git repository, worktrees and archive) as the release whose `state.json`
/// has version 2 (commit 94d2945) left it, killed right after EVALUATE
/// measured a simplifier's version of a keep: the simplification in flight
/// was three booleans then (measured, not reviewed, not accepted).
const FIXTURE_V2: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/state-v2-simplify"
);

/// The edit the fixture's simplifier made (the tests' answers are
/// written again into each test's own agent folder).
const SIMPLIFY: &str = "sed -i '/^pad /d' src/lib.txt\n";

/// Writes the fixture with an earlier `ooda` binary:
/// `OODA_V2_BIN=/path/to/old/ooda cargo test --test integration make_state_v2_simplify_fixture -- --ignored`.
#[test]
#[ignore = "writes tests/fixtures/state-v2-simplify with an earlier release's binary (OODA_V2_BIN)"]
fn make_state_v2_simplify_fixture() {
    let bin = std::env::var("OODA_V2_BIN").expect("OODA_V2_BIN names the earlier release's binary");
    let n = crate::subagents::padded_keep_and_a_simplifier(SIMPLIFY);
    n.t.commit("a simplifier");
    let run = |failpoint: Option<&str>| {
        let mut c = n.t.command_of(Path::new(&bin), &["tick", "b"]);
        c.env("AGENT_DIR", n.dir.path());
        if let Some(f) = failpoint {
            c.env("OODA_FAILPOINT", f);
        }
        c.output().expect("running the earlier ooda")
    };
    assert!(run(None).status.success(), "baseline");
    // The first REVIEW proposes the simplification; the second EVALUATE
    // measures it, and the tick dies there.
    assert_eq!(
        run(Some("after:review")).status.code(),
        None,
        "killed after REVIEW"
    );
    assert_eq!(
        run(Some("after:evaluate")).status.code(),
        None,
        "killed after EVALUATE"
    );
    let state: serde_json::Value =
        serde_json::from_str(&n.t.read("iterations/b/state.json")).unwrap();
    let s = &state["current"]["review"]["simplified"];
    assert_eq!(
        (s["measured"].as_bool(), s["reviewed"].as_bool()),
        (Some(true), Some(false)),
        "{state}"
    );
    std::fs::create_dir_all(FIXTURE_V2).unwrap();
    let out = Path::new(FIXTURE_V2).join("project.tar.gz");
    let ok = std::process::Command::new("tar")
        .args([
            "-czf",
            out.to_str().unwrap(),
            "-C",
            n.t.path().to_str().unwrap(),
            ".",
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    // Git's worktree links are absolute: the test puts them back in place.
    std::fs::write(
        Path::new(FIXTURE_V2).join("origin.txt"),
        n.t.path().to_str().unwrap(),
    )
    .unwrap();
}

/// The earlier release's project, killed mid-simplification, in place of
/// `n`'s project: its repository, worktrees, archive and state.
fn unpack_v2(n: &crate::subagents::Night) {
    for e in std::fs::read_dir(n.t.path()).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let archive = Path::new(FIXTURE_V2).join("project.tar.gz");
    let ok = std::process::Command::new("tar")
        .args([
            "-xzf",
            archive.to_str().unwrap(),
            "-C",
            n.t.path().to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(ok.success(), "unpacking {}", archive.display());
    // Git's links between the repository and its worktrees name the folder
    // the project was made in: they name this one now.
    let origin = std::fs::read_to_string(Path::new(FIXTURE_V2).join("origin.txt")).unwrap();
    let here = n.t.path().to_str().unwrap();
    let worktrees = n.t.path().join(".ooda/worktrees/b");
    for e in std::fs::read_dir(&worktrees).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        for link in [
            e.path().join(".git"),
            n.t.path()
                .join(format!(".git/worktrees/ooda-b-{name}/gitdir")),
        ] {
            let text = std::fs::read_to_string(&link).unwrap();
            std::fs::write(&link, text.replace(origin.trim(), here)).unwrap();
        }
    }
}

#[test]
fn a_simplification_in_flight_in_the_previous_releases_state_resumes() {
    let n = crate::subagents::padded_keep_and_a_simplifier(SIMPLIFY);
    unpack_v2(&n);
    let old: serde_json::Value =
        serde_json::from_str(&n.t.read("iterations/b/state.json")).unwrap();
    assert_eq!(old["version"], 2);
    assert_eq!(old["current"]["done"], "evaluate");
    let simplified = &old["current"]["review"]["simplified"];
    assert_eq!(simplified["measured"], true);
    assert_eq!(simplified["reviewed"], false);
    // The resumed tick reviews the simplified diff, commits it and ends the
    // iteration: nothing measured again, nothing lost.
    let r = n.ooda(&["tick", "b"], &[]).expect(0);
    assert!(
        r.stdout.contains("iteration 1 keep"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    let rec = ooda::testing::archive::history::read(&n.t.path().join("iterations/b/iter-001.md"))
        .unwrap();
    let s = rec.simplification.as_ref().expect("a simplification");
    assert!(s.accepted, "{}", s.reason);
    assert_eq!(rec.tree.as_deref(), Some(s.tree.as_str()));
    let commit = rec.commit.clone().unwrap();
    let lib = n.t.git(&["show", &format!("{commit}:src/lib.txt")]);
    assert!(!lib.contains("pad "), "{lib}");
    assert!(
        n.t.read("iterations/b/iter-001.md")
            .contains("**committed** — simplified from 52 to 2 changed lines; non-inferior")
    );
}
