//! The one result a morning reader takes away, the same wherever a result
//! is summarised (`ooda status`, the first lines of `summary.md`,
//! `summary.json`, the notes, the last line of `run` and `tick`, the OTLP
//! run span).
//!
//! Why not "best median against iteration 0's median": those two were
//! measured hours apart, and a machine whose speed drifted in between
//! (a night measured the same knob point at 829.6 ms and 305.4 ms) moves
//! that ratio by tens of points while every paired decision stayed right.
//! So the headline is only ever made of paired comparisons, each measured
//! side by side:
//!
//! - the **confirmation** of the current best (the start of the run against
//!   it, in fresh pairs): the number to trust, "confirmed" when its 95%
//!   interval excludes no gain;
//! - before one exists, the **chained estimate**: the kept changes' own
//!   paired estimates added on the log scale (each kept change was measured
//!   against the base it replaced, so the sum is start → best), with each
//!   keep's own 95% half-width combined in quadrature: the interval of a
//!   sum of independent estimates, each at its own t quantile, so one keep
//!   gives exactly its own interval and a few pairs are not made to look
//!   precise. It says it is an estimate, and it carries the winner's curse
//!   of each keep (the confirmation does not).

use crate::archive::history::fact::{Fact, flag};
use crate::model::{Confirmation, Direction, Verdict};
use crate::text::number::{self, Sense};

/// What a run achieved, in one number with its interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Headline {
    /// Nothing was kept (or nothing measured yet).
    Nothing { iterations: usize },
    /// The start against the current best in fresh pairs.
    Measured {
        after: u32,
        effect: f64,
        ci: (f64, f64),
        keeps: usize,
        sense: Sense,
    },
    /// The kept changes' paired estimates chained (no confirmation of the
    /// current best yet). `ci` is `None` when a keep had no interval.
    Chained {
        effect: f64,
        ci: Option<(f64, f64)>,
        keeps: usize,
        sense: Sense,
    },
}

/// One kept change on the way to the current best: its commit's hash (as
/// the archive's rows hold it), its mean log ratio and the half-width of
/// its 95% interval.
#[derive(Debug, Clone, Copy)]
struct Link {
    commit: u64,
    d: f64,
    half: f64,
}

impl Headline {
    /// From the archive's rows, the Brief's direction and the latest
    /// confirmation of the current best (`View::confirmation_of`).
    pub(crate) fn of(
        facts: &[Fact],
        dir: Direction,
        confirmation: Option<&(u32, Confirmation)>,
    ) -> Headline {
        let chain = chain(facts, dir);
        let keeps = chain.len();
        if let Some((after, c)) = confirmation {
            return Headline::Measured {
                after: *after,
                effect: c.effect,
                ci: c.ci,
                keeps,
                sense: dir.sense(),
            };
        }
        if chain.is_empty() {
            return Headline::Nothing {
                iterations: facts.len().saturating_sub(1),
            };
        }
        let d: f64 = chain.iter().map(|l| l.d).sum();
        let half = chain.iter().map(|l| l.half * l.half).sum::<f64>().sqrt();
        Headline::Chained {
            effect: crate::eval::gain(dir, d),
            ci: half.is_finite().then(|| {
                (
                    crate::eval::gain(dir, d - half),
                    crate::eval::gain(dir, d + half),
                )
            }),
            keeps,
            sense: dir.sense(),
        }
    }

    /// [`Headline::of`] records held in memory and the current best commit.
    pub(crate) fn of_records(
        history: &[crate::model::IterationRecord],
        dir: Direction,
        best_commit: &str,
    ) -> Headline {
        let confirmed = crate::archive::history::confirmation_of(history, best_commit)
            .map(|(it, c)| (it, c.clone()));
        Headline::of(&Fact::all_of(history), dir, confirmed.as_ref())
    }

    /// [`Headline::of`] an archive alone, for a reader without the state:
    /// the current best is the last keep of the chain, and its latest
    /// confirmation is used (not merely the latest confirmation, which
    /// after a rollback may be of another commit).
    pub(crate) fn of_view(
        history: crate::archive::history::View,
        dir: Direction,
    ) -> crate::error::Result<Headline> {
        let best = chain(history.facts(), dir).last().map(|l| l.commit);
        let mut confirmed = None;
        if let Some(b) = best {
            for r in history.flagged(flag::CONFIRMATION) {
                let r = r?;
                if let Some(c) = r
                    .confirmation
                    .as_ref()
                    .filter(|c| crate::archive::history::fact::hash(c.best.as_bytes()) == b)
                {
                    confirmed = Some((r.iteration, c.clone()));
                    break;
                }
            }
        }
        Ok(Headline::of(history.facts(), dir, confirmed.as_ref()))
    }

    /// The keeps on the way to the current best.
    pub(crate) fn keeps(&self) -> usize {
        match self {
            Headline::Nothing { .. } => 0,
            Headline::Measured { keeps, .. } | Headline::Chained { keeps, .. } => *keeps,
        }
    }

    /// The last line of `ooda run` and `ooda tick`: the result and where
    /// the report is, `5 keeps, confirmed +80.1% [+71.9, +85.9] —
    /// iterations/q/summary.md`.
    pub(crate) fn result_line(&self, brief: &str) -> String {
        let what = match self {
            Headline::Nothing { .. } => "no keeps yet".to_string(),
            h => format!("{}, {}", plural(h.keeps(), "keep"), h.short()),
        };
        format!("{what} — iterations/{brief}/summary.md")
    }

    /// The effect and its interval, when there is one.
    pub(crate) fn effect(&self) -> Option<(f64, Option<(f64, f64)>)> {
        match self {
            Headline::Nothing { .. } => None,
            Headline::Measured { effect, ci, .. } => Some((*effect, Some(*ci))),
            Headline::Chained { effect, ci, .. } => Some((*effect, *ci)),
        }
    }

    /// The short form, for one-line places (`ooda status`, the last line
    /// of a run): `confirmed +80.1% [+71.9, +85.9]`,
    /// `estimated +45.0% [+30.1, +57.2]` (the kept changes chained, not
    /// yet confirmed: [`Headline::sentence`] says so in full),
    /// `no keeps`.
    pub(crate) fn short(&self) -> String {
        match self {
            Headline::Nothing { .. } => "no keeps".into(),
            Headline::Measured {
                effect, ci, sense, ..
            } if ci.0 > 0.0 => {
                format!("confirmed {}", number::effect_ci_in(*sense, *effect, *ci))
            }
            Headline::Measured {
                effect, ci, sense, ..
            } => format!(
                "not confirmed: {}",
                number::effect_ci_in(*sense, *effect, *ci)
            ),
            Headline::Chained {
                effect, ci, sense, ..
            } => format!("estimated {}", effect_text(*sense, *effect, *ci)),
        }
    }

    /// The long form, for the first lines of a report: what was compared,
    /// how, and how much to trust it.
    pub(crate) fn sentence(&self) -> String {
        match self {
            Headline::Nothing { iterations } => format!(
                "nothing kept in {}: the start of the run is still the best",
                plural(*iterations, "iteration")
            ),
            Headline::Measured {
                after,
                effect,
                ci,
                keeps,
                sense,
            } => format!(
                "{} {} (97.5% CI) — the start of the run against the best ({}), re-measured side by side in fresh pairs after iteration {after}{}",
                if ci.0 > 0.0 {
                    "confirmed gain"
                } else {
                    "not confirmed:"
                },
                number::effect_ci_in(*sense, *effect, *ci),
                plural(*keeps, "keep"),
                if ci.0 > 0.0 {
                    ""
                } else {
                    "; its interval does not exclude no gain"
                }
            ),
            Headline::Chained {
                effect,
                ci,
                keeps,
                sense,
            } => format!(
                "estimated gain {}{} — the paired estimates of the {} chained; not yet confirmed by re-measuring the start against the best (each keep's estimate overstates a little: the winner's curse)",
                effect_text(*sense, *effect, *ci),
                if ci.is_some() { " (95% CI)" } else { "" },
                plural(*keeps, "kept change")
            ),
        }
    }

    /// The kind, as `summary.json` names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Headline::Nothing { .. } => "nothing_kept",
            Headline::Measured { ci, .. } if ci.0 > 0.0 => "confirmed",
            Headline::Measured { .. } => "not_confirmed",
            Headline::Chained { .. } => "chained_estimate",
        }
    }

    /// `summary.json`'s `headline` object.
    pub(crate) fn json(&self) -> serde_json::Value {
        let (effect, ci) = self.effect().unzip();
        serde_json::json!({
            "kind": self.kind(),
            "effect": effect,
            "ci": ci.flatten().map(|c| [c.0, c.1]),
            "after_iteration": match self {
                Headline::Measured { after, .. } => Some(*after),
                _ => None,
            },
            "keeps": self.keeps(),
            "text": self.short(),
        })
    }
}

/// A Brief's archive as a step left it on disk, read by those that report
/// it without the machine (the lines `run` and `tick` print, the daemon's
/// log at a stop): `None` when it cannot be read.
pub(crate) struct Saved {
    pub(crate) history: Vec<crate::model::IterationRecord>,
    pub(crate) direction: Direction,
    best_commit: String,
}

impl Saved {
    pub(crate) fn load(project: &crate::project::Project, name: &str) -> Option<Saved> {
        let dir = project.iterations_dir(name);
        let history = crate::archive::history::load(&dir).ok()?;
        let brief =
            crate::brief::Brief::load_in(&project.brief_path(name).ok()?, &project.agent_names())
                .ok()?;
        let best_commit = match crate::archive::state::peek(&dir) {
            Ok(crate::archive::state::Loaded::Ok(s)) => s.best_commit,
            _ => String::new(),
        };
        Some(Saved {
            history,
            direction: brief.metric.direction,
            best_commit,
        })
    }

    pub(crate) fn headline(&self) -> Headline {
        Headline::of_records(&self.history, self.direction, &self.best_commit)
    }
}

fn effect_text(sense: Sense, effect: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some(ci) => number::effect_ci_in(sense, effect, ci),
        None => number::effect_in(sense, effect),
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The kept changes the current best is made of, oldest first: every
/// keep, less those a divergence rollback undid.
fn chain(facts: &[Fact], dir: Direction) -> Vec<Link> {
    let mut chain: Vec<Link> = Vec::new();
    for f in facts {
        if f.is(Verdict::Keep)
            && let Some(p) = Paired::of(f, dir)
        {
            chain.push(Link {
                commit: f.commit,
                d: p.d,
                half: p.half,
            });
        }
        if f.has(flag::ROLLBACK) {
            // Back to the keep of that commit, or to the start.
            let at = chain
                .iter()
                .rposition(|l| l.commit != 0 && l.commit == f.rollback_to);
            chain.truncate(at.map_or(0, |i| i + 1));
        }
    }
    chain
}

/// A measured iteration's paired estimate on the log scale (positive =
/// better): its mean log ratio, its 95% interval and that interval's
/// half-width (NaN with fewer than two pairs, whose interval is none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Paired {
    pub d: f64,
    pub lo: f64,
    pub hi: f64,
    pub half: f64,
}

impl Paired {
    pub(crate) fn of(f: &Fact, dir: Direction) -> Option<Paired> {
        let m = f.measured()?;
        let (a, b) = (log_ratio(dir, m.ci.0), log_ratio(dir, m.ci.1));
        let (lo, hi) = (a.min(b), a.max(b));
        Some(Paired {
            d: log_ratio(dir, m.effect),
            lo,
            hi,
            half: if f.pairs >= 2 {
                (hi - lo) / 2.0
            } else {
                f64::NAN
            },
        })
    }
}

/// The inverse of [`crate::eval::gain`]: a gain as the mean log ratio.
pub(crate) fn log_ratio(dir: Direction, g: f64) -> f64 {
    match dir {
        Direction::Minimize => -(1.0 - g).ln(),
        Direction::Maximize => (1.0 + g).ln(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IterationRecord;

    /// A keep (or discard) of a paired log ratio `d` with a symmetric log
    /// interval of half-width `h` over `n` pairs.
    fn rec(i: u32, v: Verdict, dir: Direction, d: f64, h: f64, n: usize) -> IterationRecord {
        crate::eval::measured_for_test(i, v, dir, (100.0, 100.0), d, h, n)
    }

    fn facts(h: &[IterationRecord]) -> Vec<Fact> {
        Fact::all_of(h)
    }

    #[test]
    fn the_kept_changes_chain_on_the_log_scale_whatever_the_medians_say() {
        for dir in [Direction::Minimize, Direction::Maximize] {
            let h = vec![
                IterationRecord::new(0, Verdict::Baseline),
                rec(1, Verdict::Keep, dir, 0.2, 0.05, 12),
                // A discard is not part of the best, however it measured.
                rec(2, Verdict::Discard, dir, 0.5, 0.4, 12),
                rec(3, Verdict::Keep, dir, 0.1, 0.05, 12),
            ];
            let got = Headline::of(&facts(&h), dir, None);
            let Headline::Chained {
                effect, ci, keeps, ..
            } = got.clone()
            else {
                panic!("{got:?}")
            };
            assert_eq!(keeps, 2);
            let g = |x: f64| crate::eval::gain(dir, x);
            assert!((effect - g(0.3)).abs() < 1e-9, "{effect}");
            // The keeps' own half-widths in quadrature.
            let half = (2.0f64 * 0.05 * 0.05).sqrt();
            let (lo, hi) = ci.unwrap();
            assert!((lo - g(0.3 - half)).abs() < 1e-9, "{lo}");
            assert!((hi - g(0.3 + half)).abs() < 1e-9, "{hi}");
            assert!(got.short().starts_with("estimated +"), "{}", got.short());
            assert!(!got.short().contains('('), "{}", got.short());
            assert!(got.sentence().contains("not yet confirmed"));
        }
    }

    /// A recorded night whose machine got 3.5× faster after iteration 3
    /// (tests/fixtures/drift-night/make.sh): the headline is the
    /// confirmation, where the medians of iteration 0 and of the best,
    /// measured apart, said 14 points more.
    #[test]
    fn on_a_night_whose_machine_drifted_the_headline_is_the_confirmation() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/drift-night/iterations/drift");
        let h = crate::archive::history::load_files(&dir).expect("the fixture");
        let best = h
            .iter()
            .rev()
            .find(|r| r.verdict == Verdict::Keep)
            .and_then(|r| r.commit.clone())
            .unwrap();
        let (_, c) = crate::archive::history::confirmation_of(&h, &best).expect("confirmed");
        let got = Headline::of_records(&h, Direction::Minimize, &best);
        assert_eq!(got.effect(), Some((c.effect, Some(c.ci))));
        assert!(got.short().starts_with("confirmed +"), "{}", got.short());
        // What a subtraction of medians would have said.
        let base = crate::archive::history::baseline_value(&h).unwrap();
        let best_median = crate::archive::history::best_of(&h, &best).1;
        let medians = 1.0 - best_median / base;
        assert!(medians - c.effect > 0.10, "{medians} vs {}", c.effect);
        // The drift itself: iteration 0's median against the start
        // re-measured at the end.
        assert!(base / c.start_median > 2.7, "{base} / {}", c.start_median);
        // Before the confirmation, the chained estimate is within a few
        // points of it, and labelled an estimate.
        let before = Headline::of_records(&h[..h.len() - 1], Direction::Minimize, &best);
        let Headline::Chained { effect, .. } = before else {
            panic!("{before:?}")
        };
        assert!((effect - c.effect).abs() < 0.05, "{effect} vs {}", c.effect);
    }

    #[test]
    fn one_keep_is_estimated_with_exactly_its_own_interval() {
        let dir = Direction::Maximize;
        let h = vec![
            IterationRecord::new(0, Verdict::Baseline),
            rec(1, Verdict::Keep, dir, 3.86, 0.6, 3),
        ];
        let Headline::Chained { effect, ci, .. } = Headline::of(&facts(&h), dir, None) else {
            panic!()
        };
        let m = h[1].measured.as_ref().unwrap();
        assert!((effect - m.effect).abs() < 1e-9);
        let (lo, hi) = ci.unwrap();
        assert!((lo - m.ci.0).abs() < 1e-9 && (hi - m.ci.1).abs() < 1e-9);
    }

    #[test]
    fn read_without_the_state_the_best_is_matched_to_its_own_confirmation() {
        let dir = Direction::Minimize;
        let conf = |best: String, effect: f64| Confirmation {
            start: "s".into(),
            best,
            pairs: Vec::new(),
            best_median: 1.0,
            start_median: 2.0,
            effect,
            ci: (effect - 0.01, effect + 0.01),
            p: 0.001,
            why: String::new(),
        };
        let mut keep = rec(1, Verdict::Keep, dir, 0.3, 0.05, 12);
        keep.confirmation = Some(conf(format!("{:040}", 1), 0.25));
        // A later test of another commit (an anchor's, after a rollback).
        let mut later = rec(2, Verdict::Discard, dir, -0.1, 0.05, 12);
        later.confirmation = Some(conf("f".repeat(40), 0.9));
        let held = crate::archive::history::History::of(vec![
            IterationRecord::new(0, Verdict::Baseline),
            keep,
            later,
        ]);
        let h = Headline::of_view(held.view(), dir).unwrap();
        assert_eq!(h.effect(), Some((0.25, Some((0.24, 0.26)))), "{h:?}");
    }

    #[test]
    fn a_rollback_takes_its_keeps_out_of_the_chain() {
        let dir = Direction::Minimize;
        let mut back = IterationRecord::new(3, Verdict::Discard);
        back.rollback_to = Some(format!("{:040}", 1));
        let h = vec![
            IterationRecord::new(0, Verdict::Baseline),
            rec(1, Verdict::Keep, dir, 0.2, 0.05, 12),
            rec(2, Verdict::Keep, dir, 0.3, 0.05, 12),
            back,
        ];
        let Headline::Chained { effect, keeps, .. } = Headline::of(&facts(&h), dir, None) else {
            panic!()
        };
        assert_eq!(keeps, 1);
        assert!((effect - crate::eval::gain(dir, 0.2)).abs() < 1e-9);
    }

    #[test]
    fn a_confirmation_of_the_best_is_the_headline_and_says_whether_it_confirms() {
        let dir = Direction::Minimize;
        let h = vec![
            IterationRecord::new(0, Verdict::Baseline),
            rec(1, Verdict::Keep, dir, 0.9, 0.05, 12),
        ];
        let c = |ci: (f64, f64)| Confirmation {
            start: "s".into(),
            best: format!("{:040}", 1),
            pairs: Vec::new(),
            best_median: 231.0,
            start_median: 1414.55,
            effect: 0.557,
            ci,
            p: 0.001,
            why: String::new(),
        };
        let yes = Headline::of(&facts(&h), dir, Some(&(1, c((0.502, 0.606)))));
        assert_eq!(yes.short(), "confirmed +55.7% [+50.2, +60.6]");
        assert_eq!(
            yes.result_line("q"),
            "1 keep, confirmed +55.7% [+50.2, +60.6] — iterations/q/summary.md"
        );
        assert!(yes.sentence().starts_with("confirmed gain +55.7% [+50.2, +60.6] (97.5% CI) — the start of the run against the best (1 keep)"), "{}", yes.sentence());
        let no = Headline::of(&facts(&h), dir, Some(&(1, c((-0.01, 0.12)))));
        assert_eq!(no.short(), "not confirmed: +55.7% [-1.0, +12.0]");
        assert!(no.sentence().contains("does not exclude no gain"));
        assert_eq!(no.json()["kind"], "not_confirmed");
        let none = Headline::of(&facts(&h[..1]), dir, None);
        assert_eq!(none.short(), "no keeps");
        assert_eq!(none.json()["effect"], serde_json::Value::Null);
    }
}
