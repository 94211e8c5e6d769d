//! What the timed runs write in their worktrees.
//!
//! A benchmark run that leaves its answer in a git-ignored `build/` for the
//! next run to read measures the cache, not the program: a candidate whose
//! code does that, and the base's does not, wins by it. The scope check
//! never sees it (ignored files are not the change), so each timed run is
//! bracketed by a look at every file of its worktree (metadata only;
//! ignored folders included, `.git` not). What a run wrote is recorded;
//! what an earlier run of the same side wrote and a later one found in
//! place is *carried*, which the reviewer flags for the candidate when no
//! base run wrote the same file; and with `metric.fresh_outputs` what a
//! run created is removed after it, so no run can read what another left.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::model::RunWrites;

/// Past this many files a worktree is not watched (a look would cost more
/// than the run); the iteration then records nothing.
const MAX_FILES: usize = 200_000;

/// size, modification time (ns), inode.
type Stat = (u64, i128, u64);

#[derive(Default)]
struct Side {
    written: BTreeSet<String>,
    /// Written by a run, and not there before it.
    created: BTreeSet<String>,
    carried: BTreeSet<String>,
    /// The worktree as the last run of the side left it: the next run's
    /// look before, unless another command ran there since ([`Writes::forget`]).
    last: Option<BTreeMap<String, Stat>>,
}

/// The timed runs' writes so far, by side (`base`, `cand`, …).
#[derive(Default)]
pub(crate) struct Writes {
    sides: BTreeMap<&'static str, Side>,
    /// A worktree was too big to watch.
    gave_up: bool,
    removed: bool,
}

/// A worktree as it was before one run.
pub(crate) struct Before(Option<BTreeMap<String, Stat>>);

impl Writes {
    /// The look before a run of `side` in `dir`: notes what earlier runs
    /// of the side wrote that this one will find.
    pub(crate) fn before(&mut self, side: &'static str, dir: &Path) -> Before {
        if self.gave_up {
            return Before(None);
        }
        let s = self.sides.entry(side).or_default();
        let snap = match s.last.take() {
            Some(last) => Some(last),
            None => snapshot(dir),
        };
        if snap.is_none() {
            self.gave_up = true;
        }
        if let Some(now) = &snap {
            let found: Vec<String> = s
                .created
                .iter()
                .filter(|p| now.contains_key(*p))
                .cloned()
                .collect();
            s.carried.extend(found);
        }
        Before(snap)
    }

    /// The look after the run: what it wrote; with `fresh`, what it
    /// created is removed.
    pub(crate) fn after(
        &mut self,
        side: &'static str,
        dir: &Path,
        before: Before,
        fresh: bool,
    ) -> std::io::Result<()> {
        let Some(before) = before.0 else {
            return Ok(());
        };
        let Some(mut now) = snapshot(dir) else {
            self.gave_up = true;
            return Ok(());
        };
        let s = self.sides.entry(side).or_default();
        let mut gone = Vec::new();
        for (p, stat) in &now {
            if before.get(p) == Some(stat) {
                continue;
            }
            s.written.insert(p.clone());
            if !before.contains_key(p) {
                s.created.insert(p.clone());
                // Best effort: a file the run made unremovable is still
                // named (carried) if a later run finds it.
                if fresh && std::fs::remove_file(dir.join(p)).is_ok() {
                    self.removed = true;
                    gone.push(p.clone());
                }
            }
        }
        for p in gone {
            now.remove(&p);
        }
        s.last = Some(now);
        Ok(())
    }

    /// Another command (setup, a guard) ran in `side`'s worktree: the next
    /// run's look before is taken afresh.
    pub(crate) fn forget(&mut self, side: &'static str) {
        if let Some(s) = self.sides.get_mut(side) {
            s.last = None;
        }
    }

    /// What to record, `None` when no run wrote anything (or a worktree
    /// was too big to watch).
    pub(crate) fn summary(&self) -> Option<RunWrites> {
        if self.gave_up {
            return Some(RunWrites {
                unwatched: true,
                ..RunWrites::default()
            });
        }
        let empty = Side::default();
        let base = self.sides.get("base").unwrap_or(&empty);
        let cand = self.sides.get("cand").unwrap_or(&empty);
        let list = |set: &BTreeSet<String>| set.iter().take(RunWrites::SHOWN).cloned().collect();
        // A build output the base has too (a binary the metric's `make`
        // rebuilt, a `.pyc`) is no cache of results: only a file the
        // candidate's runs made, which the base's worktree has not at all.
        let carried: BTreeSet<String> = cand
            .carried
            .iter()
            .filter(|p| {
                !base.written.contains(*p)
                    && !base.last.as_ref().is_some_and(|l| l.contains_key(*p))
                    && !crate::workspace::is_cache_file(p)
            })
            .cloned()
            .collect();
        let out = RunWrites {
            base: list(&base.written),
            cand: list(&cand.written),
            carried: list(&carried),
            removed: self.removed,
            unwatched: false,
        };
        (out != RunWrites::default()).then_some(out)
    }
}

/// Every file below `dir` but `.git` at its top, with what a write changes;
/// `None` past [`MAX_FILES`].
fn snapshot(dir: &Path) -> Option<BTreeMap<String, Stat>> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if d == dir && e.file_name() == ".git" {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                stack.push(p);
                continue;
            }
            let Some(rel) = p.strip_prefix(dir).ok().and_then(|r| r.to_str()) else {
                continue;
            };
            let ns = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
            out.insert(rel.to_string(), (m.size(), ns, m.ino()));
            if out.len() > MAX_FILES {
                return None;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_a_candidate_run_leaves_for_the_next_is_carried() {
        let base = tempfile::tempdir().unwrap();
        let cand = tempfile::tempdir().unwrap();
        let mut w = Writes::default();
        for run in 0..3 {
            // Both sides write a results file each run; only the candidate
            // keeps a cache it reads from the second run on.
            let b = w.before("base", base.path());
            std::fs::write(base.path().join("results.txt"), format!("{run}")).unwrap();
            w.after("base", base.path(), b, false).unwrap();
            let c = w.before("cand", cand.path());
            std::fs::create_dir_all(cand.path().join("build")).unwrap();
            std::fs::write(cand.path().join("results.txt"), format!("{run}")).unwrap();
            if run == 0 {
                std::fs::write(cand.path().join("build/answer"), "42").unwrap();
            }
            w.after("cand", cand.path(), c, false).unwrap();
        }
        let s = w.summary().unwrap();
        assert_eq!(s.carried, ["build/answer"]);
        assert_eq!(s.cand, ["build/answer", "results.txt"]);
        assert_eq!(s.base, ["results.txt"]);

        // A build the metric's `make` redoes on the candidate's first run,
        // a bytecode cache: the base has them too, so neither is a cache
        // of results.
        let base = tempfile::tempdir().unwrap();
        let cand = tempfile::tempdir().unwrap();
        for d in [base.path(), cand.path()] {
            std::fs::create_dir_all(d.join("target")).unwrap();
            std::fs::write(d.join("target/bench"), "old").unwrap();
        }
        let mut w = Writes::default();
        for run in 0..3 {
            let b = w.before("base", base.path());
            w.after("base", base.path(), b, false).unwrap();
            let c = w.before("cand", cand.path());
            if run == 0 {
                std::fs::remove_file(cand.path().join("target/bench")).unwrap();
                std::fs::write(cand.path().join("target/bench"), "new").unwrap();
                std::fs::create_dir_all(cand.path().join("__pycache__")).unwrap();
                std::fs::write(cand.path().join("__pycache__/m.pyc"), "x").unwrap();
            }
            w.after("cand", cand.path(), c, false).unwrap();
        }
        let s = w.summary().unwrap();
        assert!(s.carried.is_empty(), "{s:?}");

        // Fresh outputs: what a run created is gone before the next.
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writes::default();
        for _ in 0..2 {
            let b = w.before("cand", dir.path());
            if !dir.path().join("cache").exists() {
                std::fs::write(dir.path().join("cache"), "x").unwrap();
            }
            w.after("cand", dir.path(), b, true).unwrap();
        }
        assert!(!dir.path().join("cache").exists());
        let s = w.summary().unwrap();
        assert!(s.carried.is_empty() && s.removed, "{s:?}");
    }
}
