//! The library's error type.
//!
//! Every failure a user can cause is a variant that says what was wrong and
//! how to fix it; `exit.rs` maps each variant to one of the exit codes of
//! the README's table so that cron wrappers and scripts can branch on them.

use std::path::PathBuf;

use crate::validate::problem::BriefError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Brief or `ooda.yaml` that does not validate (all problems listed).
    #[error("{0}")]
    Brief(#[from] BriefError),
    /// Invalid input that is not a Brief problem: bad arguments, a missing file.
    #[error("{0}")]
    Input(String),
    /// Another runner holds the Brief's lock.
    #[error("busy: {0}")]
    Busy(String),
    /// The Brief is stopped on a red light until a human acknowledges it.
    #[error("{0}")]
    Red(String),
    /// A budget is used up.
    #[error("{0}")]
    Budget(String),
    /// SIGINT/SIGTERM arrived; state is consistent at the last checkpoint.
    #[error("interrupted: state saved at the last checkpoint; the next tick resumes")]
    Interrupted,
    /// A file ooda owns is damaged in a way it cannot repair by itself.
    #[error("{path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("git: {context}: {source}")]
    Git {
        context: String,
        #[source]
        source: git2::Error,
    },
    #[error("{0}")]
    Internal(String),
    /// Standard output was closed by its reader; the process ends quietly.
    #[error("standard output was closed")]
    BrokenPipe,
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn git(context: impl Into<String>, source: git2::Error) -> Error {
        Error::Git {
            context: context.into(),
            source,
        }
    }
}

/// Attach a human context to I/O results without a closure at every call site.
pub(crate) trait IoContext<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::result::Result<T, std::io::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::io(context(), e))
    }
}

impl<T> IoContext<T> for std::result::Result<T, git2::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::git(context(), e))
    }
}
