//! A code index of a worktree, for an agent that would otherwise explore
//! with grep and whole-file reads.
//!
//! The seed's second half of cutting tokens is *finding* code: "who calls
//! this, what breaks if I change it" costs an agent dozens of searches and
//! reads; an index built from parse trees answers it in one call. This
//! folder builds that index (definitions, references, imports and call
//! edges from tree-sitter trees of Rust, Python, JavaScript/TypeScript, Go,
//! C and C++), keeps it in `.ooda/index/` by base commit, refreshes it for
//! the files a step changed (by size and mtime, then content hash), and
//! answers the tools of `explorer.rs` — the same ones for the llm driver and,
//! through `ooda mcp`, for the agent CLIs.
//!
//! What it does not do: resolve types. An edge is *resolved* when only one
//! definition can be meant (the same file, the receiver's type, an import
//! of its module, or the only definition of that name), and *name-matched*
//! otherwise; every answer says which, so the agent knows when to check.
//!
//! Bounded: at most [`Limits::files`] source files and [`Limits::bytes`] of
//! source; a repository past that indexes what fits, in path order, and
//! says so in every answer. Files over [`Limits::file_bytes`] (generated
//! code, bundles), binary files and symlinks are skipped and counted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

pub(crate) mod explorer;
pub(crate) mod extract;
pub(crate) mod graph;
pub(crate) mod lang;
pub(crate) mod macros;

use extract::Facts;
use lang::Lang;

/// The format of a saved index; another one is rebuilt, not read.
const VERSION: u32 = 2;
/// Saved indexes kept in `.ooda/index/`: a few base commits back.
const KEEP: usize = 4;

/// How much one index takes at most.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Source files indexed.
    pub files: usize,
    /// Bytes of source indexed, all files together.
    pub bytes: u64,
    /// A file larger than this is skipped as generated.
    pub file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            files: 20_000,
            bytes: 128 << 20,
            file_bytes: 1 << 20,
        }
    }
}

/// One indexed file: what it says, and how to tell it changed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub lang: Lang,
    /// Git's blob id of the content: the same as `git hash-object`.
    pub hash: String,
    pub len: u64,
    /// Modification time in nanoseconds: when it and the length are
    /// unchanged the file is not read again.
    pub mtime: i128,
    pub facts: Facts,
}

/// What was not indexed, and why.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Skipped {
    /// Over the per-file limit: generated code, a bundle, a data file.
    pub huge: Vec<String>,
    pub binary: Vec<String>,
    /// Symlinks are never followed: they may lead out of the worktree.
    pub symlinks: Vec<String>,
    /// Past the index's limits on files or bytes.
    pub over_limit: Vec<String>,
    /// Files of a language the index does not parse (left to the text tools).
    pub other: usize,
}

/// The index of one worktree.
#[derive(Debug, Serialize, Deserialize)]
pub struct Index {
    version: u32,
    /// Path (relative, `/`-separated) → entry.
    pub(crate) files: BTreeMap<String, Entry>,
    pub(crate) skipped: Skipped,
    /// The C/C++ macros that hide declarations, from the headers.
    #[serde(default)]
    macros: macros::Macros,
    #[serde(skip)]
    pub(crate) root: PathBuf,
}

/// What a refresh did.
#[derive(Debug, Default, PartialEq)]
pub struct Refreshed {
    /// Files parsed again (added or changed in content).
    pub parsed: Vec<String>,
    pub removed: Vec<String>,
}

impl Refreshed {
    pub fn changed(&self) -> bool {
        !self.parsed.is_empty() || !self.removed.is_empty()
    }
}

/// A candidate file of the listing.
struct Candidate {
    rel: String,
    path: PathBuf,
    lang: Lang,
    len: u64,
    mtime: i128,
}

impl Index {
    /// An empty index of `root`; [`Index::refresh`] fills it.
    pub(crate) fn empty(root: &Path) -> Index {
        Index {
            version: VERSION,
            files: BTreeMap::new(),
            skipped: Skipped::default(),
            macros: macros::Macros::default(),
            root: root.to_path_buf(),
        }
    }

    /// Files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Definitions indexed, all files together.
    pub fn definitions(&self) -> usize {
        self.files.values().map(|e| e.facts.defs.len()).sum()
    }

    /// The indexed files, smallest first.
    pub fn by_size(&self) -> Vec<&str> {
        let mut v: Vec<(&String, u64)> = self.files.iter().map(|(k, e)| (k, e.len)).collect();
        v.sort_by_key(|(k, n)| (*n, *k));
        v.into_iter().map(|(k, _)| k.as_str()).collect()
    }

    /// Builds the index of `root` from nothing.
    pub fn build(root: &Path, limits: Limits, cancel: &AtomicBool) -> Index {
        let mut ix = Index::empty(root);
        ix.refresh(limits, cancel);
        ix
    }

    /// Brings the index up to the files on disk: a file whose length and
    /// mtime are unchanged is not read; one whose content hash is
    /// unchanged is not parsed; the rest are parsed again, in parallel.
    pub fn refresh(&mut self, limits: Limits, cancel: &AtomicBool) -> Refreshed {
        let listing = crate::workspace::files::listing(&self.root);
        let mut skipped = Skipped {
            symlinks: listing.symlinks.iter().map(|p| self.rel(p)).collect(),
            ..Skipped::default()
        };
        let mut wanted = Vec::new();
        let (mut count, mut bytes) = (0usize, 0u64);
        for path in &listing.files {
            let rel = self.rel(path);
            // ooda's own folder: worktrees, archives, this index.
            if rel.split('/').any(|c| c == ".ooda") {
                continue;
            }
            let Some(lang) = Lang::of(&rel) else {
                skipped.other += 1;
                continue;
            };
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            if meta.len() > limits.file_bytes {
                skipped.huge.push(rel);
                continue;
            }
            if count >= limits.files || bytes + meta.len() > limits.bytes {
                skipped.over_limit.push(rel);
                continue;
            }
            count += 1;
            bytes += meta.len();
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            wanted.push(Candidate {
                rel,
                path: path.clone(),
                lang,
                len: meta.len(),
                mtime,
            });
        }
        let mut out = Refreshed::default();
        let keep: std::collections::BTreeSet<&str> =
            wanted.iter().map(|c| c.rel.as_str()).collect();
        let gone: Vec<String> = self
            .files
            .keys()
            .filter(|k| !keep.contains(k.as_str()))
            .cloned()
            .collect();
        for k in gone {
            self.files.remove(&k);
            out.removed.push(k);
        }
        let unchanged = |c: &Candidate| {
            self.files.get(&c.rel).is_some_and(|e| {
                e.len == c.len && e.mtime == c.mtime && e.lang.family() == c.lang.family()
            })
        };
        let mut stale: Vec<&Candidate> = wanted.iter().filter(|c| !unchanged(c)).collect();
        // A header changed (or none was read yet): the macros are read
        // again from every header, and if they differ every C and C++
        // file is parsed again under them.
        let c_like = |c: &Candidate| matches!(c.lang, Lang::C | Lang::Cpp);
        let header = |c: &Candidate| {
            c_like(c)
                && !c.rel.ends_with(".c")
                && !c.rel.ends_with(".cc")
                && !c.rel.ends_with(".cpp")
        };
        let mut reparse_c = false;
        if stale.iter().any(|c| header(c)) {
            let mut m = macros::Macros::default();
            for _ in 0..2 {
                for c in wanted.iter().filter(|c| header(c)) {
                    if let Ok((b, _)) = crate::atomic::read_capped(&c.path, limits.file_bytes) {
                        m.scan(&String::from_utf8_lossy(&b));
                    }
                }
            }
            if m != self.macros {
                self.macros = m;
                reparse_c = true;
                stale = wanted
                    .iter()
                    .filter(|c| c_like(c) || !unchanged(c))
                    .collect();
            }
        }
        let macros = &self.macros;
        let results = Mutex::new(Vec::new());
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(stale.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(c) = stale.get(i) else { break };
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        let old = self.files.get(&c.rel).filter(|_| !(reparse_c && c_like(c)));
                        let r = read_one(c, old, macros);
                        results
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((i, r));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        results.sort_by_key(|(i, _)| *i);
        for (i, r) in results {
            let c = stale[i];
            match r {
                Read::Binary => {
                    self.files.remove(&c.rel);
                    skipped.binary.push(c.rel.clone());
                }
                Read::Gone => {
                    self.files.remove(&c.rel);
                }
                Read::Same(hash) => {
                    if let Some(e) = self.files.get_mut(&c.rel) {
                        e.hash = hash;
                        e.len = c.len;
                        e.mtime = c.mtime;
                    }
                }
                Read::Parsed(hash, lang, facts) => {
                    self.files.insert(
                        c.rel.clone(),
                        Entry {
                            lang,
                            hash,
                            len: c.len,
                            mtime: c.mtime,
                            facts,
                        },
                    );
                    out.parsed.push(c.rel.clone());
                }
            }
        }
        // A binary file found in an earlier refresh is not read again.
        for e in &self.skipped.binary {
            if keep.contains(e.as_str())
                && !self.files.contains_key(e)
                && !skipped.binary.contains(e)
            {
                skipped.binary.push(e.clone());
            }
        }
        skipped.binary.sort();
        self.skipped = skipped;
        out
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// Files the grammar could not fully parse (indexed as far as it did).
    pub(crate) fn partial(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|(_, e)| e.facts.partial)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// One line on what the index holds and what it left out, for the
    /// head of every answer that could be incomplete.
    pub(crate) fn coverage(&self) -> Option<String> {
        let s = &self.skipped;
        let mut parts = Vec::new();
        if !s.over_limit.is_empty() {
            parts.push(format!(
                "{} files past the index's limits were not indexed (first: {})",
                s.over_limit.len(),
                s.over_limit[0]
            ));
        }
        if !s.huge.is_empty() {
            parts.push(format!(
                "{} files over 1 MiB skipped as generated",
                s.huge.len()
            ));
        }
        if !s.binary.is_empty() {
            parts.push(format!("{} binary files skipped", s.binary.len()));
        }
        if !s.symlinks.is_empty() {
            parts.push(format!("{} symlinks not followed", s.symlinks.len()));
        }
        let partial = self.partial();
        if !partial.is_empty() {
            let named = partial
                .iter()
                .take(5)
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            let more = match partial.len() {
                n if n > 5 => format!(" and {} more", n - 5),
                _ => String::new(),
            };
            parts.push(format!(
                "{} files parsed only in part, their definitions after the error may be missing: {named}{more}",
                partial.len()
            ));
        }
        (!parts.is_empty()).then(|| format!("[index: {}]", parts.join("; ")))
    }

    /// Writes the index to `dir/<key>.json` and drops all but the newest
    /// few there.
    pub fn save(&self, dir: &Path, key: &str) -> crate::error::Result<PathBuf> {
        crate::atomic::create_dir_all(dir)?;
        // Never committed, even from a checkout whose `.gitignore` does
        // not name `.ooda/`: the folder ignores itself.
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            crate::atomic::write_atomic(&ignore, b"*\n")?;
        }
        let path = dir.join(format!("{key}.json"));
        let bytes = serde_json::to_vec(self).map_err(|e| {
            crate::error::Error::Internal(format!(
                "cannot encode the index {}: {e}",
                path.display()
            ))
        })?;
        crate::atomic::write_atomic(&path, &bytes)?;
        let mut saved: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        saved.sort();
        saved.reverse();
        for (_, old) in saved.into_iter().skip(KEEP) {
            let _ = std::fs::remove_file(old);
        }
        Ok(path)
    }

    /// The saved index `dir/<key>.json`, or the newest one there (an
    /// older base commit: refreshing it costs the files that differ), or
    /// none. A damaged or older-format file is ignored.
    pub(crate) fn load(dir: &Path, key: &str, root: &Path) -> Option<Index> {
        let exact = dir.join(format!("{key}.json"));
        let newest = || {
            std::fs::read_dir(dir)
                .ok()?
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .max()
                .map(|(_, p)| p)
        };
        let path = if exact.is_file() { exact } else { newest()? };
        let bytes = crate::atomic::read_capped(&path, 1 << 30).ok()?.0;
        let mut ix: Index = serde_json::from_slice(&bytes).ok()?;
        if ix.version != VERSION {
            return None;
        }
        ix.root = root.to_path_buf();
        Some(ix)
    }

    /// The index of `root`, up to date: loaded from `dir` and refreshed,
    /// or built; saved back when it changed and `save` allows (inside a
    /// sandbox the folder may not be writable, and nothing is lost: the
    /// answers come from memory).
    pub fn open(root: &Path, dir: &Path, limits: Limits, save: bool) -> (Index, Refreshed) {
        let cancel = AtomicBool::new(false);
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let key = base_key(&root);
        let (mut ix, fresh) = match Index::load(dir, &key, &root) {
            Some(ix) => (ix, false),
            None => (Index::empty(&root), true),
        };
        let r = ix.refresh(limits, &cancel);
        if save && (fresh || r.changed() || !dir.join(format!("{key}.json")).is_file()) {
            let _ = ix.save(dir, &key);
        }
        (ix, r)
    }
}

/// The name of a worktree's saved index: its HEAD commit, or `worktree`
/// outside git.
pub fn base_key(root: &Path) -> String {
    let Ok(repo) = git2::Repository::discover(root) else {
        return "worktree".to_string();
    };
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map_or_else(|| "unborn".to_string(), |o| o.to_string());
    // A subfolder of a repository is indexed on its own, under its own name.
    let sub = repo
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .and_then(|w| root.strip_prefix(w).ok().map(Path::to_path_buf))
        .filter(|r| !r.as_os_str().is_empty());
    match sub {
        Some(r) => {
            let tag =
                git2::Oid::hash_object(git2::ObjectType::Blob, r.to_string_lossy().as_bytes())
                    .map(|o| o.to_string()[..8].to_string())
                    .unwrap_or_default();
            format!("{head}-{tag}")
        }
        None => head,
    }
}

/// Where a worktree's index is kept: `.ooda/index/` of the repository it
/// belongs to (a candidate worktree's is the project's), or of the folder
/// itself outside git.
pub(crate) fn dir_for(root: &Path) -> PathBuf {
    let Ok(repo) = git2::Repository::discover(root) else {
        return root.join(".ooda").join("index");
    };
    // A linked worktree's main checkout is the work tree of its common
    // repository; a bare common repository (or a separate git dir) has
    // none that is the project's, and the worktree's own is used.
    let main = git2::Repository::open(repo.commondir())
        .ok()
        .and_then(|c| c.workdir().map(Path::to_path_buf))
        .or_else(|| repo.workdir().map(Path::to_path_buf))
        .unwrap_or_else(|| root.to_path_buf());
    let main = main.canonicalize().unwrap_or(main);
    main.join(".ooda").join("index")
}

enum Read {
    /// Parsed as this language (a `.h` of C++ code as C++).
    Parsed(String, Lang, Facts),
    Same(String),
    Binary,
    Gone,
}

fn read_one(c: &Candidate, old: Option<&Entry>, macros: &macros::Macros) -> Read {
    let Ok((bytes, _)) = crate::atomic::read_capped(&c.path, c.len.max(1) + (1 << 20)) else {
        return Read::Gone;
    };
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Read::Binary;
    }
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, &bytes)
        .map(|o| o.to_string())
        .unwrap_or_default();
    if old.is_some_and(|e| e.hash == hash && e.lang.family() == c.lang.family()) {
        return Read::Same(hash);
    }
    let lang = match c.lang {
        Lang::C if c.rel.ends_with(".h") && lang::looks_like_cpp(&bytes) => Lang::Cpp,
        l => l,
    };
    Read::Parsed(hash, lang, extract::extract(lang, &c.rel, &bytes, macros))
}

/// A folder holding `files` (path, content), for the tests of this folder.
#[cfg(test)]
pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("a temporary folder");
    for (rel, text) in files {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("created");
        std::fs::write(p, text).expect("written");
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, s: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    #[test]
    fn builds_refreshes_only_what_changed_and_counts_what_it_skips() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        write(&root, "src/a.rs", "fn a() { b(); }\n");
        write(&root, "src/b.rs", "pub fn b() {}\n");
        write(&root, "lib/x.py", "def x():\n    return 1\n");
        write(&root, "README.md", "# hi\n");
        write(&root, "bin.c", "int\0x;\n");
        write(&root, "gen.js", &"var a = 1;\n".repeat(200));
        std::os::unix::fs::symlink("/etc/passwd", root.join("out.rs")).unwrap();
        write(&root, ".ooda/worktrees/b/cand/src/a.rs", "fn a() {}\n");
        let limits = Limits {
            file_bytes: 1000,
            ..Limits::default()
        };
        let no = AtomicBool::new(false);
        let mut ix = Index::build(&root, limits, &no);
        assert_eq!(
            ix.files.keys().collect::<Vec<_>>(),
            ["lib/x.py", "src/a.rs", "src/b.rs"]
        );
        assert_eq!(ix.skipped.binary, ["bin.c"]);
        assert_eq!(ix.skipped.huge, ["gen.js"]);
        assert_eq!(ix.skipped.symlinks, ["out.rs"]);
        assert_eq!(ix.skipped.other, 1);
        write(
            &root,
            "lib/broken.py",
            "def ok():\n    return 1\ndef broken(:\n",
        );
        ix.refresh(limits, &no);
        let c = ix.coverage().unwrap();
        assert!(
            c.contains("1 files parsed only in part, their definitions after the error may be missing: lib/broken.py"),
            "{c}"
        );
        assert!(
            ix.files["lib/broken.py"]
                .facts
                .defs
                .iter()
                .any(|d| d.name == "ok")
        );
        std::fs::remove_file(root.join("lib/broken.py")).unwrap();
        ix.refresh(limits, &no);
        assert!(
            c.contains("1 files over 1 MiB") || c.contains("skipped as generated"),
            "{c}"
        );
        assert!(
            c.contains("1 binary files skipped") && c.contains("1 symlinks not followed"),
            "{c}"
        );
        // Nothing changed: nothing parsed.
        assert_eq!(ix.refresh(limits, &no), Refreshed::default());
        // Same content, new mtime: read, not parsed.
        write(&root, "src/b.rs", "pub fn b() {}\n");
        let r = ix.refresh(limits, &no);
        assert!(r.parsed.is_empty(), "{r:?}");
        write(&root, "src/b.rs", "pub fn b() { c(); }\npub fn c() {}\n");
        std::fs::remove_file(root.join("lib/x.py")).unwrap();
        let r = ix.refresh(limits, &no);
        assert_eq!(r.parsed, ["src/b.rs"]);
        assert_eq!(r.removed, ["lib/x.py"]);
        assert_eq!(ix.files["src/b.rs"].facts.defs.len(), 2);
        // Saved and loaded: the same facts, found by key or as the newest.
        let dir = root.join(".ooda/index");
        ix.save(&dir, "k1").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            "*\n"
        );
        let back = Index::load(&dir, "k1", &root).unwrap();
        assert_eq!(back.files.len(), 2);
        assert!(Index::load(&dir, "other", &root).is_some());
        std::fs::write(dir.join("k1.json"), "{ damaged").unwrap();
        assert!(Index::load(&dir, "k1", &root).is_none());
    }

    #[test]
    fn a_subfolder_of_a_repository_is_indexed_from_git_s_listing_into_the_repository_s_folder() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        git2::Repository::init(&root).unwrap();
        write(&root, ".gitignore", "node_modules/\nbuild/\n");
        write(&root, "pkg/src/a.py", "def a():\n    return 1\n");
        write(&root, "pkg/node_modules/x.js", "function x() {}\n");
        write(&root, "other/b.py", "def b():\n    return 2\n");
        write(&root, "build/gen.py", "def gen():\n    return 3\n");
        let sub = root.join("pkg");
        let ix = Index::build(&sub, Limits::default(), &AtomicBool::new(false));
        assert_eq!(ix.files.keys().collect::<Vec<_>>(), ["src/a.py"]);
        assert_eq!(dir_for(&sub), root.join(".ooda/index"));
        // A separate git dir: the index is the work tree's, not beside the
        // git dir.
        let d2 = tempfile::tempdir().unwrap();
        let gitdirs = d2.path().join("gitdirs");
        let sep = d2.path().join("separate");
        std::fs::create_dir_all(&sep).unwrap();
        let mut opts = git2::RepositoryInitOptions::new();
        opts.workdir_path(&sep);
        git2::Repository::init_opts(gitdirs.join("sep.git"), &opts).unwrap();
        assert_eq!(
            dir_for(&sep),
            sep.canonicalize().unwrap().join(".ooda/index")
        );
        assert_ne!(base_key(&sub), base_key(&root));
        // A folder git ignores is indexed as a plain folder.
        let ix = Index::build(
            &root.join("build"),
            Limits::default(),
            &AtomicBool::new(false),
        );
        assert_eq!(ix.files.keys().collect::<Vec<_>>(), ["gen.py"]);
    }

    #[test]
    fn past_its_limits_it_indexes_what_fits_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        for i in 0..5 {
            write(&root, &format!("f{i}.go"), "package x\nfunc F() {}\n");
        }
        let limits = Limits {
            files: 3,
            ..Limits::default()
        };
        let ix = Index::build(&root, limits, &AtomicBool::new(false));
        assert_eq!(ix.files.len(), 3);
        assert_eq!(ix.skipped.over_limit, ["f3.go", "f4.go"]);
        assert!(
            ix.coverage()
                .unwrap()
                .contains("2 files past the index's limits")
        );
    }
}
