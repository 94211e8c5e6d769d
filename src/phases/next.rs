//! What the machine does next: a pure function of the checkpoint and a few
//! facts about the world, so every edge of the iteration (and every rewind
//! after a kill) is a row of a table test rather than a comment.

use crate::archive::state::InFlight;
use crate::model::{Phase, Simplification, SimplifyStage, StopReason};

/// What the machine knows besides the checkpoint, read fresh each time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Facts {
    /// The stop recorded in the state, if the run has ended.
    pub stop: Option<StopReason>,
    /// That stop was decided by the configuration (a stall, a red light's
    /// threshold), which decides it no more: it was raised since.
    pub stop_lifted: bool,
    /// Iteration 0 (the baseline) is archived.
    pub baseline: bool,
    /// Some budget is used up: no new iteration may start.
    pub budget_out: bool,
    /// A budget that spends while an iteration runs (wall clock, tokens,
    /// cost) is used up: the iteration must not spend more.
    pub spend_out: bool,
    /// Both worktrees exist. A worktree deleted between ticks loses the
    /// candidate's edits.
    pub worktrees: bool,
    /// The pipeline-analyzer's trigger fired: it runs beside EVALUATE.
    pub analyzer_due: bool,
}

/// Work that may run beside a phase, in its own thread and span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Beside {
    Analyzer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// The run is RED: refuse until a human runs `ooda ack`.
    Red,
    /// The run stopped on a budget that is still used up: refuse.
    OverBudget,
    /// The run stopped on a budget, a stall or a red light's threshold that
    /// has since been raised: clear the stop, then look again.
    Unstop,
    /// The run has ended (done, stalled): nothing to do.
    Finished,
    /// Measure the starting commit and calibrate the noise (iteration 0).
    Baseline,
    /// A budget is used up before the next iteration: end the run.
    Stop,
    /// Start the next iteration with its OBSERVE.
    Begin,
    /// The worktrees are gone: recreate them at the best commit and
    /// continue as if `done` were the last phase completed.
    Rebuild { done: Phase },
    /// A budget ran out before `phase`, which spends: cut the iteration
    /// short (it is archived unmeasured), then run `phase`.
    Cut(Phase),
    /// Run `phase` (and `beside` at the same time), then checkpoint it.
    Run {
        phase: Phase,
        beside: Option<Beside>,
    },
}

impl Next {
    fn run(phase: Phase) -> Next {
        Next::Run {
            phase,
            beside: None,
        }
    }
}

/// The machine's next move from the state's stop and in-flight iteration.
pub(crate) fn next(in_flight: Option<&InFlight>, facts: &Facts) -> Next {
    match facts.stop {
        Some(_) if facts.stop_lifted => return Next::Unstop,
        Some(r) if r.is_red() => return Next::Red,
        Some(r) if r.is_budget() && facts.budget_out => return Next::OverBudget,
        Some(r) if r.is_budget() => return Next::Unstop,
        Some(_) => return Next::Finished,
        None => {}
    }
    if !facts.baseline {
        return Next::Baseline;
    }
    let Some(cur) = in_flight else {
        return if facts.budget_out {
            Next::Stop
        } else {
            Next::Begin
        };
    };
    if !facts.worktrees {
        // The edits of a candidate that was not yet archived are lost with
        // its worktree: EXECUTE runs again. Later phases need only git.
        let done = match cur.done {
            Phase::Execute | Phase::Evaluate | Phase::Review => Phase::Plan,
            d => d,
        };
        return Next::Rebuild { done };
    }
    let spends = |phase: Phase| {
        if facts.spend_out && cur.cut.is_none() {
            Next::Cut(phase)
        } else {
            Next::run(phase)
        }
    };
    match cur.done {
        Phase::Observe => Next::run(Phase::Orient),
        Phase::Orient => Next::run(Phase::Plan),
        Phase::Plan => spends(Phase::Execute),
        // A cut iteration measures nothing: nothing runs beside it.
        Phase::Execute => match spends(Phase::Evaluate) {
            Next::Run { phase, .. } if facts.analyzer_due && cur.cut.is_none() => Next::Run {
                phase,
                beside: Some(Beside::Analyzer),
            },
            n => n,
        },
        Phase::Evaluate => Next::run(Phase::Review),
        // A simplified candidate is measured against the kept one, then
        // reviewed, before the iteration may be archived. Out of budget,
        // the kept change stands untested against it: the keep is never
        // cut for a simplification.
        Phase::Review => match cur.review.as_ref().and_then(|r| r.simplified.as_ref()) {
            Some(Simplification {
                stage: SimplifyStage::Proposed,
                ..
            }) if !facts.spend_out => Next::run(Phase::Evaluate),
            _ => Next::run(Phase::Learn),
        },
        Phase::Learn => Next::run(Phase::Commit),
        // CHECK ends the iteration itself (the state then has none in
        // flight); a state left at CHECK runs it again, deciding nothing new.
        Phase::Commit | Phase::Check => Next::run(Phase::Check),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Cut;

    fn at(done: Phase) -> InFlight {
        let mut c = InFlight::new(4, "e".into(), "h", "");
        c.done = done;
        c
    }

    fn running() -> Facts {
        Facts {
            baseline: true,
            worktrees: true,
            ..Facts::default()
        }
    }

    fn run(phase: Phase) -> Next {
        Next::run(phase)
    }

    #[test]
    fn the_iteration_in_order() {
        let f = running();
        let table = [
            (Phase::Observe, run(Phase::Orient)),
            (Phase::Orient, run(Phase::Plan)),
            (Phase::Plan, run(Phase::Execute)),
            (Phase::Execute, run(Phase::Evaluate)),
            (Phase::Evaluate, run(Phase::Review)),
            (Phase::Review, run(Phase::Learn)),
            (Phase::Learn, run(Phase::Commit)),
            (Phase::Commit, run(Phase::Check)),
            (Phase::Check, run(Phase::Check)),
        ];
        for (done, want) in table {
            assert_eq!(next(Some(&at(done)), &f), want, "after {done:?}");
        }
        assert_eq!(next(None, &f), Next::Begin);
    }

    #[test]
    fn before_the_iteration() {
        // (stop, budget out, stop lifted by a raised setting, next)
        let table = [
            (Some(StopReason::RedScope), false, false, Next::Red),
            (Some(StopReason::RedScope), false, true, Next::Unstop),
            (Some(StopReason::BudgetCost), true, false, Next::OverBudget),
            (Some(StopReason::BudgetCost), false, false, Next::Unstop),
            (Some(StopReason::Stalled), false, false, Next::Finished),
            (Some(StopReason::Stalled), false, true, Next::Unstop),
            (Some(StopReason::GoalReached), true, false, Next::Finished),
            (None, true, false, Next::Stop),
            (None, false, false, Next::Begin),
        ];
        for (stop, budget_out, stop_lifted, want) in table {
            let f = Facts {
                stop,
                budget_out,
                stop_lifted,
                ..running()
            };
            assert_eq!(next(None, &f), want, "{stop:?} {budget_out} {stop_lifted}");
        }
        let fresh = Facts {
            worktrees: false,
            ..Facts::default()
        };
        assert_eq!(next(None, &fresh), Next::Baseline);
        // A red stop is refused before anything else, even a missing baseline.
        let red = Facts {
            stop: Some(StopReason::RedDivergence),
            ..fresh
        };
        assert_eq!(next(None, &red), Next::Red);
    }

    #[test]
    fn rewinds_after_the_worktrees_were_lost() {
        let f = Facts {
            worktrees: false,
            ..running()
        };
        let table = [
            (Phase::Observe, Phase::Observe),
            (Phase::Orient, Phase::Orient),
            (Phase::Plan, Phase::Plan),
            // The unarchived candidate's edits are gone: EXECUTE again.
            (Phase::Execute, Phase::Plan),
            (Phase::Evaluate, Phase::Plan),
            (Phase::Review, Phase::Plan),
            // LEARN archived the candidate's tree and prepared its commit.
            (Phase::Learn, Phase::Learn),
            (Phase::Commit, Phase::Commit),
        ];
        for (done, want) in table {
            assert_eq!(
                next(Some(&at(done)), &f),
                Next::Rebuild { done: want },
                "after {done:?}"
            );
        }
    }

    #[test]
    fn budgets_cut_only_the_phases_that_spend_and_only_once() {
        let f = Facts {
            spend_out: true,
            budget_out: true,
            ..running()
        };
        assert_eq!(next(Some(&at(Phase::Plan)), &f), Next::Cut(Phase::Execute));
        assert_eq!(
            next(Some(&at(Phase::Execute)), &f),
            Next::Cut(Phase::Evaluate)
        );
        assert_eq!(next(Some(&at(Phase::Orient)), &f), run(Phase::Plan));
        assert_eq!(next(Some(&at(Phase::Learn)), &f), run(Phase::Commit));
        let mut cut = at(Phase::Plan);
        cut.cut = Some(Cut::ExecuteFailed {
            message: "x".into(),
        });
        assert_eq!(next(Some(&cut), &f), run(Phase::Execute));
    }

    #[test]
    fn a_simplified_candidate_goes_back_to_evaluate() {
        let f = running();
        let mut c = at(Phase::Review);
        let simplified = |measured| {
            Some(crate::model::Review {
                reports: Vec::new(),
                simplified: Some(Simplification {
                    stage: if measured {
                        SimplifyStage::Rejected(None)
                    } else {
                        SimplifyStage::Proposed
                    },
                    ..Simplification::proposed("t".into(), String::new(), 0)
                }),
            })
        };
        c.review = simplified(false);
        assert_eq!(next(Some(&c), &f), run(Phase::Evaluate));
        // Measured: it goes on to LEARN (and EVALUATE to REVIEW as always).
        c.review = simplified(true);
        assert_eq!(next(Some(&c), &f), run(Phase::Learn));
        c.done = Phase::Evaluate;
        assert_eq!(next(Some(&c), &f), run(Phase::Review));
        c.done = Phase::Review;
        c.review = Some(crate::model::Review::default());
        assert_eq!(next(Some(&c), &f), run(Phase::Learn));
    }

    #[test]
    fn the_analyzer_runs_beside_evaluate_when_due() {
        let f = Facts {
            analyzer_due: true,
            ..running()
        };
        assert_eq!(
            next(Some(&at(Phase::Execute)), &f),
            Next::Run {
                phase: Phase::Evaluate,
                beside: Some(Beside::Analyzer)
            }
        );
        assert_eq!(next(Some(&at(Phase::Plan)), &f), run(Phase::Execute));
        // A budget cuts the iteration first; once cut, it measures nothing,
        // and nothing runs beside it.
        let out = Facts {
            spend_out: true,
            ..f
        };
        assert_eq!(
            next(Some(&at(Phase::Execute)), &out),
            Next::Cut(Phase::Evaluate)
        );
        let mut cut = at(Phase::Execute);
        cut.cut = Some(crate::model::Cut::ExecuteFailed {
            message: "x".into(),
        });
        assert_eq!(next(Some(&cut), &out), run(Phase::Evaluate));
        assert_eq!(next(Some(&cut), &f), run(Phase::Evaluate));
    }
}
