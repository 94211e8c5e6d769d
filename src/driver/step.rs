//! One step of the machine, as everything that works in it sees it.
//!
//! A phase, the driver it asks and the subagents it dispatches read the
//! same things: the Brief and the project, the worktrees, the archive as the
//! step sees it, the statistics it decides with, the span to log under,
//! the flags that stop the work, and where commands run. They get one
//! read-only [`Step`] and never the machine, so none of them can move a
//! checkpoint or write the archive: the machine stores what they return.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};

use crate::archive::history::View;
use crate::brief::Brief;
use crate::config::Config;
use crate::error::Result;
use crate::eval::{Evaluator, Side, Worktree};
use crate::events::Span;
use crate::model::Orientation;
use crate::run::executor::{Executor, Job, Lease, Purpose};

/// The scratch worktree where the simplifier edits a copy of a keep.
pub(crate) const SIMPLIFY_DIR: &str = "simplify";

/// What one step may read.
#[derive(Clone, Copy)]
pub(crate) struct Step<'a> {
    pub brief: &'a Brief,
    pub config: &'a Config,
    /// The project root (templates are looked up there).
    pub root: &'a Path,
    /// `iterations/<brief>`.
    pub dir: &'a Path,
    /// `.ooda/worktrees/<brief>`: the candidate, the base and the scratch
    /// worktrees (anchor, check, simplify). Git work on them is the
    /// workspace's, which a phase that needs it is given beside the step
    /// (a repository handle is not shared between the threads that
    /// subagents run in).
    pub worktrees: &'a Path,
    /// Where an agent works: the candidate worktree (a scratch checkout for
    /// `ooda check --preflight` and a replay).
    pub cand_dir: &'a Path,
    /// What an agent must leave alone: the base worktree.
    pub base_dir: &'a Path,
    /// The archive as the step sees it (`archive/history/view.rs`): the
    /// iterations before this one for PLAN through LEARN, the analyzers and
    /// the synthesizers (a driver never sees its own iteration); the whole
    /// archive, this iteration included, for CHECK, the end of a run, the
    /// judge and the baseline.
    pub history: View<'a>,
    /// The statistics the step decides with: ORIENT's output for PLAN
    /// through LEARN, the archive's as they stand after the iteration for
    /// CHECK and the end of a run.
    pub orientation: &'a Orientation,
    pub iteration: u32,
    pub seed: u64,
    pub run_started: DateTime<Utc>,
    /// The phase's span: whatever works in the step logs under it.
    pub span: &'a Span,
    pub cancel: &'a AtomicBool,
    /// A long-running loop's "stop at the next checkpoint" (see
    /// [`Evaluator::stop`]); none outside a tick.
    pub stop: Option<&'a AtomicBool>,
    /// Where commands and agent processes run.
    pub executor: &'a dyn Executor,
}

impl<'a> Step<'a> {
    /// The same step, logging under `span`.
    pub(crate) fn under<'b>(&self, span: &'b Span) -> Step<'b>
    where
        'a: 'b,
    {
        Step { span, ..*self }
    }

    /// The eval-runner, logging under this step's span and running its
    /// commands under `lease`.
    pub(crate) fn evaluator<'l>(&'l self, lease: &'l dyn Lease) -> Evaluator<'l> {
        Evaluator::new(
            self.brief,
            &self.config.defaults,
            self.cancel,
            self.stop,
            self.span,
            lease,
        )
    }

    /// Where the pairs of `phase`'s series in `iteration` are kept as they
    /// are measured, for the comparison `sides` names (what the two sides
    /// are: commits, trees, knobs), so a series its cluster job cut short
    /// goes on from them.
    pub(crate) fn journal(
        &self,
        iteration: u32,
        phase: &str,
        sides: &str,
    ) -> crate::eval::journal::Journal {
        // What else decides what the pairs mean: the run's seed (the
        // order), the rule's settings, the command measured.
        let d = &self.config.defaults;
        crate::eval::journal::Journal::new(
            self.worktrees.join(format!("pairs-{phase}.json")),
            format!(
                "{iteration}|{phase}|{sides}|{}|{}|{}|{}|{}|{}",
                self.seed,
                d.pairs,
                d.calibration_pairs,
                d.alpha,
                self.brief.metric.command,
                self.brief.metric.direction
            ),
        )
    }

    /// A lease for the measurements of `phase` in `iteration`.
    pub(crate) fn measuring(
        &self,
        iteration: u32,
        phase: &'static str,
    ) -> Result<Box<dyn Lease + 'a>> {
        self.executor
            .lease(Purpose::Measure(Job { iteration, phase }))
    }

    pub(crate) fn worktree(&self, side: Side) -> Result<Worktree> {
        let dir = match side {
            Side::Base => self.base_dir.to_path_buf(),
            Side::Cand => self.cand_dir.to_path_buf(),
            Side::Anchor => self.worktrees.join("anchor"),
            Side::Check => self.worktrees.join("check"),
            Side::Simplified => self.worktrees.join(SIMPLIFY_DIR),
        };
        Worktree::new(side, dir, self.brief)
    }

    /// Identifies a base worktree's setup: its commit, knobs and command.
    pub(crate) fn base_setup_key(&self, base_commit: &str) -> Result<String> {
        Ok(format!(
            "{}|{}|{}",
            base_commit,
            crate::brief::points::key(&crate::brief::points::point_in(self.base_dir, self.brief)?),
            self.brief.metric.setup.clone().unwrap_or_default()
        ))
    }
}
