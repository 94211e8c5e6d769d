//! `iterations/<brief>/index.jsonl`: the archive's records in a form that
//! is cheap to read, validated against the iteration files on every load.
//!
//! Every reader of the archive (status, summary, the PLAN prompt, red
//! lights, the builtin driver) wants the records of all iterations, and
//! parsing thousands of Markdown files with YAML front matter on every tick
//! is what made a long history slow. The Markdown files stay the source of
//! truth; this file is a cache of what they parse to, one JSON line per
//! iteration, with the size, modification time and a hash of the file it
//! was taken from. A load stats every iteration file and uses a line only
//! while the file still has that size and time, so a hand edit is picked
//! up by the next reader. When the time is too close to the moment the line
//! was taken for a later edit to have moved it (a coarse file-system clock
//! can give an edit in the same tick the same time, Git's "racily clean"
//! case) the bytes are hashed too. A missing, stale or damaged line (a torn
//! append, a hand edit of the index) costs one parse of that file; nothing
//! depends on the index being there.
//!
//! Only the holder of the Brief's lock writes the index: the runner appends
//! a line after each archived write and, when it opens the archive, the
//! lines it had to repair; once an eighth of the lines are superseded or
//! damaged it rewrites the index whole (atomically). Other readers (`ooda status`, trace, compare)
//! use what is valid and parse the rest, writing nothing: the fence around
//! an agent step (run/fence/) would take their repair for the agent's. A
//! torn line (a kill mid-append) is skipped.

use std::fs::OpenOptions;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::fact::Source;
use crate::error::{Error, Result};
use crate::model::IterationRecord;

/// The index's file name, beside the iteration files (git-ignored).
pub const FILE: &str = crate::archive::layout::Layout::INDEX;

/// How close a file's modification time may come to the moment its line
/// was taken before the bytes are hashed: longer than the coarsest clock
/// of a file system ooda may run on (FAT's two seconds).
pub(crate) const RACY_NS: u64 = 3_000_000_000;

/// One line of the index, as read. (Flat rather than a flattened stamp:
/// serde's `flatten` buffers every line before decoding it.)
#[derive(Debug, Deserialize)]
struct Line {
    iteration: u32,
    size: u64,
    mtime_ns: u64,
    /// When the line was taken, for the racy-time check.
    taken_ns: u64,
    /// FNV-1a of the file's bytes, hex.
    hash: String,
    record: IterationRecord,
}

/// One line of the index, as written: the same fields, borrowed.
#[derive(Serialize)]
struct LineRef<'a> {
    iteration: u32,
    size: u64,
    mtime_ns: u64,
    taken_ns: u64,
    hash: &'a str,
    record: &'a IterationRecord,
}

/// Which file a line was taken from, and when.
#[derive(Debug)]
struct Stamp {
    size: u64,
    mtime_ns: u64,
    taken_ns: u64,
    hash: String,
}

impl Stamp {
    /// The facts table's source of a record with no line yet.
    fn source(&self) -> Source {
        Source {
            size: self.size,
            mtime_ns: self.mtime_ns,
            taken_ns: self.taken_ns,
            hash: u64::from_str_radix(&self.hash, 16).unwrap_or(0),
            line_at: u64::MAX,
            line_len: 0,
        }
    }
}

/// What a load did, for tests and the overhead benchmark.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoadStats {
    /// Records taken from the index.
    pub cached: usize,
    /// Files whose line matched size and time but had to be hashed.
    pub hashed: usize,
    /// Files parsed from Markdown (no line, a stale one, or a damaged one).
    pub parsed: usize,
    /// Lines appended for them (a fresh line for each file hashed or
    /// parsed).
    pub appended: usize,
    /// Whether the index was rewritten whole (compacted).
    pub compacted: bool,
}

/// All iteration files' records, in order, through the index; `files`
/// are the numbered iteration files (checked for gaps by the caller).
pub(crate) fn load(
    dir: &Path,
    files: &[(u32, PathBuf)],
    repair: bool,
) -> Result<(Vec<IterationRecord>, LoadStats)> {
    load_stamped(dir, files, repair).map(|(records, _, stats)| (records, stats))
}

/// [`load`], with where each record's file was when its line was taken.
fn load_stamped(
    dir: &Path,
    files: &[(u32, PathBuf)],
    repair: bool,
) -> Result<(Vec<IterationRecord>, Vec<Stamp>, LoadStats)> {
    let index_path = dir.join(FILE);
    let limit = files.last().map_or(0, |(n, _)| *n as usize + 1);
    let (mut lines, total_lines) = read_lines(&index_path, limit);
    let mut stats = LoadStats::default();
    let mut repaired = Vec::new();
    let mut stamps = Vec::with_capacity(files.len());
    let mut out = Vec::with_capacity(files.len());
    let now = now_ns();
    for (n, path) in files {
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let (size, mtime_ns) = (meta.len(), mtime_of(&meta));
        let cached = lines
            .get_mut(*n as usize)
            .and_then(Option::take)
            .filter(|l| l.size == size && l.mtime_ns == mtime_ns);
        let (rec, stamp) = match cached {
            Some(line) if mtime_ns.saturating_add(RACY_NS) < line.taken_ns => {
                stats.cached += 1;
                let stamp = Stamp {
                    size,
                    mtime_ns,
                    taken_ns: line.taken_ns,
                    hash: line.hash,
                };
                (line.record, stamp)
            }
            cached => {
                let bytes = read_bytes(path)?;
                let digest = hash(&bytes);
                repaired.push(out.len());
                let stamp = Stamp {
                    size,
                    mtime_ns,
                    // Checked now: the next load may trust it sooner.
                    taken_ns: now,
                    hash: digest.clone(),
                };
                match cached {
                    Some(line) if line.hash == digest => {
                        stats.hashed += 1;
                        (line.record, stamp)
                    }
                    _ => {
                        stats.parsed += 1;
                        (super::parse_numbered(path, *n, &bytes)?, stamp)
                    }
                }
            }
        };
        out.push(rec);
        stamps.push(stamp);
    }
    // A cache that cannot be written only costs the next reader the parse.
    // Superseded, damaged and orphaned lines are harmless to a reader (the
    // last valid line of an iteration wins, and is checked against its
    // file), so repairs are appended; dead lines are skipped cheaply but
    // still read, so the file is compacted once they are an eighth of it
    // (amortized, a few lines rewritten per iteration archived).
    let lines_after = total_lines + repaired.len();
    if repair && lines_after > files.len() + files.len() / 8 + 16 {
        stats.compacted = write_all(&index_path, &stamps, &out).is_ok();
    } else if repair && !repaired.is_empty() {
        let (text, lines) = lines_text(repaired.iter().map(|&i| (&stamps[i], &out[i])));
        if lines > 0 && append_text(&index_path, &text).is_ok() {
            stats.appended = lines;
        }
    }
    Ok((out, stamps, stats))
}

/// Every record through the index, as [`load`] (without its repair: the
/// index is written whole next), then the index written whole so each
/// record's line is where the returned sources say:
/// what the facts table (`facts.rs`) is rebuilt from. Returns the index's
/// length.
pub(crate) fn rebuild(
    dir: &Path,
    files: &[(u32, PathBuf)],
) -> Result<(Vec<IterationRecord>, Vec<Source>, u64)> {
    let (records, stamps, _) = load_stamped(dir, files, false)?;
    let mut text = String::new();
    let mut sources = Vec::with_capacity(records.len());
    for (stamp, rec) in stamps.iter().zip(&records) {
        let mut source = stamp.source();
        if let Some(json) = line_text(stamp, rec) {
            source.line_at = text.len() as u64;
            source.line_len = json.len() as u32;
            text.push_str(&json);
            text.push('\n');
        }
        sources.push(source);
    }
    crate::atomic::write_atomic(&dir.join(FILE), text.as_bytes())?;
    Ok((records, sources, text.len() as u64))
}

/// The records on the lines `wanted` points to, `None` for a line that is
/// missing or not of its iteration. Lines close together are read with one
/// read (the newest iterations' lines are at the index's end); lines far
/// apart (the baseline's at the start) with one read each, so a window
/// never reads the whole index.
pub(crate) fn read_span(dir: &Path, wanted: &[(u32, Source)]) -> Vec<Option<IterationRecord>> {
    /// A gap above this between two lines starts another read.
    const GAP: u64 = 64 * 1024;
    let mut order: Vec<usize> = (0..wanted.len())
        .filter(|&i| wanted[i].1.line_at != u64::MAX)
        .collect();
    order.sort_by_key(|&i| wanted[i].1.line_at);
    let mut out: Vec<Option<IterationRecord>> = wanted.iter().map(|_| None).collect();
    let Ok(mut f) = crate::atomic::open_regular(dir.join(FILE)) else {
        return out;
    };
    // Runs of lines read together: (first offset, end, members).
    let mut runs: Vec<(u64, u64, Vec<usize>)> = Vec::new();
    for i in order {
        let s = &wanted[i].1;
        let end = s.line_at + u64::from(s.line_len);
        match runs.last_mut() {
            Some(run) if s.line_at <= run.1 + GAP => {
                run.1 = run.1.max(end);
                run.2.push(i);
            }
            _ => runs.push((s.line_at, end, vec![i])),
        }
    }
    let mut raws: Vec<(usize, Vec<u8>)> = Vec::new();
    for (lo, hi, members) in runs {
        let mut buf = vec![0u8; (hi - lo) as usize];
        if f.seek(SeekFrom::Start(lo)).is_err() || f.read_exact(&mut buf).is_err() {
            continue;
        }
        for i in members {
            let s = &wanted[i].1;
            let at = (s.line_at - lo) as usize;
            raws.push((i, buf[at..at + s.line_len as usize].to_vec()));
        }
    }
    let decoded = decode_many(&raws.iter().map(|(_, r)| r.as_slice()).collect::<Vec<_>>());
    for ((i, _), line) in raws.iter().zip(decoded) {
        let (n, s) = &wanted[*i];
        out[*i] = line
            .filter(|l| l.iteration == *n && l.size == s.size && l.mtime_ns == s.mtime_ns)
            .map(|l| l.record);
    }
    out
}

/// Records the file just written for `rec` from `bytes`, what was written
/// (not a second read, which could see an edit made since and hide it):
/// one line appended. Called by the archive's writer after the LEARN gate.
/// A file whose size is no longer that of `bytes` gets no line (the next
/// load parses it).
///
/// Returns where the file was and where its line is, with the index's new
/// length, for the facts table; a file with no line (a JSON-unsafe record)
/// has `line_at` `u64::MAX`.
pub(crate) fn append(
    dir: &Path,
    rec: &IterationRecord,
    path: &Path,
    bytes: &[u8],
) -> Result<Option<(Source, u64)>> {
    let meta =
        std::fs::metadata(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    if meta.len() != bytes.len() as u64 {
        return Ok(None);
    }
    let stamp = Stamp {
        size: meta.len(),
        mtime_ns: mtime_of(&meta),
        taken_ns: now_ns(),
        hash: hash(bytes),
    };
    let mut source = stamp.source();
    let Some(mut text) = line_text(&stamp, rec) else {
        let len = std::fs::metadata(dir.join(FILE)).map_or(0, |m| m.len());
        return Ok(Some((source, len)));
    };
    source.line_len = text.len() as u32;
    text.push('\n');
    let (at, len) = append_text(&dir.join(FILE), &text)?;
    source.line_at = at;
    Ok(Some((source, len)))
}

/// One `write` on a file opened for appending: lines of two processes may
/// follow each other in any order but are not interleaved, and a torn
/// last line (a kill mid-write) is skipped by the reader.
/// Returns where `text` starts and the file's new length.
fn append_text(path: &Path, text: &str) -> Result<(u64, u64)> {
    let write = || -> std::io::Result<(u64, u64)> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        // After a torn line, start a new one rather than glue this line
        // onto the torn one.
        let len = f.metadata()?.len();
        let mut last = [b'\n'];
        if len > 0 {
            f.seek(SeekFrom::Start(len - 1))?;
            f.read_exact(&mut last)?;
        }
        let lead = if last[0] == b'\n' { "" } else { "\n" };
        f.write_all(format!("{lead}{text}").as_bytes())?;
        let at = len + lead.len() as u64;
        Ok((at, at + text.len() as u64))
    };
    write().map_err(|e| Error::io(format!("appending to {}", path.display()), e))
}

/// The line for `rec`, or none when JSON cannot carry it exactly (an
/// infinite float, which YAML keeps and JSON writes as `null`): such a
/// file is parsed on every load rather than cached wrong.
fn line_text(stamp: &Stamp, rec: &IterationRecord) -> Option<String> {
    let text = serde_json::to_string(&LineRef {
        iteration: rec.iteration,
        size: stamp.size,
        mtime_ns: stamp.mtime_ns,
        taken_ns: stamp.taken_ns,
        hash: &stamp.hash,
        record: rec,
    })
    .ok()?;
    let back: Line = serde_json::from_str(&text).ok()?;
    (back.record == *rec).then_some(text)
}

/// The index's lines by iteration (the last valid line of an iteration
/// wins), for iterations below `limit` (a line beyond the files is an
/// orphan no load asks for), and how many lines the file holds in all,
/// damaged ones included.
fn read_lines(path: &Path, limit: usize) -> (Vec<Option<Line>>, usize) {
    let mut slots: Vec<Option<Line>> = Vec::new();
    slots.resize_with(limit, || None);
    // Bytes, line by line: a line torn inside a multi-byte character must
    // cost that line, not the whole index.
    let Ok(bytes) = crate::atomic::read_file(path) else {
        return (slots, 0);
    };
    let raws: Vec<&[u8]> = bytes
        .split(|b| *b == b'\n')
        .filter(|r| !r.is_empty())
        .collect();
    // The last line of each iteration, found by its prefix: a superseded
    // line is never decoded, and decoding is most of a load's time.
    let mut last: Vec<Option<usize>> = vec![None; limit];
    let mut unprefixed = false;
    for (i, raw) in raws.iter().enumerate() {
        match leading_iteration(raw) {
            Some(n) if (n as usize) < limit => last[n as usize] = Some(i),
            Some(_) => {}
            None => unprefixed = true,
        }
    }
    let wanted: Vec<(usize, usize)> = last
        .iter()
        .enumerate()
        .filter_map(|(n, i)| i.map(|i| (n, i)))
        .collect();
    let decoded = decode_all(&raws, &wanted);
    let mut missing = unprefixed;
    for ((n, _), line) in wanted.iter().zip(decoded) {
        missing |= line.is_none();
        slots[*n] = line;
    }
    // A damaged last line (or a line without the prefix ooda writes, a
    // hand edit) falls back to the lines before it, newest first, as one
    // reader of the file from its end would: rare, so done in order.
    if missing {
        let tried: std::collections::HashSet<usize> = wanted.iter().map(|(_, i)| *i).collect();
        for (i, raw) in raws.iter().enumerate().rev() {
            if tried.contains(&i) {
                continue;
            }
            if leading_iteration(raw)
                .is_some_and(|n| slots.get(n as usize).is_none_or(Option::is_some))
            {
                continue;
            }
            if let Some(line) = decode(raw)
                && let Some(slot) = slots.get_mut(line.iteration as usize)
                && slot.is_none()
            {
                *slot = Some(line);
            }
        }
    }
    (slots, raws.len())
}

/// A line whose record is of the iteration it says.
fn decode(raw: &[u8]) -> Option<Line> {
    serde_json::from_slice::<Line>(raw)
        .ok()
        .filter(|l| l.record.iteration == l.iteration)
}

/// The lines `wanted` names (iteration, line number), decoded on the cores
/// there are: at 10,000 iterations decoding is a tenth of a tick, and each
/// line is independent of the others.
fn decode_all(raws: &[&[u8]], wanted: &[(usize, usize)]) -> Vec<Option<Line>> {
    let one = |part: &[(usize, usize)]| -> Vec<Option<Line>> {
        part.iter()
            .map(|(n, i)| decode(raws[*i]).filter(|l| l.iteration as usize == *n))
            .collect()
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if workers < 2 || wanted.len() < 128 {
        return one(wanted);
    }
    let per = wanted.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let handles: Vec<_> = wanted
            .chunks(per)
            .map(|part| scope.spawn(move || one(part)))
            .collect();
        let mut out = Vec::with_capacity(wanted.len());
        for (h, part) in handles.into_iter().zip(wanted.chunks(per)) {
            // A worker that panicked costs its lines a parse, never the load.
            out.extend(
                h.join()
                    .unwrap_or_else(|_| part.iter().map(|_| None).collect()),
            );
        }
        out
    })
}

/// Lines decoded on the cores there are, in order.
fn decode_many(raws: &[&[u8]]) -> Vec<Option<Line>> {
    let wanted: Vec<(usize, usize)> = raws
        .iter()
        .enumerate()
        .filter_map(|(i, raw)| leading_iteration(raw).map(|n| (n as usize, i)))
        .collect();
    if wanted.len() != raws.len() {
        return raws.iter().map(|r| decode(r)).collect();
    }
    decode_all(raws, &wanted)
}

/// The iteration a line written by [`line_text`] starts with.
fn leading_iteration(raw: &[u8]) -> Option<u32> {
    let rest = raw.strip_prefix(b"{\"iteration\":")?;
    let end = rest.iter().position(|c| !c.is_ascii_digit())?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

fn write_all(path: &Path, stamps: &[Stamp], records: &[IterationRecord]) -> Result<()> {
    let (text, _) = lines_text(stamps.iter().zip(records));
    crate::atomic::write_atomic(path, text.as_bytes())
}

/// The lines for these records, each ended by a newline, and how many
/// (a record [`line_text`] refuses gets none).
fn lines_text<'a>(
    entries: impl Iterator<Item = (&'a Stamp, &'a IterationRecord)>,
) -> (String, usize) {
    let mut text = String::new();
    let mut lines = 0;
    for (stamp, rec) in entries {
        if let Some(json) = line_text(stamp, rec) {
            text.push_str(&json);
            text.push('\n');
            lines += 1;
        }
    }
    (text, lines)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    crate::atomic::read_file(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
}

fn mtime_of(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// FNV-1a, 64 bits: enough to tell an edited file from the one a line was
/// taken from (this is a cache check, not a defence against forgery).
fn hash(bytes: &[u8]) -> String {
    format!("{:016x}", super::fact::hash(bytes))
}

/// What a check of the iteration files against their rows found.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Iterations whose file is no longer the one their row was taken
    /// from: missing, of another size or time, or, when the time is racy,
    /// of other bytes.
    pub stale: Vec<u32>,
    /// Rows whose time was racy and whose bytes matched, now old enough to
    /// be trusted by size and time: (iteration, when they were checked).
    /// Re-stamped (`facts::restamp`), they are not hashed again.
    pub settled: Vec<(u32, u64)>,
}

/// Checks the files of `rows`: one `stat` per file (a hash only on doubt).
/// What a tick runs over the newest files, and beside its first phases
/// over the rest, or a slice of them (`view.rs`).
pub(crate) fn stale(dir: &Path, rows: &[(u32, super::fact::Source)]) -> Checked {
    let mut out = Checked::default();
    let now = now_ns();
    for &(iteration, ref s) in rows {
        let path = super::path_of(dir, iteration);
        let Ok(meta) = std::fs::metadata(&path) else {
            out.stale.push(iteration);
            continue;
        };
        if meta.len() != s.size || mtime_of(&meta) != s.mtime_ns {
            out.stale.push(iteration);
            continue;
        }
        if s.mtime_ns.saturating_add(RACY_NS) < s.taken_ns {
            continue;
        }
        if crate::atomic::read_file(&path).map_or(true, |b| super::fact::hash(&b) != s.hash) {
            out.stale.push(iteration);
        } else if s.mtime_ns.saturating_add(RACY_NS) < now {
            out.settled.push((iteration, now));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::archive::history::{self, RenderContext};
    use std::time::Duration;

    /// The render context the archive tests write with.
    pub(crate) fn ctx() -> RenderContext<'static> {
        RenderContext {
            goal: "Make it fast.",
            metric: "time_ms",
            direction_word: "lower is better",
        }
    }

    /// An archive of `n` iterations whose files are an hour old, as files
    /// are by the next night: outside the racy window.
    fn archive(n: u32) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for rec in crate::archive::history::synthetic::synthetic_history(n, 3) {
            history::write(dir.path(), &rec, &ctx()).unwrap();
        }
        age_files(dir.path());
        std::fs::remove_file(dir.path().join(FILE)).unwrap();
        dir
    }

    fn age_files(dir: &Path) {
        let old = SystemTime::now() - Duration::from_secs(3600);
        for (_, path) in history::files(dir).unwrap() {
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(old).unwrap();
        }
    }

    fn load(dir: &Path) -> (Vec<IterationRecord>, LoadStats) {
        history::load_with_stats(dir, true).unwrap()
    }

    #[test]
    fn a_missing_index_is_rebuilt_and_then_answers_every_record() {
        let dir = archive(40);
        let (first, stats) = load(dir.path());
        assert_eq!(stats.parsed, 41, "{stats:?}");
        assert_eq!(first, history::load_files(dir.path()).unwrap());
        let (second, stats) = load(dir.path());
        assert_eq!(
            stats,
            LoadStats {
                cached: 41,
                ..LoadStats::default()
            }
        );
        assert_eq!(second, first, "the JSON cache reads back the same records");
    }

    #[test]
    fn a_hand_edited_file_is_picked_up() {
        let dir = archive(10);
        load(dir.path());
        let path = history::path_of(dir.path(), 4);
        // Rendered and written around the archive's writer, as an editor
        // would save it.
        let mut rec = history::read(&path).unwrap();
        rec.hypothesis = "a hypothesis edited by hand".into();
        std::fs::write(&path, history::render(&rec, &ctx()).unwrap()).unwrap();
        let (h, stats) = load(dir.path());
        assert_eq!(h[4].hypothesis, "a hypothesis edited by hand");
        assert_eq!((stats.parsed, stats.appended), (1, 1), "{stats:?}");
        // The repair is in the index now.
        let (h, stats) = load(dir.path());
        assert_eq!(h[4].hypothesis, "a hypothesis edited by hand");
        assert_eq!(stats.parsed, 0, "{stats:?}");
    }

    #[test]
    fn an_edit_that_keeps_size_and_time_is_caught_by_the_hash() {
        let dir = tempfile::tempdir().unwrap();
        for rec in crate::archive::history::synthetic::synthetic_history(3, 3) {
            history::write(dir.path(), &rec, &ctx()).unwrap();
        }
        // Just written: inside the racy window, so the hash decides.
        let path = history::path_of(dir.path(), 2);
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let mut rec = history::read(&path).unwrap();
        let edited: String = rec
            .hypothesis
            .chars()
            .map(|c| if c == 'e' { 'E' } else { c })
            .collect();
        assert_ne!(edited, rec.hypothesis);
        rec.hypothesis = edited.clone();
        std::fs::write(&path, history::render(&rec, &ctx()).unwrap()).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(before).unwrap();
        let (h, stats) = load(dir.path());
        assert_eq!(h[2].hypothesis, edited);
        assert_eq!((stats.hashed, stats.parsed), (3, 1), "{stats:?}");
    }

    #[test]
    fn a_damaged_index_costs_a_parse_not_a_record() {
        let dir = archive(12);
        load(dir.path());
        let path = dir.path().join(FILE);
        let text = crate::atomic::read_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[3] = "{not json";
        lines[7] = "";
        let torn = &lines[9][..lines[9].len() / 2].to_string();
        lines[9] = torn;
        // A line that claims another iteration than its record, last, so
        // that no genuine line for that iteration supersedes it.
        let swapped = lines[5].replacen("\"iteration\":5", "\"iteration\":12", 1);
        lines[5] = "";
        lines.remove(12);
        lines.push(&swapped);
        std::fs::write(&path, lines.join("\n")).unwrap();
        let (h, stats) = load(dir.path());
        assert_eq!(h, history::load_files(dir.path()).unwrap());
        // 3, 5, 7 and the torn 9; 12, whose only line is the swapped one.
        assert_eq!(stats.parsed, 5, "{stats:?}");
        let (_, stats) = load(dir.path());
        assert_eq!(stats.parsed, 0, "the repairs were appended: {stats:?}");
    }

    #[test]
    fn a_long_index_decoded_in_parts_answers_as_one_reader_would() {
        // Past the length from which lines are decoded on several threads.
        let dir = archive(700);
        load(dir.path());
        let path = dir.path().join(FILE);
        let text = crate::atomic::read_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines[100] = "{not json".into();
        lines[500] = lines[500][..lines[500].len() / 2].to_string();
        // A later copy of 650's line, damaged: the reader falls back to the
        // earlier one, which still matches the file.
        let late = lines[650][..lines[650].len() - 3].to_string();
        lines.push(late);
        std::fs::write(&path, lines.join("\n")).unwrap();
        let (h, stats) = load(dir.path());
        assert_eq!(h, history::load_files(dir.path()).unwrap());
        assert_eq!(stats.parsed, 2, "{stats:?}");
        assert_eq!(stats.cached, 699, "{stats:?}");
    }

    #[test]
    fn a_reader_without_the_lock_writes_nothing() {
        let dir = archive(6);
        let (h, stats) = history::load_with_stats(dir.path(), false).unwrap();
        assert_eq!((h.len(), stats.parsed, stats.appended), (7, 7, 0));
        assert!(!dir.path().join(FILE).exists());
        history::load_and_repair(dir.path()).unwrap();
        let before = crate::atomic::read_file(dir.path().join(FILE)).unwrap();
        let path = history::path_of(dir.path(), 2);
        let mut rec = history::read(&path).unwrap();
        rec.reason = "edited".into();
        std::fs::write(&path, history::render(&rec, &ctx()).unwrap()).unwrap();
        let (h, stats) = history::load_with_stats(dir.path(), false).unwrap();
        assert_eq!((h[2].reason.as_str(), stats.parsed), ("edited", 1));
        assert_eq!(
            crate::atomic::read_file(dir.path().join(FILE)).unwrap(),
            before
        );
    }

    #[test]
    fn superseded_lines_are_compacted_away() {
        let dir = archive(5);
        load(dir.path());
        // The runner rewrites the last file (a stop written into it) many
        // times: each write appends a line.
        let mut rec = history::read(&history::path_of(dir.path(), 5)).unwrap();
        for i in 0..40 {
            rec.reason = format!("rewritten {i}");
            history::write(dir.path(), &rec, &ctx()).unwrap();
        }
        let (h, stats) = load(dir.path());
        assert_eq!(h[5].reason, "rewritten 39");
        assert!(stats.compacted, "{stats:?}");
        let lines = crate::atomic::read_string(dir.path().join(FILE)).unwrap();
        assert_eq!(lines.lines().count(), 6);
    }

    #[test]
    fn a_line_torn_inside_a_character_costs_that_line_only() {
        let dir = archive(8);
        let mut rec = history::read(&history::path_of(dir.path(), 8)).unwrap();
        rec.reason = "é".repeat(40);
        history::write(dir.path(), &rec, &ctx()).unwrap();
        age_files(dir.path());
        load(dir.path());
        let path = dir.path().join(FILE);
        let mut bytes = crate::atomic::read_file(&path).unwrap();
        // Cut the last line just after the first byte of an é.
        let at = bytes.iter().rposition(|b| *b == 0xc3).unwrap() + 1;
        bytes.truncate(at);
        assert!(std::str::from_utf8(&bytes).is_err());
        std::fs::write(&path, &bytes).unwrap();
        let (h, stats) = load(dir.path());
        assert_eq!(h[8].reason, rec.reason);
        assert_eq!((stats.cached, stats.parsed), (8, 1), "{stats:?}");
        let (_, stats) = load(dir.path());
        assert_eq!(stats.parsed, 0, "{stats:?}");
    }

    #[test]
    fn a_record_json_cannot_carry_is_parsed_not_cached_wrong() {
        let dir = archive(2);
        let mut rec = history::read(&history::path_of(dir.path(), 2)).unwrap();
        rec.cost_usd = f64::INFINITY;
        history::write(dir.path(), &rec, &ctx()).unwrap();
        age_files(dir.path());
        load(dir.path());
        for _ in 0..2 {
            let (h, stats) = load(dir.path());
            assert_eq!(h[2].cost_usd, f64::INFINITY);
            assert_eq!((stats.parsed, stats.appended), (1, 0), "{stats:?}");
        }
    }

    #[test]
    fn a_torn_last_line_does_not_swallow_the_next_append() {
        let dir = archive(3);
        load(dir.path());
        let path = dir.path().join(FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"iteration\":3,\"si").unwrap();
        drop(f);
        let mut rec = history::read(&history::path_of(dir.path(), 3)).unwrap();
        rec.reason = "after the tear".into();
        history::write(dir.path(), &rec, &ctx()).unwrap();
        age_files(dir.path());
        let text = crate::atomic::read_string(&path).unwrap();
        let last: Line = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last.record.reason, "after the tear");
    }
}
