//! Edits written as search/replace blocks, for models that cannot call
//! tools (`tools: none`).
//!
//! The format is the one aider's `diff` edit format made common, so models
//! have seen it: the file's path on its own line, then
//!
//! ```text
//! <<<<<<< SEARCH
//! lines copied from the file
//! =======
//! the lines to put in their place
//! >>>>>>> REPLACE
//! ```
//!
//! usually inside a code fence. An empty SEARCH creates a file. Each block is
//! applied through the same `edit_file`/`write_file` tools a native call
//! would use, so the path rules (inside the worktree, not `.git`, regular
//! files, the size caps) are the same code. A block whose SEARCH is not in
//! the file is sent back exactly as the model wrote it, with the file's
//! nearest lines, which is what a small model needs to fix it.

use serde_json::json;

use super::tools::{self, Bench, Done};
use crate::error::Result;

/// One block as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Block {
    pub path: String,
    pub search: String,
    pub replace: String,
    /// The block as the model wrote it, for the message when it fails.
    pub written: String,
}

/// What applying an answer's blocks did.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// One line per block that was applied.
    pub done: Vec<String>,
    /// Each failed block with why, written for the model.
    pub failed: Vec<String>,
}

/// What follows a run of 5 to 9 `c` that begins `line` (a marker line).
fn after_marker(line: &str, c: char) -> Option<&str> {
    let t = line.trim();
    let n = t.chars().take_while(|x| *x == c).count();
    (5..=9).contains(&n).then(|| t[n..].trim())
}

/// A block's opening line: `<<<<<<< SEARCH`, or `<<<<<<< path` as a merge
/// conflict spells it (models write both); the path, when it names one.
fn opening(line: &str) -> Option<Option<String>> {
    match after_marker(line, '<')? {
        "SEARCH" => Some(None),
        rest => path_in(rest).map(Some),
    }
}

/// A block's closing line: `>>>>>>> REPLACE`, or `>>>>>>> path`.
fn closing(line: &str) -> bool {
    after_marker(line, '>').is_some_and(|rest| rest == "REPLACE" || path_in(rest).is_some())
}

/// The blocks in `text`. A block names the last path-like line before it;
/// blocks after it without a path of their own edit the same file.
pub(crate) fn parse(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let Some(named) = opening(line) else {
            if let Some(p) = path_in(line) {
                path = Some(p);
            }
            i += 1;
            continue;
        };
        if named.is_some() {
            path = named;
        }
        let start = i;
        let mut search = Vec::new();
        let mut replace = Vec::new();
        let mut j = i + 1;
        while j < lines.len() && after_marker(lines[j], '=') != Some("") {
            if !lines[j].trim().starts_with("```") {
                search.push(lines[j]);
            }
            j += 1;
        }
        j += 1;
        let mut fence_inside = false;
        while j < lines.len() && !closing(lines[j]) {
            // A fence the model closed inside the block is not code, nor
            // the blank lines around it.
            if lines[j].trim().starts_with("```") {
                fence_inside = true;
            } else {
                replace.push(lines[j]);
            }
            j += 1;
        }
        while fence_inside && replace.last().is_some_and(|l| l.trim().is_empty()) {
            replace.pop();
        }
        let end = j.min(lines.len().saturating_sub(1));
        if let Some(p) = &path
            && j < lines.len()
        {
            let join = |v: &[&str]| {
                if v.is_empty() {
                    String::new()
                } else {
                    format!("{}\n", v.join("\n"))
                }
            };
            out.push(Block {
                path: p.clone(),
                search: join(&search),
                replace: join(&replace),
                written: format!("{p}\n{}", lines[start..=end].join("\n")),
            });
        }
        i = j + 1;
    }
    out
}

/// A line that is only a file path (`primes.py`, `src/a.rs:`, `**a.py**`,
/// `# File: a.py`), as models write it above a block.
fn path_in(line: &str) -> Option<String> {
    let mut t = line.trim();
    for prefix in ["# File:", "File:", "file:", "#", "//"] {
        if let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim();
        }
    }
    // A fence with the path as its info string: ```python primes.py
    if t.starts_with("```") || t.starts_with("~~~") {
        t = t.trim_start_matches(['`', '~']).trim();
        t = t.split_whitespace().nth(1).unwrap_or("");
    }
    let t = t
        .trim_matches(|c| matches!(c, '*' | '`' | '"' | '\'' | ':'))
        .trim();
    let ok = !t.is_empty()
        && t.len() <= 4096
        && !t.contains(char::is_whitespace)
        && (t.contains('.') || t.contains('/'))
        && !t.ends_with('.')
        && t.chars()
            .all(|c| c.is_alphanumeric() || "._-/+@".contains(c));
    ok.then(|| t.to_string())
}

/// Applies `blocks` in order through the bench's own edit tools.
pub(crate) fn apply(bench: &Bench, blocks: &[Block]) -> Result<Applied> {
    let mut a = Applied::default();
    for b in blocks {
        let current = bench.file_text(&b.path);
        let out = if b.search.trim().is_empty() {
            if bench.exists(&b.path) {
                Done::Error(format!(
                    "{} exists and the SEARCH part is empty: copy the lines to replace from the file (an empty SEARCH only creates a new file)",
                    b.path
                ))
            } else {
                bench.run(tools::WRITE, &json!({"path": b.path, "content": b.replace}))?
            }
        } else if let Ok(text) = &current
            && !text.contains(b.search.trim_end())
            && !b.replace.trim().is_empty()
            && text.matches(b.replace.trim_end()).count() == 1
        {
            // Small models send every block again with the next answer: a
            // block whose SEARCH is gone and whose REPLACE is there was
            // applied already.
            Done::Text(format!("{}: this block was applied already", b.path))
        } else {
            let old = match &current {
                Ok(text) => loose_match(text, &b.search).unwrap_or_else(|| b.search.clone()),
                Err(_) => b.search.clone(),
            };
            // The replacement keeps the file's own line ending.
            let new = if old.ends_with('\n') || b.replace.is_empty() {
                b.replace.clone()
            } else {
                b.replace.trim_end_matches('\n').to_string()
            };
            bench.run(
                tools::EDIT,
                &json!({"path": b.path, "old": old, "new": new}),
            )?
        };
        match out {
            Done::Text(t) => a.done.push(t),
            Done::Error(e) => {
                let near = bench
                    .file_text(&b.path)
                    .ok()
                    .and_then(|text| nearest(&text, &b.search))
                    .map(|n| format!("\nThe file's closest lines are:\n```\n{n}```"))
                    .unwrap_or_default();
                a.failed.push(format!(
                    "This block was not applied ({e}):\n```\n{}\n```{near}",
                    b.written
                ));
            }
        }
    }
    Ok(a)
}

/// Whole files written in fenced blocks, aider's `whole` format, which
/// small models fall back to: a block is a new version of an editable file
/// when the line before it names the file, or, with one editable file, when
/// it starts as the file does and holds at least half as many lines. A
/// snippet is not a file: nothing else is taken.
pub(crate) fn whole_files(bench: &Bench, text: &str, editable: &[String]) -> Vec<(String, String)> {
    use crate::text::json_scan::fenced_blocks;
    let mut out: Vec<(String, String)> = Vec::new();
    for (start, _, body_start, body_end) in fenced_blocks(text) {
        let body = &text[body_start..body_end];
        if body.trim().is_empty() || body.contains("<<<<<<<") || body.contains(">>>>>>>") {
            continue;
        }
        // The path is the last line before the block that is not a fence
        // (models put it inside a fence of its own too).
        let named = text[..start]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("```") && !l.starts_with("~~~"))
            .and_then(path_in)
            .or_else(|| path_in(text[start..body_start].lines().next().unwrap_or("")))
            .filter(|p| editable.contains(p));
        let path = match named {
            Some(p) => p,
            None if editable.len() == 1 => {
                let Ok(current) = bench.file_text(&editable[0]) else {
                    continue;
                };
                let first = |t: &str| {
                    t.lines()
                        .find(|l| !l.trim().is_empty())
                        .map(str::trim_end)
                        .map(str::to_string)
                };
                let alike = first(&current).is_some() && first(&current) == first(body);
                if !alike || body.lines().count() * 2 < current.lines().count() {
                    continue;
                }
                editable[0].clone()
            }
            None => continue,
        };
        out.retain(|(p, _)| *p != path);
        out.push((path, body.to_string()));
    }
    out
}

/// The file's own text for `search` when they differ only in trailing
/// spaces or a missing final newline, and the match is unique.
fn loose_match(text: &str, search: &str) -> Option<String> {
    if text.matches(search).count() == 1 {
        return Some(search.to_string());
    }
    let want: Vec<&str> = search.lines().map(str::trim_end).collect();
    if want.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut hits = Vec::new();
    for s in 0..lines.len() {
        if s + want.len() > lines.len() {
            break;
        }
        if (0..want.len()).all(|k| lines[s + k].trim_end() == want[k]) {
            hits.push(s);
        }
    }
    match hits.as_slice() {
        [s] => Some(lines[*s..*s + want.len()].concat()),
        _ => None,
    }
}

/// Up to eight lines of `text` around the line most like the first line of
/// `search` that is not blank.
fn nearest(text: &str, search: &str) -> Option<String> {
    let first = search.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lines: Vec<&str> = text.lines().collect();
    let score = |l: &str| {
        let l = l.trim();
        l.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.len() > 1 && first.contains(*w))
            .count()
    };
    let (best, s) = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i, score(l)))
        .max_by_key(|&(i, s)| (s, std::cmp::Reverse(i)))?;
    if s == 0 {
        return None;
    }
    let from = best.saturating_sub(1);
    let to = (best + 7).min(lines.len());
    Some(
        lines[from..to]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
}

/// A block's shape in one line, for the messages that ask for blocks.
pub(crate) const SHAPE: &str = "the file's path on its own line, then <<<<<<< SEARCH, the exact lines, =======, the new lines, >>>>>>> REPLACE";

/// The instructions for a step that edits without tools.
pub(crate) const HOW: &str = "Make the change by writing search/replace blocks, one per edit: the file's path on a line of its own, then\n```\n<<<<<<< SEARCH\nlines copied exactly from the file, whitespace included\n=======\nthe lines to put in their place\n>>>>>>> REPLACE\n```\nThe SEARCH part must match the file's current lines exactly and once; include a few unchanged lines around the change so it is unique. An empty SEARCH creates a new file. ooda applies the blocks and tells you which did not match. Change only what the task asks.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_name_their_file_and_keep_what_was_written() {
        let text = "Here is the change.\n\nprimes.py\n```python\n<<<<<<< SEARCH\ndef is_prime(n):\n    return True\n=======\ndef is_prime(n):\n    return n > 1\n>>>>>>> REPLACE\n```\n\n**src/new.py**\n```\n<<<<<<< SEARCH\n=======\nX = 1\n>>>>>>> REPLACE\n```\n";
        let b = parse(text);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].path, "primes.py");
        assert_eq!(b[0].search, "def is_prime(n):\n    return True\n");
        assert_eq!(b[0].replace, "def is_prime(n):\n    return n > 1\n");
        assert!(
            b[0].written.contains("<<<<<<< SEARCH") && b[0].written.contains(">>>>>>> REPLACE")
        );
        assert_eq!(b[1].path, "src/new.py");
        assert_eq!(b[1].search, "");
        // A merge conflict's spelling, the path on its markers, with fences
        // closed inside it (as Qwen2.5-Coder-1.5B writes it).
        let b = parse(
            "```\n<<<<<<< fib.py\ndef f():\n    return 1\n=======\ndef f():\n    return 2\n```\n\n```\n>>>>>>> fib.py\n```\n",
        );
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(
            (b[0].path.as_str(), b[0].replace.as_str()),
            ("fib.py", "def f():\n    return 2\n")
        );
        // No path before it, or an unclosed block: nothing to apply.
        assert!(parse("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n").is_empty());
        assert!(parse("a.py\n<<<<<<< SEARCH\na\n=======\nb\n").is_empty());
        // A sentence is not a path.
        assert_eq!(path_in("Here is the change."), None);
        assert_eq!(path_in("```python primes.py"), Some("primes.py".into()));
        assert_eq!(path_in("# File: a/b.rs"), Some("a/b.rs".into()));
    }

    /// Runs `f` with the edit tools on `root`.
    fn on_bench(root: &std::path::Path, f: impl FnOnce(&Bench)) {
        let lease = crate::run::executor::Local::default();
        let lease =
            crate::run::executor::Executor::lease(&lease, crate::run::executor::Purpose::Agent)
                .unwrap();
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let bench = Bench {
            root,
            archive: None,
            blank_env: Vec::new(),
            edits: true,
            allowed: &[],
            lease: lease.as_ref(),
            cancel: &cancel,
            command_timeout: std::time::Duration::from_secs(5),
            output_cap: 1 << 20,
            explorer: Default::default(),
        };
        f(&bench);
    }

    #[test]
    fn a_block_sent_again_is_applied_once_and_an_empty_search_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.py"), "x = slow()\n").unwrap();
        std::fs::write(root.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
        on_bench(root, |bench| {
            let block = "a.py\n<<<<<<< SEARCH\nx = slow()\n=======\nx = fast()\n>>>>>>> REPLACE\n";
            let first = apply(bench, &parse(block)).unwrap();
            assert_eq!((first.done.len(), first.failed.len()), (1, 0));
            // Small models send every block again with their next answer.
            let again = apply(bench, &parse(block)).unwrap();
            assert_eq!(
                (again.done.len(), again.failed.len()),
                (1, 0),
                "{:?}",
                again.failed
            );
            assert_eq!(
                std::fs::read_to_string(root.join("a.py")).unwrap(),
                "x = fast()\n"
            );
            let blob = apply(
                bench,
                &parse("blob.bin\n<<<<<<< SEARCH\n=======\ntext\n>>>>>>> REPLACE\n"),
            )
            .unwrap();
            assert_eq!(blob.failed.len(), 1);
            assert!(blob.failed[0].contains("exists and the SEARCH part is empty"));
            assert_eq!(
                std::fs::read(root.join("blob.bin")).unwrap(),
                [0u8, 159, 146, 150]
            );
            // A wrong SEARCH is sent back as written, with the closest lines.
            let wrong = apply(
                bench,
                &parse("a.py\n<<<<<<< SEARCH\nx = fast(2)\n=======\ny\n>>>>>>> REPLACE\n"),
            )
            .unwrap();
            assert!(
                wrong.failed[0].contains("x = fast(2)"),
                "{}",
                wrong.failed[0]
            );
            assert!(
                wrong.failed[0].contains("closest lines"),
                "{}",
                wrong.failed[0]
            );
        });
    }

    #[test]
    fn a_whole_file_in_a_fence_is_a_new_version_only_when_it_is_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let old = "\"\"\"Fib.\"\"\"\n\n\ndef fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n";
        std::fs::write(root.join("fib.py"), old).unwrap();
        on_bench(root, |bench| {
            let editable = vec!["fib.py".to_string()];
            let new = "\"\"\"Fib.\"\"\"\n\nimport functools\n\n@functools.lru_cache(None)\ndef fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n";
            // Unnamed, one editable file, starting as it does: a new version.
            let text = format!("### Change\n\n```python\n{new}```\n\nThis caches.");
            assert_eq!(
                whole_files(bench, &text, &editable),
                [("fib.py".to_string(), new.to_string())]
            );
            // Named on the line before.
            let text = format!("fib.py\n```\n{new}```");
            assert_eq!(whole_files(bench, &text, &editable).len(), 1);
            // A snippet is not the file; a file the plan did not name is not
            // written.
            let snippet = "```python\n@functools.lru_cache(None)\ndef fib(n):\n```";
            assert!(whole_files(bench, snippet, &editable).is_empty());
            let other = format!("bench.py\n```\n{new}```");
            assert!(whole_files(bench, &other, &[]).is_empty());
        });
    }

    #[test]
    fn trailing_spaces_do_not_stop_a_unique_match() {
        let file = "a = 1   \nb = 2\nc = 3\n";
        assert_eq!(
            loose_match(file, "a = 1\nb = 2\n").as_deref(),
            Some("a = 1   \nb = 2\n")
        );
        assert_eq!(loose_match("x\nx\n", "x\n"), None);
        assert_eq!(
            nearest(
                "import os\n\ndef is_prime(n):\n    pass\n",
                "def is_prime(k):\n"
            )
            .unwrap()
            .lines()
            .next(),
            Some("")
        );
    }
}
