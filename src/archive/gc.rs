//! What a long-running Brief piles up, and what may go.
//!
//! The archive itself (iteration files, summary, falsified.md) is the
//! record and is never pruned, and neither is the event log (sealed and
//! compressed, `events/segments.rs`). Three things grow without telling
//! anyone and can be given back:
//!
//! - **build outputs in the worktrees**: git-ignored files (a `target/`,
//!   a `node_modules/`) kept so rebuilds stay incremental; removing them
//!   costs one slower build, and the base's setup runs again;
//! - **artifacts of discarded iterations** (the diff, prompts and agent
//!   output of a falsified idea) beyond `defaults.keep_artifacts`: the
//!   iteration file still says what was tried and why it was not kept;
//!   the artifacts of kept iterations and of the baseline stay;
//! - **stale replays**: every replay of an iteration but its latest, down
//!   to its `replay.json` (the committed part).
//!
//! Sizes are what the files hold on disk (allocated blocks), so a sparse
//! file or a hard link is not counted as more than it takes.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::archive::history::fact::Fact;
use crate::archive::history::{self, Verdict};
use crate::error::{Error, Result};
use crate::workspace::Workspace;

/// One kind of thing pruned, and what it gave back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Freed {
    /// `worktree_outputs`, `artifacts` or `replays`.
    pub what: &'static str,
    /// Files and folders removed (a folder counts once).
    pub paths: usize,
    pub bytes: u64,
    /// What they were, for a person: "cand 1.2 GB, base 800 MB",
    /// "iterations 3–812", "4 replays of iterations 7, 9".
    pub detail: String,
}

/// Bytes `path` takes on disk, with everything under it (symlinks not
/// followed, each inode counted once).
pub fn disk_bytes(path: &Path) -> u64 {
    let mut seen = HashSet::new();
    walk_bytes(path, &mut seen)
}

fn walk_bytes(path: &Path, seen: &mut HashSet<(u64, u64)>) -> u64 {
    let Ok(m) = fs::symlink_metadata(path) else {
        return 0;
    };
    if m.nlink() > 1 && !m.is_dir() && !seen.insert((m.dev(), m.ino())) {
        return 0;
    }
    let mut bytes = m.blocks() * 512;
    if m.is_dir()
        && let Ok(entries) = fs::read_dir(path)
    {
        for e in entries.flatten() {
            bytes += walk_bytes(&e.path(), seen);
        }
    }
    bytes
}

/// The artifacts of iterations `from..=latest - keep` that were not kept
/// (nor the baseline): their diff and their folder, where present.
pub(crate) fn old_artifacts(dir: &Path, history: &[Fact], keep: u32, from: u32) -> Vec<PathBuf> {
    let Some(latest) = history.last().map(|r| r.iteration) else {
        return Vec::new();
    };
    let Some(last) = latest.checked_sub(keep) else {
        return Vec::new();
    };
    let artifacts = super::layout::Layout::of(dir).artifacts();
    let mut out = Vec::new();
    for r in history {
        if r.iteration < from || r.iteration > last {
            continue;
        }
        if r.is(Verdict::Keep) || r.is(Verdict::Baseline) {
            continue;
        }
        let stem = history::file_name(r.iteration);
        let stem = stem.trim_end_matches(".md");
        for p in [artifacts.join(format!("{stem}.diff")), artifacts.join(stem)] {
            if fs::symlink_metadata(&p).is_ok() {
                out.push(p);
            }
        }
    }
    out
}

/// Every file of a replay other than its `replay.json`, for the replays
/// that are not the latest of their iteration.
pub(crate) fn stale_replays(dir: &Path) -> Result<(Vec<PathBuf>, Vec<u32>)> {
    let replays = super::layout::Layout::of(dir).replays();
    let Ok(entries) = fs::read_dir(&replays) else {
        return Ok((Vec::new(), Vec::new()));
    };
    // `iter-NNN-<time>`: the time sorts as text.
    let mut by_iteration: BTreeMap<u32, Vec<PathBuf>> = BTreeMap::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(n) = name
            .strip_prefix("iter-")
            .and_then(|r| r.split('-').next())
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if e.path().is_dir() {
            by_iteration.entry(n).or_default().push(e.path());
        }
    }
    let mut out = Vec::new();
    let mut iterations = Vec::new();
    for (n, mut folders) in by_iteration {
        folders.sort();
        folders.pop();
        for f in folders {
            let inside =
                fs::read_dir(&f).map_err(|e| Error::io(format!("listing {}", f.display()), e))?;
            let mut any = false;
            for e in inside.flatten() {
                if e.file_name() != "replay.json" {
                    out.push(e.path());
                    any = true;
                }
            }
            if any && iterations.last() != Some(&n) {
                iterations.push(n);
            }
        }
    }
    Ok((out, iterations))
}

/// A worktree's name and its build outputs.
pub(crate) type Outputs = (String, Vec<PathBuf>);

/// The git-ignored files and folders (build outputs) of each of the
/// Brief's worktrees, by worktree name, listed by
/// [`Workspace::ignored_outputs`] (which never lists ooda's own files nor
/// anything outside the worktree). `cand` is left out while an iteration
/// is in flight: it holds the candidate. A folder that is not a worktree
/// git knows of is named in the second list and left alone.
pub(crate) fn worktree_outputs(
    ws: &Workspace,
    in_flight: bool,
) -> Result<(Vec<Outputs>, Vec<String>)> {
    let Ok(entries) = fs::read_dir(&ws.dir) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let (mut out, mut unknown) = (Vec::new(), Vec::new());
    for name in names {
        if in_flight && name == "cand" {
            continue;
        }
        match ws.ignored_outputs(&name) {
            Ok(paths) if paths.is_empty() => {}
            Ok(paths) => out.push((name, paths)),
            Err(_) => unknown.push(name),
        }
    }
    Ok((out, unknown))
}

/// Removes `paths` (files or folders); returns the bytes they took.
pub(crate) fn remove(paths: &[PathBuf]) -> Result<u64> {
    let mut bytes = 0;
    for p in paths {
        bytes += disk_bytes(p);
        let m = match fs::symlink_metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(format!("reading {}", p.display()), e)),
        };
        let gone = if m.is_dir() {
            fs::remove_dir_all(p)
        } else {
            fs::remove_file(p)
        };
        gone.map_err(|e| Error::io(format!("removing {}", p.display()), e))?;
    }
    Ok(bytes)
}

/// `defaults.keep_artifacts` as each tick applies it: the artifacts of the
/// few iterations that just passed out of the retention window (a window
/// lowered since, or artifacts older still, are for `ooda gc`). Cheap:
/// it looks at no more than 16 iterations.
pub(crate) fn apply_retention(dir: &Path, history: &[Fact], keep: Option<u32>) -> Result<u64> {
    let (Some(keep), Some(latest)) = (keep, history.last().map(|r| r.iteration)) else {
        return Ok(0);
    };
    let from = latest.saturating_sub(keep).saturating_sub(15);
    let tail = &history[history.len().saturating_sub(keep as usize + 16)..];
    remove(&old_artifacts(dir, tail, keep, from))
}

/// A byte count for a person: `512 B`, `4.0 KB`, `1.2 MB`, `3.4 GB`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Runs of consecutive numbers, for a person: `3–5, 9, 12–40`.
pub(crate) fn ranges(numbers: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let start = numbers[i];
        let mut end = start;
        while i + 1 < numbers.len() && numbers[i + 1] == end + 1 {
            i += 1;
            end = numbers[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}–{end}")
        });
        i += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::IterationRecord;

    fn record(iteration: u32, verdict: Verdict) -> IterationRecord {
        IterationRecord::new(iteration, verdict)
    }

    fn touch(p: &Path, bytes: usize) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, vec![b'x'; bytes]).unwrap();
    }

    #[test]
    fn artifacts_beyond_the_retention_go_except_keeps_and_the_baseline() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("artifacts");
        let verdicts = [
            Verdict::Baseline,
            Verdict::Discard,
            Verdict::Keep,
            Verdict::Crash,
            Verdict::Discard,
            Verdict::Discard,
        ];
        let history: Vec<Fact> = verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| Fact::of(&record(i as u32, *v), Default::default()))
            .collect();
        for i in 0..6 {
            touch(&a.join(format!("iter-{i:03}/plan.prompt.md")), 10);
            touch(&a.join(format!("iter-{i:03}.diff")), 10);
        }
        // Keep the last 2 (4 and 5): 1 and 3 go, 0 (baseline) and 2 (kept) stay.
        let old = old_artifacts(dir.path(), &history, 2, 0);
        assert_eq!(
            old,
            vec![
                a.join("iter-001.diff"),
                a.join("iter-001"),
                a.join("iter-003.diff"),
                a.join("iter-003"),
            ]
        );
        assert!(remove(&old).unwrap() > 0);
        for gone in ["iter-001", "iter-001.diff", "iter-003", "iter-003.diff"] {
            assert!(!a.join(gone).exists(), "{gone}");
        }
        for kept in ["iter-000", "iter-002", "iter-004.diff", "iter-005"] {
            assert!(a.join(kept).exists(), "{kept}");
        }
        assert!(old_artifacts(dir.path(), &history, 2, 0).is_empty());
        assert!(old_artifacts(dir.path(), &history, 10, 0).is_empty());
    }

    #[test]
    fn a_tick_prunes_the_iterations_that_just_left_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("artifacts");
        let history: Vec<Fact> = (0..40)
            .map(|i| {
                let v = if i == 0 {
                    Verdict::Baseline
                } else {
                    Verdict::Discard
                };
                Fact::of(&record(i, v), Default::default())
            })
            .collect();
        for i in 0..40 {
            touch(&a.join(format!("iter-{i:03}.diff")), 10);
        }
        // Latest 39, keep 10: 29 and before are out; a tick looks back 16.
        assert!(apply_retention(dir.path(), &history, Some(10)).unwrap() > 0);
        assert!(a.join("iter-013.diff").exists());
        assert!(!a.join("iter-014.diff").exists());
        assert!(!a.join("iter-029.diff").exists());
        assert!(a.join("iter-030.diff").exists());
        assert_eq!(apply_retention(dir.path(), &history, None).unwrap(), 0);
    }

    #[test]
    fn only_the_latest_replay_of_an_iteration_stays_whole() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path().join("replays");
        for name in [
            "iter-007-20261201T010000",
            "iter-007-20261202T010000",
            "iter-009-20261201T010000",
        ] {
            touch(&r.join(name).join("replay.json"), 5);
            touch(&r.join(name).join("events.jsonl"), 50);
            touch(&r.join(name).join("artifacts/iter-007/plan.prompt.md"), 50);
        }
        let (stale, iterations) = stale_replays(dir.path()).unwrap();
        let old = r.join("iter-007-20261201T010000");
        let mut stale = stale;
        stale.sort();
        assert_eq!(stale, vec![old.join("artifacts"), old.join("events.jsonl")]);
        assert_eq!(iterations, vec![7]);
    }

    #[test]
    fn numbers_read_as_a_person_would_write_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1_234_567), "1.2 MB");
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1–3, 5, 7–8");
        assert_eq!(ranges(&[]), "");
    }
}
