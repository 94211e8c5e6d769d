//! The end of a run, whoever ends it (CHECK's stop, a budget between
//! iterations, a search with nothing left to try).
//!
//! A stop is recorded in the last iteration file, the summary, the state and
//! the events, in that order: a kill after the archive is written leaves the
//! state as it was, and the stop is decided again. Every run that ends
//! states a confirmed gain (a RED one included); its synthesizers write the
//! run's notes; `notify` is told; last, the judges give their verdict, which
//! may take their timeout or fail without the stop being any less recorded.

use chrono::Utc;

use super::{Machine, StepOutcome, confirm, failpoint};
use crate::error::Result;
use crate::events::Event;
use crate::model::{IterationRecord, Stop, StopReason, TaskState};
use crate::report::summary;

impl Machine<'_> {
    /// Records a stop in the last iteration file (`rec`), the summary, the
    /// state and the events, in that order: a kill after the archive is
    /// written leaves the state as it was, and the stop is decided again.
    ///
    /// `fresh`: `rec` is the iteration CHECK just ended (not the last one
    /// archived, with the stop written in): only then may a command
    /// synthesizer be asked for its narrative, which it gave once already.
    pub(super) fn finish(
        &mut self,
        stop: Stop,
        mut rec: Option<IterationRecord>,
        fresh: bool,
    ) -> Result<()> {
        // Every run that ends states a confirmed gain, a RED one included,
        // also when it ends at the start of a tick or in PLAN.
        if self.best_unconfirmed(rec.as_ref()) {
            let iteration = rec
                .as_ref()
                .map(|r| r.iteration)
                .or_else(|| self.archive.history.last().map(|r| r.iteration))
                .unwrap_or(0);
            let span = self.archive.run.with_iteration(Some(iteration));
            // A kept commit can end its own job as a candidate can: the
            // confirmation then says so rather than being tried forever.
            let o = self.orientation_now();
            let step = self.step_at(&span, &o, self.archive.history.view(), iteration);
            let conf = match confirm::run(&step, &self.ws, &self.archive.state, iteration) {
                Err(e) if crate::run::executor::job_ended(&e).is_some_and(|j| j.by_command) => {
                    confirm::Confirmed::Failed(format!(
                        "its Slurm job ended under it: {}",
                        crate::run::executor::job_ended(&e).map_or("", |j| j.message.as_str())
                    ))
                }
                r => r?,
            };
            if let Some(r) = rec.as_mut() {
                (r.confirmation, r.confirmation_failed) = conf.into_parts();
                r.jobs.extend(self.executor.take_jobs());
            }
        }
        // The run's notes, with the stop and the confirmation in them.
        let iteration = rec.as_ref().map(|r| r.iteration).unwrap_or(stop.iteration);
        let span = self.archive.run.with_iteration(Some(iteration));
        let mut last = rec.clone().or_else(|| {
            self.archive
                .history
                .last()
                .filter(|r| r.iteration > 0)
                .cloned()
        });
        if let Some(r) = last.as_mut() {
            let (reports, calls) = self.synthesize(&span, r, Some(&stop), fresh)?;
            if let Some(rec) = rec.as_mut() {
                rec.attach(reports, calls);
            }
        }
        self.archive.state.stop = Some(stop.clone());
        summary::sync(&mut self.archive, rec, &self.brief, &self.project.config)?;
        failpoint::after(failpoint::Point::StopArchived);
        self.archive.save_state()?;
        let run = self.archive.run.with_iteration(Some(stop.iteration));
        if stop.reason.is_red() {
            run.emit(Event::RedLight {
                reason: stop.reason.as_str().into(),
                evidence: stop.detail.clone(),
            })?;
        }
        let h = self.headline()?;
        run.emit(Event::RunFinished {
            reason: stop.reason.as_str().into(),
            detail: stop.detail.clone(),
            result: Some(crate::events::RunResult {
                kind: h.kind().into(),
                gain: h.effect().map(|e| e.0),
                ci: h.effect().and_then(|e| e.1),
                text: h.short(),
            }),
        })?;
        if let Some(cmd) = &self.project.config.watch.notify {
            // A failing notify is the run's trouble, not the last iteration's.
            crate::report::notify::send(
                cmd,
                &self.brief.name,
                &stop,
                &crate::archive::layout::Layout::of(&self.archive.dir).summary(),
                &self.archive.run.with_iteration(None),
            );
        }
        // Last: the stop is recorded and announced whatever the judge does
        // (it may take its timeout, be interrupted, or fail). It works at
        // the run's level, not in the last iteration, and the summary is
        // written again after it whatever it did.
        let at_run = self.archive.run.with_iteration(None);
        let judged = match self.judge(&at_run, &stop) {
            Ok(rec) => rec,
            Err(e) => {
                let _ = at_run.emit(Event::Anomaly {
                    kind: crate::model::AnomalyKind::JudgeFailed,
                    message: format!("the judge could not judge the run: {e}"),
                });
                None
            }
        };
        summary::sync(&mut self.archive, judged, &self.brief, &self.project.config)
    }

    /// Whether the current best still lacks a confirmation test: none in
    /// the archive before `rec` (the iteration about to be written), and
    /// none measured or tried and failed in `rec` itself (CHECK's test of
    /// this iteration is not run a second time). CHECK asks the same.
    fn best_unconfirmed(&self, rec: Option<&IterationRecord>) -> bool {
        let state = &self.archive.state;
        if state.best_commit == state.start_commit {
            return false;
        }
        let h = self.archive.history.view();
        let earlier = h.before(rec.map_or(h.len(), |r| r.iteration as usize));
        let in_rec = rec.is_some_and(|r| {
            r.confirmation_failed.is_some()
                || r.confirmation
                    .as_ref()
                    .is_some_and(|c| c.best == state.best_commit)
        });
        // An unreadable archive cannot show a confirmation: ask for one.
        !in_rec
            && earlier
                .confirmation_of(&state.best_commit)
                .map_or(true, |c| c.is_none())
    }

    /// PLAN found nothing left to try: the iteration never started its work,
    /// and the run ends `stalled` at the iteration before it.
    pub(super) fn stalled(&mut self, detail: String) -> Result<StepOutcome> {
        let iteration = self.current()?.iteration;
        self.iteration_span()?
            .task_state(TaskState::Cancelled, Some(detail.clone()))?;
        let stop = Stop {
            reason: StopReason::Stalled,
            detail,
            at: Utc::now(),
            iteration: iteration.saturating_sub(1),
            setting: None,
        };
        self.archive.state.current = None;
        let rec = self.archive.stopped_last(&stop);
        self.finish(stop.clone(), rec, false)?;
        Ok(StepOutcome::Stopped(stop, None))
    }
}
