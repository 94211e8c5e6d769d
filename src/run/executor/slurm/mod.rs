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

mod controller;
mod ended;
mod job_step;
mod tick;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Executor, Lease, Local, Purpose};
use crate::error::{Error, Result};
use crate::model::{ClusterJob, SlurmSettings};
use crate::run::exec::shell_quote;
pub use controller::available;
use controller::{ALIVE, Asked, JobInfo, ask, scancel, squeue, steps_of};
pub(crate) use ended::{Fault, JobEnded, job_ended, note_new_pairs};

use ended::{PENDING, UNANSWERED, hint, into_io};
pub use tick::job_prefix;
pub(crate) use tick::{SUBMITTED_ENV, Submitted, cancel_next_tick, next_tick, submit_tick};

/// How often a pending job is looked at.
const POLL: Duration = Duration::from_millis(250);

/// `slurm.controller_wait` when unset: a controller restart takes seconds,
/// a failover a minute or two.
pub(crate) const CONTROLLER_WAIT: Duration = Duration::from_secs(5 * 60);

/// `slurm.pending_limit` when unset.
pub(crate) const PENDING_LIMIT: Duration = Duration::from_secs(60 * 60);

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
    /// Whether measurements take the host's measurement lock
    /// (`defaults.measure_exclusive`): taken before the allocation.
    exclusive: bool,
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
            exclusive: false,
        }
    }

    /// Takes the host's measurement lock before each allocation.
    pub(crate) fn exclusive(mut self, exclusive: bool) -> Slurm {
        self.exclusive = exclusive;
        self
    }

    pub(super) fn controller_wait(&self) -> Duration {
        self.settings.controller_wait.unwrap_or(CONTROLLER_WAIT)
    }

    /// What the controller says about job `id`, once it answers: no answer
    /// is waited out with growing waits up to `slurm.controller_wait`, then
    /// is an [`Fault::Unknown`] end (`job` names it).
    fn ask_patiently(&self, job: &ClusterJob, during: Option<&Path>) -> Result<Asked> {
        self.patiently(job, during, || match ask(&job.id) {
            Asked::Unanswered(why) => Err(why),
            asked => Ok(asked),
        })
    }

    /// `question` until the controller answers it (`Err` is its silence,
    /// in words): growing waits, up to `slurm.controller_wait` of wall
    /// clock (each unanswered question takes its own time too), then an
    /// [`Fault::Unknown`] end about `job`.
    fn patiently<T>(
        &self,
        job: &ClusterJob,
        during: Option<&Path>,
        mut question: impl FnMut() -> std::result::Result<T, String>,
    ) -> Result<T> {
        let mut outage = crate::run::outage::Outage::new(self.controller_wait());
        let mut said = false;
        let since = Instant::now();
        let which = if job.id.is_empty() {
            format!("the job {}", job.name)
        } else {
            format!("the job {} ({})", job.id, job.name)
        };
        loop {
            let why = match question() {
                Ok(answer) => {
                    if said {
                        self.say(&format!(
                            "the Slurm controller answers again after {}s",
                            since.elapsed().as_secs()
                        ));
                    }
                    return Ok(answer);
                }
                Err(why) => why,
            };
            let Some(wait) = outage
                .next_wait()
                .filter(|_| since.elapsed() < self.controller_wait())
            else {
                return Err(lost(JobEnded::new(
                    job,
                    UNANSWERED,
                    format!(
                        "waiting for Slurm: the controller did not answer about {which} for {}s ({why}); nothing of the phase is decided, and the next tick measures it again. A longer outage can be waited out with `slurm.controller_wait`",
                        since.elapsed().as_secs()
                    ),
                    during,
                )));
            };
            if !said {
                self.say(&format!(
                    "the Slurm controller does not answer ({why}): waiting for it up to {}s (slurm.controller_wait){}",
                    self.controller_wait().as_secs(),
                    if job.id.is_empty() {
                        String::new()
                    } else {
                        format!("; {which} runs on meanwhile")
                    }
                ));
                said = true;
            }
            crate::run::interrupt::sleep_unless(wait, self.interrupt.flag())?;
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

    /// Adopts the job called `name` if the queue has it (cancelling the
    /// steps a killed ooda left running in it), cancels this Brief's other
    /// jobs, and otherwise submits a new one; then waits until it runs.
    fn allocate(&self, name: &str) -> Result<ClusterJob> {
        // This Brief's measurement jobs; a submitted tick (`-tick`) is not
        // one, and a chained one waiting for its start time is left alone.
        let mine = |j: &controller::Queued| {
            j.name.starts_with(&format!("{}-", self.prefix)) && !j.name.ends_with("-tick")
        };
        // A controller that does not answer is waited for here too: an
        // outage is never a failed tick's input error.
        let queued = self.patiently(
            &ClusterJob {
                id: String::new(),
                name: name.to_string(),
                node: String::new(),
                adopted: false,
                lost: None,
                fault: None,
                message: None,
            },
            None,
            controller::squeue_answered,
        )??;
        let mut adopted = None;
        let alive = |j: &&controller::Queued| ALIVE.contains(&j.state.as_str());
        for j in queued.iter().filter(|j| mine(j)).filter(alive) {
            if j.name == name && adopted.is_none() {
                self.say(&format!(
                    "adopting the Slurm job {} ({name}, {}): an earlier tick submitted it",
                    j.id, j.state
                ));
                adopted = Some(j.id.clone());
            } else if self.sweep {
                self.say(&format!(
                    "cancelling the Slurm job {} ({}): an earlier phase or tick of this Brief left it",
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
        let mut job = ClusterJob {
            id: id.clone(),
            name: name.to_string(),
            node: String::new(),
            adopted: was_adopted,
            lost: None,
            fault: None,
            message: None,
        };
        // Nothing holds the job yet: on any failure here it is cancelled,
        // but for a controller that did not answer (the job may be fine,
        // and the next tick adopts it).
        let cancel_unless_unknown = |e: &Error| {
            if !job_ended(e).is_some_and(|j| j.fault == Fault::Unknown) {
                scancel(&id);
            }
        };
        job.node = self.wait_running(&job).inspect_err(cancel_unless_unknown)?;
        if was_adopted {
            self.cancel_orphan_steps(&job)
                .inspect_err(cancel_unless_unknown)?;
        }
        job_step::Record::clear_job(&self.logs, &id);
        self.probe(&id, name, &job.node)
            .inspect_err(cancel_unless_unknown)?;
        self.say(&format!(
            "measuring in the Slurm job {id} ({name}) on {}",
            job.node
        ));
        if let Ok(mut u) = self.used.lock() {
            u.push(job.clone());
        }
        Ok(job)
    }

    /// The steps an earlier ooda left running in an adopted job (killed
    /// with -9, its `srun` could not cancel them) are cancelled, and seen
    /// gone, before anything is measured beside them.
    pub(super) fn cancel_orphan_steps(&self, job: &ClusterJob) -> Result<()> {
        let deadline = Instant::now() + self.controller_wait() + Duration::from_secs(60);
        let mut told = false;
        loop {
            let steps = match steps_of(&job.id) {
                Some(s) => s,
                None if Instant::now() < deadline => {
                    // Wait for the controller, then look again.
                    self.ask_patiently(job, None)?;
                    continue;
                }
                None => Vec::from(["?".to_string()]),
            };
            if steps.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(lost(JobEnded::new(
                    job,
                    UNANSWERED,
                    format!(
                        "the step(s) {} of the Slurm job {} ({}) are still listed after `scancel`: nothing is measured beside them, and the next tick looks again. See `squeue --steps --jobs {}`",
                        steps.join(", "),
                        job.id,
                        job.name,
                        job.id
                    ),
                    None,
                )));
            }
            if !told {
                self.say(&format!(
                    "cancelling the step(s) {} left running in the Slurm job {} (by an earlier ooda, or by an srun that gave up): nothing is measured beside them",
                    steps.join(", "),
                    job.id
                ));
                told = true;
            }
            for s in &steps {
                scancel(s);
            }
            crate::run::interrupt::sleep_unless(Duration::from_millis(500), self.interrupt.flag())?;
        }
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
        controller::call_ok("srun", &args).map(|_| ()).map_err(|e| {
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

    /// Waits until `job` runs; its node. A controller that does not
    /// answer is waited out (`slurm.controller_wait`); a job pending past
    /// `slurm.pending_limit` (a drained node, a full partition) is
    /// cancelled and parked, named with the scheduler's reason. While it
    /// waits, `ooda status` shows why (the file [`Slurm::waiting_file`]).
    fn wait_running(&self, job: &ClusterJob) -> Result<String> {
        let (id, name) = (&job.id, &job.name);
        let started = Instant::now();
        let limit = self.settings.pending_limit.unwrap_or(PENDING_LIMIT);
        let waiting = self.waiting_file(name);
        let _gone = Remove(waiting.clone());
        let mut said = false;
        let mut noted: Option<Instant> = None;
        loop {
            let info = match self.ask_patiently(job, None)? {
                Asked::Known(info) => info,
                // Just submitted: not in the controller's tables for a moment.
                Asked::Absent if started.elapsed() < Duration::from_secs(5) => JobInfo {
                    state: "PENDING".into(),
                    ..JobInfo::default()
                },
                Asked::Absent => {
                    return Err(Error::Input(format!(
                        "the Slurm job {id} ({name}) is gone from the queue before it ran; see `scontrol show job {id}` and {}",
                        self.logs.display()
                    )));
                }
                Asked::Unanswered(_) => unreachable!("asked patiently"),
            };
            match info.state.as_str() {
                "RUNNING" if !info.node.is_empty() => return Ok(info.node),
                s if ALIVE.contains(&s) => {}
                state => {
                    return Err(lost(JobEnded::new(
                        job,
                        state,
                        format!(
                            "the Slurm job {id} ({name}) ended {state} before it ran; {}",
                            hint(state)
                        ),
                        None,
                    )));
                }
            }
            let reason = if info.reason.is_empty() {
                info.state.clone()
            } else {
                info.reason.clone()
            };
            let waited = started.elapsed();
            if waited > limit {
                scancel(id);
                return Err(lost(JobEnded::new(
                    job,
                    PENDING,
                    format!(
                        "waiting for Slurm: job {id} pending ({reason}) for {}, past `slurm.pending_limit` ({}): nothing was measured, and the next tick asks again. `sinfo -R` shows drained nodes; raise `slurm.pending_limit` if the queue is this slow",
                        crate::validate::units::format_duration(Duration::from_secs(
                            waited.as_secs()
                        )),
                        crate::validate::units::format_duration(limit),
                    ),
                    None,
                )));
            }
            if noted.is_none_or(|t| t.elapsed() > Duration::from_secs(5)) {
                noted = Some(Instant::now());
                let note = Waiting {
                    job: id.clone(),
                    name: name.clone(),
                    state: info.state.clone(),
                    reason: reason.clone(),
                    since: chrono::Utc::now()
                        - chrono::Duration::from_std(waited).unwrap_or_default(),
                    pid: std::process::id(),
                };
                if let Ok(text) = serde_json::to_vec(&note) {
                    let _ = crate::atomic::write_atomic(&waiting, &text);
                }
            }
            if !said && waited > Duration::from_secs(10) {
                self.say(&format!(
                    "waiting for Slurm: job {id} ({name}) {} ({reason}); it is given up after {} (slurm.pending_limit)",
                    info.state.to_lowercase(),
                    crate::validate::units::format_duration(limit)
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

    /// Where a lease waiting for job `name` to start says so, for `ooda
    /// status`.
    fn waiting_file(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.waiting"))
    }
}

/// Removes its file when dropped.
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A lease waiting for its job to start, as `ooda status` reads it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Waiting {
    pub job: String,
    pub name: String,
    pub state: String,
    pub reason: String,
    pub since: chrono::DateTime<chrono::Utc>,
    pub pid: u32,
}

impl Waiting {
    /// The waits recorded under `logs` by a process still alive.
    pub(crate) fn under(logs: &Path) -> Vec<Waiting> {
        let Ok(dir) = std::fs::read_dir(logs) else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".waiting"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| serde_json::from_slice::<Waiting>(&b).ok())
            .filter(|w| Path::new(&format!("/proc/{}", w.pid)).exists())
            .collect()
    }

    /// `waiting for Slurm: job J pending (Reason) for 3m`.
    pub(crate) fn describe(&self) -> String {
        let waited = (chrono::Utc::now() - self.since)
            .to_std()
            .unwrap_or_default();
        let waited = Duration::from_secs(waited.as_secs());
        format!(
            "waiting for Slurm: job {} {} ({}) for {}",
            self.job,
            self.state.to_lowercase(),
            self.reason,
            crate::validate::units::format_duration(waited)
        )
    }
}

/// Whether `e` is a Slurm client command that no controller answered.
pub(crate) fn no_answer(e: &Error) -> bool {
    let text = e.to_string();
    text.contains("did not answer within") || controller::unreachable(&text)
}

/// A lost job as the error a phase returns.
pub(super) fn lost(e: JobEnded) -> Error {
    Error::io(
        format!("measuring in the Slurm job {}", e.job.id),
        into_io(e),
    )
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
    match controller::call_ok("sbatch", &args) {
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
        // The calling job (a tick queueing the next) has the name too, and
        // is not the one submitted.
        Err(e) => match squeue()?.into_iter().find(|j| {
            j.name == name
                && ALIVE.contains(&j.state.as_str())
                && std::env::var("SLURM_JOB_ID").ok().as_deref() != Some(j.id.as_str())
        }) {
            Some(j) => Ok(j.id),
            None => Err(Error::Input(format!(
                "{e}\nThe options come from `slurm:` in ooda.yaml and the Brief (`sinfo` lists the partitions and their limits)."
            ))),
        },
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

impl Executor for Slurm {
    fn agent_confinement(&self) -> (Option<i32>, Vec<std::path::PathBuf>) {
        self.here.confinement()
    }

    fn lease(&self, purpose: Purpose) -> Result<Box<dyn Lease + '_>> {
        let Some(name) = self.name_for(purpose) else {
            return self.here.lease(purpose);
        };
        // The host's measurement lock before the allocation: the
        // allocation's time runs from its start, and a wait for the lock
        // must not be spent out of `slurm.time`.
        let lock = if self.exclusive {
            let path = crate::run::measure_lock::path();
            let who = format!("brief {} (Slurm)", self.brief);
            let mut told = false;
            Some(crate::run::measure_lock::MeasureLock::acquire(
                &path,
                &who,
                self.interrupt.flag(),
                None,
                |holder, _| {
                    if !told {
                        self.say(&format!(
                            "waiting for the measurement lock {} ({holder}) before asking Slurm for an allocation",
                            path.display()
                        ));
                        told = true;
                    }
                    Ok(())
                },
            )?)
        } else {
            None
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
        Ok(Box::new(job_step::JobStep {
            slurm: self,
            job,
            stop,
            beating,
            lock,
            steps: std::sync::atomic::AtomicU32::new(0),
        }))
    }

    fn take_jobs(&self) -> Vec<ClusterJob> {
        self.used
            .lock()
            .map(|mut u| std::mem::take(&mut *u))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reads_the_waits_of_live_processes_only() {
        let logs = tempfile::tempdir().unwrap();
        let wait = |pid: u32, name: &str| Waiting {
            job: "17".into(),
            name: name.into(),
            state: "PENDING".into(),
            reason: "ReqNodeNotAvail, UnavailableNodes:vm".into(),
            since: chrono::Utc::now() - chrono::Duration::seconds(95),
            pid,
        };
        for w in [wait(std::process::id(), "a"), wait(u32::MAX - 1, "b")] {
            std::fs::write(
                logs.path().join(format!("{}.waiting", w.name)),
                serde_json::to_vec(&w).unwrap(),
            )
            .unwrap();
        }
        let found = Waiting::under(logs.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].describe(),
            "waiting for Slurm: job 17 pending (ReqNodeNotAvail, UnavailableNodes:vm) for 1m35s"
        );
    }
}
