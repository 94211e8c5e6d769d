//! The exit-code policy, in one place.
//!
//! Cron wrappers and scripts branch on these, so each outcome has exactly one
//! code: 0 ok (an iteration done, or nothing to do), 1 internal or I/O
//! error, 2 invalid input or config, 3 red light, 4 stopped by a budget,
//! 5 busy (another runner holds the lock), 130 interrupted. Commands return
//! an [`Exit`] or an error; `main` turns either into the process's code.

use crate::error::Error;
use crate::phases::StepOutcome;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    Failure,
    Input,
    Red,
    Budget,
    Busy,
    Interrupted,
    /// The exit code of a command ooda ran for the caller (`ooda compress
    /// -- CMD`), passed on as it was.
    Passed(u8),
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failure => 1,
            Exit::Input => 2,
            Exit::Red => 3,
            Exit::Budget => 4,
            Exit::Busy => 5,
            Exit::Interrupted => 130,
            Exit::Passed(code) => code,
        }
    }

    /// What a step that ended the run means for the caller: a red light or
    /// a used-up budget is not "ok", even though nothing failed.
    pub(crate) fn of_step(outcome: &StepOutcome) -> Exit {
        match outcome {
            StepOutcome::Baseline | StepOutcome::Iteration { .. } => Exit::Ok,
            StepOutcome::Stopped(stop, _) | StepOutcome::Finished(stop) => {
                if stop.reason.is_red() {
                    Exit::Red
                } else if stop.reason.is_budget() {
                    Exit::Budget
                } else {
                    Exit::Ok
                }
            }
        }
    }
}

impl From<&Error> for Exit {
    fn from(e: &Error) -> Exit {
        match e {
            Error::Brief(_) | Error::Input(_) => Exit::Input,
            Error::Red(_) => Exit::Red,
            Error::Budget(_) => Exit::Budget,
            Error::Busy(_) => Exit::Busy,
            Error::Interrupted => Exit::Interrupted,
            // A reader that went away (`ooda status | head -1`) is not a failure.
            Error::BrokenPipe => Exit::Ok,
            Error::Corrupt { .. } | Error::Io { .. } | Error::Git { .. } | Error::Internal(_) => {
                Exit::Failure
            }
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Stop, StopReason};

    #[test]
    fn every_stop_has_its_code() {
        let stop = |reason| {
            StepOutcome::Stopped(
                Stop {
                    reason,
                    detail: String::new(),
                    at: chrono::Utc::now(),
                    iteration: 1,
                    setting: None,
                },
                None,
            )
        };
        for r in StopReason::ALL {
            let want = if r.is_red() {
                3
            } else if r.is_budget() {
                4
            } else {
                0
            };
            assert_eq!(Exit::of_step(&stop(r)).code(), want, "{r:?}");
        }
        assert_eq!(Exit::from(&Error::Busy("x".into())).code(), 5);
        assert_eq!(Exit::from(&Error::Interrupted).code(), 130);
        assert_eq!(Exit::from(&Error::Input("x".into())).code(), 2);
    }
}
