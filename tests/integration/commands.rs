use crate::test::{Test, knob_brief};

#[test]
fn init_scaffolds_and_is_idempotent() {
    let t = Test::new();
    std::fs::remove_file(t.path().join("ooda.yaml")).unwrap();
    let r = t.ooda(&["init"]).expect(0);
    for f in [
        "ooda.yaml",
        "subagents/eval-runner.md",
        "subagents/code-reviewer.md",
        "templates/plan.md",
        "templates/brief.md",
    ] {
        assert!(t.exists(f), "{f} missing: {}", r.stdout);
    }
    let gi = t.read(".gitignore");
    for line in [
        ".ooda/",
        "iterations/*/state.json",
        "iterations/*/events.jsonl",
        "iterations/*/artifacts/",
        "iterations/*/.lock",
    ] {
        assert!(
            gi.lines().any(|l| l == line),
            "{line} not in .gitignore:\n{gi}"
        );
    }
    let r = t.ooda(&["init"]).expect(0);
    assert!(r.stdout.contains("kept"));
    assert_eq!(t.read(".gitignore"), gi);
}

#[test]
fn new_writes_a_brief_that_checks() {
    let t = Test::new();
    t.ooda(&["new", "latency"]).expect(0);
    let r = t.ooda(&["check", "latency"]).expect(0);
    assert!(r.stdout.contains("valid"), "{}", r.stdout);
    t.ooda(&["new", "latency"]).expect(2);
    t.ooda(&["new", "Bad Name"]).expect(2);
}

#[test]
fn check_measure_reports_values_spread_and_detectable_gain() {
    let t = Test::new();
    // The setup writes a file where it runs: that must be a scratch worktree.
    t.brief(
        "c",
        &knob_brief("").replace(
            "  timeout: 20s\n",
            "  timeout: 20s\n  setup: echo built > built.txt\n",
        ),
    );
    t.commit("brief");
    let before = t.checkout_fingerprint();
    let r = t.ooda(&["check", "c", "--measure", "4"]).expect(0);
    assert!(r.stdout.contains("t over 4 run(s)"), "{}", r.stdout);
    assert!(r.stdout.contains("spread:"), "{}", r.stdout);
    assert!(r.stdout.contains("minimum detectable gain"), "{}", r.stdout);
    // check never writes into the checkout: only .ooda/ (ignored) appears.
    assert_eq!(t.checkout_fingerprint(), before);
    assert!(!t.exists("built.txt"));
    assert!(t.exists(".ooda/worktrees/c/check/built.txt"));
}

#[test]
fn status_and_report_show_each_brief() {
    let t = Test::new();
    t.brief("s1", &knob_brief(""));
    t.brief("s2", &knob_brief(""));
    t.commit("briefs");
    t.ooda(&["tick", "s1"]).expect(0);
    t.ooda(&["tick", "s1"]).expect(0);
    let r = t.ooda(&["status", "--color", "never"]).expect(0);
    assert!(
        r.stdout.contains("s1")
            && r.stdout.contains("GREEN")
            && r.stdout.contains("1 iteration(s)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("s2") && r.stdout.contains("NEW"),
        "{}",
        r.stdout
    );
    let r = t.ooda(&["status", "s1", "--json"]).expect(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["brief"], "s1");
    assert_eq!(v[0]["iterations"], 1);
    assert!(v[0]["baseline"].as_f64().unwrap() > 0.0);
    let r = t.ooda(&["report", "s1"]).expect(0);
    assert!(r.stdout.contains("# s1 — ooda summary"));
}

#[test]
fn a_closed_pipe_exits_quietly() {
    let t = Test::new();
    t.brief("p", &knob_brief(""));
    t.commit("brief");
    let mut child = t
        .command(&["status"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.code() == Some(0),
        "{:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn editing_the_brief_mid_run_is_logged_and_used() {
    let t = Test::new();
    t.brief("e", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "e"]).expect(0);
    t.brief("e", &knob_brief("budget: { iterations: 1 }\n"));
    t.ooda(&["tick", "e"]).expect(4);
    assert!(t.events("e").iter().any(|e| e["type"] == "brief_changed"));
    assert_ne!(t.record("e", 0).brief_hash, t.record("e", 1).brief_hash);
}
