//! The code index's MCP server (`ooda mcp`) registered with an agent CLI
//! for one step.
//!
//! With `index: true` in a profile, ooda builds (or refreshes) the index of
//! the candidate worktree before the call, outside the sandbox, in the
//! project's `.ooda/index/`; the tool then starts `ooda mcp --root
//! <worktree> --index-dir <that folder>` as its own child, inside ooda's
//! sandbox, and the server loads the index instead of parsing everything
//! again. How each tool is told, for that call only:
//!
//! - Claude Code: `--mcp-config '{"mcpServers":{"ooda-index":…}}'` on its
//!   command line, and `--allowedTools mcp__ooda-index` so that print mode,
//!   where nobody can approve, may call its read-only tools;
//! - Codex: `-c mcp_servers.ooda-index.command=…` and `…args=[…]` (its
//!   configuration overrides);
//! - Gemini CLI: an `mcpServers.ooda-index` entry (`trust: true`, since
//!   nobody can confirm) in the worktree's `.gemini/settings.json`, put
//!   back byte for byte after the call (`worktree_settings.rs`).
//!
//! aider takes no MCP servers: a profile that asks is refused by name.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::worktree_settings::{Patch, SERVER, drop_server, drop_stale};
use crate::config::AgentFormat;
use crate::error::Result;

/// The server's command line.
fn argv(ooda: &Path, root: &Path, dir: &Path) -> Vec<String> {
    vec![
        ooda.display().to_string(),
        "mcp".into(),
        "--root".into(),
        root.display().to_string(),
        "--index-dir".into(),
        dir.display().to_string(),
    ]
}

/// Builds or refreshes the index of `root` where the server will find it,
/// and says where that is.
pub(crate) fn prepare(root: &Path) -> PathBuf {
    let dir = crate::code_index::dir_for(root);
    let _ = crate::code_index::Index::open(root, &dir, crate::code_index::Limits::default(), true);
    dir
}

/// The arguments that register the server on the tool's command line
/// (none for a tool that reads it from a settings file).
pub(crate) fn args(format: AgentFormat, ooda: &Path, root: &Path, dir: &Path) -> Vec<String> {
    let argv = argv(ooda, root, dir);
    match format {
        AgentFormat::ClaudeJson | AgentFormat::ClaudeStreamJson => {
            let config = json!({"mcpServers": {SERVER: {
                "type": "stdio", "command": argv[0], "args": argv[1..]
            }}});
            vec![
                "--mcp-config".into(),
                config.to_string(),
                "--allowedTools".into(),
                format!("mcp__{SERVER}"),
            ]
        }
        AgentFormat::CodexJsonl => {
            // TOML basic strings take JSON's escapes.
            let toml = |s: &str| Value::String(s.to_string()).to_string();
            let list = argv[1..]
                .iter()
                .map(|a| toml(a))
                .collect::<Vec<_>>()
                .join(",");
            vec![
                "-c".into(),
                format!("mcp_servers.{SERVER}.command={}", toml(&argv[0])),
                "-c".into(),
                format!("mcp_servers.{SERVER}.args=[{list}]"),
            ]
        }
        _ => Vec::new(),
    }
}

/// Registers the server in the worktree's settings for a tool that reads
/// it from there (Gemini CLI); `None` for the others.
/// `after_hook`: the compression hook was put in the same file first (and
/// cleaned what a killed ooda left there).
pub(crate) fn install(
    format: AgentFormat,
    worktree: &Path,
    ooda: &Path,
    dir: &Path,
    after_hook: bool,
) -> Result<Option<Patch>> {
    if format != AgentFormat::GeminiJson {
        return Ok(None);
    }
    let argv = argv(ooda, worktree, dir);
    let entry = json!({"command": argv[0], "args": argv[1..], "trust": true});
    Patch::apply(
        &worktree.join(".gemini/settings.json"),
        "the code index's MCP server (fix the file or set index: false)",
        if after_hook { drop_server } else { drop_stale },
        move |value| {
            let servers = value
                .as_object_mut()
                .expect("an object")
                .entry("mcpServers")
                .or_insert_with(|| json!({}));
            if !servers.is_object() {
                *servers = json!({});
            }
            servers
                .as_object_mut()
                .expect("an object")
                .insert(SERVER.into(), entry);
        },
    )
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_and_codex_get_it_on_their_command_line() {
        let (ooda, root, dir) = (
            Path::new("/opt/ooda"),
            Path::new("/p/.ooda/worktrees/b/cand"),
            Path::new("/p/.ooda/index"),
        );
        let c = args(AgentFormat::ClaudeJson, ooda, root, dir);
        assert_eq!(c[0], "--mcp-config");
        let v: Value = serde_json::from_str(&c[1]).unwrap();
        assert_eq!(v["mcpServers"]["ooda-index"]["command"], "/opt/ooda");
        assert_eq!(
            v["mcpServers"]["ooda-index"]["args"],
            json!([
                "mcp",
                "--root",
                "/p/.ooda/worktrees/b/cand",
                "--index-dir",
                "/p/.ooda/index"
            ])
        );
        assert_eq!(c[2..], ["--allowedTools", "mcp__ooda-index"]);
        let x = args(AgentFormat::CodexJsonl, ooda, root, dir);
        assert_eq!(
            x,
            [
                "-c",
                "mcp_servers.ooda-index.command=\"/opt/ooda\"",
                "-c",
                "mcp_servers.ooda-index.args=[\"mcp\",\"--root\",\"/p/.ooda/worktrees/b/cand\",\"--index-dir\",\"/p/.ooda/index\"]"
            ]
        );
        assert!(args(AgentFormat::GeminiJson, ooda, root, dir).is_empty());
        assert!(!AgentFormat::Aider.takes_mcp_servers());
    }

    #[test]
    fn gemini_gets_it_in_its_settings_for_the_call_only() {
        let d = tempfile::tempdir().unwrap();
        let wt = d.path();
        let ooda = Path::new("/opt/ooda");
        // No settings: created, then gone with the folder.
        let p = install(AgentFormat::GeminiJson, wt, ooda, wt, false)
            .unwrap()
            .unwrap();
        let v: Value =
            serde_json::from_slice(&std::fs::read(wt.join(".gemini/settings.json")).unwrap())
                .unwrap();
        assert_eq!(v["mcpServers"]["ooda-index"]["trust"], true);
        p.remove().unwrap();
        assert!(!wt.join(".gemini").exists());
        // The project's settings: kept byte for byte, a stale entry of a
        // killed ooda cleaned.
        std::fs::create_dir_all(wt.join(".gemini")).unwrap();
        let mine = "{\n  \"mcpServers\": {\"db\": {\"command\": \"x\"}}\n}\n";
        std::fs::write(wt.join(".gemini/settings.json"), mine).unwrap();
        let p = install(AgentFormat::GeminiJson, wt, ooda, wt, false)
            .unwrap()
            .unwrap();
        std::mem::forget(p);
        let p = install(AgentFormat::GeminiJson, wt, ooda, wt, false)
            .unwrap()
            .unwrap();
        let v: Value =
            serde_json::from_slice(&std::fs::read(wt.join(".gemini/settings.json")).unwrap())
                .unwrap();
        assert_eq!(v["mcpServers"].as_object().unwrap().len(), 2);
        drop(p);
        let back = std::fs::read_to_string(wt.join(".gemini/settings.json")).unwrap();
        let v: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(v, serde_json::from_str::<Value>(mine).unwrap());
        assert!(
            install(AgentFormat::ClaudeJson, wt, ooda, wt, false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn with_the_compression_hook_in_the_same_file_both_go_even_after_a_killed_ooda() {
        let d = tempfile::tempdir().unwrap();
        let wt = d.path();
        let ooda = Path::new("/opt/ooda");
        std::fs::create_dir_all(wt.join(".gemini")).unwrap();
        let mine = json!({"theme": "dark"});
        // What a killed ooda left: its hook and its server.
        let mut stale = mine.clone();
        stale["hooks"] = json!({"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "/old/ooda compress --hook gemini"}]}]});
        stale["mcpServers"] = json!({"ooda-index": {"command": "/old/ooda", "args": ["mcp"]}});
        let file = wt.join(".gemini/settings.json");
        std::fs::write(&file, stale.to_string()).unwrap();
        let hook = crate::driver::compress_hook::install("gemini", wt, ooda).unwrap();
        let server = install(AgentFormat::GeminiJson, wt, ooda, wt, true)
            .unwrap()
            .unwrap();
        let during: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(during["hooks"]["BeforeTool"].as_array().unwrap().len(), 1);
        assert_eq!(during["mcpServers"]["ooda-index"]["command"], "/opt/ooda");
        server.remove().unwrap();
        hook.remove().unwrap();
        let after: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(after, mine);
    }
}
