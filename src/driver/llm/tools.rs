//! The tools the llm driver's agent works with, and the rules they keep.
//!
//! Each tool is named as a verb phrase with a JSON Schema whose
//! descriptions say when to use it and when not, since a model picks tools
//! by those words. Paths are resolved inside the worktree the step works
//! in: `..` and absolute paths are refused, symlinks are followed and the
//! target re-checked, `.git` is never touched. Commands run only when the
//! Brief allows them (its guards, its metric, `tools: {allow: [...]}`),
//! through the same executor, and so the same sandbox, as every other
//! command. A tool that fails returns its error to the model as data, with
//! the rule it broke and what to do instead; it never ends the step.

use crate::model::CommandOutcome;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Value, json};

use super::wire::ToolSpec;
use crate::run::exec::CommandSpec;
use crate::run::executor::Lease;
use crate::workspace::files::{canonical_root, files_under, resolve};

/// Lines one `read_file` returns at most.
const READ_LINES: usize = 2_000;
/// Entries one `list_files` returns at most.
const LIST_MAX: usize = 2_000;
/// Matches one `search_files` returns at most.
const SEARCH_MAX: usize = 200;
/// Bytes of one tool call's arguments at most: a whole source file for
/// `write_file` fits many times over; more is refused and not kept, since
/// the transcript sends every call back with each request.
pub const ARGUMENTS_MAX: usize = 1 << 20;
/// Characters of one `add_insight` at most: working memory holds 8,000.
pub const INSIGHT_MAX: usize = 8_000;
/// Bytes one `read_file` returns at most (besides its line limit), and the
/// largest file `edit_file` rewrites.
const READ_BYTES: usize = 256 * 1024;
const EDIT_BYTES: u64 = 8 << 20;
/// How long one file operation may take: reading a file of gigabytes for
/// its line count stops here, and says so.
const FILE_DEADLINE: Duration = Duration::from_secs(10);
/// Files larger than this are not searched.
const SEARCH_FILE_BYTES: u64 = 2 << 20;
/// Characters of a command's output kept (after compression).
pub const RUN_CHARS: usize = 24_000;

pub const LIST: &str = "list_files";
pub const READ: &str = "read_file";
pub const SEARCH: &str = "search_files";
pub const EDIT: &str = "edit_file";
pub const WRITE: &str = "write_file";
pub const RUN: &str = "run_command";
pub const FETCH: &str = "fetch_stored";
pub const INSIGHT: &str = "add_insight";
pub const FINISH: &str = "finish";

/// Results of these tools are meant to be handed on whole (a list of
/// paths, the matches of a search): always stored by reference, so a copy
/// in the transcript is never cut to "representative" items.
pub fn always_stored(tool: &str) -> bool {
    matches!(tool, LIST | SEARCH)
}

/// The tools of one step. `edits`: EXECUTE and the simplifier may change
/// files; PLAN, LEARN and reviewers only read.
pub fn specs(edits: bool, commands: bool) -> Vec<ToolSpec> {
    let mut v = vec![
        ToolSpec {
            name: LIST,
            description: "List the files under a folder of the worktree, recursively (not .git). Use it to find where things are before reading; do not use it to read contents.",
            schema: json!({"type": "object", "properties": {
                "dir": {"type": "string", "description": "A folder relative to the worktree root; `.` for all of it."}
            }, "additionalProperties": false}),
        },
        ToolSpec {
            name: READ,
            description: "Read a text file of the worktree, optionally only lines `start` to `end` (1-based, inclusive). Use it before editing a file, to copy the exact text you will replace. Not for folders (use list_files).",
            schema: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A file path relative to the worktree root."},
                "start": {"type": "integer", "minimum": 1, "description": "First line to return."},
                "end": {"type": "integer", "minimum": 1, "description": "Last line to return."}
            }, "required": ["path"], "additionalProperties": false}),
        },
        ToolSpec {
            name: SEARCH,
            description: "Search the worktree's text files for a regular expression; returns `path:line: text` matches (at most `max`). Use it to find where a name is defined or used; not to read a whole file.",
            schema: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "A regular expression (Rust regex syntax)."},
                "dir": {"type": "string", "description": "Where to search, relative to the root; `.` by default."},
                "max": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX, "description": "Most matches to return (50 by default)."}
            }, "required": ["pattern"], "additionalProperties": false}),
        },
    ];
    if edits {
        v.push(ToolSpec {
            name: EDIT,
            description: "Replace one exact piece of text in a file: `old` must occur exactly once (copy it from read_file, with enough surrounding lines to be unique). Use it for every change to an existing file; do not rewrite a whole file with write_file to change a few lines.",
            schema: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "old": {"type": "string", "description": "The exact text to replace; must match once."},
                "new": {"type": "string", "description": "The text to put in its place."}
            }, "required": ["path", "old", "new"], "additionalProperties": false}),
        });
        v.push(ToolSpec {
            name: WRITE,
            description: "Create a file (or replace a whole file) with `content`. Use it for new files; for changes to an existing file use edit_file.",
            schema: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            }, "required": ["path", "content"], "additionalProperties": false}),
        });
    }
    // The code index's tools: read-only, answered from parse trees of the
    // worktree (built on the first call, refreshed on every one).
    v.extend(
        crate::code_index::explorer::specs()
            .into_iter()
            .map(|s| ToolSpec {
                name: s.name,
                description: s.description,
                schema: s.schema,
            }),
    );
    if commands {
        v.push(ToolSpec {
            name: RUN,
            description: "Run one of the commands the Brief allows (its guards, its metric command, its `tools.allow` list), exactly as listed, in the worktree. Use it to check that a change builds and its tests pass. Any other command line, arguments added included, is refused.",
            schema: json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "An allowed command, exactly as listed in the task."}
            }, "required": ["command"], "additionalProperties": false}),
        });
    }
    v.extend([
        ToolSpec {
            name: FETCH,
            description: "Fetch a stored result by its __refId (a large tool result is stored and shown as a reference). Use it when you need the exact contents, e.g. a value, id or list item; use `offset`/`length` to page through a long one.",
            schema: json!({"type": "object", "properties": {
                "ref": {"type": "string", "description": "The __refId, e.g. r3."},
                "offset": {"type": "integer", "minimum": 0, "description": "Characters to skip."},
                "length": {"type": "integer", "minimum": 1, "maximum": 8000, "description": "Characters to return (8000 at most)."}
            }, "required": ["ref"], "additionalProperties": false}),
        },
        ToolSpec {
            name: INSIGHT,
            description: "Keep one short insight in working memory (a fact you established, a dead end and why): it stays in every later prompt of this step even when old turns are folded away. Not for raw data (it is stored already).",
            schema: json!({"type": "object", "properties": {
                "text": {"type": "string", "description": "One sentence, at most 400 characters."}
            }, "required": ["text"], "additionalProperties": false}),
        },
        ToolSpec {
            name: FINISH,
            description: "End the step with its answer: the JSON object the task asks for, as `answer`. Call it exactly once, when the work is done; nothing after it is read.",
            schema: json!({"type": "object", "properties": {
                "answer": {"type": "object", "description": "The step's JSON answer, with exactly the fields the task shows."}
            }, "required": ["answer"], "additionalProperties": false}),
        },
    ]);
    v
}

/// One call of the read-only file tools (`list_files`, `read_file`,
/// `search_files`) on a worktree, answered exactly as the model is
/// answered: what the exploration benchmark's grep/read explorer sees.
pub fn read_only(root: &Path, name: &str, args: &Value) -> Result<String, String> {
    let local = crate::run::executor::Local::default();
    let lease = crate::run::executor::Executor::lease(&local, crate::run::executor::Purpose::Agent)
        .map_err(|e| e.to_string())?;
    let cancel = AtomicBool::new(false);
    let b = Bench {
        root,
        archive: None,
        blank_env: Vec::new(),
        edits: false,
        allowed: &[],
        lease: lease.as_ref(),
        cancel: &cancel,
        command_timeout: Duration::from_secs(5),
        output_cap: 1 << 16,
        explorer: Default::default(),
    };
    match b.run(name, args).map_err(|e| e.to_string())? {
        Done::Text(t) => Ok(t),
        Done::Error(e) => Err(e),
    }
}

/// Where file and command tools work, and what they may do there.
pub struct Bench<'a> {
    /// The worktree (a candidate, or a subagent's copy).
    pub root: &'a Path,
    /// The Brief's archive (`iterations/<brief>`), readable by absolute
    /// path for the main agent (its prompt names files there); `None` for a
    /// subagent, whose context is what its definition gives it.
    pub archive: Option<PathBuf>,
    /// Variables emptied in the environment of the commands it runs (the
    /// tiers' API keys: code the model wrote must not read them).
    pub blank_env: Vec<String>,
    pub edits: bool,
    /// The commands the Brief allows.
    pub allowed: &'a [String],
    pub lease: &'a dyn Lease,
    pub cancel: &'a AtomicBool,
    pub command_timeout: Duration,
    pub output_cap: usize,
    /// The code index of `root`, opened on the first index tool call.
    pub explorer: std::cell::RefCell<Option<crate::code_index::explorer::Explorer>>,
}

/// A tool's answer: its text, or an error for the model.
#[derive(Debug, PartialEq)]
pub enum Done {
    Text(String),
    Error(String),
}

impl Bench<'_> {
    /// Runs a file or command tool. `Err` only for an interruption.
    pub fn run(&self, name: &str, args: &Value) -> crate::error::Result<Done> {
        let Value::Object(_) = args else {
            return Ok(Done::Error(format!(
                "the arguments of {name} are not a JSON object ({}); send an object with the fields of its schema",
                crate::text::clip::clip(&args.to_string(), 80)
            )));
        };
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        let n = |k: &str| args.get(k).and_then(Value::as_u64);
        let out = match name {
            LIST => self.list(s("dir").unwrap_or(".")),
            READ => match s("path") {
                Some(p) => self.read(p, n("start"), n("end")),
                None => Err(missing(name, "path")),
            },
            SEARCH => match s("pattern") {
                Some(p) => self.search(p, s("dir").unwrap_or("."), n("max").unwrap_or(50)),
                None => Err(missing(name, "pattern")),
            },
            EDIT | WRITE if !self.edits => Err(format!(
                "{name} is not available in this step: it only reads; describe the change in your answer instead"
            )),
            EDIT => match (s("path"), s("old"), s("new")) {
                (Some(p), Some(o), Some(n)) => self.edit(p, o, n),
                _ => Err(missing(name, "path, old and new")),
            },
            WRITE => match (s("path"), s("content")) {
                (Some(p), Some(c)) => self.write(p, c),
                _ => Err(missing(name, "path and content")),
            },
            RUN => match s("command") {
                Some(c) => return self.command(c),
                None => Err(missing(name, "command")),
            },
            index if crate::code_index::explorer::NAMES.contains(&index) => {
                let mut slot = self.explorer.borrow_mut();
                let ex = slot.get_or_insert_with(|| {
                    crate::code_index::explorer::Explorer::open(
                        self.root,
                        Some(&crate::code_index::dir_for(self.root)),
                        crate::code_index::Limits::default(),
                    )
                });
                ex.call(index, args)
            }
            other => Err(format!(
                "there is no tool `{other}`; the tools are the ones listed (e.g. {READ}, {SEARCH}, {FINISH})"
            )),
        };
        Ok(match out {
            Ok(t) => Done::Text(t),
            Err(e) => Done::Error(e),
        })
    }

    /// A path to read: inside the worktree, or (absolute) inside the archive.
    fn readable(&self, rel: &str) -> Result<PathBuf, String> {
        let p = Path::new(rel.trim());
        if p.is_absolute()
            && let Some(archive) = &self.archive
            && let Ok(real) = p.canonicalize()
            && real.starts_with(archive)
        {
            return Ok(real);
        }
        resolve(self.root, rel, false)
    }

    /// The path as the model should see it: relative to the worktree, or
    /// absolute in the archive.
    fn shown(&self, root: &Path, p: &Path) -> String {
        p.strip_prefix(root)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.display().to_string())
    }

    /// The files under `base` a tool shows (see [`files_under`]).
    fn files_under(&self, base: &Path) -> Vec<PathBuf> {
        files_under(self.root, base)
    }

    fn list(&self, dir: &str) -> Result<String, String> {
        let base = self.readable(dir)?;
        if !base.is_dir() {
            return Err(format!(
                "{dir} is not a folder of the worktree; list `.` to see what is there"
            ));
        }
        let root = canonical_root(self.root)?;
        let files = self.files_under(&base);
        let mut out: Vec<String> = files
            .iter()
            .take(LIST_MAX)
            .map(|p| self.shown(&root, p))
            .collect();
        if files.len() > LIST_MAX {
            out.push(format!(
                "… and {} more files: list a folder inside this one",
                files.len() - LIST_MAX
            ));
        }
        Ok(serde_json::to_string(&out).unwrap_or_default())
    }

    fn read(&self, path: &str, start: Option<u64>, end: Option<u64>) -> Result<String, String> {
        let p = self.readable(path)?;
        if p.is_dir() {
            return Err(format!("{path} is a folder; use list_files for folders"));
        }
        let from = usize::try_from(start.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        let last = end
            .map(|e| usize::try_from(e).unwrap_or(usize::MAX))
            .unwrap_or(usize::MAX)
            .min(from.saturating_add(READ_LINES - 1));
        let read = read_lines(&p, path, from, last, self.cancel)?;
        let Some(total) = read.total else {
            // The count stopped at the deadline: the file is huge.
            return Ok(format!(
                "[lines {from}-{} of {path}, a file too long to count its lines]\n{}",
                from + read.lines.saturating_sub(1),
                read.body
            ));
        };
        if total == 0 {
            return Ok(String::new());
        }
        if from > total {
            return Err(format!(
                "{path} has {total} lines; `start` {from} is past its end"
            ));
        }
        let to = from + read.lines.saturating_sub(1);
        let cut = if read.clipped {
            format!(
                " (cut at {} KiB: read fewer lines at a time)",
                READ_BYTES / 1024
            )
        } else {
            String::new()
        };
        if from == 1 && to == total && !read.clipped {
            Ok(read.body)
        } else {
            Ok(format!(
                "[lines {from}-{to} of {total} of {path}{cut}]\n{}",
                read.body
            ))
        }
    }

    fn search(&self, pattern: &str, dir: &str, max: u64) -> Result<String, String> {
        let re = regex::Regex::new(pattern)
            .map_err(|e| format!("the pattern is not a valid regex: {e}"))?;
        let base = self.readable(dir)?;
        let root = canonical_root(self.root)?;
        let max = usize::try_from(max)
            .unwrap_or(SEARCH_MAX)
            .clamp(1, SEARCH_MAX);
        let mut hits = Vec::new();
        let mut more = false;
        let files = if base.is_file() {
            vec![base.clone()]
        } else {
            self.files_under(&base)
        };
        let mut skipped = 0;
        for f in files {
            if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            // A data file of megabytes is not what a search is for.
            if std::fs::metadata(&f)
                .map(|m| m.len() > SEARCH_FILE_BYTES)
                .unwrap_or(true)
            {
                skipped += 1;
                continue;
            }
            let Ok((bytes, _)) = read_regular(&f, "", SEARCH_FILE_BYTES) else {
                continue;
            };
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            let rel = self.shown(&root, &f);
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    if hits.len() == max {
                        more = true;
                        break;
                    }
                    hits.push(format!(
                        "{rel}:{}: {}",
                        i + 1,
                        crate::text::clip::clip(line.trim_end(), 300)
                    ));
                }
            }
            if more {
                break;
            }
        }
        if skipped > 0 {
            hits.push(format!(
                "… {skipped} files over {} MB were not searched (read_file them by lines)",
                SEARCH_FILE_BYTES >> 20
            ));
        }
        if more {
            hits.push(format!(
                "… more matches: narrow the pattern or the folder (at most {max} are returned)"
            ));
        }
        Ok(serde_json::to_string(&hits).unwrap_or_default())
    }

    /// Whether anything is at `path` in the worktree (a file too large or
    /// not text to read included): an empty SEARCH must not replace it.
    pub(crate) fn exists(&self, path: &str) -> bool {
        resolve(self.root, path, false).is_ok_and(|p| std::fs::symlink_metadata(p).is_ok())
    }

    /// A worktree file's text, by the rules `edit_file` reads it with.
    pub(crate) fn file_text(&self, path: &str) -> Result<String, String> {
        let p = resolve(self.root, path, false)?;
        let (bytes, more) = read_regular(&p, path, EDIT_BYTES)?;
        if more {
            return Err(format!("{path} is larger than {} MiB", EDIT_BYTES >> 20));
        }
        String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text"))
    }

    fn edit(&self, path: &str, old: &str, new: &str) -> Result<String, String> {
        let p = resolve(self.root, path, false)?;
        let (bytes, more) =
            read_regular(&p, path, EDIT_BYTES).map_err(|e| format!("{e}; read_file it first"))?;
        if more {
            return Err(format!(
                "{path} is larger than {} MiB; edit_file rewrites smaller files only",
                EDIT_BYTES >> 20
            ));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("{path} is not UTF-8 text; it cannot be read or edited here"))?;
        if old.is_empty() {
            return Err("`old` is empty: copy the exact text to replace from read_file".into());
        }
        match text.matches(old).count() {
            1 => {}
            0 => {
                return Err(format!(
                    "`old` does not occur in {path} (rule: it must match exactly once); read_file the lines again and copy them exactly, whitespace included"
                ));
            }
            n => {
                return Err(format!(
                    "`old` occurs {n} times in {path} (rule: it must match exactly once); include more of the surrounding lines so it is unique"
                ));
            }
        }
        let changed = text.replacen(old, new, 1);
        std::fs::write(&p, changed).map_err(|e| format!("cannot write {path}: {e}"))?;
        Ok(format!(
            "edited {path}: 1 replacement ({} lines → {} lines)",
            old.lines().count(),
            new.lines().count()
        ))
    }

    fn write(&self, path: &str, content: &str) -> Result<String, String> {
        let p = resolve(self.root, path, true)?;
        if p.is_dir() {
            return Err(format!("{path} is a folder"));
        }
        // Opening a FIFO for writing blocks until someone reads it.
        if std::fs::metadata(&p).is_ok_and(|m| !m.is_file()) {
            return Err(format!(
                "{path} is not a regular file (a FIFO, a device or a socket); write_file writes regular files only"
            ));
        }
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create the folder of {path}: {e}"))?;
        }
        // The folders just made must still be inside (a race with a symlink).
        resolve(self.root, path, true)?;
        std::fs::write(&p, content).map_err(|e| format!("cannot write {path}: {e}"))?;
        Ok(format!("wrote {path} ({} lines)", content.lines().count()))
    }

    fn command(&self, line: &str) -> crate::error::Result<Done> {
        if let Err(why) = allowed(line, self.allowed) {
            return Ok(Done::Error(why));
        }
        let spec = CommandSpec {
            command: line,
            cwd: self.root,
            env: self
                .blank_env
                .iter()
                .map(|v| (v.clone(), String::new()))
                .collect(),
            timeout: self.command_timeout,
            output_cap: self.output_cap,
            stdin: None,
            landlock: None,
            writable: Vec::new(),
            measured: false,
        };
        let out = match self.lease.run(&spec, self.cancel) {
            Ok(o) => o,
            Err(e) => return Ok(Done::Error(format!("the command could not start: {e}"))),
        };
        let head = match out.status {
            CommandOutcome::Success => "exit 0".to_string(),
            CommandOutcome::TimedOut => format!(
                "timed out after {}",
                crate::brief::format_duration(self.command_timeout)
            ),
            CommandOutcome::Interrupted => return Err(crate::error::Error::Interrupted),
            _ => match out.exit_code {
                Some(c) => format!("exit {c}"),
                None => "killed by a signal".into(),
            },
        };
        // The exact output: the driver compresses what the model is shown
        // and stores the rest (`context::triage`).
        Ok(Done::Text(format!("{head}\n{}", out.output)))
    }
}

/// Replaces arguments above [`ARGUMENTS_MAX`] (and an `add_insight` above
/// [`INSIGHT_MAX`]) with a note the tool refuses, before they are run,
/// logged or kept in the transcript.
pub fn cap_arguments(call: &mut super::wire::ToolCall) {
    let len = call.arguments.to_string().len();
    let insight = call.name == INSIGHT
        && call
            .arguments
            .get("text")
            .and_then(Value::as_str)
            .is_some_and(|t| t.chars().count() > INSIGHT_MAX);
    if len > ARGUMENTS_MAX || insight {
        call.arguments = Value::String(if insight {
            format!(
                "(an insight of {len} bytes, dropped: add_insight keeps at most {INSIGHT_MAX} characters; note one fact in a sentence)"
            )
        } else {
            format!(
                "(arguments of {len} bytes, dropped: one tool call takes at most {} KiB; write a large file in parts with edit_file)",
                ARGUMENTS_MAX / 1024
            )
        });
    }
}

/// A regular file's bytes, at most `cap`, for a tool: a FIFO, a device or
/// a socket is refused without blocking (a command can make one), and the
/// read never holds more than the cap.
fn read_regular(p: &Path, shown: &str, cap: u64) -> Result<(Vec<u8>, bool), String> {
    crate::atomic::read_capped(p, cap).map_err(|e| format!("cannot read {shown}: {e}"))
}

/// What [`read_lines`] read.
struct Lines {
    body: String,
    /// Lines in `body`.
    lines: usize,
    /// The file's line count, or `None` when counting hit the deadline.
    total: Option<usize>,
    /// `body` stopped at [`READ_BYTES`] before `last`.
    clipped: bool,
}

/// Lines `from..=last` of the regular file `p`, streamed: never more than
/// [`READ_BYTES`] held, a FIFO or a device refused without blocking, the
/// line count given up at [`FILE_DEADLINE`] or a cancellation.
fn read_lines(
    p: &Path,
    shown: &str,
    from: usize,
    last: usize,
    cancel: &AtomicBool,
) -> Result<Lines, String> {
    use std::io::{BufRead, Read};
    let f = crate::atomic::open_regular(p).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidInput {
            format!(
                "{shown} is not a regular file (a FIFO, a device or a socket); read_file reads regular files only"
            )
        } else {
            format!("cannot read {shown}: {e}")
        }
    })?;
    let started = std::time::Instant::now();
    let mut reader = std::io::BufReader::new(f);
    let mut out = Lines {
        body: String::new(),
        lines: 0,
        total: Some(0),
        clipped: false,
    };
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        line.clear();
        // One line, but never more than the cap of it in memory.
        let got = (&mut reader)
            .take(READ_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if got == 0 {
            break;
        }
        if line.last() == Some(&b'\n') || got <= READ_BYTES {
            n += 1;
        } else {
            // The rest of an overlong line: skip it without keeping it.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let more = (&mut reader)
                    .take(READ_BYTES as u64)
                    .read_until(b'\n', &mut rest)
                    .map_err(|e| format!("cannot read {shown}: {e}"))?;
                if more == 0 || rest.last() == Some(&b'\n') {
                    break;
                }
                // A line of a terabyte of zeros (`truncate -s 1T`) ends here.
                if started.elapsed() > FILE_DEADLINE
                    || cancel.load(std::sync::atomic::Ordering::Relaxed)
                {
                    out.total = None;
                    return Ok(out);
                }
            }
            n += 1;
        }
        if (from..=last).contains(&n) && !out.clipped {
            // An overlong line was cut at the cap, maybe inside a character:
            // only a line read whole must be UTF-8.
            let text = match std::str::from_utf8(&line) {
                Ok(t) => t,
                Err(e) if got > READ_BYTES && e.error_len().is_none() => {
                    std::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or_default()
                }
                Err(_) => {
                    return Err(format!(
                        "{shown} is not UTF-8 text; it cannot be read or edited here"
                    ));
                }
            };
            if out.body.len() + text.len() > READ_BYTES {
                out.clipped = true;
            } else {
                out.body.push_str(text);
                out.lines += 1;
            }
        }
        if n.is_multiple_of(4096)
            && (started.elapsed() > FILE_DEADLINE
                || cancel.load(std::sync::atomic::Ordering::Relaxed))
        {
            out.total = None;
            return Ok(out);
        }
    }
    out.total = Some(n);
    Ok(out)
}

fn missing(tool: &str, what: &str) -> String {
    format!("{tool} needs {what}; see its schema")
}

/// Whether `line` is one of the allowed commands, exactly as the Brief
/// lists it. Arguments are not added: a program's own options (`make -f`,
/// `cargo --config`) would run other code than the Brief's author allowed.
pub fn allowed(line: &str, allowed: &[String]) -> Result<(), String> {
    let line = line.trim();
    if allowed.iter().any(|a| a.trim() == line) {
        return Ok(());
    }
    let list = if allowed.is_empty() {
        "none (the Brief has no guards, metric or tools.allow)".to_string()
    } else {
        allowed
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let why = if line.chars().any(|c| ";|&`$<>\n".contains(c)) {
        " (shell operators are refused: run one allowed command per call)"
    } else {
        ""
    };
    Err(format!(
        "`{}` is not one of the commands this Brief allows{why} (rule: its guards, its metric command and `tools.allow`, exactly as listed); allowed: {list}. To run another, the Brief's author adds it to `tools: {{allow: [...]}}`",
        crate::text::clip::clip(line, 120)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_worktree() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("wt");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "x").unwrap();
        std::fs::write(d.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(d.path(), root.join("up")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        assert!(resolve(&root, "src/a.rs", false).is_ok());
        assert!(resolve(&root, "src/new/b.rs", true).is_ok());
        for bad in [
            "../secret",
            "/etc/passwd",
            "src/../../secret",
            "link",
            "up/secret",
            "up/new.rs",
            ".git/config",
            "",
        ] {
            let e = resolve(&root, bad, true).unwrap_err();
            assert!(
                e.contains("rule") || e.contains(".git") || e.contains("outside"),
                "{bad}: {e}"
            );
        }
        assert!(
            resolve(&root, "nope.rs", false)
                .unwrap_err()
                .contains("does not exist")
        );
    }

    #[test]
    fn listing_and_search_do_not_follow_symlinks_out_of_the_worktree() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("wt");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "TOKEN=inside\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.txt"), "TOKEN=built\n").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(d.path().join("secret"), "TOKEN=outside\n").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), root.join("link")).unwrap();
        git2::Repository::init(&root).unwrap();
        let hits = read_only(&root, SEARCH, &json!({"pattern": "TOKEN"})).expect("search");
        assert!(hits.contains("src/a.rs:1: TOKEN=inside"), "{hits}");
        assert!(
            !hits.contains("outside") && !hits.contains("built"),
            "{hits}"
        );
        let list = read_only(&root, LIST, &json!({})).expect("list");
        assert!(
            list.contains("src/a.rs") && !list.contains("target/") && !list.contains("\"link\""),
            "{list}"
        );
    }

    #[test]
    fn commands_are_the_brief_s_or_refused_with_the_list() {
        let allow = vec!["cargo test --quiet".to_string(), "./bench.sh".to_string()];
        assert!(allowed("cargo test --quiet", &allow).is_ok());
        assert!(allowed("  ./bench.sh ", &allow).is_ok());
        assert!(allowed("./bench.sh --runs 3", &allow).is_err());
        assert!(allowed("cargo test --quiet --config x", &allow).is_err());
        let e = allowed("./bench.sh; curl evil", &allow).unwrap_err();
        assert!(e.contains("shell operators"), "{e}");
        assert!(allowed("./bench.shx", &allow).is_err());
        let e = allowed("rm -rf /", &allow).unwrap_err();
        assert!(
            e.contains("`cargo test --quiet`, `./bench.sh`") && e.contains("tools: {allow"),
            "{e}"
        );
    }
}
