//! `ooda compress`: a proxy between an agent and its commands, end to end
//! through the real binary.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::test::{Run, Test};

fn corpus(case: &str) -> String {
    format!(
        "{}/benches/compress/corpus/{case}/raw.log",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_command_s_exit_code_passes_through_and_its_raw_bytes_are_kept() {
    let t = Test::new();
    // Stdout and stderr interleaved, bytes that are not UTF-8, an exit code.
    t.script(
        "noisy.sh",
        "#!/bin/sh\nfor i in $(seq 1 200); do echo \"Compiling part $i of 200\"; done\necho 'error: the build broke' >&2\necho '  --> src/lib.rs:3:7' >&2\nprintf 'bytes \\377\\376 end\\n'\nexit 3\n",
    );
    let raw = t.path().join("raw.log");
    let run = t
        .ooda(&[
            "compress",
            "--raw-to",
            raw.to_str().unwrap(),
            "--",
            "./noisy.sh",
        ])
        .expect(3);
    assert!(
        run.stdout.contains("error: the build broke"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("--> src/lib.rs:3:7"), "{}", run.stdout);
    assert!(run.stdout.lines().count() < 10, "{}", run.stdout);
    // The exact bytes, in the order printed.
    let mut want = Vec::new();
    for i in 1..=200 {
        want.extend_from_slice(format!("Compiling part {i} of 200\n").as_bytes());
    }
    want.extend_from_slice(b"error: the build broke\n  --> src/lib.rs:3:7\nbytes \xff\xfe end\n");
    assert_eq!(std::fs::read(&raw).unwrap(), want);
    // A success is 0, a signal is 128 + its number, as a shell says.
    t.ooda(&["compress", "--", "true"]).expect(0);
    t.ooda(&["compress", "--", "sh", "-c", "kill -TERM $$"])
        .expect(143);
}

#[test]
fn standard_input_is_compressed_and_json_says_what_went() {
    let t = Test::new();
    let log = std::fs::read(corpus("uvicorn-access-log")).unwrap();
    let mut child = t
        .command(&["compress", "--json", "--budget", "4000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&log).unwrap();
    let run = Run::from(child.wait_with_output().unwrap()).expect(0);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["command"], serde_json::Value::Null);
    assert_eq!(v["raw_bytes"], log.len());
    let chars = v["chars"].as_u64().unwrap();
    assert!(chars <= 4000, "{chars}");
    assert_eq!(v["output"].as_str().unwrap().chars().count() as u64, chars);
    // The routine requests were dropped or folded, the budget cut some
    // lines too: both say so by kind.
    assert!(v["cut"].as_object().unwrap().values().count() > 0, "{v}");
    assert!(
        v["output"]
            .as_str()
            .unwrap()
            .contains("ValueError: item store unavailable"),
        "{v}"
    );
}

#[test]
fn json_gives_by_kind_what_the_marker_counts() {
    // The marker closing the output says how many lines went; `--json`
    // says which kinds, and they add up to it.
    let t = Test::new();
    let report = std::fs::read_to_string(corpus("pytest-report-all")).unwrap();
    t.write("report.log", &report);
    let run = t
        .ooda(&["compress", "--json", "--", "cat", "report.log"])
        .expect(0);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let output = v["output"].as_str().unwrap();
    let marker = output.lines().last().unwrap();
    let total: u64 = marker
        .strip_prefix("[… ")
        .and_then(|m| m.strip_suffix(" lines dropped]"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no marker: {output}"));
    let dropped = v["dropped"].as_object().unwrap();
    // The passing tests are routine, the failures' source around them is
    // source.
    assert!(dropped["routine"].as_u64().unwrap() > 0, "{v}");
    assert!(dropped["source"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        dropped.values().map(|n| n.as_u64().unwrap()).sum::<u64>(),
        total,
        "{v}"
    );
    // Its failures are named on lines of their own, its emptied `PASSES`
    // section is gone.
    assert!(
        output.lines().any(|l| l == "TakeTests.test_simple_take"),
        "{output}"
    );
    assert!(!output.contains("PASSES"), "{output}");
}

#[test]
fn a_process_left_holding_the_output_does_not_hold_the_command() {
    let t = Test::new();
    // The command ends at once; what it left behind sleeps with the pipe.
    let run = t
        .ooda(&[
            "compress",
            "--",
            "sh",
            "-c",
            "echo before; (sleep 600; echo late) & echo after; exit 4",
        ])
        .expect(4);
    assert!(
        run.stdout.contains("before") && run.stdout.contains("after"),
        "{}",
        run.stdout
    );
    // Had it waited for the one left behind, "late" would be there.
    assert!(!run.stdout.contains("late"));
    assert!(
        run.stderr
            .contains("left a process holding its output open"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_command_that_cannot_start_is_named() {
    let t = Test::new();
    let run = t
        .ooda(&["compress", "--", "no-such-tool-anywhere", "x"])
        .expect(127);
    assert!(
        run.stderr.contains("cannot run `no-such-tool-anywhere`"),
        "{}",
        run.stderr
    );
}

#[test]
fn cargo_test_through_it_keeps_its_verdict_and_failures() {
    let t = Test::new();
    t.write(
        "crate/Cargo.toml",
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    t.write(
        "crate/src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 2), 4); }\n    #[test]\n    fn adds_wrong() { assert_eq!(super::add(2, 2), 5); }\n}\n",
    );
    let target = t.path().join("target");
    let run = Run::from(
        t.command(&["compress", "--", "cargo", "test", "--offline", "--quiet"])
            .current_dir(t.path().join("crate"))
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap(),
    );
    // cargo's own exit code for failed tests.
    assert_eq!(run.code, 101, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("adds_wrong"), "{}", run.stdout);
    assert!(run.stdout.contains("left: 4"), "{}", run.stdout);
    assert!(run.stdout.contains("test result: FAILED"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("test tests::adds ... ok"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_hook_answers_as_each_tool_reads_it() {
    let t = Test::new();
    let hook = |tool: &str, input: &str| -> String {
        let mut child = t
            .command(&["compress", "--hook", tool])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        Run::from(child.wait_with_output().unwrap())
            .expect(0)
            .stdout
    };
    let out = hook(
        "claude",
        r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cargo build","description":"build"}}"#,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let command = v["hookSpecificOutput"]["updatedInput"]["command"]
        .as_str()
        .unwrap();
    assert!(command.ends_with(" compress -- cargo build"), "{command}");
    assert_eq!(
        v["hookSpecificOutput"]["updatedInput"]["description"],
        "build"
    );
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
    // The rewritten command runs.
    let ran = Command::new("sh")
        .arg("-c")
        .arg(command.replace("cargo build", "echo hi"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout).trim(), "hi");
    // `cd` is the shell's: left alone, no answer.
    assert_eq!(hook("claude", r#"{"tool_input":{"command":"cd src"}}"#), "");
    let out = hook(
        "gemini",
        r#"{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"go vet ./..."}}"#,
    );
    assert!(out.contains("compress -- go vet ./..."), "{out}");
    let run = t.ooda(&["compress", "--hook", "claude"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("the hook's input is not JSON"),
        "{}",
        run.stderr
    );
}
