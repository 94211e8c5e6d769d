//! The project's subagents: `subagents/*.md`, and the built-in copy of each
//! default the project has no file for.
//!
//! A project's file always wins over the built-in copy of the same name, so
//! editing `subagents/code-reviewer.md` changes the reviewer and deleting it
//! brings the default back. Files with problems stop the run before anything
//! is measured, like a bad Brief: a reviewer that silently failed to load
//! would approve a whole night by its absence.

use std::path::Path;

use super::definition::{Definition, SubDriver};
use crate::config::Config;
use crate::model::Role;
use crate::validate::problem::{BriefError, Problem};

/// Every loaded definition, sorted by name, and the warnings about them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Roster {
    pub definitions: Vec<Definition>,
    pub warnings: Vec<Problem>,
}

impl Roster {
    /// Loads `<root>/subagents/*.md` and the built-in copies of missing
    /// defaults; every problem of every file at once.
    pub(crate) fn load(root: &Path, config: &Config) -> Result<Roster, BriefError> {
        let dir = root.join("subagents");
        let mut problems = Vec::new();
        let mut roster = Roster::default();
        let files = crate::project::brief_paths_in(&dir).map_err(|e| BriefError {
            problems: vec![Problem {
                file: dir.clone(),
                line: None,
                key: None,
                message: e.to_string(),
                expected: None,
                example: None,
            }],
        })?;
        for path in &files {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(BriefError::io(path, &e).problems.remove(0));
                    continue;
                }
            };
            let shown = path.strip_prefix(root).unwrap_or(path);
            match Definition::parse(shown, &text, false) {
                Ok((d, w)) => {
                    roster.warnings.extend(w);
                    roster.definitions.push(d);
                }
                Err(e) => problems.extend(e.problems),
            }
        }
        for (file, text) in crate::project::SUBAGENTS {
            let stem = file.trim_end_matches(".md");
            if roster.definitions.iter().any(|d| d.name == stem)
                || files
                    .iter()
                    .any(|p| p.file_stem().is_some_and(|s| s == stem))
            {
                continue;
            }
            let path = Path::new("subagents").join(file);
            let (d, _) = Definition::parse(&path, text, true)?;
            roster.definitions.push(d);
        }
        for d in &roster.definitions {
            if d.driver == SubDriver::Command
                && let Some(a) = &d.agent
                && !config.agents.contains_key(a)
            {
                let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
                problems.push(Problem {
                    file: d.path.clone(),
                    line: None,
                    key: Some("agent".into()),
                    message: format!(
                        "agent `{a}` is not a profile; known: {} (define it under `agents:` in ooda.yaml)",
                        known.join(", ")
                    ),
                    expected: Some("a profile of ooda.yaml or a preset".into()),
                    example: Some("agent: claude".into()),
                });
            }
        }
        BriefError::check(problems)?;
        roster.definitions.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(roster)
    }

    /// The definitions that play `role`, by name.
    pub(crate) fn with_role(&self, role: Role) -> impl Iterator<Item = &Definition> {
        self.definitions
            .iter()
            .filter(move |d| d.role == Some(role))
    }

    /// The builtin reviewer's rules as a definition of their own: they run
    /// on every keep even when no `driver: builtin` reviewer is defined (a
    /// user's Claude Code `code-reviewer.md` replaces the default file, not
    /// the floor of rules every keep must pass).
    pub(crate) fn builtin_rules() -> Option<Definition> {
        let text = crate::project::SUBAGENTS
            .iter()
            .find(|(f, _)| *f == "code-reviewer.md")
            .map(|(_, t)| *t)
            .unwrap_or_default();
        let path = Path::new("subagents").join("code-reviewer.md");
        let (mut d, _) = Definition::parse(&path, text, true).ok()?;
        d.name = "builtin-rules".into();
        d.driver = SubDriver::Builtin;
        d.on_error = super::definition::OnError::Pass;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_file_wins_and_a_deleted_default_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("subagents");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(
            sub.join("code-reviewer.md"),
            "---\nname: code-reviewer\ndescription: mine\nrole: review\ndriver: builtin\n---\nMine.\n",
        )
        .unwrap();
        std::fs::write(
            sub.join("security-review.md"),
            "---\nname: security-review\ndescription: looks for secrets\nrole: review\nagent: claude\n---\nLook.\n",
        )
        .unwrap();
        let r = Roster::load(dir.path(), &Config::default()).unwrap();
        let names: Vec<&str> = r.definitions.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "code-reviewer",
                "code-simplifier",
                "eval-runner",
                "obsidian-synthesizer",
                "pipeline-analyzer",
                "security-review"
            ]
        );
        let reviewers: Vec<&Definition> = r.with_role(Role::Review).collect();
        assert_eq!(reviewers.len(), 2);
        assert_eq!(reviewers[0].description, "mine");
        assert!(!reviewers[0].built_in && r.definitions[1].built_in);
        assert_eq!(reviewers[1].driver_name(None), "command:claude");
    }

    #[test]
    fn every_broken_file_is_reported_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("subagents");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.md"), "---\nname: a\nrole: review\n---\n").unwrap();
        std::fs::write(
            sub.join("b.md"),
            "---\nname: b\ndescription: d\nrole: review\nagent: nosuch\n---\n",
        )
        .unwrap();
        let e = Roster::load(dir.path(), &Config::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("subagents/a.md:2: description: missing"), "{e}");
        assert!(
            e.contains("subagents/b.md: agent: agent `nosuch` is not a profile"),
            "{e}"
        );
    }
}
