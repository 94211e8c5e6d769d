//! The archive as the runner holds it: a row of facts for every iteration,
//! the newest iterations in full, and the whole history only on demand.
//!
//! A tick used to decode every record of the archive before its first
//! phase, and at 10,000 iterations that (with what was then computed from
//! it) was most of its own time. What a tick reads of old iterations is
//! what they add up to, which the facts table (`facts.rs`) answers with a
//! scan of fixed-width rows; what it shows in full is the newest
//! [`WINDOW`] iterations (the PLAN prompt's few, `summary.md`'s one
//! hundred, the red lights' windows). Those are read from the index's end.
//!
//! The iteration files stay the source of truth. Opening checks the newest
//! files (one `stat` each) and starts a thread that checks the older ones
//! (all of them up to [`CHECKED_PER_OPEN`], else a slice that turns, so
//! that each is checked within a few ticks)
//! while the workspace is prepared; [`History::settle`] waits for it before
//! the first phase reads the history, and a file edited by hand anywhere
//! (or a table or index that does not match) rebuilds both from the files.
//! Readers that need every record in full (a state rebuilt from the
//! archive, the builtin search's surrogate, the judges at the end of a
//! run) ask [`View::all`], which reads them once.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::thread::JoinHandle;

use super::fact::Fact;
use super::ledger::{Ledger, NamedPattern};
use super::{facts, index};
use crate::error::Result;
use crate::model::IterationRecord;

use crate::model::WINDOW;

/// `ledger.json` is written once it lags this many records behind the
/// window (an open folds the few it lacks from the index).
const LEDGER_LAG: usize = 32;

/// How an open went, for tests and the overhead benchmark.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The table and the index matched the files and were used.
    pub from_table: bool,
    /// Rebuilt from the iteration files (missing, stale or edited).
    pub rebuilt: bool,
}

/// The Brief's archive, held by the runner.
pub struct History {
    dir: PathBuf,
    facts: Vec<Fact>,
    /// The newest records: iterations `facts.len() - recent.len()..`.
    recent: Vec<IterationRecord>,
    /// Iteration 0, whatever the window.
    baseline: Option<IterationRecord>,
    /// What the iterations before the window add up to (ledger.rs).
    ledger: Ledger,
    /// The check of the files older than the window, running.
    check: Option<JoinHandle<index::Checked>>,
    /// A check found stale rows and the rebuild has not succeeded yet.
    must_rebuild: bool,
    all: OnceLock<Vec<IterationRecord>>,
    /// The ledger with the window folded on, once asked for (kept up to
    /// date as records are appended).
    folded: OnceLock<Ledger>,
    /// Tokens and cost of every iteration, once asked for (likewise): the
    /// budgets ask before every phase, and a sum over ten thousand rows
    /// is a walk through megabytes.
    spent: OnceLock<(u64, f64)>,
    /// Records folded into the ledger since `ledger.json` was written.
    ledger_lag: usize,
    pub opened: Opened,
}

impl History {
    /// Opens the archive of `dir` under the Brief's lock: from the facts
    /// table when it matches the index and the newest files, else rebuilt
    /// from the iteration files (which also repairs index and table).
    pub fn open(dir: &Path) -> Result<History> {
        if let Some(h) = Self::from_table(dir) {
            return Ok(h);
        }
        Self::rebuild(dir)
    }

    /// Records held in memory, for tests of the window: `records` as if
    /// read from an archive (no files behind them).
    pub fn of(records: Vec<IterationRecord>) -> History {
        let facts = Fact::all_of(&records);
        let first = records.len().saturating_sub(WINDOW);
        let ledger = Ledger::of(&records[..first], &facts);
        let h = History {
            dir: PathBuf::new(),
            facts,
            recent: records[first..].to_vec(),
            baseline: records.first().cloned(),
            ledger,
            check: None,
            must_rebuild: false,
            all: OnceLock::new(),
            folded: OnceLock::new(),
            spent: OnceLock::new(),
            ledger_lag: 0,
            opened: Opened::default(),
        };
        let _ = h.all.set(records);
        h
    }

    fn from_table(dir: &Path) -> Option<History> {
        let table = facts::read(dir)?;
        let index_len = std::fs::metadata(dir.join(index::FILE)).map_or(0, |m| m.len());
        let n = table.rows.len();
        // A file past the table (written by a run the table missed) or a
        // table ahead of the index: rebuild.
        if table.index_len != index_len || super::path_of(dir, n as u32).exists() {
            return None;
        }
        // A row pointing past the index is a damaged table, not a read.
        let inside = |s: &super::fact::Source| {
            s.line_at == u64::MAX
                || s.line_at
                    .checked_add(u64::from(s.line_len))
                    .is_some_and(|end| end <= index_len)
        };
        if !table.rows.iter().all(|f| inside(&f.source)) {
            return None;
        }
        let first = n.saturating_sub(WINDOW);
        let sourced = |f: &Fact| (f.iteration, f.source);
        let wanted: Vec<(u32, super::fact::Source)> = table.rows[..first.min(1)]
            .iter()
            .chain(&table.rows[first..])
            .map(sourced)
            .collect();
        let checked = index::stale(dir, &wanted);
        if !checked.stale.is_empty() {
            return None;
        }
        let mut table = table;
        restamp(dir, &mut table.rows, &checked.settled);
        let mut read: Vec<IterationRecord> = index::read_span(dir, &wanted)
            .into_iter()
            .collect::<Option<Vec<_>>>()?;
        let baseline = if first > 0 {
            Some(read.remove(0))
        } else {
            read.first().cloned()
        };
        let ledger = Self::ledger_from(dir, &table.rows, first)?;
        // The check needs where each file was, not the row.
        // The next open checks the next slice, whether or not this one
        // archives an iteration.
        let older: Vec<(u32, super::fact::Source)> =
            checked_now(table.rows.get(1..first).unwrap_or_default(), table.turn)
                .map(sourced)
                .collect();
        let _ = facts::set_turn(dir, table.turn.wrapping_add(1));
        let check_dir = dir.to_path_buf();
        let check = (!older.is_empty())
            .then(|| std::thread::spawn(move || index::stale(&check_dir, &older)));
        Some(History {
            dir: dir.to_path_buf(),
            facts: table.rows,
            recent: read,
            baseline,
            ledger,
            check,
            must_rebuild: false,
            all: OnceLock::new(),
            folded: OnceLock::new(),
            spent: OnceLock::new(),
            ledger_lag: 0,
            opened: Opened {
                from_table: true,
                rebuilt: false,
            },
        })
    }

    /// The ledger before the window, from `ledger.json` when it covers
    /// them (with the few iterations since folded on), else from the
    /// records; `None` when those cannot be read (the caller rebuilds).
    fn ledger_from(dir: &Path, rows: &[Fact], first: usize) -> Option<Ledger> {
        let mut p = Ledger::read(dir)
            .filter(|p| p.covers() <= first && p.matches(&rows[..p.covers()]))
            .unwrap_or_default();
        // A ledger read from the file covers rows the filter checked.
        if p.covers() == first && first > 0 {
            return Some(p);
        }
        let wanted: Vec<(u32, super::fact::Source)> = rows[p.covers()..first]
            .iter()
            .map(|f| (f.iteration, f.source))
            .collect();
        for r in index::read_span(dir, &wanted) {
            p.fold(&r?);
        }
        p.seal(rows);
        // Written once it lags: folding a few records on open is cheaper
        // than writing the file at every tick.
        if wanted.len() >= LEDGER_LAG {
            p.write(dir);
        }
        Some(p)
    }

    fn rebuild(dir: &Path) -> Result<History> {
        let files = super::files(dir)?;
        let (records, sources, index_len) = index::rebuild(dir, &files)?;
        let facts: Vec<Fact> = records
            .iter()
            .zip(&sources)
            .map(|(r, s)| Fact::of(r, *s))
            .collect();
        // A table that cannot be written costs the next tick a rebuild.
        let _ = facts::write_all(
            dir,
            &facts::Table {
                index_len,
                rows: facts.clone(),
                turn: 0,
            },
        );
        let first = records.len().saturating_sub(WINDOW);
        let recent = records[first..].to_vec();
        let ledger = Ledger::of(&records[..first], &facts);
        ledger.write(dir);
        let all = OnceLock::new();
        let baseline = records.first().cloned();
        let _ = all.set(records);
        Ok(History {
            dir: dir.to_path_buf(),
            facts,
            recent,
            baseline,
            ledger,
            check: None,
            must_rebuild: false,
            all,
            folded: OnceLock::new(),
            spent: OnceLock::new(),
            ledger_lag: 0,
            opened: Opened {
                from_table: false,
                rebuilt: true,
            },
        })
    }

    /// Waits for the check of the older files; when one was edited (or is
    /// gone), reads the archive again from the files. Call before a phase
    /// reads the history; returns whether it was rebuilt. A rebuild that
    /// fails is tried again by the next call (nothing trusts rows that were
    /// found stale).
    pub fn settle(&mut self) -> Result<bool> {
        if self.must_rebuild {
            *self = Self::rebuild(&self.dir)?;
            return Ok(true);
        }
        let Some(check) = self.check.take() else {
            return Ok(false);
        };
        // A check that panicked proved nothing: rebuild.
        match check.join() {
            Ok(c) if c.stale.is_empty() => {
                restamp(&self.dir, &mut self.facts, &c.settled);
                Ok(false)
            }
            _ => {
                self.must_rebuild = true;
                *self = Self::rebuild(&self.dir)?;
                Ok(true)
            }
        }
    }

    /// Archives `rec`, just written to its file with the index line
    /// `source` says (none when the index could not take it): it replaces
    /// iteration `rec.iteration` and any after it.
    pub fn put(&mut self, rec: IterationRecord, source: Option<(super::fact::Source, u64)>) {
        let i = rec.iteration as usize;
        let fact = Fact::of(&rec, source.map(|(s, _)| s).unwrap_or_default());
        // An appended record adds to the sums; one that replaces others
        // makes them be taken again.
        let appended = i == self.facts.len();
        let (folded, spent) = (
            std::mem::take(&mut self.folded).into_inner(),
            std::mem::take(&mut self.spent).into_inner(),
        );
        if appended {
            if let Some(mut l) = folded {
                l.fold(&rec);
                let _ = self.folded.set(l);
            }
            if let Some((t, c)) = spent {
                let _ = self.spent.set((t + fact.tokens, c + fact.cost_usd));
            }
        }
        // Where the window starts, before this record moves it.
        let first = self.first();
        self.facts.truncate(i);
        self.facts.push(fact);
        self.recent
            .truncate(i.saturating_sub(first).min(self.recent.len()));
        if i == 0 {
            self.baseline = Some(rec.clone());
        }
        if let Some(all) = self.all.get_mut() {
            all.truncate(i);
            all.push(rec.clone());
        }
        self.recent.push(rec);
        if self.recent.len() > WINDOW {
            let extra = self.recent.len() - WINDOW;
            for r in self.recent.drain(..extra) {
                self.ledger.fold(&r);
            }
            self.ledger.seal(&self.facts);
            self.ledger_lag += extra;
            if self.ledger_lag >= LEDGER_LAG && !self.dir.as_os_str().is_empty() {
                self.ledger.write(&self.dir);
                self.ledger_lag = 0;
            }
        }
        // Without a line, or when the table cannot take the row, the next
        // open finds the table behind the files and rebuilds it.
        if let Some((_, index_len)) = source {
            let _ = facts::put(&self.dir, &fact, index_len);
        }
    }

    /// The iteration of the first record held in full.
    fn first(&self) -> usize {
        self.facts.len() - self.recent.len()
    }

    pub fn view(&self) -> View<'_> {
        View {
            h: self,
            upto: self.facts.len(),
        }
    }

    pub fn len(&self) -> usize {
        self.facts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    pub fn last(&self) -> Option<&IterationRecord> {
        self.recent.last()
    }

    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every record in full (read once, on the first call).
    pub fn all(&self) -> Result<&[IterationRecord]> {
        self.view().all()
    }
}

/// At most this many files older than the window are checked per open.
/// A `stat` of ten thousand files was the largest cost a tick had left at
/// that length; a hand edit of an old file is rare, and a bounded delay in
/// seeing it keeps the tick flat.
pub(crate) const CHECKED_PER_OPEN: usize = 1024;

/// The rows of `older` whose files the open numbered `turn` checks: all of
/// them up to [`CHECKED_PER_OPEN`], else every k-th (k the fewest slices
/// of at most that many: 10 at 10,000 iterations), the slice turning with
/// each open (`facts.bin` counts them), so that each file is checked
/// within k opens (within about 2k when k grows by one, every 1,024
/// iterations).
fn checked_now(older: &[Fact], turn: u64) -> impl Iterator<Item = &Fact> {
    let k = older.len().div_ceil(CHECKED_PER_OPEN).max(1);
    let turn = (turn % k as u64) as usize;
    older
        .iter()
        .filter(move |f| f.iteration as usize % k == turn)
}

/// Moves the rows whose racy files were hashed and found unchanged out of
/// the racy window, in memory and in `facts.bin` (else every later open
/// would hash them again).
fn restamp(dir: &Path, rows: &mut [Fact], settled: &[(u32, u64)]) {
    if settled.is_empty() {
        return;
    }
    for &(i, taken) in settled {
        if let Some(f) = rows.get_mut(i as usize) {
            f.source.taken_ns = taken;
        }
    }
    let _ = facts::restamp(dir, settled);
}

/// The archive up to an iteration: what a phase of that iteration sees.
#[derive(Clone, Copy)]
pub struct View<'a> {
    h: &'a History,
    upto: usize,
}

impl<'a> View<'a> {
    /// The archive before iteration `i`.
    pub fn before(self, i: usize) -> View<'a> {
        View {
            h: self.h,
            upto: self.upto.min(i),
        }
    }

    /// `iterations/<brief>` (empty for records held in memory only).
    pub fn dir(self) -> &'a Path {
        &self.h.dir
    }

    /// How many iterations (the baseline included).
    pub fn len(self) -> usize {
        self.upto
    }

    pub fn is_empty(self) -> bool {
        self.upto == 0
    }

    /// A row per iteration.
    pub fn facts(self) -> &'a [Fact] {
        &self.h.facts[..self.upto]
    }

    /// The newest iterations in full (at most [`WINDOW`], all of them in a
    /// short archive), oldest first.
    pub fn recent(self) -> &'a [IterationRecord] {
        let first = self.h.first();
        &self.h.recent[..self.upto.saturating_sub(first).min(self.h.recent.len())]
    }

    /// Whether [`View::recent`] holds every iteration.
    pub fn whole(self) -> bool {
        self.h.first() == 0
    }

    pub fn baseline(self) -> Option<&'a IterationRecord> {
        self.h.baseline.as_ref().filter(|_| self.upto > 0)
    }

    pub fn last(self) -> Option<&'a IterationRecord> {
        self.recent().last()
    }

    /// Iteration `i`'s record when it is held (the baseline or the window).
    pub fn get(self, i: usize) -> Option<&'a IterationRecord> {
        if i >= self.upto {
            return None;
        }
        if i == 0 {
            return self.baseline();
        }
        self.recent().get(i.checked_sub(self.h.first())?)
    }

    /// Iteration `i`'s record, read from the index (or its file) when it is
    /// older than the window.
    pub fn record(self, i: usize) -> Result<Cow<'a, IterationRecord>> {
        if let Some(r) = self.get(i) {
            return Ok(Cow::Borrowed(r));
        }
        if let Some(r) = self.h.all.get().and_then(|all| all.get(i)) {
            return Ok(Cow::Borrowed(r));
        }
        let fact = &self.h.facts[i];
        if self.h.dir.as_os_str().is_empty() {
            return Err(crate::error::Error::Internal(format!(
                "iteration {i} is not held in memory"
            )));
        }
        if let Some(Some(r)) = index::read_span(&self.h.dir, &[(fact.iteration, fact.source)]).pop()
        {
            return Ok(Cow::Owned(r));
        }
        super::read(&super::path_of(&self.h.dir, fact.iteration)).map(Cow::Owned)
    }

    /// The records of iterations `its`, those not held read with one read
    /// of the index.
    pub fn records(self, its: &[u32]) -> Result<Vec<Cow<'a, IterationRecord>>> {
        let missing: Vec<(u32, super::fact::Source)> = its
            .iter()
            .filter(|&&i| self.get(i as usize).is_none())
            .map(|&i| (i, self.h.facts[i as usize].source))
            .collect();
        // Records held in memory only (`History::of`) have no files to read.
        let mut read = if self.h.dir.as_os_str().is_empty() {
            Vec::new().into_iter()
        } else {
            index::read_span(&self.h.dir, &missing).into_iter()
        };
        its.iter()
            .map(|&i| match self.get(i as usize) {
                Some(r) => Ok(Cow::Borrowed(r)),
                None => match read.next().flatten() {
                    Some(r) => Ok(Cow::Owned(r)),
                    None => self.record(i as usize),
                },
            })
            .collect()
    }

    /// Every named pattern, newest first, one per name (case-insensitive).
    pub fn patterns(self) -> Result<Vec<NamedPattern>> {
        Ok(self.ledger()?.entries())
    }

    /// What every iteration adds up to (patterns, the agents' usage): the
    /// ledger of those before the window with the window folded on.
    pub fn ledger(self) -> Result<Cow<'a, Ledger>> {
        if self.upto == self.h.len() {
            if self.h.folded.get().is_none() {
                let l = self.ledger_folded()?;
                let _ = self.h.folded.set(l);
            }
            if let Some(l) = self.h.folded.get() {
                return Ok(Cow::Borrowed(l));
            }
        }
        Ok(Cow::Owned(self.ledger_folded()?))
    }

    fn ledger_folded(self) -> Result<Ledger> {
        let first = self.h.first();
        let mut p = if self.upto < first {
            Ledger::default()
        } else {
            self.h.ledger.clone()
        };
        let records = if self.upto < first {
            self.all()?
        } else {
            self.recent()
        };
        for r in records {
            p.fold(r);
        }
        Ok(p)
    }

    /// Every record in full, iteration 0 first (read once per process).
    pub fn all(self) -> Result<&'a [IterationRecord]> {
        if self.whole() {
            return Ok(self.recent());
        }
        if self.h.all.get().is_none() {
            let wanted: Vec<(u32, super::fact::Source)> = self
                .h
                .facts
                .iter()
                .map(|f| (f.iteration, f.source))
                .collect();
            let read: Option<Vec<IterationRecord>> =
                index::read_span(&self.h.dir, &wanted).into_iter().collect();
            let records = match read {
                Some(r) => r,
                None => super::load(&self.h.dir)?,
            };
            let _ = self.h.all.set(records);
        }
        let all = self.h.all.get().map_or(&[][..], Vec::as_slice);
        Ok(&all[..self.upto.min(all.len())])
    }
}

/// The queries reports, prompts and decisions share (history/mod.rs has them
/// over a slice of records), answered from the rows and the few records
/// they point to.
impl<'a> View<'a> {
    /// The records of the rows with `bit` set, newest first.
    pub fn flagged(self, bit: u32) -> impl Iterator<Item = Result<Cow<'a, IterationRecord>>> + 'a {
        self.facts()
            .iter()
            .rev()
            .filter(move |f| f.has(bit))
            .map(move |f| self.record(f.iteration as usize))
    }

    /// The baseline's median, when it was measured.
    pub fn baseline_value(self) -> Option<f64> {
        self.baseline()
            .and_then(|r| r.calibration.as_ref())
            .map(|c| c.median)
    }

    /// The best known value: the last keep's candidate median, else the
    /// baseline's.
    pub fn best_value(self) -> f64 {
        self.facts()
            .iter()
            .rev()
            .find(|f| f.is(crate::model::Verdict::Keep))
            .and_then(Fact::measured)
            .map(|m| m.cand_median)
            .or_else(|| self.baseline_value())
            .unwrap_or(f64::NAN)
    }

    /// [`super::best_of`]: the keep that made `best_commit`, else the
    /// baseline.
    pub fn best_of(self, best_commit: &str) -> (Option<u32>, f64) {
        let h = super::fact::hash(best_commit.as_bytes());
        self.facts()
            .iter()
            .rev()
            .find(|f| f.is(crate::model::Verdict::Keep) && f.commit == h)
            .and_then(|f| f.measured().map(|m| (Some(f.iteration), m.cand_median)))
            .unwrap_or_else(|| (None, self.baseline_value().unwrap_or(f64::NAN)))
    }

    /// [`super::confirmation_of`]: the latest confirmation of `best_commit`.
    pub fn confirmation_of(
        self,
        best_commit: &str,
    ) -> Result<Option<(u32, crate::model::Confirmation)>> {
        for r in self.flagged(super::fact::flag::CONFIRMATION) {
            let r = r?;
            if let Some(c) = r.confirmation.as_ref().filter(|c| c.best == best_commit) {
                return Ok(Some((r.iteration, c.clone())));
            }
        }
        Ok(None)
    }

    /// [`super::latest_confirmation`].
    pub fn latest_confirmation(self) -> Result<Option<(u32, crate::model::Confirmation)>> {
        for r in self.flagged(super::fact::flag::CONFIRMATION) {
            let r = r?;
            if let Some(c) = &r.confirmation {
                return Ok(Some((r.iteration, c.clone())));
            }
        }
        Ok(None)
    }

    /// The best commit of the latest confirmation that found a real gain.
    pub fn last_confirmed_commit(self) -> Result<Option<String>> {
        for r in self.flagged(super::fact::flag::CONFIRMATION) {
            if let Some(c) = r?.confirmation.as_ref().filter(|c| c.ci.0 > 0.0) {
                return Ok(Some(c.best.clone()));
            }
        }
        Ok(None)
    }

    /// Tokens and dollars spent by the archived iterations.
    pub fn spent(self) -> (u64, f64) {
        let sum = |facts: &[Fact]| {
            facts
                .iter()
                .fold((0, 0.0), |(t, c), f| (t + f.tokens, c + f.cost_usd))
        };
        if self.upto == self.h.len() {
            return *self.h.spent.get_or_init(|| sum(self.facts()));
        }
        sum(self.facts())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::history::index::tests::ctx;
    use crate::archive::history::{self, fact};

    /// An archive of `n` synthetic iterations written by the archive's
    /// writer, and its records.
    fn archive(n: u32) -> (tempfile::TempDir, Vec<IterationRecord>) {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<IterationRecord> =
            crate::archive::history::synthetic::synthetic_history(n, 5)
                .iter()
                .map(|r| history::write(dir.path(), r, &ctx()).unwrap())
                .collect();
        (dir, records)
    }

    /// Rewrites iteration `i`'s file with another hypothesis, as a person
    /// editing it would (a later modification time, other bytes).
    fn edit(dir: &Path, i: u32, hypothesis: &str) {
        let path = history::path_of(dir, i);
        let text = crate::atomic::read_string(&path).unwrap();
        // The front matter's `hypothesis:` (a folded block: its value is
        // the indented lines after it).
        let mut out = Vec::new();
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.next() {
            if l.starts_with("hypothesis:") {
                out.push(format!("hypothesis: {hypothesis}"));
                while lines.peek().is_some_and(|n| n.starts_with("  ")) {
                    lines.next();
                }
            } else {
                out.push(l.to_string());
            }
        }
        std::fs::write(&path, out.join("\n") + "\n").unwrap();
        assert_eq!(history::read(&path).unwrap().hypothesis, hypothesis);
    }

    #[test]
    fn the_table_is_built_once_then_used_with_the_window_read_in_full() {
        let (dir, records) = archive(300);
        let h = History::open(dir.path()).unwrap();
        assert!(h.opened.rebuilt, "no table yet");
        assert_eq!(h.len(), 301);
        let mut h = History::open(dir.path()).unwrap();
        assert!(h.opened.from_table);
        assert!(!h.settle().unwrap(), "nothing was edited");
        let v = h.view();
        assert_eq!(v.recent().len(), WINDOW);
        assert_eq!(v.recent()[0].iteration as usize, 301 - WINDOW);
        assert!(!v.whole());
        assert_eq!(v.baseline(), Some(&records[0]));
        assert_eq!(v.get(20), None, "outside the window");
        assert_eq!(&*v.record(20).unwrap(), &records[20]);
        assert_eq!(v.all().unwrap(), &records[..]);
        assert_eq!(v.before(100).all().unwrap(), &records[..100]);
    }

    #[test]
    fn a_hand_edit_of_an_old_file_is_picked_up_by_settle() {
        let (dir, _) = archive(300);
        History::open(dir.path()).unwrap();
        edit(dir.path(), 7, "an edited hypothesis about the cache");
        let mut h = History::open(dir.path()).unwrap();
        // Outside the window: found by the check beside the first phases.
        assert!(h.opened.from_table);
        assert!(h.settle().unwrap());
        let r = h.view().record(7).unwrap();
        assert_eq!(r.hypothesis, "an edited hypothesis about the cache");
        let expected = fact::hash(
            crate::model::normalize_text("an edited hypothesis about the cache").as_bytes(),
        );
        assert_eq!(h.facts()[7].hypothesis, expected);
        // And the rebuilt table is used from then on.
        let mut again = History::open(dir.path()).unwrap();
        assert!(again.opened.from_table);
        assert!(!again.settle().unwrap());
        assert_eq!(again.facts()[7].hypothesis, expected);
    }

    #[test]
    fn racy_rows_whose_files_hash_right_are_stamped_once() {
        let (dir, _) = archive(300);
        // Files from an hour ago, rows taken right after each write (as
        // `index::append` takes them): racy, so each open hashed them.
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for i in 0..=300 {
            let f = std::fs::File::options()
                .write(true)
                .open(history::path_of(dir.path(), i))
                .unwrap();
            f.set_modified(hour_ago).unwrap();
        }
        let h = History::open(dir.path()).unwrap();
        assert!(h.opened.rebuilt);
        let racy: Vec<(u32, u64)> = h
            .facts()
            .iter()
            .map(|f| (f.iteration, f.source.mtime_ns + 1_000_000_000))
            .collect();
        facts::restamp(dir.path(), &racy).unwrap();
        let mut h = History::open(dir.path()).unwrap();
        assert!(h.opened.from_table, "hashed and found unchanged");
        assert!(!h.settle().unwrap());
        let is_racy = |f: &Fact| f.source.mtime_ns + index::RACY_NS >= f.source.taken_ns;
        assert!(!h.facts().iter().any(is_racy), "re-stamped in memory");
        let t = facts::read(dir.path()).unwrap();
        assert!(!t.rows.iter().any(is_racy), "and in facts.bin");
    }

    #[test]
    fn a_hand_edit_of_a_new_file_rebuilds_at_open() {
        let (dir, _) = archive(300);
        History::open(dir.path()).unwrap();
        edit(dir.path(), 290, "a newer edited hypothesis");
        let h = History::open(dir.path()).unwrap();
        assert!(h.opened.rebuilt);
        assert_eq!(
            h.view().get(290).unwrap().hypothesis,
            "a newer edited hypothesis"
        );
    }

    #[test]
    fn a_missing_damaged_or_stale_table_is_rebuilt() {
        let (dir, records) = archive(40);
        History::open(dir.path()).unwrap();
        let table = dir.path().join(facts::FILE);
        // Damaged.
        let bytes = crate::atomic::read_file(&table).unwrap();
        std::fs::write(&table, &bytes[..bytes.len() - 7]).unwrap();
        let h = History::open(dir.path()).unwrap();
        assert!(h.opened.rebuilt);
        assert_eq!(h.view().all().unwrap(), &records[..]);
        // Behind the index (a line appended after the table was written).
        let index = dir.path().join(index::FILE);
        let mut text = crate::atomic::read_string(&index).unwrap();
        text.push_str("{\"iteration\":3,\"torn\n");
        std::fs::write(&index, text).unwrap();
        assert!(History::open(dir.path()).unwrap().opened.rebuilt);
        // Missing.
        std::fs::remove_file(&table).unwrap();
        assert!(History::open(dir.path()).unwrap().opened.rebuilt);
        // A file beyond the table.
        let mut next = records[40].clone();
        next.iteration = 41;
        history::write(dir.path(), &next, &ctx()).unwrap();
        let h = History::open(dir.path()).unwrap();
        assert!(h.opened.rebuilt);
        assert_eq!(h.len(), 42);
    }

    #[test]
    fn put_keeps_the_table_in_step_with_the_files() {
        let (dir, records) = archive(280);
        let mut h = History::open(dir.path()).unwrap();
        let mut next = records[280].clone();
        next.iteration = 281;
        next.hypothesis = "the newest idea".into();
        let (written, source) = history::write_sourced(dir.path(), &next, &ctx()).unwrap();
        h.put(written.clone(), source);
        assert_eq!(h.len(), 282);
        assert_eq!(h.view().recent().len(), WINDOW);
        assert_eq!(h.last(), Some(&written));
        let again = History::open(dir.path()).unwrap();
        assert!(again.opened.from_table);
        assert_eq!(again.view().last(), Some(&written));
        // The ledger moved with the window: the same as one built whole.
        let whole = History::of(again.view().all().unwrap().to_vec());
        assert_eq!(
            again.view().patterns().unwrap(),
            whole.view().patterns().unwrap()
        );
    }

    #[test]
    fn put_appends_and_a_rewrite_replaces_the_last_record() {
        let records = crate::archive::history::synthetic::synthetic_history(5, 3);
        let mut h = History::of(records[..5].to_vec());
        h.put(records[5].clone(), None);
        assert_eq!(h.view().recent(), &records[..]);
        let mut amended = records[5].clone();
        amended.reason = "amended".into();
        h.put(amended.clone(), None);
        assert_eq!(h.len(), 6);
        assert_eq!(h.view().recent().len(), 6);
        assert_eq!(h.last(), Some(&amended));
        assert_eq!(h.view().all().unwrap()[5], amended);
    }

    #[test]
    fn every_older_file_is_checked_within_a_few_opens_and_each_open_checks_few() {
        let rows = |n: u32| -> Vec<Fact> {
            (1..n)
                .map(|i| Fact {
                    iteration: i,
                    ..Fact::default()
                })
                .collect()
        };
        // Few: all of them, at every open.
        let few = rows(900);
        assert_eq!(checked_now(&few, 1000).count(), few.len());
        assert_eq!(checked_now(&few, 1001).count(), few.len());
        // Many: at most CHECKED_PER_OPEN at a time, and every one of them
        // within k consecutive opens.
        let many = rows(9_872);
        let k = many.len().div_ceil(CHECKED_PER_OPEN);
        assert_eq!(k, 10);
        let mut seen = vec![0; 9_872];
        for turn in 10_000..10_000 + k as u64 {
            let now: Vec<u32> = checked_now(&many, turn).map(|f| f.iteration).collect();
            assert!(now.len() <= CHECKED_PER_OPEN, "{}", now.len());
            for i in now {
                seen[i as usize] += 1;
            }
        }
        assert!(seen[1..].iter().all(|&c| c == 1));
    }

    #[test]
    fn each_open_turns_the_slice_and_an_append_keeps_the_count() {
        let (dir, records) = archive(280);
        let turn = || facts::read(dir.path()).unwrap().turn;
        // The first open builds the table; the next ones are counted.
        assert!(History::open(dir.path()).unwrap().opened.rebuilt);
        let before = turn();
        let mut h = History::open(dir.path()).unwrap();
        assert!(h.opened.from_table);
        assert_eq!(turn(), before + 1);
        let mut next = records[280].clone();
        next.iteration = 281;
        let (written, source) = history::write_sourced(dir.path(), &next, &ctx()).unwrap();
        h.put(written, source);
        assert_eq!(turn(), before + 1);
        let again = History::open(dir.path()).unwrap();
        assert!(again.opened.from_table);
        assert_eq!(turn(), before + 2);
    }

    #[test]
    fn the_sums_kept_on_put_are_the_sums_taken_whole() {
        let records = crate::archive::history::synthetic::synthetic_history(300, 5);
        let whole = |upto: usize| History::of(records[..upto].to_vec());
        let sums = |h: &History| {
            let v = h.view();
            (
                v.spent(),
                v.patterns().unwrap(),
                v.ledger().unwrap().all_usage(),
            )
        };
        let mut h = whole(280);
        // Asked for before the appends, so that the appends keep them.
        let _ = sums(&h);
        for r in &records[280..290] {
            h.put(r.clone(), None);
        }
        assert_eq!(sums(&h), sums(&whole(290)));
        // A rewrite of an earlier iteration takes them again.
        let mut amended = records[285].clone();
        amended.tokens += 1_000;
        h.put(amended.clone(), None);
        let mut expected = records[..285].to_vec();
        expected.push(amended);
        assert_eq!(sums(&h), sums(&History::of(expected)));
    }

    #[test]
    fn the_falsified_texts_come_from_falsified_md_when_its_lines_hash_right() {
        let (dir, records) = archive(300);
        let h = History::open(dir.path()).unwrap();
        crate::archive::falsified::sync_falsified(dir.path(), "b", h.view(), true).unwrap();
        let direct = crate::archive::falsified::falsified_entries(&records);
        let check = |h: &History| {
            let listed = crate::archive::falsified::falsified_in(h.view(), usize::MAX).unwrap();
            assert_eq!(listed.entries.len(), direct.len());
            for (a, b) in listed.entries.iter().zip(&direct) {
                assert_eq!((&a.ids, &a.text, &a.axis), (&b.ids, &b.text, &b.axis));
            }
        };
        check(&h);
        // A line edited in the derived file is not believed.
        let path = dir.path().join(crate::archive::falsified::FALSIFIED_FILE);
        let first = direct[0].ids[0];
        let text = crate::atomic::read_string(&path).unwrap();
        let forged: String = text
            .lines()
            .map(|l| {
                if l.starts_with(&format!("- {first} (")) {
                    let (head, _) = l.split_once("): ").unwrap();
                    format!("{head}): a forged text\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        assert_ne!(forged, text);
        std::fs::write(&path, forged).unwrap();
        check(&h);
    }

    /// What the window and the rows answer is what the whole history says.
    #[test]
    fn the_window_answers_as_the_whole_history() {
        let records = crate::archive::history::synthetic::synthetic_history(700, 11);
        let h = History::of(records.clone());
        let v = h.view();
        assert!(!v.whole());
        assert_eq!(
            v.patterns().unwrap(),
            crate::driver::agent::prompt::pattern_entries(&records)
        );
        let tokens: u64 = records.iter().map(|r| r.tokens).sum();
        assert_eq!(v.spent().0, tokens);
        let last_keep = records
            .iter()
            .rev()
            .find(|r| r.verdict == crate::model::Verdict::Keep)
            .and_then(|r| r.measured.as_ref().map(|m| m.cand_median));
        assert_eq!(
            v.best_value(),
            last_keep.or(history::baseline_value(&records)).unwrap()
        );
        let best = records
            .iter()
            .rev()
            .find_map(|r| r.commit.clone())
            .unwrap_or_default();
        assert_eq!(v.best_of(&best), history::best_of(&records, &best));
        assert_eq!(
            crate::model::Orientation::of_view(v, 0.01, 0.05, 24),
            crate::model::Orientation::of(&records, 0.01, 0.05, 24)
        );
        assert_eq!(
            crate::subagents::analyzer::analyze_in(v, 0.02).unwrap(),
            crate::subagents::analyze(&records, 0.02)
        );
        let listed = crate::archive::falsified::falsified_in(v, usize::MAX).unwrap();
        let direct = crate::archive::falsified::falsified_entries(&records);
        assert!(listed.texts);
        assert_eq!(listed.entries.len(), direct.len());
        for (a, b) in listed.entries.iter().zip(&direct) {
            assert_eq!((&a.ids, &a.text, &a.axis), (&b.ids, &b.text, &b.axis));
        }
    }
}
