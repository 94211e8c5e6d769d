//! Measurements through a real Slurm cluster (`executor: slurm`).
//!
//! These need a cluster that answers `sinfo` on this machine, with the
//! project's files visible on its node (a one-node cluster on this very
//! machine: `.ci/slurm-up` brings one up, and CI runs it). Without one they
//! say so on stderr and pass, so a laptop without Slurm can run the suite;
//! under `CI` they fail instead.

use std::process::Command;

use crate::test::{LANDSCAPE, Test, bench_after, knob_brief};
use ooda::testing::archive::history::Verdict;

/// One test at a time on the cluster: a test that preempts, or fills the
/// node, must not disturb another's measurements.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The cluster, held for the test; `None` (the test is skipped) where none
/// answers.
fn cluster() -> Option<std::sync::MutexGuard<'static, ()>> {
    let up = ooda::testing::run::executor::slurm_available();
    // CI brings a cluster up (.ci/run): there, none is a failure.
    assert!(
        up || std::env::var_os("CI").is_none(),
        "no Slurm cluster answers `sinfo` on CI: .ci/slurm-up should have started one"
    );
    if !up {
        eprintln!("skipped: no Slurm cluster answers `sinfo` here (run .ci/slurm-up)");
        return None;
    }
    Some(
        CLUSTER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// This user's queued jobs whose names start with `prefix`: `id name state`.
fn queued(prefix: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["--noheader", "--me", "--format=%i %j %T"])
        .output()
        .expect("squeue");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|n| n.starts_with(prefix))
        })
        .map(str::to_string)
        .collect()
}

/// The standard landscape, deterministic, logging the Slurm job each run
/// was in (empty when it ran here).
fn logged_bench(prelude: &str) -> String {
    bench_after(
        &format!(
            "{prelude}echo \"${{SLURM_JOB_ID:-here}} $(hostname)\" >> \"$OODA_TEST_DIR/jobs\"\n"
        ),
        LANDSCAPE,
        0.01,
    )
}

/// A project with one Brief `k` measured by [`logged_bench`] (`prelude`
/// first) and `extra` in its front matter, committed.
fn project(prelude: &str, extra: &str) -> Test {
    let t = Test::new();
    t.script("bench.sh", &logged_bench(prelude));
    // A prelude that fails on one side on purpose reads ooda's variables.
    let brief = knob_brief(extra);
    if prelude.contains("OODA_SIDE") {
        t.brief("k", &crate::test::side_env(&brief));
    } else {
        t.brief("k", &brief);
    }
    t.commit("k");
    t
}

fn night(executor: &str) -> (Test, Vec<ooda::testing::archive::history::IterationRecord>) {
    let t = project(
        "",
        &format!("budget: {{ iterations: 3 }}\nexecutor: {executor}\n"),
    );
    t.ooda(&["run", "k"]).expect(4);
    let records = (0..=3).map(|i| t.record("k", i)).collect();
    (t, records)
}

/// An iteration file with what differs between two runs of one night
/// masked: times, durations, run and delegation ids (the event counter
/// in them too: a run through Slurm may log one event more), commit
/// hashes, and the `jobs:` list.
fn archived(text: &str) -> String {
    let volatile = regex::Regex::new(
        r"\d{4}-\d\d-\d\dT[\d:.]+Z|\d{8}T\d{6}-[0-9a-f]{8}|\b[0-9a-f]{10,40}\b(-\d+)?|(seconds: |done in )[\d.]+",
    )
    .unwrap();
    let mut out = String::new();
    let mut jobs = false;
    // What the runs took (`seconds:` and the lines indented under it):
    // wall-clock times, which differ between any two nights.
    let mut timed: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        timed = match timed {
            Some(i) if indent > i => Some(i),
            _ if line.trim_start() == "seconds:" => Some(indent),
            _ => None,
        };
        jobs = line == "jobs:" || (jobs && (line.starts_with("- ") || line.starts_with("  ")));
        if !jobs && timed.is_none() && !line.starts_with("brief_hash:") {
            out.push_str(&volatile.replace_all(line, "…"));
            out.push('\n');
        }
    }
    out
}

#[test]
fn a_night_measured_through_slurm_decides_as_a_local_night_does() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let (local, here) = night("local");
    let (t, there) = night("slurm");
    for (a, b) in here.iter().zip(&there) {
        assert_eq!(a.verdict, b.verdict, "iteration {}", a.iteration);
        assert_eq!(a.knobs, b.knobs, "iteration {}", a.iteration);
        let values = |r: &ooda::testing::archive::history::IterationRecord| {
            r.measured
                .as_ref()
                .map(|m| m.pairs.iter().map(|p| (p.base, p.cand)).collect::<Vec<_>>())
        };
        assert_eq!(values(a), values(b), "iteration {}", a.iteration);
    }
    assert!(there.iter().any(|r| r.verdict == Verdict::Keep));
    // The same archive: each iteration file alike but for what names this
    // run (times, ids, commit hashes: the Briefs differ by their executor
    // line) and its jobs.
    for i in 0..=3 {
        let f = format!("iterations/k/iter-{i:03}.md");
        assert_eq!(
            archived(&local.read(&f)),
            archived(&t.read(&f)),
            "iteration {i}"
        );
    }
    // Every timed run was a step of a Slurm job; locally none was.
    let jobs = t.read("jobs");
    assert!(!jobs.is_empty());
    assert!(jobs.lines().all(|l| !l.starts_with("here")), "{jobs}");
    assert!(local.read("jobs").lines().all(|l| l.starts_with("here ")));
    // Each phase had its own allocation, and none is left behind.
    let distinct: std::collections::BTreeSet<&str> =
        jobs.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(distinct.len() >= 4, "baseline, 3 decisions: {distinct:?}");
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    assert_eq!(queued(&prefix), Vec::<String>::new());
    // Each iteration file names the jobs that measured it, and where.
    for r in &there {
        let phase = if r.iteration == 0 {
            "baseline"
        } else {
            "evaluate"
        };
        let name = format!("{prefix}-{:03}-{phase}", r.iteration);
        assert!(
            r.jobs
                .iter()
                .any(|j| j.name == name && !j.node.is_empty() && distinct.contains(j.id.as_str())),
            "iteration {}: {:?}",
            r.iteration,
            r.jobs
        );
    }
    assert!(here.iter().all(|r| r.jobs.is_empty()));
    // The night's confirmation too, in the file of the iteration it
    // followed.
    assert!(
        there[3]
            .jobs
            .iter()
            .any(|j| j.name == format!("{prefix}-003-confirm")),
        "{:?}",
        there[3].jobs
    );
    // The job output files are beside the worktrees, named after the jobs.
    let logs: Vec<String> = std::fs::read_dir(t.path().join(".ooda/worktrees/k/slurm"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let baseline = logs
        .iter()
        .find(|n| n.starts_with(&format!("{prefix}-000-baseline-")))
        .unwrap_or_else(|| panic!("{logs:?}"));
    // Each job gave its allocation back by itself when its phase ended.
    let out = t.read(&format!(".ooda/worktrees/k/slurm/{baseline}"));
    assert_eq!(out, "", "{baseline}");
    assert!(!logs.iter().any(|n| n.ends_with(".alive")), "{logs:?}");
}

/// A script agent that plans X = 10 + 10 × the iteration.
const STEPPING_AGENT: &str = r#"#!/bin/sh
cat > /dev/null
x=$((10 + 10 * OODA_ITERATION))
case "$OODA_PHASE" in
  plan) printf '{"hypothesis": "X=%s", "change": "X", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.1, "predicted_sd": 0.1, "knobs": {"X": %s}}' "$x" "$x" > "$OODA_OUTPUT_FILE" ;;
  learn) printf '{"next": "go on"}' > "$OODA_OUTPUT_FILE" ;;
esac
"#;

#[test]
fn on_the_node_a_measured_command_is_confined_as_it_is_here() {
    let Some(_cluster) = cluster() else {
        return;
    };
    if ooda::testing::run::sandbox::landlock_abi().is_none() {
        eprintln!("skipped: no Landlock on this kernel");
        return;
    }
    let t = Test::new();
    t.script("ooda-agent.sh", STEPPING_AGENT);
    // The candidate's benchmark tries to write beside the checkout, which
    // only the run counter and the job log may be.
    t.script(
        "bench.sh",
        &logged_bench("touch \"$OODA_TEST_DIR/escaped\" 2>/dev/null\n"),
    );
    // Landlock grants name files that exist.
    t.write("counter", "0\n");
    t.write("jobs", "");
    t.write(
        "ooda.yaml",
        &format!(
            "{}sandbox: {{writable: [$OODA_TEST_DIR/counter, $OODA_TEST_DIR/jobs]}}\n",
            t.read("ooda.yaml")
        ),
    );
    t.brief(
        "k",
        &knob_brief("budget: { iterations: 1 }\nexecutor: slurm\n")
            .replace("agent: builtin", "agent: script")
            .replace(
                "protect: [\"bench.sh\"]",
                "protect: [\"bench.sh\", \"ooda-agent.sh\"]",
            ),
    );
    t.commit("k");
    t.ooda(&["run", "k"]).expect(4);
    let jobs = t.read("jobs");
    assert!(
        !jobs.is_empty() && jobs.lines().all(|l| !l.starts_with("here")),
        "every run was a job step: {jobs}"
    );
    assert!(
        !t.exists("escaped"),
        "a measured command wrote outside its worktree on the node"
    );
    assert_eq!(
        t.record("k", 1).knobs.get("X").map(|v| v.to_string()),
        Some("20".into())
    );
}

#[test]
fn a_job_cancelled_mid_measurement_is_measured_again_in_a_new_allocation() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // The fifth timed run cancels its own job, as an operator's scancel or
    // a preemption would.
    let t = project(
        "if [ \"$(cat \"$OODA_TEST_DIR/counter\" 2>/dev/null)\" = 4 ] && [ ! -e \"$OODA_TEST_DIR/cancelled\" ]; then touch \"$OODA_TEST_DIR/cancelled\"; scancel \"$SLURM_JOB_ID\"; sleep 30; fi\n",
        "budget: { iterations: 1 }\nexecutor: slurm\n",
    );
    // Nothing is decided on the cancelled job's runs: the night measures
    // the phase again in a new allocation and goes on.
    let run = t.ooda(&["run", "k"]).expect(4);
    assert!(
        run.stderr.contains("ended CANCELLED during the step")
            && run
                .stderr
                .contains("measuring again in a new allocation (retry 1 of 3)"),
        "{}",
        run.stderr
    );
    assert!(t.exists("cancelled"));
    let jobs = t.read("jobs");
    let distinct: std::collections::BTreeSet<&str> =
        jobs.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(distinct.len() >= 3, "baseline, cancelled, again: {jobs}");
    let r = t.record("k", 1);
    assert!(
        matches!(r.verdict, Verdict::Keep | Verdict::Discard),
        "{:?}",
        r.verdict
    );
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    assert_eq!(queued(&prefix), Vec::<String>::new());
}

#[test]
fn a_restarted_tick_adopts_its_job_by_name_instead_of_submitting_again() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = project("", "budget: { iterations: 1 }\nexecutor: slurm\n");
    // What a tick killed after its submit leaves: the baseline's job,
    // queued under the name ooda gives it, and a leftover of another phase.
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    let submit = |name: &str| {
        let out = Command::new("sbatch")
            .args([
                "--parsable",
                &format!("--job-name={name}"),
                "--output=/dev/null",
            ])
            .args(["--wrap", "exec sleep 600"])
            .output()
            .expect("sbatch");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let baseline = submit(&format!("{prefix}-000-baseline"));
    let stale = submit(&format!("{prefix}-007-evaluate"));
    let run = t.ooda(&["run", "k"]).expect(4);
    assert!(
        run.stderr
            .contains(&format!("adopting the Slurm job {baseline} ")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("cancelling the Slurm job {stale} ")),
        "{}",
        run.stderr
    );
    let jobs = t.read("jobs");
    let baseline_runs = jobs
        .lines()
        .filter(|l| l.starts_with(&format!("{baseline} ")))
        .count();
    assert!(
        baseline_runs >= 3,
        "the baseline was measured in the adopted job: {jobs}"
    );
    let r = t.record("k", 0);
    assert!(
        r.jobs.iter().any(|j| j.id == baseline && j.adopted),
        "{:?}",
        r.jobs
    );
    assert_eq!(queued(&prefix), Vec::<String>::new());
}

/// Waits until no job of `prefix` is queued (at most two minutes).
fn drained(prefix: &str) {
    for _ in 0..480 {
        if queued(prefix).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("still queued: {:?}", queued(prefix));
}

/// A Slurm client command in front of the real one: a directory holding
/// `tool` as a script that runs `body`, where `$REAL` is the real tool; and
/// the `PATH` that puts it first.
fn in_front_of(tool: &str, body: &str) -> (tempfile::TempDir, String) {
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join(tool);
    std::fs::write(&fake, format!("#!/bin/sh\nREAL={}\n{body}", real.trim())).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (bin, path)
}

/// `ooda run k` in the background, its stderr in the file `run.err`.
fn in_background(t: &Test) -> std::process::Child {
    let err = std::fs::File::create(t.path().join("run.err")).unwrap();
    t.command(&["run", "k"])
        .stdout(std::process::Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap()
}

/// Every run logged in `r`'s deciding jobs is one half of one of its pairs
/// (or its screening runs): none was measured twice. A keep's confirmation
/// is a series of its own, in a job of its own (`…-confirm`), and is not
/// among the decision's pairs.
fn each_run_once(t: &Test, r: &ooda::testing::archive::history::IterationRecord, said: &str) {
    let pairs = r.measured.as_ref().map_or(0, |m| m.pairs.len());
    let ids: Vec<&str> = r
        .jobs
        .iter()
        .filter(|j| !j.name.ends_with("-confirm"))
        .map(|j| j.id.as_str())
        .collect();
    let runs = t
        .read("jobs")
        .lines()
        .filter(|l| l.split(' ').next().is_some_and(|id| ids.contains(&id)))
        .count();
    // A screen is one run of the candidate, two after a near miss; a
    // point it turned away has those runs as its pairs.
    let screening = usize::from(r.screen) + usize::from(r.reason.contains("the first a near miss"));
    let expected = if r.screened() {
        screening
    } else {
        2 * pairs + screening
    };
    assert_eq!(runs, expected, "{:?}\n{said}", r.jobs);
}

/// The cluster's one node, for the tests that take it down or drain it;
/// `None` (the test is skipped) when the cluster has more.
fn one_node(what: &str) -> Option<String> {
    let nodes = Command::new("sinfo")
        .args(["--noheader", "--format=%N"])
        .output()
        .unwrap();
    let node = String::from_utf8_lossy(&nodes.stdout).trim().to_string();
    if node.is_empty() || node.contains(',') || node.contains('[') {
        eprintln!("skipped: needs a one-node cluster to {what} ({node})");
        return None;
    }
    Some(node)
}

#[test]
fn a_submitted_tick_runs_as_a_job_and_a_second_submit_finds_it_queued() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // Held, so that it is still queued when submitted again.
    let t = project(
        "",
        "budget: { iterations: 2 }\nexecutor: slurm\nslurm: { args: [\"--hold\"] }\n",
    );
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    let first = t.ooda(&["--json", "submit", "k"]).expect(0);
    let job: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
    let id = job["job"].as_str().unwrap().to_string();
    assert_eq!(job["name"], format!("{prefix}-tick"));
    let again = t.ooda(&["submit", "k"]).expect(0);
    assert!(
        again.stdout.contains(&format!("the Slurm job {id} "))
            && again.stdout.contains("already queued"),
        "{}",
        again.stdout
    );
    assert_eq!(queued(&prefix).len(), 1, "{:?}", queued(&prefix));
    let release = Command::new("scontrol")
        .args(["release", &id])
        .output()
        .unwrap();
    assert!(release.status.success());
    drained(&prefix);
    // The tick ran on the node: the baseline was measured there, in the
    // tick's own allocation rather than one of its own, which its file
    // names.
    let r = t.record("k", 0);
    let listed: Vec<(&str, &str)> = r
        .jobs
        .iter()
        .map(|j| (j.id.as_str(), j.name.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![(id.as_str(), format!("{prefix}-tick").as_str())],
        "{:?}",
        r.jobs
    );
    assert!(!r.jobs[0].node.is_empty(), "{:?}", r.jobs);
    let jobs = t.read("jobs");
    assert!(
        !jobs.is_empty() && jobs.lines().all(|l| l.starts_with(&format!("{id} "))),
        "{jobs}"
    );
    let out = std::fs::read_to_string(
        t.path()
            .join(".ooda/worktrees/k/slurm")
            .join(format!("{prefix}-tick-{id}.out")),
    )
    .unwrap();
    assert!(out.contains("baseline"), "{out}");
}

#[test]
fn submit_every_queues_the_next_tick_until_the_run_stops() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = project("", "budget: { iterations: 1 }\n");
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    let first = t.ooda(&["submit", "k", "--every", "1s"]).expect(0);
    assert!(
        first.stdout.contains("one tick every 1s"),
        "{}",
        first.stdout
    );
    // Tick 1 measures the baseline, tick 2 runs iteration 1, which uses up
    // the budget and records the stop; then nothing is queued again.
    drained(&prefix);
    assert_eq!(t.iterations("k"), vec![0, 1]);
    let state = t.state("k");
    assert_eq!(state["stop"]["reason"], "budget_iterations", "{state}");
    // Iteration 1 names the one job (the second tick) that measured it.
    let r = t.record("k", 1);
    assert_eq!(r.jobs.len(), 1, "{:?}", r.jobs);
    assert_eq!(r.jobs[0].name, format!("{prefix}-tick"));
    let ticks: std::collections::BTreeSet<String> =
        std::fs::read_dir(t.path().join(".ooda/worktrees/k/slurm"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("{prefix}-tick-")))
            .collect();
    assert_eq!(ticks.len(), 2, "{ticks:?}");
    let id = |n: &String| -> u64 {
        n.trim_end_matches(".out")
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let last = ticks.iter().max_by_key(|n| id(n)).unwrap();
    let out = std::fs::read_to_string(t.path().join(".ooda/worktrees/k/slurm").join(last)).unwrap();
    assert!(out.contains("no further tick is submitted"), "{out}");
    // A budget stop is how a run ends: the job COMPLETED, not FAILED.
    assert!(
        out.contains("ooda tick exited 4 (stopped, or busy)"),
        "{out}"
    );
    let shown = Command::new("scontrol")
        .args(["show", "job", &id(last).to_string()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("JobState=COMPLETED"), "{shown}");
}

#[test]
fn check_shows_where_measurements_run_and_the_sbatch_options() {
    let t = Test::new();
    t.write(
        "ooda.yaml",
        &format!(
            "{}slurm: {{partition: debug, cpus: 2}}\n",
            t.read("ooda.yaml")
        ),
    );
    t.brief("k", &knob_brief("executor: slurm\nslurm: { time: 30m }\n"));
    t.commit("k");
    let out = t.ooda(&["check", "k"]).expect(0);
    assert!(
        out.stdout.contains(
            "executor    slurm: each phase's measurements in one allocation (sbatch --partition=debug --cpus-per-task=2 --time=30)"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_limit_reached_inside_a_step_names_slurm_time_and_goes_on_from_the_pairs() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = Test::new();
    // The third run outlasts the allocation's minute, once.
    t.script(
        "bench.sh",
        &logged_bench("[ \"$(cat \"$OODA_TEST_DIR/counter\" 2>/dev/null)\" = 2 ] && [ ! -e \"$OODA_TEST_DIR/slept\" ] && touch \"$OODA_TEST_DIR/slept\" && sleep 150\n"),
    );
    t.brief(
        "k",
        &knob_brief("budget: { iterations: 1 }\nexecutor: slurm\nslurm: { time: 1m }\n")
            .replace("timeout: 20s", "timeout: 5m"),
    );
    t.commit("k");
    // The job ends under the step; the pair measured before it is kept,
    // and the baseline goes on in a new allocation.
    let run = t.ooda(&["run", "k"]).expect(4);
    assert!(
        run.stderr.contains("ended TIMEOUT during the step")
            && run.stderr.contains("raise `slurm.time`")
            && run.stderr.contains("(retry 1 of 3)"),
        "{}",
        run.stderr
    );
    assert_eq!(t.iterations("k"), vec![0, 1]);
    assert!(
        t.events("k")
            .iter()
            .any(|e| e.to_string().contains("pairs_resumed")),
        "{}",
        run.stderr
    );
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    assert_eq!(queued(&prefix), Vec::<String>::new());
}

/// Waits until `path` exists (at most a minute).
fn appears(path: &std::path::Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{} never appeared", path.display());
}

/// A night under way: `ooda run` of a one-iteration Slurm Brief whose third
/// timed run (of the baseline) sleeps a minute, returned once that run has
/// started (the file `started`). Its stderr goes to the file `run.err`.
fn measuring() -> (Test, std::process::Child) {
    let t = project(
        "[ \"$(cat \"$OODA_TEST_DIR/counter\" 2>/dev/null)\" = 2 ] && [ ! -e \"$OODA_TEST_DIR/started\" ] && touch \"$OODA_TEST_DIR/started\" && sleep 60\n",
        "budget: { iterations: 1 }\nexecutor: slurm\n",
    );
    let child = in_background(&t);
    appears(&t.path().join("started"));
    (t, child)
}

#[test]
fn an_interrupted_measurement_gives_its_job_back() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let (t, child) = measuring();
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    assert_eq!(queued(&prefix).len(), 1, "{:?}", queued(&prefix));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(status.code(), Some(130), "{}", t.read("run.err"));
    drained(&prefix);
}

#[test]
fn a_submit_that_fails_after_slurm_took_it_is_not_submitted_twice() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = project("", "budget: { iterations: 1 }\nexecutor: slurm\n");
    // An sbatch whose answer is lost: Slurm takes the job, the caller sees
    // a timeout.
    let (_bin, path) = in_front_of(
        "sbatch",
        "echo call >> \"$OODA_TEST_DIR/sbatch-calls\"\n\"$REAL\" \"$@\" > /dev/null\necho 'sbatch: error: Socket timed out on send/recv operation' >&2\nexit 1\n",
    );
    t.ooda_env(&["run", "k"], &[("PATH", path.as_str())])
        .expect(4);
    let calls = t.read("sbatch-calls").lines().count();
    let jobs = t.read("jobs");
    let distinct: std::collections::BTreeSet<&str> =
        jobs.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(calls, distinct.len(), "one submit per phase: {jobs}");
    let r = t.record("k", 1);
    assert!(matches!(r.verdict, Verdict::Keep | Verdict::Discard));
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

#[test]
fn a_preempted_measurement_is_measured_again_not_blamed_on_the_candidate() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // `.ci/slurm-up` makes `urgent` a partition that preempts `debug`.
    let urgent = Command::new("sinfo")
        .args(["--noheader", "--partition=urgent", "--format=%P"])
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    if !urgent {
        eprintln!("skipped: no `urgent` partition preempting the default one (.ci/slurm-up)");
        return;
    }
    let (t, child) = measuring();
    // A job of a higher tier wants the whole node.
    let high = Command::new("sbatch")
        .args([
            "--parsable",
            "--partition=urgent",
            "--exclusive",
            "--job-name=ooda-test-urgent",
            "--output=/dev/null",
            "--wrap",
            "sleep 2",
        ])
        .output()
        .unwrap();
    assert!(
        high.status.success(),
        "{}",
        String::from_utf8_lossy(&high.stderr)
    );
    // The night measures the baseline again, once the urgent job is
    // done, and goes on.
    let status = child.wait_with_output().unwrap().status;
    let stderr = t.read("run.err");
    assert_eq!(status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("ended PREEMPTED") && stderr.contains("(retry 1 of 3)"),
        "{stderr}"
    );
    assert_eq!(t.iterations("k"), vec![0, 1]);
    // The baseline's decision rests on runs of one job, a new one.
    let preempted = stderr
        .lines()
        .find(|l| l.contains("ended PREEMPTED"))
        .and_then(|l| l.split("the Slurm job ").nth(1))
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("{stderr}"));
    let r = t.record("k", 0);
    assert_eq!(r.jobs.len(), 1, "{:?}", r.jobs);
    assert!(
        r.jobs[0].id != preempted && !r.jobs[0].adopted,
        "{:?}",
        r.jobs
    );
    drained("ooda-test-urgent");
}

#[test]
fn a_candidate_that_cancels_its_own_job_is_a_crash_after_three_lost_jobs() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // The candidate's runs end their own allocation, every time.
    let t = project(
        "if [ \"${OODA_ITERATION:-0}\" -ge 1 ] && [ \"$OODA_SIDE\" = cand ]; then scancel \"$SLURM_JOB_ID\"; sleep 30; fi\n",
        "budget: { iterations: 1 }\nexecutor: slurm\n",
    );
    // Three times measured again, then recorded: the fourth step does not
    // measure it again.
    let run = t.ooda(&["run", "k"]).expect(4);
    assert_eq!(
        run.stderr
            .matches("measuring again in a new allocation")
            .count(),
        3,
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("ended CANCELLED during the step"));
    assert!(
        run.stderr
            .contains("measuring again in a new allocation (retry 3 of 3)")
    );
    let r = t.record("k", 1);
    // Each lost job is listed with the state it ended in.
    let lost: Vec<Option<&str>> = r.jobs.iter().map(|j| j.lost.as_deref()).collect();
    assert_eq!(lost, vec![Some("CANCELLED"); 3], "{:?}", r.jobs);
    // Each is the candidate's own doing (its command ran), and the morning
    // report and status list them as such.
    assert!(
        r.jobs.iter().all(|j| j.fault.as_deref() == Some("command")),
        "{:?}",
        r.jobs
    );
    let summary = t.read("iterations/k/summary.md");
    let warnings = summary
        .split("## Red lights and warnings")
        .nth(1)
        .unwrap_or_default();
    assert_eq!(
        warnings
            .matches("**Slurm job ended under the candidate's command**")
            .count(),
        3,
        "{summary}"
    );
    let shown = t.ooda(&["status", "k"]).stdout;
    assert!(
        shown.contains("lost in iteration 1: job") && shown.contains("CANCELLED (command)"),
        "{shown}"
    );
    assert_eq!(r.verdict, Verdict::Crash, "{}", r.reason);
    assert!(
        r.reason
            .contains("ended 3 times in a row while the candidate's command ran"),
        "{}",
        r.reason
    );
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

/// Puts the node back in service when dropped, however the test ends.
struct Resume(String);

impl Drop for Resume {
    fn drop(&mut self) {
        // A node ReturnToService=2 brought back already refuses `resume`.
        let _ = Command::new("scontrol")
            .args(["update", &format!("nodename={}", self.0), "state=resume"])
            .stderr(std::process::Stdio::null())
            .status();
        for _ in 0..300 {
            if ooda::testing::run::executor::slurm_available() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn a_node_that_fails_under_a_measurement_is_named_and_nothing_is_decided() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let Some(node) = one_node("take down") else {
        return;
    };
    let (t, child) = measuring();
    let resume = Resume(node.clone());
    let down = Command::new("scontrol")
        .args([
            "update",
            &format!("nodename={node}"),
            "state=down",
            "reason=ooda-test",
        ])
        .status()
        .unwrap();
    assert!(down.success());
    // The night waits for a node to measure the phase again on; nothing
    // was decided on the failed one.
    for _ in 0..600 {
        if t.read("run.err").contains("measuring again") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let stderr = t.read("run.err");
    assert!(stderr.contains("ended NODE_FAIL"), "{stderr}");
    assert_eq!(t.iterations("k"), Vec::<u32>::new(), "nothing decided");
    drop(resume);
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(status.code(), Some(4), "{}", t.read("run.err"));
    assert_eq!(t.iterations("k"), vec![0, 1]);
}

#[test]
fn a_candidate_over_its_jobs_memory_is_a_crash_that_names_the_limit() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // `.ci/slurm-up` has the cluster enforce `--mem`.
    let config = Command::new("scontrol")
        .args(["show", "config"])
        .output()
        .unwrap();
    if !String::from_utf8_lossy(&config.stdout).contains("OverMemoryKill") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI's cluster must enforce --mem"
        );
        eprintln!(
            "skipped: this cluster does not enforce --mem (.ci/slurm-up sets OverMemoryKill)"
        );
        return;
    }
    // The candidate holds 300 MB for a few seconds (tail keeps the one
    // endless line it reads), over the job's 100 MB; the base does not.
    let t = project(
        "if [ \"${OODA_ITERATION:-0}\" -ge 1 ] && [ \"$OODA_SIDE\" = cand ]; then { head -c 300000000 /dev/zero; sleep 4; } | tail -n 1 >/dev/null; fi\n",
        "budget: { iterations: 1 }\nexecutor: slurm\nslurm: { args: [\"--mem=100M\"] }\n",
    );
    t.ooda(&["run", "k"]).expect(4);
    let r = t.record("k", 1);
    assert_eq!(r.verdict, Verdict::Crash, "{}", r.reason);
    assert!(
        r.reason.contains("was killed by Slurm for its memory"),
        "{}",
        r.reason
    );
    let output = r.failure_output.unwrap_or_default();
    assert!(
        output.contains("Slurm reported killing this step for its memory")
            && output.contains("over its job's limit of 100.0 MiB")
            && output.contains("--mem="),
        "{}\n{output}",
        r.reason
    );
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

/// The line `.ci/slurm-up` writes first into the `slurm.conf` it made: only
/// such a cluster's daemons are the tests' to stop.
const OURS: &str =
    "# Written by ooda's .ci/slurm-up: it may rewrite this file and restart these daemons.";

/// The controller of the cluster `.ci/slurm-up` made, which the outage
/// tests stop and start; `None` (the test is skipped) for any other
/// cluster, whose daemons are not this suite's to stop.
struct Controller {
    stopped: std::cell::Cell<bool>,
}

fn controller() -> Option<Controller> {
    let conf = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap_or_default();
    if !conf.lines().any(|l| l == OURS) {
        eprintln!(
            "skipped: the cluster here was not made by .ci/slurm-up: its controller is not the tests' to stop"
        );
        return None;
    }
    Some(Controller {
        stopped: std::cell::Cell::new(false),
    })
}

impl Controller {
    fn stop(&self) {
        let pid = std::fs::read_to_string("/run/slurmctld.pid").expect("slurmctld's pid file");
        let pid = pid.trim().to_string();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert_eq!(comm.trim(), "slurmctld", "pid {pid} is not slurmctld");
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        self.stopped.set(true);
        for _ in 0..300 {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("slurmctld (pid {pid}) did not stop");
    }

    fn start(&self) {
        if !self.stopped.replace(false) {
            return;
        }
        let started = Command::new("slurmctld")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(started.success());
        for _ in 0..600 {
            if ooda::testing::run::executor::slurm_available() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("slurmctld did not come back");
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.start();
    }
}

/// A one-iteration night whose EVALUATE runs a second each, with the
/// controller stopped for `secs` seconds once EVALUATE has begun: the
/// decision completes after it returns, on its own pairs, each measured
/// once, and nothing about the outage is a verdict.
fn an_outage_mid_evaluate(secs: u64) {
    let Some(_cluster) = cluster() else {
        return;
    };
    let Some(ctl) = controller() else {
        return;
    };
    let t = project(
        ": \"$OODA_SIDE\"\nif [ \"${OODA_ITERATION:-0}\" -ge 1 ]; then touch \"$OODA_TEST_DIR/evaluating\"; sleep 1; fi\n",
        "budget: { iterations: 1 }\nexecutor: slurm\n",
    );
    let child = in_background(&t);
    appears(&t.path().join("evaluating"));
    ctl.stop();
    std::thread::sleep(std::time::Duration::from_secs(secs));
    ctl.start();
    let status = child.wait_with_output().unwrap().status;
    let stderr = t.read("run.err");
    // What the night said through the outage, for the test's log.
    eprintln!("{stderr}");
    assert_eq!(status.code(), Some(4), "{stderr}");
    let r = t.record("k", 1);
    assert!(
        matches!(r.verdict, Verdict::Keep | Verdict::Discard),
        "{:?}: {}\n{stderr}",
        r.verdict,
        r.reason
    );
    assert!(!r.reason.contains("Slurm"), "{}", r.reason);
    each_run_once(&t, &r, &stderr);
    if secs > 60 {
        assert!(
            stderr.contains("the Slurm controller does not answer")
                && stderr.contains("the Slurm controller answers again"),
            "{stderr}"
        );
    }
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

#[test]
fn a_controller_restart_mid_evaluate_is_waited_out_not_a_verdict() {
    an_outage_mid_evaluate(10);
}

#[test]
fn a_controller_down_for_90s_mid_evaluate_is_waited_out_not_a_verdict() {
    an_outage_mid_evaluate(90);
}

#[test]
fn a_time_limit_between_two_steps_names_slurm_time_and_keeps_the_pairs() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // The baseline's 80 runs of a second each outlast the allocation's
    // minute: the limit passes between two of its steps.
    let t = project(
        "sleep 1\n",
        "budget: { iterations: 1 }\nexecutor: slurm\nslurm: { time: 1m }\n",
    );
    t.write(
        "ooda.yaml",
        "defaults:\n  pairs: 3\n  calibration_pairs: 40\n",
    );
    t.commit("forty calibration pairs");
    let run = t.ooda(&["run", "k"]).expect(4);
    assert!(
        (run.stderr
            .contains("reached its time limit between two steps")
            || run.stderr.contains("it is given up before the pair"))
            && run.stderr.contains("raise `slurm.time`")
            && run.stderr.contains("(retry 1 of 3)"),
        "{}",
        run.stderr
    );
    assert_eq!(t.iterations("k"), vec![0, 1]);
    // The baseline went on in a second job from the pairs of the first:
    // at most the half pair the limit cut was measured again.
    let jobs = t.read("jobs");
    let mut per_job: Vec<(String, usize)> = Vec::new();
    for id in jobs.lines().filter_map(|l| l.split(' ').next()) {
        match per_job.last_mut() {
            Some((last, n)) if last == id => *n += 1,
            _ => per_job.push((id.to_string(), 1)),
        }
    }
    let cal = t.record("k", 0);
    let pairs = cal.calibration.as_ref().map(|c| c.pairs.len()).unwrap_or(0);
    assert_eq!(pairs, 40, "{:?}", cal.calibration);
    let baseline_runs = per_job[0].1 + per_job[1].1;
    assert!(per_job[0].1 >= 2, "{per_job:?}");
    assert!(
        baseline_runs <= 2 * pairs + 1,
        "pairs measured twice: {per_job:?}"
    );
    assert!(
        t.events("k")
            .iter()
            .any(|e| e.to_string().contains("pairs_resumed")),
        "{}",
        run.stderr
    );
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

/// This Brief's tick jobs in the queue: `(id, state)`.
fn ticks(prefix: &str) -> Vec<(String, String)> {
    queued(&format!("{prefix}-tick"))
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[2].to_string())
        })
        .collect()
}

/// Waits (at most two minutes) until `ok` holds of this Brief's ticks.
fn ticks_until(prefix: &str, ok: impl Fn(&[(String, String)]) -> bool) -> Vec<(String, String)> {
    for _ in 0..480 {
        let now = ticks(prefix);
        if ok(&now) {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("ticks never as wanted: {:?}", ticks(prefix));
}

#[test]
fn a_submit_every_chain_survives_a_cancelled_tick_and_status_names_a_broken_one() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = project("sleep 0.5\n", "budget: { iterations: 2 }\n");
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    t.ooda(&["submit", "k", "--every", "1s"]).expect(0);
    // The running tick has queued the next when it started: cancelled
    // mid-measurement, the chain goes on from the one queued.
    let running = ticks_until(&prefix, |j| {
        j.len() == 2 && j.iter().any(|(_, s)| s == "RUNNING")
    });
    let (id, _) = running.iter().find(|(_, s)| s == "RUNNING").unwrap();
    assert!(Command::new("scancel").arg(id).status().unwrap().success());
    drained(&prefix);
    assert_eq!(t.iterations("k"), vec![0, 1, 2]);
    assert_eq!(t.state("k")["stop"]["reason"], "budget_iterations");

    // A chain with nothing queued while the run is open is an error that
    // says how to mend it.
    let t = project("", "budget: { iterations: 3 }\n");
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    t.ooda(&["submit", "k", "--every", "1h"]).expect(0);
    // The first tick measures the baseline; the next waits its hour.
    let queued_next = ticks_until(&prefix, |j| {
        j.len() == 1 && j[0].1 == "PENDING" && t.iterations("k") == vec![0]
    });
    let shown = t.ooda(&["status", "k"]).expect(0);
    assert!(
        shown
            .stdout
            .contains(&format!("next tick: job {}", queued_next[0].0)),
        "{}",
        shown.stdout
    );
    assert!(
        Command::new("scancel")
            .arg(&queued_next[0].0)
            .status()
            .unwrap()
            .success()
    );
    drained(&prefix);
    let shown = t.ooda(&["status", "k"]);
    assert!(
        shown.stdout.contains("ERROR")
            && shown
                .stdout
                .contains("no tick job is queued for the `ooda submit k --every 1h` chain")
            && shown
                .stdout
                .contains("`ooda submit k --every 1h` queues one again"),
        "{}",
        shown.stdout
    );
    t.ooda(&["submit", "k", "--every", "1h"]).expect(0);
    let shown = t.ooda(&["status", "k"]).expect(0);
    assert!(shown.stdout.contains("next tick: job"), "{}", shown.stdout);
    for (id, _) in ticks(&prefix) {
        let _ = Command::new("scancel").arg(id).status();
    }
    drained(&prefix);
}

#[test]
fn after_kill_9_the_orphaned_step_is_cancelled_before_any_new_pair() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // Every run logs when it starts; the third (a baseline run) then beats
    // every half second for a minute, as long as it is alive.
    let t = project(
        "date +%s.%N >> \"$OODA_TEST_DIR/starts\"\nif [ \"$(cat \"$OODA_TEST_DIR/counter\" 2>/dev/null)\" = 2 ] && [ ! -e \"$OODA_TEST_DIR/started\" ]; then touch \"$OODA_TEST_DIR/started\"; for i in $(seq 120); do date +%s.%N >> \"$OODA_TEST_DIR/beats\"; sleep 0.5; done; fi\n",
        "budget: { iterations: 1 }\nexecutor: slurm\n",
    );
    let mut child = t
        .command(&["run", "k"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    appears(&t.path().join("started"));
    std::thread::sleep(std::time::Duration::from_secs(1));
    child.kill().unwrap();
    child.wait().unwrap();
    let starts_before = t.read("starts").lines().count();
    let run = t.ooda(&["run", "k"]).expect(4);
    assert!(
        run.stderr.contains("adopting the Slurm job")
            && run.stderr.contains("cancelling the step(s)"),
        "{}",
        run.stderr
    );
    let beats: Vec<f64> = t
        .read("beats")
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    let last_beat = beats.iter().cloned().fold(0.0, f64::max);
    assert!(
        beats.len() < 100,
        "the orphan ran to its end: {}",
        beats.len()
    );
    let starts: Vec<f64> = t
        .read("starts")
        .lines()
        .skip(starts_before)
        .filter_map(|l| l.parse().ok())
        .collect();
    assert!(!starts.is_empty());
    assert!(
        starts.iter().all(|s| *s > last_beat),
        "a run started while the orphan was alive: last beat {last_beat}, starts {starts:?}"
    );
    assert_eq!(t.iterations("k"), vec![0, 1]);
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

#[test]
fn a_drained_node_is_shown_waiting_and_parked_past_the_pending_limit() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let Some(node) = one_node("drain") else {
        return;
    };
    let t = project(
        "",
        "budget: { iterations: 1 }\nexecutor: slurm\nslurm: { pending_limit: 20s }\n",
    );
    let resume = Resume(node.clone());
    let drain = Command::new("scontrol")
        .args([
            "update",
            &format!("nodename={node}"),
            "state=drain",
            "reason=ooda-test-drain",
        ])
        .status()
        .unwrap();
    assert!(drain.success());
    let child = in_background(&t);
    let mut seen = String::new();
    for _ in 0..150 {
        seen = t.ooda(&["status", "k"]).stdout;
        if seen.contains("waiting for Slurm: job") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        seen.contains("waiting for Slurm: job") && seen.contains("pending ("),
        "{seen}"
    );
    let status = child.wait_with_output().unwrap().status;
    drop(resume);
    let stderr = t.read("run.err");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("past `slurm.pending_limit` (20s)") && stderr.contains("pending ("),
        "{stderr}"
    );
    assert_eq!(t.iterations("k"), Vec::<u32>::new(), "nothing decided");
    let shown = t.ooda(&["status", "k"]).stdout;
    assert!(shown.contains("slurm.pending_limit"), "{shown}");
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}

#[test]
fn the_cluster_script_leaves_a_slurm_conf_it_did_not_write_alone() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("slurm.conf");
    let theirs = "ClusterName=site\nSlurmctldHost=head\n";
    std::fs::write(&conf, theirs).unwrap();
    let pid = std::fs::read_to_string("/run/slurmctld.pid").unwrap_or_default();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/slurm-up");
    let out = Command::new(&script)
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("was not written by this script: it is left alone"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), theirs);
    // The daemons running here were not stopped.
    assert_eq!(
        std::fs::read_to_string("/run/slurmctld.pid").unwrap_or_default(),
        pid
    );
    assert!(ooda::testing::run::executor::slurm_available());
}

#[test]
fn the_measurement_lock_is_waited_for_before_the_allocation_is_asked_for() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = project("", "budget: { iterations: 1 }\nexecutor: slurm\n");
    let prefix = ooda::testing::run::executor::job_prefix(t.path(), "k");
    // Held here, as another Brief measuring would hold it.
    let holder = t.hold_measure_lock();
    let child = in_background(&t);
    for _ in 0..300 {
        if t.read("run.err")
            .contains("waiting for the measurement lock")
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        t.read("run.err")
            .contains("before asking Slurm for an allocation"),
        "{}",
        t.read("run.err")
    );
    // While it waits, no allocation's time runs.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(queued(&prefix), Vec::<String>::new());
    drop(holder);
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(status.code(), Some(4), "{}", t.read("run.err"));
    assert_eq!(t.iterations("k"), vec![0, 1]);
    drained(&prefix);
}

#[test]
fn a_step_whose_srun_does_not_return_is_taken_from_its_record() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // One run of iteration 1 asks the `srun` in front of it to hang once
    // its step is done, as `srun` does while the controller that should
    // tell it the step ended is away.
    let t = project(
        ": \"$OODA_SIDE\"\nif [ \"${OODA_ITERATION:-0}\" -ge 1 ] && [ ! -e \"$OODA_TEST_DIR/hung\" ]; then touch \"$OODA_TEST_DIR/hang\" \"$OODA_TEST_DIR/hung\"; fi\n",
        "budget: { iterations: 1 }\nexecutor: slurm\n",
    );
    let (_bin, path) = in_front_of(
        "srun",
        "\"$REAL\" \"$@\"\nrc=$?\nif [ -e \"$OODA_TEST_DIR/hang\" ]; then rm -f \"$OODA_TEST_DIR/hang\"; sleep 600; fi\nexit $rc\n",
    );
    let run = t
        .ooda_env(&["run", "k"], &[("PATH", path.as_str())])
        .expect(4);
    assert!(t.exists("hung") && !t.exists("hang"), "{}", run.stderr);
    let r = t.record("k", 1);
    assert!(
        matches!(r.verdict, Verdict::Keep | Verdict::Discard),
        "{:?}: {}\n{}",
        r.verdict,
        r.reason,
        run.stderr
    );
    // The hung run's value was read from its record, not measured again.
    each_run_once(&t, &r, &run.stderr);
    drained(&ooda::testing::run::executor::job_prefix(t.path(), "k"));
}
