//! Routing an agent CLI's own shell commands through `ooda compress`.
//!
//! The agent CLIs run commands themselves and read their raw output; the
//! output compressor reaches them only through the tool's own pre-tool
//! hook, which may rewrite a shell command before it runs (RTK's approach).
//! With `compress_commands: true` in a profile, a step of a tool with such a
//! hook gets one in the candidate worktree's own settings for the duration
//! of the call, and the settings are put back as they were (or removed)
//! right after it, before anything reads what the agent changed:
//!
//! - Claude Code: a `PreToolUse` hook on `Bash` in `.claude/settings.local.json`
//!   (the per-user, uncommitted settings file), answering with
//!   `hookSpecificOutput.updatedInput`;
//! - Gemini CLI: a `BeforeTool` hook on `run_shell_command` in
//!   `.gemini/settings.json`, answering with `hookSpecificOutput.tool_input`.
//!
//! Codex and aider have no hook that can rewrite a command (docs/agents.md).
//!
//! The hook never answers with a permission decision: it cannot approve a
//! command by itself (the tool's rules then judge the rewritten command).
//! Only a simple command of a program whose output is a report — a build,
//! a test run, a linter, a package manager, `git log`/`status` — is
//! rewritten (`cargo test --all` → `ooda compress -- cargo test --all`).
//! Anything whose output is data (`cat`, `sed`, `jq`, `git diff`), a pipe,
//! a redirection, a list or a substitution, a builtin, and a command left
//! running in the background go as the agent wrote them: their bytes are
//! what the agent edits, saves or reads as it goes.

use std::path::Path;

use serde_json::{Value, json};

use super::worktree_settings::Patch;
use crate::config::AgentFormat;
use crate::error::{Error, Result};

/// Which tool's hook protocol a profile speaks, if any.
pub(crate) fn tool_of(format: AgentFormat) -> Option<&'static str> {
    match format {
        AgentFormat::ClaudeJson => Some("claude"),
        AgentFormat::GeminiJson => Some("gemini"),
        _ => None,
    }
}

/// Where `tool` reads a worktree's own settings, and the hook entry it
/// takes there.
fn settings(tool: &str, ooda: &Path) -> Option<(&'static str, Value)> {
    let command = format!(
        "{} compress --hook {tool}",
        shell_quote(&ooda.display().to_string())
    );
    match tool {
        "claude" => Some((
            ".claude/settings.local.json",
            json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}),
        )),
        "gemini" => Some((
            ".gemini/settings.json",
            json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": command}]}]}}),
        )),
        _ => None,
    }
}

/// A hook installed in a worktree for one call; [`Patch::remove`] puts the
/// settings back as they were.
pub(crate) type Hook = Patch;

/// Installs `tool`'s hook in `worktree`, running `ooda` (this binary). An
/// existing settings file keeps what it says; the hook is added to its list
/// for the event, and one left by a killed ooda goes.
pub(crate) fn install(tool: &str, worktree: &Path, ooda: &Path) -> Result<Hook> {
    let (rel, entry) = settings(tool, ooda)
        .ok_or_else(|| Error::Input(format!("{tool} takes no command hook")))?;
    Patch::apply(
        &worktree.join(rel),
        "its compression hook (fix the file or set compress_commands: false)",
        super::worktree_settings::drop_stale,
        |value| merge_hook(value, &entry),
    )
}

/// Adds `entry`'s hooks to `value`'s, keeping the ones already there.
fn merge_hook(value: &mut Value, entry: &Value) {
    if !value.is_object() {
        *value = json!({});
    }
    let hooks = value
        .as_object_mut()
        .expect("an object")
        .entry("hooks")
        .or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    for (event, list) in entry["hooks"].as_object().expect("an object") {
        let slot = hooks
            .as_object_mut()
            .expect("an object")
            .entry(event.clone())
            .or_insert_with(|| json!([]));
        if !slot.is_array() {
            *slot = json!([]);
        }
        slot.as_array_mut()
            .expect("an array")
            .extend(list.as_array().cloned().unwrap_or_default());
    }
}

/// The hook's answer to one tool call: the command rewritten, or `None`
/// to leave it alone.
pub(crate) fn answer(tool: &str, call: &Value, ooda: &Path) -> Result<Option<String>> {
    let (input, event) = match tool {
        "claude" => (&call["tool_input"], "PreToolUse"),
        "gemini" => (&call["tool_input"], "BeforeTool"),
        _ => {
            return Err(Error::Input(format!(
                "--hook takes claude or gemini, not `{tool}`"
            )));
        }
    };
    let Some(command) = input["command"].as_str() else {
        return Ok(None);
    };
    // A command the agent leaves running reads as it goes; a proxy that
    // prints at the end would show nothing.
    if input["run_in_background"].as_bool() == Some(true)
        || input["is_background"].as_bool() == Some(true)
    {
        return Ok(None);
    }
    let Some(rewritten) = rewrite(command, ooda) else {
        return Ok(None);
    };
    let mut updated = input.clone();
    updated["command"] = Value::String(rewritten);
    let out = match tool {
        "claude" => {
            json!({"hookSpecificOutput": {"hookEventName": event, "updatedInput": updated}})
        }
        _ => json!({"hookSpecificOutput": {"hookEventName": event, "tool_input": updated}}),
    };
    Ok(Some(out.to_string()))
}

/// The programs whose output is a report for a reader (a build, a test
/// run, a linter, a package manager), not data: only these are rewritten.
/// `cat`, `sed`, `jq` or `git diff` print what the agent edits or saves,
/// which must reach it byte for byte.
const REPORTERS: &[&str] = &[
    "cargo", "rustc", "make", "cmake", "ctest", "ninja", "gcc", "g++", "cc", "c++", "clang",
    "clang++", "go", "pytest", "py.test", "tox", "nox", "mypy", "ruff", "pylint", "flake8", "pip",
    "pip3", "uv", "poetry", "npm", "pnpm", "yarn", "npx", "jest", "vitest", "tsc", "eslint", "mvn",
    "gradle", "dotnet", "bazel", "swift", "apt-get", "apt",
];

/// `git` subcommands whose output is a report (a diff or a file's contents
/// is data).
const GIT_REPORTS: &[&str] = &["log", "status", "fetch", "pull", "push", "clone", "blame"];

/// `command` run through `ooda compress`, or `None` when it is better left
/// alone: only one simple command of a program in [`REPORTERS`] (or a
/// reporting `git` subcommand) whose output goes to the agent. A pipe, a
/// redirection, a list (`&&`, `;`), a substitution or a heredoc keeps the
/// command as it is: there the output is data for the shell, not a report.
pub(crate) fn rewrite(command: &str, ooda: &Path) -> Option<String> {
    let trimmed = command.trim();
    if trimmed.contains(['|', '>', '<', ';', '&', '`', '$', '(', ')', '\n']) {
        return None;
    }
    let mut words = trimmed.split_whitespace();
    let first = words.next()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    let reporter = match name {
        "git" => words.next().is_some_and(|sub| GIT_REPORTS.contains(&sub)),
        "python" | "python3" => {
            // `python -m pytest`, `python -m mypy`: the module is the program.
            let rest: Vec<&str> = words.collect();
            rest.first() == Some(&"-m") && rest.get(1).is_some_and(|m| REPORTERS.contains(m))
        }
        _ => REPORTERS.contains(&name),
    };
    (reporter && !first.contains('=') && Path::new(first) != ooda).then(|| {
        format!(
            "{} compress -- {trimmed}",
            shell_quote(&ooda.display().to_string())
        )
    })
}

/// `s` as one shell word.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_routed_and_data_is_left_alone() {
        let ooda = Path::new("/opt/ooda/bin/ooda");
        for (command, routed) in [
            ("cargo test --all", true),
            ("  pytest -q tests  ", true),
            ("python3 -m pytest -x", true),
            ("git log -n 5", true),
            ("/usr/bin/make -k", true),
            ("npm install", true),
            ("git diff", false),
            ("git show HEAD:src/a.rs", false),
            ("cat src/a.rs", false),
            ("jq . a.json", false),
            ("cargo test 2>&1 | tail -40", false),
            ("git diff > fix.patch", false),
            ("cargo build && cargo test", false),
            ("cd src; make", false),
            ("cargo test $(echo --all)", false),
            ("FOO=1 cargo test", false),
            ("command -v cargo", false),
            ("python script.py", false),
            ("/opt/ooda/bin/ooda compress -- ls", false),
            ("", false),
        ] {
            let got = rewrite(command, ooda);
            assert_eq!(got.is_some(), routed, "{command}: {got:?}");
            if routed {
                assert_eq!(
                    got.unwrap(),
                    format!("/opt/ooda/bin/ooda compress -- {}", command.trim())
                );
            }
        }
        let odd = Path::new("/tmp/my tools/ooda");
        assert_eq!(
            rewrite("make", odd).as_deref(),
            Some("'/tmp/my tools/ooda' compress -- make")
        );
    }

    #[test]
    fn the_answer_keeps_the_call_and_grants_nothing() {
        let ooda = Path::new("/bin/ooda");
        let call = json!({"tool_name": "Bash", "tool_input": {"command": "pytest -q", "description": "run tests", "timeout": 60000}});
        let background = json!({"tool_input": {"command": "npm test", "run_in_background": true}});
        assert_eq!(answer("claude", &background, ooda).unwrap(), None);
        let a: Value =
            serde_json::from_str(&answer("claude", &call, ooda).unwrap().unwrap()).unwrap();
        let out = &a["hookSpecificOutput"];
        assert_eq!(out["hookEventName"], "PreToolUse");
        assert_eq!(
            out["updatedInput"]["command"],
            "/bin/ooda compress -- pytest -q"
        );
        assert_eq!(out["updatedInput"]["description"], "run tests");
        assert!(out.get("permissionDecision").is_none(), "{a}");
        let call =
            json!({"tool_name": "run_shell_command", "tool_input": {"command": "go test ./..."}});
        let a: Value =
            serde_json::from_str(&answer("gemini", &call, ooda).unwrap().unwrap()).unwrap();
        assert_eq!(
            a["hookSpecificOutput"]["tool_input"]["command"],
            "/bin/ooda compress -- go test ./..."
        );
        // A builtin is not answered at all.
        let call = json!({"tool_input": {"command": "cd src"}});
        assert_eq!(answer("claude", &call, ooda).unwrap(), None);
    }

    #[test]
    fn installed_for_a_call_and_gone_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let ooda = Path::new("/bin/ooda");
        let hook = install("claude", dir.path(), ooda).unwrap();
        let file = dir.path().join(".claude/settings.local.json");
        let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "/bin/ooda compress --hook claude"
        );
        hook.remove().unwrap();
        assert!(!dir.path().join(".claude").exists());
        // A settings file of the project's keeps what it says, and is put
        // back byte for byte.
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        let own = b"{\"permissions\": {\"allow\": [\"Bash(cargo test:*)\"]}, \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Write\", \"hooks\": []}]}}";
        std::fs::write(&file, own).unwrap();
        {
            let _hook = install("claude", dir.path(), ooda).unwrap();
            let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            assert_eq!(v["permissions"]["allow"][0], "Bash(cargo test:*)");
            assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
            // Dropped on an error path: restored all the same.
        }
        assert_eq!(std::fs::read(&file).unwrap(), own);
        // A hook left by a killed ooda is not taken for the project's.
        std::fs::remove_file(&file).unwrap();
        let left = install("claude", dir.path(), ooda).unwrap();
        std::mem::forget(left);
        let hook = install("claude", dir.path(), ooda).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 1, "{v}");
        hook.remove().unwrap();
        assert!(!file.exists());
        // A settings file that is not JSON is a clear error, and untouched.
        std::fs::write(&file, b"{not json").unwrap();
        let e = install("claude", dir.path(), ooda)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("settings.local.json is not JSON"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"{not json");
    }
}
