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

/// Ticks with `OODA_FAILPOINT=failpoint` until it fires (the process dies
/// by SIGKILL), then ticks normally until the four-iteration budget stops
/// the run, and checks that the archive, the branch and the state agree as
/// if nothing had happened.
fn killed_at(failpoint: &str) {
    let t = Test::new();
    t.brief("k", &knob_brief("budget: { iterations: 4 }\n"));
    t.commit("brief");
    let mut fired = false;
    for _ in 0..6 {
        let r = t.ooda_env(&["tick", "k"], &[("OODA_FAILPOINT", failpoint)]);
        if r.code == -1 {
            fired = true;
            break;
        }
        assert!(r.code == 0 || r.code == 4, "{failpoint}: {}", r.stderr);
        if r.code == 4 {
            break;
        }
    }
    assert!(fired, "the failpoint {failpoint} was never reached");
    let mut last = 0;
    for _ in 0..8 {
        let r = t.ooda(&["tick", "k"]);
        last = r.code;
        assert!(r.code == 0 || r.code == 4, "{failpoint}: {}", r.stderr);
        if r.code == 4 {
            break;
        }
    }
    assert_eq!(last, 4, "{failpoint}: the budget never stopped the run");
    assert_eq!(t.iterations("k"), vec![0, 1, 2, 3, 4], "after {failpoint}");
    for i in 1..=4 {
        assert_eq!(verdict_events(&t, i), 1, "iteration {i} after {failpoint}");
    }
    let events = t.events("k");
    let ids: std::collections::BTreeSet<&str> =
        events.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(
        ids.len(),
        events.len(),
        "event ids are unique after {failpoint}"
    );
    // The branch holds exactly the archived keeps, each the measured tree.
    let records: Vec<_> = (1..=4).map(|i| t.record("k", i)).collect();
    let keeps: Vec<String> = records.iter().filter_map(|r| r.commit.clone()).collect();
    let start = t.record("k", 0).base;
    let log = t.git(&["rev-list", "--reverse", &format!("{start}..ooda/k")]);
    assert_eq!(
        log.lines().map(str::to_string).collect::<Vec<_>>(),
        keeps,
        "after {failpoint}"
    );
    for r in records.iter().filter(|r| r.commit.is_some()) {
        let tree = t.git(&[
            "rev-parse",
            &format!("{}^{{tree}}", r.commit.as_ref().unwrap()),
        ]);
        assert_eq!(
            Some(tree),
            r.tree,
            "iteration {} after {failpoint}",
            r.iteration
        );
    }
    let state = t.state("k");
    assert_eq!(state["next_iteration"], 5, "after {failpoint}");
    assert_eq!(
        state["stop"]["reason"], "budget_iterations",
        "after {failpoint}"
    );
    assert_eq!(
        records[3].stop.as_ref().map(|s| s.reason.as_str()),
        Some("budget_iterations"),
        "after {failpoint}"
    );
    assert!(
        t.read("iterations/k/summary.md")
            .contains("| [4](iter-004.md) |"),
        "after {failpoint}"
    );
}

/// Every failpoint the machine has, each in its own repository, a few at a
/// time. A new kill point added to `phases/failpoint.rs` is tested here
/// without being listed.
#[test]
fn killed_at_every_failpoint_resumes_as_if_nothing_happened() {
    let all = ooda::testing::phases::failpoint::all();
    assert!(all.len() > 20, "{all:?}");
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(fp) = all.get(i) else { break };
                    if let Err(e) = std::panic::catch_unwind(|| killed_at(fp)) {
                        let msg = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        failures.lock().unwrap().push(format!("{fp}: {msg}"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_resumed_phase_says_so_in_the_trajectory() {
    let t = prepared();
    let r = t.ooda_env(&["tick", "k"], &[("OODA_FAILPOINT", "after:plan")]);
    assert_eq!(r.code, -1, "{}", r.stderr);
    let resumed = t.ooda(&["tick", "k"]).expect(0);
    assert!(resumed.stdout.contains("iteration 1"), "{}", resumed.stdout);
    assert!(
        resumed.stderr.contains("resuming iteration 1 after PLAN"),
        "{}",
        resumed.stderr
    );
    assert!(
        t.events("k")
            .iter()
            .any(|e| e["type"] == "iteration_resumed" && e["after_phase"] == "plan")
    );
}

/// A run whose metric command is `script` (written before the first commit).
fn with_script(script: &str) -> Test {
    let t = Test::new();
    t.script("wrapped.sh", script);
    t.ignore(&["/killed", "/measuring"]);
    t.brief(
        "k",
        &crate::test::side_env(
            &knob_brief("").replace("command: ./bench.sh", "command: ./wrapped.sh"),
        ),
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
