//! Spans sent to a collector while the loop runs (OTLP/HTTP).
//!
//! Set `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) and every
//! iteration is sent when it ends, the run's own span when the run stops.
//! A span is only complete when its work ends, so this exporter does not
//! stream events: at an iteration's end it rebuilds that iteration from
//! `events.jsonl` (redacted, and whole even when the iteration was resumed
//! by a later tick) and posts it.
//!
//! A collector must never slow or stop the loop: the sink only hands a
//! job to a thread of its own; the thread posts with a timeout, warns on
//! stderr once when the collector fails, and drops what it could not send.
//! At exit, what is queued gets a few seconds to go out.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use super::send::{Endpoint, Poster};
use crate::error::Result;
use crate::events::{Event, Record, Sink};

/// What the thread is asked to send.
enum Job {
    Iteration { run_id: String, iteration: u32 },
    Run { run_id: String },
}

/// The sink that feeds the exporter thread.
pub(crate) struct Live {
    tx: Mutex<Option<Sender<Job>>>,
    /// What ended but may still log (the synthesizer writes its notes
    /// after the verdict, and after the stop on the last iteration): sent
    /// when the next iteration starts or the process ends.
    ended: Mutex<Vec<Job>>,
    done: Mutex<Option<(Receiver<()>, JoinHandle<()>)>>,
}

impl Live {
    /// An exporter for the Brief whose log is `dir/events.jsonl`, when the
    /// environment names a collector.
    pub(crate) fn from_env(dir: &Path) -> Option<Live> {
        let endpoint = Endpoint::from_env(|k| std::env::var(k).ok())?;
        if let Some(w) = &endpoint.warning {
            eprintln!("warning: {w}");
        }
        Some(Live::start(dir.to_path_buf(), endpoint))
    }

    pub(crate) fn start(dir: PathBuf, endpoint: Endpoint) -> Live {
        let (tx, rx) = mpsc::channel::<Job>();
        let (done_tx, done_rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            let mut sender = Exporter::new(endpoint, &dir);
            for job in rx {
                sender.send(&dir, job);
            }
            let _ = done_tx.send(());
        });
        Live {
            tx: Mutex::new(Some(tx)),
            ended: Mutex::new(Vec::new()),
            done: Mutex::new(Some((done_rx, handle))),
        }
    }
}

impl Live {
    fn queue(&self, job: Job) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = tx.send(job);
        }
    }

    fn flush_ended(&self) {
        let ended = std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()));
        for job in ended {
            self.queue(job);
        }
    }

    fn ended(&self, job: Job) {
        self.ended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(job);
    }
}

impl Sink for Live {
    fn record(&self, r: &Record) -> Result<()> {
        match (&r.event, r.iteration) {
            (Event::Verdict { .. }, Some(n))
            // The baseline ends with its archive, without a verdict event.
            | (Event::LearnArchived { .. }, Some(n @ 0)) => {
                self.flush_ended();
                self.ended(Job::Iteration {
                    run_id: r.run_id.clone(),
                    iteration: n,
                });
            }
            (Event::IterationStarted { .. }, _) => self.flush_ended(),
            (Event::RunFinished { .. }, _) => self.ended(Job::Run {
                run_id: r.run_id.clone(),
            }),
            _ => {}
        }
        Ok(())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.flush_ended();
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((done, handle)) = self.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
            // What is queued gets a few seconds; a dead collector does not
            // hold the process.
            if done.recv_timeout(Duration::from_secs(5)).is_ok() {
                let _ = handle.join();
            }
        }
    }
}

/// The exporter thread's state.
struct Exporter {
    poster: Poster,
    detail: super::Detail,
    warned: bool,
}

impl Exporter {
    fn new(endpoint: Endpoint, dir: &Path) -> Exporter {
        Exporter {
            poster: Poster::new(endpoint),
            detail: super::Detail::from_env(dir),
            warned: false,
        }
    }

    fn send(&mut self, dir: &Path, job: Job) {
        if let Err(why) = self.try_send(dir, job) {
            if !self.warned {
                let brief = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "BRIEF".into());
                eprintln!(
                    "ooda: could not send spans to {url} ({why}); the loop goes on, and `ooda export {brief} --otlp-endpoint {url}` sends the night from events.jsonl later",
                    url = self.poster.endpoint.url
                );
            }
            self.warned = true;
        }
    }

    fn try_send(&self, dir: &Path, job: Job) -> std::result::Result<(), String> {
        // An iteration that just ended is in the live log (seals happen
        // between iterations); the whole run, at a stop, needs every part.
        let records = match &job {
            Job::Iteration { .. } => crate::events::read_live(dir),
            Job::Run { .. } => crate::events::read_all(dir),
        }
        .map_err(|e| e.to_string())?;
        let runs = crate::report::trace::build(&records);
        let (run_id, iteration) = match &job {
            Job::Iteration { run_id, iteration } => (run_id, Some(*iteration)),
            Job::Run { run_id } => (run_id, None),
        };
        let Some(run) = runs
            .iter()
            .rev()
            .find(|r| r.attribute("run_id") == Some(run_id.as_str()))
        else {
            return Ok(());
        };
        let batch = match iteration {
            Some(n) => match crate::report::trace::iteration(run, n) {
                Some(it) => super::iteration_batch(run, it, &self.detail),
                None => return Ok(()),
            },
            None => super::run_batch(run, &self.detail),
        };
        // The live exporter never waits for a busy collector: the loop
        // goes on, and `ooda export --otlp-endpoint` sends the night later.
        self.poster.post(&batch).map(|_| ()).map_err(|e| e.message)
    }
}
