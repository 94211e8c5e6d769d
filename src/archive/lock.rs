//! One runner per Brief at a time.
//!
//! Cron may start a tick while the previous one still measures. The lock is an
//! OS file lock on `iterations/<brief>/.lock` (`File::try_lock`), so it is
//! released by the kernel when the holder dies, even on `kill -9`: a stale
//! lock file never blocks the next night. The file's text (pid and start time)
//! is only for the "busy" message.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use chrono::{SecondsFormat, Utc};

use crate::error::{Error, Result};

#[derive(Debug)]
pub(crate) struct BriefLock {
    _file: File,
}

impl BriefLock {
    pub(crate) fn acquire(dir: &Path) -> Result<BriefLock> {
        let path = super::layout::Layout::of(dir).lock();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Busy(if holder.is_empty() {
                    format!("{} is held by another ooda process", path.display())
                } else {
                    format!("held by {holder} ({})", path.display())
                }));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("locking {}", path.display()), e));
            }
        }
        let text = format!(
            "pid {} since {}\n",
            std::process::id(),
            Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
        );
        let write = (|| -> std::io::Result<()> {
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(text.as_bytes())?;
            file.flush()
        })();
        write.map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        Ok(BriefLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_with_pid() {
        let dir = tempfile::tempdir().unwrap();
        let first = BriefLock::acquire(dir.path()).unwrap();
        let err = BriefLock::acquire(dir.path()).unwrap_err();
        assert_eq!(crate::exit::Exit::from(&err).code(), 5);
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        BriefLock::acquire(dir.path()).unwrap();
    }
}
