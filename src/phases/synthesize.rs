//! The synthesizers of a keep and of the end of a run: notes for the
//! user's vault, rendered from the archive.
//!
//! Not a phase of its own: CHECK runs it for a keep that does not end the
//! run, and the end of a run (whoever ends it) for its last iteration, once
//! the confirmation test is in the record. The builtin synthesizer writes
//! every note from data; a command synthesizer is asked, for a keep, for one
//! paragraph of narrative from the iteration's data, which goes into that
//! iteration's note under its own heading (the numbers stay the runner's).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::archive::state::State;
use crate::driver::{MainAgent, Step};
use crate::error::Result;
use crate::model::{IterationRecord, Phase, Stop, SubagentOutcome, Verdict};
use crate::subagents::Definition;
use crate::subagents::definition::{Sees, SubDriver};
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};
use crate::subagents::synthesizer;

const NARRATIVE_ANSWER: &str = "Answer with one JSON object, written to the file named by $OODA_OUTPUT_FILE or as the last code block tagged `ooda` in your reply:\n\n```ooda\n{\"narrative\": \"one paragraph for the note\"}\n```\n\nWrite prose only: the note already states every number from ooda's data.";

/// The synthesizers the moment triggers: a keep, the end of a run.
pub(crate) fn due<'r>(
    roster: &'r crate::subagents::Roster,
    rec: &IterationRecord,
    stop: Option<&Stop>,
) -> Vec<&'r Definition> {
    use crate::subagents::definition::Trigger;
    let keep = rec.verdict == Verdict::Keep;
    roster
        .with_role(crate::model::Role::Synthesize)
        .filter(|d| {
            d.triggers
                .iter()
                .any(|t| (keep && *t == Trigger::Keep) || (stop.is_some() && *t == Trigger::RunEnd))
        })
        .collect()
}

/// Runs `defs` for the iteration `history.last()`; `stop` at the end of a run.
pub(crate) fn run(
    t: &Step,
    defs: &[&Definition],
    agent: &MainAgent,
    state: &State,
    rec: &IterationRecord,
    stop: Option<&Stop>,
    narrate: bool,
) -> Result<Dispatched> {
    let history = t.history;
    let gathered = synthesizer::gather(history, rec, &state.best_commit)?;
    let gathered = &gathered;
    let main_name = agent.agent_name();
    fn input<'a>(
        t: &'a Step,
        state: &'a State,
        gathered: &'a synthesizer::Gathered,
        stop: Option<&'a Stop>,
        narrative: Option<(u32, &'a str)>,
    ) -> synthesizer::Input<'a> {
        synthesizer::Input {
            brief: &t.brief.name,
            metric: &t.brief.metric.name,
            direction: t.brief.metric.direction,
            run_id: &state.run_id,
            started: state.created_at,
            start_commit: &state.start_commit,
            best_commit: &state.best_commit,
            gathered,
            stop,
            narrative,
        }
    }
    let notes_dir = t.config.defaults.notes_dir.as_str();
    let jobs: Vec<Job> = defs
        .iter()
        .map(|def| {
            let def = *def;
            let driver = def.driver_name(main_name.as_deref());
            let agent = super::review::command_agent(t, def, agent);
            let work: dispatch::Work = Box::new(move |span| {
                let mut a = Answer::default();
                let mut narrative = None;
                if def.driver != SubDriver::Builtin && rec.verdict == Verdict::Keep && narrate {
                    match &agent {
                        Err(why) => {
                            a.outcome = Some(SubagentOutcome::Skipped);
                            a.problem =
                                Some(format!("{why}; the notes were written without a narrative"));
                        }
                        Ok(agent) => {
                            let parts = parts(def, rec, history, t.orientation.theta1)?;
                            let parts: Vec<(Sees, &str)> =
                                parts.iter().map(|(k, v)| (*k, v.as_str())).collect();
                            let prompt =
                                crate::subagents::sees::prompt(def, &parts, NARRATIVE_ANSWER);
                            let mut reply = dispatch::run_command(
                                t,
                                agent.as_ref(),
                                def,
                                Phase::Check,
                                &prompt,
                                t.cand_dir,
                                span,
                                |v, a| {
                                    let n = v
                                        .get("narrative")
                                        .and_then(Value::as_str)
                                        .map(str::trim)
                                        .filter(|n| !n.is_empty());
                                    match n {
                                        Some(n) => {
                                            a.body = json!({"narrative": n});
                                            Ok(())
                                        }
                                        None => Err("the answer has no `narrative` text".into()),
                                    }
                                },
                            )?;
                            narrative =
                                reply
                                    .body
                                    .get("narrative")
                                    .and_then(Value::as_str)
                                    .map(|s| {
                                        crate::text::clip::clip(
                                            &crate::text::redact::redact(s),
                                            2000,
                                        )
                                    });
                            a.calls.append(&mut reply.calls);
                            a.outcome = reply.outcome;
                            a.problem = reply.problem;
                            a.breach = reply.breach;
                        }
                    }
                }
                // The notes are data: written whatever the narrative did.
                let narrative_at = narrative.as_deref().map(|n| (rec.iteration, n));
                let written = synthesizer::write(
                    t.root,
                    notes_dir,
                    &input(t, state, gathered, stop, narrative_at),
                )?;
                a.body = json!({
                    "notes": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                    "narrative": narrative,
                });
                a.narrative = narrative;
                Ok(a)
            });
            Job { def, driver, work }
        })
        .collect();
    dispatch::run_all(t.span, t.dir, rec.iteration, jobs, None)
}

/// A command synthesizer's parts: the iteration's data and the history's
/// statistics, as its `sees` allows.
fn parts(
    def: &Definition,
    rec: &IterationRecord,
    history: crate::archive::history::View,
    theta1: f64,
) -> Result<Vec<(Sees, String)>> {
    let mut out = Vec::new();
    for s in &def.sees {
        let text = match s {
            Sees::IterationData => {
                let mut t = String::new();
                let _ = writeln!(
                    t,
                    "Iteration {}: {} — {}",
                    rec.iteration,
                    rec.verdict_text(),
                    rec.reason
                );
                let _ = writeln!(t, "Hypothesis: {}", rec.hypothesis);
                if !rec.change.is_empty() {
                    let _ = writeln!(t, "Change: {}", rec.change);
                }
                let _ = writeln!(t, "Effect: {}", rec.effect_text());
                for p in &rec.patterns {
                    let _ = writeln!(t, "Pattern {}: {}", p.name, p.lesson);
                }
                t
            }
            // The archive before this iteration, and this iteration.
            Sees::HistoryStats => {
                crate::subagents::analyzer::analyze_with(history, Some(rec), theta1)?
            }
            _ => continue,
        };
        out.push((*s, text));
    }
    Ok(out)
}
