//! L1: large tool results stored by reference.
//!
//! A result over 8,000 characters, one holding a JSON array of more than
//! 10 items, or one from an always-stored tool is written under the
//! step's artifacts and replaced in the conversation by a small stub
//! (`{"__stored": true, "__refId", "__toolType", "__originalLength",
//! "__summary", "__hint"}`): an array copied whole between steps is where a
//! model silently cuts 15 items to 4, and a 50 KB log is where it loses the
//! one id it needed. The exact contents stay one `fetch_stored` away. A
//! preview of the first 12,000 characters is written beside it for audit;
//! it never enters a prompt, and any preview is a substring of the
//! original (a model never rewrites one).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::Result;

/// Characters of the audit preview.
pub const PREVIEW_CHARS: usize = 12_000;

/// One stored result.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub id: String,
    pub tool: String,
    pub chars: usize,
    /// Items, when the result is a JSON array.
    pub items: Option<usize>,
    /// One to a few lines; a model's condensation (L2) when it is that large.
    pub summary: String,
    /// The full (redacted) contents.
    pub path: PathBuf,
}

/// The refs of one step.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// Prefix of ids, so two steps' refs never share a name.
    prefix: String,
    pub refs: Vec<Stored>,
}

impl Store {
    pub fn new(dir: &Path, prefix: &str) -> Store {
        Store {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            refs: Vec::new(),
        }
    }

    /// Whether a result goes to the store.
    pub fn wants(tool: &str, text: &str, max_chars: usize, max_items: usize) -> bool {
        super::tools::always_stored(tool)
            || text.chars().count() > max_chars
            || array_len(text).is_some_and(|n| n > max_items)
    }

    /// Stores `text` (redacted first: it is written to disk) and returns the ref.
    pub fn put(&mut self, tool: &str, text: &str) -> Result<&Stored> {
        crate::atomic::create_dir_all(&self.dir)?;
        let id = format!("{}{}", self.prefix, self.refs.len() + 1);
        let clean = crate::text::redact::redact(text);
        let path = self.dir.join(format!("{id}.txt"));
        crate::atomic::write_atomic(&path, clean.as_bytes())?;
        let preview: String = clean.chars().take(PREVIEW_CHARS).collect();
        crate::atomic::write_atomic(
            &self.dir.join(format!("{id}.preview.txt")),
            preview.as_bytes(),
        )?;
        let items = array_len(&clean);
        self.refs.push(Stored {
            summary: summary(tool, &clean, items),
            id,
            tool: tool.to_string(),
            chars: clean.chars().count(),
            items,
            path,
        });
        Ok(self.refs.last().expect("just pushed"))
    }

    pub fn get(&self, id: &str) -> Option<&Stored> {
        self.refs.iter().find(|r| r.id == id)
    }

    pub fn set_summary(&mut self, id: &str, summary: String) {
        if let Some(r) = self.refs.iter_mut().find(|r| r.id == id) {
            r.summary = summary;
        }
    }

    /// The stored contents, exactly.
    pub fn contents(&self, id: &str) -> Option<String> {
        std::fs::read_to_string(&self.get(id)?.path).ok()
    }
}

impl Stored {
    /// The stub that stands for it in the transcript, summary included.
    pub fn stub(&self) -> String {
        json!({
            "__stored": true,
            "__refId": self.id,
            "__toolType": self.tool,
            "__originalLength": self.chars,
            "__summary": self.summary,
            "__hint": format!("the full result is stored: call fetch_stored with ref `{}` for exact values", self.id),
        })
        .to_string()
    }

    /// The stub without the summary, where the ref is shown elsewhere in
    /// the same prompt (one piece of data, one form).
    pub fn pointer(&self) -> String {
        json!({"__stored": true, "__refId": self.id, "__toolType": self.tool, "__shown": "in the data block below"})
            .to_string()
    }

    /// At most `max` characters: the summary, then the first lines and the
    /// last line of the contents, verbatim (for a ref too large to inline).
    pub fn enhanced(&self, contents: &str, max: usize) -> String {
        // The summary takes at most a third: the rest quotes the contents.
        let mut out = format!(
            "{} ({} chars; fetch_stored `{}` for the rest)\n",
            crate::text::clip::clip(&self.summary, max / 3),
            self.chars,
            self.id
        );
        let lines: Vec<&str> = contents.lines().collect();
        let last = lines.last().copied().unwrap_or_default();
        for l in &lines {
            if out.chars().count() + l.chars().count() + last.chars().count() + 8 > max {
                break;
            }
            out.push_str(l);
            out.push('\n');
        }
        if lines.len() > 1
            && out.chars().count() + last.chars().count() + 6 <= max
            && !out.ends_with(&format!("{last}\n"))
        {
            out.push_str("…\n");
            out.push_str(last);
        }
        if out.chars().count() > max {
            out = out.chars().take(max).collect();
        }
        out
    }
}

/// The most items of any JSON array in a result (nested arrays too; a
/// command's result after its `exit N` line), when the result is JSON.
pub fn array_len(text: &str) -> Option<usize> {
    fn longest(v: &Value) -> Option<usize> {
        match v {
            Value::Array(a) => Some(a.iter().filter_map(longest).max().unwrap_or(0).max(a.len())),
            Value::Object(o) => o.values().filter_map(longest).max(),
            _ => None,
        }
    }
    let body = json_body(text);
    let t = body.trim_start();
    if !t.starts_with('[') && !t.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(body)
        .ok()
        .as_ref()
        .and_then(longest)
}

/// The JSON a result holds: all of it, or what follows a command's first
/// line (`exit 0`, `timed out after …`).
fn json_body(text: &str) -> &str {
    let t = text.trim_start();
    if t.starts_with('[') || t.starts_with('{') {
        return text;
    }
    match text.split_once('\n') {
        Some((head, rest))
            if head.starts_with("exit ")
                || head.starts_with("timed out")
                || head.starts_with("killed") =>
        {
            rest
        }
        _ => text,
    }
}

/// A deterministic summary: how many items and the first ones, or the first
/// line and the size.
fn summary(tool: &str, text: &str, items: Option<usize>) -> String {
    let body = json_body(text);
    if let (Some(n), Ok(Value::Array(a))) = (items, serde_json::from_str::<Value>(body)) {
        let first: Vec<String> = a
            .iter()
            .take(3)
            .map(|v| match v {
                Value::String(s) => crate::text::clip::clip(s, 60),
                v => crate::text::clip::clip(&v.to_string(), 60),
            })
            .collect();
        let nested = if n > a.len() {
            format!(" (an array inside holds {n})")
        } else {
            String::new()
        };
        return format!(
            "{tool}: {} items{nested}, starting {}",
            a.len(),
            first.join(" | ")
        );
    }
    if let Some(n) = items {
        return format!(
            "{tool}: JSON holding an array of {n} items, {} chars",
            text.chars().count()
        );
    }
    let lines = text.lines().count();
    let head = body
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    format!(
        "{tool}: {lines} lines; first: {}",
        crate::text::clip::clip(head.trim(), 120)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_results_and_long_arrays_are_stored_with_a_stub() {
        assert!(Store::wants("read_file", &"x".repeat(8_001), 8_000, 10));
        assert!(!Store::wants("read_file", &"x".repeat(8_000), 8_000, 10));
        let eleven = serde_json::to_string(&(0..11).collect::<Vec<_>>()).unwrap();
        assert!(Store::wants("run_command", &eleven, 8_000, 10));
        assert!(Store::wants("list_files", "[]", 8_000, 10));
        // A command's JSON after its exit line, and an array inside an object.
        let nested = format!("exit 0\n{{\"orders\": {eleven}}}");
        assert_eq!(array_len(&nested), Some(11));
        assert!(Store::wants("run_command", &nested, 8_000, 10));
        assert_eq!(array_len("exit 0\n[1, 2]"), Some(2));
        assert_eq!(array_len("exit 0\nplain text"), None);
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let r = s.put("search_files", &eleven).unwrap().clone();
        assert_eq!(r.id, "r1");
        assert_eq!(r.items, Some(11));
        let stub: Value = serde_json::from_str(&r.stub()).unwrap();
        assert_eq!(stub["__stored"], json!(true));
        assert_eq!(stub["__originalLength"], json!(eleven.len()));
        assert!(stub["__summary"].as_str().unwrap().contains("11 items"));
        assert_eq!(s.contents("r1").unwrap(), eleven);
        assert!(d.path().join("r1.preview.txt").exists());
    }

    #[test]
    fn an_enhanced_summary_is_bounded_and_quotes_the_contents() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let text: String = (0..2_000).map(|i| format!("line {i}\n")).collect();
        let r = s.put("run_command", &text).unwrap().clone();
        let e = r.enhanced(&text, 1_000);
        assert!(e.chars().count() <= 1_000);
        assert!(
            e.contains("line 0\nline 1\n") && e.ends_with("line 1999"),
            "{e}"
        );
    }
}
