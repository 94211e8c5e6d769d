//! `ooda compress [--budget N] [--raw-to FILE] [--json] [-- CMD …]`: the
//! compressor as a proxy between an agent and a command, as RTK is one.
//!
//! With a command it runs it (stdout and stderr into one pipe, in the order
//! they were printed), prints the compressed output and exits with the
//! command's exit code (127 when it cannot start, as a shell says), so `ooda compress -- cargo test && …` still reads
//! the command's verdict. Without one it compresses its standard input.
//! `--raw-to FILE` keeps the exact bytes one step away, for a reader who
//! needs a line that went. Secrets found in the output are redacted from
//! what is printed (never from `--raw-to`, which is the user's own file).
//!
//! `--hook claude|gemini` is what an agent CLI's pre-tool hook runs
//! (`compress_commands: true` in a profile installs it for a step): it reads
//! the tool call on stdin and answers with the command rewritten to run
//! through `ooda compress`, or with nothing when it leaves the command as
//! it is. It never approves a command: the tool's own permission rules then
//! judge the rewritten command.

use std::io::{Read, Write};
use std::path::Path;

use serde::Serialize;

use super::Globals;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::text::compress::{self, Accounting};

#[derive(Serialize)]
struct Report<'a> {
    /// The command run, or null when standard input was compressed.
    command: Option<Vec<String>>,
    /// Its exit code (null for standard input, or when a signal ended it).
    exit_code: Option<i32>,
    raw_bytes: usize,
    raw_chars: usize,
    chars: usize,
    budget: Option<usize>,
    /// Lines the structural passes dropped, by kind.
    dropped: std::collections::BTreeMap<String, usize>,
    /// Lines the budget cut, by kind.
    cut: std::collections::BTreeMap<String, usize>,
    raw_to: Option<&'a Path>,
    output: &'a str,
}

pub(crate) fn run(
    g: &Globals,
    budget: Option<usize>,
    raw_to: Option<&Path>,
    hook: Option<&str>,
    command: &[String],
) -> Result<Exit> {
    if let Some(tool) = hook {
        return answer_hook(tool);
    }
    let (raw, status) = if command.is_empty() {
        let mut raw = Vec::new();
        std::io::stdin()
            .read_to_end(&mut raw)
            .map_err(|e| Error::io("reading standard input".to_string(), e))?;
        (raw, None)
    } else {
        match run_command(command)? {
            Some((raw, status)) => (raw, Some(status)),
            // As a shell says it: the command is not there (or not runnable).
            None => return Ok(Exit::Passed(127)),
        }
    };
    if let Some(path) = raw_to {
        std::fs::write(path, &raw).map_err(|e| {
            Error::io(
                format!("writing the raw output to {} (--raw-to)", path.display()),
                e,
            )
        })?;
    }
    let text = String::from_utf8_lossy(&raw);
    let (output, Accounting { dropped, cut }) =
        compress::excerpt_accounted(&text, budget.unwrap_or(usize::MAX));
    let code = status.as_ref().and_then(std::process::ExitStatus::code);
    if g.json {
        let report = Report {
            command: (!command.is_empty()).then(|| {
                command
                    .iter()
                    .map(|a| crate::text::redact::redact(a))
                    .collect()
            }),
            exit_code: code,
            raw_bytes: raw.len(),
            raw_chars: text.chars().count(),
            chars: output.chars().count(),
            budget,
            dropped,
            cut,
            raw_to,
            output: &output,
        };
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        // A reader that went away (`| head`) is no error of the command's.
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    } else {
        let _ = writeln!(std::io::stdout().lock(), "{output}");
    }
    Ok(match status {
        None => Exit::Ok,
        Some(s) => Exit::Passed(exit_code(&s)),
    })
}

/// What a shell would report for `status`: the code, or 128 + the signal.
fn exit_code(status: &std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c.clamp(0, 255)).unwrap_or(1),
        (None, Some(sig)) => u8::try_from((128 + sig).clamp(0, 255)).unwrap_or(1),
        (None, None) => 1,
    }
}

/// How long output is read after the command itself ended.
const LEFT_BEHIND_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs `command` with its stdout and stderr into one pipe (so they
/// interleave as a terminal shows them) and its stdin inherited; returns
/// the bytes and how it ended.
fn run_command(command: &[String]) -> Result<Option<(Vec<u8>, std::process::ExitStatus)>> {
    let (mut reader, writer) = std::io::pipe()
        .map_err(|e| Error::io("creating a pipe for the command's output".to_string(), e))?;
    let err_writer = writer
        .try_clone()
        .map_err(|e| Error::io("creating a pipe for the command's output".to_string(), e))?;
    let mut child = match std::process::Command::new(&command[0])
        .args(&command[1..])
        .stdout(writer)
        .stderr(err_writer)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "ooda compress: cannot run `{}`: {e} (is it installed and on PATH?)",
                command[0]
            );
            return Ok(None);
        }
    };
    // Read on a thread: a process the command left in the background may
    // hold the pipe open long after the command ended.
    let (tx, rx) = std::sync::mpsc::channel();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = std::sync::Arc::clone(&got);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 64 * 1024];
        let end = loop {
            match reader.read(&mut chunk) {
                Ok(0) => break Ok(()),
                Ok(n) => into
                    .lock()
                    .expect("the reader's buffer")
                    .extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let _ = tx.send(end);
    });
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("waiting for `{}`", command[0]), e))?;
    // What the command printed is in the pipe by now; a grace for the rest,
    // then what came is what it printed.
    match rx.recv_timeout(LEFT_BEHIND_GRACE) {
        Ok(read) => {
            read.map_err(|e| Error::io(format!("reading the output of `{}`", command[0]), e))?
        }
        Err(_) => eprintln!(
            "ooda compress: `{}` ended but left a process holding its output open; compressing what came until {}s after it ended",
            command[0],
            LEFT_BEHIND_GRACE.as_secs()
        ),
    }
    let raw = std::mem::take(&mut *got.lock().expect("the reader's buffer"));
    Ok(Some((raw, status)))
}

/// Answers a pre-tool hook of `tool` (`claude`, `gemini`): the shell
/// command of the call, rewritten to run through `ooda compress`, or no
/// answer when it is left alone.
fn answer_hook(tool: &str) -> Result<Exit> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| Error::io("reading the hook's input".to_string(), e))?;
    let call: serde_json::Value = serde_json::from_str(&input)
        .map_err(|e| Error::Input(format!("the hook's input is not JSON: {e}")))?;
    let ooda =
        std::env::current_exe().map_err(|e| Error::io("finding ooda's own path".to_string(), e))?;
    let answer = crate::driver::compress_hook::answer(tool, &call, &ooda)?;
    if let Some(answer) = answer {
        println!("{answer}");
    }
    Ok(Exit::Ok)
}
