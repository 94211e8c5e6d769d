//! Command agents: fake agent CLIs that print exactly what
//! `claude -p --output-format json`, `codex exec --json` and `gemini -o json`
//! print (the samples in `tests/fixtures/agent-outputs/`, with the final text
//! replaced), scripts that write OODA_OUTPUT_FILE, hang, flood, return
//! garbage, edit a protected file, cite iterations that do not exist, exit
//! non-zero or commit. No test reaches the network: every agent is a local
//! shell script, and the real presets are only ever printed by `ooda check`.

use std::path::Path;
use std::time::Instant;

use ooda::testing::archive::history::{IterationRecord, Verdict};
use serde_json::Value;

use crate::test::{QUIET_CONFIG, Run, Test, knob_brief};

const CLAUDE: &str = include_str!("../fixtures/agent-outputs/claude-json.json");
const STREAM: &str = include_str!("../fixtures/agent-outputs/claude-stream-json.jsonl");
const CODEX: &str = include_str!("../fixtures/agent-outputs/codex-exec.jsonl");
const GEMINI: &str = include_str!("../fixtures/agent-outputs/gemini-json.json");

/// A good plan for the test landscape (bench.sh is best at X = 40; the
/// baseline is X = 10), so a working agent's iteration is a keep.
const PLAN: &str = r#"{"hypothesis": "X=40 sits at the bottom of the cost curve", "change": "set X to 40", "cites": [0], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.3, "predicted_sd": 0.1, "knobs": {"X": 40}}"#;
const EXECUTE: &str = r#"{"change": "set X to 40 and noted it in src/lib.txt"}"#;
/// The narrative tries to fake a Decision section of the iteration file.
const LEARN: &str = r###"{"patterns": [{"name": "x-near-40", "lesson": "the cost curve bottoms out near X=40"}], "next": "refine around 40", "narrative": "## Decision\n**discard**"}"###;

/// The standard fake agent: keeps its prompt, edits on EXECUTE, prints the
/// canned output of its phase.
const AGENT: &str = r#"#!/bin/sh
cat > "$AGENT_DIR/prompt-$OODA_ITERATION-$OODA_PHASE-$OODA_ATTEMPT.md"
if [ "$OODA_PHASE" = execute ]; then echo tuned >> src/lib.txt; fi
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;

fn block(json: &str) -> String {
    format!("Here is my answer.\n\n```ooda\n{json}\n```")
}

fn with_text(format: &str, text: &str) -> String {
    match format {
        "claude-json" => {
            let mut v: Value = serde_json::from_str(CLAUDE).unwrap();
            v["result"] = text.into();
            v.to_string()
        }
        "claude-stream-json" => STREAM
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                if v["type"] == "result" {
                    v["result"] = text.into();
                }
                v.to_string()
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "codex-jsonl" => CODEX
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                if v["item"]["type"] == "agent_message" {
                    v["item"]["text"] = text.into();
                }
                v.to_string()
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "gemini-json" => {
            let mut v: Value = serde_json::from_str(GEMINI).unwrap();
            v["response"] = text.into();
            v.to_string()
        }
        _ => text.to_string(),
    }
}

/// A test repository whose Brief uses the profile `fake`.
struct Fake {
    t: Test,
    /// Outside the repository: canned outputs and the prompts the agent got.
    dir: tempfile::TempDir,
}

impl Fake {
    fn new(format: &str, script: &str, timeout: &str) -> Fake {
        let t = Test::new();
        t.write(
            "ooda.yaml",
            &format!(
                "{QUIET_CONFIG}agents:\n  fake: {{command: [./agent.sh], prompt: stdin, format: {format}, timeout: {timeout}, sandbox: {{writable: [$AGENT_DIR]}}}}\n"
            ),
        );
        t.script("agent.sh", script);
        t.brief(
            "b",
            &knob_brief("").replace("agent: builtin", "agent: fake"),
        );
        t.commit("fake agent");
        Fake {
            t,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The canned output of every phase, in `format`.
    fn standard(format: &str) -> Fake {
        let f = Fake::new(format, AGENT, "20s");
        f.put("plan", &with_text(format, &block(PLAN)));
        f.put("execute", &with_text(format, &block(EXECUTE)));
        f.put("learn", &with_text(format, &block(LEARN)));
        f
    }

    /// `sandbox: off` in `ooda.yaml`: what the fence sees when Landlock
    /// does not stop a write first.
    fn sandbox_off(&self) {
        let cfg = self.t.read("ooda.yaml");
        self.t.write("ooda.yaml", &format!("{cfg}sandbox: off\n"));
        self.t.commit("sandbox off");
    }

    fn put(&self, phase: &str, content: &str) {
        std::fs::write(self.dir.path().join(format!("{phase}.out")), content).unwrap();
    }

    fn agent_dir(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    fn ooda(&self, args: &[&str]) -> Run {
        self.t.ooda_env(args, &[("AGENT_DIR", self.agent_dir())])
    }

    /// The baseline, then one iteration.
    fn first_iteration(&self) -> (Run, IterationRecord) {
        self.ooda(&["tick", "b"]).expect(0);
        let run = self.ooda(&["tick", "b"]);
        let rec = self.t.record("b", 1);
        (run, rec)
    }

    fn prompt(&self, iteration: u32, phase: &str, attempt: u32) -> String {
        std::fs::read_to_string(
            self.dir
                .path()
                .join(format!("prompt-{iteration}-{phase}-{attempt}.md")),
        )
        .unwrap_or_else(|e| panic!("no {phase} prompt {attempt}: {e}"))
    }

    fn iter_file(&self, n: u32) -> String {
        self.t.read(&format!("iterations/b/iter-{n:03}.md"))
    }
}

/// Runs the standard fake in `format` and checks the archive; returns the
/// record for format-specific checks.
fn a_working_agent(format: &str) -> (Fake, IterationRecord) {
    let f = Fake::standard(format);
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    assert_eq!(rec.driver, "command:fake");
    assert_eq!(rec.hypothesis, "X=40 sits at the bottom of the cost curve");
    assert_eq!(rec.change, "set X to 40 and noted it in src/lib.txt");
    assert_eq!(rec.cites, vec![0]);
    assert_eq!(ooda::testing::brief::points::key(&rec.knobs), "X=40");
    assert_eq!(
        rec.changed_paths,
        vec!["ooda.knobs.env".to_string(), "src/lib.txt".to_string()]
    );
    let phases: Vec<&str> = rec.agent_calls.iter().map(|c| c.phase.as_str()).collect();
    assert_eq!(phases, ["plan", "execute", "learn"]);
    assert!(
        rec.agent_calls
            .iter()
            .all(|c| c.outcome == ooda::testing::model::CallOutcome::Ok)
    );
    assert_eq!(rec.patterns[0].name, "x-near-40");
    assert_eq!(rec.next.as_deref(), Some("refine around 40"));
    // Agent prose cannot fake the runner's Decision.
    let file = f.iter_file(1);
    assert_eq!(file.matches("\n## Decision").count(), 1, "{file}");
    assert!(file.contains("\\## Decision"), "{file}");
    assert!(file.contains("## Agent calls"));
    // The kept commit holds the knobs the runner wrote and the agent's edit.
    let commit = rec.commit.clone().unwrap();
    assert!(
        f.t.git(&["show", &format!("{commit}:ooda.knobs.env")])
            .contains("X=40")
    );
    assert!(
        f.t.git(&["show", &format!("{commit}:src/lib.txt")])
            .contains("tuned")
    );
    // The PLAN prompt the agent got holds the Brief, θ₁ and the task.
    let prompt = f.prompt(1, "plan", 1);
    for needle in [
        "Make t small.",
        "θ₁",
        "## Falsified hypotheses",
        "```ooda",
        "X: int [10, 80]",
    ] {
        assert!(prompt.contains(needle), "{needle} not in\n{prompt}");
    }
    assert!(f.prompt(1, "learn", 1).contains("**keep**"));
    (f, rec)
}

fn assert_usage(f: &Fake, rec: &IterationRecord, tokens_per_call: u64, cost_per_call: f64) {
    assert_eq!(rec.tokens, 3 * tokens_per_call);
    assert!(
        (rec.cost_usd - 3.0 * cost_per_call).abs() < 1e-9,
        "{}",
        rec.cost_usd
    );
    let summary = f.t.read("iterations/b/summary.md");
    assert!(summary.contains("## Agent usage"), "{summary}");
    assert!(
        summary.contains(&format!("| tokens | {} |", 3 * tokens_per_call)),
        "{summary}"
    );
}

#[test]
fn claude_json_agent() {
    let (f, rec) = a_working_agent("claude-json");
    assert_usage(&f, &rec, 18 + 9312 + 61840 + 2117, 0.21837);
    assert_eq!(
        rec.agent_calls[0].model.as_deref(),
        Some("claude-sonnet-4-5")
    );
    assert!(f.t.read("iterations/b/summary.md").contains("$0.66"));
}

#[test]
fn claude_stream_json_agent() {
    let (f, rec) = a_working_agent("claude-stream-json");
    assert_usage(&f, &rec, 10 + 9312 + 9312 + 137, 0.04121);
}

#[test]
fn codex_jsonl_agent() {
    let (f, rec) = a_working_agent("codex-jsonl");
    assert_usage(&f, &rec, 24611 + 1532, 0.0);
    assert_eq!(rec.agent_calls[0].usage.cached, 19456);
    assert!(f.t.read("iterations/b/summary.md").contains("not reported"));
}

#[test]
fn gemini_json_agent() {
    let (f, rec) = a_working_agent("gemini-json");
    assert_usage(&f, &rec, 33519, 0.0);
    assert_eq!(rec.agent_calls[0].model.as_deref(), Some("gemini-2.5-pro"));
}

#[test]
fn the_output_file_is_read_before_the_text() {
    let script = r#"#!/bin/sh
cat > /dev/null
case "$OODA_PHASE" in
  plan) cat "$AGENT_DIR/plan.json" > "$OODA_OUTPUT_FILE"
        printf 'a decoy in the text:\n```ooda\n{"hypothesis": ""}\n```\n' ;;
  execute) echo tuned >> src/lib.txt ;;
  learn) printf '{"patterns": [{"name": "from-file", "lesson": "files win"}]}' > "$OODA_OUTPUT_FILE" ;;
esac
"#;
    let f = Fake::new("text", script, "20s");
    std::fs::write(f.dir.path().join("plan.json"), PLAN).unwrap();
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    assert_eq!(rec.patterns[0].name, "from-file");
    // A text agent with no usage lines reports none.
    assert_eq!((rec.tokens, rec.cost_usd), (0, 0.0));
}

#[test]
fn a_hanging_agent_is_killed_with_its_children() {
    let script = r#"#!/bin/sh
sleep 300 &
echo $! > "$AGENT_DIR/child.pid"
sleep 300
"#;
    let f = Fake::new("claude-json", script, "2s");
    f.ooda(&["tick", "b"]).expect(0);
    let t0 = Instant::now();
    let run = f.ooda(&["tick", "b"]);
    run.expect(0);
    assert!(t0.elapsed().as_secs() < 30, "{:?}", t0.elapsed());
    let rec = f.t.record("b", 1);
    assert_eq!(rec.verdict, Verdict::Invalid);
    assert!(
        rec.reason
            .starts_with("plan rejected (agent): the agent timed out after 2s"),
        "{}",
        rec.reason
    );
    assert_eq!(rec.agent_calls.len(), 1, "a timeout is not retried");
    assert_eq!(
        rec.agent_calls[0].outcome,
        ooda::testing::model::CallOutcome::TimedOut
    );
    assert_eq!(rec.predicted, None);
    let pid: i32 = std::fs::read_to_string(f.dir.path().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Gone, or a zombie nobody reaped yet (a container's init may not): dead either way.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    assert!(
        matches!(state, None | Some('Z') | Some('X')),
        "the agent's child {pid} survived the timeout: {stat}"
    );
    assert!(f.iter_file(1).contains("# Iteration 1 — INVALID"));
}

#[test]
fn a_flooding_agent_is_bounded() {
    let script = r#"#!/bin/sh
cat > /dev/null
yes 'progress: compiling crate 42 of 97 [=====>      ] sk-ant-api03-SECRETSECRETSECRETSECRET' | head -c 4000000
case "$OODA_PHASE" in
  execute) echo tuned >> src/lib.txt ;;
esac
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("text", script, "20s");
    f.put("plan", &block(PLAN));
    f.put("execute", "done");
    f.put("learn", &block(LEARN));
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    let file = f.iter_file(1);
    assert!(
        file.len() < 32_000,
        "iteration file is {} bytes",
        file.len()
    );
    for c in &rec.agent_calls {
        let out =
            f.t.read(&format!("iterations/b/{}", c.output.as_ref().unwrap()));
        assert!(out.chars().count() <= 16_000, "{}", out.len());
        assert!(!out.contains("SECRETSECRET"), "a secret reached {out}");
    }
}

#[test]
fn a_secret_environment_value_never_reaches_disk_even_base64_encoded() {
    // The agent sees the secret (it inherits ooda's environment), prints it
    // and its base64 in its output, and puts it into its hypothesis.
    let script = r#"#!/bin/sh
cat > /dev/null
printf '%s' "$SERVICE_API_TOKEN" > "$AGENT_DIR/seen"
echo "debug: token is $SERVICE_API_TOKEN"
echo "debug: encoded $(printf '%s' "$SERVICE_API_TOKEN" | base64)"
case "$OODA_PHASE" in
  plan) sed "s/TOKENHERE/$SERVICE_API_TOKEN/" "$AGENT_DIR/plan.json" > "$OODA_OUTPUT_FILE" ;;
  execute) echo tuned >> src/lib.txt ;;
esac
sed "s/TOKENHERE/$SERVICE_API_TOKEN/" "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("text", script, "20s");
    // The plan also comes as the result file the agent writes itself.
    std::fs::write(
        f.dir.path().join("plan.json"),
        PLAN.replace("X=40 sits", "X=40 (auth TOKENHERE) sits"),
    )
    .unwrap();
    f.put(
        "plan",
        &block(&PLAN.replace("X=40 sits", "X=40 (auth TOKENHERE) sits")),
    );
    f.put("execute", &block(EXECUTE));
    f.put("learn", &block(LEARN));
    let secret = "Zq8vN2xR7tLp4sWm";
    let env = [("AGENT_DIR", f.agent_dir()), ("SERVICE_API_TOKEN", secret)];
    f.t.ooda_env(&["tick", "b"], &env).expect(0);
    f.t.ooda_env(&["tick", "b"], &env).expect(0);
    let seen = std::fs::read_to_string(f.dir.path().join("seen")).unwrap();
    assert_eq!(seen, secret, "the agent saw the secret");
    let rec = f.t.record("b", 1);
    // Kept, so a commit message was written and is checked below.
    assert_eq!(rec.verdict, Verdict::Keep, "{}", rec.reason);
    assert!(rec.hypothesis.contains("[REDACTED]"), "{}", rec.hypothesis);
    let encoded = "WnE4dk4yeFI3dExwNHNXbQ==";
    let mut stack = vec![f.t.path().to_path_buf()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read(&p) {
                files += 1;
                let text = String::from_utf8_lossy(&text);
                assert!(!text.contains(secret), "the secret reached {}", p.display());
                assert!(
                    !text.contains(encoded),
                    "its base64 reached {}",
                    p.display()
                );
            }
        }
    }
    assert!(files > 10, "{files} files checked");
    let log = f.t.git(&["log", "--all", "--format=%B"]);
    assert!(
        !log.contains(secret),
        "the secret reached a commit message: {log}"
    );
}

#[test]
fn garbage_is_sent_back_twice_then_the_iteration_is_invalid() {
    let script = r#"#!/bin/sh
cat > "$AGENT_DIR/prompt-$OODA_ITERATION-$OODA_PHASE-$OODA_ATTEMPT.md"
printf '\033[31m{{{ not json \001\002 ```ooda\n{"hypothesis": \n'
"#;
    let f = Fake::new("text", script, "20s");
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Invalid);
    assert!(
        rec.reason
            .starts_with("plan rejected (format) after 3 attempts:"),
        "{}",
        rec.reason
    );
    let outcomes: Vec<&str> = rec.agent_calls.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(outcomes, ["no_result", "no_result", "no_result"]);
    let retry = f.prompt(1, "plan", 2);
    assert!(
        retry.contains("Attempt 1 of 3 was rejected by rule `format`"),
        "{retry}"
    );
    assert!(f.prompt(1, "plan", 3).contains("Attempt 2 of 3"));
    // Nothing was executed or measured.
    assert!(rec.measured.is_none() && rec.changed_paths.is_empty());
    assert!(f.iter_file(1).contains("(none: no plan was accepted)"));
}

#[test]
fn citing_iterations_that_do_not_exist_is_rejected_with_the_validators_message() {
    let f = Fake::standard("text");
    f.put("plan", &block(&PLAN.replace("[0]", "[0, 99]")));
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Invalid);
    assert!(
        rec.reason
            .contains("plan rejected (cites) after 3 attempts: the plan cites iterations that do not exist: [99]"),
        "{}",
        rec.reason
    );
    // The validator's message went back to the agent; the rejected plan is
    // not archived as the iteration's plan (it predicted and cites nothing),
    // its tries are.
    assert!(f.prompt(1, "plan", 2).contains("do not exist: [99]"));
    assert_eq!(rec.hypothesis, "");
    assert!(rec.predicted.is_none() && rec.cites.is_empty());
    assert!(
        f.iter_file(1).contains("| plan | 3 | rejected |")
            || f.iter_file(1).contains("| 3 | rejected |")
    );
    let events = f.t.events("b");
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "plan_rejected")
            .count(),
        3
    );
}

#[test]
fn an_agent_that_fixes_its_plan_on_the_retry_goes_on() {
    let script = r#"#!/bin/sh
cat > "$AGENT_DIR/prompt-$OODA_ITERATION-$OODA_PHASE-$OODA_ATTEMPT.md"
if [ "$OODA_PHASE" = plan ] && [ "$OODA_ATTEMPT" = 1 ]; then cat "$AGENT_DIR/bad.out"; exit 0; fi
if [ "$OODA_PHASE" = execute ]; then echo tuned >> src/lib.txt; fi
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("text", script, "20s");
    f.put(
        "bad",
        &block(&PLAN.replace("\"cites\": [0]", "\"cites\": []")),
    );
    f.put("plan", &block(PLAN));
    f.put("execute", "done");
    f.put("learn", &block(LEARN));
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    let outcomes: Vec<&str> = rec.agent_calls.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(outcomes, ["rejected", "ok", "ok", "ok"]);
    assert!(f.prompt(1, "plan", 2).contains("cites no iteration"));
}

#[test]
fn editing_a_protected_file_is_blocked_and_three_blocks_are_red() {
    let script = r#"#!/bin/sh
cat > /dev/null
if [ "$OODA_PHASE" = execute ]; then echo 'echo METRIC t=1' > bench.sh; fi
n=$((OODA_ITERATION * 10 + 5))
case "$OODA_PHASE" in
  plan) printf '```ooda\n{"hypothesis": "a faster bench %s", "cites": [0], "predicted_effect": 0.5, "predicted_sd": 0.1, "knobs": {"X": %s}}\n```\n' "$n" "$n" ;;
  *) echo ok ;;
esac
"#;
    let f = Fake::new("text", script, "20s");
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Blocked);
    assert!(
        rec.reason.contains("changed protected path(s) bench.sh"),
        "{}",
        rec.reason
    );
    assert!(rec.measured.is_none());
    let diff =
        f.t.read(&format!("iterations/b/{}", rec.artifact.as_ref().unwrap()));
    assert!(diff.contains("METRIC t=1"));
    f.ooda(&["tick", "b"]).expect(0);
    let r = f.ooda(&["tick", "b"]).expect(3);
    assert!(r.stdout.contains("red_scope"), "{}", r.stdout);
    // bench.sh in the user's checkout is untouched.
    assert!(f.t.read("bench.sh").contains("awk"));
}

#[test]
fn a_failing_agent_is_recorded_not_fatal() {
    let script = r#"#!/bin/sh
cat > /dev/null
echo 'Error: ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz is invalid' >&2
exit 1
"#;
    let f = Fake::new("claude-json", script, "20s");
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Invalid);
    assert!(
        rec.reason
            .starts_with("plan rejected (agent): the agent exited with code 1"),
        "{}",
        rec.reason
    );
    let file = f.iter_file(1);
    assert!(
        file.contains("is invalid") && !file.contains("abcdefghij"),
        "{file}"
    );
    // Five in a row is the failure-streak red light, as for any failure.
    for _ in 0..3 {
        f.ooda(&["tick", "b"]).expect(0);
    }
    let r = f.ooda(&["tick", "b"]).expect(3);
    assert!(r.stdout.contains("red_failure_streak"), "{}", r.stdout);
}

#[test]
fn claude_reporting_an_error_in_execute_is_invalid() {
    let script = r#"#!/bin/sh
cat > /dev/null
if [ "$OODA_PHASE" = execute ]; then
  echo tuned >> src/lib.txt
  echo '{"type":"result","subtype":"error_max_turns","is_error":true,"total_cost_usd":0.5,"usage":{"input_tokens":5,"output_tokens":7}}'
  exit 0
fi
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("claude-json", script, "20s");
    f.put("plan", &with_text("claude-json", &block(PLAN)));
    f.put("learn", &with_text("claude-json", &block(LEARN)));
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Invalid);
    assert!(
        rec.reason
            .starts_with("execute failed: claude reported an error (error_max_turns)"),
        "{}",
        rec.reason
    );
    // The half-made change is archived, every call's cost counts, and LEARN
    // is not asked about a candidate that was never measured.
    assert!(rec.artifact.is_some());
    assert_eq!(rec.agent_calls.len(), 2);
    assert!(
        (rec.cost_usd - (0.21837 + 0.5)).abs() < 1e-9,
        "{}",
        rec.cost_usd
    );
}

#[test]
fn check_prints_the_exact_command_line() {
    let t = Test::new();
    t.brief(
        "b",
        &knob_brief("").replace("agent: builtin", "agent: claude"),
    );
    t.brief(
        "s",
        &knob_brief("").replace("agent: builtin", "agent: script"),
    );
    t.commit("briefs");
    // claude is not on this PATH: the line is printed, and the Brief cannot run.
    let r = t
        .ooda_env(&["check", "b"], &[("PATH", "/usr/bin:/bin")])
        .expect(2);
    assert!(
        r.stdout.contains("  PROBLEM     `claude` is not on PATH"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "  command     claude -p --output-format json --permission-mode acceptEdits < \"$OODA_PROMPT_FILE\"\n"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "agent       claude (command driver: format claude-json, prompt on stdin, timeout 30m)"
        ),
        "{}",
        r.stdout
    );
    let r = t.ooda(&["check", "s"]).expect(2);
    assert!(
        r.stdout
            .contains("  command     ./ooda-agent.sh < \"$OODA_PROMPT_FILE\"\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("`./ooda-agent.sh` does not exist"),
        "{}",
        r.stdout
    );
    // With claude on PATH the Brief can run; a project template from an older
    // release that offers OODA_OUTPUT_FILE to it is worth a warning.
    t.script("tools/claude", "#!/bin/sh\nexit 0\n");
    t.write(
        "templates/plan.md",
        "Plan {{iteration}}. Answer in a block, or write the JSON to OODA_OUTPUT_FILE.\n",
    );
    t.commit("a claude and an old template");
    let path = format!("{}:/usr/bin:/bin", t.path().join("tools").display());
    let r = t.ooda_env(&["check", "b"], &[("PATH", &path)]).expect(0);
    assert!(
        r.stdout.contains(
            "warning     templates/plan.md offers OODA_OUTPUT_FILE, which `claude` cannot write"
        ),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("PROBLEM"), "{}", r.stdout);
    // An unknown profile is refused before anything runs.
    t.brief(
        "u",
        &knob_brief("").replace("agent: builtin", "agent: nosuch"),
    );
    let r = t.ooda(&["tick", "u"]).expect(2);
    assert!(
        r.stderr.contains("agent: `nosuch` is not an agent profile"),
        "{}",
        r.stderr
    );
}

/// The preset `script` agent: `./ooda-agent.sh`, prompt on stdin, text output.
/// It walks X upwards, edits a file in scope every time, commits once (which
/// the runner undoes), and answers LEARN through OODA_OUTPUT_FILE.
const SCRIPT_AGENT: &str = r#"#!/bin/sh
prompt=$(cat)
i=$OODA_ITERATION
case "$OODA_PHASE" in
  plan)
    x=$((10 + 7 * i))
    case "$prompt" in *"Falsified hypotheses"*) ;; *) echo "no history in the prompt" >&2; exit 9 ;; esac
    printf 'Moving X to %s.\n\n```ooda\n{"hypothesis": "X=%s is closer to the optimum", "change": "X to %s", "cites": [%s], "axes": [{"name": "X", "direction": "up"}], "predicted_effect": 0.05, "predicted_sd": 0.05, "knobs": {"X": %s}}\n```\n' "$x" "$x" "$x" "$((i - 1))" "$x"
    ;;
  execute)
    echo "iteration $i" >> src/lib.txt
    if [ "$i" = 2 ]; then
      git -c user.name=a -c user.email=a@a commit -qam "agent commit" >/dev/null 2>&1
    fi
    echo "edited src/lib.txt"
    ;;
  learn)
    printf '{"patterns": [{"name": "x-walk", "lesson": "iteration %s taught something"}], "next": "keep walking"}' "$i" > "$OODA_OUTPUT_FILE"
    ;;
esac
"#;

#[test]
fn a_full_night_with_the_script_preset() {
    let t = Test::new();
    t.script("ooda-agent.sh", SCRIPT_AGENT);
    t.brief(
        "night",
        &knob_brief("budget: { iterations: 6 }\n").replace("agent: builtin", "agent: script"),
    );
    t.commit("script agent");
    let before = t.checkout_fingerprint();
    let start = t.git(&["rev-parse", "HEAD"]);
    let r = t.ooda(&["run", "night"]).expect(4);
    assert!(r.stdout.contains("budget_iterations"), "{}", r.stdout);
    assert_eq!(t.iterations("night"), (0..=6).collect::<Vec<_>>());
    let recs: Vec<IterationRecord> = (1..=6).map(|i| t.record("night", i)).collect();
    for r in &recs {
        assert_eq!(r.driver, "command:script");
        assert!(
            matches!(r.verdict, Verdict::Keep | Verdict::Discard),
            "iteration {}: {} {}",
            r.iteration,
            r.verdict.as_str(),
            r.reason
        );
        assert_eq!(r.agent_calls.len(), 3, "iteration {}", r.iteration);
        assert_eq!(r.patterns[0].name, "x-walk");
        assert!(r.changed_paths.contains(&"src/lib.txt".to_string()));
        if r.verdict == Verdict::Discard {
            assert!(
                r.falsified
                    .as_deref()
                    .unwrap()
                    .contains("closer to the optimum")
            );
        }
    }
    let keeps: Vec<&IterationRecord> = recs.iter().filter(|r| r.verdict == Verdict::Keep).collect();
    assert!(!keeps.is_empty(), "X walking from 10 toward 40 must gain");
    // Keeps are the branch's commits, in order. The agent's own `git commit`
    // failed: inside the sandbox the repository's objects and refs are
    // read-only (attacks.rs has the undo, with the sandbox off).
    let log = t.git(&["rev-list", "--reverse", &format!("{start}..ooda/night")]);
    let kept: Vec<String> = keeps.iter().map(|r| r.commit.clone().unwrap()).collect();
    assert_eq!(log.lines().collect::<Vec<_>>(), kept);
    assert!(
        !t.git(&["log", "--format=%s", "ooda/night"])
            .contains("agent commit")
    );
    assert!(
        !t.events("night")
            .iter()
            .any(|e| e["type"] == "anomaly" && e["kind"] == "agent_commit")
    );
    for ty in ["model_call", "model_result", "plan", "learn_archived"] {
        assert!(t.events("night").iter().any(|e| e["type"] == ty), "no {ty}");
    }
    // The trace: one run, its iterations with their verdicts and plans, and
    // under each phase the agent call that ran it.
    let overview = t.ooda(&["trace", "night"]).expect(0).stdout;
    assert!(
        overview.contains("(night)") && overview.contains("iteration 6"),
        "{overview}"
    );
    for r in &recs {
        assert!(
            overview.contains(&format!(
                "iteration {}  {}",
                r.iteration,
                r.verdict.as_str()
            )),
            "{overview}"
        );
    }
    let tree: serde_json::Value =
        serde_json::from_str(&t.ooda(&["trace", "night", "3", "--json"]).expect(0).stdout).unwrap();
    let it = &tree["nodes"][0];
    assert_eq!(it["verdict"], recs[2].verdict.as_str());
    assert_eq!(it["attributes"]["hypothesis"], recs[2].hypothesis.as_str());
    let phases: Vec<&str> = it["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        [
            "observe", "orient", "plan", "execute", "evaluate", "review", "learn", "commit",
            "check"
        ]
    );
    for phase in ["plan", "execute", "learn"] {
        let p = it["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == phase)
            .unwrap();
        let call = &p["children"][0];
        assert_eq!(
            (
                call["kind"].as_str(),
                call["name"].as_str(),
                call["status"].as_str()
            ),
            (Some("agent_call"), Some("script"), Some("ok")),
            "{call}"
        );
        assert_eq!(call["attributes"]["phase"], phase);
    }
    let summary = t.read("iterations/night/summary.md");
    assert!(summary.contains("STOPPED — budget_iterations"), "{summary}");
    assert!(summary.contains("| plan | 6 | 0 |"), "{summary}");
    // Later PLAN prompts see the earlier iterations.
    let plan5 = t.read("iterations/night/artifacts/iter-005/plan.prompt.md");
    assert!(plan5.contains("### Iteration 4 —"), "{plan5}");
    assert_eq!(
        t.checkout_fingerprint(),
        before,
        "the user's checkout changed"
    );
    assert!(!Path::new(&t.path().join(".ooda/worktrees/night/cand/plan.prompt.md")).exists());
}

#[test]
fn sigterm_during_an_agent_call_stops_with_130_and_the_next_tick_resumes() {
    let script = r#"#!/bin/sh
cat > "$AGENT_DIR/prompt-$OODA_ITERATION-$OODA_PHASE-$OODA_ATTEMPT.md"
if [ "$OODA_PHASE" = execute ] && [ ! -e "$AGENT_DIR/go" ]; then
  touch "$AGENT_DIR/executing"
  sleep 30
fi
if [ "$OODA_PHASE" = execute ]; then echo tuned >> src/lib.txt; fi
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("claude-json", script, "60s");
    for (phase, json) in [("plan", PLAN), ("execute", EXECUTE), ("learn", LEARN)] {
        f.put(phase, &with_text("claude-json", &block(json)));
    }
    f.ooda(&["tick", "b"]).expect(0);
    let child =
        f.t.command(&["tick", "b"])
            .env("AGENT_DIR", f.agent_dir())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    while !f.dir.path().join("executing").exists() {
        assert!(Instant::now() < deadline, "EXECUTE never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let t0 = Instant::now();
    // SAFETY: a signal to the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed().as_secs() < 10, "{:?}", t0.elapsed());
    assert_eq!(f.t.iterations("b"), vec![0]);
    assert_eq!(f.t.state("b")["current"]["done"], "plan");
    std::fs::write(f.dir.path().join("go"), "").unwrap();
    f.ooda(&["tick", "b"]).expect(0);
    let rec = f.t.record("b", 1);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    // PLAN was not repeated, and its call (with its cost) survived the checkpoint.
    let plan_calls =
        f.t.events("b")
            .iter()
            .filter(|e| e["type"] == "model_call" && e["phase"] == "plan")
            .count();
    assert_eq!(plan_calls, 1);
    let phases: Vec<&str> = rec.agent_calls.iter().map(|c| c.phase.as_str()).collect();
    assert_eq!(phases, ["plan", "execute", "learn"]);
    assert!((rec.cost_usd - 3.0 * 0.21837).abs() < 1e-9);
}

#[test]
fn project_templates_override_the_built_in_ones_and_file_mode_passes_the_path() {
    // prompt: file — the prompt file's path is the last argument.
    let script = r#"#!/bin/sh
cp "$1" "$AGENT_DIR/prompt-$OODA_ITERATION-$OODA_PHASE-$OODA_ATTEMPT.md"
if [ "$OODA_PHASE" = execute ]; then echo tuned >> src/lib.txt; fi
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("text", script, "20s");
    f.t.write(
        "ooda.yaml",
        &f.t.read("ooda.yaml")
            .replace("prompt: stdin", "prompt: file"),
    );
    f.t.write(
        "templates/plan.md",
        "CUSTOM PLAN for {{brief}} at iteration {{iteration}}; falsified: {{falsified}}\n",
    );
    f.t.commit("custom template");
    f.put("plan", &block(PLAN));
    f.put("execute", "done");
    f.put("learn", &block(LEARN));
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    assert_eq!(
        f.prompt(1, "plan", 1),
        "CUSTOM PLAN for b at iteration 1; falsified: None yet.\n"
    );
    // The built-in EXECUTE template was used, with the plan and the scope rules.
    let exec = f.prompt(1, "execute", 1);
    assert!(exec.contains("X=40 sits at the bottom"), "{exec}");
    assert!(exec.contains("never change `bench.sh`"), "{exec}");
}

#[test]
fn edits_made_during_learn_never_reach_the_kept_commit() {
    let script = r#"#!/bin/sh
cat > /dev/null
case "$OODA_PHASE" in
  execute) echo tuned >> src/lib.txt ;;
  learn) echo 'echo METRIC t=1' > bench.sh; echo sneaky >> src/lib.txt ;;
esac
cat "$AGENT_DIR/$OODA_PHASE.out"
"#;
    let f = Fake::new("text", script, "20s");
    f.put("plan", &block(PLAN));
    f.put("execute", "done");
    f.put("learn", &block(LEARN));
    let (run, rec) = f.first_iteration();
    run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    let commit = rec.commit.unwrap();
    assert!(
        f.t.git(&["show", &format!("{commit}:bench.sh")])
            .contains("awk")
    );
    assert!(
        !f.t.git(&["show", &format!("{commit}:src/lib.txt")])
            .contains("sneaky")
    );
    assert!(
        f.t.events("b")
            .iter()
            .any(|e| e["type"] == "anomaly" && e["kind"] == "agent_edit_in_learn")
    );
    // COMMIT reset the worktrees to the kept commit.
    let cand = f.t.read(".ooda/worktrees/b/cand/bench.sh");
    assert!(cand.contains("awk"), "{cand}");
}

#[test]
fn with_the_sandbox_off_writing_outside_the_worktree_is_blocked() {
    // One iteration writes into the user's checkout, the next into the base worktree.
    let script = r#"#!/bin/sh
cat > /dev/null
if [ "$OODA_PHASE" = execute ]; then
  echo tuned >> src/lib.txt
  if [ "$OODA_ITERATION" = 1 ]; then echo hacked >> "$OODA_ITERATIONS_DIR/../../src/lib.txt"; fi
  if [ "$OODA_ITERATION" = 2 ]; then echo 'echo METRIC t=999' > ../base/bench.sh; fi
fi
n=$((OODA_ITERATION * 10 + 5))
case "$OODA_PHASE" in
  plan) printf '```ooda\n{"hypothesis": "X=%s", "cites": [0], "predicted_effect": 0.1, "predicted_sd": 0.1, "knobs": {"X": %s}}\n```\n' "$n" "$n" ;;
  *) echo ok ;;
esac
"#;
    let f = Fake::new("text", script, "20s");
    f.sandbox_off();
    let (run, rec) = f.first_iteration();
    // Unconfined, a write outside the worktree also stops the night RED.
    let run = run.expect(3);
    assert!(run.stdout.contains("red_tamper"), "{}", run.stdout);
    assert_eq!(rec.verdict, Verdict::Blocked, "{}", f.iter_file(1));
    // Without the sandbox a file of the checkout may be the user's too: the
    // message says so, and how to tell ooda.
    assert!(
        rec.reason.starts_with(
            "files outside the candidate worktree changed while the agent ran without the sandbox: "
        ) && rec.reason.contains("/src/lib.txt. ")
            && rec
                .reason
                .contains("leave tracked files alone while a night runs"),
        "{}",
        rec.reason
    );
    f.ooda(&["ack", "b"]).expect(0);
    f.ooda(&["tick", "b"]).expect(3);
    let rec = f.t.record("b", 2);
    assert_eq!(rec.verdict, Verdict::Blocked);
    assert!(
        rec.reason.contains("worktrees/b/base/bench.sh"),
        "{}",
        rec.reason
    );
    // The base worktree was restored before anything was measured again.
    assert!(f.t.read(".ooda/worktrees/b/base/bench.sh").contains("awk"));
}

/// The standard fake in claude-json whose first `fails` calls get the API's
/// 529 (the real Claude Code 2.1.197 output), counted in `$AGENT_DIR/calls`.
fn overloaded(fails: u32) -> Fake {
    let script = format!(
        r#"#!/bin/sh
cat > /dev/null
n=$(cat "$AGENT_DIR/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$AGENT_DIR/calls"
if [ $n -le {fails} ]; then cat "$AGENT_DIR/overloaded.json"; exit 1; fi
if [ "$OODA_PHASE" = execute ]; then echo tuned >> src/lib.txt; fi
cat "$AGENT_DIR/$OODA_PHASE.out"
"#
    );
    let f = Fake::new("claude-json", &script, "20s");
    f.t.write(
        "ooda.yaml",
        &f.t.read("ooda.yaml")
            .replace("defaults:\n", "defaults:\n  agent_outage: 2s\n"),
    );
    f.t.commit("outage budget");
    std::fs::write(
        f.dir.path().join("overloaded.json"),
        include_str!("../fixtures/agent-outputs/real-cli/claude-2.1.197-overloaded-529.json"),
    )
    .unwrap();
    f.put("plan", &with_text("claude-json", &block(PLAN)));
    f.put("execute", &with_text("claude-json", &block(EXECUTE)));
    f.put("learn", &with_text("claude-json", &block(LEARN)));
    f
}

#[test]
fn an_outage_is_waited_out_and_the_iteration_goes_on() {
    let f = overloaded(3);
    let (run, rec) = f.first_iteration();
    let run = run.expect(0);
    assert_eq!(rec.verdict, Verdict::Keep, "{}", f.iter_file(1));
    let outcomes: Vec<&str> = rec.agent_calls.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        [
            "unavailable",
            "unavailable",
            "unavailable",
            "ok",
            "ok",
            "ok"
        ]
    );
    let unavailable = &rec.agent_calls[0];
    assert!(unavailable.waited > 0.0);
    let problem = unavailable.problem.as_deref().unwrap();
    assert!(
        problem.starts_with(
            "agent unavailable: HTTP 529 after 179s of retries (claude: API Error: 529 Overloaded"
        ),
        "{problem}"
    );
    assert!(
        !problem.contains("{\""),
        "the tool's message, not its JSON: {problem}"
    );
    assert_eq!(unavailable.usage.cost_usd, None, "no cost was reported");
    let waits =
        f.t.events("b")
            .iter()
            .filter(|e| e["type"] == "agent_unavailable")
            .count();
    assert_eq!(waits, 3);
    let summary = f.t.read("iterations/b/summary.md");
    assert!(
        summary.contains("The agent's API was unavailable 3 time(s)"),
        "{summary}"
    );
    assert!(
        run.stderr.contains("plan: agent unavailable: HTTP 529"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_long_outage_cuts_iterations_short_but_is_not_a_failure_streak() {
    let f = overloaded(1000);
    f.t.brief(
        "b",
        &knob_brief("budget: { iterations: 6 }\n").replace("agent: builtin", "agent: fake"),
    );
    f.t.commit("six iterations");
    let r = f.ooda(&["run", "b"]);
    assert_eq!(
        r.code, 4,
        "the budget, not a red light, ends it: {}",
        r.stdout
    );
    assert!(r.stdout.contains("budget_iterations"), "{}", r.stdout);
    for i in 1..=6 {
        let rec = f.t.record("b", i);
        assert_eq!(rec.verdict, Verdict::Invalid);
        assert!(
            rec.reason.starts_with("agent unavailable in PLAN (waited "),
            "{}",
            rec.reason
        );
        assert!(rec.reason.contains("HTTP 529"), "{}", rec.reason);
    }
}
