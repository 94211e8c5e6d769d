//! `ooda export BRIEF --otlp FILE | --otlp-endpoint URL`: the run as
//! OpenTelemetry spans, written to a file or sent to a collector.
//!
//! Sending a stored night again is what a night needs when its collector
//! was down, or was set up only the next morning. The spans are the file
//! export's, batch for batch (the run's own span, then one request per
//! iteration), and their ids are derived from the log, so sending twice,
//! or resuming after a failure from the iteration that failed, leaves a
//! collector with one copy of each span.

use std::path::Path;
use std::time::Duration;

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::report::otlp::{Batch, Detail, Endpoint, PostError, Poster};
use crate::report::trace::{Kind, Node};

/// Where the spans go.
pub(crate) enum Target<'a> {
    File { path: &'a Path, one_line: bool },
    Collector { url: Option<&'a str>, gzip: bool },
}

/// Which iterations: both ends included, either open.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Range {
    pub from: Option<u32>,
    pub to: Option<u32>,
}

impl Range {
    /// `3`, `2..5` or `4..` (`..5` too).
    pub(crate) fn parse(text: &str) -> std::result::Result<Range, String> {
        let bad = || {
            format!(
                "--iterations {text}: expected an iteration (3) or a range with both ends included (2..5, 4.., ..5)"
            )
        };
        let num = |s: &str| -> std::result::Result<Option<u32>, String> {
            match s.trim() {
                "" => Ok(None),
                n => n.parse().map(Some).map_err(|_| bad()),
            }
        };
        let r = match text.split_once("..") {
            Some((a, b)) => Range {
                from: num(a)?,
                to: num(b.trim_start_matches('='))?,
            },
            None => {
                let n = num(text)?.ok_or_else(bad)?;
                Range {
                    from: Some(n),
                    to: Some(n),
                }
            }
        };
        if let (Some(a), Some(b)) = (r.from, r.to)
            && a > b
        {
            return Err(format!(
                "--iterations {text}: the range is empty ({a} is after {b})"
            ));
        }
        Ok(r)
    }

    fn contains(&self, n: u32) -> bool {
        self.from.is_none_or(|a| n >= a) && self.to.is_none_or(|b| n <= b)
    }
}

pub(crate) fn run(g: &Globals, brief: &str, target: Target, range: Range) -> Result<Exit> {
    let (name, dir, runs) = super::trace::runs(g, brief)?;
    let detail = Detail::from_env(&dir);
    match target {
        Target::File { path, one_line } => to_file(g, &dir, &runs, path, one_line, range, &detail),
        Target::Collector { url, gzip } => to_collector(g, &name, &runs, url, gzip, range, &detail),
    }
}

/// The iterations of `run` the range takes, in the log's order.
fn iterations(run: &Node, range: Range) -> impl Iterator<Item = &Node> {
    run.children.iter().filter(move |c| {
        c.kind == Kind::Iteration && c.iteration.is_some_and(|n| range.contains(n))
    })
}

fn to_file(
    g: &Globals,
    dir: &Path,
    runs: &[Node],
    file: &Path,
    one_line: bool,
    range: Range,
    detail: &Detail,
) -> Result<Exit> {
    if file != Path::new("-") {
        refuse_target(file, dir)?;
    }
    let mut text = String::new();
    let mut spans = 0;
    for run in runs {
        for (_, b) in batches(run, range, one_line, detail) {
            spans += b.spans.len();
            text.push_str(&crate::report::otlp::encode_json(&b));
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

/// The run's own span (with what it holds outside its iterations) first,
/// then one batch per iteration in the range (with its number), or all in
/// one.
fn batches(run: &Node, range: Range, one_line: bool, detail: &Detail) -> Vec<(Option<u32>, Batch)> {
    let mut out = vec![(None, crate::report::otlp::run_batch(run, detail))];
    for it in iterations(run, range) {
        let b = crate::report::otlp::iteration_batch(run, it, detail);
        match one_line {
            true => out[0].1.spans.extend(b.spans),
            false => out.push((it.iteration, b)),
        }
    }
    out
}

/// A word of the shell as typed: quoted when it holds more than a URL's
/// plain characters (`?`, `&`, spaces).
fn shell_word(w: &str) -> String {
    match w
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./:-=@%+,".contains(c))
    {
        true => w.to_string(),
        false => format!("'{}'", w.replace('\'', r"'\''")),
    }
}

/// How many times one batch is posted before the export stops, and the
/// longest it waits between two tries.
const TRIES: u32 = 4;
const LONGEST_WAIT: Duration = Duration::from_secs(30);

fn to_collector(
    g: &Globals,
    brief: &str,
    runs: &[Node],
    url: Option<&str>,
    gzip: bool,
    range: Range,
    detail: &Detail,
) -> Result<Exit> {
    let var = |k: &str| std::env::var(k).ok();
    let mut endpoint = match url {
        Some(u) => Endpoint::from_url(u, var).map_err(Error::Input)?,
        None => Endpoint::from_env(var).ok_or_else(|| {
            Error::Input(
                "export: say where the spans go: --otlp FILE, --otlp-endpoint URL, or OTEL_EXPORTER_OTLP_ENDPOINT in the environment".into(),
            )
        })?,
    };
    let lower = endpoint.url.to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        return Err(Error::Input(format!(
            "OTEL_EXPORTER_OTLP_ENDPOINT: {} is not an http:// or https:// URL (e.g. http://127.0.0.1:4318)",
            endpoint.url
        )));
    }
    endpoint.gzip |= gzip;
    if let Some(w) = &endpoint.warning
        && !g.quiet
    {
        eprintln!("warning: {w}");
    }
    let url = endpoint.url.clone();
    let poster = Poster::new(endpoint);
    let (mut spans, mut requests, mut rejected) = (0usize, 0usize, 0u64);
    let mut messages: Vec<String> = Vec::new();
    for run in runs {
        let parts = batches(run, range, false, detail);
        if parts.len() == 1 && range != Range::default() && !g.quiet {
            let held: Vec<u32> = run
                .children
                .iter()
                .filter(|c| c.kind == Kind::Iteration)
                .filter_map(|c| c.iteration)
                .collect();
            eprintln!(
                "warning: run {} holds iterations {}; none is in the range: only the run's own span is sent",
                run.attribute("run_id").unwrap_or(&run.id),
                match (held.iter().min(), held.iter().max()) {
                    (Some(a), Some(b)) => format!("{a}–{b}"),
                    _ => "none".into(),
                }
            );
        }
        for (iteration, batch) in parts {
            match post(&poster, &batch, g.quiet) {
                Ok(accepted) => {
                    spans += batch.spans.len();
                    requests += 1;
                    rejected += accepted.rejected_spans;
                    if !accepted.message.is_empty() {
                        messages.push(accepted.message);
                    }
                }
                Err(e) => {
                    // The same command from the batch that failed on: the
                    // range's end, the compression and the root kept.
                    let from = iteration.or(range.from);
                    let mut resume = vec!["ooda".to_string()];
                    if let Some(root) = &g.root {
                        resume.push("--root".into());
                        resume.push(shell_word(&root.display().to_string()));
                    }
                    resume.extend(["export".into(), shell_word(brief)]);
                    resume.extend(["--otlp-endpoint".into(), shell_word(&url)]);
                    if from.is_some() || range.to.is_some() {
                        resume.push("--iterations".into());
                        resume.push(format!(
                            "{}..{}",
                            from.map(|n| n.to_string()).unwrap_or_default(),
                            range.to.map(|n| n.to_string()).unwrap_or_default()
                        ));
                    }
                    if gzip {
                        resume.push("--gzip".into());
                    }
                    let resume = resume.join(" ");
                    let what = match iteration {
                        Some(n) => format!("iteration {n}"),
                        None => "the run's own span".to_string(),
                    };
                    if g.json {
                        let doc = serde_json::json!({
                            "endpoint": url,
                            "spans": spans,
                            "requests": requests,
                            "failed_iteration": iteration,
                            "error": e.message,
                            "resume": resume,
                        });
                        out(&format!("{doc}\n"))?;
                    }
                    let next = match requests {
                        0 => format!(
                            "Nothing was sent. Mend the cause, then run the export again:\n  {resume}"
                        ),
                        _ => format!(
                            "{spans} span(s) in {requests} request(s) had been sent, with the same ids a new send gives them; to go on from where it stopped, once the cause is mended:\n  {resume}"
                        ),
                    };
                    eprintln!("ooda: sending {what} to {url} failed: {e}\n{next}");
                    return Ok(Exit::Failure);
                }
            }
        }
    }
    if g.json {
        let doc = serde_json::json!({
            "endpoint": url,
            "spans": spans,
            "requests": requests,
            "traces": runs.len(),
            "rejected_spans": rejected,
        });
        out(&format!("{doc}\n"))?;
    } else if !g.quiet {
        eprintln!(
            "sent {spans} span(s) of {} trace(s) in {requests} request(s) to {url}",
            runs.len()
        );
    }
    if rejected > 0 {
        eprintln!(
            "warning: the collector kept all but {rejected} span(s){}",
            match messages.is_empty() {
                true => String::new(),
                false => format!(": {}", messages.join("; ")),
            }
        );
        return Ok(Exit::Failure);
    }
    Ok(Exit::Ok)
}

/// One batch, tried again while the collector is busy or unreachable.
fn post(
    poster: &Poster,
    batch: &Batch,
    quiet: bool,
) -> std::result::Result<crate::report::otlp::Accepted, PostError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match poster.post(batch) {
            Ok(a) => return Ok(a),
            Err(e) if e.retryable && tries < TRIES => {
                let wait = e
                    .retry_after
                    .unwrap_or(Duration::from_secs(1 << (tries - 1)))
                    .min(LONGEST_WAIT);
                if !quiet {
                    eprintln!("{e}; trying again in {} s", wait.as_secs());
                }
                std::thread::sleep(wait);
            }
            Err(e) => return Err(e),
        }
    }
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
