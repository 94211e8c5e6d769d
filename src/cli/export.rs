//! `ooda export BRIEF --otlp FILE`: the run as OpenTelemetry spans.

use std::path::Path;

use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;

pub(crate) fn run(g: &Globals, brief: &str, file: &Path, one_line: bool) -> Result<Exit> {
    let (_, _, runs) = super::trace::runs(g, brief)?;
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
    } else {
        crate::atomic::write_atomic(file, text.as_bytes())?;
        if !g.quiet {
            eprintln!(
                "wrote {} ({} span(s), {} trace(s)): open it in Jaeger's UI (Search → Upload JSON) or send it to a collector",
                file.display(),
                spans,
                runs.len()
            );
        }
    }
    Ok(Exit::Ok)
}
