//! The Slurm executor: a phase's measurements in one Slurm allocation.
//!
//! Why one allocation per phase and not a job per command: base and
//! candidate must be measured on the same node in the same conditions (the
//! paired test assumes it), and a job per timed run would put each pair's
//! halves wherever the scheduler found room, with its queue wait between
//! them. So a lease for [`Purpose::Measure`] or [`Purpose::Check`] holds one
//! job (a placeholder that sleeps), and every command of the phase is a job
//! step in it (`srun --jobid … --overlap`). Agent steps stay on this
//! machine: compute nodes often cannot reach a model API.
//!
//! Robust against the scheduler and against ooda's own crashes: every job is
//! named before it is submitted, from the project, the Brief, the iteration
//! and the phase (`ooda-<brief>-<project hash>-<iteration>-<phase>`). A
//! lease first asks `squeue` for this Brief's jobs: the one with its name
//! (left by a tick that was killed, or by a submit call that timed out after
//! Slurm took it) is adopted instead of submitted twice; any other is a
//! leftover of an earlier tick and is cancelled (the Brief's lock means no
//! other ooda can own it). Dropping the lease cancels the job, so an
//! interrupt or an error never leaves an allocation behind for longer than
//! ooda lives. A job that ends under a running step (preempted, timed out,
//! cancelled, its node failed or out of memory) turns the step into an
//! error that names the job's state: the tick stops, and the next one
//! measures the phase again from its start in a new allocation, so a
//! preempted measurement is measured again, never counted as the
//! candidate's crash.
//!
//! The sandbox goes with the step: on the node, the command runs under
//! ooda's helper (`ooda __contain`, the same binary, so the project's
//! filesystem must be shared with the nodes, as Slurm deployments are) with
//! the Landlock policy it would have had here. `srun` itself runs here
//! contained but unconfined: it must reach the controller.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::{Executor, Lease, Local, Purpose};
use crate::error::{Error, Result};
use crate::exec::{self, CommandOutput, CommandSpec, Outcome, shell_quote};
use crate::model::{ClusterJob, SlurmSettings};

/// How often a pending job is looked at.
const POLL: Duration = Duration::from_millis(250);

/// How long one `sbatch`, `squeue` or `scancel` call may take before ooda
/// stops waiting for it (a controller that does not answer).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// States in which a job still holds, or will hold, its allocation.
const ALIVE: &[&str] = &["PENDING", "CONFIGURING", "RUNNING", "RESIZING", "SUSPENDED"];

/// Measurements in Slurm allocations; agent steps through `here`.
pub struct Slurm {
    here: Local,
    settings: SlurmSettings,
    /// The names of this Brief's jobs start with it.
    prefix: String,
    /// Where the placeholder jobs write their output (`--output`).
    logs: PathBuf,
    /// The Landlock ABI and grants commands get on the node.
    abi: Option<i32>,
    writable: Vec<PathBuf>,
    /// The jobs leased since they were last taken, in order.
    used: Mutex<Vec<ClusterJob>>,
    /// Set when ooda is asked to stop: a lease waiting for its job gives up.
    interrupt: crate::interrupt::Interrupt,
}

impl Slurm {
    /// An executor for the Brief `brief` of the project at `root`, writing
    /// job output under `logs`; `here` runs agent steps and is the sandbox
    /// measured commands get on the node.
    pub fn new(
        here: Local,
        settings: SlurmSettings,
        root: &Path,
        brief: &str,
        logs: PathBuf,
        interrupt: crate::interrupt::Interrupt,
    ) -> Slurm {
        let (abi, writable) = here.confinement();
        Slurm {
            here,
            settings,
            prefix: job_prefix(root, brief),
            logs,
            abi,
            writable,
            used: Mutex::new(Vec::new()),
            interrupt,
        }
    }

    fn name_for(&self, purpose: Purpose) -> String {
        match purpose {
            Purpose::Measure(job) => format!("{}-{:03}-{}", self.prefix, job.iteration, job.phase),
            Purpose::Check => format!("{}-check", self.prefix),
            Purpose::Agent => format!("{}-agent", self.prefix),
        }
    }

    /// Adopts the job called `name` if the queue has it, cancels this
    /// Brief's other jobs, and otherwise submits a new one; then waits until
    /// it runs.
    fn allocate(&self, name: &str) -> Result<ClusterJob> {
        let mine = |j: &Queued| j.name.starts_with(&format!("{}-", self.prefix));
        let queued = squeue(&[])?;
        let mut adopted = None;
        for j in queued.iter().filter(|j| mine(j)) {
            if j.name == name && ALIVE.contains(&j.state.as_str()) && adopted.is_none() {
                eprintln!(
                    "adopting the Slurm job {} ({name}, {}): an earlier tick submitted it",
                    j.id, j.state
                );
                adopted = Some(j.id.clone());
            } else {
                eprintln!(
                    "cancelling the Slurm job {} ({}): an earlier tick of this Brief left it",
                    j.id, j.name
                );
                scancel(&j.id);
            }
        }
        let (id, was_adopted) = match adopted {
            Some(id) => (id, true),
            None => (self.submit(name)?, false),
        };
        let node = self.wait_running(&id, name)?;
        let job = ClusterJob {
            id,
            name: name.to_string(),
            node,
            adopted: was_adopted,
        };
        if let Ok(mut u) = self.used.lock() {
            u.push(job.clone());
        }
        Ok(job)
    }

    fn submit(&self, name: &str) -> Result<String> {
        std::fs::create_dir_all(&self.logs)
            .map_err(|e| Error::io(format!("creating {}", self.logs.display()), e))?;
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name={name}"),
            format!("--output={}/%x-%j.out", self.logs.display()),
            "--nodes=1".into(),
            "--ntasks=1".into(),
        ];
        args.extend(self.settings.sbatch_args());
        // The placeholder holds the allocation until the lease cancels it.
        args.push("--wrap=exec sleep 2147483647".into());
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
            // A submit call that failed or timed out may still have been
            // taken: the job's name finds it rather than a second submit.
            Err(e) => match squeue(&[])?.into_iter().find(|j| j.name == name) {
                Some(j) => Ok(j.id),
                None => Err(e),
            },
        }
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
                    return Err(Error::Input(format!(
                        "the Slurm job {id} ({name}) ended {state} before it ran; {}",
                        hint(&state)
                    )));
                }
                None => {
                    return Err(Error::Input(format!(
                        "the Slurm job {id} ({name}) is gone from the queue before it ran; see `scontrol show job {id}` and {}",
                        self.logs.display()
                    )));
                }
            }
            if !said && started.elapsed() > Duration::from_secs(10) {
                eprintln!("waiting for the Slurm job {id} ({name}) to start (squeue -j {id})");
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
fn hint(state: &str) -> &'static str {
    match state {
        "PREEMPTED" => "it was preempted: the next tick measures the phase again",
        "TIMEOUT" | "DEADLINE" => "it hit its time limit: raise `slurm.time`",
        "OUT_OF_MEMORY" => "it ran out of memory: ask for more with `slurm.args: [\"--mem=…\"]`",
        "NODE_FAIL" | "BOOT_FAIL" => "its node failed: the next tick measures the phase again",
        "CANCELLED" => "it was cancelled (scancel): the next tick measures the phase again",
        _ => "see `scontrol show job` and the job's output file",
    }
}

struct Step<'a> {
    slurm: &'a Slurm,
    job: ClusterJob,
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
        };
        let out = exec::run(&local, cancel)?;
        if out.status != Outcome::Success && !matches!(out.status, Outcome::Interrupted) {
            // The command's own failure, or its job's end?
            match job_state(&self.job.id) {
                Some((state, _)) if state == "RUNNING" => {}
                Some((state, _)) => return Err(self.ended(&state)),
                None => return Err(self.ended("gone from the queue")),
            }
        }
        Ok(out)
    }
}

impl Step<'_> {
    fn ended(&self, state: &str) -> io::Error {
        io::Error::other(format!(
            "the Slurm job {} ({}) on {} ended {state} during the step; {}",
            self.job.id,
            self.job.name,
            self.job.node,
            hint(state)
        ))
    }

    /// `srun` of `spec.command` as a step of the lease's job, contained on
    /// the node as it would be here.
    fn srun_line(&self, spec: &CommandSpec) -> String {
        let q = |p: &Path| shell_quote(&p.display().to_string());
        // The step's temporary directory: this machine's private one when
        // the node sees it (a shared /tmp, or this very machine), else /tmp.
        let mut node = String::from("[ -d \"${TMPDIR:-}\" ] || export TMPDIR=/tmp; exec");
        if let Some(h) = crate::sandbox::helper() {
            node.push_str(&format!(" {} {}", q(h), crate::sandbox::HELPER_ARG));
            if let Some(abi) = spec.landlock.or(self.slurm.abi) {
                node.push_str(&format!(" --abi {abi}"));
                let grants = std::iter::once(spec.cwd)
                    .chain(self.slurm.writable.iter().map(PathBuf::as_path))
                    .chain(spec.writable.iter().map(PathBuf::as_path));
                for w in grants {
                    node.push_str(&format!(" --write {}", q(w)));
                }
                node.push_str(" --write \"$TMPDIR\"");
            }
            node.push_str(" --");
        }
        node.push_str(&format!(" sh -c {}", shell_quote(spec.command)));
        format!(
            "exec srun --jobid={} --overlap --nodes=1 --ntasks=1 --quiet --kill-on-bad-exit=1 --chdir={} sh -c {}",
            self.job.id,
            q(spec.cwd),
            shell_quote(&node)
        )
    }
}

impl Drop for Step<'_> {
    fn drop(&mut self) {
        scancel(&self.job.id);
    }
}

impl Executor for Slurm {
    fn lease(&self, purpose: Purpose) -> Result<Box<dyn Lease + '_>> {
        if purpose == Purpose::Agent {
            return self.here.lease(purpose);
        }
        let job = self.allocate(&self.name_for(purpose))?;
        Ok(Box::new(Step { slurm: self, job }))
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

/// This user's jobs in the queue (`extra` narrows it).
fn squeue(extra: &[&str]) -> Result<Vec<Queued>> {
    let mut args = vec!["--noheader", "--me", "--format=%i|%j|%T"];
    args.extend_from_slice(extra);
    let out = call("squeue", &args)?;
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

/// A job's state and node: from `squeue` while it is queued, from
/// `scontrol` for a while after it ended (no accounting needed); `None`
/// when neither knows it.
fn job_state(id: &str) -> Option<(String, String)> {
    if let Ok(out) = call("squeue", &["--noheader", "--jobs", id, "--format=%T|%N"])
        && let Some(line) = out.lines().next()
        && let Some((state, node)) = line.trim().split_once('|')
    {
        return Some((state.to_string(), node.to_string()));
    }
    let out = call("scontrol", &["--oneliner", "show", "job", id]).ok()?;
    let field = |key: &str| {
        out.split_whitespace()
            .find_map(|f| f.strip_prefix(key))
            .map(str::to_string)
    };
    Some((field("JobState=")?, field("NodeList=").unwrap_or_default()))
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
    };
    let never = AtomicBool::new(false);
    let out = exec::run(&spec, &never).map_err(|e| Error::io(format!("running `{line}`"), e))?;
    match out.status {
        Outcome::Success => Ok(out.stdout),
        Outcome::TimedOut => Err(Error::Input(format!(
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
