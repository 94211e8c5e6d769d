//! SIGINT/SIGTERM as flags, never an abrupt exit.
//!
//! A signal must not tear a phase in half: handlers only set flags, the
//! command runner stops the running command, and the phase machine stops at
//! its next checkpoint and exits 130.
//!
//! There are two flags because there are two kinds of process. A one-shot
//! `ooda tick` (cron, or a system shutting down) stops at once: the first
//! signal sets both, so a measurement in flight is cancelled and redone by
//! the next tick. A long-running loop (`run --every/--cron`, `daemon`) is
//! stopped by a person or a service manager who can wait: the first signal
//! only asks every loop to stop at its next checkpoint (a measurement in
//! flight is finished and kept), a second one cancels running commands too.
//! Either way the state on disk is the last checkpoint. Long-running loops
//! also take SIGHUP, to re-read `ooda.yaml` without a restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::error::{Error, Result};

/// Cloning shares the flags: every loop of a daemon sees the same signal.
#[derive(Clone)]
pub(crate) struct Interrupt {
    /// Stop at the next checkpoint.
    stop: Arc<AtomicBool>,
    /// Cancel running commands (polled by `exec`).
    cancel: Arc<AtomicBool>,
}

/// What a long-running loop is told by [`Interrupt::watch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// First SIGINT/SIGTERM: stop at the next checkpoint.
    Stop,
    /// A further SIGINT/SIGTERM: running commands are being cancelled.
    Cancel,
    /// SIGHUP: re-read `ooda.yaml`.
    Reload,
}

impl Interrupt {
    /// One-shot commands: the first SIGINT/SIGTERM sets both flags.
    pub(crate) fn install() -> Interrupt {
        let i = Interrupt::none();
        for sig in [SIGINT, SIGTERM] {
            // Registration fails only for forbidden signals, which these are not.
            let _ = signal_hook::flag::register(sig, Arc::clone(&i.stop));
            let _ = signal_hook::flag::register(sig, Arc::clone(&i.cancel));
        }
        i
    }

    /// Long-running loops: a thread turns SIGINT/SIGTERM/SIGHUP into the two
    /// levels described above and reports each to `on` (which may log or wake
    /// sleeping loops; it runs on that thread, not in a signal handler).
    pub(crate) fn watch(on: impl FnMut(Signal) + Send + 'static) -> Result<Interrupt> {
        let i = Interrupt::none();
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map_err(|e| Error::io("installing signal handlers", e))?;
        let flags = i.clone();
        let mut on = on;
        std::thread::Builder::new()
            .name("ooda-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let what = match sig {
                        SIGHUP => Signal::Reload,
                        _ if !flags.stop.swap(true, Ordering::SeqCst) => Signal::Stop,
                        _ => {
                            flags.cancel.store(true, Ordering::SeqCst);
                            Signal::Cancel
                        }
                    };
                    on(what);
                }
            })
            .map_err(|e| Error::io("starting the signal thread", e))?;
        Ok(i)
    }

    /// A flag nobody sets, for library callers and tests.
    pub(crate) fn none() -> Interrupt {
        Interrupt {
            stop: Arc::new(AtomicBool::new(false)),
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag running commands poll: set means "stop the command now".
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.cancel
    }

    /// The flag of the first level: "stop at the next checkpoint".
    pub(crate) fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }

    /// Stop at the next checkpoint (set by either level).
    pub(crate) fn is_set(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst)
    }

    #[cfg(test)]
    /// What the first signal does to a long-running loop.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Sleeps `d`, waking early (as an interruption) when `cancel` is set.
pub(crate) fn sleep_unless(
    d: std::time::Duration,
    cancel: &AtomicBool,
) -> crate::error::Result<()> {
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until {
        if cancel.load(Ordering::Relaxed) {
            return Err(crate::error::Error::Interrupted);
        }
        std::thread::sleep(
            (until - std::time::Instant::now()).min(std::time::Duration::from_millis(50)),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_is_not_cancelling_and_clones_share_flags() {
        let i = Interrupt::none();
        let j = i.clone();
        assert!(!i.is_set());
        j.request_stop();
        assert!(i.is_set());
        assert!(!i.flag().load(Ordering::SeqCst), "commands keep running");
        j.cancel.store(true, Ordering::SeqCst);
        assert!(i.flag().load(Ordering::SeqCst));
    }
}
