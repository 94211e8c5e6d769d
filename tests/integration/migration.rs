//! Archives and checkpoints written by an earlier release keep working.
//!
//! `tests/fixtures/state-v1/` was written by the release whose `state.json`
//! has version 1 (commit 4be4fe9), with `make_state_v1_fixture` below: a
//! Brief's baseline, then a tick killed right after EVALUATE's checkpoint,
//! so the state holds the measured pairs of an iteration still in flight.

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
    let pairs: Vec<ooda::eval::Pair> =
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
    assert_eq!(t.state("k")["version"], 2);
    assert_eq!(t.state("k")["next_iteration"], 2);
    // The run goes on from there.
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
}
