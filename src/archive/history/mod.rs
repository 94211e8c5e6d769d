//! The archive: one `iter-NNN.md` per iteration.
//!
//! Each file is Markdown for humans with YAML front matter holding every
//! structured fact, and the front matter is the source of truth: `state.json`
//! can be deleted and rebuilt from these files plus git. The runner renders
//! Data and Decision from its own numbers; an agent only contributes prose
//! (patterns, lessons, narrative) that is labelled as such.

use crate::text::clip::fmt_num;
use crate::text::clip::short;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event as MdEvent, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use crate::atomic::write_atomic;
use crate::brief::points;
use crate::error::{Error, Result};
use crate::model::{AgentCall, GuardResult};
use crate::text::clip::clip;

pub use crate::model::{IterationRecord, Prediction, Verdict};
pub(crate) use index::LoadStats;

pub(crate) mod axis;
pub(crate) mod fact;
pub(crate) mod facts;
pub(crate) mod index;
pub(crate) mod ledger;
pub(crate) mod synthetic;
pub(crate) mod view;

pub(crate) use view::{History, View};

// Queries over the archive that reports, prompts and decisions share.

/// The current best as the summary states it: the keep that made
/// `best_commit` (its iteration and candidate median), or the baseline when
/// the base is the start commit (nothing kept, or a divergence rollback to
/// the start). After a rollback to an earlier keep, that keep.
pub(crate) fn best_of(history: &[IterationRecord], best_commit: &str) -> (Option<u32>, f64) {
    history
        .iter()
        .rev()
        .find(|r| r.verdict == Verdict::Keep && r.commit.as_deref() == Some(best_commit))
        .and_then(|r| {
            r.measured
                .as_ref()
                .map(|m| (Some(r.iteration), m.cand_median))
        })
        .unwrap_or_else(|| (None, baseline_value(history).unwrap_or(f64::NAN)))
}

/// The most recent confirmation test, with the iteration it followed.
pub(crate) fn latest_confirmation(
    history: &[IterationRecord],
) -> Option<(u32, &crate::model::Confirmation)> {
    history
        .iter()
        .rev()
        .find_map(|r| r.confirmation.as_ref().map(|c| (r.iteration, c)))
}

/// The latest confirmation test of `best_commit` (the current best), with
/// the iteration it ran after: a confirmation of an earlier best (before a
/// keep, or an anchor test of a tip that was rolled back) does not count.
pub(crate) fn confirmation_of<'a>(
    history: &'a [IterationRecord],
    best_commit: &str,
) -> Option<(u32, &'a crate::model::Confirmation)> {
    history.iter().rev().find_map(|r| {
        r.confirmation
            .as_ref()
            .filter(|c| c.best == best_commit)
            .map(|c| (r.iteration, c))
    })
}

pub(crate) fn baseline_value(history: &[IterationRecord]) -> Option<f64> {
    history
        .first()
        .and_then(|r| r.calibration.as_ref())
        .map(|c| c.median)
}

pub(crate) fn file_name(iteration: u32) -> String {
    super::layout::Layout::iteration_name(iteration)
}

pub fn path_of(dir: &Path, iteration: u32) -> PathBuf {
    super::layout::Layout::of(dir).iteration(iteration)
}

/// Everything a rendered iteration file shows besides the record itself.
pub struct RenderContext<'a> {
    pub goal: &'a str,
    pub metric: &'a str,
    pub direction_word: &'a str,
}

pub(crate) fn render(rec: &IterationRecord, ctx: &RenderContext) -> Result<String> {
    let yaml = serde_saphyr::to_string(rec)
        .map_err(|e| Error::Internal(format!("serializing iteration {}: {e}", rec.iteration)))?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "---\n{}---",
        yaml.trim_end_matches('\n').to_string() + "\n"
    );
    if rec.verdict == Verdict::Baseline {
        render_baseline(&mut s, rec, ctx);
        return Ok(s);
    }
    let _ = writeln!(
        s,
        "# Iteration {} — {}\n",
        rec.iteration,
        rec.verdict_text().to_uppercase()
    );
    let _ = writeln!(s, "## Goal\n\n{}\n", first_paragraph(ctx.goal));
    let _ = writeln!(
        s,
        "## Plan\n\n**Hypothesis.** {}\n",
        if rec.hypothesis.is_empty() {
            "(none: no plan was accepted)"
        } else {
            &rec.hypothesis
        }
    );
    if let Some(p) = &rec.predicted {
        let _ = writeln!(
            s,
            "Predicted effect: {} ({} is {}).\n",
            crate::text::number::predicted(p.effect, p.sd),
            ctx.metric,
            ctx.direction_word
        );
    }
    if !rec.cites.is_empty() {
        let links: Vec<String> = rec
            .cites
            .iter()
            .map(|c| format!("[{c}]({})", file_name(*c)))
            .collect();
        let _ = writeln!(s, "Builds on: {}.\n", links.join(", "));
    }
    let _ = writeln!(
        s,
        "## Change\n\n{}\n",
        if rec.change.is_empty() {
            "(none described)"
        } else {
            &rec.change
        }
    );
    if !rec.knobs.is_empty() {
        let _ = writeln!(s, "Knobs: `{}`\n", points::key(&rec.knobs));
    }
    if !rec.changed_paths.is_empty() {
        let _ = writeln!(
            s,
            "Changed paths: {}\n",
            rec.changed_paths
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(a) = &rec.artifact {
        let _ = writeln!(s, "Discarded diff: [{a}]({a})\n");
    }
    if let Some(c) = &rec.commit {
        let _ = writeln!(s, "Kept as commit `{}`.\n", short(c));
    }
    let _ = writeln!(s, "## Data\n");
    guard_table(&mut s, &rec.guards);
    if let Some(m) = &rec.measured {
        let _ = writeln!(
            s,
            "| pair | order | base | candidate | log ratio |\n|---|---|---|---|---|"
        );
        for (i, p) in m.pairs.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:+.4} |",
                i + 1,
                if p.cand_first {
                    "cand, base"
                } else {
                    "base, cand"
                },
                fmt_num(p.base),
                fmt_num(p.cand),
                p.d
            );
        }
        s.push('\n');
    }
    if let Some(w) = &rec.run_writes {
        let list = |v: &[String]| {
            if v.len() >= crate::model::RunWrites::SHOWN {
                format!("{}, …", v.join(", "))
            } else {
                v.join(", ")
            }
        };
        let _ = writeln!(
            s,
            "Files the timed runs wrote (ignored folders included):\n"
        );
        if !w.base.is_empty() {
            let _ = writeln!(s, "- base: {}", list(&w.base));
        }
        if !w.cand.is_empty() {
            let _ = writeln!(s, "- candidate: {}", list(&w.cand));
        }
        if !w.carried.is_empty() {
            let _ = writeln!(
                s,
                "- **left by one candidate run for the next** (no base run wrote them): {}",
                list(&w.carried)
            );
        }
        if w.removed {
            let _ = writeln!(
                s,
                "- what each run created was removed after it (metric.fresh_outputs)"
            );
        }
        if w.unwatched {
            let _ = writeln!(
                s,
                "- not watched: a worktree holds more than 200,000 files, so what the runs wrote (a cache between runs too) is unknown"
            );
        }
        s.push('\n');
    }
    if let Some(out) = &rec.failure_output {
        let _ = writeln!(
            s,
            "Output of the failure (compressed):\n\n```text\n{}\n```\n",
            out.trim_end()
        );
    }
    if rec.measured.is_none() && rec.guards.is_empty() && rec.failure_output.is_none() {
        let _ = writeln!(s, "Nothing was measured.\n");
    }
    let _ = writeln!(
        s,
        "## Decision\n\n**{}** — {}\n",
        rec.verdict_text(),
        rec.reason
    );
    if let Some(m) = &rec.measured {
        let _ = writeln!(s, "| | value |\n|---|---|");
        let _ = writeln!(s, "| pairs | {} |", m.pairs.len());
        let _ = writeln!(s, "| base median | {} |", fmt_num(m.base_median));
        let _ = writeln!(s, "| candidate median | {} |", fmt_num(m.cand_median));
        let _ = writeln!(s, "| effect (95% CI) | {} |", rec.effect_text());
        let _ = writeln!(s, "| p (one-sided) | {:.4} |", m.p);
        let _ = writeln!(s, "| looks | {} |", m.looks);
        let _ = writeln!(
            s,
            "| minimum detectable gain θ₁ | {:.2}% |",
            m.theta1 * 100.0
        );
        let _ = writeln!(s, "| rule | {} |\n", m.rule);
    }
    if let Some(simple) = &rec.simplification {
        let _ = writeln!(
            s,
            "## Simplification\n\n**{}** — {}.\n",
            if simple.accepted {
                "committed"
            } else {
                "not taken"
            },
            simple.reason
        );
        let _ = writeln!(
            s,
            "| | value |\n|---|---|\n| changed lines, kept | {} |\n| changed lines, simplified | {} |",
            simple.lines_before, simple.lines_after
        );
        if let Some(t) = &simple.test {
            let _ = writeln!(
                s,
                "| simplified vs kept (95% CI) | {} |\n| non-inferiority margin | −{:.1}% |\n| p (one-sided) | {:.4} |\n| pairs | {} |",
                crate::text::number::effect_ci(t.effect, t.ci),
                t.margin * 100.0,
                t.p,
                t.pairs
            );
        }
        s.push('\n');
        if !simple.reports.is_empty() {
            s.push_str(&render_subagents(&simple.reports).replace("## Subagents", "Reviewed as:"));
        }
    }
    s.push_str(&render_subagents(&rec.subagents));
    s.push_str(&render_calls(&rec.agent_calls));
    let _ = writeln!(s, "## Named patterns\n");
    if rec.patterns.is_empty() {
        let _ = writeln!(s, "None.\n");
    }
    for p in &rec.patterns {
        let _ = writeln!(s, "- **{}** — {}", p.name, p.lesson);
    }
    if !rec.patterns.is_empty() {
        s.push('\n');
    }
    if let Some(f) = rec.falsified_text() {
        let _ = writeln!(s, "## Falsified\n\n{f}\n");
    }
    if let Some(n) = &rec.narrative {
        let _ = writeln!(s, "## Narrative (agent)\n\n{n}\n");
    }
    if let Some(c) = &rec.confirmation {
        let _ = writeln!(
            s,
            "## Confirmation\n\nStart of run `{}` against the current best `{}`: {} (start median {}, best median {}).\n",
            short(&c.start),
            short(&c.best),
            c.why,
            fmt_num(c.start_median),
            fmt_num(c.best_median)
        );
    }
    if !rec.alarms.is_empty() {
        let _ = writeln!(s, "## Red lights and warnings\n");
        for a in &rec.alarms {
            let level = match a.level {
                crate::model::Level::Red => "RED",
                crate::model::Level::Yellow => "YELLOW",
            };
            let _ = writeln!(s, "- **{level} {}** — {}", a.kind, a.evidence);
        }
        s.push('\n');
    }
    if let Some(stop) = &rec.stop {
        let _ = writeln!(
            s,
            "## Stop\n\nThe run stopped here: **{}** — {}\n",
            stop.reason.as_str(),
            stop.detail
        );
    }
    if let Some(a) = &rec.acknowledged {
        let _ = writeln!(s, "## Acknowledged\n\n{a}\n");
    }
    let _ = writeln!(
        s,
        "## Next\n\n{}",
        rec.next.as_deref().unwrap_or("Continue the search.")
    );
    Ok(s)
}

fn render_baseline(s: &mut String, rec: &IterationRecord, ctx: &RenderContext) {
    let _ = writeln!(s, "# Iteration 0 — baseline\n");
    let _ = writeln!(s, "## Goal\n\n{}\n", first_paragraph(ctx.goal));
    let _ = writeln!(
        s,
        "## Plan\n\nMeasure the starting commit `{}` and calibrate the noise with A/A pairs (the same tree on both sides).\n",
        short(&rec.base)
    );
    let _ = writeln!(s, "## Change\n\nNone: this is the reference.");
    if !rec.knobs.is_empty() {
        let _ = writeln!(s, "\nKnobs: `{}`", points::key(&rec.knobs));
    }
    let _ = writeln!(s, "\n## Data\n");
    guard_table(s, &rec.guards);
    if let Some(c) = &rec.calibration {
        let _ = writeln!(
            s,
            "| pair | base worktree | candidate worktree | log ratio |\n|---|---|---|---|"
        );
        for (i, p) in c.pairs.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:+.4} |",
                i + 1,
                fmt_num(p.base),
                fmt_num(p.cand),
                p.d
            );
        }
        let _ = writeln!(
            s,
            "\n## Decision\n\nBaseline {} = {} (median of {} runs).\n",
            ctx.metric,
            fmt_num(c.median),
            c.pairs.len() * 2
        );
        let _ = writeln!(s, "| | value |\n|---|---|");
        let _ = writeln!(
            s,
            "| run-to-run spread (sd of log values) | {:.2}% |",
            c.run_sd * 100.0
        );
        let _ = writeln!(
            s,
            "| A/A pair noise (sd of log ratios) | {:.2}% |",
            c.noise_sd * 100.0
        );
        let _ = writeln!(s, "| A/A mean log ratio | {:+.4} |", c.mean_d);
        let _ = writeln!(
            s,
            "| minimum detectable gain θ₁ | {:.2}% |",
            c.theta1 * 100.0
        );
        let _ = writeln!(
            s,
            "\nGains smaller than θ₁ are mostly discarded as noise by this setup; a gain of about θ₁ is kept about as often as not, one of twice θ₁ nearly always (docs/statistics.md).\n"
        );
        if let Some(a) = &c.advice {
            let _ = writeln!(s, "**Advice.** {a}\n");
        }
    }
    let _ = writeln!(
        s,
        "## Named patterns\n\nNone yet.\n\n## Next\n\n{}",
        rec.next.as_deref().unwrap_or("Start the search.")
    );
}

fn cost_text(c: Option<f64>) -> String {
    c.map(crate::validate::units::format_usd)
        .unwrap_or_else(|| "—".into())
}

/// The subagents of an iteration: who ran, how it ended, what it found,
/// and a link to its archived report.
pub(crate) fn render_subagents(reports: &[crate::model::SubagentReport]) -> String {
    use crate::model::ReviewVerdict;
    if reports.is_empty() {
        return String::new();
    }
    let mut s = String::from("## Subagents\n\n");
    for r in reports {
        let what = match r.verdict {
            Some(ReviewVerdict::Approve) => "approved".to_string(),
            Some(ReviewVerdict::Block) => "**blocked**".to_string(),
            None => r.outcome.as_str().replace('_', " "),
        };
        let link = r
            .report
            .as_deref()
            .map(|p| format!(" — [report]({p})"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "- **{}** ({}, {}): {what} in {:.1}s{}{link}",
            r.name,
            r.role,
            r.driver,
            r.seconds,
            if r.suspicious {
                "; flagged **suspicious** (the change may game the benchmark)"
            } else {
                ""
            }
        );
        if let Some(p) = &r.problem {
            let _ = writeln!(s, "  - {p}");
        }
        for f in &r.findings {
            let _ = writeln!(s, "  - {}", f.text());
        }
    }
    s.push('\n');
    s
}

/// The "Agent calls" section of an iteration file: one row per call.
pub(crate) fn render_calls(calls: &[AgentCall]) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "## Agent calls\n\n| phase | try | outcome | exit | seconds | tokens in / out (cached) | cost | problem |\n|---|---|---|---|---|---|---|---|\n",
    );
    for c in calls {
        let phase = match &c.output {
            Some(o) => format!("[{}]({o})", c.phase.as_str()),
            None => c.phase.as_str().to_string(),
        };
        let tokens = if c.usage.total() == 0 {
            "—".to_string()
        } else {
            format!(
                "{} / {} ({})",
                c.usage.input, c.usage.output, c.usage.cached
            )
        };
        let _ = writeln!(
            s,
            "| {phase} | {} | {} | {} | {:.1} | {tokens} | {} | {} |",
            c.attempt,
            c.outcome.as_str(),
            c.exit_code
                .map(|e| e.to_string())
                .unwrap_or_else(|| "—".into()),
            c.seconds,
            cost_text(c.usage.cost_usd),
            call_notes(c)
        );
    }
    s.push('\n');
    s
}

/// The last cell of a call's row: its problem, what the tool warned about,
/// and how long the runner waited after it for an unavailable API.
fn call_notes(c: &AgentCall) -> String {
    let mut notes: Vec<String> = c.problem.iter().map(|p| clip(p, 200)).collect();
    notes.extend(
        c.warnings
            .iter()
            .map(|w| format!("warning: {}", clip(w, 160))),
    );
    if c.waited > 0.0 {
        notes.push(format!("then waited {:.0}s for the API", c.waited));
    }
    notes.join("; ").replace('|', "\\|")
}

fn guard_table(s: &mut String, guards: &[GuardResult]) {
    if guards.is_empty() {
        return;
    }
    let _ = writeln!(s, "| guard | result | seconds |\n|---|---|---|");
    for g in guards {
        let result = if g.ok { "pass" } else { "FAIL" };
        let _ = writeln!(
            s,
            "| `{}` | {result} | {:.1} |",
            g.command.replace('|', "\\|"),
            g.seconds
        );
    }
    s.push('\n');
}

fn first_paragraph(text: &str) -> String {
    text.split("\n\n").next().unwrap_or("").trim().to_string()
}

/// Extracts the YAML front matter of a Markdown file.
pub(crate) fn front_matter(text: &str) -> Option<String> {
    let parser = Parser::new_ext(text, Options::ENABLE_YAML_STYLE_METADATA_BLOCKS);
    let mut inside = false;
    let mut out = String::new();
    for ev in parser {
        match ev {
            MdEvent::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)) => inside = true,
            MdEvent::End(TagEnd::MetadataBlock(_)) => return Some(out),
            MdEvent::Text(t) if inside => out.push_str(&t),
            _ if !inside => return None,
            _ => {}
        }
    }
    None
}

pub(crate) fn parse(path: &Path, text: &str) -> Result<IterationRecord> {
    let yaml = front_matter(text).ok_or_else(|| Error::Corrupt {
        path: path.to_path_buf(),
        message: "no YAML front matter: the file must start with `---` (restore it from git or remove the file)".into(),
    })?;
    serde_saphyr::from_str::<IterationRecord>(&yaml).map_err(|e| Error::Corrupt {
        path: path.to_path_buf(),
        message: format!(
            "front matter does not parse: {e} (restore it from git: `git checkout -- {}`)",
            path.display()
        ),
    })
}

pub fn read(path: &Path) -> Result<IterationRecord> {
    let bytes = crate::atomic::read_file(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    parse_bytes(path, &bytes)
}

fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<IterationRecord> {
    let text = std::str::from_utf8(bytes).map_err(|e| not_utf8(path, bytes, &e))?;
    parse(path, text)
}

/// An iteration file that is not UTF-8 (an editor saved it in another
/// encoding, or it was damaged): where, and how to get it back.
fn not_utf8(path: &Path, bytes: &[u8], e: &std::str::Utf8Error) -> Error {
    let at = e.valid_up_to();
    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    Error::Corrupt {
        path: path.to_path_buf(),
        message: format!(
            "not UTF-8 text: the first invalid byte is at offset {at} (line {line}); re-save the file as UTF-8, or restore it from git: `git checkout -- {}`",
            path.display()
        ),
    }
}

/// Writes and validates an iteration file: the LEARN gate. The file is read
/// back and must parse to the same record before the iteration may end.
/// The LEARN gate: redacts the record's free text, writes the file, reads it
/// back and requires the exact same record. Returns the record as archived
/// (redacted), which is what the in-memory history must hold too.
pub fn write(dir: &Path, rec: &IterationRecord, ctx: &RenderContext) -> Result<IterationRecord> {
    write_sourced(dir, rec, ctx).map(|(r, _)| r)
}

/// [`write`], saying where the file is and where its index line went (the
/// facts table's source), with the index's new length.
pub(crate) fn write_sourced(
    dir: &Path,
    rec: &IterationRecord,
    ctx: &RenderContext,
) -> Result<(IterationRecord, Option<(fact::Source, u64)>)> {
    let rec = rec.redacted();
    let path = path_of(dir, rec.iteration);
    let text = render(&rec, ctx)?;
    write_atomic(&path, text.as_bytes())?;
    let back = read(&path)?;
    if back != rec {
        return Err(Error::Internal(format!(
            "{} did not read back as written (validation of the LEARN archive failed); please report this",
            path.display()
        )));
    }
    // The index is a cache: failing to append costs the next reader a
    // parse, never the iteration.
    let source = index::append(dir, &rec, &path, text.as_bytes())
        .ok()
        .flatten();
    Ok((rec, source))
}

/// All iteration files' records, in order, read through the index
/// (`index.jsonl`; a file whose line is missing, stale or damaged is
/// parsed). A gap in the numbering is reported, since it means someone
/// deleted part of the archive.
///
/// This reader never writes: it may run beside a loop whose agent step is
/// fenced (run/fence/), where a changed index would read as the agent's work.
/// The runner repairs the index when it opens the archive
/// ([`load_and_repair`]).
pub fn load(dir: &Path) -> Result<Vec<IterationRecord>> {
    load_with_stats(dir, false).map(|(h, _)| h)
}

/// [`load`] that also writes what it had to repair into the index (a
/// missing index built, stale lines replaced): only under the Brief's lock.
pub fn load_and_repair(dir: &Path) -> Result<Vec<IterationRecord>> {
    load_with_stats(dir, true).map(|(h, _)| h)
}

/// [`load`] or [`load_and_repair`], saying how much of it the index answered.
pub(crate) fn load_with_stats(
    dir: &Path,
    repair: bool,
) -> Result<(Vec<IterationRecord>, LoadStats)> {
    index::load(dir, &files(dir)?, repair)
}

/// Every iteration file parsed from its Markdown, the index left alone:
/// what [`load`] did before there was an index (the overhead benchmark
/// compares the two).
pub fn load_files(dir: &Path) -> Result<Vec<IterationRecord>> {
    files(dir)?
        .iter()
        .map(|(n, path)| {
            let bytes = crate::atomic::read_file(path)
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
            parse_numbered(path, *n, &bytes)
        })
        .collect()
}

/// The record of iteration file `n`, whose front matter must say `n`.
fn parse_numbered(path: &Path, n: u32, bytes: &[u8]) -> Result<IterationRecord> {
    let rec = parse_bytes(path, bytes)?;
    if rec.iteration != n {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            message: format!(
                "file name says iteration {n} but its front matter says {}",
                rec.iteration
            ),
        });
    }
    Ok(rec)
}

/// The iteration files of `dir`, numbered and in order, with no gap.
pub(crate) fn files(dir: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let mut numbered: Vec<(u32, PathBuf)> = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("reading {}", dir.display()), e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("iter-"))
            .and_then(|r| r.strip_suffix(".md"))
            .and_then(|n| n.parse::<u32>().ok())
        {
            numbered.push((n, entry.path()));
        }
    }
    numbered.sort();
    for (i, (n, path)) in numbered.iter().enumerate() {
        if *n as usize != i {
            return Err(Error::Corrupt {
                path: path.clone(),
                message: format!(
                    "iteration files are not numbered 0..{}: iteration {i} is missing (restore it from git)",
                    numbered.len()
                ),
            });
        }
    }
    Ok(numbered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brief::KnobValue;
    use crate::eval::Pair;
    use crate::model::{Comparison, Pattern};

    #[test]
    fn a_file_that_is_not_utf8_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("iter-003.md");
        std::fs::write(&path, b"---\niteration: 3\nreason: caf\xe9\n---\n").unwrap();
        let msg = read(&path).unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("{}: not UTF-8 text", path.display())),
            "{msg}"
        );
        assert!(msg.contains("offset 28 (line 3)"), "{msg}");
        assert!(msg.contains("re-save the file as UTF-8"), "{msg}");
    }

    fn ctx() -> RenderContext<'static> {
        RenderContext {
            goal: "Make it fast.\n\nMore text.",
            metric: "time_ms",
            direction_word: "lower is better",
        }
    }

    fn sample() -> IterationRecord {
        let mut r = IterationRecord::new(3, Verdict::Discard);
        r.hypothesis = "TILE 16 → 32: bigger tiles amortize loop overhead".into();
        r.knobs.insert("TILE".into(), KnobValue::Int(32));
        r.knobs.insert("ORDER".into(), KnobValue::Str("ikj".into()));
        r.predicted = Some(Prediction {
            effect: 0.05,
            sd: 0.03,
        });
        r.cites = vec![0, 2];
        r.measured = Some(Comparison {
            pairs: vec![Pair {
                base: 10.0,
                cand: 10.5,
                cand_first: true,
                d: (10.0f64 / 10.5).ln(),
            }],
            base_median: 10.0,
            cand_median: 10.5,
            effect: -0.05,
            ci: (-0.08, -0.02),
            p: 0.97,
            looks: 1,
            theta1: 0.02,
            alpha: 0.05,
            delta0: 0.0,
            rule: "paired t".into(),
            alpha_look: 0.018,
            s_h: 0.02,
            noise_changed: false,
            d_mean: -0.05,
            d_ci: (-0.08, -0.02),
            direction: None,
            seconds: None,
        });
        r.falsified = Some("TILE=32 is not faster than TILE=16".into());
        r.patterns = vec![Pattern {
            name: "tile ceiling".into(),
            lesson: "past 16 it hurts".into(),
        }];
        r.artifact = Some("artifacts/iter-003.diff".into());
        r
    }

    #[test]
    fn round_trip_through_markdown() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample();
        let written = write(dir.path(), &r, &ctx()).unwrap();
        assert_eq!(written, r, "nothing to redact in the sample");
        let path = path_of(dir.path(), r.iteration);
        let text = crate::atomic::read_string(&path).unwrap();
        for section in [
            "## Goal",
            "## Plan",
            "## Change",
            "## Data",
            "## Decision",
            "## Named patterns",
            "## Falsified",
            "## Next",
        ] {
            assert!(text.contains(section), "missing {section}:\n{text}");
        }
        assert_eq!(read(&path).unwrap(), r);
    }

    #[test]
    fn secrets_are_redacted_per_field_and_the_front_matter_survives() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = sample();
        r.knobs.insert("MAX_TOKEN".into(), KnobValue::Int(5));
        r.reason = "failed: API_KEY=sk-abcdefghijklmnopqrstuvwxyz123456".into();
        let written = write(dir.path(), &r, &ctx()).unwrap();
        assert!(!written.reason.contains("sk-abc"), "{}", written.reason);
        let back = read(&path_of(dir.path(), r.iteration)).unwrap();
        assert_eq!(back.knobs.get("MAX_TOKEN"), Some(&KnobValue::Int(5)));
        assert_eq!(back, written);
    }

    #[test]
    fn load_reports_gaps_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = sample();
        r.iteration = 0;
        write(dir.path(), &r, &ctx()).unwrap();
        r.iteration = 2;
        write(dir.path(), &r, &ctx()).unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("iteration 1 is missing"), "{err}");
        std::fs::write(dir.path().join("iter-001.md"), "no front matter").unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("iter-001.md") && err.contains("front matter"),
            "{err}"
        );
    }
}
