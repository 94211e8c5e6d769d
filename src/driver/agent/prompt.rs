//! The prompts the runner builds for a command agent:
//! PLAN, EXECUTE and LEARN, rendered from `templates/*.md`.
//!
//! A prompt is a bounded *view* of the disk, never the memory itself: the
//! archive holds everything, and each prompt picks what the step needs and
//! fits it into a character budget (tokens ≈ chars/4). The PLAN prompt is the
//! one that grows with history, so it is assembled from slots with their own
//! budgets, in an order that sacrifices what is furthest from the task first:
//!
//! 1. fixed: the template's own text, the pinned Brief, the state, the knobs,
//!    the analyzer's report, a retry note;
//! 2. every falsified hypothesis (shortened, never dropped, so the agent
//!    cannot repeat one for lack of being told; past thousands, folded by
//!    direction with counts and a pointer to `falsified.md`, the full list);
//! 3. the named patterns (≤ 40 with lessons, newest first; older ones by name);
//! 4. the last k iterations in full, k shrinking from 8 to 2 as history grows;
//! 5. the one-line-per-iteration digest, whose oldest lines fold into counts.
//!
//! Each datum appears in one form only (the "single representation" rule of
//! the first source document): a falsified iteration's digest line points to
//! the falsified list instead of repeating its hypothesis, and an iteration
//! shown in full has no digest line.
//!
//! Templates use `{{slot}}` placeholders; a project's `templates/` overrides
//! the built-in ones, and a slot a custom template leaves out is simply not
//! shown. Unknown placeholders are left as written.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use crate::brief::{Brief, Budget, Direction, format_duration};
use crate::model::Orientation;
use crate::text::clip::chars;
use crate::text::clip::clip;
use crate::text::clip::fmt_num;
use crate::text::compress;

use crate::archive::falsified::{falsified_in, falsified_text, ids_text};
use crate::archive::history::fact::Fact;
use crate::archive::history::{IterationRecord, Verdict, View};
use crate::brief::points::{self, Point};
use crate::driver::agent::answers::Plan;
use crate::error::Result;
use crate::text::compress::bound;

/// Replaces `{{name}}` with the slot's value; unknown names stay as written.
pub(crate) fn render(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let key = after[..end].trim();
                match slots.iter().find(|(k, _)| *k == key) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// How many times each known slot occurs in `template`.
fn occurrences(template: &str, key: &str) -> usize {
    let mut n = 0;
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        if after[..end].trim() == key {
            n += 1;
        }
        rest = &after[end + 2..];
    }
    n
}

fn pct(x: f64) -> String {
    crate::text::number::effect(x)
}

/// The last k iterations shown in full: the source's keepTarget =
/// round(36 − steps·0.8) messages, scaled from messages to iterations so that
/// it starts at 8 and never goes below 2.
pub(crate) fn recent_count(done: usize) -> usize {
    let k = ((36.0 - 0.8 * done as f64) / 4.5).round();
    (k.max(2.0) as usize).min(8)
}

/// Everything the PLAN prompt is built from.
pub struct PlanView<'a> {
    /// The template text (`templates/plan.md` or the built-in default).
    pub template: &'a str,
    pub brief: &'a Brief,
    /// The archive before the iteration planned (history/view.rs).
    pub history: View<'a>,
    /// The iteration being planned.
    pub iteration: u32,
    /// The Brief's limits with `ooda.yaml`'s defaults filled in.
    pub limits: Budget,
    pub run_started: DateTime<Utc>,
    pub now: DateTime<Utc>,
    /// Where the full iteration files are, for the agent that wants more.
    pub iterations_dir: &'a str,
    /// The knob point of the current best.
    pub best_point: &'a Point,
    /// ORIENT's output: the noise and θ₁ in force, and the analysis notes.
    pub orientation: &'a Orientation,
    /// The validator's message when this is a retry.
    pub retry: Option<&'a str>,
    /// Whether the agent can write `OODA_OUTPUT_FILE` (the prompt offers it).
    pub result_file: bool,
    /// The whole prompt stays within this many characters.
    pub max_chars: usize,
}

/// How many characters each PLAN slot took, for the benchmark and tests.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PlanStats {
    pub total: usize,
    pub fixed: usize,
    pub falsified: usize,
    pub falsified_entries: usize,
    /// The width falsified hypotheses were shortened to (`None`: not shortened).
    pub falsified_width: Option<usize>,
    pub patterns: usize,
    pub recent: usize,
    pub recent_k: usize,
    pub digest: usize,
    pub digest_folded: usize,
    /// The slots did not fit and the whole was cut to the budget (only a
    /// budget too small for the fixed parts).
    pub shortened: bool,
}

/// The PLAN prompt and what each slot took.
pub fn plan(v: &PlanView) -> Result<(String, PlanStats)> {
    let brief_text = bound(&brief_text(v.brief), (v.max_chars / 5).max(1_500));
    let state = state_text(v);
    let knobs = bound(&knobs_text(v.brief, v.best_point), 2_500);
    let analysis = v
        .orientation
        .analysis
        .as_deref()
        .map(|a| bound(a, 3_000))
        .unwrap_or_else(|| "No analyzer report.".into());
    let theta1 = format!("{:.2}%", v.orientation.theta1 * 100.0);
    let iteration = v.iteration.to_string();
    let retry = v.retry.map(retry_note).unwrap_or_default();

    let fixed_slots: Vec<(&str, &str)> = vec![
        ("result_file", result_file_note(v.result_file)),
        ("brief", &v.brief.name),
        ("brief_text", &brief_text),
        ("state", &state),
        ("knobs", &knobs),
        ("analysis", &analysis),
        ("theta1", &theta1),
        ("iteration", &iteration),
        ("iterations_dir", v.iterations_dir),
    ];
    let mut with_empty = fixed_slots.clone();
    for k in ["digest", "falsified", "patterns", "recent"] {
        with_empty.push((k, ""));
    }
    let fixed = chars(&render(v.template, &with_empty)) + chars(&retry);
    let times = |k: &str| occurrences(v.template, k).max(1);
    let mut left = v.max_chars.saturating_sub(fixed);

    let facts = v.history.facts();
    // The list's texts are read only when it could be shown one by one.
    let falsified = falsified_in(v.history, v.max_chars)?;
    let patterns = v.history.patterns()?;
    let done_facts = facts.get(1..).unwrap_or_default();
    let done = done_facts.len();
    let k = recent_count(done).min(done);
    let held: Vec<&IterationRecord> = v
        .history
        .recent()
        .iter()
        .filter(|r| r.iteration > 0)
        .collect();
    let k = k.min(held.len());
    let recent_recs: Vec<&IterationRecord> = held[held.len() - k..].to_vec();
    // The digest: the held iterations before those, newest first, and what
    // does not fit (every older one included) folded into one line.
    let digest_recs: Vec<&IterationRecord> = held[..held.len() - k].to_vec();
    let digest_facts = &done_facts[..done - k];

    // What the lower-priority slots need at least, so the falsified list
    // cannot starve them entirely.
    let need_patterns = chars(&patterns_text(&patterns, usize::MAX));
    let need_recent = chars(&recent_text(&recent_recs, usize::MAX));
    let need_digest = chars(&digest_text(&digest_recs, digest_facts, usize::MAX).0);
    let floor = |need: usize, min: usize| need.min(min);
    let reserve = floor(need_patterns, 1_500) + floor(need_recent, 1_600) + floor(need_digest, 400);

    let (falsified_s, width) = falsified_text(
        &falsified,
        left.saturating_sub(reserve) / times("falsified"),
        v.iterations_dir,
    );
    left = left.saturating_sub(chars(&falsified_s) * times("falsified"));

    let patterns_allot = (left.saturating_sub(floor(need_recent, 1_600) + floor(need_digest, 400))
        / times("patterns"))
    .min(8_000);
    let patterns_s = patterns_text(&patterns, patterns_allot);
    left = left.saturating_sub(chars(&patterns_s) * times("patterns"));

    let recent_allot = left.saturating_sub(floor(need_digest, 400)) / times("recent");
    let recent_s = recent_text(&recent_recs, recent_allot);
    left = left.saturating_sub(chars(&recent_s) * times("recent"));

    let (digest_s, folded) = digest_text(&digest_recs, digest_facts, left / times("digest"));

    let mut slots = fixed_slots;
    slots.push(("falsified", &falsified_s));
    slots.push(("patterns", &patterns_s));
    slots.push(("recent", &recent_s));
    slots.push(("digest", &digest_s));
    let mut out = render(v.template, &slots);
    out.push_str(&retry);
    // Only a budget too small for the fixed parts gets here; the bound is hard.
    let shortened = chars(&out) > v.max_chars;
    if shortened {
        out = compress::shorten(&out, v.max_chars);
    }
    let stats = PlanStats {
        total: chars(&out),
        fixed,
        falsified: chars(&falsified_s),
        falsified_entries: falsified.count(),
        falsified_width: width,
        patterns: chars(&patterns_s),
        recent: chars(&recent_s),
        recent_k: recent_recs.len(),
        digest: chars(&digest_s),
        digest_folded: folded,
        shortened,
    };
    Ok((out, stats))
}

fn retry_note(message: &str) -> String {
    format!(
        "\n\n## Your previous answer was rejected\n\n{}\n\nAnswer again: one fenced code block tagged `ooda` holding the plan JSON above, with the problem fixed.\n",
        bound(message, 1_500)
    )
}

/// The Brief as an agent needs it: the enforced rules in words, then the prose.
pub(crate) fn brief_text(brief: &Brief) -> String {
    let m = &brief.metric;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Metric: `{}`, read from `{}` ({}: {} is better){}{}.",
        m.name,
        m.command,
        m.direction,
        match m.direction {
            Direction::Minimize => "lower",
            Direction::Maximize => "higher",
        },
        if m.noise_floor > 0.0 {
            format!("; gains under {:.1}% do not count", m.noise_floor * 100.0)
        } else {
            String::new()
        },
        m.target
            .map(|t| format!("; the target is {}", fmt_num(t)))
            .unwrap_or_default()
    );
    if !brief.guards.is_empty() {
        let g: Vec<String> = brief.guards.iter().map(|g| format!("`{g}`")).collect();
        let _ = writeln!(s, "Guards (must pass before measuring): {}.", g.join(", "));
    }
    let _ = writeln!(s, "{}", scope_text(brief));
    for (title, text) in [
        ("Goal", Some(&brief.goal)),
        ("Success", Some(&brief.success)),
        ("Must not break", Some(&brief.must_not_break)),
        ("Context", brief.context.as_ref()),
    ] {
        if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
            let _ = write!(s, "\n### {title}\n{}\n", t.trim());
        }
    }
    s.trim_end().to_string()
}

/// The scope rules in one sentence.
pub(crate) fn scope_text(brief: &Brief) -> String {
    let list = |v: &[String]| {
        v.iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let allow = if brief.scope.allow.is_empty() {
        "any path".to_string()
    } else {
        format!("only paths matching {}", list(&brief.scope.allow))
    };
    let protect = if brief.scope.protect.is_empty() {
        String::new()
    } else {
        format!("; never change {}", list(&brief.scope.protect))
    };
    format!("Scope: you may change {allow}{protect}.")
}

fn state_text(v: &PlanView) -> String {
    let h = v.history;
    let metric = &v.brief.metric.name;
    let mut s = String::new();
    let done = h.facts().get(1..).unwrap_or_default();
    let count = |f: fn(Verdict) -> bool| done.iter().filter(|r| r.verdict.is_some_and(f)).count();
    let _ = writeln!(
        s,
        "- Planning iteration {} ({} done: {} keep, {} discard, {} crash/invalid/blocked).",
        v.iteration,
        done.len(),
        count(|v| v == Verdict::Keep),
        count(|v| v == Verdict::Discard),
        count(Verdict::is_failure)
    );
    if let Some(base) = h.baseline_value() {
        let best = h.best_value();
        let best_at = h
            .facts()
            .iter()
            .rev()
            .find(|r| r.is(Verdict::Keep))
            .map(|r| format!("iteration {}", r.iteration))
            .unwrap_or_else(|| "the baseline".into());
        let _ = writeln!(
            s,
            "- Baseline (iteration 0): {metric} = {} (median).",
            fmt_num(base)
        );
        let _ = writeln!(
            s,
            "- Best: {metric} = {} ({best_at}; the median of its own runs, measured apart from the baseline's, so not comparable with it).",
            fmt_num(best),
        );
        if let Ok(h) = crate::report::headline::Headline::of_view(h, v.brief.metric.direction) {
            let _ = writeln!(s, "- Result so far: {}.", h.sentence());
        }
    }
    if let Some(noise) = v.orientation.noise {
        let _ = writeln!(
            s,
            "- Noise: {:.2}% per pair; minimum detectable gain θ₁ = {:.2}% (smaller effects cannot be told from noise).",
            noise.s_h * 100.0,
            v.orientation.theta1 * 100.0
        );
    }
    let streak = done
        .iter()
        .rev()
        .take_while(|r| !r.is(Verdict::Keep))
        .count();
    if streak > 0 {
        let _ = writeln!(s, "- {streak} iteration(s) in a row without a keep.");
    }
    let (tokens_used, cost_used) = h.spent();
    let mut left = Vec::new();
    if let Some(n) = v.limits.iterations {
        left.push(format!(
            "{} of {n} iterations",
            (n as usize).saturating_sub(done.len())
        ));
    }
    if let Some(w) = v.limits.wall {
        let used = (v.now - v.run_started).to_std().unwrap_or_default();
        left.push(format!(
            "{} of {} wall clock",
            format_duration(w.saturating_sub(used)),
            format_duration(w)
        ));
    }
    if let Some(t) = v.limits.tokens {
        left.push(format!("{} of {t} tokens", t.saturating_sub(tokens_used)));
    }
    if let Some(c) = v.limits.cost_usd {
        let used = cost_used;
        left.push(format!(
            "{} of {}",
            crate::validate::units::format_usd((c - used).max(0.0)),
            crate::validate::units::format_usd(c)
        ));
    }
    if !left.is_empty() {
        let _ = writeln!(s, "- Budget left: {}.", left.join("; "));
    }
    s.trim_end().to_string()
}

fn knobs_text(brief: &Brief, best: &Point) -> String {
    if brief.knobs.is_empty() {
        return "None: this Brief declares no knobs; leave `knobs` empty and change code.".into();
    }
    let mut s = format!(
        "The runner writes knob values to `{}` after your EXECUTE step; set `knobs` in the plan to change them (knobs you leave out keep the best's values). Never propose an evaluated point.\n",
        brief.knobs_file
    );
    for k in &brief.knobs {
        let _ = writeln!(
            s,
            "- {}: {}; best so far: {}",
            k.name,
            k.spec.describe(),
            best.get(&k.name)
                .map(ToString::to_string)
                .unwrap_or_else(|| "unset".into())
        );
    }
    s.trim_end().to_string()
}

pub(crate) use crate::archive::history::ledger::NamedPattern;

#[cfg(test)]
/// Every named pattern of `history`, newest first, one entry per name
/// (case-insensitive).
pub(crate) fn pattern_entries(history: &[IterationRecord]) -> Vec<NamedPattern> {
    let mut p = crate::archive::history::ledger::Ledger::default();
    for r in history {
        p.fold(r);
    }
    p.entries()
}

/// Ledger shown with their lessons.
const MAX_PATTERNS: usize = 40;

fn patterns_text(patterns: &[NamedPattern], allot: usize) -> String {
    if patterns.is_empty() {
        return "None yet.".into();
    }
    let entry = |p: &NamedPattern| {
        let seen = if p.seen > 1 {
            format!(", seen {}×", p.seen)
        } else {
            String::new()
        };
        format!(
            "- **{}** — {} (iteration {}{seen})\n",
            p.name,
            clip(&p.lesson, 240),
            p.newest
        )
    };
    let names_line = |ps: &[NamedPattern], w: usize| -> String {
        if ps.is_empty() {
            return String::new();
        }
        let names: Vec<String> = ps.iter().map(|p| clip(&p.name, w)).collect();
        format!("Older patterns (names only): {}.", names.join("; "))
    };
    // The lengths of those lines, in arithmetic on each name's length once
    // `clip` has collapsed its whitespace (after that it only cuts):
    // building the line for every candidate cut was quadratic at 10,000.
    let lens: Vec<usize> = patterns
        .iter()
        .map(|p| crate::text::clip::collapsed_chars(&p.name))
        .collect();
    let clipped = |len: usize, w: usize| if len <= w { len } else { w };
    let prefix = chars("Older patterns (names only): .");
    let line_len = |from: usize, sum: usize| -> usize {
        let k = patterns.len() - from;
        if k == 0 {
            0
        } else {
            prefix + sum + 2 * (k - 1)
        }
    };
    let mut at8 = vec![0; patterns.len() + 1];
    for i in (0..patterns.len()).rev() {
        at8[i] = at8[i + 1] + clipped(lens[i], 8);
    }
    // Every pattern must stay listed: lessons are added newest first only
    // while the names of all the others still fit at their shortest.
    let mut s = String::new();
    let mut used = 0;
    let mut shown = 0;
    while shown < patterns.len().min(MAX_PATTERNS) {
        let e = entry(&patterns[shown]);
        let rest = line_len(shown + 1, at8[shown + 1]);
        if used + chars(&e) + rest > allot {
            break;
        }
        used += chars(&e);
        s.push_str(&e);
        shown += 1;
    }
    let rest = &patterns[shown..];
    if !rest.is_empty() {
        let room = allot.saturating_sub(used);
        let width = |w: usize| line_len(shown, lens[shown..].iter().map(|&l| clipped(l, w)).sum());
        let mut w = 40;
        while width(w) > room && w > 8 {
            w -= 1;
        }
        s.push_str(&names_line(rest, w));
    }
    s.trim_end().to_string()
}

/// One iteration as the PLAN prompt shows it in full (its patterns and
/// falsified statement live in their own sections).
fn full_iteration(r: &IterationRecord) -> String {
    let mut s = format!(
        "### Iteration {} — {}\n",
        r.iteration,
        r.verdict_text().to_uppercase()
    );
    let _ = writeln!(
        s,
        "- Hypothesis: {}",
        if r.hypothesis.is_empty() {
            "(none: no plan was accepted)".to_string()
        } else {
            clip(&r.hypothesis, 600)
        }
    );
    if !r.change.trim().is_empty() {
        let _ = writeln!(s, "- Change: {}", clip(&r.change, 600));
    }
    let mut facts = Vec::new();
    if !r.cites.is_empty() {
        facts.push(format!("cites {}", ids_text(&r.cites)));
    }
    if !r.axes.is_empty() {
        let axes: Vec<String> = r.axes.iter().map(ToString::to_string).collect();
        facts.push(format!("axes {}", axes.join(", ")));
    }
    if !r.knobs.is_empty() {
        facts.push(format!("knobs {}", points::key(&r.knobs)));
    }
    if !facts.is_empty() {
        let _ = writeln!(s, "- {}", facts.join("; "));
    }
    let predicted = r
        .predicted
        .as_ref()
        .map(|p| crate::text::number::predicted(p.effect, p.sd))
        .unwrap_or_else(|| "—".into());
    let measured = match &r.measured {
        Some(m) => format!(
            "{} ({} pairs, {})",
            r.effect_text(),
            m.pairs.len(),
            m.p_text()
        ),
        None => "not measured".into(),
    };
    let _ = writeln!(s, "- Predicted {predicted}; measured {measured}.");
    let _ = writeln!(
        s,
        "- Decision: {} — {}",
        r.verdict_text(),
        clip(&r.reason, 400)
    );
    if !r.changed_paths.is_empty() {
        let _ = writeln!(s, "- Changed: {}", clip(&r.changed_paths.join(", "), 300));
    }
    if let Some(n) = &r.next {
        let _ = writeln!(s, "- Next: {}", clip(n, 300));
    }
    if let Some(n) = &r.narrative {
        let _ = writeln!(s, "- Narrative: {}", clip(n, 400));
    }
    if let Some(out) = &r.failure_output {
        let _ = writeln!(
            s,
            "- Failure output (compressed):\n```text\n{}\n```",
            bound(out, 1_200)
        );
    }
    s
}

fn recent_text(recs: &[&IterationRecord], allot: usize) -> String {
    if recs.is_empty() {
        return "None yet.".into();
    }
    let per = allot / recs.len();
    let mut s = String::new();
    for r in recs {
        let block = full_iteration(r);
        s.push_str(&bound(&block, per.saturating_sub(1)));
        s.push('\n');
    }
    s.trim_end().to_string()
}

fn digest_line(r: &IterationRecord, falsified: bool) -> String {
    let outcome = match &r.measured {
        Some(_) => r.effect_text(),
        None => clip(&r.reason, 60),
    };
    let predicted = r
        .predicted
        .as_ref()
        .map(|p| format!(" pred {}", pct(p.effect)))
        .unwrap_or_default();
    let what = if falsified {
        "(falsified: see that list)".to_string()
    } else {
        clip(&r.hypothesis, 80)
    };
    format!(
        "{} {} {outcome}{predicted} — {what}\n",
        r.iteration,
        r.verdict_text()
    )
}

/// The digest within `allot`; returns how many iterations were folded.
/// `recs` are the held iterations the digest may show (the newest of
/// `facts`, the rows of every iteration it covers); what does not fit,
/// and every row older than `recs`, is folded into one line of counts.
fn digest_text(recs: &[&IterationRecord], facts: &[Fact], allot: usize) -> (String, usize) {
    if facts.is_empty() {
        return (
            "Nothing beyond the iterations shown in full (iteration 0 is the baseline).".into(),
            0,
        );
    }
    let older = facts.len() - recs.len();
    let in_falsified = |r: &IterationRecord| crate::archive::history::fact::entry_text(r).is_some();
    let header = "Format: iteration verdict measured-effect [95% CI] predicted — hypothesis.\n";
    // Newest first, and only as many lines as could be shown: building
    // all 10,000 to fold nearly all of them was most of the prompt's cost.
    let mut newest: Vec<String> = Vec::new();
    let mut sum = chars(header);
    let mut all_fit = older == 0;
    for r in recs.iter().rev() {
        let l = digest_line(r, in_falsified(r));
        sum += chars(&l);
        newest.push(l);
        if sum > allot {
            all_fit = false;
            break;
        }
    }
    if all_fit {
        newest.reverse();
        return (
            (header.to_string() + &newest.concat())
                .trim_end()
                .to_string(),
            0,
        );
    }
    let fold_line = |n: usize| -> String {
        let folded = &facts[..n];
        let count = |f: &dyn Fn(&Fact) -> bool| folded.iter().filter(|r| f(r)).count();
        format!(
            "{}–{} folded: {} keep, {} discard, {} crash/invalid/blocked (their falsified hypotheses and patterns are listed in those sections).\n",
            folded.first().map(|r| r.iteration).unwrap_or(0),
            folded.last().map(|r| r.iteration).unwrap_or(0),
            count(&|r| r.is(Verdict::Keep)),
            count(&|r| r.is(Verdict::Discard)),
            count(&|r| r.verdict.is_some_and(Verdict::is_failure)),
        )
    };
    // Keep the newest lines that fit next to the fold line (never more
    // than were built: those alone passed the allotment).
    let mut kept = 0;
    let mut used = chars(header) + chars(&fold_line(facts.len()));
    for l in &newest {
        if used + chars(l) > allot {
            break;
        }
        used += chars(l);
        kept += 1;
    }
    let folded = facts.len() - kept;
    let mut s = header.to_string() + &fold_line(folded);
    for l in newest[..kept].iter().rev() {
        s.push_str(l);
    }
    let s = s.trim_end().to_string();
    // A budget too small for even the fold line: show the line clipped.
    (
        if chars(&s) > allot {
            clip(&fold_line(folded), allot)
        } else {
            s
        },
        folded,
    )
}

/// The plan as EXECUTE shows it: what to do, in the agent's own words.
pub(crate) fn plan_text(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "- Hypothesis: {}", clip(&plan.hypothesis, 1_000));
    let _ = writeln!(s, "- Change: {}", bound(&plan.change, 4_000));
    if !plan.axes.is_empty() {
        let axes: Vec<String> = plan.axes.iter().map(ToString::to_string).collect();
        let _ = writeln!(s, "- Axes: {}", axes.join(", "));
    }
    if !plan.knobs.is_empty() {
        let _ = writeln!(
            s,
            "- Knobs (the runner writes them after you finish): {}",
            points::key(&plan.knobs)
        );
    }
    let _ = writeln!(
        s,
        "- Predicted effect: {}",
        crate::text::number::predicted(plan.predicted_effect, plan.predicted_sd)
    );
    s.trim_end().to_string()
}

/// Everything the EXECUTE prompt is built from.
pub(crate) struct ExecuteView<'a> {
    pub template: &'a str,
    pub brief: &'a Brief,
    pub iteration: u32,
    pub plan: &'a Plan,
    /// Whether to ask for the optional `{"change": …}` block.
    pub change_note: bool,
    pub max_chars: usize,
}

pub(crate) fn execute(v: &ExecuteView) -> String {
    let list = |xs: &[String]| {
        if xs.is_empty() {
            "(none)".to_string()
        } else {
            xs.iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let plan = plan_text(v.plan);
    let iteration = v.iteration.to_string();
    let allow = list(&v.brief.scope.allow);
    let protect = list(&v.brief.scope.protect);
    let scope = scope_text(v.brief);
    let brief_text = bound(&brief_text(v.brief), (v.max_chars / 3).max(1_000));
    let out = render(
        v.template,
        &[
            ("brief", &v.brief.name),
            ("brief_text", &brief_text),
            ("iteration", &iteration),
            ("plan", &plan),
            ("allow", &allow),
            ("protect", &protect),
            ("scope", &scope),
            ("knobs_file", &v.brief.knobs_file),
            ("change_note", change_note(v.change_note)),
        ],
    );
    bound(&out, v.max_chars)
}

/// The `{{change_note}}` slot of the EXECUTE prompt: the optional answer.
fn change_note(asked: bool) -> &'static str {
    if asked {
        "When you are done, you may describe what you actually changed in a fenced code\nblock tagged `ooda`:\n\n```ooda\n{\"change\": \"what you changed, in one or two sentences\"}\n```\n"
    } else {
        "When you are done, stop; the runner reads your change from the files.\n"
    }
}

/// Everything the LEARN prompt is built from.
pub(crate) struct LearnView<'a> {
    pub template: &'a str,
    pub brief: &'a Brief,
    pub record: &'a IterationRecord,
    /// Names already in use, so the agent reuses one when it fits.
    pub known_patterns: &'a [NamedPattern],
    /// Whether the agent can write `OODA_OUTPUT_FILE` (the prompt offers it).
    pub result_file: bool,
    pub max_chars: usize,
}

/// The `{{result_file}}` slot: the second way to answer, for agents that can
/// write outside their working directory.
fn result_file_note(allowed: bool) -> &'static str {
    if allowed {
        " (or write the JSON to the file named by the environment variable OODA_OUTPUT_FILE)"
    } else {
        ""
    }
}

pub(crate) fn learn(v: &LearnView) -> String {
    let r = v.record;
    let predicted = r
        .predicted
        .as_ref()
        .map(|p| crate::text::number::predicted(p.effect, p.sd))
        .unwrap_or_else(|| "no prediction".into());
    let measured = match &r.measured {
        Some(m) => format!(
            "{} over {} pairs ({}; medians {} → {} {})",
            r.effect_text(),
            m.pairs.len(),
            m.p_text(),
            fmt_num(m.base_median),
            fmt_num(m.cand_median),
            v.brief.metric.name
        ),
        None => "not measured".into(),
    };
    let mut details = String::new();
    if !r.changed_paths.is_empty() {
        let _ = writeln!(details, "Changed paths: {}.", r.changed_paths.join(", "));
    }
    for g in &r.guards {
        let _ = writeln!(
            details,
            "Guard `{}`: {}.",
            g.command,
            if g.ok { "pass" } else { "FAIL" }
        );
    }
    if let Some(out) = &r.failure_output {
        let _ = writeln!(
            details,
            "Output of the failure (compressed):\n```text\n{}\n```",
            bound(out, 3_000)
        );
    }
    let names: Vec<String> = v
        .known_patterns
        .iter()
        .take(60)
        .map(|p| p.name.clone())
        .collect();
    let known = if names.is_empty() {
        "none yet".to_string()
    } else {
        clip(&names.join("; "), 1_500)
    };
    let iteration = r.iteration.to_string();
    let hypothesis = clip(&r.hypothesis, 1_000);
    let reason = clip(&r.reason, 1_000);
    let out = render(
        v.template,
        &[
            ("brief", &v.brief.name),
            ("result_file", result_file_note(v.result_file)),
            ("iteration", &iteration),
            ("verdict", &r.verdict_text()),
            ("reason", &reason),
            ("hypothesis", &hypothesis),
            ("predicted", &predicted),
            ("measured", &measured),
            ("details", details.trim_end()),
            ("known_patterns", &known),
        ],
    );
    bound(&out, v.max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::falsified::{
        MIN_FALSIFIED_WIDTH, falsified_entries, falsified_file, ids_len,
    };
    use crate::archive::history::synthetic::synthetic_history;

    fn brief() -> Brief {
        let text = "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nscope:\n  allow: [\"src/**\"]\n  protect: [\"bench.sh\"]\nagent: claude\n---\n# Goal\nMake t small.\n\n# Success\nt drops.\n\n# Must not break\nbench.sh stays.\n";
        Brief::parse(std::path::Path::new("briefs/b.md"), text).unwrap()
    }

    fn view<'a>(
        b: &'a Brief,
        h: &'a crate::archive::history::History,
        max: usize,
        best: &'a Point,
    ) -> PlanView<'a> {
        PlanView {
            template: crate::project::TEMPLATES[0].1,
            brief: b,
            history: h.view(),
            iteration: h.len() as u32,
            limits: Budget {
                iterations: Some(2_000),
                wall: None,
                cost_usd: Some(15.0),
                tokens: None,
            },
            run_started: Utc::now(),
            now: Utc::now(),
            iterations_dir: "iterations/b",
            best_point: best,
            orientation: Box::leak(Box::new(Orientation::of_view(h.view(), 0.0, 0.05, 24))),
            retry: None,
            result_file: true,
            max_chars: max,
        }
    }

    #[test]
    fn render_replaces_known_slots_only() {
        let out = render(
            "a {{x}} b {{ y }} {{unknown}} {{x}} {{open",
            &[("x", "1"), ("y", "2")],
        );
        assert_eq!(out, "a 1 b 2 {{unknown}} 1 {{open");
        assert_eq!(occurrences("{{x}} {{ x }} {{y}}", "x"), 2);
    }

    #[test]
    fn recent_count_shrinks_from_8_to_2() {
        assert_eq!(recent_count(0), 8);
        assert_eq!(recent_count(5), 7);
        assert_eq!(recent_count(20), 4);
        assert_eq!(recent_count(35), 2);
        assert_eq!(recent_count(1_000), 2);
    }

    #[test]
    fn the_builtin_template_has_every_slot() {
        let t = crate::project::TEMPLATES[0];
        assert_eq!(t.0, "plan.md");
        for slot in [
            "brief",
            "brief_text",
            "state",
            "knobs",
            "digest",
            "falsified",
            "patterns",
            "recent",
            "analysis",
            "theta1",
            "iteration",
            "iterations_dir",
            "result_file",
        ] {
            assert_eq!(occurrences(t.1, slot), 1, "{slot}");
        }
    }

    #[test]
    fn small_history_is_shown_whole() {
        let b = brief();
        let h = synthetic_history(6, 3);
        let held = crate::archive::history::History::of(h.clone());
        let best = Point::new();
        let (p, stats) = plan(&view(&b, &held, 24_000, &best)).unwrap();
        assert_eq!(stats.digest_folded, 0);
        assert_eq!(stats.falsified_width, None);
        assert_eq!(stats.recent_k, 6);
        for r in &h[1..] {
            assert!(
                p.contains(&format!("### Iteration {} —", r.iteration)),
                "{p}"
            );
            if let Some(f) = &r.falsified {
                assert!(p.contains(f.as_str()), "{f}");
            }
        }
        assert!(p.contains("Make t small."));
        // The θ₁ in force (pooled over the archive), not iteration 0's.
        let in_force = Orientation::of(&h, 0.0, 0.05, 24).theta1;
        assert!((in_force - 0.0108).abs() > 0.0005, "{in_force}");
        assert!(p.contains(&format!("θ₁ = {:.2}%", in_force * 100.0)), "{p}");
        assert!(!p.contains("{{"), "{p}");
    }

    #[test]
    fn a_thousand_iterations_fit_the_budget_and_list_every_falsified_hypothesis() {
        let b = brief();
        let h = synthetic_history(1_000, 7);
        let held = crate::archive::history::History::of(h.clone());
        let best = Point::new();
        for budget in [24_000, 40_000] {
            let (p, stats) = plan(&view(&b, &held, budget, &best)).unwrap();
            assert!(chars(&p) <= budget, "{} > {budget}", chars(&p));
            assert_eq!(stats.recent_k, 2);
            assert!(stats.digest_folded > 0);
            let width = stats.falsified_width.expect("shortened");
            assert!(width >= MIN_FALSIFIED_WIDTH, "{stats:?}");
            for f in falsified_entries(&h) {
                let line = format!("{}: {}", ids_text(&f.ids), clip(&f.text, width));
                assert!(p.contains(&line), "missing {line}");
            }
            for name in pattern_entries(&h).iter().map(|p| clip(&p.name, 8)) {
                let stem = name.trim_end_matches('…');
                assert!(p.contains(stem), "pattern {name} missing");
            }
        }
    }

    #[test]
    fn ten_and_ten_thousand_iterations_fit_with_every_direction_and_the_answer_format() {
        let b = brief();
        let best = Point::new();
        for n in [10, 10_000] {
            let h = synthetic_history(n, 7);
            let held = crate::archive::history::History::of(h.clone());
            let (p, stats) = plan(&view(&b, &held, 24_000, &best)).unwrap();
            assert!(chars(&p) <= 24_000, "{n}: {} > 24000", chars(&p));
            // The builder fit it: nothing was cut blindly, so the answer
            // format at the end and the recent iterations are there.
            assert!(!stats.shortened, "{n}: {stats:?}");
            assert!(
                p.trim_end().ends_with("```") && p.contains("Answer with a fenced code block"),
                "{n}: the answer format was cut"
            );
            assert!(stats.recent > 0, "{n}: {stats:?}");
            let entries = falsified_entries(&h);
            if n == 10_000 {
                assert!(p.contains("iterations/b/falsified.md"), "{n}");
                let axes: std::collections::BTreeSet<&str> =
                    entries.iter().map(|f| f.axis.as_str()).collect();
                for a in axes {
                    assert!(
                        p.contains(&format!("- {a}: ")),
                        "{n}: direction {a} missing"
                    );
                }
            }
            // The file lists every one in full.
            let file = falsified_file("b", &h);
            for f in &entries {
                assert!(file.contains(&f.text), "{}", f.text);
            }
        }
    }

    #[test]
    fn ids_len_is_the_length_of_ids_text() {
        for ids in [vec![], vec![0], vec![7, 10, 999, 1000, 4_294_967_295]] {
            assert_eq!(ids_len(&ids), ids_text(&ids).len(), "{ids:?}");
        }
    }

    #[test]
    fn tiny_budgets_still_hold() {
        let b = brief();
        let h = synthetic_history(300, 1);
        let held = crate::archive::history::History::of(h.clone());
        let best = Point::new();
        for budget in [500, 3_000, 9_000] {
            let (p, _) = plan(&view(&b, &held, budget, &best)).unwrap();
            assert!(chars(&p) <= budget, "{} > {budget}", chars(&p));
        }
    }

    #[test]
    fn falsified_iterations_are_not_repeated_in_the_digest() {
        let b = brief();
        let h = synthetic_history(40, 9);
        let held = crate::archive::history::History::of(h.clone());
        let best = Point::new();
        let (p, _) = plan(&view(&b, &held, 24_000, &best)).unwrap();
        for r in h.iter().filter(|r| r.falsified.is_some()) {
            assert!(
                !p.contains(&format!("— {}", clip(&r.hypothesis, 80))),
                "iteration {} shown twice",
                r.iteration
            );
        }
    }

    #[test]
    fn retry_note_is_inside_the_budget() {
        let b = brief();
        let h = synthetic_history(200, 2);
        let held = crate::archive::history::History::of(h.clone());
        let best = Point::new();
        let mut v = view(&b, &held, 24_000, &best);
        v.retry = Some("the plan cites iterations that do not exist: [999]");
        let (p, _) = plan(&v).unwrap();
        assert!(chars(&p) <= 24_000);
        assert!(p.contains("[999]"));
        assert!(p.trim_end().ends_with("with the problem fixed."));
    }
}
