//! `iterations/<brief>/facts.bin`: one [`Fact`] row per iteration, the
//! table a tick scans instead of decoding every record.
//!
//! Fixed-width little-endian rows after a 32-byte header, so reading 10,000
//! of them is one read and a loop, and appending one is one write at a
//! known offset. The header records the length of `index.jsonl` the rows
//! were taken with: only the holder of the Brief's lock writes either file,
//! and always the index first, so a table whose recorded length is not the
//! index's (a kill between the two writes, a repair, a compaction, a table
//! from another release) is stale and rebuilt from the iteration files.
//! Nothing depends on the table being there; git-ignored like the index.

use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use super::fact::{AXIS_BYTES, Axis, Fact, Source};
use crate::error::{Error, Result};
use crate::model::{DiscardKind, Verdict};

/// The table's file name, beside the iteration files (git-ignored).
pub(crate) const FILE: &str = crate::archive::layout::Layout::FACTS;

const MAGIC: &[u8; 8] = b"oodafct2";
const HEADER: usize = 32;
/// Bytes per row (see [`encode`]).
pub(crate) const ROW: usize = 280;

/// The table as read: its rows and the index length they match.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Table {
    pub index_len: u64,
    pub rows: Vec<Fact>,
    /// How many opens have checked a slice of the older files: which slice
    /// the next one checks (`view.rs`). Kept in the header's last 8 bytes.
    pub turn: u64,
}

/// Where the header keeps [`Table::turn`].
const TURN_AT: usize = 24;

pub(crate) fn path(dir: &Path) -> PathBuf {
    crate::archive::layout::Layout::of(dir).facts()
}

/// The table of `dir`, or `None` when it is missing, damaged or of
/// another layout (the caller rebuilds it).
pub(crate) fn read(dir: &Path) -> Option<Table> {
    // Read through a small buffer: the table is megabytes at 10,000
    // iterations, and a buffer that size costs more in fresh pages than
    // the decoding does.
    let file = crate::atomic::open_regular(path(dir)).ok()?;
    let len = file.metadata().ok()?.len() as usize;
    let mut r = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut head = [0u8; HEADER];
    r.read_exact(&mut head).ok()?;
    if &head[..8] != MAGIC || u32_at(&head, 8) as usize != ROW {
        return None;
    }
    let count = u32_at(&head, 12) as usize;
    let index_len = u64_at(&head, 16);
    let turn = u64_at(&head, TURN_AT);
    if len < HEADER + count * ROW {
        return None;
    }
    let mut rows = Vec::with_capacity(count);
    let mut row = [0u8; ROW];
    for _ in 0..count {
        r.read_exact(&mut row).ok()?;
        rows.push(decode(&row)?);
    }
    // Row i is iteration i: anything else is a damaged table.
    rows.iter()
        .enumerate()
        .all(|(i, f)| f.iteration as usize == i)
        .then_some(Table {
            index_len,
            rows,
            turn,
        })
}

/// Writes the whole table (atomically).
pub(crate) fn write_all(dir: &Path, table: &Table) -> Result<()> {
    let mut bytes = header(table.rows.len(), table.index_len, table.turn);
    for f in &table.rows {
        bytes.extend_from_slice(&encode(f));
    }
    crate::atomic::write_atomic(&path(dir), &bytes)
}

/// Puts `row` at its iteration (dropping the rows after it, which a
/// rewritten record supersedes) and records `index_len`: the row first,
/// the header last, so a kill in between leaves a header that no longer
/// matches the index and the table is rebuilt.
pub(crate) fn put(dir: &Path, row: &Fact, index_len: u64) -> Result<()> {
    let p = path(dir);
    let io = |e| Error::io(format!("writing {}", p.display()), e);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .map_err(io)?;
    let mut head = [0u8; HEADER];
    f.read_exact(&mut head).map_err(io)?;
    let count = u32_at(&head, 12) as usize;
    let at = row.iteration as usize;
    if &head[..8] != MAGIC || at > count {
        return Err(Error::Internal(format!(
            "{} does not hold the rows before iteration {at}",
            p.display()
        )));
    }
    f.set_len((HEADER + at * ROW) as u64).map_err(io)?;
    f.seek(SeekFrom::Start((HEADER + at * ROW) as u64))
        .map_err(io)?;
    f.write_all(&encode(row)).map_err(io)?;
    f.seek(SeekFrom::Start(0)).map_err(io)?;
    f.write_all(&header(at + 1, index_len, u64_at(&head, TURN_AT)))
        .map_err(io)
}

/// Where a row keeps its source's `taken_ns` (see [`encode`]).
const TAKEN_AT: usize = 200;

/// Records that the rows of these iterations were checked at these times
/// (their files hashed and found unchanged): written in place, one field
/// per row. A failure costs the next check the same hashes.
pub(crate) fn restamp(dir: &Path, rows: &[(u32, u64)]) -> Result<()> {
    write_at(
        dir,
        rows.iter()
            .map(|&(i, taken)| ((HEADER + i as usize * ROW + TAKEN_AT) as u64, taken)),
    )
}

/// Writes each `(offset, value)` of `values` in place, skipping offsets past
/// the end of the table (a row it no longer has).
fn write_at(dir: &Path, values: impl IntoIterator<Item = (u64, u64)>) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let p = path(dir);
    let io = |e| Error::io(format!("writing {}", p.display()), e);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    for (at, value) in values {
        if at + 8 <= len {
            f.write_all_at(&value.to_le_bytes(), at).map_err(io)?;
        }
    }
    Ok(())
}

fn header(count: usize, index_len: u64, turn: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&(ROW as u32).to_le_bytes());
    h.extend_from_slice(&(count as u32).to_le_bytes());
    h.extend_from_slice(&index_len.to_le_bytes());
    h.extend_from_slice(&turn.to_le_bytes());
    h.resize(HEADER, 0);
    h
}

/// Records [`Table::turn`] in place. A failure only repeats a slice.
pub(crate) fn set_turn(dir: &Path, turn: u64) -> Result<()> {
    write_at(dir, [(TURN_AT as u64, turn)])
}

fn verdict_code(v: Option<Verdict>) -> u8 {
    match v {
        None => 0,
        Some(Verdict::Baseline) => 1,
        Some(Verdict::Keep) => 2,
        Some(Verdict::Discard) => 3,
        Some(Verdict::Crash) => 4,
        Some(Verdict::Invalid) => 5,
        Some(Verdict::Blocked) => 6,
    }
}

fn verdict_of(c: u8) -> Option<Option<Verdict>> {
    Some(match c {
        0 => None,
        1 => Some(Verdict::Baseline),
        2 => Some(Verdict::Keep),
        3 => Some(Verdict::Discard),
        4 => Some(Verdict::Crash),
        5 => Some(Verdict::Invalid),
        6 => Some(Verdict::Blocked),
        _ => return None,
    })
}

fn discard_code(d: Option<DiscardKind>) -> u8 {
    match d {
        None => 0,
        Some(DiscardKind::Worse) => 1,
        Some(DiscardKind::Futile) => 2,
        Some(DiscardKind::Inconclusive) => 3,
        Some(DiscardKind::Screened) => 4,
        Some(DiscardKind::BlockedByReview) => 5,
        Some(DiscardKind::Neutral) => 6,
    }
}

fn discard_of(c: u8) -> Option<Option<DiscardKind>> {
    Some(match c {
        0 => None,
        1 => Some(DiscardKind::Worse),
        2 => Some(DiscardKind::Futile),
        3 => Some(DiscardKind::Inconclusive),
        4 => Some(DiscardKind::Screened),
        5 => Some(DiscardKind::BlockedByReview),
        6 => Some(DiscardKind::Neutral),
        _ => return None,
    })
}

/// The row's bytes: the small fields, twelve numbers, seven hashes, two
/// times, the source, then the axis label (length, bytes), zero-padded.
fn encode(f: &Fact) -> [u8; ROW] {
    let mut b = [0u8; ROW];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        b[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&f.iteration.to_le_bytes());
    put(&[verdict_code(f.verdict), discard_code(f.discard), 0, 0]);
    put(&f.flags.to_le_bytes());
    put(&f.pairs.to_le_bytes());
    put(&f.tokens.to_le_bytes());
    for x in [
        f.cost_usd,
        f.cand_median,
        f.base_median,
        f.effect,
        f.ci.0,
        f.ci.1,
        f.calibration_median,
        f.calibration_sd,
        f.predicted,
        f.noise_ss,
        f.noise_df,
    ] {
        put(&x.to_le_bytes());
    }
    for h in [
        f.hypothesis,
        f.falsified,
        f.entry,
        f.knobs,
        f.tree,
        f.commit,
        f.rollback_to,
    ] {
        put(&h.to_le_bytes());
    }
    put(&f.started.to_le_bytes());
    put(&f.finished.to_le_bytes());
    let s = &f.source;
    for x in [s.size, s.mtime_ns, s.taken_ns, s.hash, s.line_at] {
        put(&x.to_le_bytes());
    }
    put(&s.line_len.to_le_bytes());
    let axis = f.axis.as_str().as_bytes();
    put(&[axis.len() as u8]);
    put(axis);
    b
}

fn decode(b: &[u8]) -> Option<Fact> {
    let mut at = 0;
    let mut take = |n: usize| {
        let s = &b[at..at + n];
        at += n;
        s
    };
    let iteration = u32_at(take(4), 0);
    let codes = take(4);
    let (verdict, discard) = (verdict_of(codes[0])?, discard_of(codes[1])?);
    let flags = u32_at(take(4), 0);
    let pairs = u32_at(take(4), 0);
    let tokens = u64_at(take(8), 0);
    let mut num = || f64::from_le_bytes(take(8).try_into().unwrap_or_default());
    let [
        cost_usd,
        cand_median,
        base_median,
        effect,
        ci0,
        ci1,
        cmed,
        csd,
        predicted,
        nss,
        ndf,
    ] = std::array::from_fn(|_| num());
    let mut h = || u64_at(take(8), 0);
    let [
        hypothesis,
        falsified,
        entry,
        knobs,
        tree,
        commit,
        rollback_to,
    ] = std::array::from_fn(|_| h());
    let started = u64_at(take(8), 0) as i64;
    let finished = u64_at(take(8), 0) as i64;
    let [size, mtime_ns, taken_ns, hash, line_at] = std::array::from_fn(|_| u64_at(take(8), 0));
    let line_len = u32_at(take(4), 0);
    let axis_len = take(1)[0] as usize;
    if axis_len > AXIS_BYTES {
        return None;
    }
    let axis = Axis::from_bytes(take(axis_len))?;
    Some(Fact {
        iteration,
        verdict,
        discard,
        flags,
        tokens,
        cost_usd,
        cand_median,
        base_median,
        effect,
        ci: (ci0, ci1),
        pairs,
        calibration_median: cmed,
        calibration_sd: csd,
        predicted,
        noise_ss: nss,
        noise_df: ndf,
        hypothesis,
        falsified,
        entry,
        knobs,
        tree,
        commit,
        rollback_to,
        axis,
        started,
        finished,
        source: Source {
            size,
            mtime_ns,
            taken_ns,
            hash,
            line_at,
            line_len,
        },
    })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: u32) -> Vec<Fact> {
        crate::archive::history::synthetic::synthetic_history(n, 3)
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Fact::of(
                    r,
                    Source {
                        size: 100 + i as u64,
                        mtime_ns: 7,
                        taken_ns: 9,
                        hash: 11,
                        line_at: 13 * i as u64,
                        line_len: 12,
                    },
                )
            })
            .collect()
    }

    /// A table of `rows` written to `dir` (an index of one byte).
    fn written(dir: &Path, rows: Vec<Fact>) {
        let table = Table {
            index_len: 1,
            rows,
            turn: 0,
        };
        write_all(dir, &table).unwrap();
    }

    /// NaN is not equal to itself: compare rows by their bytes.
    fn same(a: &[Fact], b: &[Fact]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| encode(x) == encode(y))
    }

    #[test]
    fn rows_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let table = Table {
            index_len: 4242,
            rows: rows(40),
            turn: 0,
        };
        write_all(dir.path(), &table).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back.index_len, 4242);
        assert!(same(&back.rows, &table.rows));
        let row = &back.rows[7];
        assert_eq!(decode(&encode(row)).unwrap().axis, row.axis);
    }

    #[test]
    fn put_appends_or_supersedes_and_moves_the_index_length() {
        let dir = tempfile::tempdir().unwrap();
        let all = rows(10);
        written(dir.path(), all[..5].to_vec());
        put(dir.path(), &all[5], 2).unwrap();
        let t = read(dir.path()).unwrap();
        assert_eq!((t.index_len, t.rows.len()), (2, 6));
        // Rewriting iteration 3 drops 4 and 5.
        put(dir.path(), &all[3], 3).unwrap();
        let t = read(dir.path()).unwrap();
        assert_eq!((t.index_len, t.rows.len()), (3, 4));
        assert!(same(&t.rows, &all[..4]));
        // A gap is refused.
        assert!(put(dir.path(), &all[9], 4).is_err());
    }

    #[test]
    fn restamp_moves_only_the_time_a_row_was_checked() {
        let dir = tempfile::tempdir().unwrap();
        let all = rows(5);
        written(dir.path(), all.clone());
        restamp(dir.path(), &[(2, 4242), (9, 1)]).unwrap();
        let t = read(dir.path()).unwrap();
        let mut want = all.clone();
        want[2].source.taken_ns = 4242;
        assert!(same(&t.rows, &want));
    }

    #[test]
    fn a_damaged_table_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        written(dir.path(), rows(3));
        let p = path(dir.path());
        let mut bytes = crate::atomic::read_file(&p).unwrap();
        bytes.truncate(bytes.len() - 10);
        std::fs::write(&p, &bytes).unwrap();
        assert!(read(dir.path()).is_none());
        std::fs::write(&p, b"not a table").unwrap();
        assert!(read(dir.path()).is_none());
    }
}
