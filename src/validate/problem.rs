//! What is wrong with a file a human wrote (a Brief, `ooda.yaml`), in a form
//! that names the file, the line, the key and the fix.
//!
//! Validators (`brief/`, `config/`, via `yaml::Checker`) collect every
//! problem of a file before reporting, so `ooda check` lists them all at once.

use std::fmt;
use std::path::{Path, PathBuf};

/// One thing wrong with a Brief or config file.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// Dotted path of the key: `metric.parse`, `knobs.TILE.int`, `scope.allow[1]`.
    pub key: Option<String>,
    /// The whole sentence shown to the user (it already contains what was expected).
    pub message: String,
    /// What was expected, on its own, for machine-readable output.
    pub expected: Option<String>,
    /// A correct line to copy, e.g. `direction: minimize`.
    pub example: Option<String>,
}

impl Problem {
    pub fn expected(&mut self, expected: impl Into<String>) -> &mut Problem {
        self.expected = Some(expected.into());
        self
    }

    pub fn example(&mut self, example: impl Into<String>) -> &mut Problem {
        self.example = Some(example.into());
        self
    }
}

impl fmt::Display for Problem {
    /// `briefs/x.md:7: metric.direction: expected ..., found `fastest` (example: `...`)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(example) = &self.example {
            write!(f, " (example: `{example}`)")?;
        }
        Ok(())
    }
}

/// Every problem found in a file; `Display` prints one per line.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", render(.problems))]
pub struct BriefError {
    pub problems: Vec<Problem>,
}

fn render(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl BriefError {
    /// A file that could not be read at all.
    pub fn io(path: &Path, err: &std::io::Error) -> BriefError {
        BriefError {
            problems: vec![Problem {
                file: path.to_path_buf(),
                line: None,
                key: None,
                message: format!("cannot read the file: {err}"),
                expected: None,
                example: None,
            }],
        }
    }

    /// Sorted by line (file-level problems first); `Ok` when there are none.
    pub(crate) fn check(mut problems: Vec<Problem>) -> Result<(), BriefError> {
        if problems.is_empty() {
            return Ok(());
        }
        problems.sort_by_key(|p| p.line);
        Err(BriefError { problems })
    }
}
