//! The command driver's invocation contract: how an agent CLI
//! or script is started for one step, and what is read back.
//!
//! - The command runs in the candidate worktree, as the shell line that
//!   [`CommandAgent::command_line`] returns. That same line is what `ooda
//!   check` prints, so what a human reviews is exactly what runs.
//! - The environment carries `OODA_PHASE`, `OODA_BRIEF`, `OODA_ITERATION`,
//!   `OODA_PROMPT_FILE` and `OODA_OUTPUT_FILE` (plus `OODA_BRIEF_FILE`,
//!   `OODA_ATTEMPT` and `OODA_ITERATIONS_DIR`, and the profile's `env`). A
//!   subagent gets `OODA_PHASE` = its role and `OODA_SUBAGENT` = its name
//!   instead of `OODA_BRIEF_FILE` and `OODA_ITERATIONS_DIR`, and its prompt
//!   file in its private directory (the archived copy is written too).
//! - The prompt is written (redacted) to a file outside the worktree, so the
//!   agent's own files never count as a change, and reaches the agent on stdin
//!   (`prompt: stdin`), as the last argument (`arg`) or as the file's path
//!   (`file`).
//! - Everything the process does is data: a timeout kills its whole process
//!   group (see `run/exec.rs`), and a non-zero exit, a signal, or an unreadable
//!   answer becomes an [`AgentCall`] with a problem, never an error of ooda.
//!   Only what the runner itself cannot do (start a process in a missing
//!   directory, write a file, honour Ctrl-C) is an `Err`.

pub(crate) mod formats;

use crate::model::CommandOutcome;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::config::{AgentProfile, DEFAULT_AGENT_TIMEOUT, PromptMode};
use crate::driver::agent::reply::relative;
use crate::driver::agent::{Caller, Invocation, NamedFiles, Reply};
use crate::error::{Error, IoContext, Result};
use crate::model::{AgentCall, CallOutcome, Phase};
use crate::run::exec::CommandSpec;
use crate::run::executor::Lease;
use crate::text::compress;
use crate::text::redact;

/// Characters of an agent's combined output kept in its artifact file.
const OUTPUT_ARTIFACT_CHARS: usize = 16_000;

/// A Brief's `agent:` resolved to a profile of `ooda.yaml` (or a preset).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandAgent {
    pub name: String,
    pub profile: AgentProfile,
    /// Whether ooda's sandbox is in force for its steps (which of the
    /// profile's `sandbox.args_*` it gets).
    pub sandboxed: bool,
}

pub(crate) use crate::run::exec::shell_quote;

impl CommandAgent {
    /// The exact shell line that runs for every step (with the `OODA_*`
    /// variables set), e.g. `claude -p --output-format json … < "$OODA_PROMPT_FILE"`.
    pub(crate) fn command_line(&self) -> String {
        self.line_with(self.sandbox_args())
    }

    fn sandbox_args(&self) -> &[String] {
        let a = &self.profile.sandbox_args;
        if self.sandboxed {
            &a.inside
        } else {
            &a.outside
        }
    }

    /// The line of one step: the profile's arguments for `phase`, and in
    /// EXECUTE the files the plan names (`file_arg`, `read_arg`).
    pub(crate) fn command_line_for(&self, phase: Phase, files: &NamedFiles) -> String {
        self.command_line_with(phase, files, &[])
    }

    /// [`Self::command_line_for`] with `more` arguments for this call (the
    /// code index's MCP server).
    fn command_line_with(&self, phase: Phase, files: &NamedFiles, more: &[String]) -> String {
        let p = &self.profile;
        let mut extra: Vec<String> = self.sandbox_args().to_vec();
        extra.extend(more.iter().cloned());
        extra.extend(p.args_by_phase.of(phase).iter().cloned());
        if phase == Phase::Execute {
            for (flag, paths) in [(&p.file_arg, &files.edit), (&p.read_arg, &files.read)] {
                if let Some(flag) = flag {
                    for path in paths {
                        extra.push(flag.clone());
                        extra.push(path.clone());
                    }
                }
            }
        }
        self.line_with(&extra)
    }

    /// `command` with `extra` arguments. When the prompt is passed as an
    /// argument and the command ends with the flag that takes it (`-p`,
    /// `--message-file`), or the command ends with `-` (read the prompt
    /// from stdin: Codex), the extra arguments go before that last one.
    fn line_with(&self, extra: &[String]) -> String {
        let mut argv: Vec<&str> = self.profile.command.iter().map(String::as_str).collect();
        let ends_with_flag = argv.len() > 1
            && argv.last().is_some_and(|a| {
                *a == "-" || (self.profile.prompt != PromptMode::Stdin && a.starts_with('-'))
            });
        let at = if ends_with_flag {
            argv.len() - 1
        } else {
            argv.len()
        };
        argv.splice(at..at, extra.iter().map(String::as_str));
        let argv: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
        let argv = argv.join(" ");
        match self.profile.prompt {
            PromptMode::Stdin => format!("{argv} < \"$OODA_PROMPT_FILE\""),
            // $(cat) drops trailing newlines only; the prompt is otherwise verbatim.
            PromptMode::Arg => format!("{argv} \"$(cat \"$OODA_PROMPT_FILE\")\""),
            // The prompt is on stdin unless the profile says `arg`.
            PromptMode::File => format!("{argv} \"$OODA_PROMPT_FILE\" < \"$OODA_PROMPT_FILE\""),
        }
    }

    /// What the agent may write besides its worktree and `TMPDIR` when
    /// sandboxed: its result file's directory and its profile's
    /// `sandbox.writable` (an entry naming an unset variable is left out).
    /// A state directory that does not exist yet is created, as the tool
    /// would on its first run (a grant needs something to grant).
    fn writable(&self, drop_box: &Path) -> Vec<std::path::PathBuf> {
        let mut w = vec![drop_box.to_path_buf()];
        w.extend(self.profile_grants());
        w
    }

    /// The profile's `sandbox.writable`, expanded.
    fn profile_grants(&self) -> Vec<std::path::PathBuf> {
        let env = &self.profile.env;
        let mut w = Vec::new();
        for raw in &self.profile.sandbox_writable {
            let lookup = |name: &str| env.get(name).cloned().or_else(|| std::env::var(name).ok());
            if let Some(p) = crate::run::sandbox::expand_with(raw, lookup) {
                if self.sandboxed && !p.exists() {
                    let _ = std::fs::create_dir_all(&p);
                }
                w.push(p);
            }
        }
        w
    }

    /// A profile grant that holds the worktree would undo the sandbox.
    fn refuse_wide(&self, writable: &[std::path::PathBuf], cwd: &Path) -> Result<()> {
        match crate::run::sandbox::wide_grant(writable, cwd) {
            Some(w) if self.sandboxed => Err(Error::Input(format!(
                "agents.{}.sandbox.writable: {} holds the worktree, so granting it would make the checkout, the Briefs and the git directory writable: grant the tool's own state directory instead",
                self.name,
                w.display()
            ))),
            _ => Ok(()),
        }
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.profile.timeout.unwrap_or(DEFAULT_AGENT_TIMEOUT)
    }

    /// A warning when the program cannot be found, for `ooda check`.
    pub(crate) fn program_problem(&self, root: &Path) -> Option<String> {
        program_problem(root, self.profile.command.first()?, "the agent")
    }

    /// Runs one step. See the module documentation for the contract.
    fn run(&self, inv: &Invocation, lease: &dyn Lease, cancel: &AtomicBool) -> Result<Reply> {
        crate::atomic::create_dir_all(inv.files_dir)?;
        // A subagent's files are named after it; OODA_PHASE says its role.
        let step = match inv.subagent {
            Some((_, role)) => role.as_str(),
            None => inv.phase.as_str(),
        };
        let stem = inv.stem();
        let prompt_file = inv.files_dir.join(format!("{stem}.prompt.md"));
        let output_file = inv.files_dir.join(format!("{stem}.result.json"));
        let log_file = inv.files_dir.join(format!("{stem}.output.txt"));
        let prompt_text = redact::redact(inv.prompt);
        crate::atomic::write_atomic(&prompt_file, prompt_text.as_bytes())?;
        // A result left from an earlier run of this step must not be read as this one's.
        match std::fs::remove_file(&output_file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(format!("removing {}", output_file.display()), e));
            }
            _ => {}
        }
        // The agent writes its result into a directory of its own, which is
        // the only one outside the worktree its sandbox lets it write; ooda
        // moves the file into the archive (redacted) after the step.
        // The raw result is redacted only after the step: no other user
        // may read it meanwhile.
        let drop_box = crate::run::sandbox::PrivateDir::create("ooda-result")
            .map_err(|e| Error::io("creating the agent's result directory".to_string(), e))?;
        let agent_output_file = drop_box.0.join("result.json");
        // A subagent reads its prompt from its private directory: pointing
        // it at the archive would show it where the main agent's prompts
        // and answers are (the archived copy is written all the same).
        let prompt_file = if inv.subagent.is_some() {
            let private = drop_box.0.join("prompt.md");
            crate::atomic::write_atomic(&private, prompt_text.as_bytes())?;
            private
        } else {
            prompt_file
        };
        let abs = |p: &Path| p.display().to_string();
        let mut env: Vec<(String, String)> = vec![
            ("OODA_PHASE".into(), step.into()),
            ("OODA_BRIEF".into(), inv.brief_name.into()),
            ("OODA_ITERATION".into(), inv.iteration.to_string()),
            ("OODA_ATTEMPT".into(), inv.attempt.to_string()),
            ("OODA_PROMPT_FILE".into(), abs(&prompt_file)),
            ("OODA_OUTPUT_FILE".into(), abs(&agent_output_file)),
        ];
        match inv.subagent {
            // A subagent's context is what its `sees` gives it: it is not
            // pointed at the archive, where the main agent's reasoning is.
            Some((name, _)) => env.push(("OODA_SUBAGENT".into(), name.into())),
            None => {
                env.push(("OODA_BRIEF_FILE".into(), abs(inv.brief_path)));
                env.push(("OODA_ITERATIONS_DIR".into(), abs(inv.iterations_dir)));
            }
        }
        env.extend(self.profile.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        // The code index for this call: built or refreshed here, outside
        // the sandbox, and served by `ooda mcp` as the tool's child.
        let index = if self.profile.index && self.profile.format.takes_mcp_servers() {
            let ooda = std::env::current_exe()
                .map_err(|e| Error::io("finding ooda's own path".to_string(), e))?;
            let dir = crate::driver::index_server::prepare(inv.cwd);
            Some((ooda, dir))
        } else {
            None
        };
        let more = index.as_ref().map_or_else(Vec::new, |(ooda, dir)| {
            crate::driver::index_server::args(self.profile.format, ooda, inv.cwd, dir)
        });
        let line = self.command_line_with(inv.phase, inv.files, &more);
        let spec = CommandSpec {
            command: &line,
            cwd: inv.cwd,
            env,
            timeout: self.timeout(),
            output_cap: inv.output_cap,
            stdin: None,
            landlock: None,
            writable: self.writable(&drop_box.0),
            measured: false,
        };
        self.refuse_wide(&spec.writable, inv.cwd)?;
        // The tool's own shell commands through `ooda compress`, for this
        // call only: the hook is gone before anything reads the worktree.
        let hook = match crate::driver::compress_hook::tool_of(self.profile.format) {
            Some(tool) if self.profile.compress_commands => {
                let ooda = std::env::current_exe()
                    .map_err(|e| Error::io("finding ooda's own path".to_string(), e))?;
                Some(crate::driver::compress_hook::install(tool, inv.cwd, &ooda)?)
            }
            _ => None,
        };
        let registered = match &index {
            Some((ooda, dir)) => crate::driver::index_server::install(
                self.profile.format,
                inv.cwd,
                ooda,
                dir,
                hook.is_some(),
            )?,
            None => None,
        };
        let out = lease.run(&spec, cancel);
        // In the reverse order of installing: both may be in one file.
        let unregistered = registered
            .map(crate::driver::worktree_settings::Patch::remove)
            .transpose();
        let removed = hook
            .map(crate::driver::compress_hook::Hook::remove)
            .transpose();
        // The agent's own failure first: it says more than a settings file.
        let out = out.ctx(|| format!("starting agent `{}` in {}", self.name, inv.cwd.display()))?;
        unregistered?;
        removed?;
        // The agent wrote this file itself: it is archived, so it is
        // redacted (and stays JSON) before it is moved there.
        let (written, oversize) = match deliver(&agent_output_file, &output_file) {
            Ok(w) => (w, None),
            Err(Error::Input(why)) => (None, Some(why)),
            Err(e) => return Err(e),
        };
        if out.status == CommandOutcome::Interrupted {
            return Err(Error::Interrupted);
        }
        let excerpt = compress::excerpt(&drop_cut_lines(&out.output), OUTPUT_ARTIFACT_CHARS);
        crate::atomic::write_atomic(&log_file, excerpt.as_bytes())?;

        let parsed = formats::parse(self.profile.format, &out.stdout);
        let seconds = out.elapsed.as_secs_f64();
        let (outcome, problem) = match out.status {
            CommandOutcome::Success => (CallOutcome::Ok, None),
            CommandOutcome::TimedOut => (
                CallOutcome::TimedOut,
                Some(format!(
                    "the agent timed out after {} (its process group was killed)",
                    crate::brief::format_duration(self.timeout())
                )),
            ),
            CommandOutcome::Killed => (
                CallOutcome::Failed,
                Some("the agent was killed by a signal".to_string()),
            ),
            _ => (
                CallOutcome::Failed,
                Some(format!(
                    "the agent exited with code {}{}",
                    out.exit_code
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "?".into()),
                    // What the tool said it failed on reads better than the
                    // raw tail of its JSON.
                    match (parsed.error_reported, &parsed.problem) {
                        (true, Some(p)) => format!(": {p}"),
                        _ => last_words(&out.output),
                    }
                )),
            ),
        };
        // The tool could not reach its model: the call is not the agent's
        // failure, whatever the exit code (aider exits 0 after its retries).
        let (outcome, problem) = match &parsed.unavailable {
            Some(why) if out.status != CommandOutcome::TimedOut => (
                CallOutcome::Unavailable,
                Some(format!("agent unavailable: {why}")),
            ),
            _ => (outcome, problem),
        };
        // A subagent judges material it was shown (a reviewer, the diff):
        // a block quoted from it is not its answer.
        // What it was shown, as it saw it (redacted).
        let shown = if inv.subagent.is_some() {
            prompt_text.as_str()
        } else {
            ""
        };
        let result = match oversize {
            Some(why) => Err(why),
            None => crate::driver::agent::reply::result_json(
                written.as_deref(),
                parsed.text.as_deref(),
                shown,
            ),
        };
        let problem = problem.or_else(|| match (&result, &parsed.problem) {
            // The tool's own complaint explains a missing result best.
            (Err(_), Some(p)) => Some(p.clone()),
            (Err(e), None) => Some(e.clone()),
            (Ok(_), _) => None,
        });
        let call = AgentCall {
            phase: inv.phase,
            attempt: inv.attempt,
            outcome,
            exit_code: out.exit_code,
            seconds: (seconds * 10.0).round() / 10.0,
            usage: parsed.usage,
            model: parsed.model.clone(),
            problem: problem.map(|p| redact::redact(&p)),
            warnings: parsed.warnings.iter().map(|w| redact::redact(w)).collect(),
            waited: 0.0,
            output: Some(relative(inv.iterations_dir, &log_file)),
            files: Vec::new(),
        };
        Ok(Reply {
            call,
            result,
            tool_error: parsed
                .error_reported
                .then(|| parsed.problem.clone())
                .flatten(),
        })
    }
}

impl Caller for CommandAgent {
    fn driver_name(&self) -> String {
        format!("command:{}", self.name)
    }

    fn who(&self) -> String {
        self.name.clone()
    }

    fn command_line_for(&self, phase: Phase, files: &NamedFiles) -> String {
        CommandAgent::command_line_for(self, phase, files)
    }

    /// Its profile's `sandbox.writable` (its result file's directory is
    /// private and temporary, nowhere the fence looks).
    fn grants(&self) -> Vec<std::path::PathBuf> {
        self.profile_grants()
    }

    fn result_file(&self) -> bool {
        self.profile.result_file
    }

    fn change_note(&self) -> bool {
        self.profile.change_note
    }

    fn passes_files(&self) -> bool {
        self.profile.file_arg.is_some() || self.profile.read_arg.is_some()
    }

    fn for_subagent(&self, timeout: Duration, model: Option<String>) -> Box<dyn Caller> {
        let mut agent = self.clone();
        agent.profile.timeout = Some(timeout);
        if let Some(model) = model {
            agent.profile.env.insert("OODA_MODEL".into(), model);
        }
        Box::new(agent)
    }

    fn clone_box(&self) -> Box<dyn Caller> {
        Box::new(self.clone())
    }

    fn call(&self, inv: &Invocation, lease: &dyn Lease, cancel: &AtomicBool) -> Result<Reply> {
        self.run(inv, lease, cancel)
    }
}

/// Why `program` (the first word of a command) will not start in a
/// worktree, if it will not: a relative path is looked up in the project
/// root (the worktree is a checkout of its committed `HEAD`), an absolute
/// one where it is, a bare name on `PATH`. `who` names it in the message.
pub(crate) fn program_problem(root: &Path, program: &str, who: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if Path::new(program).is_absolute() {
        return if !Path::new(program).is_file() {
            Some(format!("`{program}` does not exist: {who} cannot start"))
        } else {
            (!executable(Path::new(program)))
                .then(|| format!("`{program}` is not executable (chmod +x it)"))
        };
    }
    if program.contains('/') {
        let path = root.join(program);
        let rel = Path::new(program.trim_start_matches("./"));
        let committed = git2::Repository::open(root).ok().is_some_and(|r| {
            r.head()
                .and_then(|h| h.peel_to_tree())
                .is_ok_and(|t| t.get_path(rel).is_ok())
        });
        if !path.is_file() {
            return Some(format!(
                "`{program}` does not exist in {}: {who} cannot start",
                root.display()
            ));
        }
        if !committed {
            return Some(format!(
                "`{program}` is not committed: a run works in worktrees checked out from the commit it started at, where it will be missing (commit it before the first tick; a run already started needs `ooda reset`)"
            ));
        }
        return (!executable(&path)).then(|| {
            format!(
                "`{program}` is not executable: every tick fails to start it (exit 126); `chmod +x {}`, `git add --chmod=+x {}`, and commit",
                rel.display(),
                rel.display()
            )
        });
    }
    (!crate::run::exec::on_path(program))
        .then(|| format!("`{program}` is not on PATH: {who} cannot start"))
}

/// Removes the lines on both sides of the output cap's omission marker (see
/// `run/exec.rs`): a line cut in two can split a secret so that neither half
/// matches a key pattern, and the half after the cut is the key's secret end.
fn drop_cut_lines(output: &str) -> String {
    let lines: Vec<&str> = output.split('\n').collect();
    let is_marker = |l: &str| l.starts_with("[… ") && l.ends_with(" bytes omitted …]");
    let mut keep = vec![true; lines.len()];
    for (i, l) in lines.iter().enumerate() {
        if is_marker(l) {
            if i > 0 {
                keep[i - 1] = false;
            }
            if i + 1 < lines.len() {
                keep[i + 1] = false;
            }
        }
    }
    lines
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(l, _)| *l)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tail of a failed command's output, for its one-line problem.
fn last_words(output: &str) -> String {
    let output = crate::text::compress::strip_ansi(output);
    let tail: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .rev()
        .take(2)
        .collect();
    if tail.is_empty() {
        String::new()
    } else {
        let joined: Vec<&str> = tail.into_iter().rev().collect();
        format!(": {}", crate::text::clip::clip(&joined.join(" / "), 240))
    }
}

/// Redacts what the agent wrote into its private directory and moves it
/// to its archived place; returns what it held. A symlink or a directory
/// there is not a result: it is not followed.
/// The largest `OODA_OUTPUT_FILE` ooda reads.
const OUTPUT_FILE_MAX: u64 = 1 << 20;

fn deliver(written: &Path, archived: &Path) -> Result<Option<String>> {
    let Ok(meta) = std::fs::symlink_metadata(written) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Ok(None);
    }
    // An answer is a JSON object of a few KiB: a file of gigabytes (a
    // sparse one costs the agent nothing) is not read, only named.
    if meta.len() > OUTPUT_FILE_MAX {
        let note = format!(
            "the agent wrote {} to OODA_OUTPUT_FILE, above the {} an answer may hold: it was not read",
            crate::validate::units::format_bytes(meta.len()),
            crate::validate::units::format_bytes(OUTPUT_FILE_MAX)
        );
        crate::atomic::write_atomic(archived, note.as_bytes())?;
        let _ = std::fs::remove_file(written);
        return Err(Error::Input(note));
    }
    let text = redact::redact_file(written)?;
    let clean = std::fs::read(written)
        .map_err(|e| Error::io(format!("reading {}", written.display()), e))?;
    crate::atomic::write_atomic(archived, &clean)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::presets;
    use crate::driver::agent::reply::Source;

    fn agent(name: &str) -> CommandAgent {
        CommandAgent {
            name: name.into(),
            profile: presets()[name].clone(),
            sandboxed: false,
        }
    }

    #[test]
    fn preset_command_lines() {
        assert_eq!(
            agent("claude").command_line(),
            r#"claude -p --output-format json --permission-mode acceptEdits < "$OODA_PROMPT_FILE""#
        );
        assert_eq!(
            agent("codex").command_line(),
            r#"codex exec --json -c 'approval_policy="never"' --sandbox workspace-write - < "$OODA_PROMPT_FILE""#
        );
        // Inside ooda's sandbox, Codex's own (bubblewrap) cannot start.
        let mut inside = agent("codex");
        inside.sandboxed = true;
        assert_eq!(
            inside.command_line_for(Phase::Execute, &NamedFiles::default()),
            r#"codex exec --json -c 'approval_policy="never"' --sandbox danger-full-access - < "$OODA_PROMPT_FILE""#
        );
        assert_eq!(
            agent("gemini").command_line(),
            r#"gemini --skip-trust --approval-mode auto_edit -o json -p "$(cat "$OODA_PROMPT_FILE")""#
        );
        assert_eq!(
            agent("aider").command_line(),
            r#"aider --yes-always --no-auto-commits --no-dirty-commits --no-pretty --no-gitignore --no-check-update --no-show-release-notes --no-analytics --edit-format diff --chat-history-file /dev/null --input-history-file /dev/null --message-file "$OODA_PROMPT_FILE" < "$OODA_PROMPT_FILE""#
        );
        // aider: PLAN and LEARN in ask mode, EXECUTE with the plan's files,
        // each before the flag that takes the prompt.
        let files = NamedFiles {
            edit: vec!["src/a b.rs".into()],
            read: vec!["bench.sh".into()],
            scoped: Vec::new(),
        };
        let aider = agent("aider");
        let tail = r#"--message-file "$OODA_PROMPT_FILE" < "$OODA_PROMPT_FILE""#;
        assert!(
            aider
                .command_line_for(Phase::Plan, &files)
                .ends_with(&format!("/dev/null --chat-mode ask {tail}"))
        );
        assert!(
            aider
                .command_line_for(Phase::Execute, &files)
                .ends_with(&format!(
                    "/dev/null --file 'src/a b.rs' --read bench.sh {tail}"
                ))
        );
        // A profile without per-step arguments runs the same line every step.
        let claude = agent("claude");
        assert_eq!(
            claude.command_line_for(Phase::Execute, &files),
            claude.command_line()
        );
        assert_eq!(
            agent("script").command_line(),
            r#"./ooda-agent.sh < "$OODA_PROMPT_FILE""#
        );
    }

    #[test]
    fn cut_lines_around_the_cap_marker_are_dropped() {
        let out = "head\npartial sk-ant-ap\n[… 12 bytes omitted …]\nSECRETTAIL rest\ntail\n";
        assert_eq!(drop_cut_lines(out), "head\n[… 12 bytes omitted …]\ntail\n");
        assert_eq!(drop_cut_lines("a\nb"), "a\nb");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a-b_c/d.e=f:1"), "a-b_c/d.e=f:1");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    fn invoke(
        script: &str,
        prompt: crate::config::PromptMode,
        timeout: u64,
    ) -> (Reply, tempfile::TempDir) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let cwd = dir.join("cand");
        std::fs::create_dir_all(&cwd).unwrap();
        let a = CommandAgent {
            name: "t".into(),
            profile: AgentProfile {
                command: vec!["sh".into(), "-c".into(), script.into(), "agent".into()],
                prompt,
                format: crate::config::AgentFormat::Text,
                timeout: Some(Duration::from_secs(timeout)),
                env: [("EXTRA".to_string(), "yes".to_string())].into(),
                ..crate::config::presets()["script"].clone()
            },
            sandboxed: false,
        };
        let files = Invocation::files_dir_for(&dir, 3);
        let inv = Invocation {
            phase: Phase::Plan,
            attempt: 1,
            brief_path: Path::new("/x/briefs/b.md"),
            brief_name: "b",
            iteration: 3,
            cwd: &cwd,
            iterations_dir: &dir,
            files_dir: &files,
            prompt: "PROMPT with sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            output_cap: 1 << 20,
            files: &NamedFiles::default(),
            subagent: None,
            span: &crate::events::Span::new("test", Vec::new()),
            sets_knobs: false,
        };
        let local = crate::run::executor::Local::default();
        let lease =
            crate::run::executor::Executor::lease(&local, crate::run::executor::Purpose::Agent)
                .unwrap();
        let reply = a
            .run(&inv, lease.as_ref(), &AtomicBool::new(false))
            .unwrap();
        (reply, tmp)
    }

    #[test]
    fn the_contract_reaches_the_agent() {
        let script = r#"read -r line; echo "stdin=$line"; echo "arg=$1"; echo "phase=$OODA_PHASE brief=$OODA_BRIEF file=$OODA_BRIEF_FILE it=$OODA_ITERATION extra=$EXTRA pwd=$(pwd)"; printf '```ooda\n{"a": 1}\n```\n'"#;
        let (r, tmp) = invoke(script, PromptMode::Stdin, 10);
        let dir = tmp.path();
        assert!(r.finished(), "{r:?}");
        let log = std::fs::read_to_string(dir.join(r.call.output.as_ref().unwrap())).unwrap();
        assert!(log.contains("stdin=PROMPT with [REDACTED]"), "{log}");
        assert!(log.contains("phase=plan brief=b file=/x/briefs/b.md it=3 extra=yes"));
        assert!(log.contains(&format!("pwd={}", dir.join("cand").display())));
        assert_eq!(r.result.unwrap().0["a"], 1);
        // The prompt file is outside the worktree and redacted.
        let p = std::fs::read_to_string(dir.join("artifacts/iter-003/plan.prompt.md")).unwrap();
        assert!(!p.contains("sk-ant"));
    }

    #[test]
    fn output_file_wins_and_arg_mode_passes_the_prompt() {
        let script = r#"echo "arg=$1" > /dev/null; printf '{"from": "file", "arg": "%s"}' "$1" > "$OODA_OUTPUT_FILE"; echo '```ooda'; echo '{"from": "text"}'; echo '```'"#;
        let (r, _) = invoke(script, PromptMode::Arg, 10);
        let (v, src) = r.result.unwrap();
        assert_eq!(src, Source::OutputFile);
        assert_eq!(v["from"], "file");
        assert!(
            v["arg"]
                .as_str()
                .unwrap()
                .starts_with("PROMPT with [REDACTED]")
        );
    }

    #[test]
    fn failures_are_data() {
        let (r, _) = invoke(
            "echo doing; echo 'fatal: no key' >&2; exit 3",
            PromptMode::Stdin,
            10,
        );
        assert_eq!(r.call.outcome, CallOutcome::Failed);
        assert_eq!(r.call.exit_code, Some(3));
        let p = r.call.problem.unwrap();
        assert!(
            p.contains("exited with code 3") && p.contains("fatal: no key"),
            "{p}"
        );

        let (r, _) = invoke("sleep 30 & sleep 30", PromptMode::Stdin, 1);
        assert_eq!(r.call.outcome, CallOutcome::TimedOut);
        assert!(r.call.seconds < 10.0);
        assert!(r.call.problem.unwrap().contains("timed out after 1s"));

        let (r, _) = invoke("echo garbage", PromptMode::File, 10);
        assert_eq!(r.call.outcome, CallOutcome::Ok);
        assert!(r.result.is_err());
        assert!(r.call.problem.unwrap().contains("tagged `ooda`"));
    }
}
