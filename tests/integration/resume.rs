//! A tick killed anywhere resumes at the next tick: no phase that completed
//! is repeated, no iteration number is skipped or duplicated.

use std::time::{Duration, Instant};

use crate::test::{Test, knob_brief};

fn prepared() -> Test {
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "k"]).expect(0);
    t
}

fn verdict_events(t: &Test, iteration: u64) -> usize {
    t.events("k")
        .iter()
        .filter(|e| e["type"] == "verdict" && e["iteration"] == iteration)
        .count()
}

fn killed_at(failpoint: &str) {
    let t = prepared();
    let r = t.ooda_env(&["tick", "k"], &[("OODA_FAILPOINT", failpoint)]);
    assert_eq!(
        r.code, -1,
        "expected death by SIGKILL at {failpoint}: {}",
        r.stderr
    );
    let resumed = t.ooda(&["tick", "k"]).expect(0);
    assert!(resumed.stdout.contains("iteration 1"), "{}", resumed.stdout);
    assert_eq!(t.iterations("k"), vec![0, 1], "after {failpoint}");
    assert_eq!(verdict_events(&t, 1), 1);
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
    // The branch holds exactly the archived keeps.
    let keeps: Vec<String> = (1..=2).filter_map(|i| t.record("k", i).commit).collect();
    let start = t.record("k", 0).base;
    let log = t.git(&["rev-list", "--reverse", &format!("{start}..ooda/k")]);
    assert_eq!(
        log.lines().map(str::to_string).collect::<Vec<_>>(),
        keeps,
        "after {failpoint}"
    );
    // A resumed phase says so in the trajectory.
    if failpoint.starts_with("after:") {
        assert!(
            t.events("k")
                .iter()
                .any(|e| e["type"] == "iteration_resumed")
        );
    }
}

#[test]
fn killed_after_plan() {
    killed_at("after:plan");
}

#[test]
fn killed_after_execute() {
    killed_at("after:execute");
}

#[test]
fn killed_after_evaluate() {
    killed_at("after:evaluate");
}

#[test]
fn killed_while_archiving() {
    killed_at("before-checkpoint:learn");
}

#[test]
fn killed_after_learn() {
    killed_at("after:learn");
}

#[test]
fn killed_after_commit() {
    killed_at("after:commit");
}

/// A run whose metric command is `script` (written before the first commit).
fn with_script(script: &str) -> Test {
    let t = Test::new();
    t.script("wrapped.sh", script);
    t.ignore(&["/killed", "/measuring"]);
    t.brief(
        "k",
        &knob_brief("").replace("command: ./bench.sh", "command: ./wrapped.sh"),
    );
    t.commit("brief");
    t.ooda(&["tick", "k"]).expect(0);
    t
}

#[test]
fn killed_during_a_measurement() {
    // The bench kills the runner (kill -9, pid from the lock file) once, in iteration 1.
    let t = with_script(
        "#!/bin/sh\nif [ \"$OODA_ITERATION\" != 0 ] && [ \"$OODA_SIDE\" = cand ] && [ ! -e \"$OODA_TEST_DIR/killed\" ]; then touch \"$OODA_TEST_DIR/killed\"; kill -9 $(sed -n 's/^pid \\([0-9]*\\).*/\\1/p' \"$OODA_TEST_DIR/iterations/k/.lock\"); sleep 1; fi\nexec ./bench.sh\n",
    );
    let r = t.ooda(&["tick", "k"]);
    assert_eq!(r.code, -1, "{}", r.stderr);
    assert!(t.exists("killed"));
    assert_eq!(t.iterations("k"), vec![0]);
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1]);
    assert_eq!(verdict_events(&t, 1), 1);
}

#[test]
fn sigterm_stops_at_a_checkpoint_with_130_and_the_next_tick_finishes() {
    // The candidate's measurement hangs until the marker file is removed.
    let t = with_script(
        "#!/bin/sh\nif [ \"$OODA_ITERATION\" != 0 ] && [ \"$OODA_SIDE\" = cand ] && [ ! -e \"$OODA_TEST_DIR/killed\" ]; then touch \"$OODA_TEST_DIR/measuring\"; sleep 30; fi\nexec ./bench.sh\n",
    );
    let child = t
        .command(&["tick", "k"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !t.exists("measuring") {
        assert!(Instant::now() < deadline, "the measurement never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(t.iterations("k"), vec![0]);
    t.write("killed", "");
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1]);
}

#[test]
fn deleted_state_is_rebuilt_from_history() {
    let t = prepared();
    t.ooda(&["tick", "k"]).expect(0);
    t.ooda(&["tick", "k"]).expect(0);
    let before = t.state("k");
    std::fs::remove_file(t.path().join("iterations/k/state.json")).unwrap();
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1, 2, 3]);
    let after = t.state("k");
    assert_eq!(after["run_id"], before["run_id"]);
    assert_eq!(after["seed"], before["seed"]);
    assert_eq!(after["start_commit"], before["start_commit"]);
    let keeps: Vec<String> = (1..=3).filter_map(|i| t.record("k", i).commit).collect();
    let tip = t.git(&["rev-parse", "ooda/k"]);
    assert_eq!(
        after["best_commit"].as_str().unwrap(),
        keeps
            .last()
            .cloned()
            .unwrap_or_else(|| before["start_commit"].as_str().unwrap().to_string())
    );
    assert_eq!(tip, after["best_commit"].as_str().unwrap());
}

#[test]
fn truncated_state_is_moved_aside_and_rebuilt() {
    let t = prepared();
    t.ooda(&["tick", "k"]).expect(0);
    let text = t.read("iterations/k/state.json");
    t.write("iterations/k/state.json", &text[..text.len() / 2]);
    let r = t.ooda(&["tick", "k"]).expect(0);
    assert!(r.stderr.contains("was unreadable"), "{}", r.stderr);
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
    let aside = std::fs::read_dir(t.path().join("iterations/k"))
        .unwrap()
        .flatten()
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("state.json.corrupt-")
        });
    assert!(aside, "the corrupt state was not kept for inspection");
}
