//! Crash-safe file replacement.
//!
//! "Disk is the state": a reader must see either the old file or the new one,
//! never half of each, even after a power cut. So every file ooda rewrites is
//! written to a temporary sibling, fsynced, renamed over the target, and the
//! folder is fsynced so the rename itself is durable. A full disk surfaces as
//! an error naming the file while the previous version stays intact.
//!
//! The other half is reading what someone else could have planted (an agent,
//! a damaged archive): [`read_capped`] never blocks on a FIFO, never reads a
//! device, and never holds more than its cap in memory.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    // The process id and a counter: two threads of one process (parallel
    // subagents) may write the same file at once, and must not share a
    // temporary file.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp{}-{n}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        // Without this the rename may be lost on power failure even though
        // the data blocks reached the disk.
        File::open(dir)?.sync_all()
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(
            format!(
                "writing {} (the previous version is unchanged; check free disk space)",
                path.display()
            ),
            e,
        ));
    }
    Ok(())
}

pub(crate) fn create_dir_all(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(|e| Error::io(format!("creating {}", path.display()), e))
}

/// The most of one archive file (an iteration file, the state, the event
/// log's live part, an index) ooda reads: far above what a night writes,
/// far below what would exhaust memory.
pub(crate) const ARCHIVE_MAX: u64 = 256 << 20;

/// A file of ooda's archive, whole: `std::fs::read` that refuses what is
/// not a regular file (a FIFO would hang the reader, `/dev/zero` never
/// ends) and a file above [`ARCHIVE_MAX`] (planted, or damaged), with an
/// error that names why.
pub(crate) fn read_file(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let path = path.as_ref();
    match read_capped(path, ARCHIVE_MAX)? {
        (bytes, false) => Ok(bytes),
        (_, true) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB, more than ooda ever writes there: move it aside (it may have been planted or damaged)",
                ARCHIVE_MAX >> 20
            ),
        )),
    }
}

/// `File::open` for a file of the archive: a FIFO would block the open
/// itself, and a device is no file of ours, so both are refused first.
pub(crate) fn open_regular(path: impl AsRef<Path>) -> std::io::Result<File> {
    let mut read = OpenOptions::new();
    read.read(true);
    open_regular_with(read, path)
}

/// [`open_regular`] with other options (appending to the event log): the
/// open is non-blocking, so a FIFO planted in the file's place fails it
/// rather than hanging until someone reads.
pub(crate) fn open_regular_with(
    mut opts: OpenOptions,
    path: impl AsRef<Path>,
) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = opts.custom_flags(libc::O_NONBLOCK).open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a socket)",
        ));
    }
    Ok(f)
}

/// [`read_file`] as text (`std::fs::read_to_string`).
pub(crate) fn read_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    String::from_utf8(read_file(path)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// At most `cap` bytes of the regular file at `path`, and whether there was
/// more. A FIFO, a device or a socket is refused without blocking (it is
/// opened non-blocking and checked before a byte is read): an agent can
/// plant one wherever ooda reads, and `/dev/zero` never ends. The read is
/// streamed, so a 3 GiB sparse file costs `cap` bytes of memory.
pub(crate) fn read_capped(path: &Path, cap: u64) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::Read;
    let f = open_regular(path)?;
    let meta = f.metadata()?;
    let mut buf = Vec::with_capacity(meta.len().min(cap).min(1 << 20) as usize);
    f.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    let more = buf.len() as u64 > cap;
    buf.truncate(cap as usize);
    Ok((buf, more))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn failure_names_the_file() {
        let p = Path::new("/nonexistent-dir-for-ooda/state.json");
        let err = write_atomic(p, b"x").unwrap_err().to_string();
        assert!(
            err.contains("/nonexistent-dir-for-ooda/state.json"),
            "{err}"
        );
    }

    #[test]
    fn a_fifo_a_device_and_a_long_file_are_read_safely() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nobody writes the FIFO: a blocking open would hang here.
        let e = read_capped(&fifo, 10).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(read_capped(Path::new("/dev/zero"), 10).is_err());
        let long = dir.path().join("long");
        let f = File::create(&long).unwrap();
        f.set_len(3 << 30).unwrap(); // sparse: 3 GiB of nothing
        let (bytes, more) = read_capped(&long, 1000).unwrap();
        assert_eq!((bytes.len(), more), (1000, true));
        fs::write(&long, "short").unwrap();
        assert_eq!(
            read_capped(&long, 1000).unwrap(),
            (b"short".to_vec(), false)
        );
    }
}
