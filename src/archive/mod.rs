//! A Brief's archive (`iterations/<brief>/`), opened for writing: its lock,
//! its checkpoint, its history and its event log.
//!
//! The iteration files and `summary.md` are projections of typed state: the
//! record of an iteration is computed from the outputs its phases saved
//! ([`record_of`]), and `report::summary::sync` writes every projection of
//! it, in one order, idempotently: the iteration file
//! ([`Archive::write_record`]), the morning report, then the archive's own
//! (`falsified.md`, retention: [`Archive::write_own_projections`]). The
//! iteration file is written after LEARN and COMMIT; every projection after
//! CHECK and when a run stops, so a kill between any two writes is repaired
//! by the next sync.
//! The index of the archive (`index.jsonl`) is written with each iteration
//! file by the same writer (`history::write`), never by a second one.
//!
//! Opening reconciles the checkpoint with the archive: a state behind the
//! archive, unreadable or missing is rebuilt from the iteration files (they
//! are the source of truth); a state ahead of it (files deleted) is refused
//! with the fix; an earlier release's state is migrated.

pub(crate) mod disk;
pub mod falsified;
pub(crate) mod gc;
pub(crate) mod history;
pub(crate) mod layout;
pub(crate) mod lock;
pub(crate) mod state;

use crate::text::clip::short;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;

use crate::archive::history::{IterationRecord, Prediction, RenderContext};
use crate::archive::lock::BriefLock;
use crate::archive::state::{InFlight, Learned, Loaded, State};
use crate::brief::Brief;
use crate::error::{Error, Result};
use crate::events::{Event, Sink, Span};
use crate::model::{Stop, Verdict};
use crate::workspace::Workspace;

/// The Brief's archive, locked for this process.
pub(crate) struct Archive {
    pub dir: PathBuf,
    pub state: State,
    /// Every archived iteration: a row of facts each, the newest in full
    /// (history/view.rs).
    pub history: history::History,
    /// The run's span: iterations and run-level events are logged under it.
    pub run: Span,
    _lock: BriefLock,
}

impl Archive {
    /// Locks the archive of `brief` and loads (or rebuilds, or starts) its
    /// state; `watchers` see every event after the file does.
    pub(crate) fn open(
        dir: &Path,
        brief: &Brief,
        brief_hash: &str,
        ws: &Workspace,
        watchers: Vec<Arc<dyn Sink>>,
        events_segment: u64,
    ) -> Result<Archive> {
        crate::atomic::create_dir_all(dir)?;
        let lock = BriefLock::acquire(dir)?;
        // Under the lock: the runner keeps the index (history/index.rs).
        let history = history::History::open(dir)?;
        let mut warnings = Vec::new();
        let rebuild = |history: &[IterationRecord]| {
            State::rebuild(&brief.name, brief_hash, history, |c| ws.commit_exists(c))
        };
        let mut state = match state::load(dir)? {
            // A state behind the archive (restored from a backup, or killed
            // between writing iter-000.md and saving) is rebuilt from it; a
            // state ahead of it means archived files were deleted.
            Loaded::Ok(s) if history.len() > archived_by(&s) + usize::from(s.current.is_some()) => {
                warnings.push(format!(
                    "{} was behind the archive ({} iteration files); rebuilt it from {}",
                    State::path(dir).display(),
                    history.len(),
                    dir.display()
                ));
                rebuild(history.all()?).ok_or_else(|| {
                    Error::Internal("rebuilding from a non-empty archive failed".into())
                })?
            }
            Loaded::Ok(s) if history.len() < archived_by(&s) => {
                return Err(Error::Corrupt {
                    path: history::path_of(dir, history.len() as u32),
                    message: format!(
                        "missing: state.json records {} archived iteration(s) but only {} file(s) are in {}. Restore the missing iteration files (e.g. `git checkout -- {}`), or delete state.json to continue from the files that remain",
                        archived_by(&s),
                        history.len(),
                        dir.display(),
                        dir.display()
                    ),
                });
            }
            Loaded::Ok(s) => *s,
            other => {
                if let Loaded::Corrupt { moved_to, message } = &other {
                    warnings.push(format!(
                        "{} was unreadable ({message}); moved it to {} and rebuilt the state from {}",
                        State::path(dir).display(),
                        moved_to.display(),
                        dir.display()
                    ));
                }
                match rebuild(history.all()?) {
                    Some(s) => s,
                    None => new_state(dir, brief, brief_hash, ws)?,
                }
            }
        };
        // A state of version 1 in LEARN or later kept LEARN's output (its
        // lessons, and its agent calls) only in the iteration file it
        // wrote: read them back from there.
        if let Some(cur) = state.current.as_mut()
            && cur.done.archived()
            && cur.learned.is_none()
            && let Some(rec) = history.view().get(cur.iteration as usize)
        {
            cur.learned = Some(Learned::from_record(rec));
            cur.agent_calls = rec.agent_calls.clone();
        }
        // Under the lock, before this tick opens the live log, and only
        // between iterations (the one a tick resumes stays whole in the
        // live log): a log past its size is sealed (events/segments.rs).
        // A seal that fails leaves the log live and readable, so the tick
        // goes on and the next one tries again.
        if state.current.is_none()
            && let Err(e) = crate::events::segments::rotate(dir, events_segment)
        {
            eprintln!("ooda: warning: the event log was not sealed ({e}); it stays live");
        }
        let root = Span::open(dir, &state.run_id, watchers)?;
        let run = root.at(&run_event_id(&state.run_id), None);
        for w in &warnings {
            run.emit(Event::Anomaly {
                kind: crate::model::AnomalyKind::StateRebuilt,
                message: w.clone(),
            })?;
        }
        // Until a baseline is archived nothing is built on the start: a
        // start whose ticks failed (a broken benchmark, fixed and committed
        // since) gives way to the user's new HEAD, as the error told them it
        // would, and the run's clock (the wall budget) starts again with it.
        if history.is_empty()
            && state.current.is_none()
            && state.failing.is_some()
            && let Ok(head) = ws.user_head().map(|h| h.to_string())
            && head != state.start_commit
        {
            state.start_commit.clone_from(&head);
            state.best_commit = head;
            state.created_at = Utc::now();
        }
        if state.next_iteration == 0 && history.is_empty() && state.current.is_none() {
            root.emit_with_id(
                &run_event_id(&state.run_id),
                Event::RunStarted {
                    brief: state.brief.clone(),
                    start_commit: state.start_commit.clone(),
                    seed: state.seed,
                },
            )?;
        }
        state.save(dir)?;
        Ok(Archive {
            dir: dir.to_path_buf(),
            state,
            history,
            run,
            _lock: lock,
        })
    }

    pub(crate) fn save_state(&self) -> Result<()> {
        self.state.save(&self.dir)
    }

    /// Writes `rec`'s iteration file (and its index line) when it differs
    /// from what is archived: the durable part of a sync, which
    /// LEARN and COMMIT need before they may end. The projections
    /// (`summary.md`, `summary.json`, `progress.svg`, `falsified.md`) are
    /// rewritten once per iteration, by CHECK or the stop: each costs time
    /// linear in the history, and a kill before CHECK is repaired by the
    /// resumed tick, which syncs.
    pub(crate) fn write_record(
        &mut self,
        rec: Option<IterationRecord>,
        brief: &Brief,
    ) -> Result<()> {
        if let Some(rec) = rec {
            let i = rec.iteration as usize;
            if i > self.history.len() {
                return Err(Error::Internal(format!(
                    "iteration {i} cannot be archived after {} iteration file(s)",
                    self.history.len()
                )));
            }
            // What is archived is the redacted record (history/mod.rs).
            if self.history.view().get(i) != Some(&rec.redacted()) {
                // The LEARN gate: written, read back, compared (history/mod.rs).
                let (written, source) =
                    history::write_sourced(&self.dir, &rec, &render_context(brief))?;
                self.history.put(written, source);
            }
        }
        Ok(())
    }

    /// Brings the view up to the files before projections are read from it
    /// (`history/view.rs`).
    pub(crate) fn settle(&mut self) -> Result<()> {
        self.history.settle().map(|_| ())
    }

    /// The archive's own projections, after the report's
    /// (`report::summary::sync`): the complete falsified list, which a PLAN
    /// prompt points to once it is too long to show, and the retention of
    /// artifacts.
    pub(crate) fn write_own_projections(
        &mut self,
        brief: &Brief,
        keep_artifacts: Option<u32>,
    ) -> Result<()> {
        // Read again from the files since the last sync: falsified.md too
        // (until a sync succeeds).
        let whole = self.history.opened.rebuilt;
        falsified::sync_falsified(&self.dir, &brief.name, self.history.view(), whole)?;
        self.history.opened.rebuilt = false;
        // Artifacts of the discarded iterations that just left
        // `defaults.keep_artifacts` (archive/gc.rs), once the newest iteration
        // is archived, so a tick leaves what `ooda gc` would: housekeeping, a
        // failure to remove them never fails the tick (`ooda gc` reports it).
        let _ = gc::apply_retention(&self.dir, self.history.facts(), keep_artifacts);
        Ok(())
    }

    /// The last archived record with `stop` written into it: how a run that
    /// ends between iterations states why in its last iteration file.
    pub(crate) fn stopped_last(&self, stop: &Stop) -> Option<IterationRecord> {
        let mut rec = self.history.last().cloned().filter(|r| r.iteration > 0)?;
        rec.stop = Some(stop.clone());
        Some(rec)
    }
}

/// The id of a run's root event: fixed, so every tick logs under it.
pub(crate) fn run_event_id(run_id: &str) -> String {
    format!("run-{run_id}")
}

/// How an iteration file names the Brief's goal and metric.
pub fn render_context(brief: &Brief) -> RenderContext<'_> {
    RenderContext {
        goal: &brief.goal,
        metric: &brief.metric.name,
        direction_word: brief.metric.direction.better_word(),
    }
}

/// How many iteration files a state implies exist: every finished iteration,
/// plus the one in flight once its LEARN has archived it. (An in-flight
/// iteration killed after writing its file but before the LEARN checkpoint
/// has one more file; LEARN simply runs again and rewrites it.)
fn archived_by(s: &State) -> usize {
    s.next_iteration as usize + usize::from(s.current.as_ref().is_some_and(|c| c.done.archived()))
}

/// [`leftover_branch`] read without opening a workspace (for `status` and
/// `check`, which change nothing): what a tick would refuse to start over,
/// when `dir` has no run yet.
pub(crate) fn leftover_branch_at(root: &Path, dir: &Path, brief: &str) -> Option<Error> {
    let repo = git2::Repository::open(root).ok()?;
    let tip = repo
        .refname_to_id(&format!("refs/heads/ooda/{brief}"))
        .ok()?;
    let head = repo.refname_to_id("HEAD").ok()?;
    let started = dir.join("iter-000.md").is_file()
        || state::peek(dir).is_ok_and(|l| matches!(l, state::Loaded::Ok(_)));
    if tip == head || started {
        return None;
    }
    let in_head = repo.graph_descendant_of(head, tip).unwrap_or(false);
    Some(leftover_branch(dir, brief, tip, in_head))
}

/// A branch `ooda/<brief>` at `tip`, not your `HEAD`, while `dir` has no
/// history: left from an earlier run, so no run starts over it. With
/// commits your checkout does not have (`!in_head`), they are the kept
/// commits of a run whose archive is missing: never baseline over them
/// (exit 1, like a damaged file ooda owns).
pub(crate) fn leftover_branch(dir: &Path, brief: &str, tip: git2::Oid, in_head: bool) -> Error {
    let tip_full = tip.to_string();
    let tip_text = short(&tip_full);
    if !in_head {
        return Error::Corrupt {
            path: dir.to_path_buf(),
            message: format!(
                "no iteration files, but branch ooda/{brief} already exists (at {tip_text}) with commits your checkout does not have: the kept commits of an earlier run whose archive is missing. Restore the earlier iterations/{brief}/ folder (from git or a backup), or review the branch and start over with `ooda reset {brief}`."
            ),
        };
    }
    Error::Input(format!(
        "branch ooda/{brief} already exists (at {tip_text}) but {brief} has no history: it is left from an earlier run. Review it, then start over with `ooda reset {brief}`, or restore the earlier iterations/ folder."
    ))
}

fn new_state(dir: &Path, brief: &Brief, hash: &str, ws: &Workspace) -> Result<State> {
    let head = ws.user_head()?;
    if let Some(tip) = ws.branch_tip()?
        && tip != head
    {
        return Err(leftover_branch(
            dir,
            &brief.name,
            tip,
            ws.is_ancestor(tip, head)?,
        ));
    }
    let now = Utc::now();
    let seed = brief.seed.unwrap_or_else(|| {
        now.timestamp_nanos_opt().unwrap_or_default() as u64 ^ u64::from(std::process::id())
    });
    Ok(State {
        version: state::STATE_VERSION,
        brief: brief.name.clone(),
        run_id: format!(
            "{}-{}",
            now.format("%Y%m%dT%H%M%S"),
            &format!("{:08x}", seed as u32)
        ),
        seed,
        created_at: now,
        start_commit: head.to_string(),
        best_commit: head.to_string(),
        brief_hash: hash.to_string(),
        next_iteration: 0,
        stop: None,
        yellow: None,
        pending_ack: None,
        current: None,
        unconfined: None,
        tick_mark: None,
        failing: None,
    })
}

/// The iteration file of an iteration in flight: a pure function of what its
/// phases saved. Before LEARN there is nothing to project.
pub(crate) fn record_of(cur: &InFlight, state: &State) -> Option<IterationRecord> {
    let outcome = cur.eval.as_ref()?;
    let learned = cur.learned.as_ref()?;
    // A plan the validator rejected is not the iteration's plan: it
    // predicted nothing and cites nothing (the reason says why it was
    // refused, the calls table shows each try).
    let plan = match &cur.cut {
        Some(crate::model::Cut::PlanRejected { .. }) => crate::model::Plan::default(),
        _ => cur.plan.clone().unwrap_or_default(),
    };
    let check = cur.check.clone().unwrap_or_default();
    let lessons = learned.lessons.clone();
    Some(IterationRecord {
        iteration: cur.iteration,
        brief: state.brief.clone(),
        brief_hash: cur.brief_hash.clone(),
        run_id: state.run_id.clone(),
        seed: None,
        started: cur.started_at,
        finished: learned.finished,
        driver: learned.driver.clone(),
        verdict: outcome.verdict,
        discard: outcome.discard,
        reason: outcome.reason.clone(),
        // An iteration whose plan was never accepted predicted nothing.
        screen: plan.screen,
        predicted: (!plan.hypothesis.is_empty()).then_some(Prediction {
            effect: plan.predicted_effect,
            sd: plan.predicted_sd,
        }),
        hypothesis: plan.hypothesis,
        change: plan.change,
        axes: plan.axes,
        knobs: plan.knobs,
        measured: outcome.comparison.clone(),
        calibration: None,
        guards: outcome.guards.clone(),
        base: cur.base_commit.clone(),
        commit: cur
            .commit
            .clone()
            .filter(|_| outcome.verdict == Verdict::Keep),
        tree: cur.tree.clone(),
        changed_paths: cur.changed_paths.clone(),
        cites: plan.cites,
        tokens: cur.agent_calls.iter().map(|c| c.usage.total()).sum(),
        // A fold from +0.0: an empty f64 sum is -0.0, which would read oddly.
        cost_usd: cur
            .agent_calls
            .iter()
            .filter_map(|c| c.usage.cost_usd)
            .fold(0.0, |a, c| a + c),
        agent_calls: cur.agent_calls.clone(),
        jobs: cur.jobs.clone(),
        patterns: lessons.patterns,
        falsified: lessons.falsified,
        next: lessons.next,
        artifact: learned.artifact.clone(),
        failure_output: outcome.failure_output.clone(),
        run_writes: outcome.run_writes.clone(),
        narrative: lessons.narrative,
        acknowledged: learned.acknowledged.clone(),
        confirmation: check.confirmation,
        confirmation_failed: check.confirmation_failed,
        alarms: check.alarms,
        analysis: check
            .analysis
            .or_else(|| cur.analysis.clone())
            .map(|a| a.to_string()),
        simplification: cur
            .review
            .as_ref()
            .and_then(|r| r.simplified.as_ref())
            .map(crate::model::Simplification::archived),
        subagents: cur
            .subagents
            .iter()
            .chain(cur.review.iter().flat_map(|r| r.reports.iter()))
            .cloned()
            .collect(),
        rollback_to: check.rollback.map(|(_, target)| target),
        base_failed: outcome.base_failed,
        stop: check.stop,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::archive::state::CheckOutcome;
    use crate::config::Config;
    use crate::model::{
        Alarm, AlarmKind, Calibration, Comparison, EvalOutcome, LearnResult, Pair, Pattern, Plan,
    };

    const BRIEF: &str = "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nknobs:\n  X: { int: [1, 9] }\n---\n# Goal\nMake t small.\n\n# Success\nt drops.\n\n# Must not break\nNothing.\n";

    /// A repository with one commit, its Brief, and the archive opened on it.
    fn opened(dir: &Path) -> (Brief, Workspace, Archive) {
        let repo = git2::Repository::init(dir).unwrap();
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.txt")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@t").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        let brief = Brief::parse(&dir.join("briefs/b.md"), BRIEF).unwrap();
        let ws = Workspace::open(dir, &dir.join(".ooda/worktrees/b"), "b").unwrap();
        let archive = Archive::open(
            &dir.join("iterations/b"),
            &brief,
            "h",
            &ws,
            Vec::new(),
            1 << 26,
        )
        .unwrap();
        (brief, ws, archive)
    }

    fn baseline() -> IterationRecord {
        let mut r = IterationRecord::new(0, Verdict::Baseline);
        r.calibration = Some(Calibration {
            pairs: vec![Pair {
                base: 10.0,
                cand: 10.1,
                cand_first: false,
                d: -0.01,
            }],
            median: 10.0,
            run_sd: 0.01,
            noise_sd: 0.01,
            mean_d: -0.01,
            pairs_per_decision: 12,
            theta1: 0.007,
            alpha_look: Some(0.0169),
            advice: None,
        });
        r
    }

    fn kept(state: &State) -> InFlight {
        let mut c = InFlight::new(1, "e1".into(), "h", &state.start_commit);
        c.done = Phase::Commit;
        c.plan = Some(Plan {
            hypothesis: "X 5 → 6".into(),
            predicted_effect: 0.1,
            predicted_sd: 0.05,
            ..Plan::default()
        });
        c.tree = Some("t".repeat(40));
        c.eval = Some(EvalOutcome {
            verdict: Verdict::Keep,
            discard: None,
            reason: "kept".into(),
            guards: Vec::new(),
            comparison: Some(Comparison {
                pairs: Vec::new(),
                base_median: 10.0,
                cand_median: 9.0,
                effect: 0.1,
                ci: (0.05, 0.15),
                p: 0.001,
                looks: 1,
                theta1: 0.007,
                alpha: 0.05,
                delta0: 0.0,
                rule: "r".into(),
                alpha_look: 0.0169,
                s_h: 0.01,
                noise_changed: false,
                d_mean: 0.1,
                d_ci: (0.05, 0.15),
                direction: None,
                seconds: None,
            }),
            failure_output: None,
            base_failed: false,
            alarms: Vec::new(),
            run_writes: None,
        });
        c.learned = Some(Learned {
            lessons: LearnResult {
                patterns: vec![Pattern {
                    name: "p".into(),
                    lesson: "l".into(),
                }],
                ..LearnResult::default()
            },
            finished: c.started_at,
            driver: "builtin".into(),
            artifact: None,
            acknowledged: Some("ack".into()),
        });
        c.commit = Some("c".repeat(40));
        c
    }

    use crate::model::Phase;

    #[test]
    fn the_record_is_a_projection_of_the_phase_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, a) = opened(dir.path());
        let mut c = kept(&a.state);
        let mut before_learn = c.clone();
        before_learn.learned = None;
        assert_eq!(
            record_of(&before_learn, &a.state),
            None,
            "nothing before LEARN"
        );
        let r = record_of(&c, &a.state).unwrap();
        assert_eq!(r.verdict, Verdict::Keep);
        assert_eq!(r.commit, c.commit);
        assert_eq!(r.hypothesis, "X 5 → 6");
        assert_eq!(r.predicted.as_ref().map(|p| p.effect), Some(0.1));
        assert_eq!(r.patterns.len(), 1);
        assert_eq!(r.acknowledged.as_deref(), Some("ack"));
        assert_eq!(r.run_id, a.state.run_id);
        assert!(r.alarms.is_empty() && r.stop.is_none());
        c.check = Some(CheckOutcome {
            alarms: vec![Alarm::yellow(AlarmKind::Plateau, "4; report".into())],
            analysis: Some(crate::model::Analysis::builtin("report".into())),
            ..CheckOutcome::default()
        });
        let r = record_of(&c, &a.state).unwrap();
        assert_eq!(r.alarms.len(), 1);
        assert_eq!(r.analysis.as_deref(), Some("report"));
        // A discard names no commit even if one was prepared earlier.
        c.eval.as_mut().unwrap().verdict = Verdict::Discard;
        assert_eq!(record_of(&c, &a.state).unwrap().commit, None);
    }

    #[test]
    fn sync_writes_an_iteration_file_only_when_its_record_changed() {
        let dir = tempfile::tempdir().unwrap();
        let (brief, _, mut a) = opened(dir.path());
        let config = Config::default();
        crate::report::summary::sync(&mut a, Some(baseline()), &brief, &config).unwrap();
        let file = history::path_of(&a.dir, 0);
        let summary = a.dir.join("summary.md");
        assert!(summary.exists() && a.dir.join("progress.svg").exists());
        let inode = std::fs::metadata(&file).unwrap().ino();
        crate::report::summary::sync(&mut a, Some(baseline()), &brief, &config).unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().ino(),
            inode,
            "not rewritten"
        );
        let c = kept(&a.state);
        let rec = record_of(&c, &a.state);
        crate::report::summary::sync(&mut a, rec, &brief, &config).unwrap();
        assert_eq!(a.history.len(), 2);
        assert_eq!(
            &history::read(&history::path_of(&a.dir, 1)).unwrap(),
            a.history.view().get(1).unwrap()
        );
        assert!(
            crate::atomic::read_string(&summary)
                .unwrap()
                .contains("[1](iter-001.md)")
        );
        // An iteration cannot be archived past a gap.
        let mut far = a.history.view().get(1).unwrap().clone();
        far.iteration = 5;
        assert!(crate::report::summary::sync(&mut a, Some(far), &brief, &config).is_err());
        // A stop amends the last file.
        let stop = Stop {
            reason: crate::model::StopReason::Stalled,
            detail: "d".into(),
            at: Utc::now(),
            iteration: 1,
            setting: None,
        };
        let stopped = a.stopped_last(&stop).unwrap();
        crate::report::summary::sync(&mut a, Some(stopped), &brief, &config).unwrap();
        assert_eq!(
            history::read(&history::path_of(&a.dir, 1)).unwrap().stop,
            Some(stop)
        );
    }
}
