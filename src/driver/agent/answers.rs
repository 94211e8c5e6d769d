//! The main agent's answers (PLAN and LEARN) and the runner's
//! validation of them.
//!
//! Plans are checked by code, not trusted: a plan must make a falsifiable
//! prediction, cite real history, and not repeat what was already falsified or
//! measured. The rejection message names the rule and the fix because the
//! reader may be an agent that gets one more try.

use std::collections::BTreeSet;

use crate::archive::history::fact::{self, Fact, flag};
use crate::brief::Knob;
use crate::brief::points;
use crate::model::normalize_text as normalize;
use crate::model::{DiscardKind, Point, Verdict};

pub(crate) use crate::model::{Axis, LearnResult, Pattern, Plan};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rejection {
    pub rule: &'static str,
    pub message: String,
}

/// The first field of a plan answer with the wrong type, said with what was
/// expected, what came and a corrected example: a small model that wrote
/// `"change": {"diffs": …}` learns which field and how, not a parser's
/// "invalid type: map, expected a string".
pub(crate) fn plan_field_problem(answer: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let o = answer.as_object()?;
    use crate::text::json_scan::kind;
    type Field = (&'static str, &'static str, fn(&Value) -> bool, &'static str);
    let fields: [Field; 7] = [
        (
            "hypothesis",
            "a string",
            Value::is_string,
            r#""hypothesis": "a sieve replaces trial division and does far less work per number""#,
        ),
        (
            "change",
            "a string: the change in one sentence (not the edit itself)",
            Value::is_string,
            r#""change": "replace is_prime's trial division with a sieve of Eratosthenes in primes.py""#,
        ),
        (
            "cites",
            "a list of iteration numbers",
            |v| v.as_array().is_some_and(|a| a.iter().all(Value::is_u64)),
            r#""cites": [0]"#,
        ),
        (
            "axes",
            "a list of objects with `name` and `direction`",
            |v| {
                v.as_array().is_some_and(|a| {
                    a.iter().all(|x| {
                        x.get("name").is_some_and(Value::is_string)
                            && x.get("direction").is_some_and(Value::is_string)
                    })
                })
            },
            r#""axes": [{"name": "algorithm", "direction": "apply"}]"#,
        ),
        (
            "predicted_effect",
            "a number (a fraction: 0.3 = 30% better)",
            Value::is_number,
            r#""predicted_effect": 0.3"#,
        ),
        (
            "predicted_sd",
            "a number, 0 or more",
            Value::is_number,
            r#""predicted_sd": 0.1"#,
        ),
        (
            "knobs",
            "an object of knob values",
            Value::is_object,
            r#""knobs": {}"#,
        ),
    ];
    for (name, want, fits, example) in fields {
        match o.get(name) {
            None if matches!(name, "hypothesis" | "predicted_effect" | "predicted_sd") => {
                return Some(format!(
                    "the field `{name}` is missing; it must be {want}, e.g. {example}"
                ));
            }
            Some(v) if !fits(v) && !v.is_null() => {
                return Some(format!(
                    "the field `{name}` must be {want}, and it is {}; e.g. {example}",
                    kind(v)
                ));
            }
            _ => {}
        }
    }
    None
}

/// Checks a plan against the rules every plan must follow, over the rows
/// of the archive before the plan's iteration (history/fact.rs: texts and
/// points compared by hash).
pub(crate) fn validate(
    plan: &Plan,
    history: &[Fact],
    next_iteration: u32,
) -> Result<(), Rejection> {
    if plan.hypothesis.trim().is_empty() {
        return Err(Rejection {
            rule: "hypothesis",
            message: "the plan has no hypothesis: state what you expect to change and why, e.g. \"hypothesis\": \"a 64-wide tile fits L1 and cuts cache misses\"".into(),
        });
    }
    if !plan.predicted_effect.is_finite()
        || !plan.predicted_sd.is_finite()
        || plan.predicted_sd < 0.0
    {
        return Err(Rejection {
            rule: "prediction",
            message: format!(
                "the plan needs a finite predicted_effect and a non-negative predicted_sd (fractions: 0.05 = 5% better); got {} and {}",
                plan.predicted_effect, plan.predicted_sd
            ),
        });
    }
    let known = KnownIds(history.iter().map(|r| r.iteration).collect());
    if !known.0.is_empty() && plan.cites.is_empty() {
        return Err(Rejection {
            rule: "cites",
            message: format!(
                "the plan cites no iteration although history exists: cite the iterations your hypothesis builds on (known: {})",
                known.summary()
            ),
        });
    }
    let missing: Vec<u32> = plan
        .cites
        .iter()
        .copied()
        .filter(|c| !known.0.contains(c) || *c >= next_iteration)
        .collect();
    if !missing.is_empty() {
        return Err(Rejection {
            rule: "cites",
            message: format!(
                "the plan cites iterations that do not exist: {:?}; cite only archived iterations ({})",
                missing,
                known.summary()
            ),
        });
    }
    let hyp = fact::hash(normalize(&plan.hypothesis).as_bytes());
    if let Some(r) = history
        .iter()
        .find(|r| r.falsified == hyp && r.discard.is_none_or(DiscardKind::falsifies))
    {
        return Err(Rejection {
            rule: "falsified",
            message: format!(
                "this hypothesis was already falsified in iteration {}: propose a different change, or a new angle with a different hypothesis",
                r.iteration
            ),
        });
    }
    // A discard falsifies the change that was measured, which a weak
    // executor may have made far from its plan (a sieve planned, one range
    // edited): the idea may be tried once more with a different change;
    // two measured changes of it discarded, or the same change again, and
    // it is falsified.
    let discarded: Vec<&Fact> = history
        .iter()
        .filter(|r| r.falsifies() && r.hypothesis == hyp)
        .collect();
    let key = fact::change_key(&plan.change);
    let same = discarded.iter().find(|r| key == 0 || r.entry == key);
    if discarded.len() >= 2 || same.is_some() {
        let ids: Vec<u32> = discarded.iter().map(|r| r.iteration).collect();
        let message = match same {
            Some(r) if discarded.len() < 2 && key == 0 => format!(
                "this hypothesis was measured in iteration {} and discarded: to try it once more, say in `change` what different change implements it; or propose a different hypothesis",
                r.iteration
            ),
            Some(r) if discarded.len() < 2 => format!(
                "this hypothesis was measured in iteration {} with this same change and discarded: propose a different change that implements it (once more), or a different hypothesis",
                r.iteration
            ),
            _ => format!(
                "this hypothesis was already falsified: the changes measured for it in iterations {ids:?} were discarded; propose a different hypothesis"
            ),
        };
        return Err(Rejection {
            rule: "falsified",
            message,
        });
    }
    // An idea the measurement could not settle may be tried again, but not
    // without end: each try is another chance at a false keep.
    let unsettled: Vec<u32> = history
        .iter()
        .filter(|r| {
            matches!(
                r.discard,
                Some(DiscardKind::Inconclusive | DiscardKind::Neutral)
            ) && r.hypothesis == hyp
        })
        .map(|r| r.iteration)
        .collect();
    if unsettled.len() >= crate::eval::redlight::MAX_INCONCLUSIVE {
        return Err(Rejection {
            rule: "repeat",
            message: format!(
                "this hypothesis was measured inconclusive {} times (iterations {:?}): it counts as settled; propose a different change",
                unsettled.len(),
                unsettled
            ),
        });
    }
    if !plan.knobs.is_empty() {
        let k = points::key(&plan.knobs);
        if let Some((at, why)) = settled_point(history, &k) {
            return Err(Rejection {
                rule: "repeat",
                message: format!(
                    "the knob point {k} was {why} in iteration {at}: choose another point (an inconclusive one may be tried once more)"
                ),
            });
        }
    }
    Ok(())
}

/// The archived iterations a plan may cite.
struct KnownIds(BTreeSet<u32>);

impl KnownIds {
    fn summary(&self) -> String {
        summarize_ids(&self.0)
    }
}

/// Whether the knob point `key` is settled by the history, and by which
/// iteration: kept, falsified (worse or futile), failing on its own account
/// (a crash, a failed guard), or inconclusive twice. An inconclusive point
/// is open once more; a point whose base failed was never tried.
pub(crate) fn settled_point(history: &[Fact], key: &str) -> Option<(u32, &'static str)> {
    let key = fact::hash(key.as_bytes());
    let at: Vec<&Fact> = history.iter().filter(|r| tried(r) == Some(key)).collect();
    settled_among(&at)
}

/// The hashes of every knob point [`settled_point`] finds settled, from one
/// pass over the rows (a search that asked for each row's point in turn
/// scanned them all once per row).
pub(crate) fn settled_points(history: &[Fact]) -> std::collections::HashSet<u64> {
    let mut by: std::collections::HashMap<u64, Vec<&Fact>> = std::collections::HashMap::new();
    for r in history {
        if let Some(k) = tried(r) {
            by.entry(k).or_default().push(r);
        }
    }
    by.into_iter()
        .filter(|(_, at)| settled_among(at).is_some())
        .map(|(k, _)| k)
        .collect()
}

/// The knob point a row tried (its hash): none without knobs, or when its
/// base failed and nothing was tried.
fn tried(r: &Fact) -> Option<u64> {
    (r.knobs != 0 && !r.has(flag::BASE_FAILED)).then_some(r.knobs)
}

/// [`settled_point`] among the rows of one point, oldest first.
fn settled_among(at: &[&Fact]) -> Option<(u32, &'static str)> {
    let settled = at.iter().rev().find_map(|r| {
        let why = match r.verdict? {
            Verdict::Baseline => "the baseline",
            Verdict::Keep => "already kept",
            Verdict::Discard if r.falsifies() => match r.discard {
                Some(DiscardKind::Futile) => "falsified (futile)",
                _ => "falsified (worse)",
            },
            // A reviewer that timed out or crashed judged nothing.
            Verdict::Discard if r.has(flag::BLOCKED_FOR_FINDINGS) => "blocked by review",
            Verdict::Crash => "measured and crashed",
            Verdict::Invalid if r.has(flag::GUARD_FAILED) => "measured and failed a guard",
            _ => return None,
        };
        Some((r.iteration, why))
    });
    settled.or_else(|| {
        let inconclusive: Vec<&&Fact> = at
            .iter()
            .filter(|r| r.discard == Some(DiscardKind::Inconclusive))
            .collect();
        (inconclusive.len() >= crate::eval::redlight::MAX_INCONCLUSIVE)
            .then(|| {
                inconclusive
                    .last()
                    .map(|r| (r.iteration, "inconclusive twice"))
            })
            .flatten()
    })
}

/// Checks a plan's knobs against the Brief's declarations and completes the
/// point from the current best, because an agent names only the knobs it
/// changes while the runner writes (and de-duplicates) whole points.
pub(crate) fn validate_knobs(
    plan: &mut Plan,
    declared: &[Knob],
    best: &Point,
) -> Result<(), Rejection> {
    if plan.knobs.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = declared.iter().map(|k| k.name.as_str()).collect();
    let mut point = Point::new();
    for (name, value) in &plan.knobs {
        let Some(knob) = declared.iter().find(|k| &k.name == name) else {
            return Err(Rejection {
                rule: "knobs",
                message: if names.is_empty() {
                    format!(
                        "the plan sets knob `{name}`, but this Brief declares no knobs: leave `knobs` empty and change code instead"
                    )
                } else {
                    format!(
                        "the plan sets unknown knob `{name}`: this Brief declares {}",
                        names.join(", ")
                    )
                },
            });
        };
        let Some(v) = knob.spec.parse_value(&value.to_string()) else {
            return Err(Rejection {
                rule: "knobs",
                message: format!(
                    "{name}={value} is not allowed: {name} is {}",
                    points::describe(&knob.spec)
                ),
            });
        };
        point.insert(name.clone(), v);
    }
    for k in declared {
        if !point.contains_key(&k.name)
            && let Some(v) = best.get(&k.name)
        {
            point.insert(k.name.clone(), v.clone());
        }
    }
    plan.knobs = point;
    Ok(())
}

fn summarize_ids(ids: &BTreeSet<u32>) -> String {
    match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if a != b => format!("{a}..{b}"),
        (Some(a), _) => a.to_string(),
        _ => "none".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::history::{IterationRecord, Verdict};
    use crate::brief::KnobValue;

    /// [`super::validate`] over records, as the archive's rows.
    fn validate(p: &Plan, h: &[IterationRecord], next: u32) -> Result<(), Rejection> {
        super::validate(p, &Fact::all_of(h), next)
    }

    fn rec(i: u32, verdict: Verdict, hyp: &str, tile: Option<i64>) -> IterationRecord {
        let mut r = IterationRecord::new(i, verdict);
        r.hypothesis = hyp.into();
        if let Some(t) = tile {
            r.knobs.insert("TILE".into(), KnobValue::Int(t));
        }
        r
    }

    fn plan(hyp: &str, cites: Vec<u32>, tile: i64) -> Plan {
        let mut knobs = Point::new();
        knobs.insert("TILE".into(), KnobValue::Int(tile));
        Plan {
            hypothesis: hyp.into(),
            cites,
            predicted_effect: 0.05,
            predicted_sd: 0.02,
            knobs,
            ..Plan::default()
        }
    }

    #[test]
    fn the_settled_points_of_one_pass_are_those_settled_point_finds() {
        // Every verdict at the even tiles; the odd ones only blocked,
        // which settles nothing.
        let verdicts = [
            Verdict::Keep,
            Verdict::Discard,
            Verdict::Crash,
            Verdict::Invalid,
            Verdict::Blocked,
        ];
        let mut h = vec![rec(0, Verdict::Baseline, "baseline", Some(16))];
        for i in 1..40u32 {
            let v = if i % 2 == 0 {
                verdicts[i as usize / 2 % verdicts.len()]
            } else {
                Verdict::Blocked
            };
            h.push(rec(i, v, "try", Some(i64::from(i % 8) * 8)));
        }
        let facts = Fact::all_of(&h);
        let settled = settled_points(&facts);
        let mut found = 0;
        for r in &h {
            let key = crate::brief::points::key(&r.knobs);
            let one = settled_point(&facts, &key).is_some();
            assert_eq!(settled.contains(&fact::hash(key.as_bytes())), one, "{key}");
            found += usize::from(one);
        }
        assert!(found > 0 && found < h.len(), "{found}");
    }

    #[test]
    fn accepts_a_good_plan() {
        let h = vec![rec(0, Verdict::Baseline, "baseline", Some(16))];
        assert_eq!(validate(&plan("bigger tile", vec![0], 32), &h, 1), Ok(()));
    }

    #[test]
    fn rejects_each_rule() {
        let h = vec![
            rec(0, Verdict::Baseline, "baseline", Some(16)),
            rec(1, Verdict::Discard, "tile 64 helps", Some(64)),
        ];
        let rule = |p: Plan| validate(&p, &h, 2).unwrap_err().rule;
        assert_eq!(rule(plan("", vec![0], 32)), "hypothesis");
        assert_eq!(rule(plan("x", vec![], 32)), "cites");
        assert_eq!(rule(plan("x", vec![7], 32)), "cites");
        assert_eq!(rule(plan("Tile  64 helps", vec![1], 32)), "falsified");
        assert_eq!(rule(plan("y", vec![1], 64)), "repeat");
        let mut p = plan("z", vec![0], 32);
        p.predicted_effect = f64::NAN;
        assert_eq!(rule(p), "prediction");
    }

    #[test]
    fn a_discard_falsifies_the_change_measured_not_the_idea_at_once() {
        use crate::model::DiscardKind;
        // A sieve was planned; the executor only edited a range, measured
        // futile. EXECUTE's account of it is the record's change.
        let mut weak = rec(1, Verdict::Discard, "a sieve of Eratosthenes", None);
        weak.discard = Some(DiscardKind::Futile);
        weak.change = "range(2, limit) instead of range(2, n)".into();
        let mut h = vec![rec(0, Verdict::Baseline, "baseline", None), weak.clone()];
        let mut p = plan("A sieve of  Eratosthenes", vec![1], 32);
        p.knobs.clear();
        p.change = "replace trial division with a sieve in primes.py".into();
        assert_eq!(
            validate(&p, &h, 2),
            Ok(()),
            "a different change may try the idea"
        );
        // The same change again is refused, with what to do instead.
        let mut same = p.clone();
        same.change = "RANGE(2, limit) instead of range(2, n)".into();
        let rej = validate(&same, &h, 2).unwrap_err();
        assert_eq!(rej.rule, "falsified");
        assert!(
            rej.message.contains("with this same change"),
            "{}",
            rej.message
        );
        // Two measured changes of the idea discarded: it is falsified.
        let mut second = weak;
        second.iteration = 2;
        second.change = "a sieve that still divides".into();
        h.push(second);
        let rej = validate(&p, &h, 3).unwrap_err();
        assert!(rej.message.contains("iterations [1, 2]"), "{}", rej.message);
        // The falsified list names what was measured.
        assert_eq!(
            fact::entry_text(&h[1]).as_deref(),
            Some("range(2, limit) instead of range(2, n)")
        );
    }

    #[test]
    fn an_inconclusive_point_may_be_tried_once_more() {
        use crate::model::DiscardKind;
        let mut open = rec(1, Verdict::Discard, "tile 64 helps", Some(64));
        open.discard = Some(DiscardKind::Inconclusive);
        let mut h = vec![
            rec(0, Verdict::Baseline, "baseline", Some(16)),
            open.clone(),
        ];
        // Neither the hypothesis nor the point is falsified by an
        // interval that could not tell.
        assert_eq!(validate(&plan("tile 64 helps", vec![1], 64), &h, 2), Ok(()));
        assert_eq!(
            validate(&plan("y", vec![0], 16), &h, 2).unwrap_err().rule,
            "repeat"
        );
        let mut again = open.clone();
        again.iteration = 2;
        h.push(again);
        let rej = validate(&plan("y", vec![1], 64), &h, 3).unwrap_err();
        assert_eq!(rej.rule, "repeat");
        assert!(
            rej.message.contains("inconclusive twice in iteration 2"),
            "{}",
            rej.message
        );
        // The same hypothesis, inconclusive twice, is settled too (an agent
        // without knobs changes the diff, not the idea).
        let mut h2 = h.clone();
        for r in h2.iter_mut().skip(1) {
            r.knobs.clear();
        }
        let rej = validate(&plan("Tile 64  helps", vec![1], 32), &h2, 3).unwrap_err();
        assert_eq!(rej.rule, "repeat");
        assert!(
            rej.message.contains("inconclusive 2 times"),
            "{}",
            rej.message
        );
        // Futile is falsified at once.
        let mut futile = open;
        futile.discard = Some(DiscardKind::Futile);
        let h = vec![rec(0, Verdict::Baseline, "baseline", Some(16)), futile];
        assert_eq!(
            validate(&plan("tile 64 helps", vec![1], 32), &h, 2)
                .unwrap_err()
                .rule,
            "falsified"
        );
        let rej = validate(&plan("y", vec![1], 64), &h, 2).unwrap_err();
        assert!(
            rej.message.contains("falsified (futile)"),
            "{}",
            rej.message
        );
    }

    #[test]
    fn knobs_are_checked_and_completed_from_the_best() {
        use crate::brief::{Brief, KnobValue};
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  TILE: { int: [1, 256] }\n  ORDER: { choice: [ijk, ikj] }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let brief = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let mut best = Point::new();
        best.insert("TILE".into(), KnobValue::Int(16));
        best.insert("ORDER".into(), KnobValue::Str("ijk".into()));
        let mut p = plan("bigger", vec![0], 64);
        assert_eq!(validate_knobs(&mut p, &brief.knobs, &best), Ok(()));
        assert_eq!(points::key(&p.knobs), "ORDER=ijk TILE=64");
        let mut p = plan("huge", vec![0], 999);
        let rej = validate_knobs(&mut p, &brief.knobs, &best).unwrap_err();
        assert!(
            rej.message.contains("TILE=999 is not allowed"),
            "{}",
            rej.message
        );
        let mut p = plan("x", vec![0], 1);
        p.knobs.insert("THREADS".into(), KnobValue::Int(4));
        let rej = validate_knobs(&mut p, &brief.knobs, &best).unwrap_err();
        assert!(
            rej.message.contains("unknown knob `THREADS`"),
            "{}",
            rej.message
        );
        let mut p = plan("x", vec![0], 1);
        let rej = validate_knobs(&mut p, &[], &best).unwrap_err();
        assert!(rej.message.contains("declares no knobs"));
    }
}
