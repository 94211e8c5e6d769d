//! Where events go: the file, and anything else that wants to watch.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Record;
use crate::error::{Error, Result};

/// Something that receives every event of a span tree. Sinks are called in
/// order on the thread that emits; the first (the file) decides whether the
/// emit failed, so a display can never lose the record.
pub trait Sink: Send + Sync {
    fn record(&self, record: &Record) -> Result<()>;

    /// Makes what was recorded durable (a checkpoint calls it).
    fn sync(&self) -> Result<()> {
        Ok(())
    }
}

/// `events.jsonl`, appended one whole line per write.
pub struct EventFile {
    path: PathBuf,
    file: Mutex<File>,
}

impl EventFile {
    pub fn open(dir: &Path) -> Result<EventFile> {
        let path = dir.join("events.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
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
        redact_strings(&mut value);
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
}

fn redact_strings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            let r = crate::compress::redact(s);
            if r != *s {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_strings),
        serde_json::Value::Object(o) => o.values_mut().for_each(redact_strings),
        _ => {}
    }
}
