//! Where things live in a user's project.
//!
//! Every path ooda reads or writes is derived here from one root, so the
//! layout is defined once and `--root` works the same for every command.

use std::path::{Path, PathBuf};

use crate::brief::Brief;
use crate::config::Config;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
    pub config: Config,
}

impl Project {
    /// The root is `--root`, else the nearest ancestor holding `ooda.yaml`,
    /// else the git work tree containing the current directory.
    pub fn discover(explicit: Option<&Path>) -> Result<Project> {
        let root = match explicit {
            Some(p) => p
                .canonicalize()
                .map_err(|e| Error::Input(format!("--root {}: {e}", p.display())))?,
            None => {
                let cwd = std::env::current_dir()
                    .map_err(|e| Error::io("reading the current directory", e))?;
                find_root(&cwd)?
            }
        };
        at_git_top(&root)?;
        let config = Config::load(&root)?;
        Ok(Project { root, config })
    }

    pub fn briefs_dir(&self) -> PathBuf {
        self.root.join("briefs")
    }

    pub fn iterations_dir(&self, brief: &str) -> PathBuf {
        self.root.join("iterations").join(brief)
    }

    pub fn worktrees_dir(&self, brief: &str) -> PathBuf {
        self.root.join(".ooda").join("worktrees").join(brief)
    }

    /// Where a Brief's Slurm jobs write their output and ooda keeps their
    /// step records, waits and `submit --every` chain.
    pub fn slurm_dir(&self, brief: &str) -> PathBuf {
        self.worktrees_dir(brief).join("slurm")
    }

    /// Those of `paths` (under the root, existing or not) that git would
    /// not ignore: ooda's machine state that would show in `git status` of
    /// a project whose `.gitignore` predates it. Empty outside a repository.
    pub fn unignored(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let Ok(repo) = git2::Repository::discover(&self.root) else {
            return Vec::new();
        };
        let Some(workdir) = repo.workdir().and_then(|w| w.canonicalize().ok()) else {
            return Vec::new();
        };
        let root = self
            .root
            .canonicalize()
            .unwrap_or_else(|_| self.root.clone());
        paths
            .iter()
            .filter(|p| {
                let Ok(rel) = p.strip_prefix(&self.root) else {
                    return false;
                };
                let Ok(in_repo) = root.join(rel).strip_prefix(&workdir).map(Path::to_path_buf)
                else {
                    return false;
                };
                repo.is_path_ignored(&in_repo).is_ok_and(|ignored| !ignored)
            })
            .cloned()
            .collect()
    }

    /// Accepts a path (`briefs/x.md`, relative to the current directory or
    /// the root) or a bare name (`x`).
    pub fn brief_path(&self, arg: &str) -> Result<PathBuf> {
        let direct = PathBuf::from(arg);
        let candidates = [
            direct.clone(),
            self.root.join(&direct),
            self.briefs_dir().join(arg),
            self.briefs_dir().join(format!("{arg}.md")),
        ];
        candidates
            .into_iter()
            .find(|p| p.is_file())
            .ok_or_else(|| {
                Error::Input(format!(
                    "no Brief named `{arg}`: looked for {arg}, {}/{arg} and {}/{arg}.md (create one with `ooda new {}`)",
                    self.root.display(),
                    self.briefs_dir().display(),
                    Path::new(arg)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| arg.to_string())
                ))
            })
    }

    /// The name of the run `arg` names, for the commands that need only
    /// the run (`report`, `trace`, `reset`): the Brief file's name (the
    /// file need not be valid: a run is reset or read as it was), or, when
    /// the file is gone (renamed or deleted mid-run), a name whose archive
    /// or branch `ooda/<name>` is still there.
    pub fn run_name(&self, arg: &str) -> Result<String> {
        let missing = match self.brief_path(arg) {
            Ok(path) => {
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // A Brief by its place or its kind, not any file of that
                // name (`ooda reset bench.sh` must not reset a run `bench`).
                let md = path.extension().is_some_and(|e| e == "md");
                if md && crate::brief::is_name(&stem) {
                    return Ok(stem);
                }
                return Ok(self.load_brief(arg)?.name);
            }
            Err(e) => e,
        };
        let has_branch = || {
            git2::Repository::open(&self.root)
                .is_ok_and(|r| r.find_reference(&format!("refs/heads/ooda/{arg}")).is_ok())
        };
        if crate::brief::is_name(arg) && (self.iterations_dir(arg).is_dir() || has_branch()) {
            return Ok(arg.to_string());
        }
        Err(missing)
    }

    pub fn load_brief(&self, arg: &str) -> Result<Brief> {
        Ok(Brief::load_in(&self.brief_path(arg)?, &self.agent_names())?)
    }

    /// The agent profiles a Brief may name (presets and `ooda.yaml`'s).
    pub fn agent_names(&self) -> Vec<&str> {
        self.config.agents.keys().map(String::as_str).collect()
    }

    /// Every `briefs/*.md`, sorted by name.
    pub fn brief_paths(&self) -> Result<Vec<PathBuf>> {
        brief_paths_in(&self.briefs_dir())
    }
}

/// Every `*.md` file of `dir` (a project's `briefs/`), sorted by name; none
/// when the folder is missing.
pub(crate) fn brief_paths_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(format!("reading {}", dir.display()), e)),
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "md") && p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Refuses a project root below the top of its git work tree. The
/// worktrees ooda measures in are checkouts of the whole repository, and
/// every command, glob and knobs file is relative to their top: a root
/// deeper in the tree would run the Brief's commands in the wrong folder
/// and leave ooda's files where the `.gitignore` lines `init` wrote do not
/// cover them. A root outside any repository is left to the commands that
/// need git, which say so.
pub(crate) fn at_git_top(root: &Path) -> Result<()> {
    let Ok(repo) = git2::Repository::discover(root) else {
        return Ok(());
    };
    let top = repo.workdir().and_then(|w| w.canonicalize().ok());
    let here = root.canonicalize().ok();
    match (top, here) {
        (Some(top), Some(here)) if top != here => {
            let rel = here
                .strip_prefix(&top)
                .unwrap_or(&here)
                .display()
                .to_string();
            Err(Error::Input(format!(
                "the project root {} is not the top of its git work tree ({}): ooda measures in checkouts of the whole repository, so ooda.yaml, briefs/ and the Brief's commands belong at its top. Run `ooda init` in {} and write the commands from there (e.g. `cd {rel} && ./bench.sh`), globs too (`{rel}/src/**`)",
                here.display(),
                top.display(),
                top.display(),
            )))
        }
        _ => Ok(()),
    }
}

fn find_root(start: &Path) -> Result<PathBuf> {
    for dir in start.ancestors() {
        if dir.join("ooda.yaml").is_file() {
            return Ok(dir.to_path_buf());
        }
    }
    match git2::Repository::discover(start) {
        Ok(repo) => repo.workdir().map(Path::to_path_buf).ok_or_else(|| {
            Error::Input("the git repository is bare; run ooda inside a work tree".into())
        }),
        Err(_) => Err(Error::Input(format!(
            "{} is not inside a git repository: ooda keeps its changes on a git branch (run `git init` first, or pass --root)",
            start.display()
        ))),
    }
}

/// The default subagent definitions, compiled in from this repository's
/// own `subagents/`: what `init` copies is exactly what ooda falls back to
/// when a user deletes one.
pub(crate) const SUBAGENTS: &[(&str, &str)] = &[
    (
        "eval-runner.md",
        include_str!("../subagents/eval-runner.md"),
    ),
    (
        "pipeline-analyzer.md",
        include_str!("../subagents/pipeline-analyzer.md"),
    ),
    (
        "code-reviewer.md",
        include_str!("../subagents/code-reviewer.md"),
    ),
    (
        "code-simplifier.md",
        include_str!("../subagents/code-simplifier.md"),
    ),
    (
        "obsidian-synthesizer.md",
        include_str!("../subagents/obsidian-synthesizer.md"),
    ),
];

/// The default templates (`templates/`), compiled in like the subagents.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("plan.md", include_str!("../templates/plan.md")),
    ("execute.md", include_str!("../templates/execute.md")),
    ("learn.md", include_str!("../templates/learn.md")),
    ("brief.md", include_str!("../templates/brief.md")),
];

/// The project's template `name`, else its built-in default.
pub(crate) fn template(root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(root.join("templates").join(name))
        .ok()
        .or_else(|| {
            TEMPLATES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.to_string())
        })
}
