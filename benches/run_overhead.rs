//! What ooda adds to each timed run, beside a plain process start.
//!
//! ```sh
//! cargo build --release && cargo bench --bench run_overhead
//! cargo bench --bench run_overhead -- --ooda path/to/older/ooda   # another build beside it
//! ```
//!
//! A night's decisions are hundreds of benchmark runs, so what ooda spends
//! around each one is spent hundreds of times. This runs a real night
//! (`ooda run`, builtin driver, six iterations) of the release binary on a
//! metric that does almost nothing (`sh` printing one line), and reads its
//! `events.jsonl`: for every metric run after the first of its iteration,
//! the time from the previous run's start to its own (what a run costs the
//! night: ooda's bookkeeping between runs, the sandbox helper, the command)
//! and the seconds ooda timed (the helper and the command). Beside it, the
//! same command started 60 times with `std::process::Command` (what
//! Python's `subprocess.run` does). The overhead per run is the median
//! start-to-start time less the median plain run. And per iteration: the
//! night's time from its first event to its last, less every metric run's
//! start-to-start time, over its iterations (the worktree, the knobs file,
//! git, the archive: what an iteration costs beyond its runs).
//!
//! Each binary runs twice: on the machine as it is, and with 400 idle
//! processes more (`sleep`), as on a desktop: a step that reads every
//! process of the machine from `/proc` shows there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const BRIEF: &str = "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nknobs:\n  X: { int: [1, 80], default: 40 }\nagent: builtin\nbudget:\n  iterations: 6\n---\n# Goal\nMake t small.\n\n# Success\nt drops.\n\n# Must not break\nbench.sh stays.\n";

const BENCH: &str = "#!/bin/sh\necho \"METRIC t=$(( ${X:-40} + 100 ))\"\n";

/// Plain runs of the command.
const PLAIN_RUNS: usize = 60;
/// Idle processes added for the second row.
const IDLE: usize = 400;

fn main() -> std::process::ExitCode {
    let mut binaries = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/ooda")];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ooda" => match args.next() {
                Some(p) => binaries.push(PathBuf::from(p)),
                None => return usage("--ooda needs a path"),
            },
            // What `cargo bench` passes to a benchmark without a harness.
            "--bench" => {}
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    for b in &binaries {
        if !b.is_file() {
            eprintln!(
                "{} is missing: build it first (`cargo build --release`)",
                b.display()
            );
            return std::process::ExitCode::from(2);
        }
    }
    println!(
        "| binary | processes on the machine | plain `Command` per run | ooda per run (start to start) | timed by ooda (helper + command) | overhead per run | per iteration beyond its runs |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for idle in [0, IDLE] {
        let mut sleepers = match spawn_idle(idle) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cannot start {idle} idle processes: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        let processes = count_processes();
        for b in &binaries {
            let row = measure(b);
            if row.is_err() {
                stop(std::mem::take(&mut sleepers));
            }
            match row {
                Ok(row) => println!(
                    "| {} | {processes} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} ms |",
                    label(b),
                    row.plain,
                    row.gap,
                    row.timed,
                    row.gap - row.plain,
                    row.per_iteration
                ),
                Err(e) => {
                    eprintln!("{}: {e}", b.display());
                    return std::process::ExitCode::from(1);
                }
            }
        }
        stop(sleepers);
    }
    println!(
        "\nMedians in milliseconds; a plain run is `sh -c ./bench.sh` started with std::process::Command and waited for."
    );
    std::process::ExitCode::SUCCESS
}

fn usage(why: &str) -> std::process::ExitCode {
    eprintln!("usage: run_overhead [--ooda PATH]…\n({why})");
    std::process::ExitCode::from(2)
}

fn label(b: &Path) -> String {
    let version = Command::new(b)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("`{}` ({version})", b.display())
}

struct Row {
    plain: f64,
    gap: f64,
    timed: f64,
    per_iteration: f64,
}

fn measure(ooda: &Path) -> Result<Row, String> {
    let dir = project(ooda)?;
    let plain = {
        let mut times = Vec::with_capacity(PLAIN_RUNS);
        for _ in 0..PLAIN_RUNS {
            let t = Instant::now();
            let out = Command::new("sh")
                .args(["-c", "./bench.sh"])
                .current_dir(&dir)
                .output()
                .map_err(|e| format!("running bench.sh: {e}"))?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            if !out.status.success() {
                return Err("bench.sh failed".into());
            }
        }
        median(times)
    };
    let out = Command::new(ooda)
        .args(["run", "briefs/o.md"])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("running ooda: {e}"))?;
    // Exit 4: the Brief's iteration budget ended the night, as it should.
    if !matches!(out.status.code(), Some(0 | 4)) {
        return Err(format!(
            "`ooda run` exited {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let events = std::fs::read_to_string(dir.join("iterations/o/events.jsonl"))
        .map_err(|e| format!("reading events.jsonl: {e}"))?;
    let (mut gaps, mut timed) = (Vec::new(), Vec::new());
    let mut previous: Option<(u64, f64)> = None;
    // The night's span and its iterations, for the time beyond the runs.
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut iterations = std::collections::BTreeSet::new();
    for line in events.lines() {
        let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(i), Some(ts)) = (e["iteration"].as_u64(), e["ts"].as_str()) {
            let at = seconds(ts)?;
            first = first.min(at);
            last = last.max(at);
            iterations.insert(i);
        }
        if e["role"] != "metric" {
            continue;
        }
        match e["type"].as_str() {
            Some("command_started") => {
                let iteration = e["iteration"].as_u64().unwrap_or(u64::MAX);
                let at = seconds(e["ts"].as_str().unwrap_or_default())?;
                if let Some((i, t)) = previous
                    && i == iteration
                {
                    gaps.push((at - t) * 1000.0);
                }
                previous = Some((iteration, at));
            }
            Some("command_finished") => {
                timed.push(e["seconds"].as_f64().unwrap_or(f64::NAN) * 1000.0);
            }
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if gaps.len() < 10 || timed.is_empty() {
        return Err(format!("only {} runs followed another", gaps.len()));
    }
    // Every run costs about its start-to-start time; the rest of the
    // night is the iterations' own.
    let runs_ms = median(gaps.clone()) * timed.len() as f64;
    let per_iteration = ((last - first) * 1000.0 - runs_ms) / iterations.len().max(1) as f64;
    Ok(Row {
        plain,
        gap: median(gaps),
        timed: median(timed),
        per_iteration,
    })
}

/// A fresh git project with the Brief and its benchmark, committed.
fn project(ooda: &Path) -> Result<PathBuf, String> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ooda-run-overhead-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("briefs")).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("briefs/o.md"), BRIEF).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("bench.sh"), BENCH).map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("bench.sh"), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&dir)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| {
                o.status
                    .success()
                    .then_some(())
                    .ok_or_else(|| String::from_utf8_lossy(&o.stderr).into_owned())
            })
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-qm", "bench"])?;
    let init = Command::new(ooda)
        .arg("init")
        .current_dir(&dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !init.status.success() {
        return Err(format!(
            "`ooda init` failed: {}",
            String::from_utf8_lossy(&init.stderr)
        ));
    }
    git(&["add", "-A"])?;
    git(&["commit", "-qm", "ooda init"])?;
    Ok(dir)
}

/// Seconds since the epoch of the events' RFC 3339 times.
fn seconds(ts: &str) -> Result<f64, String> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .map(|t| t.timestamp_micros() as f64 / 1e6)
        .map_err(|e| format!("not a time: {ts} ({e})"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spawn_idle(n: usize) -> std::io::Result<Vec<Child>> {
    let mut started = Vec::with_capacity(n);
    for _ in 0..n {
        match Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => started.push(c),
            Err(e) => {
                stop(started);
                return Err(e);
            }
        }
    }
    Ok(started)
}

fn stop(children: Vec<Child>) {
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

fn count_processes() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .count()
        })
        .unwrap_or(0)
}
