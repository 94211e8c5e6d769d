//! The fence around an agent: what it must not touch while it runs in the
//! candidate worktree, checked by content after each step.
//!
//! Sandboxed CLIs cannot write outside their worktree, but a script can, and
//! a changed base would corrupt the measurement while a changed checkout
//! breaks the promise that it is never modified. The fence snapshots the
//! user's checkout (ooda's own `iterations/`, `.ooda/`, notes and stdout or
//! stderr file aside, and `briefs/`, which humans may edit at any time), the
//! base worktree, and the Brief's archive, and names every path that differs
//! afterwards. Whose each change is, the agent's or the environment's, is
//! decided by what the agent could write (`reach.rs`).

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

mod dir_watch;
mod reach;

use dir_watch::DirWatch;
pub(crate) use reach::Reach;

use crate::error::{IoContext, Result};
use crate::text::clip::clip;

/// A snapshot of the work trees an agent must not touch while it runs in the
/// candidate: the user's checkout (ooda's own `iterations/` and `.ooda/`
/// aside) and the base worktree. Sandboxed CLIs cannot write there, but a
/// script can, and a changed base would corrupt the measurement while a
/// changed checkout breaks the promise that it is never modified.
pub(crate) struct Fence {
    trees: Vec<Watched>,
    /// What the agent could write outside its worktree: a change it could
    /// not have made is the environment's.
    reach: Reach,
    /// The Brief's archive (`iter-*.md`, `index.jsonl`, `summary.md`,
    /// `state.json`): an agent must not rewrite the history it is judged
    /// by. Checked file by file ([`archive_files`]), since git status sees
    /// neither ignored nor untracked-folder files.
    archive: PathBuf,
    archive_watch: ArchiveWatch,
    /// Without the sandbox: the repository's git directory, the Briefs and
    /// `ooda.yaml` (see [`Fence::with_git`]).
    git: Option<GitWatch>,
}

/// How the archive is watched: by the kernel where the sandbox keeps it
/// read-only for the agent (one watch, whatever the history's length:
/// `dir_watch.rs` says what it sees), by stamping every file otherwise.
enum ArchiveWatch {
    Kernel(DirWatch),
    Stamps(BTreeMap<PathBuf, String>),
}

/// What an unconfined agent could change to act after its step (a hook, a
/// `core.fsmonitor`, a moved ref) or to weaken its judge (a Brief).
struct GitWatch {
    repo: PathBuf,
    gitdir: PathBuf,
    before: BTreeMap<PathBuf, String>,
    /// ooda's own refs (`refs/heads/ooda/…`, `refs/ooda/…`) and their
    /// targets, other Briefs' aside.
    ours: BTreeMap<String, git2::Oid>,
    /// The other Briefs: the daemon runs them at the same time, and their
    /// refs move while this agent works; they are theirs to guard.
    others: Vec<String>,
    /// `refs/heads/ooda/<brief>`, checked out in the candidate worktree: an
    /// agent's `git commit` there moves it, which is a commit to undo
    /// (edits kept), not tampering.
    branch: String,
}

impl Drop for Fence {
    /// The archive's kernel watch is kept for the next step (dir_watch.rs).
    fn drop(&mut self) {
        let watch = std::mem::replace(
            &mut self.archive_watch,
            ArchiveWatch::Stamps(BTreeMap::new()),
        );
        if let ArchiveWatch::Kernel(w) = watch {
            w.keep(&self.archive);
        }
    }
}

/// One watched work tree: where, what to skip, whether to walk untracked
/// folders, and its dirty files when the agent started.
struct Watched {
    dir: PathBuf,
    skip: Vec<PathBuf>,
    recurse: bool,
    before: BTreeMap<PathBuf, String>,
    /// The tree of its HEAD when the agent started: a file that reads
    /// dirty afterwards only because HEAD moved (which the git watch
    /// names) is not one the agent changed.
    head_tree: Option<git2::Oid>,
}

impl Fence {
    /// `reach`: what the agent could write; confined, the archive is
    /// read-only to it and a kernel watch on the directory suffices (see
    /// [`ArchiveWatch`]). `ours`: what else ooda writes in the checkout
    /// while a step runs (the notes folder).
    pub(crate) fn new(
        root: &Path,
        base_dir: &Path,
        archive: &Path,
        reach: Reach,
        ours: &[PathBuf],
    ) -> Result<Fence> {
        // Briefs may be edited by a human at any time; the rest is ooda's
        // own writing, its stdout and stderr files included.
        let mut skip = vec![
            root.join("iterations"),
            root.join(".ooda"),
            root.join("briefs"),
        ];
        skip.extend(ours.iter().cloned());
        skip.extend(reach::as_under(root, &reach::own_outputs()));
        let mut trees = Vec::new();
        // The user's checkout is not walked into untracked folders (a
        // checkout without `.ooda/` ignored would hold the worktrees there);
        // the base worktree is ooda's own and small enough to walk whole.
        for (dir, skip, recurse) in [(root, skip, false), (base_dir, Vec::new(), true)] {
            let before = dirty(dir, &skip, recurse)?;
            trees.push(Watched {
                dir: dir.to_path_buf(),
                skip,
                recurse,
                before,
                head_tree: head_tree(dir),
            });
        }
        Ok(Fence {
            trees,
            archive_watch: match reach.confined().then(|| DirWatch::fresh(archive)) {
                Some(Ok(w)) => ArchiveWatch::Kernel(w),
                _ => ArchiveWatch::Stamps(archive_files(archive)),
            },
            archive: archive.to_path_buf(),
            reach,
            git: None,
        })
    }

    /// Also watches what the sandbox would have kept read-only: the git
    /// directory's HEAD, config, refs, hooks and `info/`, `briefs/` and
    /// `ooda.yaml`, and ooda's own refs, which [`Fence::breached`] puts
    /// back where they were (no human moves them; a human may commit, edit
    /// a Brief or move their own branch, so those are named, never undone).
    pub(crate) fn with_git(mut self, root: &Path, brief: &str) -> Result<Fence> {
        let repo = git2::Repository::open(root)
            .ctx(|| format!("opening the repository at {}", root.display()))?;
        let gitdir = repo.path().to_path_buf();
        let before = hashes(&watched(root, &gitdir));
        let others: Vec<String> = crate::project::brief_paths_in(&root.join("briefs"))?
            .iter()
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .filter(|n| n != brief)
            .collect();
        let ours = ooda_refs_of(&repo, &others);
        self.git = Some(GitWatch {
            repo: root.to_path_buf(),
            gitdir,
            before,
            ours,
            others,
            branch: format!("refs/heads/ooda/{brief}"),
        });
        Ok(self)
    }

    /// Paths that changed since the snapshot, or `None` (the tests'
    /// shorthand for [`Fence::check`]).
    #[cfg(test)]
    pub(crate) fn breached(&self) -> Result<Option<String>> {
        Ok(self.check()?.breach)
    }

    /// Paths that changed since the snapshot, the agent's or the
    /// environment's, and a commit the agent made on the candidate's branch,
    /// undone (its edits left in the worktree: see [`Checked::committed`]).
    pub(crate) fn check(&self) -> Result<Checked> {
        // What the agent could have written, and what it could not have.
        let (mut agents, mut environment) = (Vec::new(), Vec::new());
        // The checkout's files among the agent's: (relative path, untracked).
        let mut in_checkout = Vec::new();
        for (i, w) in self.trees.iter().enumerate() {
            for c in w.changed()? {
                // The base worktree is ooda's alone, like the archive: no
                // human or program of the user's writes it during a step,
                // so a change there is the agent's, however it was made (a
                // server of the user's asked to write for it, a `chmod`).
                let base = i == 1;
                if base || c.metadata || self.reach.could_write(&c.path, c.existed) {
                    if i == 0 {
                        let rel = c.path.strip_prefix(&w.dir).unwrap_or(&c.path);
                        in_checkout.push((rel.to_path_buf(), c.untracked));
                    }
                    agents.push(c.path.display().to_string());
                } else {
                    environment.push(c.path.display().to_string());
                }
            }
        }
        // The archive is ooda's alone: no human or program of the user's
        // writes it during a step, so a change there is an escape (a
        // confined agent asking a server of the user's to write for it,
        // docs/sandbox.md), whatever the sandbox says.
        let before_archive = agents.len();
        agents.extend(self.archive_changed());
        // The index, the facts table and the ledger are caches every later
        // reader believes while their stamps match: one the agent touched
        // is removed (the runner rebuilds them from the iteration files),
        // as ooda's refs are put back.
        for cache in CACHES {
            let path = self.archive.join(cache);
            if agents[before_archive..]
                .iter()
                .any(|c| Path::new(c) == path)
            {
                let _ = std::fs::remove_file(&path);
            }
        }
        let mut committed = None;
        if let Some(g) = &self.git {
            let (c, commit) = g.changed()?;
            agents.extend(c);
            committed = commit;
        }
        agents.sort();
        environment.sort();
        let breach = (!agents.is_empty()).then(|| {
            let paths = clip(&agents.join(", "), 600);
            if self.reach.confined() || in_checkout.is_empty() {
                return format!("the agent changed files outside the candidate worktree: {paths}");
            }
            // Without the sandbox, a file of the checkout may be the user's
            // or another program's as well as the agent's: say so, and how
            // to tell ooda it is not the agent's.
            let fix = match in_checkout.iter().find(|(_, untracked)| *untracked) {
                // A name with a glob's characters, escaped to match itself.
                Some((rel, _)) => format!(
                    "have git ignore what is not the agent's (`/{}` in .gitignore)",
                    rel.display()
                        .to_string()
                        .chars()
                        .flat_map(|c| match c {
                            '*' | '?' | '[' | ']' | '\\' | '!' | '#' => vec!['\\', c],
                            c => vec![c],
                        })
                        .collect::<String>()
                ),
                None => "leave tracked files alone while a night runs".to_string(),
            };
            format!(
                "files outside the candidate worktree changed while the agent ran without the sandbox: {paths}. Without the sandbox ooda cannot tell the agent's writes from yours or another program's (a log a cron line appends to, a file you edited): {fix}, or turn the sandbox on (`sandbox: auto` in ooda.yaml)"
            )
        });
        let environment = (!environment.is_empty()).then(|| Environment {
            paths: environment,
            reason: match &self.reach {
                Reach::Confined { abi, .. } => format!(
                    "changed outside the candidate worktree while Landlock (ABI {abi}) kept the agent from writing there: yours, another program's or a measurement's, not the agent's"
                ),
                Reach::Unconfined => String::new(),
            },
        });
        Ok(Checked {
            breach,
            environment,
            committed,
        })
    }
}

/// Changes the agent could not have made: the environment's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Environment {
    pub paths: Vec<String>,
    /// Why they are not the agent's.
    pub reason: String,
}

/// A path of a watched tree that differs from the snapshot.
struct Change {
    path: PathBuf,
    /// It was a file before the step and still is one: a change in place,
    /// the one a truncation makes.
    existed: bool,
    /// Git does not track it.
    untracked: bool,
    /// Only its mode changed (or it can no longer be read): what Landlock
    /// does not control.
    metadata: bool,
}

impl Watched {
    /// The paths that differ from the snapshot.
    fn changed(&self) -> Result<Vec<Change>> {
        let after = dirty(&self.dir, &self.skip, self.recurse)?;
        let moved = self.head_tree != head_tree(&self.dir);
        let present = |state: Option<&String>| state.is_some_and(|s| !s.ends_with(":missing"));
        let mut out = Vec::new();
        for (path, state) in &after {
            let was_clean = !self.before.contains_key(path);
            if self.before.get(path) != Some(state)
                && !(moved && was_clean && as_in_tree(&self.dir, path, self.head_tree))
            {
                // A clean file is a tracked one: it existed unless git
                // calls it new now.
                let untracked = is_new(state);
                let existed = if was_clean {
                    !untracked
                } else {
                    present(self.before.get(path))
                };
                let (_, mode, hash) = fields(state);
                // The same content as before in another mode, or a file
                // that can no longer be read: a `chmod`, nothing else (a
                // file staged or unstaged keeps both).
                let unreadable = hash == "missing" && path.is_file();
                let metadata = unreadable
                    || match self.before.get(path) {
                        Some(was) => {
                            let (_, was_mode, was_hash) = fields(was);
                            was_hash == hash && hash != "missing" && was_mode != mode
                        }
                        None => {
                            !untracked
                                && self.committed(path).is_some_and(|(blob, exec)| {
                                    blob == hash && exec != is_exec(mode)
                                })
                        }
                    };
                out.push(Change {
                    path: path.clone(),
                    existed: existed && present(Some(state)),
                    untracked,
                    metadata,
                });
            }
        }
        for path in self.before.keys().filter(|p| !after.contains_key(*p)) {
            out.push(Change {
                path: path.clone(),
                existed: path.is_file() && present(self.before.get(path)),
                untracked: self.before.get(path).is_some_and(|s| is_new(s)),
                // Back to its committed mode, perhaps.
                metadata: self.before.get(path).is_some_and(|s| {
                    self.committed(path).is_some_and(|(blob, exec)| {
                        blob == fields(s).2 && exec != is_exec(fields(s).1)
                    })
                }),
            });
        }
        Ok(out)
    }

    /// The blob `path` has in the tree of HEAD when the step started, and
    /// whether it is committed executable.
    fn committed(&self, path: &Path) -> Option<(String, bool)> {
        let repo = git2::Repository::discover(&self.dir).ok()?;
        let rel = path.strip_prefix(repo.workdir()?).ok()?;
        let tree = repo.find_tree(self.head_tree?).ok()?;
        let e = tree.get_path(rel).ok()?;
        Some((e.id().to_string(), e.filemode() == 0o100755))
    }
}

/// What [`Fence::check`] found.
pub(crate) struct Checked {
    /// Paths the agent changed outside the candidate worktree, or could
    /// have (without the sandbox it cannot be told from anyone else).
    pub breach: Option<String>,
    /// Paths that changed where the agent could not write.
    pub environment: Option<Environment>,
    /// The agent committed on the candidate's branch (the sandbox off): the
    /// branch is put back, the edits stay in the worktree as uncommitted
    /// changes, and this says what was undone.
    pub committed: Option<String>,
}

impl Fence {
    /// The archive's files that changed during the step.
    fn archive_changed(&self) -> Vec<String> {
        let mut changed = Vec::new();
        match &self.archive_watch {
            ArchiveWatch::Stamps(before) => {
                let after = archive_files(&self.archive);
                for (path, hash) in &after {
                    if before.get(path) != Some(hash) {
                        changed.push(path.display().to_string());
                    }
                }
                for path in before.keys().filter(|p| !after.contains_key(*p)) {
                    changed.push(path.display().to_string());
                }
            }
            ArchiveWatch::Kernel(watch) => {
                let dir = self.archive.display();
                match watch.changes() {
                    Ok(c) => {
                        for name in &c.names {
                            if watched_in_archive(&name.to_string_lossy()) {
                                changed.push(self.archive.join(name).display().to_string());
                            }
                        }
                        if c.overflowed {
                            changed.push(format!("{dir} (more changes than the kernel queues)"));
                        }
                        if c.gone {
                            changed.push(format!("{dir} (removed or moved)"));
                        }
                    }
                    Err(e) => changed.push(format!("{dir} (its watch failed: {e})")),
                }
            }
        }
        changed
    }
}

/// The archive's files an agent must not change: the iteration files, their
/// caches, the summary and the checkpoint.
fn watched_in_archive(name: &str) -> bool {
    use crate::archive::layout::Layout;
    stamped_in_archive(name) || name == Layout::SUMMARY || name == Layout::STATE
}

/// The caches of the iteration files (history/index.rs, history/view.rs).
const CACHES: [&str; 3] = [
    crate::archive::history::index::FILE,
    crate::archive::history::facts::FILE,
    crate::archive::history::ledger::FILE,
];

/// Those of them many and never written during a step, stamped rather than read.
fn stamped_in_archive(name: &str) -> bool {
    (name.starts_with("iter-") && name.ends_with(".md")) || CACHES.contains(&name)
}

impl GitWatch {
    /// What changed, by path; ooda's own refs are restored (and named),
    /// but for commits on top of the candidate's branch, which are undone
    /// and returned apart.
    fn changed(&self) -> Result<(Vec<String>, Option<String>)> {
        let mut out = Vec::new();
        // What was there (it may be gone) and what is there now.
        let mut files: Vec<PathBuf> = self.before.keys().cloned().collect();
        files.extend(watched(&self.repo, &self.gitdir));
        files.sort();
        files.dedup();
        let after = hashes(&files);
        for f in &files {
            if self.before.get(f) != after.get(f) {
                out.push(f.display().to_string());
            }
        }
        let repo = git2::Repository::open(&self.repo)
            .ctx(|| format!("opening the repository at {}", self.repo.display()))?;
        let now = ooda_refs_of(&repo, &self.others);
        let mut committed = None;
        for (name, oid) in &self.ours {
            if now.get(name) != Some(oid) {
                repo.reference(name, *oid, true, "ooda: restored after an agent step")
                    .ctx(|| format!("restoring {name}"))?;
                let on_top = *name == self.branch
                    && now
                        .get(name)
                        .is_some_and(|n| repo.graph_descendant_of(*n, *oid).unwrap_or(false));
                if on_top {
                    committed = Some(format!(
                        "the agent committed on {} ({} on top of {}); the runner put the branch back, keeping the agent's edits uncommitted",
                        name.trim_start_matches("refs/heads/"),
                        crate::text::clip::short(&now[name].to_string()),
                        crate::text::clip::short(&oid.to_string())
                    ));
                } else {
                    out.push(format!("{name} (restored)"));
                }
            }
        }
        for name in now.keys().filter(|n| !self.ours.contains_key(*n)) {
            if let Ok(mut r) = repo.find_reference(name) {
                r.delete().ctx(|| format!("deleting {name}"))?;
            }
            out.push(format!("{name} (deleted: not ooda's)"));
        }
        Ok((out, committed))
    }
}

/// The files of the git directory and the project that the sandbox would
/// keep read-only: HEAD, config, packed-refs, refs (ooda's own aside),
/// hooks, info, `briefs/` and `ooda.yaml`.
fn watched(root: &Path, gitdir: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        gitdir.join("HEAD"),
        gitdir.join("config"),
        gitdir.join("packed-refs"),
        root.join(crate::config::FILE_NAME),
    ];
    let ours = [gitdir.join("refs/heads/ooda"), gitdir.join("refs/ooda")];
    for dir in [
        gitdir.join("hooks"),
        gitdir.join("info"),
        gitdir.join("refs"),
        root.join("briefs"),
    ] {
        walk_files(&dir, &ours, &mut files);
    }
    files
}

/// Every file below `dir` (none if it is missing), `skip` prefixes aside.
fn walk_files(dir: &Path, skip: &[PathBuf], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if skip.iter().any(|s| p.starts_with(s)) {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => walk_files(&p, skip, out),
            Ok(_) => out.push(p),
            Err(_) => {}
        }
    }
}

/// Content hashes (a symlink's target for a symlink); a missing file has none.
fn hashes(files: &[PathBuf]) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let h = match std::fs::symlink_metadata(f) {
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(f)
                .map(|t| format!("link:{}", t.display()))
                .ok(),
            // ooda's own refs may be packed beside the user's.
            Ok(_) if f.file_name().is_some_and(|n| n == "packed-refs") => {
                std::fs::read_to_string(f).ok().map(|t| {
                    let mine: Vec<&str> = t
                        .lines()
                        .filter(|l| !l.contains(" refs/heads/ooda/") && !l.contains(" refs/ooda/"))
                        .collect();
                    mine.join("\n")
                })
            }
            Ok(m) => git2::Oid::hash_file(git2::ObjectType::Blob, f)
                .map(|o| {
                    format!(
                        "{:o}:{o}",
                        std::os::unix::fs::PermissionsExt::mode(&m.permissions())
                    )
                })
                .ok(),
            Err(_) => None,
        };
        if let Some(h) = h {
            out.insert(f.clone(), h);
        }
    }
    out
}

/// ooda's own refs, packed or loose.
fn ooda_refs_of(repo: &git2::Repository, others: &[String]) -> BTreeMap<String, git2::Oid> {
    let theirs = |name: &str| {
        others.iter().any(|o| {
            name == format!("refs/heads/ooda/{o}")
                || name.starts_with(&format!("refs/ooda/{o}/"))
                || name.starts_with(&format!("refs/ooda/{o}."))
        })
    };
    let mut out = BTreeMap::new();
    for glob in ["refs/heads/ooda/*", "refs/ooda/*"] {
        if let Ok(refs) = repo.references_glob(glob) {
            for r in refs.flatten() {
                if let (Ok(name), Some(oid)) = (r.name(), r.target())
                    && !theirs(name)
                {
                    out.insert(name.to_string(), oid);
                }
            }
        }
    }
    out
}

/// The archive's own files (artifacts and the event log, which ooda writes
/// while the agent runs, are not part of it). The iteration files and their
/// index are many and ooda never writes them during an agent step, so they
/// are stamped by size, times and inode rather than read: any write moves
/// the change time, which no unprivileged process can set back. The index
/// matters as much as the files it caches: a forged line whose stamp
/// matches a file would be believed (history/index.rs).
fn archive_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if stamped_in_archive(&name) {
            if let Ok(m) = e.metadata() {
                let stamp = format!(
                    "{} {}.{} {}.{} {}",
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                    m.ino()
                );
                out.insert(e.path(), stamp);
            }
        } else if watched_in_archive(&name)
            && let Ok(o) = git2::Oid::hash_file(git2::ObjectType::Blob, e.path())
        {
            out.insert(e.path(), o.to_string());
        }
    }
    out
}

/// Changed and untracked files of the work tree containing `dir` (absolute
/// paths, with a content hash), ignored files and `skip` prefixes excluded.
fn dirty(dir: &Path, skip: &[PathBuf], recurse: bool) -> Result<BTreeMap<PathBuf, String>> {
    let repo = git2::Repository::discover(dir)
        .ctx(|| format!("opening the repository at {}", dir.display()))?;
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(BTreeMap::new());
    };
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(recurse)
        .include_ignored(false);
    if !skip.is_empty() {
        // The skipped folders are not walked at all: `iterations/` holds a
        // file per iteration, and git would look at every one of them (to
        // learn whether an untracked folder holds anything, or to compare
        // tracked files with its index) at every agent step. Git is given
        // the other top-level names instead, from the disk and from its
        // index (a tracked file the agent removed is on the disk no more).
        let names = top_level_names(&repo, &workdir, skip)?;
        if names.is_empty() {
            return Ok(BTreeMap::new());
        }
        for name in &names {
            opts.pathspec(name.as_os_str());
        }
        opts.disable_pathspec_match(true);
    }
    let statuses = repo
        .statuses(Some(&mut opts))
        .ctx(|| format!("reading the status of {}", workdir.display()))?;
    let mut out = BTreeMap::new();
    for st in statuses.iter() {
        // By bytes: a name that is not UTF-8 is watched like any other.
        let rel = std::ffi::OsStr::from_bytes(st.path_bytes());
        let path = workdir.join(rel);
        if skip.iter().any(|p| path.starts_with(p)) || !path.starts_with(dir) {
            continue;
        }
        let hash = git2::Oid::hash_file(git2::ObjectType::Blob, &path)
            .map(|o| o.to_string())
            .unwrap_or_else(|_| "missing".into());
        // The mode too: Landlock does not control `chmod`, so a change of
        // mode alone may be a confined agent's (`reach.rs`).
        let mode = std::fs::symlink_metadata(&path)
            .map(|m| {
                format!(
                    "{:o}",
                    std::os::unix::fs::PermissionsExt::mode(&m.permissions())
                )
            })
            .unwrap_or_else(|_| "-".into());
        out.insert(path, format!("{}:{mode}:{hash}", st.status().bits()));
    }
    Ok(out)
}

/// A [`dirty`] state's status bits, mode and content hash.
fn fields(state: &str) -> (&str, &str, &str) {
    let mut it = state.splitn(3, ':');
    (
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    )
}

/// A [`dirty`] state's mode (octal) says executable by its owner.
fn is_exec(mode: &str) -> bool {
    u32::from_str_radix(mode, 8).is_ok_and(|m| m & 0o100 != 0)
}

/// A [`dirty`] state git calls untracked.
fn is_new(state: &str) -> bool {
    fields(state)
        .0
        .parse::<u32>()
        .is_ok_and(|b| git2::Status::from_bits_truncate(b).is_wt_new())
}

/// The tree of the HEAD of the repository holding `dir`.
fn head_tree(dir: &Path) -> Option<git2::Oid> {
    let repo = git2::Repository::discover(dir).ok()?;
    let tree = repo.head().ok()?.peel_to_tree().ok()?.id();
    Some(tree)
}

/// Whether `path` is, on disk and in the index, what `tree` holds: a file
/// clean against that tree, which reads dirty now only because HEAD moved.
fn as_in_tree(dir: &Path, path: &Path, tree: Option<git2::Oid>) -> bool {
    let Some(tree) = tree else { return false };
    let Ok(repo) = git2::Repository::discover(dir) else {
        return false;
    };
    let Some(rel) = repo.workdir().and_then(|w| path.strip_prefix(w).ok()) else {
        return false;
    };
    let Some((blob, mode)) = repo
        .find_tree(tree)
        .ok()
        .and_then(|t| t.get_path(rel).ok())
        .map(|e| (e.id(), e.filemode() as u32))
    else {
        return false;
    };
    let indexed = repo
        .index()
        .ok()
        .and_then(|i| i.get_path(rel, 0).map(|e| (e.id, e.mode)));
    let on_disk = git2::Oid::hash_file(git2::ObjectType::Blob, path).ok();
    let executable = std::fs::symlink_metadata(path)
        .is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0);
    indexed == Some((blob, mode)) && on_disk == Some(blob) && executable == (mode == 0o100755)
}

/// The top-level names of the work tree, on disk or in git's index, those
/// beneath `skip` aside.
fn top_level_names(
    repo: &git2::Repository,
    workdir: &Path,
    skip: &[PathBuf],
) -> Result<std::collections::BTreeSet<std::ffi::OsString>> {
    let mut names = std::collections::BTreeSet::new();
    let entries = std::fs::read_dir(workdir).ctx(|| format!("listing {}", workdir.display()))?;
    for e in entries.flatten() {
        names.insert(e.file_name());
    }
    let index = repo
        .index()
        .ctx(|| format!("reading the git index of {}", workdir.display()))?;
    for entry in index.iter() {
        let first = entry
            .path
            .split(|&b| b == b'/')
            .next()
            .unwrap_or(&entry.path);
        names.insert(std::ffi::OsStr::from_bytes(first).to_os_string());
    }
    names.remove(std::ffi::OsStr::new(".git"));
    names.retain(|n| !skip.iter().any(|s| workdir.join(n).starts_with(s)));
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A checkout with tracked files at the top, in a folder, and a tracked
    /// and an untracked archive beneath `iterations/`.
    fn checkout() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join("iterations/a")).unwrap();
        std::fs::write(d.join("README"), "r\n").unwrap();
        std::fs::write(d.join("src/lib.rs"), "x\n").unwrap();
        std::fs::write(d.join("iterations/a/iter-000.md"), "0\n").unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "init"]);
        std::fs::write(d.join("iterations/a/iter-001.md"), "1\n").unwrap();
        dir
    }

    fn changed(root: &Path, before: &BTreeMap<PathBuf, String>) -> Vec<String> {
        let skip = vec![root.join("iterations")];
        let after = dirty(root, &skip, false).unwrap();
        let mut out: Vec<String> = after
            .iter()
            .filter(|(p, s)| before.get(*p) != Some(s))
            .map(|(p, _)| p.strip_prefix(root).unwrap().display().to_string())
            .chain(
                before
                    .keys()
                    .filter(|p| !after.contains_key(*p))
                    .map(|p| p.strip_prefix(root).unwrap().display().to_string()),
            )
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_checkout_is_watched_outside_the_skipped_folders_only() {
        let dir = checkout();
        let root = &dir.path().canonicalize().unwrap();
        let skip = vec![root.join("iterations")];
        let before = dirty(root, &skip, false).unwrap();
        assert!(before.is_empty(), "{before:?}");
        // Beneath the skipped folder: tracked, untracked and new files.
        std::fs::write(root.join("iterations/a/iter-000.md"), "forged\n").unwrap();
        std::fs::write(root.join("iterations/a/iter-002.md"), "2\n").unwrap();
        assert!(changed(root, &before).is_empty());
        // Everywhere else: an edit, a removal (gone from the disk, still in
        // git's index), a new file and a new folder.
        std::fs::write(root.join("src/lib.rs"), "y\n").unwrap();
        std::fs::remove_file(root.join("README")).unwrap();
        std::fs::write(root.join("new"), "n\n").unwrap();
        std::fs::create_dir(root.join("more")).unwrap();
        std::fs::write(root.join("more/file"), "m\n").unwrap();
        assert_eq!(
            changed(root, &before),
            ["README", "more", "new", "src/lib.rs"]
        );
    }

    #[test]
    fn a_checkout_holding_only_skipped_folders_has_nothing_to_watch() {
        let dir = tempfile::tempdir().unwrap();
        let root = &dir.path().canonicalize().unwrap();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(root.join("iterations/a")).unwrap();
        std::fs::write(root.join("iterations/a/iter-000.md"), "0\n").unwrap();
        assert!(
            dirty(root, &[root.join("iterations")], false)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_confined_fence_names_the_archive_files_a_process_changed() {
        let dir = checkout();
        let root = &dir.path().canonicalize().unwrap();
        let archive = root.join("iterations/a");
        let base = tempfile::tempdir().unwrap();
        git(base.path(), &["init", "-q", "-b", "main"]);
        for sandboxed in [true, false] {
            let reach = match sandboxed {
                true => Reach::Confined {
                    abi: 6,
                    grants: Vec::new(),
                },
                false => Reach::Unconfined,
            };
            let fence = Fence::new(root, base.path(), &archive, reach, &[]).unwrap();
            assert_eq!(
                matches!(fence.archive_watch, ArchiveWatch::Kernel(_)),
                sandboxed
            );
            // ooda's own writes during a step are not the agent's.
            std::fs::write(archive.join("events.jsonl"), "{}\n").unwrap();
            assert_eq!(fence.breached().unwrap(), None);
            std::fs::write(archive.join("iter-001.md"), format!("{sandboxed}\n")).unwrap();
            let said = fence.breached().unwrap().expect("a breach");
            assert!(said.contains("iter-001.md"), "{said}");
        }
    }

    #[test]
    fn a_change_is_the_agents_only_where_it_could_write() {
        let dir = checkout();
        let root = &dir.path().canonicalize().unwrap();
        let archive = root.join("iterations/a");
        let base = tempfile::tempdir().unwrap();
        git(base.path(), &["init", "-q", "-b", "main"]);
        let confined = |grants: Vec<PathBuf>| Reach::Confined { abi: 6, grants };
        // Confined: the user's new file and edit are the environment's.
        let fence = Fence::new(root, base.path(), &archive, confined(Vec::new()), &[]).unwrap();
        std::fs::write(root.join("out.log"), "x\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "edited\n").unwrap();
        let c = fence.check().unwrap();
        assert_eq!(c.breach, None);
        let env = c.environment.unwrap();
        assert_eq!(
            env.paths,
            [root.join("out.log"), root.join("src/lib.rs")].map(|p| p.display().to_string())
        );
        assert!(env.reason.contains("not the agent's"), "{}", env.reason);
        // Beneath a grant it could have written: the agent's.
        let fence = Fence::new(
            root,
            base.path(),
            &archive,
            confined(vec![root.join("src")]),
            &[],
        )
        .unwrap();
        std::fs::write(root.join("src/lib.rs"), "again\n").unwrap();
        let c = fence.check().unwrap();
        let said = c.breach.unwrap();
        assert!(
            said.starts_with("the agent changed files outside the candidate worktree: "),
            "{said}"
        );
        assert!(said.ends_with("/src/lib.rs"), "{said}");
        // Unconfined: anyone's, said so, with the fix for an untracked file.
        let fence = Fence::new(root, base.path(), &archive, Reach::Unconfined, &[]).unwrap();
        std::fs::write(root.join("out.log"), "y\n").unwrap();
        let said = fence.check().unwrap().breach.unwrap();
        assert!(
            said.contains("cannot tell the agent's writes from yours"),
            "{said}"
        );
        assert!(said.contains("(`/out.log` in .gitignore)"), "{said}");
        // Landlock does not control `chmod`: a mode changed alone may be
        // the confined agent's; a file staged by the user is not.
        std::fs::write(root.join("src/lib.rs"), "x\n").unwrap();
        let fence = Fence::new(root, base.path(), &archive, confined(Vec::new()), &[]).unwrap();
        git(root, &["add", "out.log"]);
        assert_eq!(fence.check().unwrap().breach, None);
        let fence = Fence::new(root, base.path(), &archive, confined(Vec::new()), &[]).unwrap();
        std::fs::set_permissions(
            root.join("src/lib.rs"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let said = fence.check().unwrap().breach.unwrap();
        assert!(said.ends_with("/src/lib.rs"), "{said}");
        // The base worktree is ooda's alone: any change there is the agent's.
        std::fs::write(base.path().join("b.txt"), "b\n").unwrap();
        git(base.path(), &["add", "b.txt"]);
        git(base.path(), &["commit", "-qm", "b"]);
        let fence = Fence::new(root, base.path(), &archive, confined(Vec::new()), &[]).unwrap();
        std::fs::write(base.path().join("b.txt"), "rigged\n").unwrap();
        let said = fence.check().unwrap().breach.unwrap();
        assert!(said.contains("b.txt"), "{said}");
        std::fs::write(base.path().join("b.txt"), "b\n").unwrap();
        // What ooda writes itself (`ours`) is never looked at.
        let fence = Fence::new(
            root,
            base.path(),
            &archive,
            Reach::Unconfined,
            &[root.join("out.log")],
        )
        .unwrap();
        std::fs::write(root.join("out.log"), "z\n").unwrap();
        assert_eq!(fence.breached().unwrap(), None);
    }
}
