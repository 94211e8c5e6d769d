//! The obsidian-synthesizer: notes for the user's vault, for a keep and at
//! the end of a run, every fact rendered from the archive.
//!
//! Not a phase of its own: CHECK runs it for a keep that does not end the
//! run, and the end of a run (whoever ends it) for its last iteration, once
//! the confirmation test is in the record. The builtin synthesizer writes
//! every note from data; a command synthesizer is asked, for a keep, for one
//! paragraph of narrative from the iteration's data, which goes into that
//! iteration's note under its own heading (the numbers stay the runner's).
//!
//! One note per kept iteration and one per run, in `<notes_dir>/<brief>/`,
//! named so that names are unique across runs (`<brief>-<run id>` and
//! `<brief>-<run id>-iter-NNN`): Obsidian resolves `[[wikilinks]]` by file
//! name anywhere in the vault. Properties are typed (`tags` and `aliases`
//! lists, numbers as numbers, wikilinks quoted) and each property name has
//! one type in every note, so Obsidian's property view never has to guess.
//! A link is written only to a note this module writes (a kept iteration of
//! the run, an earlier run's note that exists), so every link resolves.
//! The run note and the notes of the kept iterations the runner holds in
//! full are regenerated at each trigger (a kill in the middle leaves notes
//! the next trigger rewrites, and no note holds a number the archive does
//! not); an older keep's note stays as it was written when it was kept.
//! The run note lists the newest hundred keeps, falsified directions and
//! alarms with the count of older ones, so a trigger after 10,000
//! iterations costs what one after a hundred does.

use crate::archive::history::View;
use crate::archive::history::fact::{Fact, flag};
use crate::archive::state::State;
use crate::driver::{MainAgent, Step};
use crate::error::{Error, Result};
use crate::model::{Direction, IterationRecord, Level, Phase, Stop, SubagentOutcome, Verdict};
use crate::subagents::Definition;
use crate::subagents::definition::{Sees, SubDriver};
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What the notes are made of.
pub(crate) struct Input<'a> {
    pub brief: &'a str,
    pub metric: &'a str,
    pub run_id: &'a str,
    pub started: chrono::DateTime<chrono::Utc>,
    pub start_commit: &'a str,
    pub best_commit: &'a str,
    /// What the notes are written from (see [`gather`]).
    pub gathered: &'a Gathered,
    pub stop: Option<&'a Stop>,
    /// A narrative paragraph a command synthesizer wrote for the iteration
    /// note of `iteration` (never a number of the runner's).
    pub narrative: Option<(u32, &'a str)>,
}

/// How many of the newest keeps, falsified directions and alarmed
/// iterations the run note lists.
const NEWEST: usize = 100;

/// The records the notes are written from and what the older iterations
/// add up to: the baseline, the newest keeps, falsified and alarmed
/// iterations (at most [`NEWEST`] each) and the iteration in hand, in order.
pub(crate) struct Gathered {
    pub records: Vec<IterationRecord>,
    /// Iterations after the baseline, the one in hand included.
    pub iterations: u32,
    /// Every kept iteration (a note's `builds_on` links to any of them).
    pub kept: std::collections::BTreeSet<u32>,
    pub keeps_older: usize,
    pub falsified_older: usize,
    pub alarms_older: usize,
    /// The keep that made the current best and its value (none: the baseline).
    pub best: (Option<u32>, f64),
    pub confirmed: Option<(u32, crate::model::Confirmation)>,
    /// What the run achieved, as every report leads with it.
    pub headline: crate::report::headline::Headline,
    /// Iteration notes from this iteration on are rendered (the runner holds
    /// their records); older keeps' notes stay as they were written.
    pub notes_from: u32,
}

/// Gathers the notes' records for `rec`, the iteration in hand, from the
/// archive before it.
pub(crate) fn gather(
    before: View,
    rec: &IterationRecord,
    dir: Direction,
    best_commit: &str,
) -> Result<Gathered> {
    let facts = before.facts();
    let newest = |bit: &dyn Fn(&Fact) -> bool, in_hand: bool| -> (Vec<u32>, usize) {
        let mut all: Vec<u32> = facts
            .iter()
            .filter(|f| bit(f))
            .map(|f| f.iteration)
            .collect();
        if in_hand {
            all.push(rec.iteration);
        }
        let older = all.len().saturating_sub(NEWEST);
        (all.split_off(older), older)
    };
    let (keeps, keeps_older) = newest(&|f| f.is(Verdict::Keep), rec.verdict == Verdict::Keep);
    let (falsified, falsified_older) = newest(&|f| f.falsifies(), rec.falsifies());
    let (alarmed, alarms_older) = newest(&|f| f.has(flag::ALARMS), !rec.alarms.is_empty());
    let mut ids: Vec<u32> = std::iter::once(0)
        .chain(keeps)
        .chain(falsified)
        .chain(alarmed)
        .filter(|&i| i != rec.iteration && (i as usize) < facts.len())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut records: Vec<IterationRecord> = before
        .records(&ids)?
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect();
    records.push(rec.clone());
    records.sort_by_key(|r| r.iteration);
    let mut kept: std::collections::BTreeSet<u32> = facts
        .iter()
        .filter(|f| f.is(Verdict::Keep))
        .map(|f| f.iteration)
        .collect();
    if rec.verdict == Verdict::Keep {
        kept.insert(rec.iteration);
    }
    let best = match rec.measured.as_ref() {
        Some(m) if rec.verdict == Verdict::Keep && rec.commit.as_deref() == Some(best_commit) => {
            (Some(rec.iteration), m.cand_median)
        }
        _ => before.best_of(best_commit),
    };
    let confirmed = match rec.confirmation.as_ref().filter(|c| c.best == best_commit) {
        Some(c) => Some((rec.iteration, c.clone())),
        None => before.confirmation_of(best_commit)?,
    };
    let notes_from = if before.whole() {
        0
    } else {
        before
            .recent()
            .first()
            .map_or(rec.iteration, |r| r.iteration)
    };
    let mut all = before.facts().to_vec();
    all.push(Fact::of(rec, Default::default()));
    let headline = crate::report::headline::Headline::of(&all, dir, confirmed.as_ref());
    Ok(Gathered {
        headline,
        records,
        iterations: rec.iteration,
        kept,
        keeps_older,
        falsified_older,
        alarms_older,
        best,
        confirmed,
        notes_from,
    })
}

/// `s` with its first letter in capitals (a sentence that starts a callout).
fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `<brief>-<run id>`: the run note's name.
pub(crate) fn run_note(brief: &str, run_id: &str) -> String {
    format!("{brief}-{run_id}")
}

/// `<brief>-<run id>-iter-NNN`: a kept iteration's note.
pub(crate) fn iteration_note(brief: &str, run_id: &str, iteration: u32) -> String {
    format!("{brief}-{run_id}-iter-{iteration:03}")
}

fn link(name: &str) -> String {
    format!("[[{name}]]")
}

#[derive(Serialize)]
struct IterationProps {
    tags: Vec<String>,
    date: String,
    aliases: Vec<String>,
    brief: String,
    run: String,
    run_id: String,
    iteration: u32,
    verdict: String,
    metric: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    gain_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ci_low_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ci_high_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pairs: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_median: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidate_median: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    builds_on: Vec<String>,
}

#[derive(Serialize)]
struct RunProps {
    tags: Vec<String>,
    date: String,
    aliases: Vec<String>,
    brief: String,
    run_id: String,
    status: String,
    metric: String,
    iterations: u32,
    keeps: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_median: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    best_median: Option<f64>,
    /// The headline (report/headline.rs): its kind, gain and interval in
    /// percent, and its words.
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    gain_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gain_ci_low_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gain_ci_high_pct: Option<f64>,
    result_text: String,
    start_commit: String,
    best_commit: String,
    earlier_runs: Vec<String>,
}

fn pct(x: f64) -> f64 {
    (x * 1000.0).round() / 10.0
}

fn round(x: f64) -> f64 {
    if x.is_finite() {
        let scale = 10f64.powi(6 - x.abs().log10().ceil().clamp(-6.0, 6.0) as i32);
        (x * scale).round() / scale
    } else {
        0.0
    }
}

fn front(props: &impl Serialize) -> Result<String> {
    let yaml = serde_saphyr::to_string(props)
        .map_err(|e| Error::Internal(format!("writing a note's properties: {e}")))?;
    Ok(format!("---\n{}\n---\n", yaml.trim_end()))
}

/// A line of agent or user text, safe inside a callout or a list item:
/// redacted, clipped, and unable to open a wikilink (`[[x]]` in a
/// hypothesis would be a link to a note nobody wrote).
fn one_line(s: &str) -> String {
    escape_links(&crate::text::clip::clip(
        &crate::text::redact::redact(s),
        300,
    ))
}

/// Agent text made inert in a note: no wikilink (`[[x]]`), no HTML (a
/// `<script>` or an `<a href>` the vault would render), no Markdown link
/// (`[x](file:///…)`), no bare `file:` URL to click.
fn escape_links(s: &str) -> String {
    s.replace("[[", "[\\[")
        .replace("]]", "]\\]")
        .replace('<', "&lt;")
        .replace("](", "]\\(")
        .replace("file:", "file&#58;")
}

/// The narrative of a kept iteration's note: this iteration's fresh one,
/// or the one its synthesizer wrote when it was kept.
fn narrative_of<'a>(input: &'a Input, r: &'a IterationRecord) -> Option<&'a str> {
    match input.narrative {
        Some((at, text)) if at == r.iteration => Some(text),
        _ => r.subagents.iter().find_map(|s| {
            s.narrative
                .as_deref()
                .filter(|_| s.role == crate::model::Role::Synthesize)
        }),
    }
}

/// The notes for `input`: (file name, content), the run note first.
pub(crate) fn render(input: &Input, earlier_runs: &[String]) -> Result<Vec<(String, String)>> {
    let b = input.brief;
    let run = run_note(b, input.run_id);
    let g = input.gathered;
    let keeps: Vec<&IterationRecord> = g
        .records
        .iter()
        .filter(|r| r.verdict == Verdict::Keep)
        .collect();
    let noted = |i: u32| g.kept.contains(&i);
    let mut out = Vec::new();
    let mut iteration_notes = Vec::new();
    for r in &keeps {
        let name = iteration_note(b, input.run_id, r.iteration);
        iteration_notes.push((r.iteration, name));
    }
    for r in keeps.iter().filter(|r| r.iteration >= g.notes_from) {
        let name = iteration_note(b, input.run_id, r.iteration);
        let m = r.measured.as_ref();
        let builds_on: Vec<String> = r
            .cites
            .iter()
            .filter(|c| **c != r.iteration && noted(**c))
            .map(|c| link(&iteration_note(b, input.run_id, *c)))
            .collect();
        let props = IterationProps {
            tags: vec!["ooda/keep".into(), format!("ooda/{b}")],
            date: r.finished.format("%Y-%m-%d").to_string(),
            // Unique across runs: a reset starts again at iteration 1.
            aliases: vec![format!(
                "{b} iteration {} of run {}",
                r.iteration, input.run_id
            )],
            brief: b.to_string(),
            run: link(&run),
            run_id: input.run_id.to_string(),
            iteration: r.iteration,
            verdict: r.verdict.as_str().to_string(),
            metric: input.metric.to_string(),
            gain_pct: m.map(|m| pct(m.effect)),
            ci_low_pct: m.map(|m| pct(m.ci.0)),
            ci_high_pct: m.map(|m| pct(m.ci.1)),
            p: m.map(|m| round(m.p)),
            pairs: m.map(|m| m.pairs.len() as u32),
            base_median: m.map(|m| round(m.base_median)),
            candidate_median: m.map(|m| round(m.cand_median)),
            commit: r.commit.clone(),
            builds_on: builds_on.clone(),
        };
        let mut s = front(&props)?;
        let _ = writeln!(
            s,
            "# {b} — iteration {}: {}\n",
            r.iteration,
            one_line(r.hypothesis.lines().next().unwrap_or("kept"))
        );
        if let Some(m) = m {
            let _ = writeln!(
                s,
                "> [!success] Kept: {} over {} pairs ({})\n> {} {} → {} (medians, base → candidate).\n",
                r.effect_text(),
                m.pairs.len(),
                m.p_text(),
                input.metric,
                crate::text::clip::fmt_num(m.base_median),
                crate::text::clip::fmt_num(m.cand_median)
            );
        }
        let _ = writeln!(s, "**Hypothesis.** {}\n", one_line(&r.hypothesis));
        if !r.change.trim().is_empty() {
            let _ = writeln!(s, "**Change.** {}\n", one_line(&r.change));
        }
        for p in &r.patterns {
            let _ = writeln!(s, "- **{}** — {}", one_line(&p.name), one_line(&p.lesson));
        }
        if !r.patterns.is_empty() {
            s.push('\n');
        }
        if let Some(text) = narrative_of(input, r) {
            let _ = writeln!(
                s,
                "## Narrative (synthesizer)\n\n{}\n",
                escape_links(&crate::text::redact::redact(text.trim()))
            );
        }
        let _ = write!(
            s,
            "Part of {} (run `{}`, started {}).",
            link(&run),
            input.run_id,
            input.started.format("%Y-%m-%d %H:%M UTC")
        );
        if !builds_on.is_empty() {
            let _ = write!(s, " Builds on {}.", builds_on.join(", "));
        }
        let _ = writeln!(
            s,
            "\n\nArchived as `iterations/{b}/{}`{}.",
            crate::archive::history::file_name(r.iteration),
            r.commit
                .as_deref()
                .map(|c| format!("; commit `{}`", crate::text::clip::short(c)))
                .unwrap_or_default()
        );
        out.push((name, s));
    }

    let base = crate::archive::history::baseline_value(&g.records);
    let (best_at, best) = g.best;
    let confirmed = g.confirmed.as_ref().map(|(it, c)| (*it, c));
    let earlier: Vec<String> = earlier_runs.iter().map(|n| link(n)).collect();
    let status = match input.stop {
        Some(st) => format!("stopped: {}", st.reason.as_str()),
        None => "running".into(),
    };
    let props = RunProps {
        tags: vec!["ooda/run".into(), format!("ooda/{b}")],
        date: input.started.format("%Y-%m-%d").to_string(),
        aliases: vec![format!(
            "{b} run {} ({})",
            input.started.format("%Y-%m-%d %H:%M"),
            input.run_id
        )],
        brief: b.to_string(),
        run_id: input.run_id.to_string(),
        status: status.clone(),
        metric: input.metric.to_string(),
        iterations: g.iterations,
        keeps: g.kept.len() as u32,
        baseline_median: base.map(round),
        best_median: best.is_finite().then(|| round(best)),
        result: g.headline.kind(),
        gain_pct: g.headline.effect().map(|(e, _)| pct(e)),
        gain_ci_low_pct: g.headline.effect().and_then(|(_, ci)| ci).map(|c| pct(c.0)),
        gain_ci_high_pct: g.headline.effect().and_then(|(_, ci)| ci).map(|c| pct(c.1)),
        result_text: g.headline.short(),
        start_commit: input.start_commit.to_string(),
        best_commit: input.best_commit.to_string(),
        earlier_runs: earlier.clone(),
    };
    let mut s = front(&props)?;
    let _ = writeln!(
        s,
        "# {b} — run of {}\n",
        input.started.format("%Y-%m-%d %H:%M UTC")
    );
    let _ = writeln!(s, "Status: **{status}**.\n");
    let callout = match (&g.headline, confirmed) {
        (h, Some((_, c))) if c.ci.0 > 0.0 => {
            format!("> [!success] {}, {}.", cap(&h.sentence()), c.p_text())
        }
        (h, Some((_, c))) => format!("> [!warning] {}, {}.", cap(&h.sentence()), c.p_text()),
        (h, None) => format!("> [!note] {}.", cap(&h.sentence())),
    };
    let _ = writeln!(s, "{callout}\n");
    if let Some(base) = base {
        // Medians of different iterations, measured apart: shown with
        // where they come from, never compared.
        let when = |i: u32| {
            g.records
                .iter()
                .find(|r| r.iteration == i)
                .map(|r| format!(", measured {}", r.finished.format("%Y-%m-%d %H:%M UTC")))
                .unwrap_or_default()
        };
        let _ = writeln!(
            s,
            "{} medians: baseline {}{}; best {} ({}; its own runs{}). Measured apart, they are not compared: the result above is.\n",
            input.metric,
            crate::text::clip::fmt_num(base),
            when(0),
            crate::text::clip::fmt_num(best),
            best_at
                .map(|i| format!("iteration {i}"))
                .unwrap_or_else(|| "the baseline".into()),
            best_at.map(when).unwrap_or_default()
        );
    }
    let _ = writeln!(s, "## Kept\n");
    if iteration_notes.is_empty() {
        let _ = writeln!(s, "Nothing kept yet.\n");
    } else {
        if g.keeps_older > 0 {
            let _ = writeln!(
                s,
                "{} earlier keeps have their notes in this folder; the newest {}:\n",
                g.keeps_older,
                iteration_notes.len()
            );
        }
        for (i, name) in &iteration_notes {
            let r = keeps.iter().find(|r| r.iteration == *i).expect("a keep");
            let _ = writeln!(
                s,
                "- {} — {} — {}",
                link(name),
                r.effect_text(),
                one_line(r.hypothesis.lines().next().unwrap_or(""))
            );
        }
        s.push('\n');
    }
    let falsified: Vec<&IterationRecord> = g.records.iter().filter(|r| r.falsifies()).collect();
    if !falsified.is_empty() {
        let _ = writeln!(s, "> [!failure] Falsified directions");
        if g.falsified_older > 0 {
            let _ = writeln!(
                s,
                "> - {} earlier ones are in `iterations/{b}/falsified.md`; the newest {}:",
                g.falsified_older,
                falsified.len()
            );
        }
        for r in &falsified {
            let what = r.falsified_text().unwrap_or(&r.hypothesis);
            let _ = writeln!(
                s,
                "> - iteration {} ({}): {}",
                r.iteration,
                r.effect_text(),
                one_line(what)
            );
        }
        s.push('\n');
    }
    let alarms: Vec<(u32, &crate::model::Alarm)> = g
        .records
        .iter()
        .flat_map(|r| r.alarms.iter().map(move |a| (r.iteration, a)))
        .collect();
    if !alarms.is_empty() {
        let _ = writeln!(s, "> [!warning] Red lights and warnings");
        if g.alarms_older > 0 {
            let _ = writeln!(
                s,
                "> - {} earlier iterations raised alarms too (their files say which); the newest:",
                g.alarms_older
            );
        }
        for (i, a) in &alarms {
            let level = if a.level == Level::Red {
                "RED"
            } else {
                "YELLOW"
            };
            let _ = writeln!(
                s,
                "> - iteration {i}: {level} {} — {}",
                a.kind,
                one_line(&a.evidence)
            );
        }
        s.push('\n');
    }
    if let Some(st) = input.stop {
        let _ = writeln!(
            s,
            "## Stop\n\nAfter iteration {}: **{}** — {}\n",
            st.iteration,
            st.reason.as_str(),
            one_line(&st.detail)
        );
    }
    if !earlier.is_empty() {
        let _ = writeln!(s, "## Earlier runs\n");
        for l in &earlier {
            let _ = writeln!(s, "- {l}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "The full record: `iterations/{b}/summary.md`.");
    out.insert(0, (run, s));
    Ok(out)
}

/// The run notes of earlier runs of `brief` in `dir`, oldest first.
pub(crate) fn earlier_runs(dir: &Path, brief: &str, run_id: &str) -> Vec<String> {
    let mine = run_note(brief, run_id);
    let prefix = format!("{brief}-");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".md")?.to_string();
            (stem.starts_with(&prefix) && !stem.contains("-iter-") && stem != mine).then_some(stem)
        })
        .collect();
    out.sort();
    out
}

/// Writes the notes of `input` into `<root>/<notes_dir>/<brief>/`; returns
/// the files written, relative to `root`.
pub(crate) fn write(root: &Path, notes_dir: &str, input: &Input) -> Result<Vec<PathBuf>> {
    let dir = root.join(notes_dir).join(input.brief);
    crate::atomic::create_dir_all(&dir)?;
    let earlier = earlier_runs(&dir, input.brief, input.run_id);
    let mut written = Vec::new();
    for (name, text) in render(input, &earlier)? {
        let path = dir.join(format!("{name}.md"));
        // Everything a note holds is on disk for good: redacted as a whole.
        let text = crate::text::redact::redact(&text);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            crate::atomic::write_atomic(&path, text.as_bytes())?;
        }
        written.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
    }
    Ok(written)
}

/// After `ooda reset` moved the Brief's archive to `aside` (or deleted
/// it): the notes of the run that was reset still name files under
/// `iterations/<brief>/`, where the next run writes its own iterations. Each
/// such note gets those paths pointed at the archive's new place and a
/// callout saying the run was reset; the notes stay where they are, under
/// their run-unique names, so every link to them still resolves. When the
/// archive was deleted, the paths name the folder it would have been moved
/// to (which does not exist), never the next run's. A note marked by an
/// earlier reset is never marked again. Returns the notes changed,
/// relative to `root`.
pub(crate) fn mark_reset(
    root: &Path,
    notes_dir: &str,
    brief: &str,
    aside: &str,
    deleted: bool,
    when: &str,
    branch: &str,
) -> Result<Vec<PathBuf>> {
    let dir = root.join(notes_dir).join(brief);
    let here = format!("iterations/{brief}/");
    let pattern = regex::Regex::new(&format!(r"(^|[^A-Za-z0-9_./-]){}", regex::escape(&here)))
        .map_err(|e| Error::Input(format!("{brief}: {e}")))?;
    let mut changed = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(changed);
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| s.to_string_lossy().starts_with(&format!("{brief}-")))
        })
        .collect();
    paths.sort();
    for path in paths {
        // A symlink planted in the vault is not followed.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !pattern.is_match(&text) || text.contains("> [!warning] Reset\n") {
            continue;
        }
        let moved = pattern
            .replace_all(&text, |c: &regex::Captures| {
                format!("{}iterations/{aside}/", &c[1])
            })
            .into_owned();
        let whereto = match deleted {
            false => format!("its archive is now `iterations/{aside}/`"),
            true => format!(
                "its archive was deleted (`--discard-archive`; the paths below name `iterations/{aside}/`, where it would have been moved)"
            ),
        };
        let callout = format!(
            "> [!warning] Reset\n> This run was reset on {when}: {whereto}, and branch `{branch}` was deleted; its commits are kept under `refs/ooda/`. The next run of `{brief}` starts a new archive in its place.\n\n"
        );
        // After the front matter, so Obsidian still reads the properties.
        let body_at = moved
            .strip_prefix("---\n")
            .and_then(|rest| rest.find("\n---\n"))
            .map(|i| 4 + i + 5)
            .unwrap_or(0);
        let note = format!("{}{callout}{}", &moved[..body_at], &moved[body_at..]);
        crate::atomic::write_atomic(&path, note.as_bytes())?;
        changed.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
    }
    Ok(changed)
}

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
    let gathered = gather(history, rec, t.brief.metric.direction, &state.best_commit)?;
    let gathered = &gathered;
    let main_name = agent.agent_name();
    fn input<'a>(
        t: &'a Step,
        state: &'a State,
        gathered: &'a Gathered,
        stop: Option<&'a Stop>,
        narrative: Option<(u32, &'a str)>,
    ) -> Input<'a> {
        Input {
            brief: &t.brief.name,
            metric: &t.brief.metric.name,
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
            let agent = dispatch::caller(t, def, agent);
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
                let written = write(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_in_a_note_is_inert() {
        let s = escape_links(
            "see [[Secret]] <script>alert(1)</script> [x](file:///etc/passwd) file:///home",
        );
        assert!(!s.contains("[[") && !s.contains("<script") && !s.contains("](file"));
        assert!(!s.contains("file:"), "{s}");
    }

    #[test]
    fn a_reset_marks_its_run_s_notes_once_and_leaves_other_briefs_alone() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("notes/b");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(root.path().join("notes/bb")).unwrap();
        let note = "---\ntags:\n- ooda/keep\n---\n# b\n\nArchived as `iterations/b/iter-001.md`; see also `iterations/bb/iter-001.md`.\n";
        std::fs::write(dir.join("b-r1-iter-001.md"), note).unwrap();
        std::fs::write(
            root.path().join("notes/bb/bb-r1.md"),
            "Archived as `iterations/bb/x.md`.\n",
        )
        .unwrap();
        let changed = mark_reset(
            root.path(),
            "notes",
            "b",
            "b.reset-1",
            false,
            "today",
            "ooda/b",
        )
        .unwrap();
        assert_eq!(changed, [PathBuf::from("notes/b/b-r1-iter-001.md")]);
        let text = std::fs::read_to_string(dir.join("b-r1-iter-001.md")).unwrap();
        assert!(
            text.starts_with("---\ntags:\n- ooda/keep\n---\n> [!warning] Reset"),
            "{text}"
        );
        assert!(
            text.contains("`iterations/b.reset-1/iter-001.md`"),
            "{text}"
        );
        // Another Brief whose name starts the same is not this one.
        assert!(text.contains("`iterations/bb/iter-001.md`"), "{text}");
        // A second reset finds nothing of its own to mark.
        let again = mark_reset(
            root.path(),
            "notes",
            "b",
            "b.reset-2",
            false,
            "later",
            "ooda/b",
        )
        .unwrap();
        assert!(again.is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.join("b-r1-iter-001.md")).unwrap(),
            text
        );
        // A deleted archive: said once.
        std::fs::write(
            dir.join("b-r2.md"),
            "Full record: `iterations/b/summary.md`.\n",
        )
        .unwrap();
        for _ in 0..2 {
            mark_reset(
                root.path(),
                "notes",
                "b",
                "b.reset-3",
                true,
                "now",
                "ooda/b",
            )
            .unwrap();
        }
        let text = std::fs::read_to_string(dir.join("b-r2.md")).unwrap();
        assert_eq!(text.matches("[!warning] Reset").count(), 1, "{text}");
        assert!(text.contains("was deleted"), "{text}");
        assert!(!text.contains("`iterations/b/"), "{text}");
        assert_eq!(
            std::fs::read_to_string(root.path().join("notes/bb/bb-r1.md")).unwrap(),
            "Archived as `iterations/bb/x.md`.\n"
        );
    }
}
