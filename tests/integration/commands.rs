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
        "iterations/*/replays/*/*",
        "!iterations/*/replays/*/replay.json",
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
            && (r.stdout.contains(" 1 iteration, ") || r.stdout.contains(" 1 of ")),
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

#[test]
fn init_in_an_existing_project_adds_only_the_missing_gitignore_lines() {
    let t = Test::new();
    // An older scaffold: some of the lines, the user's own, no final newline.
    t.write(".gitignore", "target/\n.ooda/\n# mine\n/counter");
    let yaml = t.read("ooda.yaml");
    t.ooda(&["init"]).expect(0);
    let gi = t.read(".gitignore");
    assert!(
        gi.starts_with("target/\n.ooda/\n# mine\n/counter\n"),
        "{gi}"
    );
    assert_eq!(gi.matches(".ooda/").count(), 1, "{gi}");
    for line in ["iterations/*/state.json", "iterations/*/artifacts/"] {
        assert!(gi.lines().any(|l| l == line), "{line} not in\n{gi}");
    }
    assert_eq!(t.read("ooda.yaml"), yaml, "an existing ooda.yaml is kept");
}

#[test]
fn check_names_the_machine_state_an_older_gitignore_leaves_to_git() {
    // The tests' projects have an older scaffold's .gitignore.
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    t.commit("a Brief");
    let r = t.ooda(&["check", "k"]).expect(0);
    assert!(
        r.stdout.contains(
            "git does not ignore iterations/k/events/, iterations/k/index.jsonl (ooda's machine state, not for commits): run `ooda init`"
        ),
        "{}",
        r.stdout
    );
    t.ooda(&["init"]).expect(0);
    let r = t.ooda(&["check", "k"]).expect(0);
    assert!(!r.stdout.contains("git does not ignore"), "{}", r.stdout);
}

#[test]
fn status_says_when_ticks_keep_failing_and_a_fixed_start_is_measured() {
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    let bench = t.read("bench.sh");
    t.script(
        "bench.sh",
        "#!/bin/sh\necho 'cannot open corpus.bin' >&2\nexit 3\n",
    );
    t.commit("a broken benchmark");
    let first = t.ooda(&["tick", "k"]);
    assert_ne!(first.code, 0, "{}", first.stderr);
    t.ooda(&["tick", "k"]);
    let s = t.ooda(&["status"]).expect(0);
    assert!(
        s.stdout.contains("YELLOW") && s.stdout.contains("; warning: the last 2 ticks failed"),
        "{}",
        s.stdout
    );
    assert!(
        s.stdout.lines().all(|l| l.chars().count() <= 120),
        "{}",
        s.stdout
    );
    // The whole of it, with the command's failure, one command away.
    let s = t.ooda(&["status", "k"]).expect(0);
    assert!(
        s.stdout.contains("the last 2 ticks failed (since ")
            && s.stdout.contains("exited with code 3"),
        "{}",
        s.stdout
    );
    let j = t.ooda(&["status", "--json"]).expect(0);
    assert!(j.stdout.contains("the last 2 ticks failed"), "{}", j.stdout);
    let started = |t: &Test| {
        chrono::DateTime::parse_from_rfc3339(t.state("k")["created_at"].as_str().unwrap()).unwrap()
    };
    let failed_at = started(&t);
    // Fixed: the next tick that works forgets the failures, and the run's
    // clock starts with it.
    t.script("bench.sh", &bench);
    t.commit("fixed");
    t.ooda(&["tick", "k"]).expect(0);
    assert!(started(&t) > failed_at);
    // The baseline measured the fixed commit, not the broken start.
    let head = t.git(&["rev-parse", "HEAD"]);
    assert_eq!(t.record("k", 0).base, head.trim());
    assert!(
        !t.read("iterations/k/summary.md").contains("ticks failed"),
        "the summary a working tick wrote"
    );
    // The run's start is the fixed commit, in the trace too.
    let starts: Vec<String> = t
        .events("k")
        .iter()
        .filter(|e| e["type"] == "run_started")
        .map(|e| e["start_commit"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        starts.last().map(String::as_str),
        Some(head.trim()),
        "{starts:?}"
    );
    let s = t.ooda(&["status"]).expect(0);
    assert!(
        s.stdout.contains("GREEN") && !s.stdout.contains("failed"),
        "{}",
        s.stdout
    );
}

/// A Brief `p` whose agent is `./agent.sh`, printing `answer` on stdout.
fn agent_project(answer: &str) -> Test {
    let t = Test::new();
    t.write(
        "ooda.yaml",
        "defaults: {pairs: 3, calibration_pairs: 3}\nagents:\n  fake: {command: [./agent.sh], prompt: stdin, format: text, timeout: 20s}\n",
    );
    t.script(
        "agent.sh",
        &format!("#!/bin/sh\ncat > /dev/null\necho \"phase $OODA_PHASE\"\ncat <<'ANSWER'\n{answer}\nANSWER\n"),
    );
    t.brief(
        "p",
        &knob_brief("").replace("agent: builtin", "agent: fake"),
    );
    t.commit("agent");
    t
}

const GOOD_PLAN: &str = "```ooda\n{\"hypothesis\": \"X=40 is the bottom\", \"change\": \"set X\", \"cites\": [0], \"predicted_effect\": 0.3, \"predicted_sd\": 0.1, \"knobs\": {\"X\": 40}}\n```";

#[test]
fn preflight_makes_one_plan_call_and_archives_nothing() {
    let t = agent_project(GOOD_PLAN);
    let before = t.checkout_fingerprint();
    let r = t.ooda(&["check", "p", "--preflight"]).expect(0);
    assert!(r.stdout.contains("briefs/p.md: valid"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("preflight: ran `./agent.sh < \"$OODA_PROMPT_FILE\"` for PLAN: ok after"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("plan        X=40 is the bottom (predicted +30.0% (sd 10.0%))"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("preflight OK"), "{}", r.stdout);
    // Nothing archived, the checkout untouched; the call's files are kept aside.
    assert!(!t.exists("iterations/p"), "preflight archived something");
    assert_eq!(t.checkout_fingerprint(), before);
    assert!(t.exists(".ooda/preflight/p"));
    // The night after it starts at iteration 0 as if nothing happened.
    t.ooda(&["tick", "p"]).expect(0);
    assert_eq!(t.iterations("p"), vec![0]);

    let j = t.ooda(&["check", "p", "--preflight", "--json"]).expect(0);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).expect(&j.stdout);
    assert_eq!(v["preflight"]["ok"], true, "{v}");
    assert_eq!(v["preflight"]["plan"]["knobs"]["X"], 40, "{v}");
    assert_eq!(v["preflight"]["call"]["outcome"], "ok", "{v}");
}

#[test]
fn a_failing_preflight_exits_2_and_says_why() {
    // An answer a night could not read: no JSON, no ooda block.
    let t = agent_project("I would rather not.");
    let r = t.ooda(&["check", "p", "--preflight"]).expect(2);
    assert!(r.stdout.contains("preflight FAILED"), "{}", r.stdout);
    assert!(r.stdout.contains("ooda"), "{}", r.stdout);
    assert!(r.stderr.contains("preflight failed"), "{}", r.stderr);
    assert!(!t.exists("iterations/p"));
    // A plan the night's validator would reject fails the preflight too:
    // before the first run, iteration 0 is the only one that will exist.
    let t = agent_project(&GOOD_PLAN.replace("[0]", "[99]"));
    let r = t.ooda(&["check", "p", "--preflight"]).expect(2);
    assert!(
        r.stdout.contains("problem     (cites)") && r.stdout.contains("[99]"),
        "{}",
        r.stdout
    );
}

#[test]
fn check_json_describes_the_brief() {
    let t = Test::new();
    t.brief("j", &knob_brief(""));
    t.commit("brief");
    let r = t.ooda(&["check", "j", "--json"]).expect(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stdout);
    assert_eq!(v["brief"], "j", "{v}");
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["metric"]["name"], "t", "{v}");
    assert_eq!(v["metric"]["direction"], "minimize", "{v}");
    assert_eq!(v["knobs"][0]["name"], "X", "{v}");
    assert_eq!(v["knobs"][0]["default"], "10", "{v}");
    assert_eq!(v["agent"]["driver"], "builtin", "{v}");
    assert_eq!(v["scope"]["protect"][0], "bench.sh", "{v}");
    assert_eq!(v["runnable"], true, "{v}");
    // A Brief that cannot run: its metric program is not committed.
    t.brief("m", &knob_brief("").replace("./bench.sh", "./missing.sh"));
    t.commit("m");
    let r = t.ooda(&["check", "m"]).expect(2);
    assert!(r.stdout.contains("  PROBLEM     "), "{}", r.stdout);
    assert!(r.stdout.contains("./missing.sh"), "{}", r.stdout);
    assert!(r.stderr.contains("cannot run"), "{}", r.stderr);
    let r = t.ooda(&["check", "m", "--json"]).expect(2);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stdout);
    assert_eq!(v["runnable"], false, "{v}");
    // An invalid Brief is JSON too, with every problem.
    t.brief(
        "bad",
        &knob_brief("").replace("direction: minimize", "direction: fastest"),
    );
    let r = t.ooda(&["check", "bad", "--json"]).expect(2);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stdout);
    assert_eq!(v["valid"], false, "{v}");
    assert!(
        v["problems"][0]
            .as_str()
            .unwrap()
            .contains("metric.direction"),
        "{v}"
    );
}

#[test]
fn report_json_is_the_summary_json_beside_summary_md() {
    let t = Test::new();
    t.brief("r", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["report", "r"]).expect(2);
    t.ooda(&["tick", "r"]).expect(0);
    t.ooda(&["tick", "r"]).expect(0);
    let r = t.ooda(&["report", "r", "--json"]).expect(0);
    assert_eq!(r.stdout, t.read("iterations/r/summary.json"));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["schema"], 2);
    assert_eq!(v["folded"], serde_json::json!([]));
    assert_eq!(v["brief"], "r");
    assert_eq!(v["status"], "GREEN");
    let its = v["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{v}");
    assert_eq!(its[1]["iteration"], 1);
    assert_eq!(its[1]["verdict"], t.record("r", 1).verdict.as_str());
    assert_eq!(its[1]["file"], "iter-001.md");
    let md = t.ooda(&["report", "r"]).expect(0);
    assert_eq!(md.stdout, t.read("iterations/r/summary.md"));
}

#[test]
fn reset_starts_the_brief_over_and_keeps_the_old_archive_aside() {
    let t = Test::new();
    t.brief("z", &knob_brief(""));
    t.commit("brief");
    t.ooda(&["tick", "z"]).expect(0);
    t.ooda(&["tick", "z"]).expect(0);
    let tip = t.git(&["rev-parse", "ooda/z"]);
    let before = t.checkout_fingerprint();
    // Without a terminal, only --yes confirms.
    let r = t.ooda(&["reset", "z"]).expect(2);
    assert!(r.stderr.contains("pass --yes"), "{}", r.stderr);
    assert_eq!(t.iterations("z"), vec![0, 1]);
    assert_eq!(t.git(&["rev-parse", "ooda/z"]), tip);

    let r = t.ooda(&["reset", "z", "--yes"]).expect(0);
    assert!(r.stdout.contains("deleted branch ooda/z"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains(&format!("`git branch ooda/z {}` restores it", &tip[..10])),
        "{}",
        r.stdout
    );
    assert!(t.git(&["branch", "--list", "ooda/z"]).is_empty());
    assert!(!t.exists(".ooda/worktrees/z/cand"));
    assert!(!t.exists("iterations/z"));
    let aside: Vec<String> = std::fs::read_dir(t.path().join("iterations"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("z.reset-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    let old = format!("iterations/{}", aside[0]);
    assert!(t.exists(&format!("{old}/iter-000.md")));
    assert!(t.exists(&format!("{old}/iter-001.md")));
    assert!(
        !t.exists(&format!("{old}/state.json")),
        "nothing resumes from it"
    );
    // Its summary says the branch it names is gone, and how to get it back.
    let summary = t.read(&format!("{old}/summary.md"));
    assert!(summary.starts_with("> This run was reset on "), "{summary}");
    assert!(
        summary.contains(&format!("git branch ooda/z {tip}")),
        "{summary}"
    );
    // The user's checkout, branch and index are as they were.
    assert_eq!(t.checkout_fingerprint(), before);

    // The next tick is a new run at iteration 0.
    let r = t.ooda(&["tick", "z"]).expect(0);
    assert!(r.stdout.contains("baseline archived"), "{}", r.stdout);
    assert_eq!(t.iterations("z"), vec![0]);

    // --discard-archive deletes instead of moving aside.
    t.ooda(&["reset", "z", "--yes", "--discard-archive"])
        .expect(0);
    assert!(!t.exists("iterations/z"));
    let asides = std::fs::read_dir(t.path().join("iterations"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("z.reset-")
        })
        .count();
    assert_eq!(asides, 1);
}

#[test]
fn check_measure_and_the_baseline_advise_when_the_noise_hides_real_gains() {
    let t = Test::new();
    // ±45% per run: θ₁ near 30%.
    t.script("bench.sh", &crate::test::bench("100", 0.9));
    t.brief("n", &knob_brief(""));
    t.commit("noisy");
    let r = t.ooda(&["check", "n", "--measure", "6"]).expect(0);
    assert!(
        r.stdout
            .contains("advice: The noise is too high to see the gains you care about"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("is above 10%"), "{}", r.stdout);
    assert!(r.stdout.contains("taskset"), "{}", r.stdout);
    let json = t
        .ooda(&["check", "n", "--measure", "3", "--json"])
        .expect(0);
    assert!(json.stdout.contains("\"advice\""), "{}", json.stdout);
    t.ooda(&["tick", "n"]).expect(0);
    let base = t.read("iterations/n/iter-000.md");
    assert!(base.contains("**Advice.** The noise is too high"), "{base}");
    assert!(
        t.record("n", 0).reason.contains("too noisy"),
        "{}",
        t.record("n", 0).reason
    );
    // A quiet setup gets no advice.
    let q = Test::new();
    q.brief("q", &knob_brief(""));
    q.commit("quiet");
    let r = q.ooda(&["check", "q", "--measure", "4"]).expect(0);
    assert!(!r.stdout.contains("advice"), "{}", r.stdout);
}

#[test]
fn check_measure_waits_for_the_measurement_lock_and_says_so() {
    let t = Test::new();
    t.brief("c", &knob_brief(""));
    t.commit("brief");
    let path = t.path().join(".git/ooda-measure.lock");
    std::fs::write(&path, "brief other in /elsewhere (pid 1) since then\n").unwrap();
    let held = std::fs::File::open(&path).unwrap();
    held.try_lock().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("out"), logs.path().join("err"));
    let mut child = t
        .command(&["check", "c", "--measure", "2"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let said = || {
        std::fs::read_to_string(&out).unwrap_or_default()
            + &std::fs::read_to_string(&err).unwrap_or_default()
    };
    // The lock is released once the wait shows, so no timing is assumed.
    let mut tries = 0;
    while !said().contains("waiting to measure") {
        assert!(
            child.try_wait().unwrap().is_none(),
            "it ended without waiting:\n{}",
            said()
        );
        tries += 1;
        assert!(tries < 1200, "no wait shown in a minute:\n{}", said());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !said().contains("t over 2 run(s)"),
        "it measured while the lock was held:\n{}",
        said()
    );
    drop(held);
    assert_eq!(child.wait().unwrap().code(), Some(0), "{}", said());
    let all = said();
    // The other Brief by name, with the time waited; where it runs and its
    // pid only with -v.
    assert!(
        all.contains(
            "waiting to measure: brief other of another project holds the measurement lock ("
        ),
        "{all}"
    );
    assert!(
        !all.contains("/elsewhere") && !all.contains("pid 1"),
        "{all}"
    );
    assert!(all.contains("t over 2 run(s)"), "{all}");
}

/// `ooda completions bash` is a script bash sources, and with it `ooda st`
/// completes to `status`; the other shells get theirs.
#[test]
fn completions_source_in_bash_and_complete_a_command() {
    let t = Test::new();
    let r = t.ooda(&["completions", "bash"]).expect(0);
    let script = t.path().join("ooda.bash");
    std::fs::write(&script, &r.stdout).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && COMP_WORDS=(ooda st) && COMP_CWORD=1 && COMP_LINE='ooda st' && COMP_POINT=7 && _ooda ooda st ooda && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(words.trim(), "status", "{words}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let r = t.ooda(&["completions", shell]).expect(0);
        assert!(r.stdout.contains("status"), "{shell}: {}", r.stdout);
    }
    let r = t.ooda(&["completions", "tcsh"]).expect(2);
    assert!(r.stderr.contains("possible values"), "{}", r.stderr);
}

/// `ooda man` is a manual page: roff with every command, and `man -l -`
/// renders it.
#[test]
fn the_manual_page_is_roff_with_every_command() {
    let t = Test::new();
    let r = t.ooda(&["man"]).expect(0);
    assert!(
        r.stdout.starts_with(".ie \\n(.g .ds Aq") || r.stdout.contains(".TH ooda"),
        "{}",
        &r.stdout[..200.min(r.stdout.len())]
    );
    for c in ["status", "completions", "mcp", "compress"] {
        assert!(r.stdout.contains(c), "{c} missing from the manual");
    }
    // `.ci/run` installs man (man-db).
    {
        let mut child = std::process::Command::new("man")
            .args(["-l", "-"])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(r.stdout.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Write a Brief before you leave"), "{text}");
    }
}

/// `--version` names the commit it was built from and its date.
#[test]
fn the_version_names_its_commit() {
    let t = Test::new();
    let r = t.ooda(&["--version"]).expect(0);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    assert!(
        r.stdout
            .starts_with(&format!("ooda {} (", env!("CARGO_PKG_VERSION"))),
        "{}",
        r.stdout
    );
    if !head.is_empty() {
        assert!(r.stdout.contains(&head), "{} lacks {head}", r.stdout);
    }
}

/// The commands `ooda --help` lists.
fn commands(t: &Test) -> Vec<String> {
    let help = t.ooda(&["--help"]).expect(0).stdout;
    help.split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_s_help_puts_its_own_options_first_and_shows_examples() {
    let t = Test::new();
    let all = commands(&t);
    assert!(all.len() >= 20, "{all:?}");
    for c in &all {
        let help = t.ooda(&[c, "--help"]).expect(0).stdout;
        let own = help
            .find("\nOptions:\n")
            .unwrap_or_else(|| panic!("{c}: {help}"));
        let global = help
            .find("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{c}: {help}"));
        assert!(own < global, "{c}: its own options come first\n{help}");
        let options = &help[own..global];
        assert!(
            !options.contains("--quiet") && !options.contains("--color"),
            "{c}: {help}"
        );
        let examples = help
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{c} has no example:\n{help}"));
        assert!(
            examples.lines().any(|l| l.contains(&format!("ooda {c}"))),
            "{c}: {examples}"
        );
    }
}

#[test]
fn json_is_honoured_by_the_commands_that_printed_text() {
    let t = Test::new();
    let parse = |text: &str| -> serde_json::Value {
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let new = parse(&t.ooda(&["new", "latency", "--json"]).expect(0).stdout);
    assert_eq!(new["brief"], "latency");
    assert!(
        new["created"]
            .as_str()
            .unwrap()
            .ends_with("briefs/latency.md")
    );
    let man = parse(&t.ooda(&["man", "--json"]).expect(0).stdout);
    assert!(man["page"].as_str().unwrap().contains(".TH ooda 1"));
    let comp = parse(&t.ooda(&["--json", "completions", "fish"]).expect(0).stdout);
    assert_eq!(comp["shell"], "fish");
    t.brief("b", &knob_brief("budget: { iterations: 1 }\n"));
    t.commit("a Brief");
    t.ooda(&["tick", "b"]).expect(0);
    let reset = parse(&t.ooda(&["reset", "b", "--yes", "--json"]).expect(0).stdout);
    assert!(
        reset["archive"].as_str().unwrap().contains("b.reset-"),
        "{reset}"
    );
    // Two formats asked for at once: said, not guessed.
    t.ooda(&["report", "b", "--tsv", "--json"]).expect(2);
}
