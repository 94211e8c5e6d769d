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
        for line in crate::otlp::lines(run, one_line) {
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

/// An export written over the archive would replace the very log it was
/// made from (or an iteration file): nothing archived may be lost, so a
/// target inside the Brief's iterations folder, or a directory, is refused.
fn refuse_target(file: &Path, dir: &Path) -> Result<()> {
    if file.is_dir() {
        return Err(Error::Input(format!(
            "{}: is a directory; --otlp takes a file to write (e.g. --otlp {}/night.otlp.jsonl) or - for stdout",
            file.display(),
            file.display().to_string().trim_end_matches('/')
        )));
    }
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let (Ok(parent), Ok(archive)) = (parent.canonicalize(), dir.canonicalize()) else {
        return Ok(());
    };
    if parent.starts_with(&archive) {
        return Err(Error::Input(format!(
            "{}: is inside the Brief's archive {}; writing there could replace its log or an iteration file. Write the export elsewhere (e.g. --otlp night.otlp.jsonl)",
            file.display(),
            dir.display()
        )));
    }
    Ok(())
}
