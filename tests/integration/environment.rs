//! The environment is not the agent: what the loop does not control (ooda's
//! own log in the checkout, the user's edits, a benchmark's output files)
//! never blocks an iteration, while what the agent does still does.

use std::process::Command;

use crate::test::{Run, Test, knob_brief};
use ooda::testing::archive::history::Verdict;

/// A script agent (the `script` preset): walks X upwards and edits a file
/// in scope. In PLAN it first tries to write the checkout's `notes.md`
/// itself (a confined agent cannot) and says in its hypothesis whether that
/// worked; with `WAIT_FOR_USER` set it leaves a marker in its worktree and
/// waits until the user's line for this iteration is in `notes.md`.
const AGENT: &str = r#"#!/bin/sh
cat > /dev/null
i=$OODA_ITERATION
case "$OODA_PHASE" in
  plan)
    if echo "agent $i" >> "$OODA_TEST_DIR/notes.md" 2>/dev/null; then w=wrote; else w=denied; fi
    if [ -n "$WAIT_FOR_USER" ]; then
      echo "$i" > plan-marker
      n=0
      until grep -q "user $i" "$OODA_TEST_DIR/notes.md" 2>/dev/null; do
        n=$((n + 1)); [ "$n" -gt 200 ] && break; sleep 0.05
      done
    fi
    x=$((10 + 7 * i))
    printf '{"hypothesis": "X=%s (checkout write %s)", "change": "X to %s", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.05, "predicted_sd": 0.05, "knobs": {"X": %s}}' "$x" "$w" "$x" "$x" > "$OODA_OUTPUT_FILE"
    ;;
  execute) echo "iteration $i" >> src/lib.txt ;;
  learn) printf '{"next": "keep walking"}' > "$OODA_OUTPUT_FILE" ;;
esac
"#;

/// A project whose Brief `b` is run by [`AGENT`] for `iterations`.
fn project(iterations: u32) -> Test {
    let t = Test::new();
    t.write("notes.md", "my notes\n");
    t.script("ooda-agent.sh", AGENT);
    t.brief(
        "b",
        &knob_brief(&format!("budget: {{ iterations: {iterations} }}\n"))
            .replace("agent: builtin", "agent: script"),
    );
    t.commit("a project with a script agent");
    t
}

/// `line` run by `sh` in the project, as cron or a terminal would, with
/// `$OODA` the binary under test.
fn shell(t: &Test, line: &str) -> Run {
    let c = t.command(&[]);
    let ooda = c.get_program().to_owned();
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(line).env("OODA", ooda);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh.current_dir(t.path()).stdin(std::process::Stdio::null());
    Run::from(sh.output().expect("sh"))
}

/// No iteration of `b` was blocked, and each was measured.
fn none_blocked(t: &Test, n: u32) {
    for i in 1..=n {
        let r = t.record("b", i);
        assert!(
            matches!(r.verdict, Verdict::Keep | Verdict::Discard),
            "iteration {i}: {} {}",
            r.verdict.as_str(),
            r.reason
        );
        assert!(
            r.hypothesis.contains("checkout write denied"),
            "{}",
            r.hypothesis
        );
    }
}

/// The README's cron line, run in the project by `sh` as cron would, on
/// Brief `b` with the binary under test.
fn readme_cron_line() -> String {
    let readme = include_str!("../../README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("*/20 * * * * cd /repo && "))
        .expect("the README has a cron line");
    line.trim_start_matches("*/20 * * * * cd /repo && ")
        .replace("$HOME/.cargo/bin/ooda", "\"$OODA\"")
        .replace("briefs/latency.md", "briefs/b.md")
}

#[test]
fn the_readme_cron_line_and_a_log_in_the_repository_never_block() {
    let t = project(5);
    let readme = readme_cron_line();
    assert!(readme.contains(">> .ooda/"), "{readme}");
    // The README's line, then the one it had before, whose log is in the
    // checkout itself: ooda writes it while the agent plans.
    for line in [
        readme.as_str(),
        "\"$OODA\" tick briefs/b.md >> ooda.log 2>&1",
    ] {
        for _ in 0..3 {
            let r = shell(&t, line);
            assert!(matches!(r.code, 0 | 4), "{line}: {}{}", r.stdout, r.stderr);
        }
    }
    let log = t.read("ooda.log");
    assert!(
        log.contains("iteration 5"),
        "ooda wrote its progress there: {log}"
    );
    assert!(t.read(".ooda/latency.log").contains("baseline"));
    assert_eq!(t.iterations("b"), (0..=5).collect::<Vec<_>>(), "{log}");
    none_blocked(&t, 5);
    assert_eq!(t.read("notes.md"), "my notes\n");
}

#[test]
fn nohup_in_the_repository_root_never_blocks_with_or_without_the_sandbox() {
    for sandbox in ["auto", "off"] {
        let t = project(3);
        t.write(
            "ooda.yaml",
            &format!("{}sandbox: {sandbox}\n", t.read("ooda.yaml")),
        );
        // Unconfined, the agent would write the checkout: it does not try.
        t.script(
            "ooda-agent.sh",
            &AGENT.replace(
                "if echo \"agent $i\" >> \"$OODA_TEST_DIR/notes.md\" 2>/dev/null; then w=wrote; else w=denied; fi",
                "w=denied",
            ),
        );
        t.commit("the sandbox as the test says");
        let r = shell(&t, "nohup \"$OODA\" run b > nohup.out 2>&1");
        let out = t.read("nohup.out");
        assert_eq!(r.code, 4, "sandbox {sandbox}: {out}");
        assert!(out.contains("budget_iterations"), "{out}");
        none_blocked(&t, 3);
        // Not the environment's either: ooda's own output is not looked at.
        assert!(
            t.events("b")
                .iter()
                .all(|e| e["type"] != "environment_change"),
            "sandbox {sandbox}"
        );
    }
}

/// Runs `b` with `WAIT_FOR_USER` while a "user" appends a line to
/// `notes.md` during every PLAN (when the agent's marker appears).
fn with_a_user_editing_notes(t: &Test, iterations: u32) -> Run {
    let marker = t.path().join(".ooda/worktrees/b/cand/plan-marker");
    let notes = t.path().join("notes.md");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let user = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut seen = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(i) = std::fs::read_to_string(&marker)
                    && let Ok(i) = i.trim().parse::<u32>()
                    && i > seen
                {
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&notes)
                        .unwrap();
                    std::io::Write::write_all(&mut f, format!("user {i}\n").as_bytes()).unwrap();
                    seen = i;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            seen
        })
    };
    let r = t.ooda_env(&["run", "b"], &[("WAIT_FOR_USER", "1")]);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(user.join().unwrap(), iterations, "{}", r.stdout);
    r
}

#[test]
fn a_file_the_user_appends_to_during_plan_is_not_blamed_on_a_confined_agent() {
    let t = project(2);
    let r = with_a_user_editing_notes(&t, 2);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    // Measured and decided; the agent's own write was refused.
    none_blocked(&t, 2);
    assert_eq!(t.read("notes.md"), "my notes\nuser 1\nuser 2\n");
    // Recorded as the environment's, naming the file.
    let changes: Vec<_> = t
        .events("b")
        .into_iter()
        .filter(|e| e["type"] == "environment_change")
        .collect();
    assert_eq!(changes.len(), 2, "{changes:?}");
    for c in &changes {
        assert!(
            c["paths"][0].as_str().unwrap().ends_with("/notes.md"),
            "{c}"
        );
        assert!(
            c["reason"].as_str().unwrap().contains("not the agent's"),
            "{c}"
        );
    }
    let trace = t.ooda(&["trace", "b", "1"]).expect(0).stdout;
    assert!(trace.contains("environment changed "), "{trace}");
    let summary = t.read("iterations/b/summary.md");
    assert!(
        summary.contains("| environment_change | info |"),
        "{summary}"
    );
}

#[test]
fn without_the_sandbox_a_change_to_the_checkout_is_reported_as_possibly_yours() {
    let t = project(1);
    t.write(
        "ooda.yaml",
        &format!("{}sandbox: off\n", t.read("ooda.yaml")),
    );
    t.commit("sandbox off");
    let r = with_a_user_editing_notes(&t, 1);
    // The agent could have written it (and did: nothing stopped it), so
    // the iteration is blocked and the night stops for a human to look.
    let rec = t.record("b", 1);
    assert_eq!(rec.verdict, Verdict::Blocked, "{}", r.stdout);
    assert!(rec.hypothesis.is_empty() || rec.hypothesis.contains("wrote"));
    for said in [
        "files outside the candidate worktree changed while the agent ran without the sandbox: ",
        "/notes.md",
        "cannot tell the agent's writes from yours or another program's",
        "leave tracked files alone while a night runs, or turn the sandbox on",
    ] {
        assert!(rec.reason.contains(said), "{said}: {}", rec.reason);
    }
}

/// [`knob_bench`](crate::test::knob_bench) after `prelude`, run in the
/// worktree being measured.
fn bench_writing(prelude: &str) -> String {
    crate::test::bench_after(prelude, crate::test::LANDSCAPE, 0.01)
}

#[test]
fn a_benchmarks_own_log_and_caches_never_block() {
    let t = project(3);
    // What real benchmarks leave in their working directory: an appended
    // log, Python's bytecode cache, pytest's cache.
    t.script(
        "bench.sh",
        &bench_writing(
            "echo \"run at $(date +%s%N)\" >> bench.log\nmkdir -p __pycache__ .pytest_cache/v\necho bytes > __pycache__/lib.cpython-312.pyc\necho '{}' > .pytest_cache/v/lastfailed\n",
        ),
    );
    t.commit("a benchmark that leaves outputs");
    let check = t.ooda(&["check", "b", "--measure", "2"]).expect(0);
    assert!(
        !check.stdout.contains("changed tracked file"),
        "{}",
        check.stdout
    );
    let r = t.ooda(&["run", "b"]);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    none_blocked(&t, 3);
    // The outputs are in no kept commit.
    let files = t.git(&["ls-tree", "-r", "--name-only", "ooda/b"]);
    for output in ["bench.log", "__pycache__", ".pytest_cache"] {
        assert!(!files.contains(output), "{files}");
    }
    assert!(
        t.events("b")
            .iter()
            .all(|e| e["type"] != "environment_change"),
        "the worktrees are not the checkout"
    );
}

#[test]
fn a_benchmark_rewriting_a_tracked_file_is_stopped_before_the_night() {
    let t = project(1);
    t.write("results.txt", "committed results\n");
    t.script(
        "bench.sh",
        &bench_writing("echo \"t at $(date +%s%N)\" > results.txt\n"),
    );
    t.commit("a benchmark that rewrites a committed file");
    // `check --measure` says so before the night.
    let check = t.ooda(&["check", "b", "--measure", "2"]).expect(0);
    assert!(
        check.stdout.contains(
            "warning: the metric command `./bench.sh` changed results.txt in the check's worktree, which a tick would block as a change to committed files"
        ),
        "{}",
        check.stdout
    );
    // Iteration 0 stops on it, before any agent works: no iteration is
    // blocked for what the benchmark does by itself.
    let r = t.ooda(&["run", "b"]).expect(2);
    for said in [
        "the starting commit cannot be measured: the metric command `./bench.sh` changed results.txt",
        "have it write `results.txt` elsewhere",
        "`git rm --cached results.txt`",
    ] {
        assert!(r.stderr.contains(said), "{said}:\n{}", r.stderr);
    }
    assert!(t.iterations("b").is_empty());
}

#[test]
fn a_candidate_whose_code_rewrites_a_tracked_file_is_blocked_naming_it_and_the_command() {
    let t = project(1);
    t.write("results.txt", "committed results\n");
    // The candidate's code (its edit of src/lib.txt) makes the benchmark
    // rewrite a committed file; the base's does not.
    t.script(
        "bench.sh",
        &bench_writing("grep -q iteration src/lib.txt && echo rewritten > results.txt\n"),
    );
    t.commit("a benchmark the change can rig");
    t.ooda(&["run", "b"]).expect(4);
    let rec = t.record("b", 1);
    assert_eq!(rec.verdict, Verdict::Blocked, "{}", rec.reason);
    for said in [
        "the metric command `./bench.sh`, while the candidate was measured, changed results.txt in the candidate's worktree",
        "have it write `results.txt` elsewhere",
        "`git rm --cached results.txt`",
    ] {
        assert!(rec.reason.contains(said), "{said}:\n{}", rec.reason);
    }
}

#[test]
fn a_benchmark_that_starts_rewriting_a_tracked_file_mid_run_fails_the_tick_with_the_fix() {
    let t = project(3);
    t.write("results.txt", "committed results\n");
    t.ignore(&["/rewrite-now"]);
    // From the moment the marker exists, every run rewrites the file, the
    // base's as well as the candidate's.
    t.script(
        "bench.sh",
        &bench_writing("[ -f \"$OODA_TEST_DIR/rewrite-now\" ] && echo rewritten > results.txt\n"),
    );
    t.commit("a benchmark that will rewrite a committed file");
    t.ooda(&["tick", "b"]).expect(0);
    t.write("rewrite-now", "");
    let r = t.ooda(&["tick", "b"]).expect(2);
    for said in [
        "changed results.txt in the candidate's worktree",
        "the base's own measurement rewrote them too",
        "`ooda reset b`",
    ] {
        assert!(r.stderr.contains(said), "{said}:\n{}", r.stderr);
    }
    // Not an iteration blocked against the agent: none was archived.
    assert_eq!(t.iterations("b"), [0]);
}

#[test]
fn a_file_only_the_candidates_code_writes_is_blocked_and_caches_are_not() {
    let t = project(2);
    // The candidate's code drops a module beside the benchmark (its base
    // does not); the agent leaves Python's bytecode caches while it works.
    t.script(
        "bench.sh",
        &bench_writing(
            "grep -q 'iteration 2' src/lib.txt && echo 'def time(): return 0' > time.py\n",
        ),
    );
    t.script(
        "ooda-agent.sh",
        &AGENT.replace(
            "execute) echo \"iteration $i\" >> src/lib.txt ;;",
            "execute) echo \"iteration $i\" >> src/lib.txt; mkdir -p __pycache__ src/__pycache__; echo b > __pycache__/x.cpython-311.pyc; echo b > src/__pycache__/lib.cpython-311.pyc ;;",
        ),
    );
    t.commit("a benchmark the change can plant a module for");
    t.ooda(&["run", "b"]).expect(4);
    let first = t.record("b", 1);
    assert!(
        matches!(first.verdict, Verdict::Keep | Verdict::Discard),
        "{}",
        first.reason
    );
    assert!(
        first
            .changed_paths
            .iter()
            .all(|p| !p.contains("__pycache__")),
        "{:?}",
        first.changed_paths
    );
    assert!(
        t.events("b")
            .iter()
            .any(|e| e["kind"] == "agent_ignored_files"
                && e["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("__pycache__/x.cpython-311.pyc")),
        "the caches were not removed and named"
    );
    let second = t.record("b", 2);
    assert_eq!(second.verdict, Verdict::Blocked, "{}", second.reason);
    assert!(
        second
            .reason
            .contains("created time.py in the candidate's worktree, which the base's runs did not"),
        "{}",
        second.reason
    );
}

#[test]
fn check_judges_the_committed_tree_a_tick_will_run() {
    let t = Test::new();
    t.brief("b", &knob_brief(""));
    t.commit("a brief");
    t.ooda(&["check", "b"]).expect(0);
    // +x on disk only: committed as 100644, every tick would exit 126.
    t.write("run.sh", "#!/bin/sh\nexec ./bench.sh \"$@\"\n");
    t.brief(
        "b",
        &knob_brief("").replace("command: ./bench.sh", "command: ./run.sh"),
    );
    t.commit("measure through a wrapper, committed without +x");
    std::fs::set_permissions(
        t.path().join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let r = t.ooda(&["check", "b"]).expect(2);
    for said in [
        "`run.sh` (named by the metric command `./run.sh`) is executable only in your working copy",
        "(exit 126)",
        "`git add --chmod=+x run.sh`",
    ] {
        assert!(r.stderr.contains(said), "{said}:\n{}", r.stderr);
    }
    t.git(&["add", "--chmod=+x", "run.sh"]);
    t.git(&["commit", "-qm", "+x"]);
    t.ooda(&["check", "b"]).expect(0);
    // An uncommitted edit of a script the metric runs, and of a protected
    // file: the night would run the committed ones.
    t.write("run.sh", "#!/bin/sh\nexec ./bench.sh --fast\n");
    let r = t.ooda(&["check", "b"]).expect(2);
    assert!(
        r.stderr.contains("`run.sh` (named by the metric command `./run.sh`) has uncommitted changes: a night runs the version committed at "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("`git checkout -- run.sh`"),
        "{}",
        r.stderr
    );
    t.git(&["checkout", "--", "run.sh"]);
    t.write("bench.sh", &format!("{}# tuned\n", t.read("bench.sh")));
    let r = t.ooda(&["check", "b"]).expect(2);
    assert!(
        r.stderr
            .contains("`bench.sh` (protected by the Brief) has uncommitted changes"),
        "{}",
        r.stderr
    );
    // A script passed to an interpreter is a file the run reads too.
    t.git(&["checkout", "--", "bench.sh"]);
    t.write("bench.py", "print('METRIC t=1')\n");
    t.brief(
        "b",
        &knob_brief("").replace("command: ./bench.sh", "command: python3 bench.py"),
    );
    t.commit("a python benchmark");
    t.ooda(&["check", "b"]).expect(0);
    t.write("bench.py", "print('METRIC t=0.5')\n");
    let r = t.ooda(&["check", "b"]).expect(2);
    assert!(
        r.stderr.contains(
            "`bench.py` (named by the metric command `python3 bench.py`) has uncommitted changes"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn raising_stall_after_continues_a_stalled_run_and_continue_goes_past_it() {
    let t = project(20);
    // Every move of X upwards is worse: nothing is ever kept.
    t.script("bench.sh", &crate::test::bench("100 + x", 0.002));
    t.write(
        "ooda.yaml",
        &format!("{}  stall_after: 2\n", t.read("ooda.yaml")),
    );
    t.commit("a landscape the agent walks the wrong way on");
    let r = t.ooda(&["run", "b"]).expect(0);
    assert!(r.stdout.contains("stopped: stalled"), "{}", r.stdout);
    assert_eq!(t.iterations("b"), [0, 1, 2]);
    // The stop says what to raise; a tick does nothing more.
    let r = t.ooda(&["tick", "b"]).expect(0);
    assert!(
        r.stdout.contains(
            "to go on, raise `defaults.stall_after` (now 2) in ooda.yaml, or `ooda run b --continue`"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(t.iterations("b"), [0, 1, 2]);
    // Raised, the run goes on by itself, to the new bound.
    t.write(
        "ooda.yaml",
        &t.read("ooda.yaml")
            .replace("stall_after: 2", "stall_after: 4"),
    );
    let r = t.ooda(&["tick", "b"]).expect(0);
    assert!(r.stdout.contains("iteration 3 discard"), "{}", r.stdout);
    assert!(
        t.events("b")
            .iter()
            .any(|e| e["type"] == "stop_lifted" && e["reason"] == "stalled"),
        "no stop_lifted event"
    );
    let r = t.ooda(&["run", "b"]).expect(0);
    assert!(r.stdout.contains("stopped: stalled"), "{}", r.stdout);
    assert_eq!(t.iterations("b"), (0..=4).collect::<Vec<_>>());
    // Accepted, it goes on past the stall: the count starts over.
    let r = t.ooda(&["run", "b", "--continue"]).expect(0);
    assert!(r.stderr.contains("Continued by "), "{}", r.stderr);
    assert_eq!(
        t.iterations("b"),
        (0..=8).collect::<Vec<_>>(),
        "{}",
        r.stdout
    );
    assert!(
        t.record("b", 5)
            .acknowledged
            .as_deref()
            .unwrap()
            .contains("after stalled")
    );
}

#[test]
fn raising_a_red_lights_threshold_continues_without_an_ack() {
    let t = project(10);
    // Every change edits a file outside scope.allow: blocked, and three
    // blocks in a row are red_scope.
    t.script(
        "ooda-agent.sh",
        &AGENT.replace(
            "echo \"iteration $i\" >> src/lib.txt",
            "echo \"iteration $i\" >> notes.md",
        ),
    );
    t.commit("an agent that edits outside its scope");
    let r = t.ooda(&["run", "b"]).expect(3);
    assert!(r.stdout.contains("red_scope"), "{}", r.stdout);
    assert_eq!(t.iterations("b"), [0, 1, 2, 3]);
    let r = t.ooda(&["tick", "b"]).expect(3);
    assert!(
        r.stderr
            .contains("or raise `defaults.red_lights.scope_violations` (now 3) in ooda.yaml"),
        "{}",
        r.stderr
    );
    // --continue does not clear a red light.
    let r = t.ooda(&["run", "b", "--continue"]).expect(3);
    assert!(
        r.stderr.contains("--continue does not clear a red light"),
        "{}",
        r.stderr
    );
    t.write(
        "ooda.yaml",
        &format!(
            "{}  red_lights: {{scope_violations: 5}}\n",
            t.read("ooda.yaml")
        ),
    );
    let r = t.ooda(&["run", "b"]).expect(3);
    assert!(r.stdout.contains("iteration 4 blocked"), "{}", r.stdout);
    assert_eq!(t.iterations("b"), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_confined_agent_that_changes_a_mode_in_the_checkout_is_still_blocked() {
    // Landlock does not control chmod: a mode changed alone is what a
    // confined agent can do, so it is never taken for the environment.
    let t = project(1);
    t.script(
        "ooda-agent.sh",
        &AGENT.replace(
            "execute) echo \"iteration $i\" >> src/lib.txt ;;",
            "execute) echo \"iteration $i\" >> src/lib.txt; chmod +x \"$OODA_TEST_DIR/notes.md\" ;;",
        ),
    );
    t.commit("an agent that changes a mode outside its worktree");
    t.ooda(&["run", "b"]);
    let rec = t.record("b", 1);
    assert_eq!(rec.verdict, Verdict::Blocked, "{}", rec.reason);
    assert!(
        rec.reason
            .starts_with("the agent changed files outside the candidate worktree: ")
            && rec.reason.ends_with("/notes.md"),
        "{}",
        rec.reason
    );
}

/// `ooda trace` names every call's files (issue 46): the prompt and what the
/// agent said are one step away.
#[test]
fn the_trace_names_each_calls_files() {
    let t = project(1);
    t.ooda(&["run", "b"]);
    let trace = t.ooda(&["trace", "b", "1"]).expect(0).stdout;
    for f in [
        "files: artifacts/iter-001/plan.output.txt, artifacts/iter-001/plan.prompt.md",
        "artifacts/iter-001/execute.prompt.md",
        "artifacts/iter-001/learn.prompt.md",
    ] {
        assert!(trace.contains(f), "{f}:\n{trace}");
    }
    for f in trace
        .lines()
        .filter_map(|l| l.split_once("files: ").map(|(_, f)| f))
        .flat_map(|f| f.split(", "))
    {
        assert!(t.exists(&format!("iterations/b/{}", f.trim())), "{f}");
    }
}
