//! `notify:` in `ooda.yaml`: a command run on every stop and every RED.
//!
//! ooda knows no mail server, chat webhook or push service; a user hooks
//! any of them with one shell command (`curl … ntfy.sh/topic`, `mail -s`),
//! which gets the facts in its environment. It must never hold the loop:
//! it is given a few seconds to finish so that a failure can be logged,
//! then left to run on its own.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::events::{Event, Span};
use crate::model::{AnomalyKind, Stop};

/// How long the stop waits for the command before leaving it running.
const WAIT: Duration = Duration::from_secs(3);

/// Runs `command` for `stop` of `brief`; a failure is logged under `span`
/// and on stderr, never returned.
pub(crate) fn send(command: &str, brief: &str, stop: &Stop, summary: &Path, span: &Span) {
    let status = if stop.reason.is_red() {
        "RED"
    } else {
        "STOPPED"
    };
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("OODA_BRIEF", brief)
        .env("OODA_STATUS", status)
        .env("OODA_STOP_REASON", stop.reason.as_str())
        .env(
            "OODA_STOP_DETAIL",
            crate::text::redact::redact(&stop.detail),
        )
        .env("OODA_ITERATION", stop.iteration.to_string())
        .env("OODA_SUMMARY", summary)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let failed = |why: String| {
        eprintln!("ooda: the notify command failed ({why}); the stop stands");
        let _ = span.emit(Event::Anomaly {
            kind: AnomalyKind::NotifyFailed,
            message: format!("the notify command failed: {why}"),
        });
    };
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(format!("it could not start: {e}")),
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return,
            Ok(Some(s)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.by_ref().take(2000).read_to_string(&mut err);
                }
                let err = crate::text::redact::redact(err.trim());
                return failed(format!(
                    "{s}{}",
                    if err.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", crate::text::clip::clip(&err, 300))
                    }
                ));
            }
            Ok(None) if started.elapsed() < WAIT => std::thread::sleep(Duration::from_millis(20)),
            // Still running: it goes on by itself (a slow webhook is not
            // the loop's business); a thread reaps it.
            Ok(None) => {
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                return;
            }
            Err(e) => return failed(format!("waiting for it: {e}")),
        }
    }
}
