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
//! The lock is `flock` on `/tmp/ooda-measure.lock` (or
//! `$OODA_MEASURE_LOCK`), released by the kernel when the holder dies. A
//! fixed path, not `$TMPDIR`: a per-user temporary directory would give
//! each user a lock of their own. The file lives in a shared,
//! world-writable directory, so it is opened without following symlinks,
//! must be a plain file with one link (not a FIFO that would hang the
//! read, not a hard link to someone's file), is made readable and writable
//! by all when this process created it (the umask would otherwise lock
//! other users out), and is only written by its owner. `flock` works on a
//! read-only descriptor, so users share the lock.

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
pub(crate) const ENV: &str = "OODA_MEASURE_LOCK";

/// How often a waiting runner looks again (and checks for a signal).
const POLL: Duration = Duration::from_millis(100);

/// The lock's path: `$OODA_MEASURE_LOCK`, else `/tmp/ooda-measure.lock`.
pub(crate) fn path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("/tmp/ooda-measure.lock"),
    }
}

/// How often a long wait is logged again.
const REMIND: Duration = Duration::from_secs(600);

/// The held lock; dropping it lets the next Brief measure.
#[derive(Debug)]
pub(crate) struct MeasureLock {
    _file: File,
    /// How long acquiring it waited.
    pub waited: Duration,
}

impl MeasureLock {
    /// Waits for the lock at `path`, calling `waiting` with the
    /// holder's description and the time waited so far if it is taken (then
    /// every ten minutes). `who` is written into the file
    /// for the next waiter's message. A signal (`cancel`, or `stop`: a
    /// long-running loop asked to stop at its next checkpoint, which a
    /// measurement not yet begun is) ends the wait with
    /// [`Error::Interrupted`].
    pub(crate) fn acquire(
        path: &Path,
        who: &str,
        cancel: &AtomicBool,
        stop: Option<&AtomicBool>,
        mut waiting: impl FnMut(&str, Duration) -> Result<()>,
    ) -> Result<MeasureLock> {
        let (mut file, writable) = open(path)?;
        let started = Instant::now();
        let mut told: Option<Instant> = None;
        let mut tries = 0u32;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    tries += 1;
                    // From the second try: a holder that has just taken the
                    // lock has had time to write its name, and a wait of
                    // one poll is not worth a line.
                    if tries > 1 && told.is_none_or(|at| at.elapsed() >= REMIND) {
                        told = Some(Instant::now());
                        let mut holder = String::new();
                        let _ = file.seek(SeekFrom::Start(0));
                        let _ = file.read_to_string(&mut holder);
                        let holder = holder.trim();
                        waiting(
                            if holder.is_empty() {
                                "another ooda process"
                            } else {
                                holder
                            },
                            started.elapsed(),
                        )?;
                    }
                    if cancel.load(Ordering::SeqCst)
                        || stop.is_some_and(|s| s.load(Ordering::SeqCst))
                    {
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
    let (file, writable) = open_file(path)?;
    let refuse = |why: &str| {
        Err(Error::Input(format!(
            "the measurement lock {} {why}: remove it, or set {ENV} to another path (or defaults.measure_exclusive: false)",
            path.display()
        )))
    };
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !meta.file_type().is_file() {
        return refuse("is not a plain file");
    }
    if meta.nlink() != 1 {
        return refuse("has more than one link");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let mine = meta.uid() == unsafe { libc::geteuid() };
    if mine && meta.permissions().mode() & 0o777 != 0o666 {
        // Best effort: another user reading it is what matters, and a
        // failure here only keeps them out as before.
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o666));
    }
    Ok((file, writable && mine))
}

fn open_file(path: &Path) -> Result<(File, bool)> {
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let rw = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags(flags)
        .open(path);
    // Another user's file: read-only is enough to flock it.
    let opened = match rw {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(path)
            .map(|f| (f, false)),
        other => other.map(|f| (f, true)),
    };
    opened.map_err(|e| {
        Error::io(
            format!(
                "opening the measurement lock {} (set {ENV} to another path, or defaults.measure_exclusive: false)",
                path.display()
            ),
            e,
        )
    })
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
        let first = MeasureLock::acquire(&path, "brief p", &cancel, None, |_, _| {
            panic!("the lock was free")
        })
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = path.clone();
        let c2 = cancel.clone();
        let second = std::thread::spawn(move || {
            MeasureLock::acquire(&p2, "brief q", &c2, None, |holder, _| {
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
        let _held = MeasureLock::acquire(&path, "p", &free, None, |_, _| Ok(())).unwrap();
        let cancel = AtomicBool::new(true);
        let err = MeasureLock::acquire(&path, "q", &cancel, None, |_, _| Ok(())).unwrap_err();
        assert!(matches!(err, Error::Interrupted), "{err}");
        // So does a loop's "stop at the next checkpoint": no measurement
        // has begun.
        let stop = AtomicBool::new(true);
        let err = MeasureLock::acquire(&path, "q", &free, Some(&stop), |_, _| Ok(())).unwrap_err();
        assert!(matches!(err, Error::Interrupted), "{err}");
    }

    #[test]
    fn a_fifo_or_a_hard_link_is_refused_and_the_file_is_shared() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.lock");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let free = AtomicBool::new(false);
        let err = MeasureLock::acquire(&fifo, "p", &free, None, |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("not a plain file"), "{err}");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("link.lock");
        std::fs::hard_link(&victim, &link).unwrap();
        let err = MeasureLock::acquire(&link, "p", &free, None, |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("more than one link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // Made by this process: readable and writable by every user.
        let ok = dir.path().join("m.lock");
        let _held = MeasureLock::acquire(&ok, "p", &free, None, |_, _| Ok(())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&ok).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("m.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let free = AtomicBool::new(false);
        let err = MeasureLock::acquire(&link, "p", &free, None, |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("measurement lock"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }
}
