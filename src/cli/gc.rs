//! `ooda gc BRIEF [--dry-run]`: give back the disk a long-running Brief
//! piled up (what goes, and what never does, is in `src/gc.rs`).

use serde::Serialize;

use super::{Globals, out};
use crate::archive::gc::{self, Freed};
use crate::archive::lock::BriefLock;
use crate::error::Result;
use crate::exit::Exit;
use crate::project::Project;
use crate::workspace::Workspace;

#[derive(Serialize)]
struct Report {
    brief: String,
    dry_run: bool,
    /// Bytes removed; under `dry_run`, the bytes that would be.
    freed: u64,
    items: Vec<Freed>,
    /// What was left alone, and why.
    notes: Vec<String>,
    /// On disk once done: the archive and the worktrees.
    archive_bytes: u64,
    worktree_bytes: u64,
}

pub(crate) fn run(g: &Globals, brief: &str, dry_run: bool) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let b = project.load_brief(brief)?;
    let dir = project.iterations_dir(&b.name);
    let worktrees = project.worktrees_dir(&b.name);
    // No tick may measure in a worktree, or archive, while it is pruned.
    let _lock = dir.exists().then(|| BriefLock::acquire(&dir)).transpose()?;
    let history = if dir.exists() {
        crate::archive::history::load(&dir)?
    } else {
        Vec::new()
    };
    let act = |paths: &[std::path::PathBuf]| -> Result<u64> {
        if dry_run {
            Ok(paths.iter().map(|p| gc::disk_bytes(p)).sum())
        } else {
            gc::remove(paths)
        }
    };
    let mut items = Vec::new();
    let mut notes = Vec::new();

    let ws = Workspace::open(&project.root, &worktrees, &b.name)?.with_owned_file(&b.knobs_file);
    // An iteration interrupted after EXECUTE has its candidate in `cand`.
    let in_flight = matches!(crate::archive::state::peek(&dir), Ok(crate::archive::state::Loaded::Ok(s)) if s.current.is_some());
    if in_flight {
        notes.push(
            "an iteration is in flight: the candidate worktree (cand) was left as it is"
                .to_string(),
        );
    }
    let (outputs, unknown) = gc::worktree_outputs(&ws, in_flight)?;
    for name in unknown {
        // The folders a tick makes are made again; anything else is not ooda's.
        let fix = if crate::workspace::WORKTREES.contains(&name.as_str()) {
            "remove it: ooda makes it again when it needs it"
        } else {
            "ooda does not make it: remove it yourself if it is not yours"
        };
        notes.push(format!(
            "{} is not a worktree git knows of: left alone ({fix})",
            worktrees.join(name).display()
        ));
    }
    if !outputs.is_empty() {
        // Forgotten before anything goes: a kill halfway must not leave a
        // base that says it is set up.
        if !dry_run && outputs.iter().any(|(name, _)| name == "base") {
            ws.forget_base_setup()?;
        }
        let mut parts = Vec::new();
        let (mut paths, mut bytes) = (0, 0);
        for (name, list) in &outputs {
            let n = act(list)?;
            parts.push(format!("{name} {}", gc::human(n)));
            paths += list.len();
            bytes += n;
        }
        items.push(Freed {
            what: "worktree_outputs",
            paths,
            bytes,
            detail: parts.join(", "),
        });
    }

    if let Some(keep) = project.config.defaults.keep_artifacts {
        let facts = crate::archive::history::fact::Fact::all_of(&history);
        let old = gc::old_artifacts(&dir, &facts, keep, 0);
        if !old.is_empty() {
            let mut numbers: Vec<u32> = old
                .iter()
                .filter_map(|p| {
                    let name = p.file_name()?.to_str()?;
                    name.strip_prefix("iter-")?
                        .trim_end_matches(".diff")
                        .parse()
                        .ok()
                })
                .collect();
            numbers.dedup();
            items.push(Freed {
                what: "artifacts",
                paths: old.len(),
                bytes: act(&old)?,
                detail: format!(
                    "{} discarded iteration(s) older than the last {keep} (`defaults.keep_artifacts`): {}",
                    numbers.len(),
                    gc::ranges(&numbers)
                ),
            });
        }
    }

    let (stale, replayed) = gc::stale_replays(&dir)?;
    if !stale.is_empty() {
        let iterations: Vec<String> = replayed.iter().map(u32::to_string).collect();
        items.push(Freed {
            what: "replays",
            paths: stale.len(),
            bytes: act(&stale)?,
            detail: format!(
                "older replays of iteration(s) {} (each keeps its replay.json)",
                iterations.join(", ")
            ),
        });
    }

    // Measured afresh, and recorded for `ooda status`.
    let usage = crate::archive::disk::Usage::refresh(&project, &b.name);
    let report = Report {
        brief: b.name.clone(),
        dry_run,
        freed: items.iter().map(|i| i.bytes).sum(),
        items,
        notes,
        archive_bytes: usage.archive_bytes,
        worktree_bytes: usage.worktree_bytes,
    };
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ))?;
    } else if !g.quiet {
        out(&render(&report))?;
    }
    Ok(Exit::Ok)
}

fn render(r: &Report) -> String {
    let on_disk = format!(
        "{} on disk: archive {}, worktrees {}",
        gc::human(r.archive_bytes + r.worktree_bytes),
        gc::human(r.archive_bytes),
        gc::human(r.worktree_bytes)
    );
    let notes: String = r.notes.iter().map(|n| format!("  note: {n}\n")).collect();
    if r.items.is_empty() {
        return format!("{}: nothing to free ({on_disk})\n{notes}", r.brief);
    }
    let verb = if r.dry_run { "would free" } else { "freed" };
    let mut s = format!("{}: {verb} {}\n", r.brief, gc::human(r.freed));
    for i in &r.items {
        let what = match i.what {
            "worktree_outputs" => "build outputs in the worktrees",
            "artifacts" => "artifacts",
            _ => "stale replays",
        };
        s.push_str(&format!(
            "  {what}: {} in {} path(s) ({})\n",
            gc::human(i.bytes),
            i.paths,
            i.detail
        ));
    }
    s.push_str(&notes);
    if r.dry_run {
        s.push_str(&format!("  nothing was removed ({on_disk})\n"));
    } else {
        s.push_str(&format!("  now {on_disk}\n"));
    }
    s
}
