//! `ooda daemon [--briefs DIR]`: every Brief of a folder on its own
//! schedule, in one long-lived process.
//!
//! Shape: a supervisor thread and one loop thread per Brief file. Loops are
//! threads rather than async tasks because a tick is blocking work (git,
//! child processes, fsync) done by the same synchronous phase machine that
//! `ooda tick` runs; Briefs run concurrently, each under its own lock, and
//! share nothing but the signal flags.
//!
//! The file system is the truth; messages are only wake-ups. The watcher
//! (notify, debounced so an editor's write-rename-chmod dance arrives as one
//! batch) never says what changed: every batch makes the supervisor rescan
//! the folder, start a loop for each new `*.md`, and wake the loop of each
//! file that changed or vanished. A woken loop re-reads its own file: gone
//! means the loop ends (after the tick in progress, so the iteration is
//! archived, not left half done); edited means the next tick uses the new
//! text, which the phase machine logs as `brief_changed`; invalid means the
//! problems are logged once and the Brief waits for the next edit.
//!
//! A Brief that cannot tick (RED, done, out of budget, unrunnable) is
//! *parked* with one log line rather than retried at every fire time. A
//! parked loop looks again when its Brief changes, when `ooda.yaml` is
//! re-read (SIGHUP), or when its `state.json` changes (`ooda ack` writes
//! it); a cheap mtime check every 2 s notices the last. A Brief parked on
//! bad input (a baseline that fails) also looks again when the repository's
//! HEAD moves, since the fix is usually a commit: the poll reads HEAD too.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use chrono::Utc;
use notify_debouncer_full::notify::RecursiveMode;

use crate::archive::state::State;
use crate::error::{Error, Result};
use crate::events::log::Log;
use crate::exit::Exit;
use crate::phases::StepOutcome;
use crate::project::Project;
use crate::run::interrupt::{Interrupt, Signal};
use crate::schedule::ticker::{self, Slot, TickContext, Waited, Wake};
use crate::validate::cron::Schedule;

/// Editors write a file in several steps; one batch per save.
const DEBOUNCE: Duration = Duration::from_millis(300);
/// How often a parked loop looks at its `state.json`'s mtime.
const PARK_POLL: Duration = Duration::from_secs(2);
/// Before a back-to-back Brief retries after a busy lock or a failed tick.
const BUSY_RETRY: Duration = Duration::from_secs(5);
const ERROR_RETRY: Duration = Duration::from_secs(60);

enum Msg {
    /// The watcher saw something change in the folder.
    Changed,
    WatchError(String),
    Signal(Signal),
    /// A loop ended (its Brief was deleted, or it stopped on a signal).
    Exited(PathBuf),
}

struct Handle {
    tx: Sender<Wake>,
    join: JoinHandle<()>,
    fingerprint: Option<u64>,
}

pub(crate) fn run(
    project: Project,
    briefs: Option<PathBuf>,
    log: Log,
    verbose: bool,
) -> Result<Exit> {
    let dir = briefs.unwrap_or_else(|| project.briefs_dir());
    if !dir.is_dir() {
        return Err(Error::Input(format!(
            "--briefs {}: no such folder (create it, or `ooda new NAME` to write a first Brief)",
            dir.display()
        )));
    }
    let (tx, rx) = mpsc::channel();
    let signal_tx = tx.clone();
    let interrupt = Interrupt::watch(move |s| {
        let _ = signal_tx.send(Msg::Signal(s));
    })?;
    let watch_tx = tx.clone();
    let mut debouncer = notify_debouncer_full::new_debouncer(
        DEBOUNCE,
        None,
        move |res: notify_debouncer_full::DebounceEventResult| {
            let _ = watch_tx.send(match res {
                Ok(_) => Msg::Changed,
                Err(errors) => Msg::WatchError(
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            });
        },
    )
    .map_err(|e| Error::Internal(format!("starting the folder watcher: {e}")))?;
    debouncer
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|e| Error::Input(format!("watching {}: {e}", dir.display())))?;
    let mut sup = Supervisor {
        project,
        dir,
        log,
        verbose,
        interrupt,
        tx,
        workers: BTreeMap::new(),
        stopping: false,
    };
    sup.log.info(
        None,
        &format!(
            "daemon: watching {} (times in {}); SIGINT/SIGTERM stop at the next checkpoint, SIGHUP re-reads ooda.yaml",
            sup.dir.display(),
            sup.log.zone().name()
        ),
    );
    sup.reconcile();
    if sup.workers.is_empty() {
        sup.log
            .info(None, "no Briefs yet: waiting for one to appear");
    }
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Changed => sup.reconcile(),
            Msg::WatchError(e) => sup.log.error(None, &format!("watching the folder: {e}")),
            Msg::Signal(Signal::Stop) => {
                sup.log.info(
                    None,
                    "stopping: each Brief stops at its next checkpoint (send the signal again to stop running commands now)",
                );
                sup.stopping = true;
                for w in sup.workers.values() {
                    let _ = w.tx.send(Wake::Stop);
                }
            }
            Msg::Signal(Signal::Cancel) => sup
                .log
                .info(None, "stopping now: running commands are cancelled"),
            Msg::Signal(Signal::Reload) => {
                if let Some(c) = ticker::reload_config(&sup.project, &sup.log) {
                    sup.project.config = c.clone();
                    for w in sup.workers.values() {
                        let _ = w.tx.send(Wake::Config(Box::new(c.clone())));
                    }
                }
            }
            Msg::Exited(path) => {
                if let Some(w) = sup.workers.remove(&path) {
                    let _ = w.join.join();
                }
                if !sup.stopping {
                    // A Brief deleted and re-created while its old loop finished.
                    sup.reconcile();
                }
            }
        }
        if sup.stopping && sup.workers.is_empty() {
            break;
        }
    }
    debouncer.stop();
    sup.log.info(None, "daemon stopped");
    Err(Error::Interrupted)
}

struct Supervisor {
    project: Project,
    dir: PathBuf,
    log: Log,
    verbose: bool,
    interrupt: Interrupt,
    tx: Sender<Msg>,
    workers: BTreeMap<PathBuf, Handle>,
    stopping: bool,
}

impl Supervisor {
    /// Starts a loop for each new Brief and wakes those whose file changed or vanished.
    fn reconcile(&mut self) {
        if self.stopping {
            return;
        }
        let present = list_briefs(&self.dir);
        for path in &present {
            let fp = fingerprint(path);
            match self.workers.get_mut(path) {
                Some(w) => {
                    if w.fingerprint != fp {
                        w.fingerprint = fp;
                        let _ = w.tx.send(Wake::Changed);
                    }
                }
                None => self.spawn(path.clone(), fp),
            }
        }
        for (path, w) in &mut self.workers {
            if !present.contains(path) && w.fingerprint.is_some() {
                w.fingerprint = None;
                let _ = w.tx.send(Wake::Changed);
            }
        }
    }

    fn spawn(&mut self, path: PathBuf, fingerprint: Option<u64>) {
        let (tx, rx) = mpsc::channel();
        let name = brief_name(&path);
        let worker = Worker {
            arg: path.to_string_lossy().into_owned(),
            path: path.clone(),
            name: name.clone(),
            project: self.project.clone(),
            interrupt: self.interrupt.clone(),
            log: self.log.clone(),
            verbose: self.verbose,
            rx,
        };
        let exited = ExitNotice {
            tx: self.tx.clone(),
            path: path.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("ooda-{name}"))
            .spawn(move || {
                // Sent on drop, so the supervisor hears of a loop that panicked too.
                let _exited = exited;
                worker.run();
            });
        match spawned {
            Ok(join) => {
                self.log.info(Some(&name), "found: starting its loop");
                self.workers.insert(
                    path,
                    Handle {
                        tx,
                        join,
                        fingerprint,
                    },
                );
            }
            Err(e) => self
                .log
                .error(Some(&name), &format!("cannot start a thread for it: {e}")),
        }
    }
}

struct ExitNotice {
    tx: Sender<Msg>,
    path: PathBuf,
}

impl Drop for ExitNotice {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Exited(std::mem::take(&mut self.path)));
    }
}

fn list_briefs(dir: &Path) -> Vec<PathBuf> {
    // A folder that cannot be read is watched again on the next event.
    crate::project::brief_paths_in(dir).unwrap_or_default()
}

fn brief_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn fingerprint(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The commit the user's checkout is on, if it can be read.
fn user_head(root: &Path) -> Option<git2::Oid> {
    let repo = git2::Repository::discover(root).ok()?;
    let id = repo.head().ok()?.peel_to_commit().ok()?.id();
    Some(id)
}

/// Why a loop is not ticking, and what it last saw of the state file.
struct Parked {
    state_mtime: Option<SystemTime>,
    /// The user's HEAD when a tick failed on its input (a baseline that
    /// does not build, a command that is missing): the usual fix is a
    /// commit, which changes neither the Brief nor the state file.
    head: Option<git2::Oid>,
}

enum Step {
    /// Look at the Brief again.
    Again,
    /// End the loop.
    End,
}

/// One Brief's loop.
struct Worker {
    /// The Brief's path, as `Machine::open` takes it.
    arg: String,
    path: PathBuf,
    name: String,
    project: Project,
    interrupt: Interrupt,
    log: Log,
    verbose: bool,
    rx: Receiver<Wake>,
}

impl Worker {
    fn run(mut self) {
        let zone = self.log.zone().clone();
        let mut seen: Option<u64> = None;
        let mut invalid: Option<String> = None;
        // The Brief's `schedule` text as last applied, and its parsed form.
        let mut applied: Option<Option<String>> = None;
        let mut schedule: Option<Schedule> = None;
        let mut due = Utc::now();
        let mut missed = 0;
        let mut parked: Option<Parked> = None;
        let mut last_park_message = String::new();
        let mut busy = false;
        loop {
            if self.interrupt.is_set() {
                break;
            }
            let Some(fp) = fingerprint(&self.path) else {
                self.log
                    .info(Some(&self.name), "Brief deleted: its loop ended");
                break;
            };
            let edited = seen.is_some_and(|s| s != fp);
            seen = Some(fp);
            if edited {
                parked = None;
            }
            let brief = match self.project.load_brief(&self.arg) {
                Ok(b) => b,
                Err(e) => {
                    let text = e.to_string();
                    if invalid.as_deref() != Some(text.as_str()) {
                        self.log.error(
                            Some(&self.name),
                            &format!("invalid Brief, skipped until it is fixed:\n{text}"),
                        );
                        invalid = Some(text);
                    }
                    match self.wait_for_wake() {
                        Step::Again => continue,
                        Step::End => break,
                    }
                }
            };
            if invalid.take().is_some() {
                self.log.info(Some(&self.name), "the Brief is valid again");
            } else if edited {
                self.log.info(
                    Some(&self.name),
                    "Brief edited: the next iteration uses the new text",
                );
            }
            if applied.as_ref() != Some(&brief.schedule) {
                schedule = brief
                    .schedule
                    .as_deref()
                    .and_then(|s| Schedule::parse(s).ok());
                applied = Some(brief.schedule.clone());
                missed = 0;
                match &schedule {
                    Some(s) => match s.first(Utc::now(), &zone) {
                        Some(t) => {
                            due = t;
                            self.log.info(
                                Some(&self.name),
                                &format!(
                                    "runs on `{s}` (times in {}); next tick {}",
                                    zone.name(),
                                    zone.format(t)
                                ),
                            );
                        }
                        None => {
                            self.park_message(
                                &mut last_park_message,
                                &format!("`{s}` has no future fire time"),
                            );
                            parked = Some(self.parked_now());
                        }
                    },
                    None => self.log.info(
                        Some(&self.name),
                        "no `schedule`: iterations run back to back",
                    ),
                }
            }
            if parked.is_none()
                && let Some(why) = self.stopped()
            {
                self.park_message(&mut last_park_message, &why);
                parked = Some(self.parked_now());
            }
            if let Some(p) = &parked {
                match self.wait_parked(p) {
                    Some(Step::End) => break,
                    Some(Step::Again) => continue,
                    None => {
                        // Something changed outside: look again, with a fresh fire time.
                        parked = None;
                        last_park_message.clear();
                        if let Some(s) = &schedule
                            && let Some(t) = s.first(Utc::now(), &zone)
                        {
                            due = t;
                            missed = 0;
                        }
                        continue;
                    }
                }
            }
            if schedule.is_some() {
                match ticker::wait_until(due, &self.rx, &self.interrupt) {
                    Waited::Due => {}
                    Waited::Woken(w) => match self.woken(w) {
                        Step::Again => continue,
                        Step::End => break,
                    },
                }
            } else {
                due = Utc::now();
                while let Ok(w) = self.rx.try_recv() {
                    if let Step::End = self.woken(w) {
                        return;
                    }
                }
            }
            let label = schedule
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_else(|| "back to back".into());
            if schedule.is_some() {
                self.log
                    .info(Some(&self.name), &format!("tick due {}", zone.format(due)));
            }
            let result = {
                let cx = TickContext {
                    project: &self.project,
                    brief_arg: &self.arg,
                    name: &self.name,
                    interrupt: &self.interrupt,
                    log: &self.log,
                    verbose: self.verbose,
                };
                ticker::tick(
                    &cx,
                    &Slot {
                        schedule: &label,
                        due,
                        missed,
                    },
                )
            };
            let mut retry_in = None;
            if !matches!(result, Err(Error::Busy(_))) {
                busy = false;
            }
            match result {
                Ok(outcome) => {
                    if let Some(line) = outcome_line(&outcome) {
                        self.log.info(Some(&self.name), &line);
                    }
                    match outcome {
                        StepOutcome::Baseline | StepOutcome::Iteration { .. } => {}
                        StepOutcome::Stopped(..) | StepOutcome::Finished(_) => {
                            // The run's result, as `ooda run` ends with it.
                            if let Some(saved) =
                                crate::report::headline::Saved::load(&self.project, &self.name)
                            {
                                self.log.info(
                                    Some(&self.name),
                                    &saved.headline().result_line(&self.name),
                                );
                            }
                            last_park_message.clear();
                            self.park_message(
                                &mut last_park_message,
                                "skipped until the Brief changes, `ooda.yaml` is re-read, or its iterations/ state changes",
                            );
                            parked = Some(self.parked_now());
                        }
                    }
                }
                Err(Error::Interrupted) => {
                    self.log.info(
                        Some(&self.name),
                        "stopped at a checkpoint; the next tick resumes there",
                    );
                    break;
                }
                Err(Error::Busy(m)) => {
                    // Once per streak: a back-to-back Brief retries every few seconds.
                    if !busy {
                        self.log.info(
                            Some(&self.name),
                            &format!("busy ({m}): this fire time is skipped"),
                        );
                    }
                    busy = true;
                    retry_in = Some(BUSY_RETRY);
                }
                Err(e @ (Error::Red(_) | Error::Budget(_) | Error::Brief(_))) => {
                    self.park_message(&mut last_park_message, &format!("skipped: {e}"));
                    parked = Some(self.parked_now());
                }
                Err(e @ Error::Input(_)) => {
                    self.park_message(
                        &mut last_park_message,
                        &format!("skipped until the Brief, its state or the repository's HEAD changes: {e}"),
                    );
                    parked = Some(Parked {
                        head: user_head(&self.project.root),
                        ..self.parked_now()
                    });
                }
                Err(e) => {
                    self.log
                        .error(Some(&self.name), &format!("tick failed: {e}"));
                    retry_in = Some(ERROR_RETRY);
                }
            }
            if parked.is_some() {
                continue;
            }
            match &schedule {
                Some(s) => {
                    let next = ticker::plan_next(s, &zone, due, Utc::now());
                    missed = next.missed;
                    match next.at {
                        Some(t) => {
                            due = t;
                            if next.missed > 0 {
                                self.log
                                    .info(Some(&self.name), &ticker::overrun_message(next.missed));
                            } else {
                                self.log.info(
                                    Some(&self.name),
                                    &format!("next tick {}", zone.format(t)),
                                );
                            }
                        }
                        None => {
                            self.park_message(
                                &mut last_park_message,
                                &format!("`{s}` has no later fire time"),
                            );
                            parked = Some(self.parked_now());
                        }
                    }
                }
                None => {
                    if let Some(d) = retry_in {
                        let until = Utc::now() + chrono::Duration::from_std(d).unwrap_or_default();
                        if let Waited::Woken(w) =
                            ticker::wait_until(until, &self.rx, &self.interrupt)
                            && let Step::End = self.woken(w)
                        {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Handles a message that interrupted a wait.
    fn woken(&mut self, w: Wake) -> Step {
        match w {
            Wake::Stop => Step::End,
            Wake::Config(c) => {
                self.project.config = *c;
                Step::Again
            }
            Wake::Changed | Wake::Reload => Step::Again,
        }
    }

    /// Blocks until any message arrives.
    fn wait_for_wake(&mut self) -> Step {
        if self.interrupt.is_set() {
            return Step::End;
        }
        match self.rx.recv() {
            Ok(m) => self.woken(m),
            Err(_) => Step::End,
        }
    }

    /// Waits while parked. `None`: the state file or the configuration
    /// changed, so the Brief may be able to tick again.
    fn wait_parked(&mut self, p: &Parked) -> Option<Step> {
        loop {
            if self.interrupt.is_set() {
                return Some(Step::End);
            }
            match self.rx.recv_timeout(PARK_POLL) {
                Ok(Wake::Config(c)) => {
                    self.project.config = *c;
                    return None;
                }
                Ok(w) => return Some(self.woken(w)),
                Err(RecvTimeoutError::Timeout) => {
                    if mtime(&self.state_path()) != p.state_mtime
                        || p.head
                            .is_some_and(|h| user_head(&self.project.root) != Some(h))
                    {
                        return None;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Some(Step::End),
            }
        }
    }

    fn state_path(&self) -> PathBuf {
        State::path(&self.project.iterations_dir(&self.name))
    }

    fn parked_now(&self) -> Parked {
        Parked {
            state_mtime: mtime(&self.state_path()),
            head: None,
        }
    }

    /// Logs why the Brief is parked, once per distinct reason.
    fn park_message(&self, last: &mut String, why: &str) {
        if last != why {
            self.log.info(Some(&self.name), why);
            *last = why.to_string();
        }
    }

    /// Read without the lock (state.json is replaced atomically): why this
    /// Brief must not tick, if its run is RED or over. Budget stops are left
    /// to the tick, which knows whether the Brief's budget was raised.
    fn stopped(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.state_path()).ok()?;
        let state: State = serde_json::from_str(&text).ok()?;
        let stop = state.stop?;
        if stop.reason.is_red() {
            Some(format!(
                "skipped: RED since iteration {} ({} — {}); `ooda ack {}` lets it continue",
                stop.iteration,
                stop.reason.as_str(),
                stop.detail,
                self.name
            ))
        } else if stop.reason.is_budget() {
            None
        } else {
            Some(format!(
                "skipped: the run is over ({} — {}); to start a new one, move iterations/{}/ aside and delete branch ooda/{}",
                stop.reason.as_str(),
                stop.detail,
                self.name,
                self.name
            ))
        }
    }
}

/// The daemon's line for a step's result; a stop is already told by the phase machine.
fn outcome_line(o: &StepOutcome) -> Option<String> {
    match o {
        StepOutcome::Baseline => Some("baseline archived in iter-000.md".into()),
        StepOutcome::Iteration { iteration, verdict } => {
            Some(format!("iteration {iteration}: {}", verdict.as_str()))
        }
        StepOutcome::Stopped(..) => None,
        StepOutcome::Finished(s) => Some(format!(
            "nothing to do: the run ended ({} — {})",
            s.reason.as_str(),
            s.detail
        )),
    }
}
