//! The four tool presets, end to end. A fake `claude`, `codex`, `gemini` and
//! `aider` on PATH refuses any command line but the preset's exact one (and,
//! for Gemini, the trust variable), takes the prompt the way the real tool
//! does, edits on EXECUTE, and prints what the real tool printed in the
//! captured runs (`tests/fixtures/agent-outputs/real-cli/`: warning lines,
//! usage, framing), with only the model's final text replaced per phase and
//! iteration. Each preset then runs a 3-iteration Brief: two keeps and a
//! discard, read, measured and archived.

use std::os::unix::fs::PermissionsExt;

use ooda::testing::archive::history::Verdict;
use serde_json::Value;

use crate::test::{Test, knob_brief};

const CLAUDE_PLAN: &str =
    include_str!("../fixtures/agent-outputs/real-cli/claude-2.1.197-plan.json");
const CLAUDE_EXECUTE: &str =
    include_str!("../fixtures/agent-outputs/real-cli/claude-2.1.197-execute.json");
const CODEX_PLAN: &str =
    include_str!("../fixtures/agent-outputs/real-cli/codex-0.171.0-plan.jsonl");
const CODEX_EXECUTE: &str =
    include_str!("../fixtures/agent-outputs/real-cli/codex-0.171.0-execute.jsonl");
const CODEX_RECONNECT: &str =
    include_str!("../fixtures/agent-outputs/real-cli/codex-0.171.0-reconnect-then-success.jsonl");
const GEMINI: &str = include_str!("../fixtures/agent-outputs/real-cli/gemini-0.61.0-execute.json");
const AIDER_PLAN: &str = include_str!("../fixtures/agent-outputs/real-cli/aider-0.86.2-plan.txt");
const AIDER_EXECUTE: &str =
    include_str!("../fixtures/agent-outputs/real-cli/aider-0.86.2-execute.txt");
const AIDER_OUTAGE: &str =
    include_str!("../fixtures/agent-outputs/real-cli/aider-0.86.2-plan.persistent-500.stdout.txt");
const AIDER_LEARN: &str = include_str!("../fixtures/agent-outputs/real-cli/aider-0.86.2-learn.txt");

/// X per iteration on the test landscape (best at 40, baseline 10): 25 and
/// 40 are keeps, 60 is worse than 40 and discarded.
const XS: [u32; 3] = [25, 40, 60];

fn plan(x: u32) -> String {
    format!(
        r#"{{"hypothesis": "X={x} is nearer the bottom of the cost curve", "change": "set X to {x} and note it in src/lib.txt", "cites": [0], "axes": [{{"name": "X", "direction": "up"}}], "predicted_effect": 0.2, "predicted_sd": 0.2, "knobs": {{"X": {x}}}}}"#
    )
}

fn execute(x: u32) -> String {
    format!(r#"{{"change": "set X to {x} and noted it in src/lib.txt"}}"#)
}

fn learn(x: u32) -> String {
    format!(
        r#"{{"patterns": [{{"name": "x-{x}", "lesson": "measured X={x}"}}], "next": "try past {x}"}}"#
    )
}

fn text(json: &str) -> String {
    format!("Here is my answer.\n\n```ooda\n{json}\n```\n")
}

/// `fixture` as the tool prints it, with the model's final text replaced.
fn framed(tool: &str, fixture: &str, answer: &str) -> String {
    let text = text(answer);
    match tool {
        "claude" => {
            let mut v: Value = serde_json::from_str(fixture).unwrap();
            v["result"] = text.into();
            v.to_string()
        }
        "codex" => fixture
            .lines()
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(mut v) if v["item"]["type"] == "agent_message" => {
                    v["item"]["text"] = text.clone().into();
                    v.to_string()
                }
                // Warning lines and other events stay byte for byte.
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "gemini" => {
            let start = fixture.find("\n{").unwrap() + 1;
            let mut v: Value = serde_json::from_str(&fixture[start..]).unwrap();
            v["response"] = text.into();
            format!(
                "{}{}",
                &fixture[..start],
                serde_json::to_string_pretty(&v).unwrap()
            )
        }
        "aider" => {
            let start = fixture.find("```ooda\n").unwrap();
            let end = start + 8 + fixture[start + 8..].find("```").unwrap() + 3;
            format!(
                "{}```ooda\n{answer}\n```{}",
                &fixture[..start],
                &fixture[end..]
            )
        }
        _ => unreachable!("{tool}"),
    }
}

/// The fake tool: the exact argv check, then the prompt kept, the edit, the
/// canned output of this phase and iteration.
fn fake(tool: &str) -> String {
    let (check, prompt) = match tool {
        "claude" => (
            r#"[ "$*" = "-p --output-format json --permission-mode acceptEdits" ]"#,
            "cat",
        ),
        "codex" => (
            // Inside ooda's sandbox its own cannot start, so it is off.
            r#"[ "$*" = "exec --json -c approval_policy=\"never\" --sandbox danger-full-access -" ]"#,
            "cat",
        ),
        "gemini" => (
            r#"[ $# = 7 ] && [ "$1 $2 $3 $4 $5 $6 $7" = "--skip-trust --approval-mode auto_edit -o json -p $(cat "$OODA_PROMPT_FILE")" ] && [ "$GEMINI_CLI_TRUST_WORKSPACE" = true ]"#,
            r#"printf '%s' "$7""#,
        ),
        // The step's own arguments sit between these; the test reads them
        // from argv-<phase>-<iteration>.
        "aider" => (
            r#"case "$*" in "--yes-always --no-auto-commits --no-dirty-commits --no-pretty --no-gitignore --no-check-update --no-show-release-notes --no-analytics --edit-format diff --chat-history-file /dev/null --input-history-file /dev/null "*" --message-file $OODA_PROMPT_FILE") ;; *) false ;; esac"#,
            r#"eval "cat \"\${$#}\"""#,
        ),
        _ => unreachable!("{tool}"),
    };
    // Like the real aider, the fake leaves its own files in the worktree
    // (the repository map's cache, a chat history): they are not a change.
    let tool_files = if tool == "aider" {
        "mkdir -p .aider.tags.cache.v4 && echo x > .aider.tags.cache.v4/cache.db\necho chat >> .aider.chat.history.md"
    } else {
        ""
    };
    // Where each real tool keeps its state: writable inside the sandbox.
    let state = match tool {
        "claude" => r#""$CLAUDE_CONFIG_DIR/.claude.json""#,
        "codex" => r#""$CODEX_HOME/history.jsonl""#,
        "gemini" => r#""$HOME/.gemini/state.json""#,
        _ => r#""$HOME/.aider/caches.json""#,
    };
    format!(
        r#"#!/bin/sh
if ! {{ {check}; }}; then
  echo "{tool}: unexpected command line: $*" >&2
  exit 64
fi
# Inside ooda's sandbox: the checkout is read-only, the tool's state is not.
if echo x 2>/dev/null > "$OODA_ITERATIONS_DIR/../../probe"; then
  echo "{tool}: not sandboxed" >&2
  exit 65
fi
if ! echo '{{}}' > {state}.tmp || ! mv {state}.tmp {state}; then
  echo "{tool}: cannot keep its state in {state}" >&2
  exit 66
fi
echo "$*" > "$AGENT_DIR/argv-$OODA_PHASE-$OODA_ITERATION"
{prompt} > "$AGENT_DIR/prompt-$OODA_PHASE-$OODA_ITERATION.md"
if [ "$OODA_PHASE" = execute ]; then echo "tuned in $OODA_ITERATION" >> src/lib.txt; fi
{tool_files}
cat "$AGENT_DIR/$OODA_PHASE-$OODA_ITERATION.out"
"#
    )
}

fn fixtures(tool: &str) -> [&'static str; 3] {
    match tool {
        "claude" => [CLAUDE_PLAN, CLAUDE_EXECUTE, CLAUDE_PLAN],
        // The second EXECUTE hit HTTP 529 and recovered, as Codex did.
        "codex" => [CODEX_PLAN, CODEX_EXECUTE, CODEX_PLAN],
        "gemini" => [GEMINI, GEMINI, GEMINI],
        "aider" => [AIDER_PLAN, AIDER_EXECUTE, AIDER_LEARN],
        _ => unreachable!("{tool}"),
    }
}

/// A repository whose Brief `b` uses the preset `tool`, and a folder with
/// the fake tool in `bin/` and room for its canned outputs.
fn with_fake(tool: &str, iterations: u32) -> (Test, tempfile::TempDir) {
    let t = Test::new();
    t.brief(
        "b",
        &knob_brief(&format!("budget: {{iterations: {iterations}}}\n"))
            .replace("agent: builtin", &format!("agent: {tool}")),
    );
    // The fakes keep their prompts and argv in $AGENT_DIR.
    t.write(
        "ooda.yaml",
        &format!(
            "{}sandbox: {{writable: [$AGENT_DIR]}}\n",
            t.read("ooda.yaml")
        ),
    );
    t.commit("brief");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join(tool);
    std::fs::write(&exe, fake(tool)).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (t, dir)
}

/// The fake tools' environment: `bin/` first on PATH, `AGENT_DIR`, and a
/// HOME outside `$AGENT_DIR` (which the test config makes writable), so a
/// tool's state directory is writable only through its preset's own grant.
struct FakeEnv {
    vars: [(&'static str, String); 3],
    _home: tempfile::TempDir,
}

impl FakeEnv {
    fn pairs(&self) -> Vec<(&str, &str)> {
        self.vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}

fn env_of(dir: &tempfile::TempDir) -> FakeEnv {
    let path = format!(
        "{}:{}",
        dir.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = tempfile::tempdir().unwrap();
    FakeEnv {
        vars: [
            ("PATH", path),
            ("AGENT_DIR", dir.path().to_str().unwrap().to_string()),
            ("HOME", home.path().to_str().unwrap().to_string()),
        ],
        _home: home,
    }
}

fn night_with(tool: &str) {
    let (t, dir) = with_fake(tool, 3);
    let [plan_fx, execute_fx, learn_fx] = fixtures(tool);
    for (i, x) in XS.iter().enumerate() {
        let n = i + 1;
        let execute_fx = if tool == "codex" && n == 2 {
            CODEX_RECONNECT
        } else {
            execute_fx
        };
        for (phase, fx, answer) in [
            ("plan", plan_fx, plan(*x)),
            ("execute", execute_fx, execute(*x)),
            ("learn", learn_fx, learn(*x)),
        ] {
            std::fs::write(
                dir.path().join(format!("{phase}-{n}.out")),
                framed(tool, fx, &answer),
            )
            .unwrap();
        }
    }
    let fake_env = env_of(&dir);
    let env = fake_env.pairs();
    let run = t.ooda_env(&["run", "b"], &env).expect(4);
    // Every iteration's verdict is on stdout, the one that ended the run too.
    for line in [
        "b: baseline archived in iter-000.md",
        "b: iteration 1 keep",
        "b: iteration 2 keep",
        "b: iteration 3 discard",
        "b: stopped: budget_iterations",
    ] {
        assert!(run.stdout.contains(line), "{line} not in\n{}", run.stdout);
    }

    assert_eq!(t.iterations("b"), vec![0, 1, 2, 3]);
    let verdicts: Vec<Verdict> = (1..=3).map(|n| t.record("b", n).verdict).collect();
    assert_eq!(
        verdicts,
        [Verdict::Keep, Verdict::Keep, Verdict::Discard],
        "{}",
        t.read("iterations/b/iter-003.md")
    );
    for (i, x) in XS.iter().enumerate() {
        let n = (i + 1) as u32;
        let rec = t.record("b", n);
        assert_eq!(rec.driver, format!("command:{tool}"));
        assert_eq!(
            rec.hypothesis,
            format!("X={x} is nearer the bottom of the cost curve")
        );
        assert_eq!(
            rec.change,
            format!("set X to {x} and noted it in src/lib.txt")
        );
        assert_eq!(
            ooda::testing::brief::points::key(&rec.knobs),
            format!("X={x}")
        );
        assert_eq!(rec.patterns[0].name, format!("x-{x}"));
        let phases: Vec<&str> = rec.agent_calls.iter().map(|c| c.phase.as_str()).collect();
        assert_eq!(phases, ["plan", "execute", "learn"], "{tool} {n}");
        for call in &rec.agent_calls {
            assert_eq!(
                call.outcome,
                ooda::testing::model::CallOutcome::Ok,
                "{tool} {n}: {call:?}"
            );
            assert!(call.usage.input > 0, "{tool} {n}: {call:?}");
            assert!(call.usage.output > 0, "{tool} {n}: {call:?}");
        }
        assert!(rec.tokens > 0);
        // The prompt reached the tool the way the preset passes it.
        let prompt =
            std::fs::read_to_string(dir.path().join(format!("prompt-plan-{n}.md"))).unwrap();
        assert!(prompt.contains("Make t small."), "{tool}: {prompt}");
        assert!(prompt.contains("```ooda"), "{tool}: {prompt}");
        // No preset is offered the output file it could not write.
        assert!(!prompt.contains("OODA_OUTPUT_FILE"), "{tool}: {prompt}");
    }
    // The branch holds the second keep: X=40 and both EXECUTE edits.
    let head = t.git(&["rev-parse", "ooda/b"]);
    let head = head.trim();
    assert!(
        t.git(&["show", &format!("{head}:ooda.knobs.env")])
            .contains("X=40")
    );
    let lib = t.git(&["show", &format!("{head}:src/lib.txt")]);
    assert!(
        lib.contains("tuned in 1") && lib.contains("tuned in 2"),
        "{lib}"
    );
    assert!(!lib.contains("tuned in 3"), "{lib}");
    let summary = t.read("iterations/b/summary.md");
    assert!(summary.contains("## Agent usage"), "{summary}");
    // Per-tool readings of the real formats.
    let calls = &t.record("b", 1).agent_calls;
    match tool {
        "claude" => {
            assert_eq!(calls[0].model.as_deref(), Some("claude-opus-4-8[1m]"));
            assert!(t.record("b", 1).cost_usd > 0.0);
        }
        "gemini" => assert_eq!(calls[0].model.as_deref(), Some("gemini-2.5-pro")),
        "aider" => {
            // 9 calls at about $0.0005: shown in cents they would read $0.00.
            let summary = t.read("iterations/b/summary.md");
            assert!(summary.contains("| cost | $0.0044 |"), "{summary}");
            for n in 1..=3 {
                let argv = |phase: &str| {
                    std::fs::read_to_string(dir.path().join(format!("argv-{phase}-{n}"))).unwrap()
                };
                let step = |phase: &str| {
                    let a = argv(phase);
                    let from = a.find("/dev/null --input-history-file /dev/null ").unwrap() + 41;
                    let to = a.rfind(" --message-file").unwrap();
                    a[from..to].to_string()
                };
                // PLAN and LEARN only talk; EXECUTE gets the plan's file to
                // edit and the protected benchmark read-only.
                assert_eq!(step("plan"), "--chat-mode ask");
                assert_eq!(step("learn"), "--chat-mode ask");
                let execute = step("execute");
                assert!(execute.starts_with("--file src/lib.txt "), "{execute}");
                assert!(execute.contains("--read bench.sh"), "{execute}");
                assert!(!execute.contains("--file bench.sh"), "{execute}");
                // No "describe what you changed" block is asked of aider.
                let prompt =
                    std::fs::read_to_string(dir.path().join(format!("prompt-execute-{n}.md")))
                        .unwrap();
                assert!(!prompt.contains("```ooda"), "{prompt}");
                let rec = t.record("b", n);
                assert!(
                    rec.changed_paths.iter().all(|p| !p.starts_with(".aider")),
                    "{:?}",
                    rec.changed_paths
                );
            }
            let tree = t.git(&["ls-tree", "-r", "--name-only", head]);
            assert!(!tree.contains(".aider"), "{tree}");
        }
        _ => {}
    }
}

#[test]
fn the_claude_preset_runs_a_night() {
    night_with("claude");
}

#[test]
fn the_codex_preset_runs_a_night() {
    night_with("codex");
}

#[test]
fn the_gemini_preset_runs_a_night() {
    night_with("gemini");
}

#[test]
fn the_aider_preset_runs_a_night() {
    night_with("aider");
}

/// aider retries a down API itself, prints `litellm.…Error` lines and exits
/// 0 with no answer: one unavailable call with aider's words, not a format
/// problem sent back twice.
#[test]
fn an_aider_outage_is_one_failed_call_with_aiders_message() {
    let (t, dir) = with_fake("aider", 2);
    t.write(
        "ooda.yaml",
        &t.read("ooda.yaml")
            .replace("defaults:\n", "defaults:\n  agent_outage: 0s\n"),
    );
    t.commit("no waiting");
    std::fs::write(dir.path().join("plan-1.out"), AIDER_OUTAGE).unwrap();
    let fake_env = env_of(&dir);
    let env = fake_env.pairs();
    t.ooda_env(&["tick", "b"], &env).expect(0);
    t.ooda_env(&["tick", "b"], &env).expect(0);
    let rec = t.record("b", 1);
    assert_eq!(rec.verdict, Verdict::Invalid);
    assert_eq!(rec.agent_calls.len(), 1, "{:?}", rec.agent_calls);
    let call = &rec.agent_calls[0];
    assert_eq!(call.outcome, ooda::testing::model::CallOutcome::Unavailable);
    assert_eq!(call.exit_code, Some(0));
    assert_eq!(
        call.problem.as_deref(),
        Some(
            "agent unavailable: HTTP 500 after 8 retries (aider: litellm.InternalServerError: InternalServerError: OpenAIException - mock fault)"
        )
    );
    assert!(
        rec.reason.starts_with("agent unavailable in PLAN"),
        "{}",
        rec.reason
    );
    assert!(rec.reason.contains("HTTP 500"), "{}", rec.reason);
}

/// What the fake Claude Code does on EXECUTE besides its edit: runs three
/// noisy commands (`make CASE`, a `make` on PATH printing a real tool's
/// output from the corpus) as its Bash tool would, first through the `PreToolUse` hooks of the worktree's
/// settings if there are any (as the real tool reads them), and keeps what
/// it received. It also notes whether the settings file is there.
const CLAUDE_RUNS_COMMANDS: &str = r#"
if [ "$OODA_PHASE" = execute ]; then
  if [ -f .claude/settings.local.json ]; then echo yes > "$AGENT_DIR/hook-seen"; else echo no > "$AGENT_DIR/hook-seen"; fi
  for case in cargo-clippy-pedantic pytest-fail-verbose uvicorn-access-log; do
    cmd="make $case"
    if [ -f .claude/settings.local.json ]; then
      hook=$(python3 -c 'import json; print(json.load(open(".claude/settings.local.json"))["hooks"]["PreToolUse"][0]["hooks"][0]["command"])')
      answer=$(printf '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"%s"}}' "$cmd" | sh -c "$hook")
      if [ -n "$answer" ]; then
        cmd=$(printf '%s' "$answer" | python3 -c 'import json, sys; print(json.load(sys.stdin)["hookSpecificOutput"]["updatedInput"]["command"])')
      fi
    fi
    sh -c "$cmd" > "$AGENT_DIR/received-$case" 2>&1
  done
fi
"#;

/// With `compress_commands: true`, the Claude Code preset's EXECUTE step
/// finds ooda's hook in the candidate worktree's settings, its commands'
/// output reaches it compressed, and the hook is gone after the step (in
/// no commit, not in the worktree). Without it, the raw output.
#[test]
fn claude_s_own_commands_go_through_ooda_compress_for_the_step_only() {
    let received = |compress: bool| -> Vec<(String, usize, usize)> {
        let (t, dir) = with_fake("claude", 1);
        let fake = std::fs::read_to_string(dir.path().join("bin/claude")).unwrap();
        let fake = fake.replace(
            "\ncat \"$AGENT_DIR/$OODA_PHASE-$OODA_ITERATION.out\"",
            &format!("{CLAUDE_RUNS_COMMANDS}\ncat \"$AGENT_DIR/$OODA_PHASE-$OODA_ITERATION.out\""),
        );
        std::fs::write(dir.path().join("bin/claude"), fake).unwrap();
        let make = dir.path().join("bin/make");
        std::fs::write(&make, "#!/bin/sh\ncat \"$AGENT_DIR/$1.log\"\n").unwrap();
        std::fs::set_permissions(&make, std::fs::Permissions::from_mode(0o755)).unwrap();
        if compress {
            t.write(
                "ooda.yaml",
                &format!(
                    "{}agents:\n  claude: {{compress_commands: true}}\n",
                    t.read("ooda.yaml")
                ),
            );
            t.commit("compress the agent's commands");
        }
        let cases = [
            "cargo-clippy-pedantic",
            "pytest-fail-verbose",
            "uvicorn-access-log",
        ];
        for case in cases {
            std::fs::copy(
                format!(
                    "{}/benches/compress/corpus/{case}/raw.log",
                    env!("CARGO_MANIFEST_DIR")
                ),
                dir.path().join(format!("{case}.log")),
            )
            .unwrap();
        }
        for (phase, fx, answer) in [
            ("plan", CLAUDE_PLAN, plan(25)),
            ("execute", CLAUDE_EXECUTE, execute(25)),
            ("learn", CLAUDE_PLAN, learn(25)),
        ] {
            std::fs::write(
                dir.path().join(format!("{phase}-1.out")),
                framed("claude", fx, &answer),
            )
            .unwrap();
        }
        let fake_env = env_of(&dir);
        t.ooda_env(&["run", "b"], &fake_env.pairs()).expect(4);
        assert_eq!(t.record("b", 1).verdict, Verdict::Keep);
        let seen = std::fs::read_to_string(dir.path().join("hook-seen")).unwrap();
        assert_eq!(seen.trim(), if compress { "yes" } else { "no" });
        // Gone after the step: not in the worktree, not in the kept commit.
        assert!(!t.path().join(".ooda/worktrees/b/cand/.claude").exists());
        let files = t.git(&["show", "--name-only", "--format=", "ooda/b"]);
        assert!(!files.contains(".claude"), "{files}");
        cases
            .iter()
            .map(|case| {
                let raw = std::fs::read_to_string(dir.path().join(format!("{case}.log"))).unwrap();
                let got =
                    std::fs::read_to_string(dir.path().join(format!("received-{case}"))).unwrap();
                (case.to_string(), raw.chars().count(), got.chars().count())
            })
            .collect()
    };
    let plain = received(false);
    let compressed = received(true);
    for ((case, raw, without), (_, _, with)) in plain.iter().zip(&compressed) {
        // What the docs report (docs/benchmarks.md).
        eprintln!("{case}: raw {raw}, received without {without}, with {with}");
        assert_eq!(without, raw, "{case}");
        assert!(with * 2 < *without, "{case}: {with} of {without}");
    }
}

/// The MCP client a fake agent CLI plays in the EXECUTE step: it finds the
/// code index's server where its tool would (Claude's `--mcp-config`,
/// Codex's `-c mcp_servers.…`, Gemini's `.gemini/settings.json`), starts
/// it as the tool would, inside ooda's sandbox, and asks `explore`.
const MCP_CLIENT: &str = r#"
import json, os, subprocess, sys
tool, argv = sys.argv[1], sys.argv[2:]
if tool == "claude":
    cfg = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]["ooda-index"]
    cmd = [cfg["command"]] + cfg["args"]
elif tool == "codex":
    vals = {}
    for i, a in enumerate(argv[:-1]):
        if a == "-c" and argv[i + 1].startswith("mcp_servers.ooda-index."):
            k, v = argv[i + 1].split("=", 1)
            vals[k.rsplit(".", 1)[1]] = json.loads(v)
    cmd = [vals["command"]] + vals["args"]
else:
    cfg = json.load(open(".gemini/settings.json"))["mcpServers"]["ooda-index"]
    assert cfg["trust"] is True
    cmd = [cfg["command"]] + cfg["args"]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def ask(m):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline()) if "id" in m else None
ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": tool, "version": "1"}}})
ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
r = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "explore", "arguments": {"name": "tune"}}})
p.stdin.close(); p.wait()
open(os.path.join(os.environ["AGENT_DIR"], "mcp-answer"), "w").write(r["result"]["content"][0]["text"])
"#;

/// With `index: true`, each CLI that takes MCP servers gets `ooda mcp`
/// registered for the step, exactly as its command line or settings show,
/// the server answers inside ooda's sandbox, and the registration is gone
/// after the step (not in the worktree, not in the kept commit).
#[test]
fn the_code_index_is_registered_with_each_cli_for_the_step_only() {
    for tool in ["claude", "codex", "gemini"] {
        let (t, dir) = with_fake(tool, 1);
        t.write(
            "ooda.yaml",
            &format!(
                "{}agents:\n  {tool}: {{index: true}}\n",
                t.read("ooda.yaml")
            ),
        );
        t.write(
            "src/tune.py",
            "def tune(x):\n    return helper(x) * 2\n\ndef helper(x):\n    return x + 1\n\ndef caller():\n    return tune(3)\n",
        );
        t.commit("index the code");
        std::fs::write(dir.path().join("mcp_client.py"), MCP_CLIENT).unwrap();
        let fake = std::fs::read_to_string(dir.path().join(format!("bin/{tool}"))).unwrap();
        // The command line with the registration, exactly.
        let check = match tool {
            "claude" => r#"case "$*" in "-p --output-format json --permission-mode acceptEdits --mcp-config {\"mcpServers\":{\"ooda-index\":{\"args\":[\"mcp\",\"--root\",\"$PWD\",\"--index-dir\","*"--allowedTools mcp__ooda-index") ;; *) false ;; esac"#.to_string(),
            "codex" => r#"case "$*" in "exec --json -c approval_policy=\"never\" --sandbox danger-full-access -c mcp_servers.ooda-index.command=\""*"\" -c mcp_servers.ooda-index.args=[\"mcp\",\"--root\",\"$PWD\",\"--index-dir\","*"] -") ;; *) false ;; esac"#.to_string(),
            _ => r#"[ $# = 7 ] && [ -f .gemini/settings.json ]"#.to_string(),
        };
        let old_check = fake.lines().nth(1).unwrap().to_string();
        let fake = fake.replacen(&old_check, &format!("if ! {{ {check}; }}; then"), 1);
        let fake = fake.replace(
            "\ncat \"$AGENT_DIR/$OODA_PHASE-$OODA_ITERATION.out\"",
            &format!(
                "\nif [ \"$OODA_PHASE\" = execute ]; then python3 \"$AGENT_DIR/mcp_client.py\" {tool} \"$@\" || exit 70; fi\ncat \"$AGENT_DIR/$OODA_PHASE-$OODA_ITERATION.out\""
            ),
        );
        std::fs::write(dir.path().join(format!("bin/{tool}")), fake).unwrap();
        let [p, e, l] = fixtures(tool);
        for (phase, fx, answer) in [
            ("plan", p, plan(25)),
            ("execute", e, execute(25)),
            ("learn", l, learn(25)),
        ] {
            std::fs::write(
                dir.path().join(format!("{phase}-1.out")),
                framed(tool, fx, &answer),
            )
            .unwrap();
        }
        let fake_env = env_of(&dir);
        t.ooda_env(&["run", "b"], &fake_env.pairs()).expect(4);
        assert_eq!(t.record("b", 1).verdict, Verdict::Keep, "{tool}");
        let answer = std::fs::read_to_string(dir.path().join("mcp-answer")).unwrap();
        for want in [
            "src/tune.py:1-2 function tune — def tune(x)",
            "src/tune.py:7-8 function caller — at line 8 [resolved]",
            "helper (line 2) → src/tune.py:4-5 function helper [resolved]",
        ] {
            assert!(answer.contains(want), "{tool}: {want}\nin\n{answer}");
        }
        let argv = std::fs::read_to_string(dir.path().join("argv-execute-1")).unwrap();
        eprintln!("{tool} EXECUTE: {argv}");
        // Gone after the step.
        assert!(
            !t.path().join(".ooda/worktrees/b/cand/.gemini").exists(),
            "{tool}"
        );
        let files = t.git(&["show", "--name-only", "--format=", "ooda/b"]);
        assert!(
            !files.contains(".gemini") && !files.contains("index"),
            "{files}"
        );
        // Built once, outside the sandbox, in ooda's own folder.
        assert!(t.path().join(".ooda/index").read_dir().unwrap().count() >= 1);
    }
}
