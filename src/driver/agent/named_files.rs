//! The files an EXECUTE step is about, for tools that work on an explicit
//! set of files (aider's `--file` and `--read`).
//!
//! aider edits only the files in its chat, and with `--yes-always` it adds
//! every repository file its model mentions, the protected benchmark too.
//! So the runner names them: the committed files in scope that the plan
//! names are editable, and every other committed file the prompt names is
//! read-only, which also keeps the tool from adding it as editable. The
//! scope check after the step is the fence either way; this only makes the
//! tool's picture match it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::brief::Brief;
use crate::error::{IoContext, Result};

/// Files for one EXECUTE call, relative to the worktree.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct NamedFiles {
    pub edit: Vec<String>,
    pub read: Vec<String>,
    /// Every committed file the agent may change, when there are at most
    /// [`SCOPED_MAX`]: what a model that cannot read is shown when its plan
    /// names no file.
    pub scoped: Vec<String>,
}

impl NamedFiles {
    /// What EXECUTE may change: the plan's files, else the few in scope (a
    /// small model's plan often names a function, not its file).
    pub(crate) fn editable(&self) -> &[String] {
        if self.edit.is_empty() {
            &self.scoped
        } else {
            &self.edit
        }
    }
}

/// The most files in scope that are listed in [`NamedFiles::scoped`].
pub(crate) const SCOPED_MAX: usize = 8;

/// The committed files of the worktree at `cand_dir` named in `plan_text`
/// (editable when the scope allows them) and in `prompt` (read-only).
pub(crate) fn named_files(
    brief: &Brief,
    cand_dir: &Path,
    plan_text: &str,
    prompt: &str,
) -> Result<NamedFiles> {
    let repo =
        git2::Repository::open(cand_dir).ctx(|| format!("opening {}", cand_dir.display()))?;
    let index = repo
        .index()
        .ctx(|| "reading the candidate's index".into())?;
    let files: Vec<String> = index
        .iter()
        .filter_map(|e| String::from_utf8(e.path).ok())
        .collect();
    Ok(classify(brief, &files, plan_text, prompt))
}

fn classify(brief: &Brief, files: &[String], plan_text: &str, prompt: &str) -> NamedFiles {
    let in_plan = mentioned(files, plan_text);
    let in_prompt = mentioned(files, prompt);
    let mut out = NamedFiles::default();
    for f in in_prompt.union(&in_plan) {
        // The knobs file is the runner's to write.
        let editable = f.as_str() != brief.knobs_file
            && in_plan.contains(f)
            && brief.scope.allows(f)
            && !brief.scope.protects(f);
        if editable {
            out.edit.push(f.clone());
        } else {
            out.read.push(f.clone());
        }
    }
    let scoped: Vec<String> = files
        .iter()
        .filter(|f| {
            f.as_str() != brief.knobs_file && brief.scope.allows(f) && !brief.scope.protects(f)
        })
        .filter(|f| crate::brief::own_root(f).is_none())
        .cloned()
        .collect();
    if scoped.len() <= SCOPED_MAX {
        out.scoped = scoped;
    }
    out
}

/// The files `text` names: by their path, or by their file name when no
/// other committed file has it (`parser.rs` for `src/parser.rs`).
fn mentioned(files: &[String], text: &str) -> BTreeSet<String> {
    let words: BTreeSet<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || "._-/".contains(c)))
        .map(|w| w.trim_matches(|c| c == '.' || c == '/'))
        .filter(|w| !w.is_empty())
        .collect();
    let name_of = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
    let mut names: std::collections::BTreeMap<String, usize> = Default::default();
    for f in files {
        *names.entry(name_of(f)).or_default() += 1;
    }
    files
        .iter()
        .filter(|f| {
            let name = name_of(f);
            words.contains(f.as_str())
                || (names.get(&name) == Some(&1)
                    && name.contains('.')
                    && words.contains(name.as_str()))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brief() -> Brief {
        let text = "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nscope:\n  allow: [\"src/**\", level.txt]\n  protect: [bench.sh]\nknobs:\n  X: { int: [1, 9] }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        Brief::parse(Path::new("briefs/t.md"), text).unwrap()
    }

    fn files() -> Vec<String> {
        [
            "bench.sh",
            "level.txt",
            "src/parser.rs",
            "src/lexer/mod.rs",
            "tests/mod.rs",
            "ooda.knobs.env",
            "README",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn the_plans_files_in_scope_are_editable_the_rest_read_only() {
        let plan = "Increment the number in level.txt, and presize the table in parser.rs (src/lexer/mod.rs too).";
        let prompt =
            format!("{plan}\nProtected: `bench.sh`. Knobs go to ooda.knobs.env. See the README.");
        let n = classify(&brief(), &files(), plan, &prompt);
        assert_eq!(n.edit, ["level.txt", "src/lexer/mod.rs", "src/parser.rs"]);
        // The knobs file is the runner's; a named README is shown, not edited.
        assert_eq!(n.read, ["README", "bench.sh", "ooda.knobs.env"]);
    }

    #[test]
    fn a_protected_or_out_of_scope_file_the_plan_names_is_read_only() {
        let plan = "edit bench.sh and tests/mod.rs";
        let n = classify(&brief(), &files(), plan, plan);
        assert!(n.edit.is_empty(), "{n:?}");
        assert_eq!(n.read, ["bench.sh", "tests/mod.rs"]);
        // What a model that cannot read is shown instead: the files in
        // scope, not the protected, the knobs file or ooda's own.
        assert_eq!(n.scoped, ["level.txt", "src/parser.rs", "src/lexer/mod.rs"]);
    }

    #[test]
    fn an_ambiguous_file_name_needs_its_path() {
        // mod.rs is in two places: only its path names it.
        let n = classify(&brief(), &files(), "change mod.rs", "change mod.rs");
        assert!(n.edit.is_empty() && n.read.is_empty(), "{n:?}");
        let n = classify(&brief(), &files(), "change ./src/lexer/mod.rs.", "");
        assert_eq!(n.edit, ["src/lexer/mod.rs"]);
    }
}
