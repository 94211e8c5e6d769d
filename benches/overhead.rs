//! What the archive costs as history grows, on real files.
//!
//! ```sh
//! cargo build --release                                # the tick table needs the binary
//! cargo bench --bench overhead              # 10 and 1,000 iterations
//! cargo bench --bench overhead -- 10 1000 10000
//! ```
//!
//! Three tables. `ooda status` over three Briefs of N iterations each, the
//! old path (every iteration file parsed: `history::load_files`) beside the
//! index (`history::load`), each the median of 5 `status::collect_with`
//! calls in this process, with the peak resident memory of a fresh
//! `ooda status` process read from `/proc`. The PLAN prompt's size at each
//! length against its 24,000-character budget. And one `ooda tick` of the
//! release binary after N iterations, with a command agent (so the prompt
//! is built and the agent fenced as with a real CLI) and a metric of about
//! a millisecond; the runner overhead is the wall time less the commands
//! the event log records, and each length's is compared with the tick at
//! 10 of the same round (`OVERHEAD_ROUNDS`, default 9): the median of those
//! paired differences and their range.
//!
//! The histories are synthetic (`history::synthetic::synthetic_history`) but written by
//! the archive's own writer and aged eight hours (the index hashes files
//! younger than three seconds), so they are files the real reader accepts
//! in the state a morning finds them. `OVERHEAD_KEEP=1` keeps each tick
//! project (its path on stderr) for profiling. Goals (issue 16): status 3 × 1,000 in
//! ≤ 100 ms and ≤ 30 MB; a tick at 10,000 within 20 ms of one at 10. Issue
//! 46: status 3 × 1,000 ≤ 100 ms with 100,000 files in the worktrees (it
//! reads the disk use the last tick measured instead of walking them).

use std::path::Path;
use std::time::Instant;

use ooda::testing::archive::history;
use ooda::testing::brief::Brief;
use ooda::testing::project::Project;

fn brief_text() -> &'static str {
    "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nscope:\n  allow: [\"src/**\"]\n  protect: [\"bench.sh\"]\nknobs:\n  X: { int: [10, 80], default: 10 }\nagent: builtin\n---\n# Goal\nMake t small.\n\n# Success\nt drops.\n\n# Must not break\nbench.sh stays.\n"
}

fn tick_brief() -> String {
    brief_text()
        .replace("agent: builtin", "agent: script")
        .replace(
            "protect: [\"bench.sh\"]",
            "protect: [\"bench.sh\", \"ooda-agent.sh\"]",
        )
}

fn project(root: &Path, n: u32) -> Result<(), String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .map_err(|e| e.to_string())
    };
    git(&["init", "-q", "-b", "main"])?;
    std::fs::write(root.join("ooda.yaml"), "defaults:\n  pairs: 3\n").map_err(|e| e.to_string())?;
    std::fs::create_dir_all(root.join("briefs")).map_err(|e| e.to_string())?;
    for b in ["a", "b", "c"] {
        let path = root.join("briefs").join(format!("{b}.md"));
        std::fs::write(&path, brief_text()).map_err(|e| e.to_string())?;
        let brief = Brief::parse(&path, brief_text()).map_err(|e| e.to_string())?;
        let dir = root.join("iterations").join(b);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let ctx = ooda::testing::archive::render_context(&brief);
        for mut rec in ooda::testing::archive::history::synthetic::synthetic_history(n, 7) {
            rec.brief = b.to_string();
            history::write(&dir, &rec, &ctx).map_err(|e| e.to_string())?;
        }
        // Files of last night, not of the last three seconds (which the
        // index would hash on every read: history/index.rs), and an index
        // built the way the next reader builds it.
        age(&dir)?;
        std::fs::remove_file(dir.join(history::index::FILE)).map_err(|e| e.to_string())?;
        history::load_and_repair(&dir).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn age(dir: &Path) -> Result<(), String> {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(8 * 3600);
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        if entry.file_name().to_string_lossy().starts_with("iter-") {
            std::fs::File::options()
                .write(true)
                .open(entry.path())
                .and_then(|f| f.set_modified(old))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Peak resident memory of a child `ooda status` in this project, in MB.
fn peak_rss(ooda: &Path, root: &Path) -> Option<f64> {
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "\"{}\" --root \"{}\" status > /dev/null & pid=$!; peak=0; while kill -0 $pid 2>/dev/null; do v=$(awk '/VmHWM/ {{print $2}}' /proc/$pid/status 2>/dev/null); [ -n \"$v\" ] && peak=$v; done; echo $peak",
            ooda.display(),
            root.display()
        ))
        .output()
        .ok()?;
    let kb: f64 = String::from_utf8_lossy(&child.stdout).trim().parse().ok()?;
    (kb > 0.0).then_some(kb / 1024.0)
}

/// A project whose Brief `a` has a real iteration 0 (a tick of the release
/// binary calibrated it) followed by `n` synthetic iterations, with the
/// checkpoint moved past them: the next `ooda tick a` runs iteration n + 1.
fn tick_project(ooda: &Path, root: &Path, n: u32) -> Result<(), String> {
    let run = |cmd: &mut std::process::Command| -> Result<(), String> {
        let out = cmd.current_dir(root).output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    let write =
        |rel: &str, text: &str| std::fs::write(root.join(rel), text).map_err(|e| e.to_string());
    run(std::process::Command::new("git").args(["init", "-q", "-b", "main"]))?;
    // A synthetic history has no keeps: the stall rule would end the run.
    write(
        "ooda.yaml",
        "defaults:\n  pairs: 3\n  calibration_pairs: 3\n  stall_after: 1000000\n",
    )?;
    write(
        ".gitignore",
        ".ooda/\niterations/*/state.json\niterations/*/events.jsonl\niterations/*/index.jsonl\niterations/*/artifacts/\niterations/*/.lock\n",
    )?;
    // About a millisecond per run, with a little noise so that decisions
    // are made the usual way.
    write(
        "bench.sh",
        "#!/bin/sh\nawk -v s=$$ 'BEGIN { srand(s); printf \"METRIC t=%.3f\\n\", 100 + rand() }'\n",
    )?;
    // A command agent, so that a tick builds the PLAN prompt and fences
    // the agent as with a real CLI; it proposes a new X each iteration.
    write(
        "ooda-agent.sh",
        "#!/bin/sh\ncat > /dev/null\ncase \"$OODA_PHASE\" in\n  plan) x=$(( (OODA_ITERATION * 3) % 70 + 11 )); printf '{\"hypothesis\": \"X=%s\", \"change\": \"X\", \"cites\": [0], \"axes\": [{\"name\": \"X\", \"direction\": \"up\"}], \"predicted_effect\": 0.01, \"predicted_sd\": 0.02, \"knobs\": {\"X\": %s}}' $x $x > \"$OODA_OUTPUT_FILE\" ;;\n  execute) echo done ;;\n  learn) printf '{\"narrative\": \"X=%s measured\"}' $OODA_ITERATION > \"$OODA_OUTPUT_FILE\" ;;\nesac\n",
    )?;
    run(std::process::Command::new("chmod").args(["+x", "bench.sh", "ooda-agent.sh"]))?;
    std::fs::create_dir_all(root.join("briefs")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(root.join("src")).map_err(|e| e.to_string())?;
    write("src/lib.txt", "code\n")?;
    write("briefs/a.md", &tick_brief())?;
    run(std::process::Command::new("git").args(["add", "-A"]))?;
    run(std::process::Command::new("git").args([
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@b",
        "commit",
        "-qm",
        "init",
    ]))?;
    run(std::process::Command::new(ooda).args(["tick", "a"]))?;
    let dir = root.join("iterations/a");
    let zero = history::read(&history::path_of(&dir, 0)).map_err(|e| e.to_string())?;
    let brief =
        Brief::parse(&root.join("briefs/a.md"), &tick_brief()).map_err(|e| e.to_string())?;
    let ctx = ooda::testing::archive::render_context(&brief);
    for mut rec in ooda::testing::archive::history::synthetic::synthetic_history(n, 7)
        .into_iter()
        .skip(1)
    {
        // Nothing kept (the base stays the start commit the checkpoint
        // has) and nothing blocked (a scope violation is a red light).
        match rec.verdict {
            history::Verdict::Keep => rec.verdict = history::Verdict::Discard,
            history::Verdict::Blocked => rec.verdict = history::Verdict::Invalid,
            _ => {}
        }
        rec.brief = "a".into();
        rec.brief_hash = zero.brief_hash.clone();
        rec.run_id = zero.run_id.clone();
        rec.base = zero.base.clone();
        rec.started = zero.finished;
        rec.finished = zero.finished;
        history::write(&dir, &rec, &ctx).map_err(|e| e.to_string())?;
    }
    age(&dir)?;
    let state_path = dir.join("state.json");
    let text = std::fs::read_to_string(&state_path).map_err(|e| e.to_string())?;
    let mut state: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    state["next_iteration"] = serde_json::json!(n + 1);
    write(
        "iterations/a/state.json",
        &serde_json::to_string_pretty(&state).map_err(|e| e.to_string())?,
    )
}

/// Wall time of one `ooda tick a` in `root`, and the time its metric
/// runs took by the event log, in ms.
fn tick(ooda: &Path, root: &Path) -> Result<Tick, String> {
    let events = root.join("iterations/a/events.jsonl");
    let from = std::fs::metadata(&events).map(|m| m.len()).unwrap_or(0);
    let cpu = children_cpu_ms();
    let t = Instant::now();
    let out = std::process::Command::new(ooda)
        .args(["tick", "a"])
        .current_dir(root)
        .output()
        .map_err(|e| e.to_string())?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let cpu = children_cpu_ms() - cpu;
    match out.status.code() {
        Some(0) => Ok(Tick {
            ms,
            commands: command_ms(&events, from),
            cpu,
        }),
        _ => Err(format!(
            "ooda tick a: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// A scratch directory under `OVERHEAD_DIR` (a tmpfs such as `/dev/shm`
/// takes the file system's own costs out: ext4's inode allocation in a
/// directory of 10,000 files, fsync), else the system's temporary one.
/// `total` small files spread over the three Briefs' worktrees, in build
/// folders of a thousand each, as a compiled project leaves them.
fn build_trees(root: &Path, total: usize) -> std::io::Result<()> {
    for (k, b) in ["a", "b", "c"].iter().enumerate() {
        let share = total / 3 + usize::from(k < total % 3);
        let wt = root.join(".ooda/worktrees").join(b).join("cand/target");
        for i in 0..share {
            let dir = wt.join(format!("d{}", i / 1000));
            if i % 1000 == 0 {
                std::fs::create_dir_all(&dir)?;
            }
            std::fs::write(dir.join(format!("o{i}.o")), b"x")?;
        }
    }
    Ok(())
}

fn scratch() -> std::io::Result<tempfile::TempDir> {
    match std::env::var_os("OVERHEAD_DIR") {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
}

/// One timed tick: its wall time, the commands' time by the event log,
/// and the CPU time (user and system) of the tick's processes, in ms.
#[derive(Clone, Copy)]
struct Tick {
    ms: f64,
    commands: f64,
    cpu: f64,
}

/// CPU time (user and system) of this process's children that were waited
/// for, in ms: around one `ooda tick`, that process and everything it ran
/// (its threads, the agent, the metric). Less noisy than wall time on a
/// shared machine, and it counts the runner's background check, which a
/// slow agent hides from the wall clock.
fn children_cpu_ms() -> f64 {
    // SAFETY: `rusage` is plain data; getrusage fills the one it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(u.ru_utime) + ms(u.ru_stime)
}

/// The median of `xs`.
fn median_of(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The seconds of every command (metric runs, guards) the event log
/// records after byte `from`, in ms.
fn command_ms(events: &Path, from: u64) -> f64 {
    let text = std::fs::read(events).unwrap_or_default();
    let tail = String::from_utf8_lossy(&text[(from as usize).min(text.len())..]).into_owned();
    tail.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "command_finished")
        .filter_map(|v| v["seconds"].as_f64())
        .sum::<f64>()
        * 1000.0
}

fn main() -> std::process::ExitCode {
    let sizes: Vec<u32> = {
        let a: Vec<u32> = std::env::args()
            .skip(1)
            .filter_map(|a| a.parse().ok())
            .collect();
        if a.is_empty() { vec![10, 1_000] } else { a }
    };
    let tick_sizes: Vec<u32> = if sizes.contains(&10) {
        sizes.clone()
    } else {
        std::iter::once(10).chain(sizes.iter().copied()).collect()
    };
    let ooda = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join("ooda")))
        .filter(|p| p.is_file());
    // The ticks first: the status table deletes three histories of every
    // length when it is done, and ext4 then spends a while skipping those
    // inodes (recently deleted) whenever a tick creates a file.
    let ticks = match ooda.as_deref().map(|o| tick_table(o, &tick_sizes)) {
        Some(Ok(rows)) => Some(rows),
        Some(Err(e)) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(1);
        }
        None => None,
    };
    println!(
        "| iterations per Brief | Briefs | status, every file parsed (old) | status, through the index | the same, 100,000 files in the worktrees | walking those worktrees (what status did before) | peak RSS of `ooda status` |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for &n in &sizes {
        let dir = scratch().expect("a scratch directory");
        if let Err(e) = project(dir.path(), n) {
            eprintln!("writing a {n}-iteration history failed: {e}");
            return std::process::ExitCode::from(1);
        }
        let project = match Project::discover(Some(dir.path())) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("the scratch project does not open: {e}");
                return std::process::ExitCode::from(1);
            }
        };
        let median = |load: ooda::testing::cli::status::table::Loader| {
            let mut times = Vec::new();
            for _ in 0..5 {
                let t = Instant::now();
                let rows = ooda::testing::cli::status::table::collect_with(&project, None, load)
                    .expect("status reads the archive");
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(rows.len(), 3);
                assert!(rows.iter().all(|r| r.iterations == n as usize));
            }
            times.sort_by(f64::total_cmp);
            times[2]
        };
        let old = median(history::load_files);
        let new = median(history::load);
        // A build tree in every worktree: status must not walk it (the
        // disk it shows is the last tick's measurement).
        if let Err(e) = build_trees(dir.path(), 100_000) {
            eprintln!("writing the worktrees' files failed: {e}");
            return std::process::ExitCode::from(1);
        }
        let with_files = median(history::load);
        let walk = {
            let mut times = Vec::new();
            for _ in 0..5 {
                let t = Instant::now();
                let bytes: u64 = ["a", "b", "c"]
                    .iter()
                    .map(|b| ooda::testing::archive::gc::disk_bytes(&project.worktrees_dir(b)))
                    .sum();
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                assert!(bytes > 0);
            }
            times.sort_by(f64::total_cmp);
            times[2]
        };
        let rss = ooda
            .as_deref()
            .and_then(|o| peak_rss(o, dir.path()))
            .map(|m| format!("{m:.1} MB"))
            .unwrap_or_else(|| "– (no release binary beside the example)".into());
        println!(
            "| {n} | 3 | {old:.1} ms | {new:.1} ms | {with_files:.1} ms | {walk:.1} ms | {rss} |"
        );
    }
    // The PLAN prompt at each length, against its budget (the builder
    // guarantees it; this shows how close each length comes).
    println!("\n| iterations | PLAN prompt (chars) | budget | falsified entries | digest folded |");
    println!("|---:|---:|---:|---:|---:|");
    for &n in &tick_sizes {
        let brief =
            Brief::parse(Path::new("briefs/a.md"), &tick_brief()).expect("the benchmark's Brief");
        let history = ooda::testing::archive::history::synthetic::synthetic_history(n, 7);
        let best = ooda::testing::model::Point::new();
        let orientation = ooda::testing::model::Orientation::of(&history, 0.0, 0.05, 24);
        let held = ooda::testing::archive::history::History::of(history.clone());
        let view = ooda::testing::driver::agent::prompt::PlanView {
            template: ooda::testing::project::TEMPLATES[0].1,
            brief: &brief,
            history: held.view(),
            iteration: history.len() as u32,
            limits: ooda::testing::brief::Budget::default(),
            run_started: chrono::Utc::now(),
            now: chrono::Utc::now(),
            iterations_dir: "iterations/a",
            best_point: &best,
            orientation: &orientation,
            retry: None,
            result_file: true,
            max_chars: 24_000,
        };
        let (_, stats) =
            ooda::testing::driver::agent::prompt::plan(&view).expect("a prompt from memory");
        println!(
            "| {n} | {} | 24000 | {} | {} |",
            stats.total, stats.falsified_entries, stats.digest_folded
        );
    }
    let Some(rows) = ticks else {
        println!(
            "\n(no release binary beside the example: `cargo build --release` for the tick table)"
        );
        return std::process::ExitCode::SUCCESS;
    };
    println!(
        "\n| iterations | one `ooda tick` (median) | its commands | runner overhead | more than at 10 (median of rounds) | range over rounds | CPU of the tick's processes | CPU more than at 10 |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.1} ms | {:.1} ms | {:.1} ms | {:+.1} ms | {:+.1} .. {:+.1} ms | {:.1} ms | {:+.1} ms |",
            r.n, r.ms, r.commands, r.overhead, r.more, r.range.0, r.range.1, r.cpu, r.cpu_more
        );
    }
    std::process::ExitCode::SUCCESS
}

/// One row of the tick table.
struct TickRow {
    n: u32,
    ms: f64,
    commands: f64,
    overhead: f64,
    /// The median over rounds of this length's overhead less the
    /// shortest's in the same round, and the least and most of those.
    more: f64,
    range: (f64, f64),
    /// The CPU time of the tick's processes (median), and the median over
    /// rounds of this length's less the shortest's.
    cpu: f64,
    cpu_more: f64,
}

/// Ticks of the release binary after each length of history (the first
/// is the reference), in rounds.
fn tick_table(ooda: &Path, tick_sizes: &[u32]) -> Result<Vec<TickRow>, String> {
    // Every project first, one untimed tick each (the runner builds its
    // index and facts table), then the timed ticks in turns: one tick of
    // each length per round, so the machine's state (its page cache, the
    // file system's free inodes) is the same for every length, and each
    // length is compared with the reference within its round (paired, as
    // the eval-runner compares a candidate with its base).
    let mut projects = Vec::new();
    for &n in tick_sizes {
        let dir = scratch().map_err(|e| e.to_string())?;
        tick_project(ooda, dir.path(), n)
            .and_then(|()| tick(ooda, dir.path()))
            .map_err(|e| format!("a tick after {n} iterations failed: {e}"))?;
        projects.push((n, dir, Vec::new()));
    }
    // OVERHEAD_ROUNDS: more rounds for a steadier median on a noisy machine.
    let rounds: usize = std::env::var("OVERHEAD_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(9);
    let lengths = projects.len();
    for round in 0..rounds {
        // Each round starts at another length, so that no length always
        // follows the same one.
        projects.rotate_left(usize::from(round > 0));
        for (n, dir, times) in &mut projects {
            let t = tick(ooda, dir.path())
                .map_err(|e| format!("a tick after {n} iterations failed: {e}"))?;
            times.push(t);
        }
    }
    // Back in order of length (rounds % lengths rotations were made).
    projects.rotate_right((rounds - 1) % lengths);
    let reference: Vec<Tick> = projects[0].2.clone();
    let mut rows = Vec::new();
    for (n, dir, times) in projects {
        if std::env::var_os("OVERHEAD_KEEP").is_some() {
            eprintln!("kept {}", dir.keep().display());
        }
        let mut more: Vec<f64> = times
            .iter()
            .zip(&reference)
            .map(|(t, r)| (t.ms - t.commands) - (r.ms - r.commands))
            .collect();
        more.sort_by(f64::total_cmp);
        let cpu_more: Vec<f64> = times
            .iter()
            .zip(&reference)
            .map(|(t, r)| t.cpu - r.cpu)
            .collect();
        rows.push(TickRow {
            n,
            ms: median_of(times.iter().map(|t| t.ms).collect()),
            commands: median_of(times.iter().map(|t| t.commands).collect()),
            overhead: median_of(times.iter().map(|t| t.ms - t.commands).collect()),
            more: more[more.len() / 2],
            range: (more[0], more[more.len() - 1]),
            cpu: median_of(times.iter().map(|t| t.cpu).collect()),
            cpu_more: median_of(cpu_more),
        });
    }
    Ok(rows)
}
