//! EVALUATE: guards, then interleaved pairs and the sequential decision.
//!
//! The eval-runner's mechanics (commands, pairs, looks) are `eval/mod.rs`; this
//! phase decides what to measure: nothing for a cut iteration (its cut is
//! its verdict), nothing for an exact repeat of a discarded candidate (that
//! verdict stands), otherwise setup, guards, a last scope check, and the
//! pairs under the rule ORIENT fixed, with the protected files re-hashed
//! before every run.

use super::{Beside, Step};
use crate::archive::state::InFlight;
use crate::driver::MainAgent;
use crate::error::{Error, Result};
use crate::eval::redlight;
use crate::eval::{self, RunFailure, Side, sequential};
use crate::events::Event;
use crate::model::{
    Alarm, AlarmKind, Analysis, EvalOutcome, NonInferiority, Role, SimplifyStage, SubagentReport,
    Tamper, Verdict,
};
use crate::stats::SplitMix64;
use crate::subagents::dispatch::Dispatched;
use crate::subagents::{Roster, eval_runner};
use crate::text::clip::short;
use crate::workspace::Workspace;

/// EVALUATE's output.
// One per phase, moved once: the size of the candidate's variant costs
// nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Evaluated {
    /// The second EVALUATE of a keep: the simplifier's version against it.
    /// The keep's own decision stands either way.
    Simplified(NonInferiority),
    /// The candidate's decision, the eval-runner's report, and what the
    /// analyzers that ran beside it found and cost.
    Candidate {
        eval: EvalOutcome,
        runner: Option<SubagentReport>,
        analyzed: Option<(Option<Analysis>, Dispatched)>,
    },
}

impl Evaluated {
    pub(super) fn apply(self, c: &mut InFlight) {
        match self {
            Evaluated::Simplified(test) => {
                if let Some(s) = c.review.as_mut().and_then(|r| r.simplified.as_mut()) {
                    s.reason = format!("{}; {}", s.reason, test.reason);
                    s.stage = if test.non_inferior {
                        SimplifyStage::Measured(test)
                    } else {
                        // Nothing left to review: the kept change stands.
                        SimplifyStage::Rejected(Some(test))
                    };
                }
            }
            Evaluated::Candidate {
                eval,
                runner,
                analyzed,
            } => {
                c.eval = Some(eval);
                // The simplified version's jobs are counted on their own.
                c.lost_jobs.clear();
                c.subagents = runner.into_iter().collect();
                if let Some((analysis, done)) = analyzed {
                    if analysis.is_some() {
                        c.analysis = analysis;
                    }
                    c.agent_calls.extend(done.calls);
                    if let Some(b) = done.breaches.iter().find(|b| b.unconfined)
                        && c.tamper.is_none()
                    {
                        c.tamper = Some(Tamper {
                            phase: crate::model::Phase::Evaluate,
                            what: b.message.clone(),
                        });
                    }
                    c.subagents.extend(done.reports);
                }
            }
        }
    }
}

/// EVALUATE: a simplifier's version waiting for its test is measured
/// against the keep; otherwise the candidate, by the eval-runner, with the
/// analyzers beside it when `beside` says so (they run in their own threads
/// while EVALUATE measures: a profiler waits for the pairs, and their report
/// is archived with the iteration for the next PLAN).
pub(crate) fn phase(
    step: &Step,
    ws: &Workspace,
    roster: &Roster,
    agent: &MainAgent,
    cur: &InFlight,
    beside: Option<Beside>,
) -> Result<Evaluated> {
    let runner = roster.with_role(Role::Evaluate).next();
    if let Some(s) = cur
        .review
        .as_ref()
        .and_then(|r| r.simplified.as_ref())
        .filter(|s| s.stage == SimplifyStage::Proposed)
    {
        let (test, _) = eval_runner::measure(
            step,
            runner,
            Some("simplified"),
            |step| simplified(step, ws, cur, s),
            |test| serde_json::json!({ "non_inferiority": test }),
        )?;
        return Ok(Evaluated::Simplified(test));
    }
    // A cut iteration measures nothing: the runner is not dispatched.
    let runner = runner.filter(|_| cur.cut.is_none());
    let measure = || {
        eval_runner::measure(
            step,
            runner,
            None,
            |step| run(step, ws, cur),
            |o| {
                serde_json::json!({
                    "verdict": o.verdict,
                    "discard": o.discard,
                    "reason": o.reason,
                    "guards": o.guards,
                    "comparison": o.comparison,
                })
            },
        )
    };
    let ((eval, runner), analyzed) = match beside {
        None => (measure()?, None),
        Some(Beside::Analyzer) => {
            let defs = crate::subagents::analyzer::due_for(roster, step.history, cur, step.brief);
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::scope(|s| {
                let analyzer = s.spawn(|| crate::subagents::analyzer::run(step, &defs, agent, rx));
                let outcome = measure();
                if outcome.is_ok() {
                    let _ = tx.send(());
                }
                drop(tx);
                let analysis = analyzer
                    .join()
                    .map_err(|_| Error::Internal("the pipeline-analyzer panicked".into()))?;
                Ok::<_, Error>((outcome?, Some(analysis?)))
            })?
        }
    };
    Ok(Evaluated::Candidate {
        eval,
        runner,
        analyzed,
    })
}

pub(crate) fn run(step: &Step, ws: &Workspace, cur: &InFlight) -> Result<EvalOutcome> {
    let mut outcome = match &cur.cut {
        Some(cut) => EvalOutcome::cut(cut),
        None => candidate(step, ws, cur)?,
    };
    if let Some(plan) = &cur.plan {
        eval::neutral(
            &mut outcome.discard,
            &mut outcome.reason,
            plan,
            step.orientation.theta1,
        );
    }
    step.span.emit(Event::Decision {
        verdict: outcome.verdict,
        reason: outcome.reason.clone(),
    })?;
    Ok(outcome)
}

/// The Brief's measured commands, as a block names them.
struct Commands<'a>(&'a crate::brief::Brief);

impl Commands<'_> {
    fn guards(&self) -> String {
        match self.0.guards.as_slice() {
            [] => "a command run after EXECUTE".into(),
            [g] => format!("the guard `{g}`"),
            all => format!(
                "one of the guards ({})",
                all.iter()
                    .map(|g| format!("`{g}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn metric(&self, while_: &str) -> String {
        format!(
            "the metric command `{}`, while the candidate was {while_},",
            self.0.metric.command
        )
    }
}

/// What is measured must be the tree that would be committed: a setup,
/// guard or metric run that rewrites a tracked file (an agent's build
/// script, a benchmark that rewrites its own results file in the
/// repository) would otherwise have one version measured and another
/// kept. New files git does not track (logs, results, caches) are a
/// measured command's outputs and never block. `by`: what ran since the
/// last look, as the message names it.
fn rewrote(
    step: &Step,
    ws: &Workspace,
    cur: &InFlight,
    max_new: u64,
    by: &str,
) -> Result<Option<String>> {
    let Some(tree) = &cur.tree else {
        return Ok(None);
    };
    let (_, since) = ws.since(super::oid(tree)?, max_new)?;
    if since.changed.is_empty() {
        return Ok((!since.created.is_empty())
            .then(|| eval::rewrites::created(by, &since.created, &step.brief.knobs_file)));
    }
    let said = eval::rewrites::message(by, &since.changed, "candidate", &step.brief.knobs_file);
    // The base's own run rewrote a file of its commit too: the benchmark
    // does it by itself, which no iteration can get past. The Brief's
    // problem, said as one (the tick fails with the fix), not a block that
    // counts against the agent.
    let base_tree = ws.tree_of(super::oid(&cur.base_commit)?)?;
    let base = ws.base_since(base_tree, max_new)?;
    if base.changed.iter().any(|p| since.changed.contains(p)) {
        return Err(Error::Input(format!(
            "{}: {said}{}",
            step.brief.path.display(),
            eval::rewrites::by_itself(&step.brief.name)
        )));
    }
    Ok(Some(said))
}

fn candidate(step: &Step, ws: &Workspace, cur: &InFlight) -> Result<EvalOutcome> {
    let (history, orientation, seed) = (step.history, step.orientation, step.seed);
    // An exact repeat of an earlier candidate: its verdict stands, and
    // measuring it again would only spend the night.
    if let Some(tree) = &cur.tree
        && let Some(earlier) = redlight::identical_candidate_in(history.facts(), tree)
    {
        let verdict = earlier.verdict.unwrap_or(Verdict::Discard);
        let reason = format!(
            "identical to the candidate of iteration {} (tree {}): its verdict ({}) is reused without measuring",
            earlier.iteration,
            short(tree),
            verdict.as_str()
        );
        let mut out = EvalOutcome::unmeasured(verdict, reason.clone());
        out.discard = earlier.discard;
        out.alarms = vec![Alarm::yellow(AlarmKind::IdenticalCandidate, reason)];
        return Ok(out);
    }
    if cur.lost_jobs.len() >= crate::archive::state::LOST_JOBS_MAX {
        return Ok(EvalOutcome {
            verdict: Verdict::Crash,
            discard: None,
            reason: format!(
                "not measured: its Slurm job ended {} times in a row while the candidate's command ran (last: {}); a candidate can cancel its own job, so it is not measured again. If someone else cancelled them, try the change again",
                cur.lost_jobs.len(),
                cur.lost_jobs.last().map(String::as_str).unwrap_or("")
            ),
            guards: Vec::new(),
            comparison: None,
            failure_output: Some(cur.lost_jobs.join("\n")),
            base_failed: false,
            alarms: Vec::new(),
            run_writes: None,
        });
    }
    let (base, cand) = (step.worktree(Side::Base)?, step.worktree(Side::Cand)?);
    let setup_key = step.base_setup_key(&cur.base_commit)?;
    let skip_base_setup = ws.base_setup_done(&setup_key);
    let rule = orientation.rule();
    let looks = sequential::looks_for(step.config.defaults.pairs);
    let mut rng =
        SplitMix64::new(seed ^ u64::from(cur.iteration).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let lease = step.measuring(cur.iteration, "evaluate")?;
    let mut ev = step.evaluator(lease.as_ref());
    ev.journal = Some(step.journal(
        cur.iteration,
        "evaluate",
        &format!(
            "{}|{}|{}",
            cur.base_commit,
            cur.tree.as_deref().unwrap_or(""),
            cur.brief_hash
        ),
    ));
    let crash = |reason: String, output: String, guards| EvalOutcome {
        verdict: Verdict::Crash,
        discard: None,
        reason,
        guards,
        comparison: None,
        failure_output: Some(output),
        base_failed: false,
        alarms: Vec::new(),
        run_writes: None,
    };
    let mut base_setup_done = false;
    if !skip_base_setup {
        if let Some(RunFailure::Failed { reason, output }) = ev.setup(&base)? {
            let mut c = crash(
                format!("the base failed to build: {reason}"),
                output,
                Vec::new(),
            );
            c.base_failed = true;
            return Ok(c);
        }
        base_setup_done = true;
    }
    if let Some(RunFailure::Failed { reason, output }) = ev.setup(&cand)? {
        return Ok(crash(reason, output, Vec::new()));
    }
    let max_new = step.brief.scope.max_file_size;
    let cmds = Commands(step.brief);
    if let Some(setup) = &step.brief.metric.setup
        && let Some(why) = rewrote(
            step,
            ws,
            cur,
            max_new,
            &format!("the setup command `{setup}`"),
        )?
    {
        return Ok(EvalOutcome::unmeasured(Verdict::Blocked, why));
    }
    let (guards, failed) = ev.guards(&cand)?;
    if let Some(RunFailure::Failed { reason, output }) = failed {
        return Ok(EvalOutcome {
            verdict: Verdict::Invalid,
            discard: None,
            reason,
            guards,
            comparison: None,
            failure_output: Some(output),
            base_failed: false,
            alarms: Vec::new(),
            run_writes: None,
        });
    }
    // Protected files are checked again after setup and guards, right
    // before measuring: a build step must not rewrite the evaluator either.
    // What they created that will not be committed (a build's outputs) is
    // not the change.
    let now = match &cur.tree {
        Some(tree) => ws.since(super::oid(tree)?, max_new)?.0,
        None => ws.candidate(max_new)?,
    };
    let protected = Protected::hash(
        &[&base.dir, &cand.dir],
        now.contents
            .files
            .keys()
            .filter(|p| step.brief.scope.protects(p)),
    );
    let changed = now.changed;
    let blocked = |reason: String| {
        let mut out = EvalOutcome::unmeasured(Verdict::Blocked, reason);
        out.guards = guards.clone();
        out
    };
    if let Some(v) = crate::workspace::content_violation(step.brief, &changed) {
        return Ok(blocked(format!("after setup and guards: {v}")));
    }
    if let Some(why) = rewrote(step, ws, cur, max_new, &cmds.guards())? {
        return Ok(blocked(why));
    }
    if base_setup_done {
        ws.record_base_setup(&setup_key)?;
    }
    // An exploratory point is screened first: one run against the base's
    // recent runs, the paired test (afresh) only past the bar.
    let mut screened = None;
    let reference = if step.brief.uses_builtin() && cur.plan.as_ref().is_some_and(|p| p.screen) {
        eval::screen::base_reference(history.all()?, &cur.base_commit, &cur.brief_hash)
    } else {
        Vec::new()
    };
    if reference.len() >= eval::screen::SCREEN_MIN_REFERENCE {
        let rig = |when: &str| {
            protected.changed().map(|path| {
                blocked(format!(
                    "the protected {path} changed while the candidate was screened (found {when}): what was measured is not what would be committed"
                ))
            })
        };
        if let Some(b) = rig("before its run") {
            return Ok(b);
        }
        ev.take_seconds();
        let mut values = Vec::new();
        // Both runs under one hold: no other Brief's series between them.
        let lock = ev.hold_measurements()?;
        // A near miss earns a second run (`screen::near_miss`).
        while values.is_empty()
            || (values.len() == 1
                && eval::screen::near_miss(
                    step.brief.metric.direction,
                    &reference,
                    values[0],
                    orientation.noise_sd(),
                ))
        {
            // Pair 0: the screening runs are none of the test's pairs.
            let value = ev.measure(&cand, 0)?;
            if let Some(b) = rig(if values.is_empty() {
                "after its run"
            } else {
                "after its second run"
            }) {
                return Ok(b);
            }
            if let Some(why) = rewrote(step, ws, cur, max_new, &cmds.metric("screened"))? {
                return Ok(blocked(why));
            }
            match value {
                Ok(v) => values.push(v),
                Err(RunFailure::Failed { reason, output }) => {
                    return Ok(crash(reason, output, guards));
                }
            }
        }
        drop(lock);
        let mut s = eval::screen::screen(
            step.brief.metric.direction,
            &reference,
            &values,
            orientation.noise_sd(),
            orientation.theta1,
            step.config.defaults.alpha,
        );
        s.comparison.seconds = ev.take_seconds();
        if !s.passed {
            return Ok(EvalOutcome {
                verdict: Verdict::Discard,
                discard: Some(crate::model::DiscardKind::Screened),
                reason: s.reason,
                guards,
                comparison: Some(s.comparison),
                failure_output: None,
                base_failed: false,
                alarms: Vec::new(),
                run_writes: None,
            });
        }
        screened = Some(s.reason);
    }
    let mut rigged = None;
    let mut runs = 0;
    // Only the decision's own runs are its points' cost.
    ev.take_seconds();
    let (measured, last_look) = ev.measure_sequential(
        &base,
        &cand,
        &rule,
        &looks,
        &mut rng,
        // Before every run: one that rewrote a protected file (its own
        // benchmark, or the other side's) must not have the rigged one
        // measured, not even once.
        || {
            rigged = protected.changed().map(|path| (path, runs));
            runs += 1;
            rigged.is_some()
        },
    )?;
    // And after the last run, or a failed one: a rig there is no less one.
    if rigged.is_none() {
        rigged = protected.changed().map(|path| (path, runs));
    }
    if let Some((path, n)) = rigged {
        let when = if n == 0 {
            "before the first run".to_string()
        } else {
            format!("after run {n}")
        };
        return Ok(blocked(format!(
            "the protected {path} changed while the candidate was measured (found {when}): what was measured is not what would be committed"
        )));
    }
    if let Some(why) = rewrote(step, ws, cur, max_new, &cmds.metric("measured"))? {
        return Ok(blocked(why));
    }
    let pairs = match measured {
        Err((side, RunFailure::Failed { reason, output })) => {
            let reason = if side == Side::Base {
                format!("the base failed while measuring: {reason}")
            } else {
                reason
            };
            return Ok(crash(reason, output, guards));
        }
        Ok(pairs) => pairs,
    };
    let last = last_look
        .ok_or_else(|| Error::Internal("the sequential test ended without a look".into()))?;
    if last.noise_changed {
        step.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::NoiseChanged,
            message: format!(
                "pair spread at {} pairs is far above the noise history",
                last.n
            ),
        })?;
    }
    let mut d = eval::report(
        step.brief.metric.direction,
        pairs,
        &last,
        &rule,
        step.config.defaults.alpha,
        &looks,
    );
    d.comparison.seconds = ev.take_seconds();
    Ok(EvalOutcome {
        verdict: if d.keep {
            Verdict::Keep
        } else {
            Verdict::Discard
        },
        discard: d.discard,
        reason: match screened {
            Some(screen) => format!("{}; {screen}", d.reason),
            None => d.reason,
        },
        guards,
        comparison: Some(d.comparison),
        failure_output: None,
        base_failed: false,
        alarms: Vec::new(),
        run_writes: ev.writes.summary(),
    })
}

/// The protected files of both worktrees, by content. Hashed right before
/// the first run and again before every run, so a measurement run that
/// rewrites a protected file (a benchmark that edits itself, or the base's
/// copy without the sandbox) is caught before another run uses it, not
/// only when all pairs are done. Cheap: only the protected paths are read.
struct Protected {
    /// (path, how a message names it: relative to its worktree, its hash
    /// when taken; `None` for a file that could not be read).
    files: Vec<(std::path::PathBuf, String, Option<git2::Oid>)>,
}

impl Protected {
    fn hash<'a>(dirs: &[&std::path::Path], rels: impl Iterator<Item = &'a String>) -> Protected {
        let rels: Vec<&String> = rels.collect();
        let files = dirs
            .iter()
            .flat_map(|dir| rels.iter().map(move |rel| dir.join(rel)).zip(rels.iter()))
            .map(|(path, rel)| {
                let hash = content(&path);
                (path, (*rel).clone(), hash)
            })
            .collect();
        Protected { files }
    }

    /// The first protected file whose content is no longer what was hashed.
    fn changed(&self) -> Option<String> {
        self.files
            .iter()
            .find(|(path, _, was)| content(path) != *was)
            .map(|(_, name, _)| name.clone())
    }
}

fn content(path: &std::path::Path) -> Option<git2::Oid> {
    git2::Oid::hash_file(git2::ObjectType::Blob, path).ok()
}

/// The non-inferiority test of the simplifier's version (in its scratch
/// worktree) against the kept candidate (in the candidate worktree): setup
/// in both, the guards on the simplified, then interleaved pairs under the
/// shifted rule (`sequential::non_inferiority`). The margin is
/// max(θ₁, noise floor), never more than half the kept change's measured
/// gain: a user keeps a +10% change expecting to keep most of it.
pub(crate) fn simplified(
    step: &Step,
    ws: &Workspace,
    cur: &InFlight,
    s: &crate::model::Simplification,
) -> Result<crate::model::NonInferiority> {
    let (orientation, seed) = (step.orientation, step.seed);
    let kept_gain = cur
        .eval
        .as_ref()
        .and_then(|e| e.comparison.as_ref())
        .map_or(0.0, |c| c.effect);
    let margin = orientation
        .theta1
        .max(step.brief.metric.noise_floor)
        .min(kept_gain / 2.0)
        .max(0.0);
    let dir = step.brief.metric.direction;
    let margin_log = match dir {
        crate::model::Direction::Minimize => margin.ln_1p(),
        crate::model::Direction::Maximize => -(-margin).ln_1p(),
    };
    let not = |reason: String| NonInferiority {
        margin,
        non_inferior: false,
        effect: 0.0,
        ci: (0.0, 0.0),
        p: 1.0,
        pairs: 0,
        reason,
    };
    // A simplified version can end its own job as a candidate can.
    if cur.lost_jobs.len() >= crate::archive::state::LOST_JOBS_MAX {
        return Ok(not(format!(
            "not measured: its Slurm job ended {} times in a row while its own command ran (last: {})",
            cur.lost_jobs.len(),
            cur.lost_jobs.last().map(String::as_str).unwrap_or("")
        )));
    }
    // Measured exactly as it would be committed: a fresh checkout of its
    // tree (nothing the simplifier left that git ignores), also on resume.
    let base = super::oid(&cur.base_commit)?;
    let tree = super::oid(&s.tree)?;
    let scratch = ws.scratch_of_tree(crate::driver::step::SIMPLIFY_DIR, base, tree, true)?;
    let (kept, simple) = (step.worktree(Side::Cand)?, step.worktree(Side::Simplified)?);
    let protected = Protected::hash(
        &[&kept.dir, &simple.dir],
        s.changed_paths
            .iter()
            .chain(step.brief.scope.protect.iter())
            .filter(|p| step.brief.scope.protects(p)),
    );
    // As for the candidate: a committed file changed, or a new one the
    // kept side's runs did not write, is not what would be committed; the
    // benchmark's own outputs are.
    let max_new = step.brief.scope.max_file_size;
    let drifted = || -> Result<bool> { Ok(!ws.scratch_since(&scratch, tree, max_new)?.clean()) };
    let lease = step.measuring(cur.iteration, "simplify")?;
    let mut ev = step.evaluator(lease.as_ref());
    ev.journal = Some(step.journal(
        cur.iteration,
        "simplify",
        &format!("{}|{}|{}", cur.base_commit, s.tree, cur.brief_hash),
    ));
    for wt in [&kept, &simple] {
        if let Some(RunFailure::Failed { reason, .. }) = ev.setup(wt)? {
            return Ok(not(format!(
                "setup failed on the {}: {reason}",
                wt.side.as_str()
            )));
        }
    }
    let (_, failed) = ev.guards(&simple)?;
    if let Some(RunFailure::Failed { reason, .. }) = failed {
        return Ok(not(format!(
            "the simplified candidate fails a guard: {reason}"
        )));
    }
    if drifted()? {
        return Ok(not(
            "setup or guards changed the simplified candidate's committed files: what is measured must be what is committed".into(),
        ));
    }
    let rule = sequential::non_inferiority(
        &orientation.rule(),
        margin_log,
        step.config.defaults.alpha,
        step.config.defaults.pairs,
    );
    let looks = sequential::looks_for(step.config.defaults.pairs);
    let mut rng = SplitMix64::new(
        seed ^ u64::from(cur.iteration).wrapping_mul(0xA24B_AED4_963E_E407) ^ 0x5117_1F1E,
    );
    let (measured, last_look) =
        ev.measure_sequential(&kept, &simple, &rule, &looks, &mut rng, || {
            protected.changed().is_some()
        })?;
    if let Some(path) = protected.changed() {
        return Ok(not(format!(
            "the protected {path} changed while the simplified candidate was measured"
        )));
    }
    if drifted()? {
        return Ok(not(
            "the simplified candidate's files changed while it was measured: what was measured is not what would be committed".into(),
        ));
    }
    let pairs = match measured {
        Err((side, RunFailure::Failed { reason, .. })) => {
            return Ok(not(format!(
                "the {} failed while measuring: {reason}",
                side.as_str()
            )));
        }
        Ok(p) => p,
    };
    let last = last_look
        .ok_or_else(|| Error::Internal("the non-inferiority test ended without a look".into()))?;
    let effect = eval::gain(dir, last.mean);
    let ci = (eval::gain(dir, last.ci95.0), eval::gain(dir, last.ci95.1));
    let non_inferior = last.decision == sequential::Decision::Keep;
    let reason = format!(
        "{}: {} (95% CI) against the kept change, {} at {} pairs (margin −{:.1}%)",
        if non_inferior {
            "non-inferior"
        } else {
            "not shown non-inferior"
        },
        crate::text::number::effect_ci(effect, ci),
        crate::text::number::p_value(last.p, rule.alphas[last.index]),
        pairs.len(),
        margin * 100.0
    );
    Ok(NonInferiority {
        margin,
        non_inferior,
        effect,
        ci,
        p: last.p,
        pairs: pairs.len() as u32,
        reason,
    })
}
