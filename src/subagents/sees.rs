//! What a subagent is given: only the parts its `sees` names, each built
//! from data by the runner.
//!
//! The parts are typed ([`Sees`]); the prompt of a command subagent is its
//! definition's body, then each part under its own heading, then the answer
//! it must give. Nothing else reaches it: not the plan, the hypothesis, the
//! main agent's output or an earlier subagent's report.

use std::fmt::Write as _;

use super::definition::{Definition, Sees};
use crate::error::{Error, Result};
use crate::workspace::Workspace;

/// The parts built for one dispatch, by kind.
#[derive(Debug, Default, Clone)]
pub(crate) struct Parts {
    pub parts: Vec<(Sees, String)>,
}

impl Parts {
    pub(crate) fn add(&mut self, sees: Sees, text: String) {
        self.parts.push((sees, text));
    }

    /// The parts `def` may see, in its order.
    pub(crate) fn for_definition(&self, def: &Definition) -> Vec<(Sees, &str)> {
        def.sees
            .iter()
            .filter_map(|s| {
                self.parts
                    .iter()
                    .find(|(k, _)| k == s)
                    .map(|(k, t)| (*k, t.as_str()))
            })
            .collect()
    }
}

fn heading(s: Sees) -> &'static str {
    match s {
        Sees::Diff => "The change (git diff, base to candidate)",
        Sees::Rules => "The project's rules",
        Sees::HistoryStats => "Statistics of the history",
        Sees::ProfileOutput => "Output of the analyze command (compressed)",
        Sees::IterationData => "The iteration's data",
        Sees::Commands => "The Brief's commands",
        Sees::Measurements => "The measurements",
    }
}

/// A command subagent's prompt: its system prompt, its parts, the answer.
pub(crate) fn prompt(def: &Definition, parts: &[(Sees, &str)], answer: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", def.prompt.trim());
    for (k, text) in parts {
        let _ = writeln!(s, "# {}\n", heading(*k));
        if *k == Sees::Diff {
            let _ = writeln!(s, "```diff\n{}\n```\n", text.trim_end());
        } else {
            let _ = writeln!(s, "{}\n", text.trim_end());
        }
    }
    let _ = writeln!(s, "# Your answer\n\n{answer}");
    s
}

/// At most `max` characters of a patch, cut at a line, saying what was left
/// out and where the rest can be read.
pub(crate) fn clip_patch(patch: &str, max: usize) -> String {
    if patch.chars().count() <= max {
        return patch.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut lines = patch.lines();
    for l in lines.by_ref() {
        let n = l.chars().count() + 1;
        if used + n > max {
            break;
        }
        used += n;
        out.push_str(l);
        out.push('\n');
    }
    let rest = lines.count() + 1;
    let _ = writeln!(
        out,
        "[… {rest} more lines of the diff left out; the candidate's files are in the working directory]"
    );
    out
}

/// The rule files (`review.rules` globs) as the base commit has them, and
/// the Brief's "Must not break" section; at most `max` characters. Read
/// from the base, not the candidate: a change must not rewrite the rules it
/// is judged by.
pub(crate) fn rules(
    ws: &Workspace,
    base: git2::Oid,
    globs: &[String],
    must_not_break: &str,
    max: usize,
) -> Result<String> {
    let mut b = globset::GlobSetBuilder::new();
    for g in globs {
        let glob = globset::GlobBuilder::new(g)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::Input(format!("ooda.yaml: review.rules: `{g}`: {e}")))?;
        b.add(glob);
    }
    let set = b
        .build()
        .map_err(|e| Error::Input(format!("ooda.yaml: review.rules: {e}")))?;
    let repo = ws.base_repo()?;
    let tree = repo
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(|e| Error::git("reading the base commit's tree", e))?;
    let mut files: Vec<(String, git2::Oid)> = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob)
            && let Ok(name) = entry.name()
        {
            let path = format!("{dir}{name}");
            if set.is_match(&path) {
                files.push((path, entry.id()));
            }
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(|e| Error::git("listing the rule files", e))?;
    files.sort();
    let mut s = String::new();
    for (path, id) in files {
        let Ok(blob) = repo.find_blob(id) else {
            continue;
        };
        let text = String::from_utf8_lossy(blob.content());
        let _ = writeln!(s, "## {path}\n\n{}\n", text.trim_end());
    }
    let must = must_not_break.trim();
    if !must.is_empty() {
        let _ = writeln!(s, "## Must not break (from the Brief)\n\n{must}\n");
    }
    if s.is_empty() {
        s.push_str(
            "No rule files (review.rules in ooda.yaml) and no \"Must not break\" section.\n",
        );
    }
    Ok(crate::text::compress::shorten(&s, max))
}
