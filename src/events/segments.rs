//! Sealed parts of the event log: `events/000001.jsonl.gz`, … beside the
//! live `events.jsonl`.
//!
//! A night logs a few megabytes; a month of nights on one Brief logs
//! hundreds, and every tick reads the log it appends to (the anomaly rules,
//! the summary's metrics). So when the live file passes
//! `defaults.events_segment` the tick that opens the archive seals it:
//! renamed into `events/` (one rename, so a kill loses nothing), then
//! gzip-compressed (JSON lines shrink about tenfold) and the plain copy
//! removed. Nothing is dropped: `ooda trace`, `export` and `compare` read
//! the sealed segments in order and then the live file, so the trace is the
//! one it was. The per-tick readers read the live file only; that is what
//! keeps a tick's cost bounded, and what they need is the recent part.
//!
//! Two kinds of record in a sealed part are also copied to
//! `events/carried.jsonl`, before the seal. The anomalies: the anomaly rules
//! look at the whole history (a token spike of any iteration, the budget
//! used), and what they found once must stay found, or an acknowledged RED
//! would come back after every seal. And each run's start, so the tree the
//! per-tick readers build from the live log has its real root. Those
//! readers read that file beside the live log; a copy a kill left twice is
//! read once (records have ids).
//!
//! A seal happens only between iterations, so the iteration a tick resumes
//! is whole in the live log. Crash safety is by order: a plain
//! `NNNNNN.jsonl` left in `events/` is a seal a kill interrupted; the next
//! seal finishes it (the `.gz` is renamed into place whole, so one beside a
//! plain file is complete and the plain file goes).

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::error::{Error, Result};

/// The folder of sealed segments, inside the Brief's archive.
pub(crate) const DIR: &str = "events";

/// One seal: what was moved where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub path: PathBuf,
    /// Bytes of JSON lines sealed.
    pub bytes: u64,
    /// Bytes on disk once compressed.
    pub compressed: u64,
}

/// Seals `dir/events.jsonl` when it holds more than `limit` bytes (and
/// finishes a seal a kill interrupted). Call it under the Brief's lock,
/// before the live file is opened for this tick.
pub(crate) fn rotate(dir: &Path, limit: u64) -> Result<Option<Sealed>> {
    let folder = dir.join(DIR);
    if folder.is_dir() {
        for (_, path) in numbered(&folder)? {
            if path.extension().is_some_and(|e| e == "jsonl") {
                compress(&path)?;
            }
        }
    }
    let live = dir.join(super::FILE);
    let size = match fs::metadata(&live) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("reading {}", live.display()), e)),
    };
    if size <= limit {
        return Ok(None);
    }
    crate::atomic::create_dir_all(&folder)?;
    keep_anomalies(&live, &folder)?;
    let next = numbered(&folder)?.last().map_or(1, |(n, _)| n + 1);
    let plain = folder.join(format!("{next:06}.jsonl"));
    fs::rename(&live, &plain).map_err(|e| {
        Error::io(
            format!("moving {} to {}", live.display(), plain.display()),
            e,
        )
    })?;
    let (bytes, path) = compress(&plain)?;
    let compressed = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Some(Sealed {
        path,
        bytes,
        compressed,
    }))
}

/// The sealed segments, oldest first: the `.gz` of each number, or its
/// plain file where a kill interrupted the compression.
pub(crate) fn sealed(dir: &Path) -> Result<Vec<PathBuf>> {
    let folder = dir.join(DIR);
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let mut out: Vec<(u64, PathBuf)> = Vec::new();
    for (n, path) in numbered(&folder)? {
        match out.last_mut() {
            // The `.gz` sorts after the plain file of its number, and is whole.
            Some((m, p)) if *m == n => *p = path,
            _ => out.push((n, path)),
        }
    }
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

/// Where the records carried over from the sealed parts are kept.
pub(crate) const CARRIED: &str = "carried.jsonl";

const CARRIED_TYPES: [&str; 3] = [
    "\"type\":\"anomaly_found\"",
    "\"type\":\"anomaly\"",
    "\"type\":\"run_started\"",
];

/// Appends the run starts and anomalies of the live log to
/// `events/carried.jsonl` (synced), before the log is moved.
fn keep_anomalies(live: &Path, folder: &Path) -> Result<()> {
    let bytes = crate::atomic::read_file(live)
        .map_err(|e| Error::io(format!("reading {}", live.display()), e))?;
    let mut found = String::new();
    for line in String::from_utf8_lossy(&bytes).lines() {
        if CARRIED_TYPES.iter().any(|t| line.contains(t))
            && serde_json::from_str::<super::Record>(line).is_ok()
        {
            found.push_str(line);
            found.push('\n');
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let path = folder.join(CARRIED);
    let write = || -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        std::io::Write::write_all(&mut f, found.as_bytes())?;
        f.sync_all()
    };
    write().map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// The records carried over from the sealed parts, each once.
fn carried(dir: &Path) -> Vec<super::Record> {
    let Ok(bytes) = crate::atomic::read_file(dir.join(DIR).join(CARRIED)) else {
        return Vec::new();
    };
    let mut seen = std::collections::HashSet::new();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<super::Record>(l).ok())
        .filter(|r| seen.insert(r.id.clone()))
        .collect()
}

/// The anomalies logged in the sealed parts.
pub(crate) fn sealed_anomalies(dir: &Path) -> Vec<super::Record> {
    carried(dir)
        .into_iter()
        .filter(|r| !matches!(r.event, super::Event::RunStarted { .. }))
        .collect()
}

/// The starts of the runs whose beginning is in a sealed part.
pub(crate) fn sealed_run_starts(dir: &Path) -> Vec<super::Record> {
    carried(dir)
        .into_iter()
        .filter(|r| matches!(r.event, super::Event::RunStarted { .. }))
        .collect()
}

/// The text of one sealed segment; bytes that are not UTF-8 (a line torn
/// inside a character) cost their line only. `None`: the file is gone (a
/// seal finished compressing it meanwhile; list the segments again).
pub(crate) fn read(path: &Path) -> Result<Option<String>> {
    let file = match crate::atomic::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    let mut bytes = Vec::new();
    // Bounded, and regular files only: a FIFO or a device planted among
    // the parts must not hang or fill the reader.
    let cap = crate::atomic::ARCHIVE_MAX;
    let read = if !file.metadata().is_ok_and(|m| m.is_file()) {
        Err(std::io::Error::other("not a regular file"))
    } else if path.extension().is_some_and(|e| e == "gz") {
        GzDecoder::new(BufReader::new(file))
            .take(cap + 1)
            .read_to_end(&mut bytes)
    } else {
        BufReader::new(file).take(cap + 1).read_to_end(&mut bytes)
    };
    let read = read.and_then(|n| {
        if n as u64 > cap {
            Err(std::io::Error::other(format!(
                "longer than {} MiB",
                cap >> 20
            )))
        } else {
            Ok(n)
        }
    });
    read.map_err(|e| {
        Error::Corrupt {
            path: path.to_path_buf(),
            message: format!(
                "a sealed part of the event log could not be read ({e}); restore it from a backup, or move it out of events/ to read the trace without it (its events are then missing)"
            ),
        }
    })?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// `NNNNNN.jsonl` and `NNNNNN.jsonl.gz` in `folder`, by number, the plain
/// file of a number before its `.gz`.
fn numbered(folder: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let entries =
        fs::read_dir(folder).map_err(|e| Error::io(format!("listing {}", folder.display()), e))?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let (stem, gz) = match name.strip_suffix(".jsonl.gz") {
            Some(s) => (s, true),
            None => match name.strip_suffix(".jsonl") {
                Some(s) => (s, false),
                None => continue,
            },
        };
        if let Ok(n) = stem.parse::<u64>() {
            out.push((n, gz, e.path()));
        }
    }
    out.sort();
    Ok(out.into_iter().map(|(n, _, p)| (n, p)).collect())
}

/// Compresses a plain segment into its `.gz` (unless a whole one is there
/// already) and removes the plain file; returns its size and the `.gz`.
fn compress(plain: &Path) -> Result<(u64, PathBuf)> {
    let gz = plain.with_extension("jsonl.gz");
    let bytes = fs::metadata(plain).map(|m| m.len()).unwrap_or(0);
    if !gz.exists() {
        let tmp = plain.with_extension("jsonl.gz.tmp");
        let write = || -> std::io::Result<()> {
            let mut input = BufReader::new(crate::atomic::open_regular(plain)?);
            let out = File::create(&tmp)?;
            let mut enc = GzEncoder::new(BufWriter::new(out), Compression::default());
            std::io::copy(&mut input, &mut enc)?;
            let file = enc.finish()?.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            fs::rename(&tmp, &gz)
        };
        write().map_err(|e| Error::io(format!("compressing {}", plain.display()), e))?;
        // A line another process appended while this one compressed (a
        // scheduler logging a skipped fire time holds no lock) would be lost
        // with the plain file: compress again to take it in.
        if fs::metadata(plain).map(|m| m.len()).unwrap_or(0) != bytes {
            fs::remove_file(&gz).map_err(|e| Error::io(format!("removing {}", gz.display()), e))?;
            return compress(plain);
        }
    }
    fs::remove_file(plain).map_err(|e| Error::io(format!("removing {}", plain.display()), e))?;
    Ok((bytes, gz))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn lines(n: usize) -> String {
        (0..n).map(|i| format!("{{\"line\":{i}}}\n")).collect()
    }

    #[test]
    fn a_log_over_the_limit_is_sealed_whole_and_a_small_one_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("events.jsonl");
        fs::write(&live, lines(10)).unwrap();
        assert_eq!(rotate(dir.path(), 1 << 20).unwrap(), None);
        assert!(live.exists());
        let sealed1 = rotate(dir.path(), 10).unwrap().unwrap();
        assert!(!live.exists());
        assert_eq!(sealed1.path, dir.path().join("events/000001.jsonl.gz"));
        assert_eq!(sealed1.bytes, lines(10).len() as u64);
        assert_eq!(read(&sealed1.path).unwrap().unwrap(), lines(10));
        fs::write(&live, lines(3)).unwrap();
        let sealed2 = rotate(dir.path(), 10).unwrap().unwrap();
        assert_eq!(sealed2.path, dir.path().join("events/000002.jsonl.gz"));
        assert_eq!(
            sealed(dir.path()).unwrap(),
            vec![sealed1.path.clone(), sealed2.path.clone()]
        );
        assert_eq!(read(&sealed2.path).unwrap().unwrap(), lines(3));
    }

    #[test]
    fn a_seal_a_kill_interrupted_is_finished_and_never_doubled() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(DIR);
        fs::create_dir_all(&folder).unwrap();
        // Killed after the rename, before compressing.
        fs::write(folder.join("000001.jsonl"), lines(4)).unwrap();
        assert_eq!(
            sealed(dir.path()).unwrap(),
            vec![folder.join("000001.jsonl")]
        );
        assert_eq!(
            read(&folder.join("000001.jsonl")).unwrap().unwrap(),
            lines(4)
        );
        // Killed after the .gz was in place, before the plain file went.
        fs::write(folder.join("000002.jsonl"), lines(2)).unwrap();
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(lines(2).as_bytes()).unwrap();
        fs::write(folder.join("000002.jsonl.gz"), enc.finish().unwrap()).unwrap();
        assert_eq!(rotate(dir.path(), 1 << 20).unwrap(), None);
        assert_eq!(
            sealed(dir.path()).unwrap(),
            vec![
                folder.join("000001.jsonl.gz"),
                folder.join("000002.jsonl.gz")
            ]
        );
        assert!(!folder.join("000001.jsonl").exists());
        assert!(!folder.join("000002.jsonl").exists());
        assert_eq!(
            read(&folder.join("000001.jsonl.gz")).unwrap().unwrap(),
            lines(4)
        );
        assert_eq!(
            read(&folder.join("000002.jsonl.gz")).unwrap().unwrap(),
            lines(2)
        );
    }

    #[test]
    fn a_damaged_segment_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(DIR);
        fs::create_dir_all(&folder).unwrap();
        fs::write(folder.join("000001.jsonl.gz"), b"not gzip at all").unwrap();
        let e = read(&folder.join("000001.jsonl.gz"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("000001.jsonl.gz"), "{e}");
        assert!(e.contains("move it out of events/"), "{e}");
    }

    #[test]
    fn run_starts_and_anomalies_are_carried_past_a_seal_once() {
        let dir = tempfile::tempdir().unwrap();
        let line = |id: &str, event: &str| {
            format!(
                "{{\"ts\":\"2026-01-01T00:00:00Z\",\"run_id\":\"r\",\"iteration\":null,\"id\":\"{id}\",\"parent_id\":null,{event}}}\n"
            )
        };
        let start = line(
            "run-r",
            "\"type\":\"run_started\",\"brief\":\"b\",\"start_commit\":\"c\",\"seed\":1",
        );
        let anomaly = line(
            "p-1",
            "\"type\":\"anomaly\",\"kind\":\"budget_cut\",\"message\":\"m\"",
        );
        let other = line("p-2", "\"type\":\"checkpoint\",\"phase\":\"plan\"");
        let live = dir.path().join("events.jsonl");
        fs::write(&live, format!("{start}{anomaly}{other}")).unwrap();
        rotate(dir.path(), 10).unwrap().unwrap();
        // Killed after carrying, before moving: carried again, read once.
        fs::write(&live, format!("{anomaly}{other}")).unwrap();
        rotate(dir.path(), 10).unwrap().unwrap();
        let starts = sealed_run_starts(dir.path());
        assert_eq!(starts.len(), 1);
        assert_eq!(starts[0].id, "run-r");
        let anomalies = sealed_anomalies(dir.path());
        assert_eq!(anomalies.len(), 1);
        assert_eq!(anomalies[0].id, "p-1");
        // The live log after the seal reads with its run's real start.
        fs::write(&live, &other).unwrap();
        let read = crate::events::read_live(dir.path()).unwrap();
        assert_eq!(read.len(), 2);
        assert!(matches!(
            read[0].event,
            crate::events::Event::RunStarted { .. }
        ));
    }
}
