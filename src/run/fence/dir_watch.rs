//! One directory watched by the kernel (inotify) for the length of an agent
//! step: every entry created, written, re-timed, renamed or removed in it,
//! by any process, through any path into the directory.
//!
//! Why not stamps: the archive holds one file per iteration, and stamping
//! ten thousand files before and after each of a tick's agent steps costs
//! more than the rest of the tick. A watch costs one system call to set and
//! one read to collect, whatever the archive's length. It is used where the
//! sandbox already keeps the archive read-only for the agent (a hard link
//! out of the directory, the one write a directory watch does not see,
//! needs a write the sandbox denies), so it checks for what escapes the
//! sandbox: a process the agent asked to write for it.

use std::collections::BTreeSet;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// What the kernel reported since the watch was set.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Entries of the directory that were written, re-timed, created,
    /// renamed or removed.
    pub(crate) names: BTreeSet<OsString>,
    /// More changes than the kernel queues: which entries is unknown.
    pub(crate) overflowed: bool,
    /// The directory itself was removed or moved away.
    pub(crate) gone: bool,
}

/// An inotify instance watching one directory; closed on drop.
pub(crate) struct DirWatch {
    fd: libc::c_int,
    /// The directory's device and inode when the watch was set: a watch
    /// kept for a later step is reused only on that same directory.
    id: (u64, u64),
}

/// A directory's (device, inode).
fn id_of(dir: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir)?;
    Ok((m.dev(), m.ino()))
}

const MASK: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

impl DirWatch {
    /// Starts watching `dir`. Fails where inotify is missing or its watch
    /// limit is reached; the caller then stamps the files instead.
    pub(crate) fn new(dir: &Path) -> std::io::Result<DirWatch> {
        let path = CString::new(dir.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let id = id_of(dir)?;
        // SAFETY: no pointers; close-on-exec so no agent inherits the queue.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let watch = DirWatch { fd, id };
        // SAFETY: `path` is a NUL-terminated string that outlives the call.
        if unsafe { libc::inotify_add_watch(fd, path.as_ptr(), MASK) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(watch)
    }

    /// Everything queued so far (the queue is emptied).
    pub(crate) fn changes(&self) -> std::io::Result<Changes> {
        let mut out = Changes::default();
        // Room for many events at once; names are at most NAME_MAX bytes.
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is writable for its whole length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock => return Ok(out),
                    std::io::ErrorKind::Interrupted => continue,
                    _ => return Err(e),
                }
            }
            if n == 0 {
                return Ok(out);
            }
            parse(&buf[..n as usize], &mut out);
        }
    }
}

/// Watches kept between the agent steps of this process, by directory.
/// Adding a watch makes the kernel mark every cached entry of the
/// directory (`fsnotify_set_children_dentry_flags`: time linear in the
/// archive's length, a few milliseconds at 10,000 iteration files), so the
/// steps of a tick share one, emptied when each step starts.
static KEPT: std::sync::Mutex<Vec<(std::path::PathBuf, DirWatch)>> =
    std::sync::Mutex::new(Vec::new());

impl DirWatch {
    /// A watch on `dir` with nothing queued: one kept from an earlier step
    /// (what happened since, ooda's own writes between the steps, is
    /// dropped), else a new one.
    pub(crate) fn fresh(dir: &Path) -> std::io::Result<DirWatch> {
        let kept = KEPT.lock().ok().and_then(|mut k| {
            let i = k.iter().position(|(d, _)| d == dir)?;
            Some(k.swap_remove(i).1)
        });
        // The same directory still (not removed, recreated or moved away
        // since: a watch on the old one would see nothing).
        if let Some(w) = kept
            && id_of(dir).is_ok_and(|id| id == w.id)
            && w.changes().is_ok_and(|c| !c.gone)
        {
            return Ok(w);
        }
        DirWatch::new(dir)
    }

    /// Keeps this watch of `dir` for the next step of this process.
    pub(crate) fn keep(self, dir: &Path) {
        if let Ok(mut k) = KEPT.lock()
            && k.len() < 8
        {
            k.push((dir.to_path_buf(), self));
        }
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// Decodes a read's worth of `struct inotify_event`s (wd, mask, cookie,
/// len, then `len` bytes of NUL-padded name).
fn parse(mut bytes: &[u8], out: &mut Changes) {
    const HEAD: usize = 16;
    while bytes.len() >= HEAD {
        let word = |at: usize| {
            u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let mask = word(4);
        let len = word(12) as usize;
        let end = (HEAD + len).min(bytes.len());
        let name = &bytes[HEAD..end];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        if mask & libc::IN_Q_OVERFLOW != 0 {
            out.overflowed = true;
        }
        if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED) != 0 {
            out.gone = true;
        }
        if !name.is_empty() {
            out.names.insert(OsString::from_vec(name.to_vec()));
        }
        bytes = &bytes[end..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_watch_starts_the_next_step_empty() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let watch = DirWatch::fresh(d).unwrap();
        std::fs::write(d.join("during"), "x").unwrap();
        assert!(
            watch
                .changes()
                .unwrap()
                .names
                .contains(&OsString::from("during"))
        );
        watch.keep(d);
        std::fs::write(d.join("between"), "x").unwrap();
        let again = DirWatch::fresh(d).unwrap();
        assert_eq!(again.changes().unwrap(), Changes::default());
        std::fs::write(d.join("next"), "x").unwrap();
        let c = again.changes().unwrap();
        assert_eq!(c.names, BTreeSet::from([OsString::from("next")]));
        // A directory removed and made again is watched afresh.
        again.keep(d);
        std::fs::remove_dir_all(d).unwrap();
        std::fs::create_dir(d).unwrap();
        let renewed = DirWatch::fresh(d).unwrap();
        std::fs::write(d.join("after"), "x").unwrap();
        assert!(
            renewed
                .changes()
                .unwrap()
                .names
                .contains(&OsString::from("after"))
        );
    }

    #[test]
    fn sees_writes_renames_removals_and_times_but_not_reads() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in ["a", "b", "c", "d", "quiet"] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        std::fs::create_dir(d.join("sub")).unwrap();
        let watch = DirWatch::new(d).unwrap();
        assert_eq!(watch.changes().unwrap(), Changes::default());
        std::fs::read(d.join("quiet")).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(d.join("a"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"y"))
            .unwrap();
        std::fs::write(d.join("tmp"), "forged").unwrap();
        std::fs::rename(d.join("tmp"), d.join("b")).unwrap();
        std::fs::remove_file(d.join("c")).unwrap();
        std::fs::set_permissions(
            d.join("d"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        // Below the directory: not its entries (artifacts live there).
        std::fs::write(d.join("sub/deep"), "x").unwrap();
        let got = watch.changes().unwrap();
        let names: Vec<&str> = got.names.iter().map(|n| n.to_str().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "tmp"]);
        assert!(!got.overflowed && !got.gone);
        // Collected once: the queue is empty again.
        assert_eq!(watch.changes().unwrap(), Changes::default());
    }

    #[test]
    fn a_directory_moved_away_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("arch")).unwrap();
        let watch = DirWatch::new(&dir.path().join("arch")).unwrap();
        std::fs::rename(dir.path().join("arch"), dir.path().join("elsewhere")).unwrap();
        std::fs::create_dir(dir.path().join("arch")).unwrap();
        assert!(watch.changes().unwrap().gone);
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_silent_watch() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DirWatch::new(&dir.path().join("nope")).is_err());
    }
}
