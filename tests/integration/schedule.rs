//! Scheduling: `check` fire times, `run --every/--cron`,
//! the daemon, signals, and crontab-style bursts of ticks.
//!
//! Nothing here asserts how long anything took. Where a test must know that
//! something is happening right now (a measurement in flight, two Briefs
//! measuring at the same time), the benchmark script itself leaves marker
//! files and waits for files the test creates, so the order of events is
//! forced rather than hoped for. Deadlines only turn a hang into a failure.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::test::{Test, knob_brief};

const DEADLINE: Duration = Duration::from_secs(120);

/// A test repository whose scripts may leave markers in `marks/` (ignored by git).
fn repo() -> Test {
    let t = Test::new();
    t.ignore(&["/marks/"]);
    std::fs::create_dir_all(t.path().join("marks")).unwrap();
    t.commit("ignore marks");
    t
}

fn mark(t: &Test, name: &str) -> PathBuf {
    t.path().join("marks").join(name)
}

#[track_caller]
fn wait_for(what: &str, mut done: impl FnMut() -> bool, context: impl Fn() -> String) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A long-running `ooda` whose stderr (the log) goes to a file outside the repository.
struct Bg {
    child: Child,
    log: PathBuf,
    _logs: tempfile::TempDir,
}

impl Bg {
    fn start(t: &Test, args: &[&str]) -> Bg {
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().join("stderr.log");
        let child = t
            .command(args)
            .stdout(Stdio::from(
                File::create(logs.path().join("stdout.log")).unwrap(),
            ))
            .stderr(Stdio::from(File::create(&log).unwrap()))
            .spawn()
            .expect("starting ooda");
        Bg {
            child,
            log,
            _logs: logs,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    #[track_caller]
    fn wait_log(&self, needle: &str) {
        wait_for(
            &format!("`{needle}` in the log"),
            || self.log().contains(needle),
            || self.log(),
        );
    }

    #[track_caller]
    fn wait_until(&self, what: &str, done: impl FnMut() -> bool) {
        wait_for(what, done, || self.log());
    }

    fn signal(&self, sig: i32) {
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    #[track_caller]
    fn exit_code(mut self) -> (i32, String) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status.code().unwrap_or(-1), self.log());
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("ooda did not exit\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn events_of(t: &Test, brief: &str, ty: &str) -> Vec<serde_json::Value> {
    t.events(brief)
        .into_iter()
        .filter(|e| e["type"] == ty)
        .collect()
}

fn has_iteration(t: &Test, brief: &str, n: u32) -> bool {
    t.exists(&format!("iterations/{brief}/iter-{n:03}.md"))
}

// ---------------------------------------------------------------- check

#[test]
fn check_prints_the_next_five_fire_times_in_the_tz_zone() {
    let t = Test::new();
    t.brief("k", &knob_brief("schedule: \"0 9 * * MON-FRI\"\n"));
    let r = t
        .ooda_env(&["check", "k"], &[("TZ", "Asia/Tokyo")])
        .expect(0);
    assert!(
        r.stdout
            .contains("schedule    `0 9 * * MON-FRI` in Asia/Tokyo (cron crate: `0 0 9 * * 2-6`)"),
        "{}",
        r.stdout
    );
    let times: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| !l.contains("next fires"))
        .take_while(|l| l.contains("next fires") || l.starts_with("              "))
        .map(|l| l.trim_start().trim_start_matches("next fires").trim())
        .collect();
    assert_eq!(times.len(), 5, "{}", r.stdout);
    let mut previous = String::new();
    for line in times {
        // `Mon 2026-01-05 09:00:00 +09:00`
        let (day, rest) = line.split_once(' ').unwrap();
        assert!(["Mon", "Tue", "Wed", "Thu", "Fri"].contains(&day), "{line}");
        assert!(rest.ends_with(" 09:00:00 +09:00"), "{line}");
        assert!(*rest > *previous, "not increasing: {line}");
        previous = rest.to_string();
    }
}

#[test]
fn check_shows_an_interval_schedule() {
    let t = Test::new();
    t.brief("k", &knob_brief("schedule: \"@every 20m\"\n"));
    let r = t.ooda(&["check", "k"]).expect(0);
    assert!(
        r.stdout
            .contains("schedule    every 20m: the first tick when the loop starts"),
        "{}",
        r.stdout
    );
}

#[test]
fn an_invalid_schedule_is_refused_with_the_file_line_and_key() {
    let t = Test::new();
    let p = t.brief("bad", &knob_brief("schedule: \"61 * * * *\"\n"));
    let r = t.ooda(&["check", "bad"]).expect(2);
    let line = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("schedule:"))
        .unwrap()
        + 1;
    assert!(
        r.stderr.contains(&format!(
            "briefs/bad.md:{line}: schedule: the minute field `61`: 61 is out of range 0-59"
        )),
        "{}",
        r.stderr
    );
    // The same Brief cannot be ticked either: validation is the same everywhere.
    t.ooda(&["tick", "bad"]).expect(2);
    let r = t.ooda(&["run", "bad", "--cron", "* * *"]).expect(2);
    assert!(
        r.stderr.contains("--cron: `* * *` has 3 fields"),
        "{}",
        r.stderr
    );
    let r = t.ooda(&["run", "bad", "--every", "0s"]).expect(2);
    assert!(
        r.stderr
            .contains("--every: an interval must be longer than zero"),
        "{}",
        r.stderr
    );
}

// ---------------------------------------------------------------- run --every / --cron

#[test]
fn run_every_runs_one_iteration_per_fire_time_without_overlap() {
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    let r = t
        .ooda(&["run", "k", "--every", "200ms", "--max-iterations", "3"])
        .expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1, 2, 3], "{}", r.stderr);
    assert!(
        r.stderr.contains("[k] --max-iterations 3 reached"),
        "{}",
        r.stderr
    );
    // One scheduled tick per step (the baseline is a tick too), each closed
    // before the next one starts, with fire times in order.
    let events = t.events("k");
    let ticks: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "scheduled_tick" || e["type"] == "scheduled_tick_finished")
        .collect();
    let kinds: Vec<&str> = ticks.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "scheduled_tick",
            "scheduled_tick_finished",
            "scheduled_tick",
            "scheduled_tick_finished",
            "scheduled_tick",
            "scheduled_tick_finished",
            "scheduled_tick",
            "scheduled_tick_finished"
        ]
    );
    let outcomes: Vec<String> = events_of(&t, "k", "scheduled_tick_finished")
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        outcomes,
        ["baseline", "iteration", "iteration", "iteration"]
    );
    let dues: Vec<String> = events_of(&t, "k", "scheduled_tick")
        .iter()
        .map(|e| e["due"].as_str().unwrap().to_string())
        .collect();
    assert!(dues.windows(2).all(|w| w[0] < w[1]), "{dues:?}");
    for e in events_of(&t, "k", "scheduled_tick") {
        assert_eq!(e["schedule"], "every 200ms");
        assert!(e["parent_id"].as_str().unwrap().starts_with("run-"));
    }
    // The finished event hangs under its tick.
    let first_tick = &events_of(&t, "k", "scheduled_tick")[0];
    assert_eq!(
        events_of(&t, "k", "scheduled_tick_finished")[0]["parent_id"],
        first_tick["id"]
    );
}

#[test]
fn run_cron_ticks_at_fire_times_and_stops_with_the_budget_code() {
    let t = Test::new();
    t.brief("k", &knob_brief("budget: { iterations: 1 }\n"));
    t.commit("brief");
    let r = t.ooda(&["run", "k", "--cron", "* * * * * *"]).expect(4);
    assert_eq!(t.iterations("k"), vec![0, 1], "{}", r.stderr);
    assert!(r.stdout.contains("budget_iterations"), "{}", r.stdout);
    assert!(
        r.stderr.contains("ticking on `* * * * * *`"),
        "{}",
        r.stderr
    );
    let ticks = events_of(&t, "k", "scheduled_tick");
    assert_eq!(ticks.len(), 2, "{ticks:?}");
    assert_ticks_follow_fire_times(&ticks);
}

/// Each tick is due at a fire time (a whole second for `* * * * * *`), or,
/// when the previous tick overran (`missed` > 0), right when it ended; and
/// ticks come one after another.
fn assert_ticks_follow_fire_times(ticks: &[serde_json::Value]) {
    let mut previous = String::new();
    for e in ticks {
        let due = e["due"].as_str().unwrap().to_string();
        if e["missed"] == 0 {
            assert!(!due.contains('.'), "not a fire time: {e}");
        }
        assert!(due > previous, "{ticks:?}");
        previous = due;
    }
}

#[test]
fn a_signal_while_waiting_for_the_next_fire_time_exits_130_at_once() {
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    // Next New Year's midnight: the loop only waits.
    let bg = Bg::start(&t, &["run", "k", "--cron", "0 0 1 1 *"]);
    bg.wait_log("[k] ticking on `0 0 1 1 *`");
    bg.signal(libc::SIGTERM);
    let (code, log) = bg.exit_code();
    assert_eq!(code, 130, "{log}");
    assert!(t.iterations("k").is_empty());
}

/// A loop waiting for the host's measurement lock when it is asked to
/// stop has no measurement in flight: it stops at once (exit 130), and
/// starts none after the signal (it used to wait for the lock, then run a
/// whole decision).
#[test]
fn a_stop_while_waiting_for_the_measurement_lock_measures_nothing() {
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "k"]).expect(0);
    // Held here, as another ooda would hold it.
    let holder = t.hold_measure_lock();
    let bg = Bg::start(&t, &["run", "k", "--every", "1h"]);
    bg.wait_until("a wait for the measurement lock", || {
        !events_of(&t, "k", "measure_lock_waiting").is_empty()
    });
    bg.signal(libc::SIGTERM);
    let (code, log) = bg.exit_code();
    drop(holder);
    assert_eq!(code, 130, "{log}");
    assert!(
        events_of(&t, "k", "pair_measured")
            .iter()
            .all(|e| e["iteration"] == 0),
        "{log}"
    );
    // The next tick goes on from the checkpoint.
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1]);
}

// ---------------------------------------------------------------- crontab bursts

/// The metric command of iteration ≥ 1 on the candidate side announces
/// itself and waits for `marks/go`, so the test controls how long the lock is held.
const GATED: &str = "#!/bin/sh\nif [ \"$OODA_ITERATION\" != 0 ] && [ \"$OODA_SIDE\" = cand ]; then\n  touch \"$OODA_TEST_DIR/marks/measuring\"\n  i=0; while [ ! -e \"$OODA_TEST_DIR/marks/go\" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i+1)); done\nfi\nexec ./bench.sh\n";

#[test]
fn a_burst_of_concurrent_ticks_makes_one_iteration_per_successful_tick_and_exit_5_for_the_rest() {
    let t = repo();
    t.script("gated.sh", GATED);
    t.brief(
        "k",
        &crate::test::side_env(
            &knob_brief("").replace("command: ./bench.sh", "command: ./gated.sh"),
        ),
    );
    t.commit("brief");
    t.ooda(&["tick", "k"]).expect(0);

    // Round 1: six ticks at once while the first to get the lock is held inside a measurement.
    let spawn = |n: usize| -> Vec<Child> {
        (0..n)
            .map(|_| {
                t.command(&["tick", "k"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect()
    };
    let mut ticks = spawn(6);
    wait_for(
        "a tick to measure",
        || mark(&t, "measuring").exists(),
        String::new,
    );
    // Every other tick must give up, busy, while the holder waits.
    let mut codes = Vec::new();
    let mut running = Vec::new();
    let start = Instant::now();
    while codes.len() < 5 {
        assert!(
            start.elapsed() < DEADLINE,
            "ticks did not give up: {codes:?}"
        );
        for c in ticks.drain(..) {
            let mut c = c;
            match c.try_wait().unwrap() {
                Some(s) => codes.push((s.code().unwrap_or(-1), c.wait_with_output().unwrap())),
                None => running.push(c),
            }
        }
        ticks.append(&mut running);
        std::thread::sleep(Duration::from_millis(20));
    }
    for (code, out) in &codes {
        assert_eq!(*code, 5, "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("ooda: busy: "));
    }
    std::fs::write(mark(&t, "go"), "").unwrap();
    assert_eq!(ticks.len(), 1);
    let holder = ticks.pop().unwrap().wait_with_output().unwrap();
    assert_eq!(
        holder.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&holder.stderr)
    );
    assert_eq!(t.iterations("k"), vec![0, 1]);

    // Round 2, ungated: whatever interleaving happens, each exit 0 is one
    // more iteration, every other tick is busy, and numbers never repeat or skip.
    let results: Vec<i32> = spawn(5)
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code().unwrap_or(-1))
        .collect();
    assert!(results.iter().all(|c| *c == 0 || *c == 5), "{results:?}");
    let ok = results.iter().filter(|c| **c == 0).count() as u32;
    assert!(ok >= 1, "{results:?}");
    assert_eq!(t.iterations("k"), (0..=1 + ok).collect::<Vec<_>>());
    let verdicts = events_of(&t, "k", "verdict");
    assert_eq!(verdicts.len() as u32, 1 + ok, "one verdict per iteration");
}

#[test]
fn a_scheduled_run_skips_a_fire_time_that_finds_the_brief_busy() {
    let t = repo();
    t.script("gated.sh", GATED);
    t.brief(
        "k",
        &crate::test::side_env(
            &knob_brief("").replace("command: ./bench.sh", "command: ./gated.sh"),
        ),
    );
    t.commit("brief");
    t.ooda(&["tick", "k"]).expect(0);
    // A crontab tick holds the lock inside its measurement...
    let holder = t
        .command(&["tick", "k"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        "the tick to measure",
        || mark(&t, "measuring").exists(),
        String::new,
    );
    // ... so the scheduled run's fire times pass without a tick, until it is done.
    let bg = Bg::start(
        &t,
        &["run", "k", "--every", "100ms", "--max-iterations", "1"],
    );
    bg.wait_log("[k] busy (");
    bg.wait_log("this fire time is skipped");
    std::fs::write(mark(&t, "go"), "").unwrap();
    assert_eq!(holder.wait_with_output().unwrap().status.code(), Some(0));
    let (code, log) = bg.exit_code();
    assert_eq!(code, 0, "{log}");
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
    let skipped = events_of(&t, "k", "scheduled_tick_skipped");
    assert!(!skipped.is_empty());
    assert!(
        skipped
            .iter()
            .all(|e| e["reason"] == "busy" && e["schedule"] == "every 100ms")
    );
}

// ---------------------------------------------------------------- daemon

#[test]
fn the_daemon_picks_up_new_briefs_applies_edits_and_ends_deleted_ones() {
    let t = repo();
    std::fs::create_dir_all(t.path().join("briefs")).unwrap();
    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("no Briefs yet");

    // Created after the start: picked up and run back to back until its budget.
    t.brief("a", &knob_brief("budget: { iterations: 1 }\n"));
    bg.wait_log("[a] found: starting its loop");
    bg.wait_log("[a] run stopped: budget_iterations");
    assert_eq!(t.iterations("a"), vec![0, 1]);
    bg.wait_log("[a] skipped until the Brief changes");

    // An edit is applied: the raised budget lets it continue, and the change is logged.
    t.brief("a", &knob_brief("budget: { iterations: 2 }\n"));
    bg.wait_log("[a] Brief edited: the next iteration uses the new text");
    bg.wait_until("iteration 2 of a", || has_iteration(&t, "a", 2));
    bg.wait_until("a to stop again", || {
        bg.log()
            .matches("[a] run stopped: budget_iterations")
            .count()
            == 2
    });
    assert!(
        events_of(&t, "a", "brief_changed").len() == 1,
        "the phase machine records the edit"
    );

    // A Brief without a budget runs until it is deleted; its loop then ends
    // after the iteration in progress, leaving nothing half done.
    t.brief("d", &knob_brief(""));
    bg.wait_until("d to iterate", || has_iteration(&t, "d", 1));
    std::fs::remove_file(t.path().join("briefs/d.md")).unwrap();
    bg.wait_log("[d] Brief deleted: its loop ended");
    let after = t.iterations("d");
    assert!(
        t.state("d")["current"].is_null(),
        "an iteration was left in flight"
    );

    bg.signal(libc::SIGTERM);
    let (code, log) = bg.exit_code();
    assert_eq!(code, 130, "{log}");
    assert!(log.contains("daemon stopped"), "{log}");
    assert_eq!(t.iterations("d"), after, "d ran after it was deleted");
    assert_eq!(t.iterations("a"), vec![0, 1, 2]);
    // The log names the Brief and the phase, with the time, on every phase line.
    let phase_line = log
        .lines()
        .find(|l| l.contains("[a] iteration 1: EVALUATE"))
        .expect("a phase line");
    assert!(
        phase_line.as_bytes()[..19]
            .iter()
            .zip(b"0000-00-00 00:00:00")
            .all(|(c, p)| if *p == b'0' {
                c.is_ascii_digit()
            } else {
                c == p
            }),
        "{phase_line}"
    );
}

#[test]
fn the_daemon_ticks_each_brief_on_its_own_schedule() {
    let t = repo();
    t.brief(
        "s",
        &knob_brief("schedule: \"* * * * * *\"\nbudget: { iterations: 1 }\n"),
    );
    t.commit("brief");
    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("[s] runs on `* * * * * *`");
    bg.wait_log("[s] run stopped: budget_iterations");
    assert!(bg.log().contains("[s] tick due "), "{}", bg.log());
    let ticks = events_of(&t, "s", "scheduled_tick");
    assert_eq!(ticks.len(), 2, "the baseline and iteration 1");
    assert!(ticks.iter().all(|e| e["schedule"] == "* * * * * *"));
    assert_ticks_follow_fire_times(&ticks);
    bg.signal(libc::SIGTERM);
    assert_eq!(bg.exit_code().0, 130);
}

/// Both Briefs' candidate measurements wait (boundedly) for each other: each
/// can only see the other's marker if the two run at the same time.
const MEET: &str = "#!/bin/sh\nif [ \"$OODA_ITERATION\" != 0 ] && [ \"$OODA_SIDE\" = cand ]; then\n  if [ \"$OODA_BRIEF\" = p ]; then other=q; else other=p; fi\n  touch \"$OODA_TEST_DIR/marks/here-$OODA_BRIEF\"\n  i=0; while [ ! -e \"$OODA_TEST_DIR/marks/here-$other\" ] && [ $i -lt 1800 ]; do sleep 0.05; i=$((i+1)); done\n  [ -e \"$OODA_TEST_DIR/marks/here-$other\" ] && touch \"$OODA_TEST_DIR/marks/saw-$OODA_BRIEF\"\nfi\nexec ./bench.sh\n";

/// Logs each timed run's Brief, iteration and side (one line, appended
/// before the run), and takes a little while, so two Briefs measuring at
/// once would interleave. Nothing makes a difference (`flat.sh`), so
/// nothing is kept and no confirmation runs: an iteration's runs are
/// exactly one series (the calibration, or a decision's pairs).
const LOGGED: &str = "#!/bin/sh\necho \"$OODA_BRIEF $OODA_ITERATION\" >> \"$OODA_TEST_DIR/marks/runs\"\nsleep 0.05\nexec ./flat.sh\n";

fn two_briefs(t: &Test, metric: &str, budget: &str) {
    for name in ["p", "q"] {
        t.brief(
            name,
            &crate::test::side_env(
                &knob_brief(budget)
                    .replace("command: ./bench.sh", &format!("command: {metric}"))
                    .replace("timeout: 20s", "timeout: 120s"),
            ),
        );
    }
    t.commit("briefs");
}

#[test]
fn the_daemon_measures_one_brief_at_a_time() {
    let t = repo();
    // A strict α: a chance keep would add a confirmation, whose runs share
    // the iteration's key.
    t.write("ooda.yaml", "defaults:\n  alpha: 0.001\n");
    t.script("logged.sh", LOGGED);
    t.script("flat.sh", &crate::test::bench("100", 0.02));
    two_briefs(&t, "./logged.sh", "budget: { iterations: 2 }\n");
    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("[p] run stopped: budget_iterations");
    bg.wait_log("[q] run stopped: budget_iterations");
    let log = bg.log();
    bg.signal(libc::SIGINT);
    assert_eq!(bg.exit_code().0, 130);
    // Each series must be one unbroken block of runs.
    let runs = std::fs::read_to_string(mark(&t, "runs")).unwrap();
    let series: Vec<String> = runs.lines().map(str::to_string).collect();
    let mut seen: Vec<&String> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        if i > 0 && series[i - 1] == *s {
            continue;
        }
        assert!(
            !seen.contains(&s),
            "`{s}` was interrupted by another Brief's runs:\n{runs}\n{log}"
        );
        seen.push(s);
    }
    assert!(
        seen.iter().any(|s| s.starts_with("p ")) && seen.iter().any(|s| s.starts_with("q ")),
        "{runs}"
    );
    // The daemon starts both at once: one of them waited, and said so.
    let waits: Vec<_> = ["p", "q"]
        .iter()
        .flat_map(|b| events_of(&t, b, "measure_lock_waiting"))
        .collect();
    assert!(!waits.is_empty(), "no wait logged:\n{runs}\n{log}");
    assert!(
        waits
            .iter()
            .all(|w| w["holder"].as_str().unwrap().starts_with("brief ")),
        "{waits:?}"
    );
    assert!(
        log.contains("waiting to measure: brief ") && log.contains(" holds the measurement lock ("),
        "{log}"
    );
}

#[test]
fn with_measure_exclusive_false_two_briefs_measure_at_once() {
    let t = repo();
    t.write("ooda.yaml", "defaults:\n  measure_exclusive: false\n");
    t.script("meet.sh", MEET);
    two_briefs(&t, "./meet.sh", "budget: { iterations: 1 }\n");
    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("[p] run stopped: budget_iterations");
    bg.wait_log("[q] run stopped: budget_iterations");
    assert!(
        mark(&t, "saw-p").exists(),
        "p never saw q measuring: {}",
        t.record("p", 1).reason
    );
    assert!(
        mark(&t, "saw-q").exists(),
        "q never saw p measuring: {}",
        t.record("q", 1).reason
    );
    assert_eq!(t.iterations("p"), vec![0, 1]);
    assert_eq!(t.iterations("q"), vec![0, 1]);
    bg.signal(libc::SIGINT);
    assert_eq!(bg.exit_code().0, 130);
}

#[test]
fn the_daemon_skips_invalid_and_red_briefs_and_resumes_after_ack() {
    let t = repo();
    t.script(
        "guard.sh",
        "#!/bin/sh\n[ -e \"$OODA_TEST_DIR/marks/fixed\" ] && exit 0\n[ \"$OODA_SIDE\" = cand ] && { echo 'guard says no' >&2; exit 1; }\nexit 0\n",
    );
    t.brief(
        "g",
        &crate::test::side_env(&knob_brief("budget: { iterations: 6 }\n").replace(
            "agent: builtin\n",
            "agent: builtin\nguards: [\"./guard.sh\"]\n",
        )),
    );
    t.brief(
        "bad",
        &knob_brief("").replace("direction: minimize", "direction: fastest"),
    );
    t.brief("ok", &knob_brief("budget: { iterations: 1 }\n"));
    t.commit("briefs");
    t.ooda(&["run", "g"]).expect(3);

    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("[g] skipped: RED since iteration 5 (red_failure_streak");
    bg.wait_log("[bad] invalid Brief, skipped until it is fixed:");
    bg.wait_log("briefs/bad.md:");
    bg.wait_log("[ok] run stopped: budget_iterations");
    assert_eq!(t.iterations("g"), (0..=5).collect::<Vec<_>>());

    // `ooda ack` while the daemon runs: the loop notices and continues.
    std::fs::write(mark(&t, "fixed"), "").unwrap();
    t.ooda(&["ack", "g", "--note", "guard fixed"]).expect(0);
    bg.wait_until("g's iteration 6", || has_iteration(&t, "g", 6));
    bg.wait_log("[g] run stopped: budget_iterations");

    // Fixing the invalid Brief makes it run.
    t.brief("bad", &knob_brief("budget: { iterations: 1 }\n"));
    bg.wait_log("[bad] the Brief is valid again");
    bg.wait_until("bad's iteration 1", || has_iteration(&t, "bad", 1));

    bg.signal(libc::SIGTERM);
    assert_eq!(bg.exit_code().0, 130);
}

#[test]
fn a_brief_parked_on_a_failing_baseline_runs_once_the_fix_is_committed() {
    let t = repo();
    t.brief("k", &knob_brief("budget: { iterations: 1 }\n"));
    let bench = t.read("bench.sh");
    t.script(
        "bench.sh",
        "#!/bin/sh\necho 'cannot open corpus.bin' >&2\nexit 3\n",
    );
    t.commit("a broken benchmark");
    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("[k] skipped until the Brief, its state or the repository's HEAD changes:");
    assert!(bg.log().contains("exited with code 3"), "{}", bg.log());
    // The fix is a commit: neither the Brief nor the state file changes.
    t.script("bench.sh", &bench);
    t.commit("fixed");
    bg.wait_log("[k] run stopped: budget_iterations");
    let head = t.git(&["rev-parse", "HEAD"]);
    assert_eq!(t.record("k", 0).base, head.trim());
    bg.signal(libc::SIGTERM);
    assert_eq!(bg.exit_code().0, 130);
}

#[test]
fn sighup_makes_the_daemon_reread_ooda_yaml() {
    let t = repo();
    t.write(
        "ooda.yaml",
        &format!(
            "{}  budget: {{ iterations: 1 }}\n",
            crate::test::QUIET_CONFIG
        ),
    );
    t.brief("k", &knob_brief(""));
    t.commit("brief");
    let bg = Bg::start(&t, &["daemon"]);
    bg.wait_log("[k] run stopped: budget_iterations — 1 of 1");

    t.write("ooda.yaml", "defaults: [broken\n");
    bg.signal(libc::SIGHUP);
    bg.wait_log("SIGHUP: ooda.yaml not reloaded, the previous configuration stays");

    t.write(
        "ooda.yaml",
        &format!(
            "{}  budget: {{ iterations: 2 }}\n",
            crate::test::QUIET_CONFIG
        ),
    );
    bg.signal(libc::SIGHUP);
    bg.wait_log("SIGHUP: re-read ooda.yaml");
    bg.wait_log("[k] run stopped: budget_iterations — 2 of 2");
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
    bg.signal(libc::SIGTERM);
    assert_eq!(bg.exit_code().0, 130);
}

/// The candidate's measurement in iteration 1 announces itself and waits for `marks/release`.
const HELD: &str = "#!/bin/sh\nif [ \"$OODA_ITERATION\" = 1 ] && [ \"$OODA_SIDE\" = cand ]; then\n  touch \"$OODA_TEST_DIR/marks/measuring\"\n  i=0; while [ ! -e \"$OODA_TEST_DIR/marks/release\" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i+1)); done\nfi\nexec ./bench.sh\n";

fn held_repo() -> Test {
    let t = repo();
    t.script("held.sh", HELD);
    t.brief(
        "k",
        &crate::test::side_env(
            &knob_brief("").replace("command: ./bench.sh", "command: ./held.sh"),
        ),
    );
    t.commit("brief");
    t.ooda(&["tick", "k"]).expect(0);
    t
}

fn measurements(t: &Test, iteration: u64) -> usize {
    events_of(t, "k", "measurement")
        .iter()
        .filter(|e| e["iteration"] == iteration)
        .count()
}

#[test]
fn first_sigterm_lets_the_measurement_finish_and_stops_at_the_checkpoint() {
    let t = held_repo();
    let bg = Bg::start(&t, &["daemon"]);
    wait_for(
        "the measurement",
        || mark(&t, "measuring").exists(),
        || bg.log(),
    );
    bg.signal(libc::SIGTERM);
    bg.wait_log("stopping: each Brief stops at its next checkpoint");
    // The measurement is still running; once it may finish, EVALUATE completes.
    std::fs::write(mark(&t, "release"), "").unwrap();
    let (code, log) = bg.exit_code();
    assert_eq!(code, 130, "{log}");
    assert!(log.contains("[k] stopped at a checkpoint"), "{log}");
    assert_eq!(t.state("k")["current"]["done"], "evaluate", "{log}");
    let measured = measurements(&t, 1);
    assert!(measured > 0);
    // The next tick completes the iteration without measuring again.
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1]);
    assert_eq!(
        measurements(&t, 1),
        measured,
        "the measurements were redone"
    );
}

#[test]
fn a_second_sigterm_cancels_the_measurement_and_the_next_tick_completes() {
    let t = held_repo();
    let bg = Bg::start(&t, &["daemon"]);
    wait_for(
        "the measurement",
        || mark(&t, "measuring").exists(),
        || bg.log(),
    );
    bg.signal(libc::SIGTERM);
    bg.wait_log("stopping: each Brief stops at its next checkpoint");
    bg.signal(libc::SIGTERM);
    let (code, log) = bg.exit_code();
    assert_eq!(code, 130, "{log}");
    assert!(
        log.contains("stopping now: running commands are cancelled"),
        "{log}"
    );
    assert!(!mark(&t, "release").exists());
    let done = t.state("k")["current"]["done"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(done, "evaluate", "EVALUATE cannot have finished");
    assert_eq!(t.iterations("k"), vec![0]);
    std::fs::write(mark(&t, "release"), "").unwrap();
    t.ooda(&["tick", "k"]).expect(0);
    assert_eq!(t.iterations("k"), vec![0, 1]);
    assert_eq!(events_of(&t, "k", "verdict").len(), 1);
}
