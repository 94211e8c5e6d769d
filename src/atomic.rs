//! Crash-safe file replacement.
//!
//! "Disk is the state": a reader must see either the old file or the new one,
//! never half of each, even after a power cut. So every file ooda rewrites is
//! written to a temporary sibling, fsynced, renamed over the target, and the
//! folder is fsynced so the rename itself is durable. A full disk surfaces as
//! an error naming the file while the previous version stays intact.

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
}
