//! `falsified.md`: every direction the night measured and found wanting,
//! so nobody tries it again.
//!
//! The list is a projection of the archive: an iteration whose discard
//! falsified its prediction adds one line, oldest first, so the file grows
//! by appending and a kill between two writes is repaired by the next sync
//! ([`sync_falsified`]). The PLAN prompt shows the same list within its
//! budget, one entry per hypothesis, folded by direction when even the
//! shortest texts do not fit, and points to the file for the rest.

use std::collections::BTreeMap;

use crate::archive::history::fact::flag;
use crate::archive::history::{IterationRecord, View};
use crate::error::Result;
use crate::text::clip::{chars, clip};
use crate::text::compress::bound;

/// A falsified hypothesis and the iterations that falsified it.
#[derive(Debug, Clone, PartialEq)]
pub struct Falsified {
    pub ids: Vec<u32>,
    pub text: String,
    /// The direction it tried (`TILE up`), from its first iteration's axes.
    pub axis: String,
}

/// Every falsified hypothesis, oldest first, the same text once: the LEARN
/// statement of what was falsified, else a discarded plan's hypothesis.
pub fn falsified_entries(history: &[IterationRecord]) -> Vec<Falsified> {
    let mut out: Vec<Falsified> = Vec::new();
    // Hashed: the order is `out`'s, and string compares in a tree were a
    // tenth of the PLAN prompt at 10,000 iterations.
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for r in history.iter().filter(|r| r.iteration > 0) {
        // Only a worse or futile discard is falsified, whatever its LEARN said.
        let Some(text) = crate::archive::history::fact::entry_text(r) else {
            continue;
        };
        let key = text.to_lowercase();
        match index.get(&key) {
            Some(&i) => out[i].ids.push(r.iteration),
            None => {
                index.insert(key, out.len());
                out.push(Falsified {
                    ids: vec![r.iteration],
                    text,
                    axis: r.axis_label(),
                });
            }
        }
    }
    out
}

/// The falsified list of an archive held as a window: the entries grouped
/// by their text's hash, with their texts read only when the list could be
/// shown one by one within `max_chars` (past that it is folded by
/// direction, which needs only the rows).
pub fn falsified_in(v: View, max_chars: usize) -> Result<FalsifiedList> {
    let mut entries: Vec<Falsified> = Vec::new();
    let mut keys: std::collections::HashMap<u64, usize, Prehashed> =
        std::collections::HashMap::with_hasher(Prehashed);
    for f in v
        .facts()
        .iter()
        .filter(|f| f.iteration > 0 && f.has(flag::ENTRY))
    {
        match keys.get(&f.entry) {
            Some(&i) => entries[i].ids.push(f.iteration),
            None => {
                keys.insert(f.entry, entries.len());
                entries.push(Falsified {
                    ids: vec![f.iteration],
                    text: String::new(),
                    axis: f.axis.to_string(),
                });
            }
        }
    }
    // Each line shown takes its ids, ": " and at least one character (the
    // ids' length by arithmetic: thousands of them are only counted).
    let least: usize = entries.iter().map(|e| ids_len(&e.ids) + 4).sum();
    if least > max_chars {
        return Ok(FalsifiedList {
            entries,
            texts: false,
        });
    }
    // The texts from `falsified.md`, whose lines the runner appends, when
    // a line's text hashes to its row's (it is a derived file: a line that
    // does not, or a text a newline was taken out of, is read from its
    // record instead).
    let listed = if v.dir().as_os_str().is_empty() {
        Default::default()
    } else {
        falsified_lines(&v.dir().join(FALSIFIED_FILE))
    };
    let facts = v.facts();
    let mut unread = Vec::new();
    for (k, e) in entries.iter_mut().enumerate() {
        let first = e.ids[0];
        match listed.get(&first) {
            Some((axis, text))
                if crate::archive::history::fact::hash(text.to_lowercase().as_bytes())
                    == facts[first as usize].entry =>
            {
                e.text.clone_from(text);
                e.axis.clone_from(axis);
            }
            _ => unread.push(k),
        }
    }
    let firsts: Vec<u32> = unread.iter().map(|&k| entries[k].ids[0]).collect();
    for (&k, r) in unread.iter().zip(v.records(&firsts)?) {
        let e = &mut entries[k];
        e.text = crate::archive::history::fact::entry_text(&r).unwrap_or_default();
        if !r.axes.is_empty() {
            e.axis = r.axis_label();
        }
    }
    Ok(FalsifiedList {
        entries,
        texts: true,
    })
}

/// The lines of a `falsified.md` by iteration: (direction, text).
fn falsified_lines(path: &std::path::Path) -> std::collections::HashMap<u32, (String, String)> {
    let text = crate::atomic::read_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- ")?;
            let (n, rest) = rest.split_once(" (")?;
            let (axis, text) = rest.split_once("): ")?;
            Some((n.parse().ok()?, (axis.to_string(), text.to_string())))
        })
        .collect()
}

/// A map keyed by the rows' hashes (FNV-1a of the text) needs no second
/// hash: at ten thousand iterations SipHash was a good part of the list's
/// cost at every PLAN.
#[derive(Clone, Copy, Default)]
struct Prehashed;

impl std::hash::BuildHasher for Prehashed {
    type Hasher = PrehashedKey;
    fn build_hasher(&self) -> PrehashedKey {
        PrehashedKey(0)
    }
}

struct PrehashedKey(u64);

impl std::hash::Hasher for PrehashedKey {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; any other key is folded in.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Falsified entries, with their texts or (too many to list) without.
pub struct FalsifiedList {
    pub entries: Vec<Falsified>,
    /// Whether the texts were read (else only the folded list can be shown).
    pub texts: bool,
}

impl FalsifiedList {
    pub fn count(&self) -> usize {
        self.entries.len()
    }
}

/// The length of [`ids_text`] of `ids`.
pub fn ids_len(ids: &[u32]) -> usize {
    let digits = |n: u32| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    ids.iter().map(|&n| digits(n)).sum::<usize>() + 2 * ids.len().saturating_sub(1)
}

pub fn ids_text(ids: &[u32]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Shortest width a falsified hypothesis is cut to before giving up on text.
pub const MIN_FALSIFIED_WIDTH: usize = 8;

/// The falsified list within `allot` characters: every entry stays, with its
/// text shortened to the widest width that fits. Returns the width used when
/// texts were shortened.
pub fn falsified_text(list: &FalsifiedList, allot: usize, dir: &str) -> (String, Option<usize>) {
    let entries = &list.entries;
    if entries.is_empty() {
        return ("None yet.".into(), None);
    }
    if !list.texts {
        return (folded_falsified(entries, allot, dir), Some(0));
    }
    let line = |f: &Falsified, w: usize| format!("{}: {}\n", ids_text(&f.ids), clip(&f.text, w));
    // Line lengths by arithmetic: `clip` to w keeps min(len, w) characters
    // (w - 1 plus an ellipsis), so the search below costs no formatting.
    let sizes: Vec<(usize, usize)> = entries
        .iter()
        .map(|f| (chars(&ids_text(&f.ids)) + 3, chars(&f.text)))
        .collect();
    let total = |w: usize| sizes.iter().map(|(o, n)| o + (*n).min(w)).sum::<usize>();
    let longest = sizes.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let note = |w: usize| {
        format!(
            "(Each shortened to {w} characters to fit the prompt; the iteration files have the full text.)\n"
        )
    };
    if total(longest) <= allot {
        let s: String = entries.iter().map(|f| line(f, longest)).collect();
        return (s.trim_end().to_string(), None);
    }
    // Widest width whose list plus note fits (total is monotone in the width).
    let fits = |w: usize| total(w) + chars(&note(w)) <= allot;
    let (mut lo, mut hi) = (MIN_FALSIFIED_WIDTH, longest);
    if !fits(lo) {
        // Not even short texts fit (thousands of them): every direction is
        // still listed, folded with its count, and the complete list is a
        // file the agent is told to read.
        return (folded_falsified(entries, allot, dir), Some(0));
    }
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut s = note(lo);
    for f in entries {
        s.push_str(&line(f, lo));
    }
    (s.trim_end().to_string(), Some(lo))
}

/// The falsified list folded by direction: one line per axis with how many
/// hypotheses and which iterations, newest kept when even that is long, and
/// where the complete list is.
pub fn folded_falsified(entries: &[Falsified], allot: usize, dir: &str) -> String {
    let mut by: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for f in entries {
        by.entry(f.axis.as_str())
            .or_default()
            .extend(f.ids.iter().copied());
    }
    let mut s = format!(
        "{} falsified hypotheses, too many to show one by one; the complete list, one line per falsifying iteration, is in {dir}/{FALSIFIED_FILE} (read it before proposing). By direction:\n",
        entries.len()
    );
    let head = chars(&s);
    let per = allot.saturating_sub(head) / by.len().max(1);
    for (axis, ids) in &by {
        let (first, last) = (ids.iter().min(), ids.iter().max());
        let line = format!(
            "- {axis}: {} falsified (iterations {}–{}; latest {})\n",
            ids.len(),
            first.copied().unwrap_or(0),
            last.copied().unwrap_or(0),
            ids_text(&ids[ids.len().saturating_sub(5)..])
        );
        s.push_str(&bound(&line, per.max(24)));
    }
    bound(s.trim_end(), allot)
}

/// Where the complete falsified list is written beside the archive.
pub const FALSIFIED_FILE: &str = super::layout::Layout::FALSIFIED;

/// Writes `dir/falsified.md` for `history` whole (a replay for the archive
/// it shows; the runner keeps its own up to date with [`sync_falsified`]).
pub fn write_falsified(
    dir: &std::path::Path,
    brief: &str,
    history: &[IterationRecord],
) -> crate::error::Result<()> {
    crate::atomic::write_atomic(
        &super::layout::Layout::of(dir).falsified(),
        falsified_file(brief, history).as_bytes(),
    )
}

/// The complete falsified list as `falsified.md` holds it: what a PLAN
/// prompt points to when the list is too long to show. One line per
/// falsifying iteration, oldest first, so each iteration adds a line and
/// the file grows by appending.
pub fn falsified_file(brief: &str, history: &[IterationRecord]) -> String {
    let mut s = falsified_header(brief);
    let lines: Vec<String> = history.iter().filter_map(falsified_line).collect();
    if lines.is_empty() {
        s.push_str(NONE_YET);
    }
    for l in lines {
        s.push_str(&l);
    }
    s
}

const NONE_YET: &str = "None yet.\n";

fn falsified_header(brief: &str) -> String {
    format!(
        "# Falsified hypotheses of {brief}\n\nEvery hypothesis a measurement ruled out (worse, or unable to reach θ₁), oldest first: one line per iteration that falsified it, with the direction it tried (the same hypothesis falsified twice has two lines). Kept up to date after every iteration.\n\n"
    )
}

/// `falsified.md`'s line for `r`, when it falsified something.
fn falsified_line(r: &IterationRecord) -> Option<String> {
    let text = crate::archive::history::fact::entry_text(r).filter(|_| r.iteration > 0)?;
    let axis = r.axis_label();
    Some(format!(
        "- {} ({axis}): {}\n",
        r.iteration,
        text.replace('\n', " ")
    ))
}

/// Brings `dir/falsified.md` up to `history`: the lines of the iterations
/// after the last one it lists are appended when the runner holds them,
/// and the file is written whole when it is missing, ends elsewhere than
/// the archive says, or `whole` asks (the archive was read again from its
/// files).
pub fn sync_falsified(
    dir: &std::path::Path,
    brief: &str,
    history: View,
    whole: bool,
) -> crate::error::Result<()> {
    let path = super::layout::Layout::of(dir).falsified();
    let entries: Vec<u32> = history
        .facts()
        .iter()
        .filter(|f| f.iteration > 0 && f.has(flag::ENTRY))
        .map(|f| f.iteration)
        .collect();
    let tail = if whole { None } else { file_tail(&path) };
    // The last line must be what its row says (a derived file may be
    // edited, or left from before a rebuild): else it is written whole.
    let listed = tail.as_deref().map(last_listed).map(|l| match l {
        Listed::Iteration(i)
            if !tail.as_deref().and_then(last_text).is_some_and(|t| {
                history.facts().get(i as usize).is_some_and(|f| {
                    crate::archive::history::fact::hash(t.to_lowercase().as_bytes()) == f.entry
                })
            }) =>
        {
            Listed::Unknown
        }
        other => other,
    });
    let append: Option<Vec<u32>> = match listed {
        // Up to date.
        Some(Listed::Iteration(l)) if entries.last() == Some(&l) => Some(Vec::new()),
        Some(Listed::Nothing) if entries.is_empty() => Some(Vec::new()),
        // Lines to add after the last listed, when it is still an entry.
        Some(Listed::Iteration(l)) if entries.contains(&l) => Some(
            entries
                .iter()
                .copied()
                .filter(|&i| i > l)
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    if let Some(add) = append.filter(|a| a.iter().all(|&i| history.get(i as usize).is_some())) {
        if add.is_empty() {
            return Ok(());
        }
        let text: String = add
            .iter()
            .filter_map(|&i| history.get(i as usize).and_then(falsified_line))
            .collect();
        use std::io::Write as _;
        return std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| crate::error::Error::io(format!("appending to {}", path.display()), e));
    }
    crate::atomic::write_atomic(&path, falsified_file(brief, history.all()?).as_bytes())
}

/// What the end of `falsified.md` says it lists last.
enum Listed {
    Iteration(u32),
    Nothing,
    Unknown,
}

fn last_listed(tail: &str) -> Listed {
    if tail.ends_with(NONE_YET) {
        return Listed::Nothing;
    }
    let Some(last) = tail.strip_suffix('\n').and_then(|t| t.rsplit('\n').next()) else {
        return Listed::Unknown;
    };
    last.strip_prefix("- ")
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .map_or(Listed::Unknown, Listed::Iteration)
}

/// The text of the last line of a `falsified.md` tail.
fn last_text(tail: &str) -> Option<&str> {
    let last = tail.strip_suffix('\n')?.rsplit('\n').next()?;
    Some(last.split_once("): ")?.1)
}

/// The last few kilobytes of a file (its last lines), if it can be read.
fn file_tail(path: &std::path::Path) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut f = crate::atomic::open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(8 * 1024);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).ok()?;
    // A cut inside a character at the start costs nothing: only the last
    // line is read.
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
