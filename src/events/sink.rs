//! Where events go: the file, and anything else that wants to watch.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Record;
use crate::error::{Error, Result};

/// Something that receives every event of a span tree. Sinks are called in
/// order on the thread that emits, each whatever the others did; the first
/// (the file) decides whether the emit failed. A display may thus show an
/// event the file could not record, but the caller learns of that failure.
pub(crate) trait Sink: Send + Sync {
    fn record(&self, record: &Record) -> Result<()>;

    /// Makes what was recorded durable (a checkpoint calls it).
    fn sync(&self) -> Result<()> {
        Ok(())
    }

    /// Whether a record with this id is among the last ones recorded (a
    /// sink that keeps nothing says no).
    fn recorded(&self, _id: &str) -> bool {
        false
    }
}

/// How far back [`EventFile::recorded`] looks: an event emitted once per
/// step is always among the last few lines when the step runs again.
const RECENT_BYTES: u64 = 64 * 1024;

/// `events.jsonl`, appended one whole line per write.
pub(crate) struct EventFile {
    path: PathBuf,
    file: Mutex<File>,
}

impl EventFile {
    pub(crate) fn open(dir: &Path) -> Result<EventFile> {
        let path = dir.join(super::FILE);
        let mut append = OpenOptions::new();
        append.create(true).append(true);
        let file = crate::atomic::open_regular_with(append, &path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        Ok(EventFile {
            path,
            file: Mutex::new(file),
        })
    }
}

impl Sink for EventFile {
    fn record(&self, record: &Record) -> Result<()> {
        // Secrets never reach disk: every string of every event is redacted
        // (commands, hypotheses, agent messages), whatever its field.
        let mut value = serde_json::to_value(record)
            .map_err(|e| Error::Internal(format!("serializing an event: {e}")))?;
        crate::text::redact::redact_json(&mut value);
        let mut line = value.to_string();
        line.push('\n');
        // One write call per line: O_APPEND keeps concurrent writers' lines
        // whole, other processes (a skipped tick) included.
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(line.as_bytes())
            .map_err(|e| Error::io(format!("appending to {}", self.path.display()), e))
    }

    fn sync(&self) -> Result<()> {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }

    fn recorded(&self, id: &str) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = crate::atomic::open_regular(&self.path) else {
            return false;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if f.seek(SeekFrom::Start(len.saturating_sub(RECENT_BYTES)))
            .is_err()
        {
            return false;
        }
        let mut tail = Vec::new();
        if f.read_to_end(&mut tail).is_err() {
            return false;
        }
        let needle = format!("\"id\":{}", serde_json::Value::from(id));
        String::from_utf8_lossy(&tail).contains(&needle)
    }
}
