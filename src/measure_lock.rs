//! One Brief measures at a time on a host.
//!
//! Two benchmarks running at once on the same cores measure each other: the
//! noise per pair grows, θ₁ grows with it, and gains the user cares about
//! disappear below it. `ooda daemon` runs Briefs concurrently, and two cron
//! entries or two projects may too, so every timed run (a decision's pairs,
//! the baseline's calibration, a confirmation or anchor test,
//! `check --measure`) holds an OS file lock shared by the whole host. The
//! lock is held for a whole decision, not per pair: two decisions
//! interleaving pair by pair would still load the machine unevenly between
//! a pair's two runs. Setup, guards and agent steps run outside it, so other
//! Briefs keep thinking while one measures.
//!
//! The lock is `flock` on a file in the temporary directory (or
//! `$OODA_MEASURE_LOCK`), released by the kernel when the holder dies. The
//! file is opened without following symlinks (it lives in a shared,
//! world-writable directory) and read-only when another user created it:
//! `flock` works on a read-only descriptor, so users share the lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};

use crate::error::{Error, Result};

/// Names the lock file, so parallel tests (and users who want separate
/// groups of cores) need not share one host-wide lock.
pub const ENV: &str = "OODA_MEASURE_LOCK";

/// How often a waiting runner looks again (and checks for a signal).
const POLL: Duration = Duration::from_millis(100);

/// The lock's path: `$OODA_MEASURE_LOCK`, else `ooda-measure.lock` in the
/// temporary directory.
pub fn path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => std::env::temp_dir().join("ooda-measure.lock"),
    }
}

/// The held lock; dropping it lets the next Brief measure.
#[derive(Debug)]
pub struct MeasureLock {
    _file: File,
    /// How long acquiring it waited.
    pub waited: Duration,
}

impl MeasureLock {
    /// Waits for the lock at `path`, calling `waiting` once with the
    /// holder's description if it is taken. `who` is written into the file
    /// for the next waiter's message. A signal (`cancel`) ends the wait
    /// with [`Error::Interrupted`].
    pub fn acquire(
        path: &Path,
        who: &str,
        cancel: &AtomicBool,
        mut waiting: impl FnMut(&str) -> Result<()>,
    ) -> Result<MeasureLock> {
        let (mut file, writable) = open(path)?;
        let started = Instant::now();
        let mut told = false;
        let mut tries = 0u32;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    tries += 1;
                    // From the second try: a holder that has just taken the
                    // lock has had time to write its name, and a wait of
                    // one poll is not worth a line.
                    if !told && tries > 1 {
                        told = true;
                        let mut holder = String::new();
                        let _ = file.seek(SeekFrom::Start(0));
                        let _ = file.read_to_string(&mut holder);
                        let holder = holder.trim();
                        waiting(if holder.is_empty() {
                            "another ooda process"
                        } else {
                            holder
                        })?;
                    }
                    if cancel.load(Ordering::SeqCst) {
                        return Err(Error::Interrupted);
                    }
                    std::thread::sleep(POLL);
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::io(
                        format!("locking the measurement lock {}", path.display()),
                        e,
                    ));
                }
            }
        }
        if writable {
            let text = format!(
                "{who} (pid {}) since {}\n",
                std::process::id(),
                Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
            );
            // Only the waiters' message depends on it: a failure to write
            // must not stop the measurement.
            let _ = (|| -> std::io::Result<()> {
                file.set_len(0)?;
                file.seek(SeekFrom::Start(0))?;
                file.write_all(text.as_bytes())?;
                file.flush()
            })();
        }
        Ok(MeasureLock {
            _file: file,
            waited: started.elapsed(),
        })
    }
}

fn open(path: &Path) -> Result<(File, bool)> {
    let rw = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    match rw {
        Ok(f) => Ok((f, true)),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map(|f| (f, false))
            .map_err(|e| {
                Error::io(
                    format!(
                        "opening the measurement lock {} (set {ENV} to another path, or defaults.measure_exclusive: false)",
                        path.display()
                    ),
                    e,
                )
            }),
        Err(e) => Err(Error::io(
            format!(
                "opening the measurement lock {} (set {ENV} to another path, or defaults.measure_exclusive: false)",
                path.display()
            ),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_second_holder_waits_until_the_first_lets_go_and_hears_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.lock");
        let cancel = Arc::new(AtomicBool::new(false));
        let first =
            MeasureLock::acquire(&path, "brief p", &cancel, |_| panic!("the lock was free"))
                .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = path.clone();
        let c2 = cancel.clone();
        let second = std::thread::spawn(move || {
            MeasureLock::acquire(&p2, "brief q", &c2, |holder| {
                tx.send(holder.to_string()).unwrap();
                Ok(())
            })
            .map(|l| l.waited)
        });
        let holder = rx.recv().unwrap();
        assert!(holder.starts_with("brief p (pid "), "{holder}");
        drop(first);
        second.join().unwrap().unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("brief q")
        );
    }

    #[test]
    fn a_signal_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.lock");
        let free = AtomicBool::new(false);
        let _held = MeasureLock::acquire(&path, "p", &free, |_| Ok(())).unwrap();
        let cancel = AtomicBool::new(true);
        let err = MeasureLock::acquire(&path, "q", &cancel, |_| Ok(())).unwrap_err();
        assert!(matches!(err, Error::Interrupted), "{err}");
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("m.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let free = AtomicBool::new(false);
        let err = MeasureLock::acquire(&link, "p", &free, |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("measurement lock"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }
}
