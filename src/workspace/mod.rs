//! Git worktrees where agents edit and the evaluator measures.
//!
//! The user's checkout, index and current branch are never touched. ooda owns
//! one branch, `ooda/<brief>`, and two worktrees under `.ooda/worktrees/<brief>`:
//! `cand` has the branch checked out (a keep is a commit there, which advances
//! the branch), and `base` is a detached checkout of the branch tip (the
//! current best). Every operation here is idempotent so a tick killed halfway
//! through one is repaired by simply running `sync` again.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use git2::{
    BranchType, DiffFormat, DiffOptions, Oid, Repository, ResetType, Signature, StatusOptions,
    WorktreeAddOptions, build::CheckoutBuilder,
};

use crate::error::{Error, IoContext, Result};

mod contents;
pub(crate) mod files;

pub(crate) use contents::{Contents, content_violation};

/// Every worktree ooda makes for a Brief: the loop's own, and the scratch
/// copies of confirmation, check, the simplifier and replay.
pub(crate) const WORKTREES: &[&str] = &[
    "cand",
    "base",
    "anchor",
    "check",
    "simplify",
    "replay",
    "replay-base",
];

pub(crate) struct Workspace {
    pub brief: String,
    pub branch: String,
    pub dir: PathBuf,
    pub base_dir: PathBuf,
    pub cand_dir: PathBuf,
    /// Files ooda writes itself (the knobs file): always staged even if a
    /// `.gitignore` matches them, and removed on sync when the target commit
    /// does not track them, so they never leak from one attempt to the next.
    owned: Vec<String>,
    repo: Repository,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChangedPath {
    pub path: String,
    pub kind: &'static str,
    /// Bytes, as the file is now (0 when deleted).
    pub size: u64,
    /// A symlink's target.
    pub link: Option<String>,
    /// A new or grown file above the size limit, never read.
    pub unread: bool,
}

/// Size, modification and change times (nanoseconds), inode and mode of a
/// file. The change time, which `utime` cannot set, catches a rewrite whose
/// modification time was put back.
pub(crate) type FileStat = (u64, i128, i128, u64, u32);

/// The candidate as its files say: what changed, and the contents to build
/// the tree from once the change has passed its checks.
pub(crate) struct Candidate {
    pub changed: Vec<ChangedPath>,
    pub contents: Contents,
}

impl Workspace {
    pub(crate) fn open(repo_dir: &Path, worktrees_dir: &Path, brief: &str) -> Result<Workspace> {
        let repo = Repository::discover(repo_dir)
            .ctx(|| format!("opening the git repository at {}", repo_dir.display()))?;
        let ws = Workspace {
            brief: brief.to_string(),
            branch: format!("ooda/{brief}"),
            dir: worktrees_dir.to_path_buf(),
            base_dir: worktrees_dir.join("base"),
            cand_dir: worktrees_dir.join("cand"),
            owned: Vec::new(),
            repo,
        };
        // Records an earlier release wrote name the repository by its
        // absolute path: after the project moved, git itself fails on them.
        // This Brief's only (the daemon opens Briefs at once, each adding
        // and removing its own records), and best effort: a record that
        // cannot be rewritten is re-made when it is next used.
        for which in WORKTREES {
            let _ = relative_commondir(&ws.worktree_record(which));
        }
        Ok(ws)
    }

    pub(crate) fn with_owned_file(mut self, rel: &str) -> Workspace {
        self.owned.push(rel.trim_start_matches("./").to_string());
        self
    }

    /// How a worktree's copy (`dir`: the candidate's, or a scratch
    /// worktree's) of a file ooda writes itself (the knobs file) differs
    /// from what the worktree's HEAD holds, or `None` when it does not.
    /// Such a file is sourced by the benchmark and committed on keep, so an
    /// agent's edit to it is shell in the measurement: it is found here,
    /// after the agent and before ooda writes the file, and blocked.
    pub(crate) fn owned_edit(&self, dir: &Path, rel: &str) -> Result<Option<String>> {
        let rel = rel.trim_start_matches("./");
        if let Some((folder, link)) = not_a_folder_on(dir, rel) {
            let made = if link { "a symlink" } else { "a file" };
            return Ok(Some(format!("{folder} was made {made}")));
        }
        match fs::symlink_metadata(dir.join(rel)) {
            Ok(m) if m.file_type().is_symlink() => {
                return Ok(Some(format!("{rel} was made a symlink")));
            }
            Ok(m) if !m.is_file() => {
                return Ok(Some(format!("{rel} is no longer a regular file")));
            }
            _ => {}
        }
        let repo = if dir == self.cand_dir {
            self.cand_repo()?
        } else {
            self.open_scratch(dir)?
        };
        let tree = head_tree(&repo)?;
        let before = tree
            .get_path(Path::new(rel))
            .ok()
            .and_then(|e| repo.find_blob(e.id()).ok())
            .map(|b| b.content().to_vec());
        let path = dir.join(rel);
        let now = match fs::symlink_metadata(&path) {
            Ok(m) if m.len() > crate::brief::points::MAX_KNOBS_FILE => {
                return Ok(Some(format!("{rel} grew to {} bytes", m.len())));
            }
            Ok(_) => Some(fs::read(&path).ctx(|| format!("reading {}", path.display()))?),
            Err(_) => None,
        };
        Ok(match (before, now) {
            (b, n) if b == n => None,
            (_, None) => Some(format!("{rel} was deleted")),
            (None, Some(_)) => Some(format!("{rel} was created")),
            (Some(_), Some(_)) => Some(format!("{rel} was edited")),
        })
    }

    /// Writes a file ooda owns in a worktree (`dir`), never through a
    /// link: every folder on its path must be a real folder of the worktree
    /// (`owned_edit` found none that is not), and the file is replaced by a
    /// rename, which replaces a link rather than following it.
    pub(crate) fn write_owned(dir: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
        let rel = rel.trim_start_matches("./");
        if let Some((folder, _)) = not_a_folder_on(dir, rel) {
            return Err(Error::Input(format!(
                "{folder} is not a folder of the worktree {}, so ooda will not write {rel} there",
                dir.display()
            )));
        }
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            crate::atomic::create_dir_all(parent)?;
        }
        crate::atomic::write_atomic(&path, bytes)
    }

    /// Where the base worktree's last successful setup is recorded: inside
    /// its git metadata, so a recreated worktree starts without it.
    fn setup_marker(&self) -> Result<PathBuf> {
        Ok(self.base_repo()?.path().join("ooda-setup-key"))
    }

    /// Whether the base worktree was last set up for exactly `key`.
    pub(crate) fn base_setup_done(&self, key: &str) -> bool {
        self.setup_marker()
            .ok()
            .and_then(|p| fs::read_to_string(p).ok())
            .is_some_and(|k| k == key)
    }

    /// Forgets the base's setup (`ooda gc` removed its build outputs), so
    /// the next measurement sets it up again.
    pub(crate) fn forget_base_setup(&self) -> Result<()> {
        match self.setup_marker() {
            Ok(p) => match fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(Error::io(format!("removing {}", p.display()), e))
                }
                _ => Ok(()),
            },
            // No base worktree: nothing was set up.
            Err(_) => Ok(()),
        }
    }

    pub(crate) fn record_base_setup(&self, key: &str) -> Result<()> {
        let p = self.setup_marker()?;
        fs::write(&p, key).ctx(|| format!("writing {}", p.display()))
    }

    /// The commit the user's checkout is on: where a new run starts.
    pub(crate) fn user_head(&self) -> Result<Oid> {
        let head = self.repo.head().map_err(|e| match e.code() {
            git2::ErrorCode::UnbornBranch => Error::Input(no_commit_yet()),
            _ => Error::Input(format!(
                "the repository has no commit to start from ({e}): commit your work first"
            )),
        })?;
        head.peel_to_commit()
            .map(|c| c.id())
            .ctx(|| "reading HEAD".into())
    }

    pub(crate) fn branch_tip(&self) -> Result<Option<Oid>> {
        match self.repo.find_branch(&self.branch, BranchType::Local) {
            Ok(b) => Ok(b.get().target()),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(Error::git(format!("reading branch {}", self.branch), e)),
        }
    }

    /// Whether `ancestor` is reachable from `of` (or is it).
    pub(crate) fn is_ancestor(&self, ancestor: Oid, of: Oid) -> Result<bool> {
        if ancestor == of {
            return Ok(true);
        }
        self.repo
            .graph_descendant_of(of, ancestor)
            .map_err(|e| Error::git(format!("comparing {ancestor} with {of}"), e))
    }

    pub(crate) fn commit_exists(&self, oid: &str) -> bool {
        Oid::from_str(oid)
            .ok()
            .and_then(|o| self.repo.find_commit(o).ok())
            .is_some()
    }

    /// Points the branch at `target` (creating it if needed) and makes both
    /// worktrees exist and match it exactly.
    pub(crate) fn ensure(&self, target: Oid) -> Result<()> {
        let commit = self
            .repo
            .find_commit(target)
            .ctx(|| format!("finding commit {target}"))?;
        if self.branch_tip()? != Some(target) {
            self.set_branch(commit.id())?;
        }
        crate::atomic::create_dir_all(&self.dir)?;
        self.ensure_worktree("cand", &self.cand_dir, true)?;
        self.ensure_worktree("base", &self.base_dir, false)?;
        self.sync(target)?;
        // A kill while a detached worktree was being created leaves its
        // carrier branch behind; the worktree is detached now, so drop it.
        for which in ["base", "check"] {
            if let Ok(mut b) = self.repo.find_branch(
                &format!("ooda-tmp/{}", self.worktree_name(which)),
                BranchType::Local,
            ) {
                let _ = b.delete();
            }
        }
        Ok(())
    }

    /// A detached worktree of its own at `commit` (for `ooda check`), reset
    /// and cleaned so it matches the commit exactly.
    pub(crate) fn scratch(&self, which: &str, commit: Oid) -> Result<PathBuf> {
        let path = self.dir.join(which);
        crate::atomic::create_dir_all(&self.dir)?;
        self.heal_link(which, &path)?;
        let repo = match self.open_worktree(which, &path) {
            Ok(repo) if path.join(".git").is_file() => repo,
            _ => {
                self.forget_worktree(which, &path)?;
                self.add_detached(which, &path, commit)?;
                self.open_worktree(which, &path)?
            }
        };
        reset_detached(&repo, &path, commit)?;
        Ok(path)
    }

    /// A scratch worktree holding exactly `tree` (a measured candidate), on
    /// a commit of it parented on `base` that no reference names: where a
    /// subagent may edit a copy of the candidate (the simplifier).
    ///
    /// `fresh` removes the worktree first, ignored files and all: what a
    /// simplifier planted there that git ignores (a cache, a prebuilt
    /// binary) would be measured but never committed.
    pub(crate) fn scratch_of_tree(
        &self,
        which: &str,
        base: Oid,
        tree: Oid,
        fresh: bool,
    ) -> Result<PathBuf> {
        let commit =
            self.commit_tree(base, tree, "ooda: a scratch copy of a measured candidate")?;
        if fresh {
            self.forget_worktree(which, &self.dir.join(which))?;
        }
        self.scratch(which, commit)
    }

    /// The tree of what a scratch worktree holds now, read from its files
    /// like a candidate's (and written to the object store, which is where
    /// a measured tree lives).
    ///
    /// Also returns what changed against the scratch copy's own commit, for
    /// the same checks a candidate's change gets (a new or grown file above
    /// `max_new` bytes is recorded unread, and then not written).
    pub(crate) fn tree_of_scratch(
        &self,
        dir: &Path,
        max_new: u64,
    ) -> Result<(Oid, Vec<ChangedPath>)> {
        let repo = self.open_scratch(dir)?;
        let c = self.read_worktree(&repo, dir, max_new)?;
        Ok((c.contents.write_tree(&repo, dir)?, c.changed))
    }

    /// Adds a worktree detached at `commit`. libgit2 checks a worktree out on a
    /// branch, so a temporary branch carries it there and is deleted after.
    fn add_detached(&self, which: &str, path: &Path, commit: Oid) -> Result<()> {
        let name = self.worktree_name(which);
        let tmp_branch = format!("ooda-tmp/{name}");
        let c = self
            .repo
            .find_commit(commit)
            .ctx(|| format!("finding {commit}"))?;
        let b = self
            .repo
            .branch(&tmp_branch, &c, true)
            .ctx(|| format!("creating {tmp_branch}"))?;
        let r = b.into_reference();
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&r));
        self.add_worktree(&name, path, &opts)?;
        self.open_worktree(which, path)?
            .set_head_detached(commit)
            .ctx(|| "detaching the worktree".into())?;
        if let Ok(mut b) = self.repo.find_branch(&tmp_branch, BranchType::Local) {
            let _ = b.delete();
        }
        Ok(())
    }

    /// `git worktree add`, safe against another Brief adding one at the same
    /// moment: libgit2 creates `<git dir>/worktrees` itself and fails with
    /// "directory exists" when a concurrent add made it first (`ooda daemon`
    /// starts Briefs together), so it is made beforehand, idempotently.
    fn add_worktree(&self, name: &str, path: &Path, opts: &WorktreeAddOptions) -> Result<()> {
        let records = self.repo.commondir().join("worktrees");
        fs::create_dir_all(&records).ctx(|| format!("creating {}", records.display()))?;
        self.repo
            .worktree(name, path, Some(opts))
            .ctx(|| format!("creating worktree {}", path.display()))?;
        relative_commondir(&records.join(name))
    }

    /// A half-created or deleted worktree: remove git's record of it and
    /// what is left of its folder, so it can be created afresh. The record
    /// is removed by its place in this repository, not by libgit2's prune,
    /// which goes by the repository the record names: in a copied or moved
    /// project that is the original, whose record it would delete.
    fn forget_worktree(&self, which: &str, path: &Path) -> Result<()> {
        // The record an earlier release named `ooda-<brief>-replay-base`,
        // when it is this folder's (that name may be another Brief's base).
        if which.contains('-') {
            let legacy = self
                .repo
                .commondir()
                .join("worktrees")
                .join(format!("ooda-{}-{which}", self.brief));
            if record_folder(&legacy).is_some_and(|f| same_folder(&f, path)) {
                fs::remove_dir_all(&legacy)
                    .ctx(|| format!("removing git's record {}", legacy.display()))?;
            }
        }
        let record = self.worktree_record(which);
        // A record naming another folder that links back to it is a live
        // worktree of this repository in another checkout (a linked git
        // worktree running a Brief of the same name): not ours to remove.
        if let Some(other) =
            record_folder(&record).filter(|f| !same_folder(f, path) && links_to(f, &record))
        {
            return Err(Error::Input(format!(
                "git's record {} is the worktree {} of another checkout of this repository, which runs a Brief named `{}` too: one repository holds one run per Brief name (the branch {} is shared by all its checkouts); rename one of the two Briefs",
                record.display(),
                other.display(),
                self.brief,
                self.branch
            )));
        }
        if fs::symlink_metadata(&record).is_ok() {
            fs::remove_dir_all(&record)
                .ctx(|| format!("removing git's record {}", record.display()))?;
        }
        if path.exists() {
            fs::remove_dir_all(path)
                .ctx(|| format!("removing the broken worktree {}", path.display()))?;
        }
        Ok(())
    }

    /// git's name for a worktree: `ooda-<brief>-<which>`, a `-` inside
    /// `which` written `.` (no Brief name holds one), so that Brief `q`'s
    /// `replay-base` and Brief `q-replay`'s `base` are two names.
    fn worktree_name(&self, which: &str) -> String {
        format!("ooda-{}-{}", self.brief, which.replace('-', "."))
    }

    fn ensure_worktree(&self, which: &str, path: &Path, on_branch: bool) -> Result<()> {
        let name = self.worktree_name(which);
        self.heal_link(which, path)?;
        if path.join(".git").exists() && self.open_worktree(which, path).is_ok() {
            return Ok(());
        }
        self.forget_worktree(which, path)?;
        if on_branch {
            let reference = self
                .repo
                .find_reference(&format!("refs/heads/{}", self.branch))
                .ctx(|| format!("finding branch {}", self.branch))?;
            let mut opts = WorktreeAddOptions::new();
            opts.reference(Some(&reference));
            self.add_worktree(&name, path, &opts)?;
        } else {
            let tip = self
                .branch_tip()?
                .ok_or_else(|| Error::Internal("the ooda branch vanished".into()))?;
            self.add_detached(which, path, tip)?;
        }
        Ok(())
    }

    /// Makes both worktrees exactly `target`: tracked files reset, files the
    /// agent created removed (ignored build outputs stay, for fast rebuilds).
    pub(crate) fn sync(&self, target: Oid) -> Result<()> {
        self.heal_link("cand", &self.cand_dir)?;
        self.heal_link("base", &self.base_dir)?;
        let cand = self.cand_repo()?;
        let obj = cand
            .find_object(target, None)
            .ctx(|| format!("finding {target}"))?;
        defuse_links(&cand, &self.cand_dir, target)?;
        cand.reset(&obj, ResetType::Hard, Some(CheckoutBuilder::new().force()))
            .ctx(|| "resetting the candidate worktree".into())?;
        clean_untracked(&cand, &self.cand_dir)?;
        self.remove_untracked_owned(&cand, &self.cand_dir, target)?;
        let base = self.base_repo()?;
        reset_detached(&base, &self.base_dir, target)?;
        self.remove_untracked_owned(&base, &self.base_dir, target)?;
        Ok(())
    }

    /// An owned file the target commit does not track is an ignored leftover
    /// of an earlier attempt: remove it.
    fn remove_untracked_owned(&self, repo: &Repository, root: &Path, target: Oid) -> Result<()> {
        let tree = repo
            .find_commit(target)
            .and_then(|c| c.tree())
            .ctx(|| format!("reading the tree of {target}"))?;
        for rel in &self.owned {
            let p = root.join(rel);
            // Never through a link on its path: that would delete outside.
            if not_a_folder_on(root, rel).is_some() {
                continue;
            }
            if tree.get_path(Path::new(rel)).is_err() && fs::symlink_metadata(&p).is_ok() {
                fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
            }
        }
        Ok(())
    }

    pub(crate) fn cand_repo(&self) -> Result<Repository> {
        self.open_worktree("cand", &self.cand_dir)
    }

    pub(crate) fn base_repo(&self) -> Result<Repository> {
        self.open_worktree("base", &self.base_dir)
    }

    /// A worktree, opened through git's record of it in the shared git
    /// directory, never through its `.git` file: that file is in the
    /// agent's reach, and one pointing at the user's repository would make
    /// ooda reset, stage and commit there. The record is read-only to agents.
    /// The git-ignored files and folders of the worktree `which` (build
    /// outputs, for `ooda gc`), as absolute paths. The worktree is opened
    /// through git's record of it, never through its `.git` entry (an
    /// agent's reach), and every path must lie inside it by its canonical
    /// parent, so nothing outside the worktree is ever listed. ooda's own
    /// files (the knobs file) and tool files are part of a candidate even
    /// when ignored, and are never listed, nor a folder holding one.
    pub(crate) fn ignored_outputs(&self, which: &str) -> Result<Vec<PathBuf>> {
        let dir = self.dir.join(which);
        let repo = self.open_worktree(which, &dir)?;
        let root = dir
            .canonicalize()
            .ctx(|| format!("reading {}", dir.display()))?;
        let mut opts = git2::StatusOptions::new();
        opts.include_ignored(true)
            .include_untracked(false)
            .recurse_ignored_dirs(false)
            .exclude_submodules(true);
        let statuses = repo
            .statuses(Some(&mut opts))
            .map_err(|e| Error::git(format!("listing {}", dir.display()), e))?;
        let mut out = Vec::new();
        for s in statuses.iter() {
            if !s.status().contains(git2::Status::IGNORED) {
                continue;
            }
            let Ok(rel) = s.path() else { continue };
            let rel = rel.trim_end_matches('/');
            let holds_own = |o: &String| o == rel || o.starts_with(&format!("{rel}/"));
            if rel.is_empty() || is_tool_file(rel) || self.owned.iter().any(holds_own) {
                continue;
            }
            let path = root.join(rel);
            let inside = path
                .parent()
                .and_then(|p| p.canonicalize().ok())
                .is_some_and(|p| p.starts_with(&root));
            if inside && path.file_name().is_some_and(|n| n != ".git") {
                out.push(path);
            }
        }
        out.sort();
        Ok(out)
    }

    fn open_worktree(&self, which: &str, dir: &Path) -> Result<Repository> {
        let record = self.worktree_record(which);
        let repo = Repository::open(&record).ctx(|| format!("opening {}", dir.display()))?;
        // A record copied from another project names that project's
        // repository: opened, ooda would commit and reset there.
        let ours = self.repo.commondir().canonicalize().ok();
        if ours.is_none() || repo.commondir().canonicalize().ok() != ours {
            return Err(Error::Corrupt {
                path: record.clone(),
                message: format!(
                    "git's record of this worktree names the repository {}, not this one: remove {} and run `ooda tick` again to re-create it, or `ooda reset` for a fresh start",
                    repo.commondir().display(),
                    record.display()
                ),
            });
        }
        let expected = dir.canonicalize().ok();
        let actual = repo.workdir().and_then(|w| w.canonicalize().ok());
        if expected.is_none() || actual != expected {
            return Err(Error::Corrupt {
                path: record.clone(),
                message: format!(
                    "git's record of this worktree names the work tree {}, not {}: remove {} and run `ooda tick` again to re-create it, or `ooda reset` for a fresh start",
                    actual
                        .map(|a| a.display().to_string())
                        .unwrap_or_else(|| "none".into()),
                    dir.display(),
                    dir.display()
                ),
            });
        }
        Ok(repo)
    }

    fn worktree_record(&self, which: &str) -> PathBuf {
        self.repo
            .commondir()
            .join("worktrees")
            .join(self.worktree_name(which))
    }

    /// Rewrites a worktree's `.git` file when it no longer points at git's
    /// record of it (an agent replaced it), so the agent's own git commands
    /// and ooda's agree on which repository this is.
    fn heal_link(&self, which: &str, dir: &Path) -> Result<()> {
        let record = self.worktree_record(which);
        let link = dir.join(".git");
        let want = format!("gitdir: {}\n", record.display());
        let is_file = fs::symlink_metadata(&link).is_ok_and(|m| m.is_file());
        let points_right = is_file
            && fs::read_to_string(&link).is_ok_and(|t| {
                let named = t.trim().strip_prefix("gitdir:").map(str::trim);
                let named = named.and_then(|n| dir.join(n).canonicalize().ok());
                named.is_some() && named == record.canonicalize().ok()
            });
        if record.is_dir() && dir.is_dir() && !points_right {
            if fs::symlink_metadata(&link).is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(&link).ctx(|| format!("removing {}", link.display()))?;
            }
            crate::atomic::write_atomic(&link, want.as_bytes())?;
        }
        Ok(())
    }

    /// Undoes commits an agent made in the candidate worktree, keeping their
    /// changes as uncommitted edits: the runner owns the branch, and the scope
    /// check compares the worktree with the base commit. Returns what was
    /// undone, for the record (`None` when HEAD is where the runner left it).
    pub(crate) fn undo_foreign_commits(&self, base: Oid) -> Result<Option<String>> {
        let repo = self.cand_repo()?;
        let head = repo.head().ok();
        let on_branch = head
            .as_ref()
            .and_then(|h| h.shorthand().ok().map(|s| s == self.branch))
            .unwrap_or(false);
        let at = head.as_ref().and_then(|h| h.target());
        if on_branch && at == Some(base) {
            return Ok(None);
        }
        if !on_branch {
            repo.set_head(&format!("refs/heads/{}", self.branch))
                .ctx(|| format!("moving the candidate back to {}", self.branch))?;
        }
        let obj = repo
            .find_object(base, None)
            .ctx(|| format!("finding {base}"))?;
        repo.reset(&obj, ResetType::Mixed, None)
            .ctx(|| "undoing the agent's commits".into())?;
        Ok(Some(format!(
            "the agent moved the candidate's HEAD ({}); the runner reset it to the base commit {}, keeping the agent's edits uncommitted",
            at.map(|o| crate::text::clip::short(&o.to_string()).to_string())
                .unwrap_or_else(|| "unborn".into()),
            crate::text::clip::short(&base.to_string())
        )))
    }

    /// The candidate's files read from disk, index flags ignored, against
    /// its HEAD (the base); files above `max_new` bytes that are new or grew
    /// are recorded unread. Writes nothing to the repository.
    pub(crate) fn candidate(&self, max_new: u64) -> Result<Candidate> {
        self.read_worktree(&self.cand_repo()?, &self.cand_dir, max_new)
    }

    /// What changed in a scratch worktree against its HEAD (a replay's).
    pub(crate) fn scratch_changes(&self, dir: &Path, max_new: u64) -> Result<Candidate> {
        self.read_worktree(&self.open_scratch(dir)?, dir, max_new)
    }

    /// The commit a scratch worktree's HEAD is at.
    pub(crate) fn scratch_head(&self, dir: &Path) -> Result<Oid> {
        let repo = self.open_scratch(dir)?;
        repo.head()
            .ok()
            .and_then(|h| h.target())
            .ok_or_else(|| Error::Internal(format!("{} has no HEAD", dir.display())))
    }

    /// Moves a scratch worktree's HEAD back to `to` when an agent committed
    /// there, keeping its edits as uncommitted changes: what is checked
    /// (the scope, the knobs file) is always against `to`. Whether it moved.
    pub(crate) fn rewind_scratch(&self, dir: &Path, to: Oid) -> Result<bool> {
        let repo = self.open_scratch(dir)?;
        if repo.head().ok().and_then(|h| h.target()) == Some(to) {
            return Ok(false);
        }
        let obj = repo.find_object(to, None).ctx(|| format!("finding {to}"))?;
        repo.set_head_detached(to)
            .ctx(|| format!("moving {}", dir.display()))?;
        repo.reset(&obj, ResetType::Mixed, None)
            .ctx(|| format!("rewinding {}", dir.display()))?;
        Ok(true)
    }

    /// A scratch worktree (`scratch`'s folder), opened through git's record
    /// of it like the loop's own: an agent worked there, and its `.git`
    /// entry may now name any repository.
    fn open_scratch(&self, dir: &Path) -> Result<Repository> {
        let which = dir
            .strip_prefix(&self.dir)
            .ok()
            .and_then(|r| r.to_str())
            .filter(|w| !w.is_empty() && !w.contains('/'))
            .ok_or_else(|| {
                Error::Internal(format!(
                    "{} is not a worktree of {}",
                    dir.display(),
                    self.dir.display()
                ))
            })?;
        self.open_worktree(which, dir)
    }

    /// A worktree's files read from disk against its HEAD (see `candidate`).
    fn read_worktree(&self, repo: &Repository, root: &Path, max_new: u64) -> Result<Candidate> {
        let head = head_tree(repo)?;
        let contents = contents::Walk {
            repo,
            root,
            base: &head,
            owned: &self.owned,
            max_new,
            skip_new: is_tool_file,
        }
        .read()?;
        let changed = changed_paths(&contents);
        Ok(Candidate { changed, contents })
    }

    /// Lines the change adds that look like a secret (a key, a token, a
    /// private key block, a secret environment value), as
    /// `path:line: text` with the secret masked. Read from the files, before
    /// anything is stored: a secret must never reach the object store.
    pub(crate) fn secrets_added(&self, changed: &[ChangedPath]) -> Result<Vec<String>> {
        let repo = self.cand_repo()?;
        let head = head_tree(&repo)?;
        let mut out = Vec::new();
        for c in changed {
            // A path, or a symlink's target, is stored in the tree too.
            if crate::text::redact::adds_secret(&c.path)
                || c.link
                    .as_deref()
                    .is_some_and(crate::text::redact::adds_secret)
            {
                out.push(format!(
                    "{}: its name or link target",
                    crate::text::redact::redact(&c.path)
                ));
                continue;
            }
            if c.kind == "deleted" || c.unread || c.link.is_some() {
                continue;
            }
            let Ok(bytes) = fs::read(self.cand_dir.join(&c.path)) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let base_text: String = head
                .get_path(Path::new(&c.path))
                .ok()
                .and_then(|e| repo.find_blob(e.id()).ok())
                .map(|b| String::from_utf8_lossy(b.content()).into_owned())
                .unwrap_or_default();
            let before: std::collections::BTreeSet<&str> = base_text.lines().collect();
            // Multi-line secrets (a private key block) are matched on the
            // whole text; a line is named when it holds one by itself.
            let whole_changed = crate::text::redact::adds_secret(&text);
            let mut found = false;
            for (i, line) in text.lines().enumerate() {
                if before.contains(line) {
                    continue;
                }
                if crate::text::redact::adds_secret(line) {
                    let masked = crate::text::redact::redact(line);
                    out.push(format!(
                        "{}:{}: {}",
                        c.path,
                        i + 1,
                        crate::text::clip::clip(masked.trim(), 120)
                    ));
                    found = true;
                }
            }
            if whole_changed && !found && !crate::text::redact::adds_secret(&base_text) {
                out.push(format!(
                    "{}: a private key block or another multi-line secret",
                    c.path
                ));
            }
        }
        Ok(out)
    }

    /// Every file of the candidate with what changes when it is written,
    /// to find what a step wrote.
    pub(crate) fn file_stats(&self) -> Result<BTreeMap<PathBuf, FileStat>> {
        use std::os::unix::fs::MetadataExt;
        let mut out = BTreeMap::new();
        let mut stack = vec![self.cand_dir.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if dir == self.cand_dir && e.file_name() == ".git" {
                    continue;
                }
                let Ok(m) = fs::symlink_metadata(&p) else {
                    continue;
                };
                if m.is_dir() {
                    stack.push(p);
                } else {
                    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
                    out.insert(
                        p,
                        (
                            m.size(),
                            ns(m.mtime(), m.mtime_nsec()),
                            ns(m.ctime(), m.ctime_nsec()),
                            m.ino(),
                            m.mode(),
                        ),
                    );
                }
            }
        }
        Ok(out)
    }

    /// Removes the git-ignored files and the caches ([`is_cache_file`]) a
    /// step created or changed since `before` (not ooda's own files): they
    /// would be measured but never committed (and a cache left there would
    /// be read as the change, or let a planted `.pyc` be measured). Returns them, relative to the worktree, and whether the
    /// step wrote, created or removed any other file. Reads metadata only
    /// and stores nothing: what a step wrote may be a blocked file that
    /// must never reach the object store.
    pub(crate) fn remove_new_ignored(
        &self,
        before: &BTreeMap<PathBuf, FileStat>,
    ) -> Result<(Vec<String>, bool)> {
        let repo = self.cand_repo()?;
        let head = repo.head().and_then(|h| h.peel_to_tree()).ok();
        let after = self.file_stats()?;
        let mut removed = Vec::new();
        let mut edited = before.keys().any(|p| !after.contains_key(p));
        for (p, stat) in &after {
            if before.get(p) == Some(stat) {
                continue;
            }
            let Some(rel) = p
                .strip_prefix(&self.cand_dir)
                .ok()
                .and_then(|r| r.to_str())
                .map(str::to_string)
            else {
                // A name that is not UTF-8 is never git-ignored here.
                edited = true;
                continue;
            };
            let tracked = head
                .as_ref()
                .is_some_and(|t| t.get_path(Path::new(&rel)).is_ok());
            if tracked || !(repo.is_path_ignored(&rel).unwrap_or(false) || is_cache_file(&rel)) {
                edited = true;
            } else if !self.owned.contains(&rel) && !is_tool_file(&rel) {
                fs::remove_file(p).ctx(|| format!("removing {}", p.display()))?;
                removed.push(rel);
            }
        }
        removed.sort();
        Ok((removed, edited))
    }

    /// Stores a checked candidate's blobs and tree; returns the tree.
    pub(crate) fn write_tree(&self, contents: &Contents) -> Result<Oid> {
        contents.write_tree(&self.cand_repo()?, &self.cand_dir)
    }

    /// What changed in the base worktree since `tree` (its commit's) was
    /// checked out: a measured command that rewrote a tracked file there.
    /// The base runs the user's own code: every new file there is an
    /// output, and only a changed committed file counts.
    pub(crate) fn base_since(&self, tree: Oid, max_new: u64) -> Result<contents::Since> {
        let repo = self.base_repo()?;
        let c = self.read_worktree(&repo, &self.base_dir, max_new)?;
        c.contents.since(&repo, tree, &|_| true)
    }

    /// The candidate now, and what changed in it since `tree` was recorded
    /// ([`Contents::since`]), a new file explained when the base's runs
    /// wrote the same path (read only when there is one to explain): its
    /// changes against the base leave out the outputs.
    pub(crate) fn since(&self, tree: Oid, max_new: u64) -> Result<(Candidate, contents::Since)> {
        let mut c = self.candidate(max_new)?;
        let base_new = std::cell::OnceCell::new();
        let explained = |p: &str| {
            base_new
                .get_or_init(|| self.new_files_in(&self.base_dir, max_new))
                .contains(p)
        };
        let since = c.contents.since(&self.cand_repo()?, tree, &explained)?;
        c.changed.retain(|p| !since.outputs.contains(&p.path));
        Ok((c, since))
    }

    /// A scratch worktree (the simplified candidate's) against `tree`, a
    /// new file explained when the candidate's worktree, measured beside
    /// it, has the same one.
    pub(crate) fn scratch_since(
        &self,
        dir: &Path,
        tree: Oid,
        max_new: u64,
    ) -> Result<contents::Since> {
        let repo = self.open_scratch(dir)?;
        let c = self.read_worktree(&repo, dir, max_new)?;
        let cand_new = std::cell::OnceCell::new();
        let explained = |p: &str| {
            cand_new
                .get_or_init(|| self.new_files_in(&self.cand_dir, max_new))
                .contains(p)
        };
        c.contents.since(&repo, tree, &explained)
    }

    /// The files of the base or candidate worktree its HEAD does not have
    /// (none when it cannot be read: nothing is then explained).
    fn new_files_in(&self, dir: &Path, max_new: u64) -> std::collections::BTreeSet<String> {
        let repo = if dir == self.base_dir {
            self.base_repo()
        } else {
            self.cand_repo()
        };
        repo.and_then(|r| self.read_worktree(&r, dir, max_new))
            .map(|c| c.contents.new_files())
            .unwrap_or_default()
    }

    /// The candidate's change as a patch (untracked files included).
    pub(crate) fn diff(&self) -> Result<String> {
        let repo = self.cand_repo()?;
        let head = head_tree(&repo)?;
        let mut opts = DiffOptions::new();
        // A blocked 1 GiB file is named in the patch, not loaded into it.
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .max_size(crate::brief::DEFAULT_MAX_FILE_SIZE as i64);
        let diff = repo
            .diff_tree_to_workdir_with_index(Some(&head), Some(&mut opts))
            .ctx(|| "diffing the candidate".into())?;
        patch_text(&diff)
    }

    /// Writes the candidate, read from its files, as a commit on top of
    /// `parent` without moving any reference. Returns (commit, tree).
    pub(crate) fn prepare_commit(&self, parent: Oid, message: &str) -> Result<(Oid, Oid)> {
        let c = self.candidate(u64::MAX)?;
        let tree = self.write_tree(&c.contents)?;
        Ok((self.commit_tree(parent, tree, message)?, tree))
    }

    /// A commit of a tree recorded earlier (the candidate as measured), on
    /// top of `parent`, without moving any reference. Building from the
    /// recorded tree, not the live worktree, means nothing written after
    /// measuring (an agent's LEARN-time edits, a half-finished step before a
    /// kill) can slip into a kept commit.
    pub(crate) fn commit_tree(&self, parent: Oid, tree: Oid, message: &str) -> Result<Oid> {
        let tree = self
            .repo
            .find_tree(tree)
            .ctx(|| format!("finding the measured tree {tree}"))?;
        let parent = self
            .repo
            .find_commit(parent)
            .ctx(|| "finding the parent commit".into())?;
        let sig = Signature::now("ooda", "ooda@localhost").ctx(|| "making a signature".into())?;
        self.repo
            .commit(None, &sig, &sig, message, &tree, &[&parent])
            .ctx(|| "writing the commit".into())
    }

    /// The patch from a commit to a recorded tree (a discarded candidate as measured).
    pub(crate) fn diff_to_tree(&self, base: Oid, tree: Oid) -> Result<String> {
        patch_text(&self.tree_diff(base, tree)?)
    }

    fn tree_diff(&self, base: Oid, tree: Oid) -> Result<git2::Diff<'_>> {
        self.tree_diff_with(base, tree, None)
    }

    fn tree_diff_with(
        &self,
        base: Oid,
        tree: Oid,
        opts: Option<&mut DiffOptions>,
    ) -> Result<git2::Diff<'_>> {
        let old = self
            .repo
            .find_commit(base)
            .and_then(|c| c.tree())
            .ctx(|| format!("reading {base}"))?;
        let new = self
            .repo
            .find_tree(tree)
            .ctx(|| format!("finding the measured tree {tree}"))?;
        self.repo
            .diff_tree_to_tree(Some(&old), Some(&new), opts)
            .ctx(|| "diffing the candidate".into())
    }

    /// The change from a commit to a recorded tree, file by file and as a
    /// patch: what a reviewer reads. Text is forced on, so one NUL byte
    /// cannot make a source file "binary" and its lines invisible to the
    /// rules; a file is binary when one of its sides is not UTF-8. A moved
    /// file is a rename, not a deletion and an addition.
    pub(crate) fn change(&self, base: Oid, tree: Oid) -> Result<crate::model::Change> {
        use crate::model::{FileChange, FileStatus};
        let mut opts = DiffOptions::new();
        opts.force_text(true);
        let mut diff = self.tree_diff_with(base, tree, Some(&mut opts))?;
        diff.find_similar(Some(git2::DiffFindOptions::new().renames(true)))
            .ctx(|| "finding renames".into())?;
        let not_text = |id: Oid| {
            !id.is_zero()
                && self
                    .repo
                    .find_blob(id)
                    .is_ok_and(|b| std::str::from_utf8(b.content()).is_err())
        };
        let mut files = Vec::new();
        for (i, delta) in diff.deltas().enumerate() {
            let status = match delta.status() {
                git2::Delta::Added => FileStatus::Added,
                git2::Delta::Deleted => FileStatus::Deleted,
                _ => FileStatus::Modified,
            };
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let binary = not_text(delta.old_file().id()) || not_text(delta.new_file().id());
            let old_path = (delta.status() == git2::Delta::Renamed)
                .then(|| delta.old_file().path())
                .flatten()
                .map(|p| p.to_string_lossy().into_owned());
            let mut f = FileChange {
                path,
                old_path,
                status,
                binary,
                added: Vec::new(),
                removed: Vec::new(),
            };
            if !binary
                && let Some(patch) =
                    git2::Patch::from_diff(&diff, i).ctx(|| "reading a patch".into())?
            {
                for h in 0..patch.num_hunks() {
                    let n = patch.num_lines_in_hunk(h).ctx(|| "reading a hunk".into())?;
                    for l in 0..n {
                        let line = patch.line_in_hunk(h, l).ctx(|| "reading a line".into())?;
                        let text = String::from_utf8_lossy(line.content())
                            .trim_end_matches(['\n', '\r'])
                            .to_string();
                        match line.origin() {
                            '+' => f.added.push((line.new_lineno().unwrap_or(0), text)),
                            '-' => f.removed.push((line.old_lineno().unwrap_or(0), text)),
                            _ => {}
                        }
                    }
                }
            }
            files.push(f);
        }
        Ok(crate::model::Change {
            files,
            patch: patch_text(&diff)?,
        })
    }

    /// Publishes a kept commit: the branch advances and both worktrees follow.
    pub(crate) fn advance(&self, commit: Oid) -> Result<()> {
        self.set_branch(commit)?;
        self.sync(commit)
    }

    /// Keeps a commit reachable under a reference of ooda's own (e.g. the
    /// tip a divergence rollback moved away from), so nothing is lost.
    /// `ooda reset`: removes the Brief's worktrees (and git's records of
    /// them), deletes the branch `ooda/<brief>`, and moves the refs ooda kept
    /// under `refs/ooda/<brief>/` to `refs/ooda/<brief>.<suffix>/`, beside
    /// the archive moved aside with the same suffix. Returns what it did.
    pub(crate) fn remove(&self, suffix: &str) -> Result<Vec<String>> {
        let mut done = Vec::new();
        if let Ok(head) = self.repo.head()
            && head.name().ok() == Some(format!("refs/heads/{}", self.branch).as_str())
        {
            return Err(Error::Input(format!(
                "your checkout has {} checked out: switch to another branch first (ooda never deletes the branch you are on)",
                self.branch
            )));
        }
        for which in WORKTREES {
            let path = self.dir.join(which);
            let name = self.worktree_name(which);
            // By this repository's record and this Brief's folder, never by
            // the folder a record names (libgit2's prune): in a copied
            // project that is the original's.
            if self.worktree_record(which).exists() || path.exists() {
                self.forget_worktree(which, &path)?;
                done.push(format!("removed the worktree {}", path.display()));
            }
            if let Ok(mut b) = self
                .repo
                .find_branch(&format!("ooda-tmp/{name}"), BranchType::Local)
            {
                let _ = b.delete();
            }
        }
        if self.dir.exists() {
            let _ = fs::remove_dir(&self.dir);
        }
        if let Ok(mut b) = self.repo.find_branch(&self.branch, BranchType::Local) {
            let tip = b.get().target().map(|o| o.to_string()).unwrap_or_default();
            b.delete()
                .ctx(|| format!("deleting branch {}", self.branch))?;
            done.push(format!(
                "deleted branch {} (it was at {}; `git branch {} {}` restores it)",
                self.branch,
                crate::text::clip::short(&tip),
                self.branch,
                crate::text::clip::short(&tip)
            ));
        }
        let prefix = format!("refs/ooda/{}/", self.brief);
        let kept: Vec<(String, Oid)> = self
            .repo
            .references_glob(&format!("{prefix}*"))
            .ctx(|| format!("listing {prefix}*"))?
            .flatten()
            .filter_map(|r| Some((r.name().ok()?.to_string(), r.target()?)))
            .collect();
        for (name, target) in kept {
            let moved = format!(
                "refs/ooda/{}.{suffix}/{}",
                self.brief,
                name.trim_start_matches(&prefix)
            );
            self.keep_ref(&moved, target)?;
            self.repo
                .find_reference(&name)
                .and_then(|mut r| r.delete())
                .ctx(|| format!("removing {name}"))?;
            done.push(format!("moved {name} to {moved}"));
        }
        Ok(done)
    }

    pub(crate) fn keep_ref(&self, name: &str, commit: Oid) -> Result<()> {
        self.repo
            .reference(name, commit, true, "ooda: keep")
            .map(|_| ())
            .ctx(|| format!("creating {name}"))
    }

    /// The tree of a commit, for exact-cycle detection.
    pub(crate) fn tree_of(&self, commit: Oid) -> Result<Oid> {
        self.repo
            .find_commit(commit)
            .map(|c| c.tree_id())
            .ctx(|| format!("reading commit {commit}"))
    }

    /// Moves ooda's branch through the reference API: libgit2 refuses to
    /// force a branch that a worktree has checked out, but the candidate
    /// worktree is ours and is reset right after.
    fn set_branch(&self, commit: Oid) -> Result<()> {
        self.repo
            .reference(
                &format!("refs/heads/{}", self.branch),
                commit,
                true,
                "ooda: advance",
            )
            .map(|_| ())
            .ctx(|| format!("moving branch {} to {commit}", self.branch))
    }
}

/// The worktree folder git's record names (its `gitdir` file names the
/// folder's `.git`).
fn record_folder(record: &Path) -> Option<PathBuf> {
    let gitdir = fs::read_to_string(record.join("gitdir")).ok()?;
    Path::new(gitdir.trim()).parent().map(Path::to_path_buf)
}

/// Whether two paths are one folder: the same path, or the same existing
/// folder by another way.
fn same_folder(a: &Path, b: &Path) -> bool {
    a == b
        || a.canonicalize()
            .is_ok_and(|c| Some(c) == b.canonicalize().ok())
}

/// Whether the worktree folder `dir`'s `.git` file names `record`.
fn links_to(dir: &Path, record: &Path) -> bool {
    fs::read_to_string(dir.join(".git")).is_ok_and(|t| {
        t.trim()
            .strip_prefix("gitdir:")
            .map(|g| dir.join(g.trim()))
            .and_then(|g| g.canonicalize().ok())
            == record.canonicalize().ok()
    })
}

/// What to do in a repository without a commit: ooda measures and
/// branches from the committed `HEAD`.
pub(crate) fn no_commit_yet() -> String {
    "the repository has no commit yet: ooda measures the committed HEAD and branches from it; commit your project first (`git add -A && git commit -m start`)".into()
}

/// Points a worktree record's `commondir` at the repository relatively
/// (`../..`, as `git worktree add` writes it). libgit2 writes the absolute
/// path: once the project folder is moved, that names a folder that is
/// gone, and `git worktree list`, `git gc` and `git fsck` in the user's
/// repository fail on it; in a copy it names the original's repository.
/// The record lives at `<commondir>/worktrees/<name>`, so `../..` is right
/// wherever the folder goes.
fn relative_commondir(record: &Path) -> Result<()> {
    let file = record.join("commondir");
    let Ok(text) = fs::read_to_string(&file) else {
        return Ok(());
    };
    if Path::new(text.trim()).is_absolute() {
        crate::atomic::write_atomic(&file, b"../..\n")?;
    }
    Ok(())
}

/// Makes a detached worktree exactly `commit`: HEAD, index, files.
fn reset_detached(repo: &Repository, root: &Path, commit: Oid) -> Result<()> {
    defuse_links(repo, root, commit)?;
    repo.set_head_detached(commit)
        .ctx(|| format!("moving {}", root.display()))?;
    let obj = repo
        .find_object(commit, None)
        .ctx(|| format!("finding {commit}"))?;
    repo.reset(&obj, ResetType::Hard, Some(CheckoutBuilder::new().force()))
        .ctx(|| format!("resetting {}", root.display()))?;
    clean_untracked(repo, root)
}

/// The first folder on `rel`'s path beneath `root` that is there but is no
/// real folder (relative to `root`, and whether it is a symlink): a write
/// or a removal by that path would reach through it. `None` when every
/// folder is real, or missing (nothing below it to reach).
fn not_a_folder_on(root: &Path, rel: &str) -> Option<(String, bool)> {
    let parts: Vec<&str> = rel.split('/').collect();
    let mut at = root.to_path_buf();
    for (i, part) in parts[..parts.len().saturating_sub(1)].iter().enumerate() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => return Some((parts[..=i].join("/"), m.file_type().is_symlink())),
            Err(_) => return None,
        }
    }
    None
}

/// Removes the symlinks an agent planted where a reset is about to write.
///
/// A forced checkout writes each tracked file by its path. A folder the
/// agent replaced with a link (`src -> /home/me/project/src`) would have the
/// base's files written through it: into the user's checkout, over their
/// uncommitted work, or into `$HOME`. So before any reset every tracked path
/// of the target commit and of the worktree's index (what the reset
/// removes) is checked component by component, and a link found on it is
/// removed as a link (nothing it points at is touched); the reset then puts
/// back what the commit holds, tracked links included. Returns the links
/// removed.
pub(crate) fn defuse_links(repo: &Repository, root: &Path, target: Oid) -> Result<Vec<String>> {
    use std::os::unix::ffi::OsStrExt;
    let mut paths: Vec<Vec<u8>> = Vec::new();
    let tree = repo
        .find_commit(target)
        .and_then(|c| c.tree())
        .ctx(|| format!("reading the tree of {target}"))?;
    // By hand, not `Tree::walk`: that hands folder names over as UTF-8
    // and fails on any other.
    let mut stack = vec![(Vec::new(), tree)];
    while let Some((dir, tree)) = stack.pop() {
        for entry in tree.iter() {
            let mut p = dir.clone();
            p.extend_from_slice(entry.name_bytes());
            if entry.kind() == Some(git2::ObjectType::Tree) {
                let sub = repo
                    .find_tree(entry.id())
                    .ctx(|| format!("reading a folder of {target}"))?;
                p.push(b'/');
                stack.push((p, sub));
            } else {
                paths.push(p);
            }
        }
    }
    if let Ok(index) = repo.index() {
        paths.extend(index.iter().map(|e| e.path));
    }
    let mut checked = std::collections::HashSet::new();
    let mut removed = Vec::new();
    for rel in &paths {
        let mut at = root.to_path_buf();
        for part in rel.split(|b| *b == b'/') {
            if part.is_empty() || part == b"." || part == b".." {
                break;
            }
            at.push(std::ffi::OsStr::from_bytes(part));
            if !checked.insert(at.clone()) {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(&at) else {
                break; // missing: nothing below it to write through
            };
            if meta.file_type().is_symlink() {
                fs::remove_file(&at).ctx(|| format!("removing the link {}", at.display()))?;
                removed.push(at.strip_prefix(root).unwrap_or(&at).display().to_string());
                break;
            }
            if !meta.is_dir() {
                break;
            }
        }
    }
    Ok(removed)
}

fn patch_text(diff: &git2::Diff) -> Result<String> {
    let mut text = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin() as u8);
        }
        text.extend_from_slice(line.content());
        true
    })
    .ctx(|| "printing a diff".into())?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Removes untracked, non-ignored files and the folders they leave empty.
/// Symlinks are removed as links; nothing outside `root` is ever touched.
fn clean_untracked(repo: &Repository, root: &Path) -> Result<()> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .ctx(|| format!("reading status of {}", root.display()))?;
    let mut dirs = Vec::new();
    for s in statuses.iter() {
        if !s.status().is_wt_new() {
            continue;
        }
        let Ok(rel) = s.path() else { continue };
        let rel = rel.trim_end_matches('/');
        if rel.is_empty() || rel.split('/').any(|c| c == ".." || c.is_empty()) {
            continue;
        }
        let p = root.join(rel);
        let Ok(meta) = fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            fs::remove_dir_all(&p).ctx(|| format!("removing {}", p.display()))?;
        } else {
            fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
        }
        let mut parent = p.parent().map(Path::to_path_buf);
        while let Some(d) = parent {
            if d == root || !d.starts_with(root) {
                break;
            }
            dirs.push(d.clone());
            parent = d.parent().map(Path::to_path_buf);
        }
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs {
        let _ = fs::remove_dir(&d); // fails harmlessly when not empty
    }
    Ok(())
}

/// A file a language's tooling writes beside the code when the code runs or
/// is tested, never written by hand and never committed: Python's bytecode
/// cache (`__pycache__/`), the caches of pytest, mypy, ruff, hypothesis,
/// tox and nox, setuptools' `*.egg-info/` and `.eggs/`, Jupyter's
/// checkpoints; and, for every other ecosystem, what a tool names a hidden
/// cache: a folder or file whose name starts with a dot and ends in
/// "cache" (`.cache/`, `.parcel-cache/`, `.sass-cache/`, `.eslintcache`,
/// `.stylelintcache`). An agent that runs the code while editing leaves
/// them even where the project's `.gitignore` does not name them; they are
/// removed like ignored files, not taken as its change. A `.pyc` outside
/// `__pycache__` is not one (Python imports it as a module of its own), nor
/// a visible `cache/` folder, which a project may keep its sources in.
pub(crate) fn is_cache_file(rel_path: &str) -> bool {
    const DIRS: [&str; 9] = [
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".eggs",
        ".ipynb_checkpoints",
    ];
    let hidden_cache =
        |p: &str| p.len() > 1 && p.starts_with('.') && p.to_ascii_lowercase().ends_with("cache");
    let mut parts = rel_path.split('/').peekable();
    while let Some(p) = parts.next() {
        let dir = parts.peek().is_some();
        if hidden_cache(p) || (dir && (DIRS.contains(&p) || p.ends_with(".egg-info"))) {
            return true;
        }
    }
    false
}

/// A file an agent tool writes for itself in its working directory (aider's
/// `.aider.chat.history.md`, `.aider.tags.cache.v4/`): a new one is not
/// the agent's change, so it is neither a scope violation nor committed.
/// A committed file of that name (a project's `.aider.conf.yml`) counts as
/// usual when it changes.
pub(crate) fn is_tool_file(rel_path: &str) -> bool {
    rel_path
        .split('/')
        .next()
        .is_some_and(|top| top.starts_with(".aider"))
}

/// The tree of the candidate's HEAD (its base commit): what changes are
/// read against.
/// The changed paths of a worktree's contents, as the scope checks read them.
fn changed_paths(contents: &Contents) -> Vec<ChangedPath> {
    contents
        .changes()
        .into_iter()
        .map(|(path, kind)| {
            let f = contents.files.get(&path);
            ChangedPath {
                kind: kind.as_str(),
                size: f.map_or(0, |f| f.size),
                link: f
                    .and_then(|f| f.link.as_ref())
                    .map(|l| String::from_utf8_lossy(l).into_owned()),
                unread: f.is_some_and(|f| f.oid.is_none()),
                path,
            }
        })
        .collect()
}

fn head_tree(repo: &Repository) -> Result<git2::Tree<'_>> {
    repo.head()
        .and_then(|h| h.peel_to_tree())
        .ctx(|| "reading the candidate's HEAD".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::IndexAddOption;

    fn repo_with_commit(dir: &Path) -> Oid {
        let repo = Repository::init(dir).unwrap();
        fs::write(dir.join("a.txt"), "one\n").unwrap();
        fs::write(dir.join(".gitignore"), "/.ooda/\ntarget/\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("t", "t@t").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap()
    }

    #[test]
    fn a_change_reads_lines_through_nul_bytes_finds_renames_and_a_scratch_copy_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let start = repo_with_commit(dir.path());
        let ws = Workspace::open(dir.path(), &dir.path().join(".ooda/worktrees/b"), "b").unwrap();
        ws.ensure(start).unwrap();
        fs::write(ws.cand_dir.join("a.txt"), "one\n\0 dbg!(x);\n").unwrap();
        fs::write(ws.cand_dir.join("blob.bin"), [0xffu8, 0xfe, 0, 1]).unwrap();
        let c = ws.candidate(u64::MAX).unwrap();
        let tree = ws.write_tree(&c.contents).unwrap();
        let change = ws.change(start, tree).unwrap();
        let a = change.files.iter().find(|f| f.path == "a.txt").unwrap();
        assert!(!a.binary, "one NUL byte does not hide a text file");
        assert_eq!(a.added, vec![(2, "\0 dbg!(x);".to_string())]);
        let b = change.files.iter().find(|f| f.path == "blob.bin").unwrap();
        assert!(b.binary && b.added.is_empty());
        // A scratch copy holds exactly the tree, and reads back as it.
        let scratch = ws.scratch_of_tree("simplify", start, tree, true).unwrap();
        assert_eq!(
            fs::read(scratch.join("blob.bin")).unwrap(),
            [0xffu8, 0xfe, 0, 1]
        );
        assert_eq!(ws.tree_of_scratch(&scratch, u64::MAX).unwrap().0, tree);
        // A moved file is a rename, not a deletion and an addition.
        fs::rename(scratch.join("a.txt"), scratch.join("b.txt")).unwrap();
        let moved = ws.tree_of_scratch(&scratch, u64::MAX).unwrap().0;
        let commit = ws.commit_tree(start, tree, "kept").unwrap();
        let change = ws.change(commit, moved).unwrap();
        assert_eq!(change.files.len(), 1, "{:?}", change.files);
        assert_eq!(change.files[0].path, "b.txt");
        assert_eq!(change.files[0].status, crate::model::FileStatus::Modified);
        assert_eq!(change.files[0].old_path.as_deref(), Some("a.txt"));
    }

    #[test]
    fn keep_and_discard_cycle() {
        let dir = tempfile::tempdir().unwrap();
        let start = repo_with_commit(dir.path());
        let ws = Workspace::open(dir.path(), &dir.path().join(".ooda/worktrees/b"), "b").unwrap();
        ws.ensure(start).unwrap();
        assert_eq!(
            fs::read_to_string(ws.base_dir.join("a.txt")).unwrap(),
            "one\n"
        );

        // Discard: an edit and a new file disappear; ignored outputs survive.
        fs::write(ws.cand_dir.join("a.txt"), "two\n").unwrap();
        fs::create_dir_all(ws.cand_dir.join("new/deep")).unwrap();
        fs::write(ws.cand_dir.join("new/deep/f.txt"), "x").unwrap();
        fs::create_dir_all(ws.cand_dir.join("target")).unwrap();
        fs::write(ws.cand_dir.join("target/out"), "bin").unwrap();
        let changed: Vec<_> = ws
            .candidate(u64::MAX)
            .unwrap()
            .changed
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(changed, vec!["a.txt", "new/deep/f.txt"]);
        assert!(ws.diff().unwrap().contains("+two"));
        ws.sync(start).unwrap();
        assert_eq!(
            fs::read_to_string(ws.cand_dir.join("a.txt")).unwrap(),
            "one\n"
        );
        assert!(!ws.cand_dir.join("new").exists());
        assert!(ws.cand_dir.join("target/out").exists());

        // Keep: the branch advances and base follows; the user's HEAD does not move.
        fs::write(ws.cand_dir.join("a.txt"), "three\n").unwrap();
        let c = ws.candidate(u64::MAX).unwrap();
        let tree = ws.write_tree(&c.contents).unwrap();
        let (commit, tree2) = ws.prepare_commit(start, "keep").unwrap();
        assert_eq!(tree, tree2);
        assert_eq!(ws.branch_tip().unwrap(), Some(start));
        ws.advance(commit).unwrap();
        assert_eq!(ws.branch_tip().unwrap(), Some(commit));
        assert_eq!(
            fs::read_to_string(ws.base_dir.join("a.txt")).unwrap(),
            "three\n"
        );
        assert_eq!(ws.user_head().unwrap(), start);
        assert_eq!(
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\n"
        );

        // Idempotent: ensuring again with a deleted base worktree repairs it.
        fs::remove_dir_all(&ws.base_dir).unwrap();
        ws.ensure(commit).unwrap();
        assert_eq!(
            fs::read_to_string(ws.base_dir.join("a.txt")).unwrap(),
            "three\n"
        );
    }

    /// A project copied (or moved) with its `.ooda/` and `.git/` carries
    /// git's records of the original's worktrees, which name the original's
    /// folders: the copy makes its own, and the original's keep working.
    #[test]
    fn a_copied_project_makes_its_own_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir(&a).unwrap();
        let start = repo_with_commit(&a);
        let ws = Workspace::open(&a, &a.join(".ooda/worktrees/q"), "q").unwrap();
        ws.ensure(start).unwrap();
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(&a)
            .arg(&b)
            .status()
            .unwrap();
        assert!(copied.success());
        let copy = Workspace::open(&b, &b.join(".ooda/worktrees/q"), "q").unwrap();
        copy.ensure(start).unwrap();
        for (w, root) in [(&copy, &b), (&ws, &a)] {
            for (repo, which) in [
                (w.cand_repo().unwrap(), "cand"),
                (w.base_repo().unwrap(), "base"),
            ] {
                assert_eq!(
                    repo.workdir().unwrap().canonicalize().unwrap(),
                    root.join(".ooda/worktrees/q")
                        .join(which)
                        .canonicalize()
                        .unwrap()
                );
            }
        }
        fs::write(copy.cand_dir.join("a.txt"), "copy\n").unwrap();
        assert_eq!(
            fs::read_to_string(ws.cand_dir.join("a.txt")).unwrap(),
            "one\n"
        );
        assert!(copy.diff().unwrap().contains("+copy"));
        assert!(!ws.diff().unwrap().contains("+copy"));
    }

    /// An agent that worked in a scratch worktree may leave its `.git`
    /// naming the user's repository: the next use of that scratch goes by
    /// git's record, never moving the user's HEAD or index.
    #[test]
    fn a_scratch_whose_git_link_names_the_users_repository_is_healed() {
        let dir = tempfile::tempdir().unwrap();
        let start = repo_with_commit(dir.path());
        let ws = Workspace::open(dir.path(), &dir.path().join(".ooda/worktrees/q"), "q").unwrap();
        ws.ensure(start).unwrap();
        fs::write(ws.cand_dir.join("a.txt"), "two\n").unwrap();
        let tree = ws
            .write_tree(&ws.candidate(u64::MAX).unwrap().contents)
            .unwrap();
        let two = ws.commit_tree(start, tree, "two").unwrap();
        let scratch = ws.scratch("s", start).unwrap();
        let user_git = dir.path().join(".git");
        fs::write(
            scratch.join(".git"),
            format!("gitdir: {}\n", user_git.display()),
        )
        .unwrap();
        assert_eq!(
            ws.tree_of_scratch(&scratch, u64::MAX).unwrap().0,
            ws.repo.find_commit(start).unwrap().tree_id()
        );
        let again = ws.scratch("s", two).unwrap();
        assert_eq!(fs::read_to_string(again.join("a.txt")).unwrap(), "two\n");
        let user = Repository::open(dir.path()).unwrap();
        assert!(!user.head_detached().unwrap());
        assert_eq!(user.head().unwrap().target(), Some(start));
        assert!(user.state() == git2::RepositoryState::Clean);
        assert!(
            user.statuses(None)
                .unwrap()
                .iter()
                .all(|s| s.path() != Ok("a.txt"))
        );
        let link = fs::read_to_string(again.join(".git")).unwrap();
        assert!(
            !link.contains(&format!("{}\n", user_git.display())),
            "{link}"
        );
    }

    /// Brief `q`'s `replay-base` and Brief `q-replay`'s `base` are two
    /// worktrees; a record an earlier release named `ooda-q-replay-base`
    /// for the first goes when it is re-made, never the second's.
    #[test]
    fn worktree_names_of_two_briefs_never_collide() {
        let dir = tempfile::tempdir().unwrap();
        let start = repo_with_commit(dir.path());
        let wt = dir.path().join(".ooda/worktrees");
        let other = Workspace::open(dir.path(), &wt.join("q-replay"), "q-replay").unwrap();
        other.ensure(start).unwrap();
        let q = Workspace::open(dir.path(), &wt.join("q"), "q").unwrap();
        q.scratch("replay-base", start).unwrap();
        assert_eq!(
            other
                .base_repo()
                .unwrap()
                .workdir()
                .unwrap()
                .canonicalize()
                .unwrap(),
            wt.join("q-replay/base").canonicalize().unwrap()
        );
        // An earlier release's record of q's replay-base, by the old name,
        // beside (in a second repository) the other Brief's base.
        let dir2 = tempfile::tempdir().unwrap();
        let start2 = repo_with_commit(dir2.path());
        let q2 = Workspace::open(dir2.path(), &dir2.path().join(".ooda/worktrees/q"), "q").unwrap();
        let legacy_path = q2.dir.join("replay-base");
        fs::create_dir_all(&q2.dir).unwrap();
        let tip = q2.repo.find_commit(start2).unwrap();
        let b = q2
            .repo
            .branch("legacy", &tip, true)
            .unwrap()
            .into_reference();
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&b));
        q2.repo
            .worktree("ooda-q-replay-base", &legacy_path, Some(&opts))
            .unwrap();
        q2.scratch("replay-base", start2).unwrap();
        let records = dir2.path().join(".git/worktrees");
        assert!(!records.join("ooda-q-replay-base").exists());
        assert!(records.join("ooda-q-replay.base").exists());
    }

    #[test]
    fn files_whose_names_are_not_utf8_are_kept_and_their_changes_blocked() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        let odd_dir = std::ffi::OsStr::from_bytes(b"d\xff");
        fs::write(dir.path().join(odd), "latin-1\n").unwrap();
        fs::create_dir_all(dir.path().join(odd_dir)).unwrap();
        fs::write(dir.path().join(odd_dir).join("in.txt"), "inside\n").unwrap();
        let start = repo_with_commit(dir.path());
        let repo = Repository::open(dir.path()).unwrap();
        let base_tree = repo.find_commit(start).unwrap().tree_id();
        let ws = Workspace::open(dir.path(), &dir.path().join(".ooda/worktrees/b"), "b").unwrap();
        ws.ensure(start).unwrap();
        assert!(ws.cand_dir.join(odd_dir).join("in.txt").exists());

        // Unchanged, they are part of the tree, not dropped from it.
        let c = ws.candidate(u64::MAX).unwrap();
        assert!(c.changed.is_empty(), "{:?}", c.changed);
        assert!(c.contents.odd_changed.is_empty());
        assert_eq!(ws.write_tree(&c.contents).unwrap(), base_tree);
        assert!(ws.since(base_tree, u64::MAX).unwrap().1.clean());

        // An edit to one, or a new one, is named (lossily) and not clean.
        fs::write(ws.cand_dir.join(odd_dir).join("in.txt"), "edited\n").unwrap();
        fs::write(
            ws.cand_dir.join(std::ffi::OsStr::from_bytes(b"new\xfe")),
            "x",
        )
        .unwrap();
        let c = ws.candidate(u64::MAX).unwrap();
        assert_eq!(
            c.contents.odd_changed,
            vec!["d\u{FFFD}/in.txt".to_string(), "new\u{FFFD}".to_string()]
        );
        assert!(!ws.since(base_tree, u64::MAX).unwrap().1.clean());
    }

    #[test]
    fn the_change_is_read_from_the_files_not_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let start = repo_with_commit(dir.path());
        let ws = Workspace::open(dir.path(), &dir.path().join(".ooda/worktrees/b"), "b").unwrap();
        ws.ensure(start).unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(&ws.cand_dir)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        // The index says a.txt is unchanged; its content says otherwise.
        git(&["update-index", "--skip-worktree", "a.txt"]);
        fs::write(ws.cand_dir.join("a.txt"), "rigged\n").unwrap();
        fs::write(ws.cand_dir.join("big.bin"), vec![0u8; 4096]).unwrap();
        std::os::unix::fs::symlink("../../../../a.txt", ws.cand_dir.join("out")).unwrap();
        fs::create_dir_all(ws.cand_dir.join("target")).unwrap();
        fs::write(ws.cand_dir.join("target/ignored"), "x").unwrap();
        let objects_before = count_objects(dir.path());
        let c = ws.candidate(1000).unwrap();
        let changed: Vec<(&str, &str, bool)> = c
            .changed
            .iter()
            .map(|p| (p.path.as_str(), p.kind, p.unread))
            .collect();
        assert_eq!(
            changed,
            [
                ("a.txt", "modified", false),
                ("big.bin", "added", true),
                ("out", "added", false)
            ]
        );
        assert_eq!(c.changed[2].link.as_deref(), Some("../../../../a.txt"));
        // Reading and checking wrote nothing into the user's object store.
        assert_eq!(count_objects(dir.path()), objects_before);
        // Above the limit, the file cannot be written into a tree.
        assert!(ws.write_tree(&c.contents).is_err());
        fs::remove_file(ws.cand_dir.join("big.bin")).unwrap();
        let c = ws.candidate(1000).unwrap();
        let tree = ws.write_tree(&c.contents).unwrap();
        let repo = ws.cand_repo().unwrap();
        let t = repo.find_tree(tree).unwrap();
        let blob = t
            .get_path(Path::new("a.txt"))
            .unwrap()
            .to_object(&repo)
            .unwrap();
        assert_eq!(blob.as_blob().unwrap().content(), b"rigged\n");
        assert_eq!(t.get_path(Path::new("out")).unwrap().filemode(), 0o120000);
        assert!(t.get_path(Path::new("target/ignored")).is_err());
        assert!(ws.since(tree, u64::MAX).unwrap().1.clean());
        // A new file in neither the tree nor the base that the base's runs
        // wrote too is an output (a benchmark's log): not the change, not a
        // drift. One they did not write is the change's code's doing; a
        // tool's cache is an output either way.
        fs::write(ws.cand_dir.join("bench.log"), "run 1\n").unwrap();
        fs::write(ws.cand_dir.join("time.py"), "def time(): return 0\n").unwrap();
        fs::create_dir_all(ws.cand_dir.join("__pycache__")).unwrap();
        fs::write(ws.cand_dir.join("__pycache__/a.cpython-311.pyc"), "x").unwrap();
        fs::write(ws.base_dir.join("bench.log"), "run 1\n").unwrap();
        let (c, since) = ws.since(tree, u64::MAX).unwrap();
        assert!(since.changed.is_empty(), "{since:?}");
        assert_eq!(since.created, ["time.py"]);
        assert_eq!(
            since.outputs.iter().collect::<Vec<_>>(),
            ["__pycache__/a.cpython-311.pyc", "bench.log"]
        );
        assert!(c.changed.iter().all(|p| p.path != "bench.log"));
        fs::remove_file(ws.cand_dir.join("time.py")).unwrap();
        // The base's runs are the user's code: only a committed file counts.
        fs::write(ws.base_dir.join("other.log"), "x\n").unwrap();
        let base_tree = ws.tree_of(start).unwrap();
        assert!(ws.base_since(base_tree, u64::MAX).unwrap().clean());
        // A committed file rewritten is.
        fs::write(ws.cand_dir.join("a.txt"), "later\n").unwrap();
        assert_eq!(ws.since(tree, u64::MAX).unwrap().1.changed, ["a.txt"]);
        // So is a file of the base the change deleted, come back.
        fs::write(ws.cand_dir.join("a.txt"), "rigged\n").unwrap();
        fs::remove_file(ws.cand_dir.join(".gitignore")).unwrap();
        fs::remove_dir_all(ws.cand_dir.join("target")).unwrap();
        let c = ws.candidate(u64::MAX).unwrap();
        let without = ws.write_tree(&c.contents).unwrap();
        fs::write(ws.cand_dir.join(".gitignore"), "/.ooda/\ntarget/\n").unwrap();
        assert_eq!(
            ws.since(without, u64::MAX).unwrap().1.changed,
            [".gitignore"]
        );
    }

    #[test]
    fn caches_are_named_by_their_folders() {
        for cache in [
            "__pycache__/a.cpython-311.pyc",
            "pkg/sub/__pycache__/b.cpython-312.pyc",
            ".pytest_cache/v/cache/lastfailed",
            "src/pkg.egg-info/PKG-INFO",
            // Other ecosystems' hidden caches, as their tools name them.
            ".parcel-cache/data.mdb",
            "web/.sass-cache/3f2a/main.scssc",
            ".cache/babel-loader/0a1b.json",
            "web/.eslintcache",
            ".stylelintcache",
            ".ruff_cache/0.6.9/123",
        ] {
            assert!(is_cache_file(cache), "{cache}");
        }
        // Importable by itself, the folder's own name, or sources a project
        // keeps in a visible folder named cache: not a cache.
        for not in [
            "time.pyc",
            "pkg/fast.pyc",
            "__pycache__",
            "src/pytest_cache.py",
            "src/cache/lru.rs",
            "query_cache.py",
            ".github/workflows/ci.yml",
            ".",
        ] {
            assert!(!is_cache_file(not), "{not}");
        }
    }

    fn count_objects(repo: &Path) -> usize {
        fn walk(d: &Path) -> usize {
            fs::read_dir(d)
                .map(|es| {
                    es.filter_map(|e| e.ok())
                        .map(|e| {
                            let p = e.path();
                            if p.is_dir() { walk(&p) } else { 1 }
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(&repo.join(".git/objects"))
    }
}
