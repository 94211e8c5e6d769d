//! Asking the Slurm controller, and telling its silence from its answers.
//!
//! Why three answers and not two: a controller that is restarting, or that
//! is down for a minute, makes every client command fail or hang, and the
//! jobs it manages run on regardless (their steps finish on the nodes and
//! say so when it returns). Taking "no answer" for "the job is gone" turned
//! an outage into lost jobs, and lost jobs into crashes of the candidate and
//! lessons nobody should learn. So a question has three answers: the job as
//! the controller knows it, the job unknown to it (ended long enough ago to
//! be forgotten), or no answer — which is waited out ([`Controller::wait`],
//! growing waits up to `slurm.controller_wait`), never taken for either.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::CommandOutcome;
use crate::run::exec::{self, CommandSpec, shell_quote};

/// How long one `sbatch`, `squeue`, `scontrol` or `scancel` call may take
/// before ooda stops waiting for it (a controller that does not answer).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// States in which a job still holds, or will hold, its allocation.
pub(super) const ALIVE: &[&str] = &["PENDING", "CONFIGURING", "RUNNING", "RESIZING", "SUSPENDED"];

/// What a Slurm client command came back with.
#[derive(Debug)]
pub(super) enum Called {
    /// It succeeded: its standard output.
    Out(String),
    /// The controller answered no: the error names the command and what it
    /// printed.
    Refused(Error),
    /// No controller answered (a timeout, no connection): nothing is known.
    Unanswered(String),
}

/// What the controller says about one job.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Asked {
    Known(JobInfo),
    /// Neither `scontrol` nor `squeue` knows the job: it ended long enough
    /// ago to be forgotten.
    Absent,
    /// The controller did not answer.
    Unanswered(String),
}

/// A job as `scontrol show job` describes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct JobInfo {
    pub state: String,
    pub node: String,
    /// Why it is pending (`Resources`, `ReqNodeNotAvail, …`), or `None`.
    pub reason: String,
    /// When its time limit ends, as the controller's local time.
    pub end: Option<chrono::NaiveDateTime>,
    /// A preemption has begun (`PreemptTime` set): with a grace time the
    /// job still reads RUNNING while its steps are signalled.
    pub preempted: bool,
}

impl JobInfo {
    /// Whether its time limit has passed: `srun` is then refused a step,
    /// while the job still reads RUNNING until the controller's next
    /// pass kills it.
    pub(super) fn past_its_end(&self) -> bool {
        self.end
            .is_some_and(|end| chrono::Local::now().naive_local() >= end)
    }
}

/// Runs a Slurm client command.
pub(super) fn call<S: AsRef<str>>(program: &str, args: &[S]) -> Called {
    call_within(program, args, CALL_TIMEOUT)
}

/// [`call`] as a `Result`: no answer is an error too, with its words.
pub(super) fn call_ok<S: AsRef<str>>(program: &str, args: &[S]) -> Result<String> {
    match call(program, args) {
        Called::Out(out) => Ok(out),
        Called::Refused(e) => Err(e),
        Called::Unanswered(why) => Err(Error::Input(why)),
    }
}

fn call_within<S: AsRef<str>>(program: &str, args: &[S], timeout: Duration) -> Called {
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
    let out = match exec::run(&spec, &never) {
        Ok(out) => out,
        Err(e) => return Called::Refused(Error::io(format!("running `{line}`"), e)),
    };
    match out.status {
        CommandOutcome::Success => Called::Out(out.stdout),
        CommandOutcome::TimedOut => Called::Unanswered(format!(
            "`{line}` did not answer within {}s: is slurmctld up?",
            timeout.as_secs()
        )),
        _ if out.exit_code == Some(127) => Called::Refused(Error::Input(format!(
            "`{program}` is not on PATH: `executor: slurm` needs the Slurm client commands (sbatch, srun, squeue, scancel, scontrol)"
        ))),
        _ if unreachable(&out.output) => Called::Unanswered(format!(
            "`{line}`: {}",
            out.output.lines().last().unwrap_or("").trim()
        )),
        _ => Called::Refused(Error::Input(format!(
            "`{line}` failed: {}",
            out.output.trim()
        ))),
    }
}

/// Whether a client command's output says it could not reach the
/// controller (rather than that the controller refused).
pub(super) fn unreachable(output: &str) -> bool {
    const SIGNS: &[&str] = &[
        "Unable to contact slurm controller",
        "Socket timed out on send/recv",
        "Zero Bytes were transmitted or received",
        "Connection refused",
        "Communication connection failure",
        "Slurm backup controller in standby mode",
        "Connection timed out",
    ];
    SIGNS.iter().any(|s| output.contains(s))
}

/// One line of `squeue`.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub id: String,
    pub name: String,
    pub state: String,
}

/// This user's jobs in the queue.
pub(super) fn squeue() -> Result<Vec<Queued>> {
    squeue_within(CALL_TIMEOUT)
}

/// [`squeue`], waiting at most `timeout` for the controller.
pub(super) fn squeue_within(timeout: Duration) -> Result<Vec<Queued>> {
    match squeue_called(timeout) {
        Ok(r) => r,
        Err(why) => Err(Error::Input(why)),
    }
}

/// [`squeue`], its silence apart: `Err` in words when the controller did
/// not answer (an error it gave is `Ok(Err)`).
pub(super) fn squeue_answered() -> std::result::Result<Result<Vec<Queued>>, String> {
    squeue_called(CALL_TIMEOUT)
}

fn squeue_called(timeout: Duration) -> std::result::Result<Result<Vec<Queued>>, String> {
    let args = ["--noheader", "--me", "--format=%i|%j|%T"];
    let out = match call_within("squeue", &args, timeout) {
        Called::Out(out) => out,
        Called::Refused(e) => return Ok(Err(e)),
        Called::Unanswered(why) => return Err(why),
    };
    Ok(Ok(out
        .lines()
        .filter_map(|l| {
            let mut f = l.trim().splitn(3, '|');
            Some(Queued {
                id: f.next()?.to_string(),
                name: f.next()?.to_string(),
                state: f.next()?.to_string(),
            })
        })
        .collect()))
}

/// A job as the controller knows it: `scontrol` (which knows a job for a
/// while after it ended, without accounting, and says CANCELLED where
/// `squeue` still shows COMPLETING), else `squeue`.
pub(super) fn ask(id: &str) -> Asked {
    match call("scontrol", &["--oneliner", "show", "job", id]) {
        Called::Out(out) => {
            if let Some(info) = parse_show_job(&out) {
                return Asked::Known(info);
            }
        }
        Called::Unanswered(why) => return Asked::Unanswered(why),
        Called::Refused(_) => {}
    }
    match call("squeue", &["--noheader", "--jobs", id, "--format=%T|%N|%r"]) {
        Called::Out(out) => {
            let Some(line) = out.lines().next() else {
                return Asked::Absent;
            };
            let mut f = line.trim().splitn(3, '|');
            Asked::Known(JobInfo {
                state: f.next().unwrap_or("").to_string(),
                node: f.next().unwrap_or("").to_string(),
                reason: f.next().unwrap_or("").to_string(),
                end: None,
                preempted: false,
            })
        }
        Called::Unanswered(why) => Asked::Unanswered(why),
        // `Invalid job id specified`: the job is forgotten.
        Called::Refused(_) => Asked::Absent,
    }
}

/// The fields of `scontrol --oneliner show job`.
pub(super) fn parse_show_job(out: &str) -> Option<JobInfo> {
    let field = |key: &str| {
        out.split_whitespace()
            .find_map(|f| f.strip_prefix(key))
            .map(str::to_string)
    };
    let state = field("JobState=")?;
    // `Reason=` may hold spaces (`Reason=ReqNodeNotAvail, UnavailableNodes:x`):
    // everything up to the next `Key=`.
    let reason = out
        .split_once(" Reason=")
        .map(|(_, r)| {
            let mut words = Vec::new();
            for w in r.split_whitespace() {
                if !words.is_empty() && w.split_once('=').is_some_and(|(k, _)| is_key(k)) {
                    break;
                }
                words.push(w);
            }
            words.join(" ")
        })
        .filter(|r| r != "None")
        .unwrap_or_default();
    Some(JobInfo {
        state,
        node: field("NodeList=")
            .filter(|n| n != "(null)")
            .unwrap_or_default(),
        reason,
        end: field("EndTime=")
            .and_then(|t| chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%dT%H:%M:%S").ok()),
        preempted: field("PreemptTime=").is_some_and(|t| t != "None" && t != "Unknown"),
    })
}

fn is_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        && k.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

/// The steps of job `id` that run commands (`J.0`, `J.1`, …: not the
/// batch script or the extern step); `None` when the controller did not
/// answer.
pub(super) fn steps_of(id: &str) -> Option<Vec<String>> {
    match call(
        "squeue",
        &["--noheader", "--steps", "--jobs", id, "--format=%i"],
    ) {
        Called::Out(out) => Some(
            out.lines()
                .map(str::trim)
                .filter(|s| {
                    s.split_once('.')
                        .is_some_and(|(j, st)| j == id && st.chars().all(|c| c.is_ascii_digit()))
                })
                .map(str::to_string)
                .collect(),
        ),
        Called::Unanswered(_) => None,
        // A job that is gone has no steps.
        Called::Refused(_) => Some(Vec::new()),
    }
}

/// Cancels job (or step) `id`, best effort: one already gone is what was
/// wanted. Whether the controller took the request.
pub(super) fn scancel(id: &str) -> bool {
    !matches!(call("scancel", &[id]), Called::Unanswered(_))
}

/// Whether this machine can submit to a Slurm cluster that has a node up
/// (asked with a short deadline: a client without a controller retries for
/// minutes).
pub fn available() -> bool {
    match call_within(
        "sinfo",
        &["--noheader", "--format=%T"],
        Duration::from_secs(10),
    ) {
        Called::Out(o) => o
            .lines()
            .any(|l| ALIVE_NODE.iter().any(|s| l.starts_with(s))),
        _ => false,
    }
}

const ALIVE_NODE: &[&str] = &["idle", "mixed", "allocated", "completing"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_state_node_reason_and_end_are_read_from_scontrol() {
        let out = "JobId=17 JobName=ooda-k-1-evaluate UserId=root(0) JobState=PENDING Reason=ReqNodeNotAvail, UnavailableNodes:vm Dependency=(null) RunTime=00:00:00 TimeLimit=00:01:00 StartTime=Unknown EndTime=2026-12-06T20:01:02 NodeList=(null) BatchHost=vm\n";
        let info = parse_show_job(out).unwrap();
        assert_eq!(info.state, "PENDING");
        assert_eq!(info.reason, "ReqNodeNotAvail, UnavailableNodes:vm");
        assert_eq!(info.node, "");
        assert_eq!(
            info.end.unwrap().to_string(),
            "2026-12-06 20:01:02".to_string()
        );
        let running =
            "JobId=3 JobState=RUNNING Reason=None EndTime=Unknown PreemptTime=None NodeList=vm\n";
        let info = parse_show_job(running).unwrap();
        assert_eq!((info.state.as_str(), info.node.as_str()), ("RUNNING", "vm"));
        assert_eq!(info.reason, "");
        assert_eq!(info.end, None);
        assert!(!info.past_its_end());
        assert!(!info.preempted);
        let graced = "JobId=3 JobState=RUNNING PreemptTime=2026-12-06T20:30:00 NodeList=vm\n";
        assert!(parse_show_job(graced).unwrap().preempted);
        assert_eq!(
            parse_show_job("slurm_load_jobs error: Invalid job id specified"),
            None
        );
    }

    #[test]
    fn a_controller_that_cannot_be_reached_is_told_from_a_refusal() {
        assert!(unreachable(
            "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
        ));
        assert!(unreachable(
            "srun: error: Unable to create step for job 9: Socket timed out on send/recv operation"
        ));
        assert!(!unreachable(
            "slurm_load_jobs error: Invalid job id specified"
        ));
        assert!(!unreachable(
            "srun: error: Unable to create step for job 9: Job/step already completing or completed"
        ));
    }
}
