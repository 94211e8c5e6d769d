//! Measurements through a real Slurm cluster (`executor: slurm`).
//!
//! These need a cluster that answers `sinfo` on this machine, with the
//! project's files visible on its node (a one-node cluster on this very
//! machine: `.ci/slurm-up` brings one up, and CI runs it). Without one they
//! say so on stderr and pass, so a laptop without Slurm can run the suite.

use std::process::Command;

use crate::test::{Test, bench_after, knob_brief};
use ooda::history::Verdict;

fn cluster() -> bool {
    let up = ooda::executor::slurm_available();
    if !up {
        eprintln!("skipped: no Slurm cluster answers `sinfo` here (run .ci/slurm-up)");
    }
    up
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
        "100 + 10 * ((x - 40) / 10) * ((x - 40) / 10)",
        0.01,
    )
}

fn night(executor: &str) -> (Test, Vec<ooda::history::IterationRecord>) {
    let t = Test::new();
    t.script("bench.sh", &logged_bench(""));
    t.brief(
        "k",
        &knob_brief(&format!(
            "budget: {{ iterations: 3 }}\nexecutor: {executor}\n"
        )),
    );
    t.commit("k");
    t.ooda_env(
        &["run", "k"],
        &[("OODA_TEST_DIR", &t.path().display().to_string())],
    )
    .expect(4);
    let records = (0..=3).map(|i| t.record("k", i)).collect();
    (t, records)
}

#[test]
fn a_night_measured_through_slurm_decides_as_a_local_night_does() {
    if !cluster() {
        return;
    }
    let (local, here) = night("local");
    let (t, there) = night("slurm");
    for (a, b) in here.iter().zip(&there) {
        assert_eq!(a.verdict, b.verdict, "iteration {}", a.iteration);
        assert_eq!(a.knobs, b.knobs, "iteration {}", a.iteration);
        let values = |r: &ooda::history::IterationRecord| {
            r.measured
                .as_ref()
                .map(|m| m.pairs.iter().map(|p| (p.base, p.cand)).collect::<Vec<_>>())
        };
        assert_eq!(values(a), values(b), "iteration {}", a.iteration);
    }
    assert!(there.iter().any(|r| r.verdict == Verdict::Keep));
    // Every timed run was a step of a Slurm job; locally none was.
    let jobs = t.read("jobs");
    assert!(!jobs.is_empty());
    assert!(jobs.lines().all(|l| !l.starts_with("here")), "{jobs}");
    assert!(local.read("jobs").lines().all(|l| l.starts_with("here ")));
    // Each phase had its own allocation, and none is left behind.
    let distinct: std::collections::BTreeSet<&str> =
        jobs.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(distinct.len() >= 4, "baseline, 3 decisions: {distinct:?}");
    let prefix = ooda::executor::job_prefix(t.path(), "k");
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
    // The job output files are beside the worktrees, named after the jobs.
    let logs: Vec<String> = std::fs::read_dir(t.path().join(".ooda/worktrees/k/slurm"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        logs.iter()
            .any(|n| n.starts_with(&format!("{prefix}-000-baseline-"))),
        "{logs:?}"
    );
}

#[test]
fn a_job_cancelled_mid_measurement_is_measured_again_by_the_next_tick() {
    if !cluster() {
        return;
    }
    let t = Test::new();
    // The fifth timed run cancels its own job, as an operator's scancel or
    // a preemption would.
    t.script(
        "bench.sh",
        &logged_bench(
            "if [ \"$(cat \"$OODA_TEST_DIR/counter\" 2>/dev/null)\" = 4 ] && [ ! -e \"$OODA_TEST_DIR/cancelled\" ]; then touch \"$OODA_TEST_DIR/cancelled\"; scancel \"$SLURM_JOB_ID\"; sleep 30; fi\n",
        ),
    );
    t.brief(
        "k",
        &knob_brief("budget: { iterations: 1 }\nexecutor: slurm\n"),
    );
    t.commit("k");
    let env = [("OODA_TEST_DIR", t.path().display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let first = t.ooda_env(&["run", "k"], &env);
    assert_ne!(first.code, 0, "{}", first.stdout);
    assert!(
        first.stderr.contains("CANCELLED") || first.stderr.contains("gone from the queue"),
        "{}",
        first.stderr
    );
    assert!(t.exists("cancelled"));
    // Nothing was decided on the cancelled job's runs; the next tick
    // measures the phase again in a new allocation and goes on.
    t.ooda_env(&["run", "k"], &env).expect(4);
    let r = t.record("k", 1);
    assert!(
        matches!(r.verdict, Verdict::Keep | Verdict::Discard),
        "{:?}",
        r.verdict
    );
    let prefix = ooda::executor::job_prefix(t.path(), "k");
    assert_eq!(queued(&prefix), Vec::<String>::new());
}

#[test]
fn a_restarted_tick_adopts_its_job_by_name_instead_of_submitting_again() {
    if !cluster() {
        return;
    }
    let t = Test::new();
    t.script("bench.sh", &logged_bench(""));
    t.brief(
        "k",
        &knob_brief("budget: { iterations: 1 }\nexecutor: slurm\n"),
    );
    t.commit("k");
    // What a tick killed after its submit leaves: the baseline's job,
    // queued under the name ooda gives it, and a leftover of another phase.
    let prefix = ooda::executor::job_prefix(t.path(), "k");
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
    let env = [("OODA_TEST_DIR", t.path().display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = t.ooda_env(&["run", "k"], &env).expect(4);
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
