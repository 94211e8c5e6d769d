//! One lease of the Slurm executor: the commands of a phase, each a step of
//! its job, and what is known about a step when `srun` cannot say.
//!
//! Why a record of each step on the shared filesystem: `srun` learns how
//! its step ended from the controller, so while the controller is away a
//! step that finished on its node can leave `srun` waiting (and the
//! command's timeout would then call a measured value a timeout), and a
//! step that never started looks like a command that failed. The node
//! writes the step's id when it starts, its standard output as it goes, and
//! its exit code when it ends ([`Record`]); ooda reads them when `srun`
//! fails or does not return, so a step that ran is taken for what it did,
//! a step that never started is started again once the controller answers,
//! and a step still running after its timeout is cancelled before anything
//! runs beside it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::Slurm;
use super::controller::{ALIVE, Asked, ask, scancel, steps_of};
use super::ended::{GONE, JobEnded, hint, into_io};
use crate::error::Error;
use crate::model::{ClusterJob, CommandOutcome};
use crate::run::exec::{self, CommandOutput, CommandSpec, shell_quote};
use crate::run::executor::Lease;
use crate::run::measure_lock::MeasureLock;

/// How long `srun` may go on after its step wrote its exit code before
/// ooda stops waiting for it and reads the record.
const SRUN_GRACE: Duration = Duration::from_secs(10);

/// How many times a step that never started is started again while its job
/// runs (a controller restarting refuses steps for a moment).
const UNSTARTED_TRIES: u32 = 3;

pub(super) struct JobStep<'a> {
    pub(super) slurm: &'a Slurm,
    pub(super) job: ClusterJob,
    /// Stops the heartbeat thread when the lease ends.
    pub(super) stop: std::sync::Arc<(Mutex<bool>, std::sync::Condvar)>,
    pub(super) beating: Option<std::thread::JoinHandle<()>>,
    /// The host's measurement lock, taken before the allocation.
    pub(super) lock: Option<MeasureLock>,
    /// Numbers the steps' records.
    pub(super) steps: AtomicU32,
}

/// What the node wrote about one step, under `<logs>/steps/`.
pub(super) struct Record {
    dir: PathBuf,
}

impl Record {
    fn new(logs: &Path, job: &str, n: u32) -> io::Result<Record> {
        let dir = logs
            .join("steps")
            .join(format!("{job}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Record { dir })
    }

    /// The records of job `job`'s steps (an earlier ooda's, once adopted).
    pub(super) fn clear_job(logs: &Path, job: &str) {
        let Ok(entries) = std::fs::read_dir(logs.join("steps")) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{job}-"))
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }

    /// `JOB.STEP`, once the step started on its node.
    fn step(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("step"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| s.contains('.') && !s.ends_with('.'))
    }

    /// The command's exit code, once the step ended on its node. The
    /// directory is listed first: on NFS a lookup of a name that did not
    /// exist can be answered from a cache for half a minute, a listing is
    /// asked of the server.
    fn exit(&self) -> Option<i32> {
        let listed = std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .any(|e| e.file_name() == "exit");
        if !listed {
            return None;
        }
        std::fs::read_to_string(self.dir.join("exit"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The command's standard output, capped at `cap` bytes, and the
    /// bytes left out.
    fn stdout(&self, cap: usize) -> (String, u64) {
        let bytes = std::fs::read(self.dir.join("out")).unwrap_or_default();
        let cut = &bytes[..bytes.len().min(cap)];
        (
            String::from_utf8_lossy(cut).into_owned(),
            (bytes.len() - cut.len()) as u64,
        )
    }

    fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Lease for JobStep<'_> {
    fn run(&self, spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput> {
        let mut unstarted = 0;
        loop {
            let n = self.steps.fetch_add(1, Ordering::Relaxed);
            let rec = Record::new(&self.slurm.logs, &self.job.id, n)?;
            let ran = self.once(spec, cancel, &rec);
            rec.remove();
            let ran = match ran {
                Err(e) if interrupted(&e) => return Ok(CommandOutput::interrupted()),
                r => r?,
            };
            match ran {
                Some(out) => return Ok(out),
                None => {
                    unstarted += 1;
                    if unstarted >= UNSTARTED_TRIES {
                        return Err(into_io(self.ended(
                            "FAILED",
                            &format!(
                                "the Slurm job {} ({}) runs, but {UNSTARTED_TRIES} steps in a row could not be started in it; see `scontrol show job {}`",
                                self.job.id, self.job.name, self.job.id
                            ),
                            spec.cwd,
                        )));
                    }
                    self.slurm.say(&format!(
                        "the step could not be started in the Slurm job {} (its job runs): starting it again",
                        self.job.id
                    ));
                }
            }
        }
    }

    fn holds_measurements(&self) -> bool {
        self.lock.is_some()
    }

    fn before_pair(&self, needs: Duration) -> io::Result<()> {
        if needs.is_zero() {
            return Ok(());
        }
        // Unanswered: the steps find out, patiently.
        let Asked::Known(info) = ask(&self.job.id) else {
            return Ok(());
        };
        let Some(end) = info.end else {
            return Ok(());
        };
        let left = (end - chrono::Local::now().naive_local())
            .to_std()
            .unwrap_or_default();
        // A pair as long as the longest so far, half again, and a margin
        // for starting its steps.
        let wanted = needs + needs / 2 + Duration::from_secs(5);
        if left >= wanted {
            return Ok(());
        }
        Err(into_io(JobEnded::new(
            &self.job,
            "TIMEOUT",
            format!(
                "the Slurm job {} ({}) has {}s left before its time limit, less than the {}s another pair may take (the longest so far, {}s, half again and 5s): it is given up before the pair; raise `slurm.time` (the pairs measured so far are kept)",
                self.job.id,
                self.job.name,
                left.as_secs(),
                wanted.as_secs(),
                needs.as_secs(),
            ),
            None,
        )))
    }
}

impl JobStep<'_> {
    /// One `srun` of `spec`: its outcome, or `None` when the step never
    /// started while its job runs on (to be started again).
    fn once(
        &self,
        spec: &CommandSpec,
        cancel: &AtomicBool,
        rec: &Record,
    ) -> io::Result<Option<CommandOutput>> {
        let (mut out, abandoned) = self.srun(spec, cancel, rec)?;
        if out.status == CommandOutcome::Interrupted && !abandoned {
            return Ok(Some(out));
        }
        let started = rec.step();
        match rec.exit() {
            // The step ended on its node and `srun` did not say so (the
            // controller did not answer it): its result is the record's.
            Some(code) if abandoned || out.status == CommandOutcome::TimedOut => {
                out.status = if code == 0 {
                    CommandOutcome::Success
                } else {
                    CommandOutcome::Failed
                };
                out.exit_code = Some(code);
                let (stdout, left_out) = rec.stdout(spec.output_cap);
                out.stdout = stdout;
                out.truncated_bytes = out.truncated_bytes.max(left_out);
                if out.output.trim().is_empty() {
                    out.output = out.stdout.clone();
                }
                out.output.push_str(&format!(
                    "\nooda: the step {} ended on its node with exit code {code}, and srun did not return (the Slurm controller did not answer it): its output was read from the step's record\n",
                    started.as_deref().unwrap_or("?")
                ));
                // The controller may list it still: it is done.
                if let Some(s) = &started {
                    scancel(s);
                }
                return Ok(Some(out));
            }
            None if out.status == CommandOutcome::TimedOut => {
                if let Some(s) = &started {
                    // A real timeout: the step runs on on its node, and
                    // nothing may be measured beside it.
                    self.cancel_step(s, spec.cwd).map_err(to_io)?;
                    return Ok(Some(out));
                }
            }
            _ => {}
        }
        // Slurm kills a step over its memory limit and leaves the job
        // running: the step failed because of what the command did, so it
        // stays the command's failure, named as what it was.
        if out.status != CommandOutcome::Success
            && let Some((ended_by, note)) = out_of_memory(&out.output)
        {
            out.output.push_str(&note);
            out.ended_by = Some(ended_by);
        }
        let failed = out.status != CommandOutcome::Success;
        // Never started: `srun` said why (its own error lines), or did not
        // return at all. A command cannot get here by failing: the record
        // says it started before it ran.
        let srun_failed = slurm_error(&out.output) || out.status == CommandOutcome::TimedOut;
        if started.is_none() && failed && srun_failed {
            // `srun` failed before the step ran: the job's doing, or the
            // controller's, never the command's.
            return match self
                .slurm
                .ask_patiently(&self.job, Some(spec.cwd))
                .map_err(to_io)?
            {
                // Past its end (or refused for it): RUNNING until the
                // controller's next pass, COMPLETING, or TIMEOUT already.
                Asked::Known(info)
                    if matches!(info.state.as_str(), "RUNNING" | "COMPLETING" | "TIMEOUT")
                        && (info.past_its_end() || refused_for_its_end(&out.output)) =>
                {
                    // No command ran: between steps.
                    Err(into_io(JobEnded::new(
                        &self.job,
                        "TIMEOUT",
                        format!(
                            "the Slurm job {} ({}) reached its time limit between two steps; {}",
                            self.job.id,
                            self.job.name,
                            hint("TIMEOUT")
                        ),
                        None,
                    )))
                }
                Asked::Known(info) if info.state == "RUNNING" && !info.preempted => {
                    // A step created as `srun` gave up may run after all:
                    // nothing runs beside it.
                    self.slurm.cancel_orphan_steps(&self.job).map_err(to_io)?;
                    Ok(None)
                }
                // Ended while no command of the phase ran: nobody's but
                // the cluster's (or someone else's) doing, and measured
                // again.
                Asked::Known(info) => {
                    let state = if info.preempted {
                        "PREEMPTED"
                    } else {
                        info.state.as_str()
                    };
                    let mut e = JobEnded::new(
                        &self.job,
                        state,
                        format!(
                            "the Slurm job {} ({}) on {} ended {state} between two steps; {}",
                            self.job.id,
                            self.job.name,
                            self.job.node,
                            hint(state)
                        ),
                        None,
                    );
                    e.retry = e.retry || state == "CANCELLED";
                    Err(into_io(e))
                }
                _ => Err(into_io(JobEnded::new(
                    &self.job,
                    GONE,
                    format!(
                        "the Slurm job {} ({}) is {GONE}; {}",
                        self.job.id,
                        self.job.name,
                        hint(GONE)
                    ),
                    None,
                ))),
            };
        }
        // The command's own result, or its job's end? Asked after a failed
        // step, and after one where Slurm reported an error (srun exits 0
        // when the node under it failed); a clean success costs no call.
        // A cancelled job reads COMPLETING for a moment, and a preempted
        // one with a grace time still RUNNING while its steps are
        // signalled: look again for a few seconds before believing it.
        let signalled = matches!(out.exit_code, None | Some(137 | 143));
        if !failed && !slurm_error(&out.output) {
            return Ok(Some(out));
        }
        let deadline = Instant::now() + Duration::from_secs(if signalled { 5 } else { 2 });
        loop {
            let state = match self
                .slurm
                .ask_patiently(&self.job, Some(spec.cwd))
                .map_err(to_io)?
            {
                // Preempted with a grace time: RUNNING while its steps are
                // signalled, however long the grace.
                Asked::Known(info) if info.preempted => "PREEMPTED".to_string(),
                Asked::Known(info) => info.state,
                _ => GONE.to_string(),
            };
            match state.as_str() {
                "RUNNING" if !signalled => break,
                "RUNNING" | "COMPLETING" if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                "RUNNING" => break,
                _ => return Err(into_io(self.ended_in(&state, spec.cwd))),
            }
        }
        Ok(Some(out))
    }

    /// Runs `srun` for `spec`, watched: once the step's record says it
    /// ended, `srun` has [`SRUN_GRACE`] to return before it is stopped.
    /// Its output, and whether it was stopped for that.
    fn srun(
        &self,
        spec: &CommandSpec,
        cancel: &AtomicBool,
        rec: &Record,
    ) -> io::Result<(CommandOutput, bool)> {
        let line = self.srun_line(spec, rec);
        let local = CommandSpec {
            command: &line,
            cwd: spec.cwd,
            env: spec.env.clone(),
            timeout: spec.timeout,
            output_cap: spec.output_cap,
            stdin: spec.stdin,
            landlock: None,
            writable: Vec::new(),
            // srun passes its own environment on to the step.
            measured: spec.measured,
        };
        let stop = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        let abandoned = AtomicBool::new(false);
        let out = std::thread::scope(|s| {
            s.spawn(|| {
                let mut ended_at: Option<Instant> = None;
                while !done.load(Ordering::Relaxed) {
                    if cancel.load(Ordering::Relaxed) {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if ended_at.is_none() && rec.exit().is_some() {
                        ended_at = Some(Instant::now());
                    }
                    if ended_at.is_some_and(|t| t.elapsed() > SRUN_GRACE) {
                        abandoned.store(true, Ordering::Relaxed);
                        stop.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            let out = exec::run(&local, &stop);
            done.store(true, Ordering::Relaxed);
            out
        })?;
        let abandoned = abandoned.load(Ordering::Relaxed) && !cancel.load(Ordering::Relaxed);
        Ok((out, abandoned))
    }

    /// Cancels step `s` (its command ran past its timeout), waiting for the
    /// controller if it does not answer, and sees it gone.
    fn cancel_step(&self, s: &str, during: &Path) -> crate::error::Result<()> {
        let deadline = Instant::now() + self.slurm.controller_wait() + Duration::from_secs(30);
        loop {
            if Instant::now() > deadline {
                return Err(super::lost(JobEnded::new(
                    &self.job,
                    super::ended::UNANSWERED,
                    format!(
                        "the step {s} of the Slurm job {} ran past its timeout and is still listed after `scancel`: nothing is measured beside it, and the next tick looks again. See `squeue --steps --jobs {}`",
                        self.job.id, self.job.id
                    ),
                    Some(during),
                )));
            }
            if !scancel(s) {
                self.slurm.ask_patiently(&self.job, Some(during))?;
                continue;
            }
            match steps_of(&self.job.id) {
                Some(steps) if !steps.iter().any(|x| x == s) => return Ok(()),
                None => {
                    self.slurm.ask_patiently(&self.job, Some(during))?;
                }
                Some(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    fn ended_in(&self, state: &str, during: &Path) -> JobEnded {
        self.ended(
            state,
            &format!(
                "the Slurm job {} ({}) on {} ended {state} during the step; {}",
                self.job.id,
                self.job.name,
                self.job.node,
                hint(state)
            ),
            during,
        )
    }

    fn ended(&self, state: &str, message: &str, during: &Path) -> JobEnded {
        JobEnded::new(&self.job, state, message.to_string(), Some(during))
    }

    /// `srun` of `spec.command` as a step of the lease's job, contained on
    /// the node as it would be here, writing its record `rec`.
    fn srun_line(&self, spec: &CommandSpec, rec: &Record) -> String {
        let q = |p: &Path| shell_quote(&p.display().to_string());
        // A private temporary directory made on the node for each step
        // (this machine's may not exist there, and the node's /tmp is
        // shared with everything else), removed when the step ends.
        let mut run = String::new();
        if let Some(h) = crate::run::sandbox::helper() {
            run.push_str(&format!("{} {}", q(h), crate::run::sandbox::HELPER_ARG));
            if let Some(abi) = spec.landlock.or(self.slurm.abi) {
                run.push_str(&format!(" --abi {abi}"));
                let grants = std::iter::once(spec.cwd)
                    .chain(self.slurm.writable.iter().map(PathBuf::as_path))
                    .chain(spec.writable.iter().map(PathBuf::as_path));
                for w in grants {
                    run.push_str(&format!(" --write {}", q(w)));
                }
                run.push_str(" --write \"$TMPDIR\"");
            }
            run.push_str(" --");
        }
        run.push_str(&format!(" sh -c {}", shell_quote(spec.command)));
        // The record: the step's id once the wrapper is set up (it
        // started: a wrapper that fails before says so as Slurm's own
        // tools do, so it is not the command's failure), its standard
        // output as it goes, its exit code last (it ended). The exit code
        // goes through a file because a pipeline's status is its last
        // command's.
        let d = q(&rec.dir);
        let node = format!(
            "TMPDIR=$(mktemp -d /tmp/ooda-step-XXXXXXXX) || {{ echo \"srun: error: ooda's step wrapper: no temporary directory on $(hostname)\" >&2; exit 125; }}; export TMPDIR; echo \"$SLURM_JOB_ID.$SLURM_STEP_ID\" > {d}/step || {{ echo \"srun: error: ooda's step wrapper: cannot write {d}/step on $(hostname)\" >&2; rm -rf \"$TMPDIR\"; exit 125; }}; {{ {}; echo $? > {d}/rc; }} | tee {d}/out; rc=$(cat {d}/rc 2>/dev/null || echo 125); rm -rf \"$TMPDIR\"; echo $rc > {d}/exit.part && mv {d}/exit.part {d}/exit; exit $rc",
            run.trim_start()
        );
        let cpus = self
            .slurm
            .settings
            .cpus
            .map(|c| format!(" --cpus-per-task={c}"))
            .unwrap_or_default();
        format!(
            "exec srun --jobid={} --overlap --nodes=1 --ntasks=1{cpus} --quiet --kill-on-bad-exit=1 --chdir={} sh -c {}",
            self.job.id,
            q(spec.cwd),
            shell_quote(&node)
        )
    }
}

impl Drop for JobStep<'_> {
    fn drop(&mut self) {
        if let Ok(mut stopped) = self.stop.0.lock() {
            *stopped = true;
        }
        self.stop.1.notify_all();
        if let Some(t) = self.beating.take() {
            let _ = t.join();
        }
        // Given back by the placeholder itself, which sees its heartbeat
        // file gone within a second; cancelled when it does not.
        let _ = std::fs::remove_file(self.slurm.heartbeat(&self.job.name));
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match ask(&self.job.id) {
                Asked::Known(info) if ALIVE.contains(&info.state.as_str()) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                // No answer: the placeholder ends by itself when its
                // heartbeat file is gone; a cancel would not be heard.
                Asked::Unanswered(_) => return,
                _ => return,
            }
        }
        scancel(&self.job.id);
    }
}

/// An error of the executor as a lease's: an interrupt stays one.
fn to_io(e: Error) -> io::Error {
    match e {
        Error::Io { source, .. } => source,
        other => io::Error::other(other),
    }
}

/// Whether `e` is an interrupt carried as a lease's error.
fn interrupted(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|i| i.downcast_ref::<Error>())
        .is_some_and(|e| matches!(e, Error::Interrupted))
}

/// Whether `srun` was refused a step because its job is at its end.
fn refused_for_its_end(output: &str) -> bool {
    output.contains("Job/step already completing or completed")
        || output.contains("Job has reached its time limit")
}

/// Whether `output` holds a line Slurm's own tools print about a step or
/// its job (`srun: error: Node failure on …`, `slurmstepd: error: …`).
fn slurm_error(output: &str) -> bool {
    output
        .lines()
        .any(|l| l.starts_with("srun: error:") || l.starts_with("slurmstepd"))
}

/// The note ooda adds under a step Slurm killed for its memory: the
/// limit is the job's (`--mem`), enforced by the accounting poll
/// (`exceeded memory limit (USED > LIMIT)`) or by the cgroup's OOM killer
/// (`Detected N oom-kill event(s)`).
/// Returns the failure's reason and the note.
fn out_of_memory(output: &str) -> Option<(String, String)> {
    let line = output.lines().find(|l| {
        (l.starts_with("slurmstepd")
            && (l.contains("exceeded memory limit")
                || l.contains("exceeded virtual memory limit")
                || l.contains("oom-kill event")))
            || (l.starts_with("srun: error:") && l.ends_with("Out Of Memory"))
    })?;
    let sizes = line
        .split_once("memory limit (")
        .and_then(|(_, r)| r.split_once(')'))
        .and_then(|(r, _)| r.split_once(" > "))
        .and_then(|(used, limit)| Some((used.parse::<u64>().ok()?, limit.parse::<u64>().ok()?)));
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let what = match sizes {
        Some((used, limit)) => format!(
            "it used {:.1} MiB, over its job's limit of {:.1} MiB",
            mib(used),
            mib(limit)
        ),
        None => "it ran out of its job's memory".to_string(),
    };
    Some((
        format!("was killed by Slurm for its memory: {what}"),
        format!(
            "\nooda: Slurm reported killing this step for its memory: {what}. If the command needs that much, raise the limit with `slurm.args: [\"--mem=…\"]`.\n"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_killed_for_its_memory_is_named_with_its_sizes() {
        let polled = "x\nslurmstepd-vm: error: StepId=332.0 exceeded memory limit (181456896 > 104857600), being killed\n";
        let (reason, note) = out_of_memory(polled).unwrap();
        assert!(
            reason.starts_with("was killed by Slurm for its memory"),
            "{reason}"
        );
        assert!(
            note.contains("173.1 MiB, over its job's limit of 100.0 MiB"),
            "{note}"
        );
        assert!(note.contains("--mem="), "{note}");
        let cgroup = "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=7.0. Some of your processes may have been killed by the cgroup out-of-memory handler.\n";
        assert!(
            out_of_memory(cgroup)
                .unwrap()
                .1
                .contains("ran out of its job's memory")
        );
        let srun = "srun: error: vm: task 0: Out Of Memory\n";
        assert!(
            out_of_memory(srun)
                .unwrap()
                .0
                .contains("ran out of its job's memory")
        );
        let virt = "slurmstepd: error: StepId=9.0 exceeded virtual memory limit (2097152 > 1048576), being killed\n";
        assert!(
            out_of_memory(virt)
                .unwrap()
                .0
                .contains("2.0 MiB, over its job's limit of 1.0 MiB")
        );
        assert_eq!(out_of_memory("exceeded memory limit (1 > 0)\n"), None);
    }

    #[test]
    fn a_steps_record_says_whether_it_started_and_how_it_ended() {
        let logs = tempfile::tempdir().unwrap();
        let rec = Record::new(logs.path(), "41", 0).unwrap();
        assert_eq!((rec.step(), rec.exit()), (None, None));
        // The node writes `$SLURM_JOB_ID.$SLURM_STEP_ID`; outside a step
        // the second is empty, which is no step.
        std::fs::write(rec.dir.join("step"), "41.\n").unwrap();
        assert_eq!(rec.step(), None);
        std::fs::write(rec.dir.join("step"), "41.3\n").unwrap();
        std::fs::write(rec.dir.join("out"), "METRIC t=1.5\nmore").unwrap();
        assert_eq!(rec.step().as_deref(), Some("41.3"));
        assert_eq!(rec.exit(), None, "still running");
        std::fs::write(rec.dir.join("exit"), "0\n").unwrap();
        assert_eq!(rec.exit(), Some(0));
        assert_eq!(rec.stdout(12), ("METRIC t=1.5".to_string(), 5));
        // An adopted job's records (an earlier ooda's) go, others stay.
        let other = Record::new(logs.path(), "42", 0).unwrap();
        Record::clear_job(logs.path(), "41");
        assert!(!rec.dir.exists() && other.dir.exists());
    }

    #[test]
    fn a_step_refused_at_its_jobs_end_is_told_from_other_refusals() {
        assert!(refused_for_its_end(
            "srun: error: Unable to create step for job 990: Job/step already completing or completed\n"
        ));
        assert!(!refused_for_its_end(
            "srun: error: Unable to confirm allocation for job 989: Unable to contact slurm controller (connect failure)\n"
        ));
    }

    #[test]
    fn slurms_own_error_lines_are_told_from_the_commands_output() {
        assert!(slurm_error("METRIC t=1\nsrun: error: Node failure on vm\n"));
        assert!(slurm_error(
            "slurmstepd-vm: error: *** STEP 12.3 ON vm CANCELLED AT 2026-12-04T01:55:26 ***"
        ));
        assert!(!slurm_error(
            "METRIC t=1\nwarning: srun: error: in a log line\n"
        ));
    }
}
