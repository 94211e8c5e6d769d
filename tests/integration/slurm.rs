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
    for line in text.lines() {
        jobs = line == "jobs:" || (jobs && (line.starts_with("- ") || line.starts_with("  ")));
        if !jobs && !line.starts_with("brief_hash:") {
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
fn a_phase_past_its_time_limit_names_the_limit_and_decides_nothing() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let t = Test::new();
    // The third run outlasts the allocation's minute.
    t.script(
        "bench.sh",
        &logged_bench("[ \"$(cat \"$OODA_TEST_DIR/counter\" 2>/dev/null)\" = 2 ] && sleep 150\n"),
    );
    t.brief(
        "k",
        &knob_brief("budget: { iterations: 1 }\nexecutor: slurm\nslurm: { time: 1m }\n")
            .replace("timeout: 20s", "timeout: 5m"),
    );
    t.commit("k");
    let run = t.ooda(&["run", "k"]).expect(1);
    assert!(
        run.stderr.contains("ended TIMEOUT during the step")
            && run.stderr.contains("raise `slurm.time`"),
        "{}",
        run.stderr
    );
    assert_eq!(t.iterations("k"), Vec::<u32>::new(), "no baseline decided");
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
    let err = std::fs::File::create(t.path().join("run.err")).unwrap();
    let child = t
        .command(&["run", "k"])
        .stdout(std::process::Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap();
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
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v sbatch"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("sbatch");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho call >> \"$OODA_TEST_DIR/sbatch-calls\"\n{} \"$@\" > /dev/null\necho 'sbatch: error: Socket timed out on send/recv operation' >&2\nexit 1\n",
            real.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
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
    assert_eq!(r.verdict, Verdict::Crash, "{}", r.reason);
    assert!(
        r.reason.contains("lost their Slurm job 3 times in a row"),
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
    let nodes = Command::new("sinfo")
        .args(["--noheader", "--format=%N"])
        .output()
        .unwrap();
    let node = String::from_utf8_lossy(&nodes.stdout).trim().to_string();
    if node.is_empty() || node.contains(',') || node.contains('[') {
        eprintln!("skipped: needs a one-node cluster to take down ({node})");
        return;
    }
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
