//! The Slurm executor: a phase's measurements in one Slurm allocation.
//!
//! Why one allocation per phase and not a job per command: base and
//! candidate must be measured on the same node in the same conditions (the
//! paired test assumes it), and a job per timed run would put each pair's
//! halves wherever the scheduler found room, with its queue wait between
//! them. So a lease for [`Purpose::Measure`] or [`Purpose::Check`] holds one
//! job (a placeholder that waits), and every command of the phase is a job
//! step in it (`srun --jobid … --overlap`). Agent steps stay on this
//! machine: compute nodes often cannot reach a model API.
//!
//! Robust against the scheduler and against ooda's own crashes: every job is
//! named before it is submitted, from the project, the Brief, the iteration
//! and the phase (`ooda-<brief>-<project hash>-<iteration>-<phase>`). A
//! lease first asks `squeue` for this Brief's jobs: the one with its name
//! (left by a tick that was killed, or by a submit call that timed out after
//! Slurm took it) is adopted instead of submitted twice; for a holder of the
//! Brief's lock, any other is a leftover of an earlier tick and is
//! cancelled. Dropping the lease gives the job back (the placeholder ends
//! when its heartbeat file goes), and a placeholder whose ooda died ends ten
//! minutes after the last heartbeat. A job that ends under a running step (preempted, timed out,
//! cancelled, its node failed or out of memory) turns the step into a
//! [`JobEnded`] error that names the job's state, and nothing of the phase
//! is decided. `ooda run` measures the phase again at once in a new
//! allocation when that can go otherwise (preempted, cancelled, node lost),
//! a tick leaves it to the next tick; a preempted measurement is never
//! counted as the candidate's crash, while an end the measured command can
//! cause (a cancel, a time or memory limit) counts towards
//! `state::LOST_JOBS_MAX`.
//!
//! The sandbox goes with the step: on the node, the command runs under
//! ooda's helper (`ooda __contain`, the same binary, so the project's
//! filesystem must be shared with the nodes, as Slurm deployments are) with
//! the Landlock policy it would have had here. `srun` itself runs here
//! contained but unconfined: it must reach the controller.

use crate::model::CommandOutcome;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::{Executor, Lease, Local, Purpose};
use crate::error::{Error, Result};
use crate::model::{ClusterJob, SlurmSettings};
use crate::run::exec::{self, CommandOutput, CommandSpec, shell_quote};

/// How often a pending job is looked at.
const POLL: Duration = Duration::from_millis(250);

/// How long one `sbatch`, `squeue` or `scancel` call may take before ooda
/// stops waiting for it (a controller that does not answer).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// States in which a job still holds, or will hold, its allocation.
const ALIVE: &[&str] = &["PENDING", "CONFIGURING", "RUNNING", "RESIZING", "SUSPENDED"];

/// Measurements in Slurm allocations; agent steps through `here`.
pub(crate) struct Slurm {
    here: Local,
    settings: SlurmSettings,
    /// The names of this Brief's jobs start with it.
    prefix: String,
    /// The Brief's name, on every line this prints.
    brief: String,
    /// Where the placeholder jobs write their output (`--output`).
    logs: PathBuf,
    /// The Landlock ABI and grants commands get on the node.
    abi: Option<i32>,
    writable: Vec<PathBuf>,
    /// The jobs leased since they were last taken, in order.
    used: Mutex<Vec<ClusterJob>>,
    /// Set when ooda is asked to stop: a lease waiting for its job gives up.
    interrupt: crate::run::interrupt::Interrupt,
    /// Whether this Brief's other jobs are leftovers to cancel: only for a
    /// holder of the Brief's lock (a tick), never for `ooda check`, which
    /// may run beside a tick.
    sweep: bool,
}

impl Slurm {
    /// An executor for the Brief `brief` of the project at `root`, writing
    /// job output under `logs`; `here` runs agent steps and is the sandbox
    /// measured commands get on the node.
    pub(crate) fn new(
        here: Local,
        settings: SlurmSettings,
        root: &Path,
        brief: &str,
        logs: PathBuf,
        interrupt: crate::run::interrupt::Interrupt,
    ) -> Slurm {
        let (abi, writable) = here.confinement();
        Slurm {
            here,
            settings,
            prefix: job_prefix(root, brief),
            brief: brief.to_string(),
            logs,
            abi,
            writable,
            used: Mutex::new(Vec::new()),
            interrupt,
            sweep: true,
        }
    }

    /// Leaves this Brief's other jobs alone (for a caller without the
    /// Brief's lock).
    pub(crate) fn without_sweep(mut self) -> Slurm {
        self.sweep = false;
        self
    }

    /// The job a lease for `purpose` holds; none for an agent step, which
    /// runs here.
    fn name_for(&self, purpose: Purpose) -> Option<String> {
        match purpose {
            Purpose::Measure(job) => Some(format!(
                "{}-{:03}-{}",
                self.prefix, job.iteration, job.phase
            )),
            Purpose::Check => Some(format!("{}-check", self.prefix)),
            Purpose::Agent => None,
        }
    }

    /// Adopts the job called `name` if the queue has it, cancels this
    /// Brief's other jobs, and otherwise submits a new one; then waits until
    /// it runs.
    fn allocate(&self, name: &str) -> Result<ClusterJob> {
        // This Brief's measurement jobs; a submitted tick (`-tick`) is not
        // one, and a chained one waiting for its start time is left alone.
        let mine = |j: &Queued| {
            j.name.starts_with(&format!("{}-", self.prefix)) && !j.name.ends_with("-tick")
        };
        let queued = squeue()?;
        let mut adopted = None;
        let alive = |j: &&Queued| ALIVE.contains(&j.state.as_str());
        for j in queued.iter().filter(|j| mine(j)).filter(alive) {
            if j.name == name && adopted.is_none() {
                self.say(&format!(
                    "adopting the Slurm job {} ({name}, {}): an earlier tick submitted it",
                    j.id, j.state
                ));
                adopted = Some(j.id.clone());
            } else if self.sweep {
                self.say(&format!(
                    "cancelling the Slurm job {} ({}): an earlier tick of this Brief left it",
                    j.id, j.name
                ));
                scancel(&j.id);
            }
        }
        std::fs::create_dir_all(&self.logs)
            .map_err(|e| Error::io(format!("creating {}", self.logs.display()), e))?;
        beat(&self.heartbeat(name));
        let (id, was_adopted) = match adopted {
            Some(id) => (id, true),
            None => (self.submit(name)?, false),
        };
        // Nothing holds the job yet: on any failure here it is cancelled.
        let node = self.wait_running(&id, name).inspect_err(|_| scancel(&id))?;
        self.probe(&id, name, &node).inspect_err(|_| scancel(&id))?;
        self.say(&format!(
            "measuring in the Slurm job {id} ({name}) on {node}"
        ));
        let job = ClusterJob {
            id,
            name: name.to_string(),
            node,
            adopted: was_adopted,
            lost: None,
        };
        if let Ok(mut u) = self.used.lock() {
            u.push(job.clone());
        }
        Ok(job)
    }

    /// A line on stderr as the rest of a tick's are: the time, the Brief.
    fn say(&self, msg: &str) {
        crate::events::log::Log::new(crate::validate::cron::Zone::from_env(), false)
            .info(Some(&self.brief), msg);
    }

    /// The file a lease touches while it holds job `name`.
    fn heartbeat(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.alive"))
    }

    fn submit(&self, name: &str) -> Result<String> {
        // The placeholder holds the allocation while the lease touches its
        // heartbeat file (on the shared filesystem) and gives it back
        // HEARTBEAT_LOST after the last touch: an ooda killed with -9
        // leaves no allocation behind for longer than that.
        let hb = shell_quote(&self.heartbeat(name).display().to_string());
        let lost = HEARTBEAT_LOST.as_secs();
        // The lease removes the file when it is done: the job then ends by
        // itself (COMPLETED, with nothing in its output file).
        let script = format!(
            "while [ -e {hb} ] && [ $(( $(date +%s) - $(stat -c %Y {hb} 2>/dev/null || echo 0) )) -lt {lost} ]; do sleep 1; done"
        );
        sbatch(name, &self.logs, &self.settings, &[], &script)
    }

    /// One step that starts ooda's helper on the node, so that a node which
    /// cannot run it (no shared binary, an older kernel's Landlock) is named
    /// before any measurement, not taken for the candidate's failure.
    fn probe(&self, id: &str, name: &str, node: &str) -> Result<()> {
        let Some(helper) = crate::run::sandbox::helper() else {
            return Ok(());
        };
        let mut args = vec![
            format!("--jobid={id}"),
            "--overlap".into(),
            "--nodes=1".into(),
            "--ntasks=1".into(),
            "--quiet".into(),
            helper.display().to_string(),
            crate::run::sandbox::HELPER_ARG.into(),
        ];
        if let Some(abi) = self.abi {
            args.extend([
                "--abi".into(),
                abi.to_string(),
                "--write".into(),
                "/tmp".into(),
            ]);
        }
        args.extend(["--".into(), "true".into()]);
        call("srun", &args).map(|_| ()).map_err(|e| {
            Error::Input(format!(
                "the Slurm job {id} ({name}) cannot run ooda's sandbox helper on {node}: {e}\nThe nodes need the ooda binary at {} (a shared filesystem){}; pin measurements to nodes that have them with `slurm.constraint`",
                helper.display(),
                match self.abi {
                    Some(abi) => format!(" and a kernel with Landlock ABI {abi} or newer (or cap it with {}=N)", crate::run::sandbox::ABI_CAP_ENV),
                    None => String::new(),
                }
            ))
        })
    }

    /// Waits until job `id` runs; its node.
    fn wait_running(&self, id: &str, name: &str) -> Result<String> {
        let started = Instant::now();
        let mut said = false;
        loop {
            match job_state(id) {
                Some((state, node)) if state == "RUNNING" && !node.is_empty() => return Ok(node),
                Some((state, _)) if ALIVE.contains(&state.as_str()) => {}
                Some((state, _)) => {
                    return Err(Error::io(
                        format!("waiting for the Slurm job {id}"),
                        io::Error::other(JobEnded {
                            message: format!(
                                "the Slurm job {id} ({name}) ended {state} before it ran; {}",
                                hint(&state)
                            ),
                            // A pending job a human cancelled stays cancelled.
                            retry: matches!(
                                state.as_str(),
                                "PREEMPTED" | "NODE_FAIL" | "BOOT_FAIL"
                            ),
                            by_command: false,
                            job: ClusterJob {
                                id: id.to_string(),
                                name: name.to_string(),
                                node: String::new(),
                                adopted: false,
                                lost: Some(state.clone()),
                            },
                        }),
                    ));
                }
                None if started.elapsed() < Duration::from_secs(5) => {}
                None => {
                    return Err(Error::Input(format!(
                        "the Slurm job {id} ({name}) is gone from the queue before it ran; see `scontrol show job {id}` and {}",
                        self.logs.display()
                    )));
                }
            }
            if !said && started.elapsed() > Duration::from_secs(10) {
                self.say(&format!(
                    "waiting for the Slurm job {id} ({name}) to start (squeue -j {id} -o '%i %j %T %R')"
                ));
                said = true;
            }
            if self.interrupt.is_set() {
                scancel(id);
                return Err(Error::Interrupted);
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Submits `script` as job `name` (one task on one node, `settings` and
/// `extra` as sbatch options, output under `logs`); its id. A submit call
/// that fails or times out may still have been taken: the job's name finds
/// it rather than a second submit.
fn sbatch(
    name: &str,
    logs: &Path,
    settings: &SlurmSettings,
    extra: &[String],
    script: &str,
) -> Result<String> {
    std::fs::create_dir_all(logs)
        .map_err(|e| Error::io(format!("creating {}", logs.display()), e))?;
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name={name}"),
        format!("--output={}/%x-%j.out", logs.display()),
        "--nodes=1".into(),
        "--ntasks=1".into(),
        // A requeued job would carry on the phase on another node.
        "--no-requeue".into(),
    ];
    args.extend(settings.sbatch_args());
    args.extend(extra.iter().cloned());
    args.push(format!("--wrap={script}"));
    match call("sbatch", &args) {
        Ok(out) => {
            // `--parsable` prints `id` or `id;cluster`.
            let id = out.trim().split(';').next().unwrap_or("").to_string();
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
                return Err(Error::Input(format!(
                    "sbatch answered {out:?} instead of a job id (arguments: {})",
                    args.join(" ")
                )));
            }
            Ok(id)
        }
        Err(e) => match squeue()?
            .into_iter()
            .find(|j| j.name == name && ALIVE.contains(&j.state.as_str()))
        {
            Some(j) => Ok(j.id),
            None => Err(Error::Input(format!(
                "{e}\nThe options come from `slurm:` in ooda.yaml and the Brief (`sinfo` lists the partitions and their limits)."
            ))),
        },
    }
}

/// A step's job ended under it: the cluster's doing (or the candidate's,
/// which can `scancel` it), never the command's own failure.
#[derive(Debug, Clone)]
pub(crate) struct JobEnded {
    pub message: String,
    /// Whether measuring the phase again at once, in a new allocation, can
    /// go otherwise: after a preemption, a cancel or a lost node yes; a job
    /// that hit its time or memory limit would hit it again, and a state
    /// ooda does not know is left to a human.
    pub retry: bool,
    /// Whether the measured command may have caused it (it can `scancel`
    /// its job, or run past the job's time or memory): such ends count
    /// towards `state::LOST_JOBS_MAX`. A preemption or a failed node never
    /// does, nor a job that ended before anything ran in it.
    pub by_command: bool,
    /// The job, with the state it ended in: the iteration file lists it.
    pub job: ClusterJob,
}

impl std::fmt::Display for JobEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobEnded {}

/// The [`JobEnded`] behind `e`, when a lost allocation is what failed.
pub(crate) fn job_ended(e: &Error) -> Option<&JobEnded> {
    match e {
        Error::Io { source, .. } => source.get_ref()?.downcast_ref::<JobEnded>(),
        _ => None,
    }
}

/// Set in the environment of a tick that `ooda submit` runs as a job: its
/// measurements run where the job runs, in the job's own allocation.
pub(crate) const SUBMITTED_ENV: &str = "OODA_SUBMITTED";

/// What `ooda submit` did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Submitted {
    pub job: String,
    pub name: String,
    /// The job was already queued under its name (its state): nothing was
    /// submitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_queued: Option<String>,
    /// Seconds from now the job may start (`--begin`), for a chained tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub begins_in: Option<u64>,
}

/// A whole tick of Brief `brief` as a job (`ooda submit`): `exe tick`, and
/// with `every` (its text and length) the same submission again at the
/// job's end, `every` later. `begin_in` delays this job's start. A job of
/// that name already queued (other than the one calling) is the answer.
pub(crate) fn submit_tick(
    settings: &SlurmSettings,
    root: &Path,
    brief: &str,
    logs: &Path,
    exe: &Path,
    every: Option<&str>,
    begin_in: Option<Duration>,
) -> Result<Submitted> {
    let name = format!("{}-tick", job_prefix(root, brief));
    let me = std::env::var("SLURM_JOB_ID").ok();
    if let Some(j) = squeue()?.into_iter().find(|j| {
        j.name == name && ALIVE.contains(&j.state.as_str()) && me.as_deref() != Some(&j.id)
    }) {
        return Ok(Submitted {
            job: j.id,
            name,
            already_queued: Some(j.state),
            begins_in: None,
        });
    }
    let q = |p: &Path| shell_quote(&p.display().to_string());
    let ooda = format!("{} --root {}", q(exe), q(root));
    let mut script = format!("{ooda} tick {}; rc=$?", shell_quote(brief));
    if let Some(every) = every {
        // The next tick is queued once this one is done, so two ticks of a
        // Brief never wait for each other's lock.
        script.push_str(&format!(
            "; {ooda} submit {} --every {} --chained",
            shell_quote(brief),
            shell_quote(every)
        ));
    }
    // A run that stopped on its budget, or a tick that found another
    // holding the Brief's lock, ended as it should: the job is COMPLETED,
    // not FAILED (mail on failure, accounting). A RED light stays a failure.
    script.push_str(
        "; case $rc in 4|5) echo \"ooda tick exited $rc (stopped, or busy): the job is done\"; rc=0 ;; esac; exit $rc",
    );
    let mut extra = vec![format!("--export=ALL,{SUBMITTED_ENV}=1")];
    if let Some(d) = begin_in {
        extra.push(format!("--begin=now+{}", d.as_secs().max(1)));
    }
    let job = sbatch(&name, logs, settings, &extra, &script)?;
    Ok(Submitted {
        job,
        name,
        already_queued: None,
        begins_in: begin_in.map(|d| d.as_secs()),
    })
}

/// `ooda-<brief>-<6 hex digits of the project's path>`: two checkouts with
/// a Brief of the same name never adopt each other's jobs.
pub fn job_prefix(root: &Path, brief: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in root.as_os_str().as_encoded_bytes() {
        h = (h ^ u32::from(*b)).wrapping_mul(0x0100_0193);
    }
    format!("ooda-{brief}-{:06x}", h & 0xff_ffff)
}

/// What to do about a job that ended in `state`.
/// What [`Step::ended`] calls a job no scheduler command knows any more.
const GONE: &str = "gone from the queue";

/// What a job's end means for the user, by its state.
fn hint(state: &str) -> &'static str {
    match state {
        "PREEMPTED" => {
            "it was preempted: nothing of the phase is decided, and measuring it again can go otherwise"
        }
        "TIMEOUT" | "DEADLINE" => "it hit its time limit: raise `slurm.time`",
        "OUT_OF_MEMORY" => "it ran out of memory: ask for more with `slurm.args: [\"--mem=…\"]`",
        "NODE_FAIL" | "BOOT_FAIL" => {
            "its node failed: nothing of the phase is decided, and measuring it again can go otherwise"
        }
        "CANCELLED" => "it was cancelled (scancel): nothing of the phase is decided",
        _ => "see `scontrol show job` and the job's output file",
    }
}

/// How long a placeholder outlives the last touch of its heartbeat file.
const HEARTBEAT_LOST: Duration = Duration::from_secs(600);

/// How often a held lease touches it.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(60);

fn beat(path: &Path) {
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
}

struct Step<'a> {
    slurm: &'a Slurm,
    job: ClusterJob,
    /// Stops the heartbeat thread when the lease ends.
    stop: std::sync::Arc<(Mutex<bool>, std::sync::Condvar)>,
    beating: Option<std::thread::JoinHandle<()>>,
}

impl Lease for Step<'_> {
    fn run(&self, spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput> {
        let line = self.srun_line(spec);
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
        let mut out = exec::run(&local, cancel)?;
        if matches!(out.status, CommandOutcome::Interrupted) {
            return Ok(out);
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
        // The command's own result, or its job's end? Asked after a failed
        // step, and after one where Slurm reported an error (srun exits 0
        // when the node under it failed); a clean success costs no call.
        // A cancelled job reads COMPLETING for a moment, and a preempted
        // one with a grace time still RUNNING while its steps are
        // signalled: look again for a few seconds before believing it.
        let signalled = matches!(out.exit_code, None | Some(137 | 143));
        let failed = out.status != CommandOutcome::Success;
        if !failed && !slurm_error(&out.output) {
            return Ok(out);
        }
        let deadline = Instant::now() + Duration::from_secs(if signalled { 5 } else { 2 });
        loop {
            match job_state(&self.job.id) {
                Some((state, _)) if state == "RUNNING" && !signalled => break,
                Some((state, _))
                    if (state == "RUNNING" || state == "COMPLETING")
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Some((state, _)) if state == "RUNNING" => break,
                Some((state, _)) => return Err(self.ended(&state)),
                // A controller that does not answer says nothing about a
                // step that succeeded.
                None if !failed => break,
                None if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                None => return Err(self.ended(GONE)),
            }
        }
        Ok(out)
    }
}

impl Step<'_> {
    fn ended(&self, state: &str) -> io::Error {
        io::Error::other(JobEnded {
            message: format!(
                "the Slurm job {} ({}) on {} ended {state} during the step; {}",
                self.job.id,
                self.job.name,
                self.job.node,
                hint(state)
            ),
            retry: matches!(
                state,
                "PREEMPTED" | "NODE_FAIL" | "BOOT_FAIL" | "CANCELLED" | GONE
            ),
            by_command: matches!(
                state,
                "CANCELLED" | GONE | "TIMEOUT" | "DEADLINE" | "OUT_OF_MEMORY"
            ),
            job: ClusterJob {
                lost: Some(state.to_string()),
                ..self.job.clone()
            },
        })
    }

    /// `srun` of `spec.command` as a step of the lease's job, contained on
    /// the node as it would be here.
    fn srun_line(&self, spec: &CommandSpec) -> String {
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
        let node = format!(
            "TMPDIR=$(mktemp -d /tmp/ooda-step-XXXXXXXX) || exit 125; export TMPDIR; {}; rc=$?; rm -rf \"$TMPDIR\"; exit $rc",
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

impl Drop for Step<'_> {
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
            match job_state(&self.job.id) {
                Some((state, _)) if ALIVE.contains(&state.as_str()) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => return,
            }
        }
        scancel(&self.job.id);
    }
}

impl Executor for Slurm {
    fn agent_confinement(&self) -> (Option<i32>, Vec<std::path::PathBuf>) {
        self.here.confinement()
    }

    fn lease(&self, purpose: Purpose) -> Result<Box<dyn Lease + '_>> {
        let Some(name) = self.name_for(purpose) else {
            return self.here.lease(purpose);
        };
        let job = self.allocate(&name)?;
        let stop = std::sync::Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let (hb, flag) = (self.heartbeat(&job.name), stop.clone());
        // Touched while the lease is held, however long one step runs.
        let beating = std::thread::Builder::new()
            .name("ooda-slurm-heartbeat".into())
            .spawn(move || {
                let (lock, wake) = &*flag;
                let Ok(mut stopped) = lock.lock() else {
                    return;
                };
                while !*stopped {
                    beat(&hb);
                    match wake.wait_timeout(stopped, HEARTBEAT_EVERY) {
                        Ok((g, _)) => stopped = g,
                        Err(_) => return,
                    }
                }
            })
            .ok();
        Ok(Box::new(Step {
            slurm: self,
            job,
            stop,
            beating,
        }))
    }

    fn take_jobs(&self) -> Vec<ClusterJob> {
        self.used
            .lock()
            .map(|mut u| std::mem::take(&mut *u))
            .unwrap_or_default()
    }
}

/// One line of `squeue`.
#[derive(Debug, Clone)]
struct Queued {
    id: String,
    name: String,
    state: String,
}

/// This user's jobs in the queue.
fn squeue() -> Result<Vec<Queued>> {
    let out = call("squeue", &["--noheader", "--me", "--format=%i|%j|%T"])?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let mut f = l.trim().splitn(3, '|');
            Some(Queued {
                id: f.next()?.to_string(),
                name: f.next()?.to_string(),
                state: f.next()?.to_string(),
            })
        })
        .collect())
}

/// A job's state and node, from `scontrol` (which knows a job for a while
/// after it ended, without accounting, and says CANCELLED where `squeue`
/// still shows COMPLETING), else `squeue`; `None` when neither knows it.
fn job_state(id: &str) -> Option<(String, String)> {
    if let Ok(out) = call("scontrol", &["--oneliner", "show", "job", id]) {
        let field = |key: &str| {
            out.split_whitespace()
                .find_map(|f| f.strip_prefix(key))
                .map(str::to_string)
        };
        if let Some(state) = field("JobState=") {
            let node = field("NodeList=").filter(|n| n != "(null)");
            return Some((state, node.unwrap_or_default()));
        }
    }
    let out = call("squeue", &["--noheader", "--jobs", id, "--format=%T|%N"]).ok()?;
    let line = out.lines().next()?;
    let (state, node) = line.trim().split_once('|')?;
    Some((state.to_string(), node.to_string()))
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

/// Cancels job `id`, best effort: a job already gone is what was wanted.
fn scancel(id: &str) {
    let _ = call("scancel", &[id]);
}

/// Runs a Slurm client command; its standard output, or an error naming
/// the command and what it printed.
fn call<S: AsRef<str>>(program: &str, args: &[S]) -> Result<String> {
    call_within(program, args, CALL_TIMEOUT)
}

fn call_within<S: AsRef<str>>(program: &str, args: &[S], timeout: Duration) -> Result<String> {
    let line = std::iter::once(program)
        .chain(args.iter().map(AsRef::as_ref))
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ");
    let spec = CommandSpec {
        command: &line,
        cwd: Path::new("/"),
        env: Vec::new(),
        timeout,
        output_cap: 1 << 20,
        stdin: None,
        landlock: None,
        writable: Vec::new(),
        measured: false,
    };
    let never = AtomicBool::new(false);
    let out = exec::run(&spec, &never).map_err(|e| Error::io(format!("running `{line}`"), e))?;
    match out.status {
        CommandOutcome::Success => Ok(out.stdout),
        CommandOutcome::TimedOut => Err(Error::Input(format!(
            "`{line}` did not answer within {}s: is slurmctld up?",
            timeout.as_secs()
        ))),
        _ if out.exit_code == Some(127) => Err(Error::Input(format!(
            "`{program}` is not on PATH: `executor: slurm` needs the Slurm client commands (sbatch, srun, squeue, scancel, scontrol)"
        ))),
        _ => Err(Error::Input(format!(
            "`{line}` failed: {}",
            out.output.trim()
        ))),
    }
}

/// Whether this machine can submit to a Slurm cluster that has a node up
/// (asked with a short deadline: a client without a controller retries for
/// minutes).
pub fn available() -> bool {
    call_within(
        "sinfo",
        &["--noheader", "--format=%T"],
        Duration::from_secs(10),
    )
    .is_ok_and(|o| {
        o.lines()
            .any(|l| ALIVE_NODE.iter().any(|s| l.starts_with(s)))
    })
}

const ALIVE_NODE: &[&str] = &["idle", "mixed", "allocated", "completing"];

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
