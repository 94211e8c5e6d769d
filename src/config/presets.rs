//! The agent presets: `claude`, `codex`, `gemini`, `aider` and `script`,
//! each with its tool's documented headless flags, so a Brief can name one
//! without writing it out in `ooda.yaml`.

use std::collections::BTreeMap;

use super::{AgentFormat, AgentProfile, PhaseArgs, PromptMode, SandboxArgs, home_dir};

pub(super) fn profile(command: &[&str], prompt: PromptMode, format: AgentFormat) -> AgentProfile {
    AgentProfile {
        command: command.iter().map(|s| s.to_string()).collect(),
        prompt,
        format,
        timeout: None,
        env: BTreeMap::new(),
        result_file: true,
        args_by_phase: PhaseArgs::default(),
        file_arg: None,
        read_arg: None,
        change_note: true,
        compress_commands: false,
        index: false,
        sandbox_writable: Vec::new(),
        sandbox_args: SandboxArgs::default(),
    }
}

/// A preset whose tool keeps its state in `dir` (its configuration
/// directory, relocated by `var` when the user has not set it).
fn with_state(mut p: AgentProfile, var: Option<&str>, dir: &str) -> AgentProfile {
    match var {
        Some(var) => {
            p.sandbox_writable.push(format!("${var}"));
            if std::env::var_os(var).is_none() {
                p.env.insert(var.into(), dir.into());
            }
        }
        None => p.sandbox_writable.push(dir.into()),
    }
    p
}

/// A preset whose tool cannot write outside its working directory.
fn confined(mut p: AgentProfile) -> AgentProfile {
    p.result_file = false;
    p
}

/// The built-in agent profiles, with each tool's documented headless flags.
///
/// Each one edits files unattended in the candidate worktree, so it runs with
/// its tool's "accept edits" setting, but none is given more than that: the
/// runner, not the agent's permission prompt, enforces scope,
/// and a sandbox or permission mode that keeps writes inside the working
/// directory is a second fence, not the only one. docs/agents.md lists the exact
/// command line of each; `ooda check` prints the one a Brief would run.
pub(crate) fn presets() -> BTreeMap<String, AgentProfile> {
    use AgentFormat::*;
    use PromptMode::*;
    [
        (
            "claude",
            // -p: print mode (one prompt, read from stdin, then exit);
            // acceptEdits: file edits in the working directory need no approval.
            // acceptEdits refuses writes outside the working directory, so
            // the answer comes back in the fenced block only.
            // Its state lives in CLAUDE_CONFIG_DIR (default ~/.claude, where the
            // login is): with the variable set, `.claude.json` — replaced by
            // rename, so not grantable by itself — moves in there too.
            with_state(
                confined(profile(
                    &[
                        "claude",
                        "-p",
                        "--output-format",
                        "json",
                        "--permission-mode",
                        "acceptEdits",
                    ],
                    Stdin,
                    ClaudeJson,
                )),
                Some("CLAUDE_CONFIG_DIR"),
                &home_dir(".claude"),
            ),
        ),
        (
            "codex",
            // exec: non-interactive; `-` reads the prompt from stdin; the
            // workspace-write sandbox confines writes to the working directory;
            // approval_policy=never, because nobody is there to approve.
            // Inside ooda's sandbox its bubblewrap cannot start ("Failed to
            // make / slave"), so there it runs with its own sandbox off and
            // ooda's Landlock domain confines it instead.
            {
                let mut p = with_state(
                    confined(profile(
                        &[
                            "codex",
                            "exec",
                            "--json",
                            "-c",
                            "approval_policy=\"never\"",
                            "-",
                        ],
                        Stdin,
                        CodexJsonl,
                    )),
                    Some("CODEX_HOME"),
                    &home_dir(".codex"),
                );
                p.sandbox_args = SandboxArgs {
                    inside: vec!["--sandbox".into(), "danger-full-access".into()],
                    outside: vec!["--sandbox".into(), "workspace-write".into()],
                };
                p
            },
        ),
        (
            "gemini",
            // -p takes the prompt as its value, so the prompt is the last argument;
            // auto_edit approves edits but not arbitrary shell commands (unlike --yolo).
            // A fresh worktree is never a trusted folder: without --skip-trust
            // every call exits 55 (the variable covers releases without the flag).
            {
                let mut p = with_state(
                    confined(profile(
                        &[
                            "gemini",
                            "--skip-trust",
                            "--approval-mode",
                            "auto_edit",
                            "-o",
                            "json",
                            "-p",
                        ],
                        Arg,
                        GeminiJson,
                    )),
                    None,
                    "~/.gemini",
                );
                p.env
                    .insert("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into());
                p
            },
        ),
        (
            "aider",
            // --message-file: one message, then exit; --yes-always (spelt
            // --yes in older releases) answers its confirmations; no commits,
            // because the runner owns the candidate's git history. Unattended
            // and offline-safe: it must not edit .gitignore, phone home or
            // leave its history files in the worktree. The diff edit format,
            // because the "whole" format reads the fenced answer block as a
            // malformed file listing. PLAN and LEARN only talk (ask mode;
            // a prompt starting with `/ask` crashes 0.86.2).
            {
                let mut p = confined(profile(
                    &[
                        "aider",
                        "--yes-always",
                        "--no-auto-commits",
                        "--no-dirty-commits",
                        "--no-pretty",
                        "--no-gitignore",
                        "--no-check-update",
                        "--no-show-release-notes",
                        "--no-analytics",
                        "--edit-format",
                        "diff",
                        "--chat-history-file",
                        "/dev/null",
                        "--input-history-file",
                        "/dev/null",
                        "--message-file",
                    ],
                    File,
                    Aider,
                ));
                p = with_state(p, None, "~/.aider");
                let ask = vec!["--chat-mode".to_string(), "ask".to_string()];
                p.args_by_phase = PhaseArgs {
                    plan: ask.clone(),
                    execute: Vec::new(),
                    learn: ask,
                };
                p.file_arg = Some("--file".into());
                p.read_arg = Some("--read".into());
                p.change_note = false;
                p
            },
        ),
        ("script", profile(&["./ooda-agent.sh"], Stdin, Text)),
    ]
    .into_iter()
    .map(|(name, p)| (name.to_string(), p))
    .collect()
}
