//! The candidate as its files say, whatever its index claims.
//!
//! An agent with a shell can mark a file `skip-worktree` or
//! `assume-unchanged`, or `git add -N` it, and `git status` (and a tree
//! written from the index) then lies about what the worktree holds: a rigged
//! benchmark goes unseen, or what was measured is not what is committed. So
//! the change is computed here from the files themselves, against the base
//! commit's tree (paths that are not UTF-8 are compared by their bytes and
//! carried unchanged, never dropped): every file git would not ignore (plus the tracked ones and
//! ooda's own files, ignored or not) is hashed, and the tree is built from
//! those hashes. Hashing writes nothing: blobs reach the repository's object
//! store only in [`Contents::write_tree`], after the checks on size, links and
//! scope have passed, so a discarded 1 GiB file or a secret never lands in
//! the user's `.git/objects`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Tree};

use super::ChangedPath;
use crate::brief::Brief;
use crate::error::{IoContext, Result};

const BLOB: i32 = 0o100644;
const EXEC: i32 = 0o100755;
const LINK: i32 = 0o120000;
const GITLINK: i32 = 0o160000;

/// One path of the candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileState {
    pub mode: i32,
    /// The blob's hash; `None` for a new or grown file above the size limit,
    /// which is never read.
    pub oid: Option<Oid>,
    pub size: u64,
    /// A symlink's target, as stored.
    pub link: Option<Vec<u8>>,
}

/// Every path of the candidate that would be committed, by `/`-separated path.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    pub files: BTreeMap<String, FileState>,
    /// The base commit's files: (mode, blob).
    pub base: BTreeMap<String, (i32, Oid)>,
    /// The base's files whose path is not UTF-8, by their bytes. git may hold
    /// such names; ooda's checks speak in strings, so these are carried into
    /// every tree unchanged rather than dropped (which would delete them).
    pub odd_base: BTreeMap<Vec<u8>, (i32, Oid)>,
    /// Paths that are not UTF-8 and differ from the base (changed, deleted
    /// or new), named lossily: the change cannot be committed as it stands.
    pub odd_changed: Vec<String>,
    /// Paths past the system's length limit (`PATH_MAX`), which no file
    /// call reaches: what is below them can be neither read nor stored.
    pub too_long: Vec<String>,
}

/// What changed in a worktree since its candidate was recorded
/// ([`Contents::since`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Since {
    /// Files that would be committed and changed: named, they block.
    pub changed: Vec<String>,
    /// New files the other side's runs did not write: named, they block.
    pub created: Vec<String>,
    /// New files that will not be committed: outputs, never the change.
    pub outputs: std::collections::BTreeSet<String>,
}

impl Since {
    /// Nothing that blocks.
    pub(crate) fn clean(&self) -> bool {
        self.changed.is_empty() && self.created.is_empty()
    }
}

/// What to read.
pub(super) struct Walk<'a> {
    pub repo: &'a Repository,
    pub root: &'a Path,
    pub base: &'a Tree<'a>,
    /// ooda's own files: read even when ignored.
    pub owned: &'a [String],
    /// A new or grown file above this size is recorded unread.
    pub max_new: u64,
    /// New files a tool keeps for itself (`is_tool_file`): not the change.
    pub skip_new: fn(&str) -> bool,
}

impl Walk<'_> {
    pub(super) fn read(&self) -> Result<Contents> {
        let (base, odd_base) =
            flatten(self.repo, self.base).ctx(|| "reading the base commit's tree".into())?;
        let mut out = Contents {
            files: BTreeMap::new(),
            base,
            odd_base,
            odd_changed: Vec::new(),
            too_long: Vec::new(),
        };
        self.dir(self.root, "", &mut out)?;
        // The base's non-UTF-8 files, read from disk by their bytes.
        for (path, (mode, oid)) in &out.odd_base {
            let full = self.root.join(OsStr::from_bytes(path));
            let same = fs::symlink_metadata(&full).is_ok_and(|m| match *mode {
                LINK => fs::read_link(&full).is_ok_and(|t| {
                    Oid::hash_object(ObjectType::Blob, t.as_os_str().as_bytes())
                        .is_ok_and(|o| o == *oid)
                }),
                _ => {
                    m.is_file()
                        && (m.permissions().mode() & 0o100 != 0) == (*mode == EXEC)
                        && Oid::hash_file(ObjectType::Blob, &full).is_ok_and(|o| o == *oid)
                }
            });
            if !same && *mode != GITLINK {
                out.odd_changed
                    .push(String::from_utf8_lossy(path).into_owned());
            }
        }
        out.odd_changed.sort();
        // Submodules are not walked: what their commit is stays the base's.
        for (path, (mode, oid)) in &out.base {
            if *mode == GITLINK {
                out.files.insert(
                    path.clone(),
                    FileState {
                        mode: GITLINK,
                        oid: Some(*oid),
                        size: 0,
                        link: None,
                    },
                );
            }
        }
        Ok(out)
    }

    fn dir(&self, dir: &Path, prefix: &str, out: &mut Contents) -> Result<()> {
        for e in sorted_entries(dir)? {
            let name = e.file_name();
            let Ok(name) = std::str::from_utf8(name.as_bytes()) else {
                // Not UTF-8: the base's such files are compared by bytes in
                // `read`; what else is here is new.
                let mut rel = prefix.as_bytes().to_vec();
                rel.extend_from_slice(name.as_bytes());
                self.odd_entry(&e.path(), rel, out)?;
                continue;
            };
            if prefix.is_empty() && name == ".git" {
                continue;
            }
            let rel = format!("{prefix}{name}");
            let path = e.path();
            let meta = match fs::symlink_metadata(&path) {
                Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                    out.too_long.push(rel);
                    continue;
                }
                r => r.ctx(|| format!("reading {}", path.display()))?,
            };
            // The base is sorted: the first path at or after `rel/` tells.
            let tracked_below = |rel: &str| {
                let p = format!("{rel}/");
                out.base
                    .range(p.clone()..)
                    .next()
                    .is_some_and(|(k, _)| k.starts_with(&p))
            };
            if meta.is_dir() {
                if out.base.get(&rel).is_some_and(|(m, _)| *m == GITLINK) {
                    continue;
                }
                let ignored = self.ignored(&format!("{rel}/"));
                let owned_below = self.owned.iter().any(|o| o.starts_with(&format!("{rel}/")));
                if ignored && !tracked_below(&rel) && !owned_below {
                    continue;
                }
                self.dir(&path, &format!("{rel}/"), out)?;
                continue;
            }
            let tracked = out.base.contains_key(&rel);
            let owned = self.owned.contains(&rel);
            if !tracked && !owned && (self.ignored(&rel) || (self.skip_new)(&rel)) {
                continue;
            }
            let state = if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).ctx(|| format!("reading {}", path.display()))?;
                let bytes = target.as_os_str().as_bytes().to_vec();
                FileState {
                    mode: LINK,
                    oid: Some(
                        Oid::hash_object(ObjectType::Blob, &bytes)
                            .ctx(|| format!("hashing {rel}"))?,
                    ),
                    size: bytes.len() as u64,
                    link: Some(bytes),
                }
            } else if meta.is_file() {
                // git's rule: the owner's execute bit.
                let mode = if meta.permissions().mode() & 0o100 != 0 {
                    EXEC
                } else {
                    BLOB
                };
                let size = meta.len();
                // The stored size from the object header: a tracked
                // file is not decompressed to learn it.
                let grown = size > self.max_new
                    && out.base.get(&rel).is_none_or(|(_, oid)| {
                        self.repo
                            .odb()
                            .and_then(|odb| odb.read_header(*oid))
                            .map(|(stored, _)| (stored as u64) < size)
                            .unwrap_or(true)
                    });
                let oid = if grown && size > self.max_new {
                    None
                } else {
                    Some(Oid::hash_file(ObjectType::Blob, &path).ctx(|| format!("hashing {rel}"))?)
                };
                FileState {
                    mode,
                    oid,
                    size,
                    link: None,
                }
            } else {
                // Sockets, fifos, devices: git stores none of them.
                continue;
            };
            out.files.insert(rel, state);
        }
        Ok(())
    }

    /// An entry whose path (`rel`, bytes) is not UTF-8: a file or link the
    /// base does not have is new; a folder is walked for such files.
    fn odd_entry(&self, path: &Path, rel: Vec<u8>, out: &mut Contents) -> Result<()> {
        if self
            .repo
            .is_path_ignored(OsStr::from_bytes(&rel))
            .unwrap_or(false)
        {
            return Ok(());
        }
        let meta = fs::symlink_metadata(path).ctx(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            for e in sorted_entries(path)? {
                let mut below = rel.clone();
                below.push(b'/');
                below.extend_from_slice(e.file_name().as_bytes());
                self.odd_entry(&e.path(), below, out)?;
            }
        } else if (meta.is_file() || meta.file_type().is_symlink())
            && !out.odd_base.contains_key(&rel)
        {
            out.odd_changed
                .push(String::from_utf8_lossy(&rel).into_owned());
        }
        Ok(())
    }

    fn ignored(&self, rel: &str) -> bool {
        self.repo.is_path_ignored(rel).unwrap_or(false)
    }
}

/// A folder's entries in name order: the walk's order is the tree's.
fn sorted_entries(dir: &Path) -> Result<Vec<fs::DirEntry>> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .ctx(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    Ok(entries)
}

type Flat<K> = BTreeMap<K, (i32, Oid)>;

/// A tree's files and submodules by path: (mode, object); those whose path
/// is not UTF-8 apart, by bytes. (`Tree::walk` cannot be used: it stops at
/// a folder whose name is not UTF-8.)
fn flatten(
    repo: &Repository,
    tree: &Tree,
) -> std::result::Result<(Flat<String>, Flat<Vec<u8>>), git2::Error> {
    let mut out = BTreeMap::new();
    let mut odd = BTreeMap::new();
    let mut folders = vec![(Vec::new(), tree.id())];
    while let Some((prefix, id)) = folders.pop() {
        for entry in repo.find_tree(id)?.iter() {
            let mut path = prefix.clone();
            path.extend_from_slice(entry.name_bytes());
            if entry.kind() == Some(ObjectType::Tree) {
                path.push(b'/');
                folders.push((path, entry.id()));
            } else if entry.kind() == Some(ObjectType::Blob) || entry.filemode() == GITLINK {
                let value = (entry.filemode(), entry.id());
                match String::from_utf8(path) {
                    Ok(p) => out.insert(p, value),
                    Err(e) => odd.insert(e.into_bytes(), value),
                };
            }
        }
    }
    Ok((out, odd))
}

/// An entry of an in-memory index, for a tree written from it.
fn index_entry(path: Vec<u8>, mode: i32, id: Oid) -> git2::IndexEntry {
    git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: mode as u32,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path,
    }
}

/// How a path differs from the base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Added,
    Modified,
    Deleted,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Modified => "modified",
            Kind::Deleted => "deleted",
        }
    }
}

impl Contents {
    /// Every path that differs from the base, in path order.
    pub(crate) fn changes(&self) -> Vec<(String, Kind)> {
        let mut out = Vec::new();
        for (path, now) in &self.files {
            match self.base.get(path) {
                None => out.push((path.clone(), Kind::Added)),
                Some((mode, oid)) if *mode != now.mode || Some(*oid) != now.oid => {
                    out.push((path.clone(), Kind::Modified));
                }
                Some(_) => {}
            }
        }
        for path in self.base.keys() {
            if !self.files.contains_key(path) {
                out.push((path.clone(), Kind::Deleted));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// What changed since `tree` (the candidate recorded after EXECUTE) was
    /// recorded, read without writing anything: the paths of `tree` or of
    /// the base whose file changed, went or came back (`changed`: what
    /// would be committed is no longer what is there); and the new files in
    /// neither, which are `outputs` (never the change, never committed)
    /// when `explained` says so (the other side's runs wrote the same path,
    /// so the benchmark writes it whatever the change) or they are a
    /// tool's cache, and `created` otherwise (the change's code wrote a
    /// file where the benchmark may read it: a `time.py` that shadows the
    /// timer). A path that is not UTF-8 and differs from the base cannot be
    /// placed, so it counts as changed.
    pub(crate) fn since(
        &self,
        repo: &Repository,
        tree: Oid,
        explained: &dyn Fn(&str) -> bool,
    ) -> Result<Since> {
        let tree = repo
            .find_tree(tree)
            .ctx(|| format!("finding the measured tree {tree}"))?;
        let (recorded, _) = flatten(repo, &tree).ctx(|| "reading the measured tree".into())?;
        let mut out = Since {
            changed: self.odd_changed.clone(),
            ..Since::default()
        };
        for (path, (mode, oid)) in &recorded {
            let same = self
                .files
                .get(path)
                .is_some_and(|f| f.mode == *mode && f.oid == Some(*oid));
            if !same {
                out.changed.push(path.clone());
            }
        }
        for path in self.files.keys().filter(|p| !recorded.contains_key(*p)) {
            if self.base.contains_key(path) {
                out.changed.push(path.clone());
            } else if super::is_cache_file(path) || explained(path) {
                out.outputs.insert(path.clone());
            } else {
                out.created.push(path.clone());
            }
        }
        out.changed.sort();
        Ok(out)
    }

    /// The files here that the base commit does not have: what the runs in
    /// this worktree wrote (besides the change, for the candidate).
    pub(crate) fn new_files(&self) -> std::collections::BTreeSet<String> {
        self.files
            .keys()
            .filter(|p| !self.base.contains_key(*p))
            .cloned()
            .collect()
    }

    /// Writes the changed files' blobs and the tree of the whole candidate.
    /// Only call this once the change has passed its checks: an unread
    /// (oversized) file is refused here too.
    pub(crate) fn write_tree(&self, repo: &Repository, root: &Path) -> Result<Oid> {
        let mut index = git2::Index::new().ctx(|| "making an index in memory".into())?;
        for (path, f) in &self.files {
            let unchanged = self
                .base
                .get(path)
                .is_some_and(|(m, o)| *m == f.mode && Some(*o) == f.oid);
            let id = match (&f.link, f.oid) {
                _ if unchanged || f.mode == GITLINK => f.oid.unwrap_or(Oid::ZERO_SHA1),
                (Some(target), _) => repo.blob(target).ctx(|| format!("storing {path}"))?,
                (None, Some(checked)) => {
                    let stored = repo
                        .blob_path(&root.join(path))
                        .ctx(|| format!("storing {path}"))?;
                    // What is stored must be what was checked.
                    if stored != checked {
                        return Err(crate::error::Error::Input(format!(
                            "{path} changed while the candidate was being checked; the iteration is redone from its checkpoint"
                        )));
                    }
                    stored
                }
                (None, None) => {
                    return Err(crate::error::Error::Internal(format!(
                        "{path} is above the size limit and was not read; it cannot be committed"
                    )));
                }
            };
            index
                .add(&index_entry(path.as_bytes().to_vec(), f.mode, id))
                .ctx(|| format!("adding {path} to the tree"))?;
        }
        // Carried unchanged: a change to one of them was blocked before.
        for (path, (mode, id)) in &self.odd_base {
            index
                .add(&index_entry(path.clone(), *mode, *id))
                .ctx(|| format!("adding {} to the tree", String::from_utf8_lossy(path)))?;
        }
        index
            .write_tree_to(repo)
            .ctx(|| "writing the candidate's tree".into())
    }
}

/// Why a change cannot be measured: a path outside the scope or protected,
/// a file above `scope.max_file_size`, or a symlink that leads out of the
/// worktree or to a protected path (writing through it would bypass both).
pub(crate) fn content_violation(brief: &Brief, changed: &[ChangedPath]) -> Option<String> {
    let scope = &brief.scope;
    let big: Vec<String> = changed
        .iter()
        .filter(|c| c.unread)
        .map(|c| {
            format!(
                "{} ({})",
                c.path,
                crate::validate::units::format_bytes(c.size)
            )
        })
        .collect();
    if !big.is_empty() {
        return Some(format!(
            "new or grown file(s) above scope.max_file_size ({}): {}; such files are not read, stored or measured (raise scope.max_file_size in the Brief if they belong)",
            crate::validate::units::format_bytes(scope.max_file_size),
            big.join(", ")
        ));
    }
    let links: Vec<String> = changed
        .iter()
        .filter_map(|c| {
            let target = c.link.as_deref()?;
            match link_destination(&c.path, target) {
                None => Some(format!("{} -> {target} (outside the worktree)", c.path)),
                Some(dest) if scope.protects(&dest) => {
                    Some(format!("{} -> {target} (the protected {dest})", c.path))
                }
                Some(_) => None,
            }
        })
        .collect();
    if !links.is_empty() {
        return Some(format!(
            "symlink(s) leading out of the worktree or to a protected path: {}",
            links.join(", ")
        ));
    }
    brief.scope_violation(changed.iter().map(|c| c.path.as_str()))
}

/// Where a symlink at `path` (relative to the worktree) points, relative to
/// the worktree; `None` when that is outside it.
fn link_destination(path: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    for seg in target.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}
