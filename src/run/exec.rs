//! Running a benchmark, guard or setup command robustly: `sh -c`, a timeout, Ctrl-C, and
//! output of any size, with std threads and `libc` only.
//!
//! Design choices:
//! - The child leads its own process group, and every kill goes to the whole group
//!   (`kill(-pgid, …)`): `sh -c 'server & bench'` must not leave `server` running after a
//!   timeout, holding the output pipes open and skewing the next measurement.
//! - Policy: a command's process group does not outlive it. When the shell exits, whatever
//!   it left behind in its group gets SIGKILL. Leftovers would hold our pipes (so reading
//!   would never end) and load the machine during the next measurement. A command that
//!   really wants a daemon must detach it into its own session (`setsid`).
//! - The group is killed while the leader is still an unreaped zombie: a waiter thread
//!   blocks in `waitid(…, WNOWAIT)`, which reports the exit without reaping, so the
//!   process-group id cannot have been recycled when we signal it. The same thread gives
//!   an exact exit time, so `elapsed` carries no polling error.
//! - stdout and stderr are read on their own threads into a shared capture, so the
//!   combined `output` is interleaved as chunks arrive. If a process outside the group
//!   (one that called `setsid`) still holds a pipe after the group is gone, we stop
//!   waiting after a short grace and leave that reader thread behind rather than hang.
//! - Output is bounded: the first cap/2 and the last cap/2 bytes are kept (the head shows
//!   how it started, the tail how it ended; the middle of a flood is rarely useful), with
//!   a marker line counting what was dropped. stdout is captured a second time, with the
//!   same bound, because the metric is parsed from stdout alone.
//! - Cancellation is cooperative: the caller's SIGINT handler sets an `AtomicBool`, which
//!   is polled every 20 ms. The group gets SIGTERM, then SIGKILL 2 s later, so a benchmark
//!   can clean up but cannot hold the runner hostage.

use crate::model::CommandOutcome;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct CommandSpec<'a> {
    /// Run via `sh -c`.
    pub command: &'a str,
    pub cwd: &'a Path,
    /// Added to (and overriding) the inherited environment.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Maximum bytes kept of `output` (and, separately, of `stdout`).
    pub output_cap: usize,
    /// Fed to the command's stdin, which is then closed; `None` gives it `/dev/null`.
    pub stdin: Option<&'a [u8]>,
    /// Confines the command's writes with Landlock at this ABI (see
    /// `sandbox.rs`); `None` leaves them unconfined. Either way, when ooda's
    /// helper is available the command is contained: it gets a private
    /// `TMPDIR`, and nothing it starts outlives it.
    pub landlock: Option<i32>,
    /// With `landlock`, writable besides `cwd` and the private `TMPDIR`.
    pub writable: Vec<PathBuf>,
    /// A measured command (setup, guards, metric, analyze): it runs as the
    /// user would run it, without ooda's `OODA_*` variables (the candidate's
    /// code must not be able to tell it is measured; `env` adds back what
    /// `metric.env` names) and without the model tiers' keys ([`withhold`]).
    pub measured: bool,
}

/// Names (comma-separated) of `OODA_*` variables of ooda's own
/// environment that measured commands still get: a harness that starts
/// ooda may hand its benchmarks a variable of its own this way.
pub(crate) const PASS_ENV: &str = "OODA_PASS_ENV";

/// Environment variables no measured command gets: the model tiers' API
/// keys (`models: {api_key_env: …}`), which the Brief's own commands never
/// need and a candidate's code would print.
static WITHHELD: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Adds `names` to what measured commands never get (see [`WITHHELD`]).
pub(crate) fn withhold(names: impl IntoIterator<Item = String>) {
    let mut w = WITHHELD
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for n in names {
        if !w.contains(&n) {
            w.push(n);
        }
    }
}

/// What a command did.
#[derive(Debug, Clone)]
pub struct CommandOutput {
    pub status: CommandOutcome,
    /// `None` when the shell died from a signal (or never started).
    pub exit_code: Option<i32>,
    /// stdout and stderr interleaved as they arrived, lossy UTF-8, capped.
    pub output: String,
    /// stdout alone, capped the same way: the metric is parsed from it.
    pub stdout: String,
    /// Bytes of `output` left out by the cap (≥ those left out of `stdout`).
    pub truncated_bytes: u64,
    /// From spawn to the shell's exit (or to the kill, on timeout or interruption).
    pub elapsed: Duration,
    /// Why the command ended, when something outside it ended it and said
    /// so (a scheduler over its memory limit): the failure's reason.
    pub ended_by: Option<String>,
}

/// Quotes `arg` for `sh` only when it needs it, so the printed line stays
/// the one a human would type.
pub(crate) fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Whether `program` is an executable file in a directory of `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Runs `spec` to completion, timeout or cancellation.
///
/// `Err` only when the command could not be started (missing `cwd`, NUL bytes in the
/// command or environment, no `sh`) or could not be waited for; anything the command
/// itself does is an `Ok` with an [`CommandOutcome`].
pub(crate) fn run(spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput> {
    run_with(spec, cancel, &DEFAULT_TIMING)
}

struct Timing {
    /// How often `cancel` is looked at.
    poll: Duration,
    /// Between SIGTERM and SIGKILL on cancellation.
    term_grace: Duration,
    /// How long to keep reading after the group is dead, for pipes held by escapees.
    drain_grace: Duration,
}

const DEFAULT_TIMING: Timing = Timing {
    poll: Duration::from_millis(20),
    term_grace: Duration::from_secs(2),
    drain_grace: Duration::from_millis(200),
};

const READ_CHUNK: usize = 64 * 1024;

/// State shared by the reader threads, the waiter thread and the caller.
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    combined: HeadTail,
    stdout: HeadTail,
    open_pipes: usize,
    /// Set by the waiter thread: when the shell exited, or why waiting failed.
    exited: Option<io::Result<Instant>>,
    /// Set with `exited`, and never taken.
    exit_seen: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking reader cannot leave the captures inconsistent enough to matter.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

enum End {
    /// The shell exited on its own, at this instant.
    Exited(Instant),
    TimedOut(Instant),
    /// Cancelled: the shell exited (after SIGTERM or SIGKILL) at this instant.
    Interrupted(Instant),
}

impl CommandOutput {
    /// A command interrupted before it could start.
    pub(crate) fn interrupted() -> CommandOutput {
        CommandOutput {
            status: CommandOutcome::Interrupted,
            exit_code: None,
            output: String::new(),
            stdout: String::new(),
            truncated_bytes: 0,
            elapsed: Duration::ZERO,
            ended_by: None,
        }
    }
}

fn run_with(spec: &CommandSpec, cancel: &AtomicBool, timing: &Timing) -> io::Result<CommandOutput> {
    let start = Instant::now();
    if cancel.load(Ordering::SeqCst) {
        return Ok(CommandOutput::interrupted());
    }

    let helper = crate::run::sandbox::helper();
    let tmp = match helper {
        Some(_) => Some(crate::run::sandbox::PrivateDir::create("ooda-step")?),
        None => None,
    };
    let mut command = match helper {
        Some(helper) => {
            let confine = spec.landlock.map(|abi| {
                let mut writable = vec![spec.cwd.to_path_buf()];
                writable.extend(tmp.iter().map(|t| t.0.clone()));
                writable.extend(spec.writable.iter().cloned());
                crate::run::sandbox::Confinement { abi, writable }
            });
            let mut c = Command::new(helper);
            c.args(crate::run::sandbox::helper_args(
                confine.as_ref(),
                std::process::id(),
                spec.command,
            ));
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(spec.command);
            c
        }
    };
    // The collector ooda exports to (and its auth headers) is ooda's, not
    // the agent's or the benchmark's: an agent must not be handed the
    // credentials, nor a CLI start exporting its own spans into the trace.
    for (name, _) in std::env::vars_os() {
        if name
            .to_str()
            .is_some_and(|n| n.starts_with("OTEL_EXPORTER_OTLP_"))
        {
            command.env_remove(&name);
        }
    }
    if spec.measured {
        let withheld = WITHHELD
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let passed = std::env::var(PASS_ENV).unwrap_or_default();
        let passed: Vec<&str> = passed.split(',').map(str::trim).collect();
        for (name, _) in std::env::vars_os() {
            let ours = name.to_str().is_some_and(|n| {
                (n.starts_with("OODA_") && !passed.contains(&n)) || withheld.iter().any(|w| w == n)
            });
            if ours {
                command.env_remove(&name);
            }
        }
    }
    command
        .current_dir(spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some(t) = &tmp {
        // After the caller's environment: the private directory is the one
        // the sandbox lets the command write.
        command.env("TMPDIR", &t.0);
    }
    command
        .process_group(0)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = if helper.is_some() {
        crate::run::sandbox::spawn_registered(&mut command)?
    } else {
        command.spawn()?
    };
    let pgid = child.id() as libc::pid_t;
    // Unregistered (and leftovers swept) however this function returns.
    let mut registered = Registered {
        pid: helper.is_some().then_some(child.id()),
        clean: false,
    };

    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            combined: HeadTail::new(spec.output_cap),
            stdout: HeadTail::new(spec.output_cap),
            open_pipes: 0,
            exited: None,
            exit_seen: false,
        }),
        changed: Condvar::new(),
    });

    if let Err(e) = start_threads(&mut child, spec, &shared) {
        kill_group(pgid, libc::SIGKILL);
        let _ = child.wait();
        return Err(e);
    }

    let contained = helper.is_some();
    let end = match supervise(spec, cancel, timing, start, pgid, contained, &shared) {
        Ok(end) => end,
        Err(e) => {
            kill_group(pgid, libc::SIGKILL);
            let _ = child.wait();
            return Err(e);
        }
    };
    if contained {
        // The helper is killing and reaping what the command left; killing
        // it now would orphan those to init. Only a helper that does not
        // finish in time is killed with its group.
        drop(wait_until(&shared, timing.term_grace, |s| s.exit_seen));
    }
    // The leader is dead but not reaped (or was SIGKILLed with its group): the pgid is
    // still ours, so this reaches only the command's own leftovers.
    kill_group(pgid, libc::SIGKILL);
    let exit = child.wait()?;
    // A helper that ended by itself killed and reaped everything below it
    // before it exited; one that was killed (by a timeout's SIGKILL, or by
    // a command without Landlock) may have left orphans with ooda.
    registered.clean = matches!(end, End::Exited(_)) && exit.code().is_some();

    let (combined, stdout) = drain(&shared, timing.drain_grace);
    let (output, truncated_bytes) = combined.finish();
    let (stdout, _) = stdout.finish();

    let (status, end_at) = match end {
        End::TimedOut(at) => (CommandOutcome::TimedOut, at),
        End::Interrupted(at) => (CommandOutcome::Interrupted, at),
        End::Exited(at) => {
            let status = match exit.code() {
                Some(0) => CommandOutcome::Success,
                Some(_) => CommandOutcome::Failed,
                None if exit.signal().is_some() => CommandOutcome::Killed,
                None => CommandOutcome::Failed,
            };
            (status, at)
        }
    };
    Ok(CommandOutput {
        status,
        exit_code: exit.code(),
        output,
        stdout,
        truncated_bytes,
        elapsed: end_at.saturating_duration_since(start),
        ended_by: None,
    })
}

fn start_threads(child: &mut Child, spec: &CommandSpec, shared: &Arc<Shared>) -> io::Result<()> {
    if let (Some(data), Some(mut pipe)) = (spec.stdin, child.stdin.take()) {
        let data = data.to_vec();
        // On its own thread: a command that does not read its input must not block us.
        // A write error (EPIPE when the command exits first) is the command's business.
        thread::Builder::new()
            .name("ooda-exec-stdin".into())
            .spawn(move || {
                block_sigpipe_on_this_thread();
                let _ = pipe.write_all(&data);
            })?;
    }
    if let Some(out) = child.stdout.take() {
        spawn_reader(out, true, shared)?;
    }
    if let Some(err) = child.stderr.take() {
        spawn_reader(err, false, shared)?;
    }
    let pid = child.id() as libc::pid_t;
    let waiter = Arc::clone(shared);
    thread::Builder::new()
        .name("ooda-exec-wait".into())
        .spawn(move || {
            let result = wait_exit_nowait(pid).map(|()| Instant::now());
            let mut state = waiter.lock();
            state.exited = Some(result);
            state.exit_seen = true;
            drop(state);
            waiter.changed.notify_all();
        })?;
    Ok(())
}

/// Makes a write to a closed pipe fail with EPIPE on this thread instead of raising
/// SIGPIPE: the binary may restore SIGPIPE's default action (to exit quietly on a closed
/// stdout), and a benchmark that ignores its input must not kill the runner. A SIGPIPE
/// left pending on this thread is discarded when the thread exits.
fn block_sigpipe_on_this_thread() {
    // SAFETY: sigset manipulation on a local set, then a mask change for this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    is_stdout: bool,
    shared: &Arc<Shared>,
) -> io::Result<()> {
    shared.lock().open_pipes += 1;
    let shared = Arc::clone(shared);
    let spawned = thread::Builder::new().name("ooda-exec-read".into()).spawn({
        let shared = Arc::clone(&shared);
        move || {
            let mut buf = vec![0u8; READ_CHUNK];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let chunk = &buf[..n];
                        let mut state = shared.lock();
                        state.combined.push(chunk);
                        if is_stdout {
                            state.stdout.push(chunk);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            shared.lock().open_pipes -= 1;
            shared.changed.notify_all();
        }
    });
    if spawned.is_err() {
        shared.lock().open_pipes -= 1;
    }
    spawned.map(|_| ())
}

/// Blocks until `pid` has exited, leaving it unreaped (a zombie) so that its pid and
/// process-group id stay reserved until `Child::wait`.
fn wait_exit_nowait(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value; waitid only writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: plain syscall on our own child with a valid out-pointer.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Waits for the shell's exit, the timeout or cancellation, signalling the group as needed.
fn supervise(
    spec: &CommandSpec,
    cancel: &AtomicBool,
    timing: &Timing,
    start: Instant,
    pgid: libc::pid_t,
    contained: bool,
    shared: &Shared,
) -> io::Result<End> {
    // A contained command's group is led by the helper, which SIGKILLs
    // everything below it, `setsid` escapees included, when told so.
    let hard_stop = || {
        if contained {
            // SAFETY: plain syscall to our own child (unreaped, so its pid is ours).
            unsafe { libc::kill(pgid, libc::SIGUSR1) };
        } else {
            kill_group(pgid, libc::SIGKILL);
        }
    };
    // `None` when the timeout is too large to represent: no deadline.
    let deadline = start.checked_add(spec.timeout);
    let mut terminated_at: Option<Instant> = None;
    let mut state = shared.lock();
    loop {
        if let Some(result) = state.exited.take() {
            let at = result?;
            return Ok(match terminated_at {
                Some(_) => End::Interrupted(at),
                None => End::Exited(at),
            });
        }
        let now = Instant::now();
        match terminated_at {
            Some(t) if now.saturating_duration_since(t) >= timing.term_grace => {
                hard_stop();
                return Ok(End::Interrupted(now));
            }
            Some(_) => {}
            None if cancel.load(Ordering::SeqCst) => {
                kill_group(pgid, libc::SIGTERM);
                terminated_at = Some(now);
            }
            None if deadline.is_some_and(|d| now >= d) => {
                hard_stop();
                return Ok(End::TimedOut(now));
            }
            None => {}
        }
        let mut wait = timing.poll;
        if let (None, Some(d)) = (terminated_at, deadline) {
            wait = wait.min(d.saturating_duration_since(now));
        }
        if let Some(t) = terminated_at {
            wait = wait.min((t + timing.term_grace).saturating_duration_since(now));
        }
        state = shared
            .changed
            .wait_timeout(state, wait.max(Duration::from_millis(1)))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Waits until `done` holds of the shared state or `grace` has passed;
/// returns the state, locked.
fn wait_until(
    shared: &Shared,
    grace: Duration,
    done: impl Fn(&State) -> bool,
) -> MutexGuard<'_, State> {
    let until = Instant::now() + grace;
    let mut state = shared.lock();
    while !done(&state) {
        let now = Instant::now();
        if now >= until {
            break;
        }
        state = shared
            .changed
            .wait_timeout(state, until - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    state
}

/// A registered child, unregistered on drop, after it was waited for; then
/// whatever escaped a killed helper is swept.
struct Registered {
    pid: Option<u32>,
    /// The helper exited by itself, its descendants all reaped: nothing
    /// can have escaped it, and the sweep (a read of every process of the
    /// machine from /proc) is needed only now and then, for what ooda
    /// started without a helper.
    clean: bool,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            crate::run::sandbox::unregister(pid);
            if !self.clean || crate::run::sandbox::sweep_due() {
                crate::run::sandbox::sweep_orphans();
            }
        }
    }
}

/// Waits (boundedly) for the readers to reach end of file, then takes the captures.
fn drain(shared: &Shared, grace: Duration) -> (HeadTail, HeadTail) {
    // A process outside the group may still hold a pipe after `grace`: its
    // reader is left behind and its late output goes to the empty captures
    // swapped in below.
    let mut state = wait_until(shared, grace, |s| s.open_pipes == 0);
    let combined = std::mem::replace(&mut state.combined, HeadTail::new(0));
    let stdout = std::mem::replace(&mut state.stdout, HeadTail::new(0));
    (combined, stdout)
}

fn kill_group(pgid: libc::pid_t, signal: libc::c_int) {
    if pgid > 0 {
        // SAFETY: plain syscall. ESRCH (nothing left in the group) is the usual, fine result.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// The first `cap/2` bytes and the last `cap − cap/2` bytes of a stream, in bounded memory.
struct HeadTail {
    head_cap: usize,
    head: Vec<u8>,
    tail: Ring,
    total: u64,
}

impl HeadTail {
    fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        HeadTail {
            head_cap,
            head: Vec::new(),
            tail: Ring::new(cap - head_cap),
            total: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        self.tail.push(data);
    }

    /// The kept text (with a marker where bytes were dropped) and the number dropped.
    fn finish(&self) -> (String, u64) {
        let tail = self.tail.contents();
        let kept = (self.head.len() + tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&all).into_owned(), 0);
        }
        // Cut at character boundaries so the seams show no replacement characters.
        let head = &self.head[..self.head.len() - incomplete_suffix(&self.head)];
        let tail = &tail[leading_continuations(&tail)..];
        let omitted = self.total - (head.len() + tail.len()) as u64;
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[… {omitted} bytes omitted …]\n"));
        text.push_str(&String::from_utf8_lossy(tail));
        (text, omitted)
    }
}

/// Length of a UTF-8 sequence cut short at the end of `bytes` (0 if none).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let needed = match b {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// Number of continuation bytes (at most 3) at the start of `bytes`.
fn leading_continuations(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| *b & 0xC0 == 0x80)
        .count()
}

/// Keeps the last `cap` bytes pushed. Grows to `cap` only as data arrives, so a large
/// cap costs nothing for a quiet command.
struct Ring {
    cap: usize,
    buf: Vec<u8>,
    /// Once full: index of the oldest byte, which is also the next write position.
    pos: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Ring {
            cap,
            buf: Vec::new(),
            pos: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        if self.cap == 0 || data.is_empty() {
            return;
        }
        if data.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - self.cap..]);
            self.pos = 0;
            return;
        }
        if self.buf.len() < self.cap {
            let n = (self.cap - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            self.pos = 0;
        }
        while !data.is_empty() {
            let n = (self.cap - self.pos).min(data.len());
            self.buf[self.pos..self.pos + n].copy_from_slice(&data[..n]);
            self.pos = (self.pos + n) % self.cap;
            data = &data[n..];
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    fn contents(&self) -> Vec<u8> {
        if self.buf.len() < self.cap {
            return self.buf.clone();
        }
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&self.buf[self.pos..]);
        out.extend_from_slice(&self.buf[..self.pos]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::AtomicUsize;

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::SeqCst);
            let dir = std::env::temp_dir().join(format!("ooda-exec-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir.canonicalize().unwrap())
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn spec<'a>(command: &'a str, cwd: &'a Path) -> CommandSpec<'a> {
        CommandSpec {
            command,
            cwd,
            env: Vec::new(),
            timeout: Duration::from_secs(10),
            output_cap: 1 << 20,
            stdin: None,
            landlock: None,
            writable: Vec::new(),
            measured: false,
        }
    }

    fn go(spec: &CommandSpec) -> CommandOutput {
        run(spec, &AtomicBool::new(false)).unwrap()
    }

    /// True once `pid` no longer exists or is a zombie waiting for a reaper (in a
    /// container, PID 1 may never reap the orphans we kill).
    fn dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            // No /proc (macOS): ask the kernel.
            Err(_) => unsafe { libc::kill(pid, 0) != 0 },
        }
    }

    fn wait_dead(pid: i32) -> bool {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if dead(pid) {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn read_pid(path: &Path) -> i32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn success_and_output_streams() {
        let dir = TempDir::new();
        let out = go(&spec(
            "echo hi; sleep 0.05; echo oops >&2; sleep 0.05; echo bye",
            &dir.0,
        ));
        assert_eq!(out.status, CommandOutcome::Success);
        assert_eq!(out.exit_code, Some(0));
        assert_eq!(out.output, "hi\noops\nbye\n");
        assert_eq!(out.stdout, "hi\nbye\n");
        assert_eq!(out.truncated_bytes, 0);
        assert!(out.elapsed >= Duration::from_millis(100));
    }

    #[test]
    fn failure_exit_code() {
        let dir = TempDir::new();
        let out = go(&spec("echo partial; exit 3", &dir.0));
        assert_eq!(out.status, CommandOutcome::Failed);
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, "partial\n");
    }

    #[test]
    fn killed_by_foreign_signal() {
        let dir = TempDir::new();
        let out = go(&spec("kill -KILL $$", &dir.0));
        assert_eq!(out.status, CommandOutcome::Killed);
        assert_eq!(out.exit_code, None);
    }

    #[test]
    fn env_and_cwd_applied() {
        let dir = TempDir::new();
        let mut s = spec("echo \"$OODA_TEST_VAR\"; pwd", &dir.0);
        s.env = vec![("OODA_TEST_VAR".into(), "hello world".into())];
        let out = go(&s);
        assert_eq!(out.stdout, format!("hello world\n{}\n", dir.0.display()));
    }

    #[test]
    fn stdin_fed_or_null() {
        let dir = TempDir::new();
        let mut s = spec("cat; echo; wc -c < /dev/stdin", &dir.0);
        s.stdin = Some(b"line one\nline two");
        assert_eq!(go(&s).stdout, "line one\nline two\n0\n");
        s.stdin = None;
        let out = go(&s);
        assert_eq!(out.status, CommandOutcome::Success);
        assert_eq!(out.stdout, "\n0\n");
        // Input the command never reads does not block us.
        let big = vec![b'x'; 4 << 20];
        let mut s = spec("exit 0", &dir.0);
        s.stdin = Some(&big);
        assert_eq!(go(&s).status, CommandOutcome::Success);
    }

    #[test]
    fn spawn_errors_are_err() {
        let missing = Path::new("/nonexistent/ooda/dir");
        assert!(run(&spec("true", missing), &AtomicBool::new(false)).is_err());
        let dir = TempDir::new();
        assert!(run(&spec("echo \0", &dir.0), &AtomicBool::new(false)).is_err());
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = TempDir::new();
        // The grandchild holds stdout open and the shell waits for it.
        let mut s = spec("sleep 30 & echo $! > gc.pid; echo started; wait", &dir.0);
        s.timeout = Duration::from_millis(300);
        let out = go(&s);
        assert_eq!(out.status, CommandOutcome::TimedOut);
        assert_eq!(out.exit_code, None);
        assert!(out.elapsed >= Duration::from_millis(300));
        assert!(
            out.elapsed < Duration::from_millis(1000),
            "{:?}",
            out.elapsed
        );
        assert_eq!(out.stdout, "started\n");
        assert!(wait_dead(read_pid(&dir.0.join("gc.pid"))));
    }

    #[test]
    fn leftovers_holding_pipes_are_killed_on_exit() {
        let dir = TempDir::new();
        let started = Instant::now();
        let out = go(&spec("sleep 30 & echo $! > gc.pid; echo done", &dir.0));
        assert_eq!(out.status, CommandOutcome::Success);
        assert_eq!(out.stdout, "done\n");
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(wait_dead(read_pid(&dir.0.join("gc.pid"))));
    }

    #[test]
    fn escaped_process_does_not_hang_us() {
        let dir = TempDir::new();
        // setsid leaves our process group, so it survives the group kill while holding
        // stdout; we must still return after the drain grace.
        let started = Instant::now();
        let out = go(&spec(
            "if command -v setsid >/dev/null; then setsid sleep 3 & echo $! > esc.pid; fi; echo ok",
            &dir.0,
        ));
        assert_eq!(out.status, CommandOutcome::Success);
        assert!(out.stdout.starts_with("ok\n"));
        assert!(started.elapsed() < Duration::from_secs(2));
        if let Ok(pid) = std::fs::read_to_string(dir.0.join("esc.pid"))
            && let Ok(pid) = pid.trim().parse::<i32>()
        {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    #[test]
    fn flood_is_capped() {
        let dir = TempDir::new();
        let mut s = spec("yes | head -c 200000000; sleep 1; echo end >&2", &dir.0);
        s.output_cap = 64 * 1024;
        let out = go(&s);
        assert_eq!(out.status, CommandOutcome::Success);
        let marker_room = 64;
        assert!(out.output.len() <= s.output_cap + marker_room);
        assert!(out.stdout.len() <= s.output_cap + marker_room);
        let total = 200_000_000 + 4;
        assert_eq!(out.truncated_bytes, total - s.output_cap as u64);
        assert!(out.output.starts_with("y\ny\n"));
        // stderr's "end" lands in the tail. It is written a second after
        // stdout's last byte: written at once, the stdout reader could still
        // be emptying a full pipe after it, and on a loaded machine push it
        // out of the tail (it did, once, in CI). A pipe read may still split
        // a "y\n" around it: only its presence after the marker is fixed.
        let marker_at = out.output.find("bytes omitted").unwrap();
        assert!(out.output[marker_at..].contains("end"));
        assert!(out.output.contains(&format!(
            "\n[… {} bytes omitted …]\ny\n",
            out.truncated_bytes
        )));
        assert!(out.stdout.contains("bytes omitted"));
        assert!(out.stdout.ends_with("y\ny\n"));
    }

    #[test]
    fn cancel_interrupts() {
        let dir = TempDir::new();
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = Arc::clone(&cancel);
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(150));
            setter.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let out = run(&spec("sleep 30 & echo $! > gc.pid; wait", &dir.0), &cancel).unwrap();
        t.join().unwrap();
        assert_eq!(out.status, CommandOutcome::Interrupted);
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(wait_dead(read_pid(&dir.0.join("gc.pid"))));
    }

    #[test]
    fn cancel_escalates_to_sigkill() {
        let dir = TempDir::new();
        let cancel = AtomicBool::new(true);
        // Ignored dispositions are inherited through exec, so `sleep` ignores TERM too.
        let s = spec("trap '' TERM; echo ready; sleep 30", &dir.0);
        let timing = Timing {
            term_grace: Duration::from_millis(300),
            ..DEFAULT_TIMING
        };
        // Set after start: we want the command running when the cancel arrives.
        let flag = Arc::new(AtomicBool::new(false));
        let setter = Arc::clone(&flag);
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            setter.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let out = run_with(&s, &flag, &timing).unwrap();
        t.join().unwrap();
        assert_eq!(out.status, CommandOutcome::Interrupted);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(400), "{took:?}");
        assert!(took < Duration::from_millis(1500), "{took:?}");
        assert_eq!(out.stdout, "ready\n");
        // Already cancelled before the start: nothing runs.
        let out = run(&spec("touch ran", &dir.0), &cancel).unwrap();
        assert_eq!(out.status, CommandOutcome::Interrupted);
        assert!(!dir.0.join("ran").exists());
    }

    #[test]
    fn zero_timeout_and_huge_timeout() {
        let dir = TempDir::new();
        let mut s = spec("sleep 5", &dir.0);
        s.timeout = Duration::ZERO;
        assert_eq!(go(&s).status, CommandOutcome::TimedOut);
        let mut s = spec("true", &dir.0);
        s.timeout = Duration::MAX;
        assert_eq!(go(&s).status, CommandOutcome::Success);
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let mut h = HeadTail::new(10);
        for piece in [&b"0123"[..], b"456789ab", b"", b"cdef"] {
            h.push(piece);
        }
        let (text, dropped) = h.finish();
        assert_eq!(dropped, 6);
        assert_eq!(text, "01234\n[… 6 bytes omitted …]\nbcdef");
        let mut h = HeadTail::new(10);
        h.push(b"short");
        assert_eq!(h.finish(), ("short".to_string(), 0));
        let mut h = HeadTail::new(10);
        h.push(b"0123456789");
        assert_eq!(h.finish(), ("0123456789".to_string(), 0));
        let mut h = HeadTail::new(0);
        h.push(b"abc");
        assert_eq!(h.finish(), ("[… 3 bytes omitted …]\n".to_string(), 3));
        // A single push larger than the whole cap.
        let mut h = HeadTail::new(4);
        h.push(b"abcdefghij");
        assert_eq!(h.finish().0, "ab\n[… 6 bytes omitted …]\nij");
    }

    #[test]
    fn head_tail_cuts_at_char_boundaries() {
        // "é" is 2 bytes: a cap of 5 splits characters at both seams.
        let mut h = HeadTail::new(6);
        h.push("éééééééé".as_bytes());
        let (text, dropped) = h.finish();
        assert!(!text.contains('\u{FFFD}'), "{text}");
        assert_eq!(text, "é\n[… 12 bytes omitted …]\né");
        assert_eq!(dropped, 12);
        assert_eq!(incomplete_suffix("aé".as_bytes()), 0);
        assert_eq!(incomplete_suffix(&"a€".as_bytes()[..3]), 2);
        assert_eq!(incomplete_suffix(b""), 0);
    }

    #[test]
    fn ring_wraps() {
        let mut r = Ring::new(5);
        r.push(b"ab");
        assert_eq!(r.contents(), b"ab");
        r.push(b"cdefg");
        assert_eq!(r.contents(), b"cdefg");
        r.push(b"hi");
        assert_eq!(r.contents(), b"efghi");
        r.push(b"jklm");
        assert_eq!(r.contents(), b"ijklm");
        for b in b"nopqrstuvw" {
            r.push(&[*b]);
        }
        assert_eq!(r.contents(), b"stuvw");
    }
}
