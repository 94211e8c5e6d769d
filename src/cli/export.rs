//! `ooda export BRIEF --otlp FILE`: the run as OpenTelemetry spans.

use std::path::Path;

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;

pub(crate) fn run(g: &Globals, brief: &str, file: &Path, one_line: bool) -> Result<Exit> {
    let (_, dir, runs) = super::trace::runs(g, brief)?;
    if file != Path::new("-") {
        refuse_target(file, &dir)?;
    }
    let mut text = String::new();
    let mut spans = 0;
    for run in &runs {
        spans += run.walk().len();
        for line in crate::report::otlp::lines(run, one_line) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    if file == Path::new("-") {
        out(&text)?;
        return Ok(Exit::Ok);
    }
    crate::atomic::write_atomic(file, text.as_bytes())?;
    if g.json {
        let doc = serde_json::json!({
            "file": file.display().to_string(),
            "spans": spans,
            "traces": runs.len(),
            "lines": text.lines().count(),
        });
        out(&format!("{doc}\n"))?;
    } else if !g.quiet {
        let how = match one_line {
            true => "open it in Jaeger's UI (Search → Upload JSON)",
            false => {
                "send it to a collector, or open it in Jaeger's UI (Search → Upload JSON; write it with --one-line if your Jaeger reads one JSON document per file)"
            }
        };
        eprintln!(
            "wrote {} ({} span(s), {} trace(s)): {how}",
            file.display(),
            spans,
            runs.len()
        );
    }
    Ok(Exit::Ok)
}

/// An export written over an archive would replace the very log it was
/// made from (or an iteration file): nothing archived may be lost, so a
/// target inside `iterations/` or `.ooda/`, or a directory, is refused.
fn refuse_target(file: &Path, dir: &Path) -> Result<()> {
    if file.is_dir() {
        return Err(Error::Input(format!(
            "{}: is a directory; --otlp takes a file to write (e.g. --otlp night.otlp.jsonl) or - for stdout",
            file.display()
        )));
    }
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let Ok(parent) = parent.canonicalize() else {
        return Err(Error::Input(format!(
            "{}: the folder {} does not exist; create it or write the export elsewhere",
            file.display(),
            parent.display()
        )));
    };
    // Every Brief's archive (`iterations/`) and ooda's own folder.
    let iterations = dir.parent().unwrap_or(dir);
    let ours = iterations.parent().map(|root| root.join(".ooda"));
    for guarded in std::iter::once(iterations.to_path_buf()).chain(ours) {
        if let Ok(g) = guarded.canonicalize()
            && parent.starts_with(&g)
        {
            return Err(Error::Input(format!(
                "{}: is inside {}, where ooda keeps the archives and its worktrees; writing there could replace a log or an iteration file. Write the export elsewhere (e.g. --otlp night.otlp.jsonl)",
                file.display(),
                guarded.display()
            )));
        }
    }
    // Over an earlier export, yes; over anything else (a Brief, a config,
    // a source file), never.
    if file.exists() {
        let not_ours = |why: &str| {
            Error::Input(format!(
                "{}: {why}; ooda writes over an earlier export only. Pick a new file (e.g. --otlp night.otlp.jsonl) or remove this one first",
                file.display()
            ))
        };
        // A FIFO or a device would block or be written to for good.
        if !std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
            return Err(not_ours("exists and is not a regular file"));
        }
        let mut head = [0u8; 32];
        let n = std::fs::File::open(file)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .map_err(|e| not_ours(&format!("exists and cannot be read ({e})")))?;
        let text = String::from_utf8_lossy(&head[..n]);
        if !(n == 0 || text.trim_start().starts_with("{\"resourceSpans\"")) {
            return Err(not_ours("exists and is not an OTLP export"));
        }
    }
    Ok(())
}
