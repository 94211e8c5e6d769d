//! ooda's output compressor beside RTK on the same real command outputs.
//!
//! `cargo bench --bench compress_bench -- [--rtk PATH] [--corpus DIR] [--show CASE] [--save]`
//!
//! `--show CASE` prints both outputs of one case; `--save` keeps what RTK
//! printed in each case's `rtk-out.txt`, where the corpus test holds ooda
//! to it without RTK at hand.
//!
//! The corpus (`benches/logs/`, made by `benches/logs/generate.sh`) holds, per
//! case, what a real command printed (`raw.log`), the lines that must survive
//! (`must.txt`, from a rule fixed before the compressor was tuned), and what
//! the real tools printed when RTK ran them (`rec/`). RTK is a proxy that runs
//! the tool itself (`rtk cargo test` runs `cargo test`), so it is run here as
//! such, with `benches/logs/shim` standing in for the tool and printing the
//! recorded bytes: both compressors see what the tool printed, and each is
//! judged on the must-survive lines of its own input (`must.txt` for ooda,
//! `rtk-must.txt` for RTK, whose runs were recorded separately and may pass
//! other flags, e.g. pytest's `-q`). Output sizes count characters, tokens
//! as characters / 4.
//!
//! RTK drops lines: its size alone says nothing of what it kept, so ooda is
//! held to RTK's output plus the must-survive lines RTK dropped. Where RTK's
//! tool printed other bytes than the user's command did (RTK adds flags),
//! the sizes of two inputs are not a comparison of two compressors: such a
//! case is judged on the bytes RTK was given, both compressors on them.
//!
//! ooda's side is `compress::compress` with no budget (RTK has none either):
//! only its structural passes reduce; the budget is a further hard bound.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ooda::testing::text::compress;

struct Side {
    chars: usize,
    kept: usize,
    /// The characters of the must-survive lines it dropped, each as the
    /// kept check reads it (runs of blanks as one) with a newline: the least
    /// an output holding it must spend.
    missing: usize,
    micros: u128,
    output: String,
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut rtk: Option<PathBuf> = None;
    let mut corpus = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/logs"));
    let mut show = None;
    let mut save = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rtk" => rtk = args.next().map(PathBuf::from),
            "--corpus" => corpus = args.next().map(PathBuf::from).unwrap_or(corpus),
            "--show" => show = args.next(),
            "--save" => save = true,
            // What `cargo bench` passes to a benchmark without a harness.
            "--bench" => {}
            _ => {
                eprintln!(
                    "usage: compress_bench [--rtk PATH] [--corpus DIR] [--show CASE] [--save]\n(unknown argument {a})"
                );
                return std::process::ExitCode::from(2);
            }
        }
    }
    let rtk_version = rtk.as_ref().and_then(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    });
    match (&rtk, &rtk_version) {
        (None, _) => println!("RTK not available (pass --rtk PATH): ooda's side only.\n"),
        (Some(p), None) => {
            println!("RTK not available: {} does not run.\n", p.display());
        }
        (Some(_), Some(v)) => println!("RTK: {v}\n"),
    }
    let rtk = rtk.filter(|_| rtk_version.is_some());
    let mut cases: Vec<PathBuf> = match std::fs::read_dir(&corpus) {
        Ok(d) => d
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("raw.log").is_file())
            .collect(),
        Err(e) => {
            eprintln!("cannot read the corpus {}: {e}", corpus.display());
            return std::process::ExitCode::from(2);
        }
    };
    cases.sort();
    println!(
        "| input | raw chars | must-survive | ooda chars | ooda reduction | ooda kept | ooda time | RTK chars | RTK reduction | RTK kept | RTK + its dropped lines | RTK time |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut worse = Vec::new();
    // Cases whose tool printed other bytes when RTK ran it (other flags,
    // other timings): ooda on RTK's own input.
    let mut other_input = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let raw = String::from_utf8_lossy(&std::fs::read(case.join("raw.log")).unwrap_or_default())
            .into_owned();
        let must: Vec<String> = std::fs::read_to_string(case.join("must.txt"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let raw_chars = raw.chars().count();
        let ours = {
            let t = Instant::now();
            let output = compress::compress(&raw, usize::MAX);
            side(output, t.elapsed().as_micros(), &must)
        };
        // RTK is judged on the lines of what it was given (its tools'
        // recorded output: other timings, other flags).
        let rtk_must: Vec<String> = std::fs::read_to_string(case.join("rtk-must.txt"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_else(|_| must.clone());
        let theirs = rtk.as_ref().map(|r| {
            let (output, micros) = run_rtk(r, &corpus, case);
            if save {
                std::fs::write(case.join("rtk-out.txt"), &output).expect("writing rtk-out.txt");
            }
            side(output, micros, &rtk_must)
        });
        // The same lines in another order (stdout and stderr recorded
        // apart) are the same input.
        let lines = |t: &str| {
            let mut l: Vec<String> = t.lines().map(normal).collect();
            l.sort();
            l
        };
        if let Some(input) = recorded(case).filter(|r| lines(r) != lines(&raw)) {
            let t = Instant::now();
            let output = compress::compress(&input, usize::MAX);
            let same = side(output, t.elapsed().as_micros(), &rtk_must);
            if show.as_deref() == Some(name.as_str()) {
                eprintln!("===== ooda on RTK's input =====\n{}", same.output);
            }
            other_input.push((
                name.clone(),
                input.chars().count(),
                same,
                rtk_must.len(),
                theirs.as_ref().map(|t| t.chars + t.missing),
            ));
        }
        if show.as_deref() == Some(name.as_str()) {
            eprintln!("===== ooda =====\n{}", ours.output);
            if let Some(t) = &theirs {
                eprintln!("===== RTK =====\n{}", t.output);
            }
        }
        let pct = |s: &Side| 100.0 * (1.0 - s.chars as f64 / raw_chars.max(1) as f64);
        let kept = |s: &Side, of: usize| format!("{}/{of}", s.kept);
        let time = |s: &Side| format!("{:.1} ms", s.micros as f64 / 1000.0);
        let (rc, rr, rk, rf, rt) = match &theirs {
            Some(t) => (
                t.chars.to_string(),
                format!("{:.1}%", pct(t)),
                kept(t, rtk_must.len()),
                format!(
                    "{} ({:.1}%)",
                    t.chars + t.missing,
                    100.0 * (1.0 - (t.chars + t.missing) as f64 / raw_chars.max(1) as f64)
                ),
                time(t),
            ),
            None => ("–".into(), "–".into(), "–".into(), "–".into(), "–".into()),
        };
        println!(
            "| {name} | {raw_chars} | {} | {} | {:.1}% | {} | {} | {rc} | {rr} | {rk} | {rf} | {rt} |",
            must.len(),
            ours.chars,
            pct(&ours),
            kept(&ours, must.len()),
            time(&ours),
        );
        // Where RTK dropped must-survive lines its size is not comparable:
        // ooda is held to RTK's output plus the lines it dropped. Where RTK's
        // tool printed other bytes (other flags), sizes of different inputs
        // say nothing of the compressors: that case is judged below, on the
        // bytes RTK was given; ooda must still keep every line of its own.
        let judged_on_rtk_input = other_input.last().is_some_and(|o| o.0 == name);
        if ours.kept < must.len()
            || (!judged_on_rtk_input
                && theirs
                    .as_ref()
                    .is_some_and(|t| t.chars + t.missing < ours.chars))
        {
            worse.push(name);
        }
    }
    if !other_input.is_empty() {
        println!(
            "\nWhere the tool printed other bytes when RTK ran it (other flags, other timings), both on those bytes:\n"
        );
        println!(
            "| input | RTK's input chars | must-survive | ooda chars | ooda kept | RTK + its dropped lines |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        for (name, chars, ours, of, theirs) in &other_input {
            println!(
                "| {name} | {chars} | {of} | {} | {}/{of} | {} |",
                ours.chars,
                ours.kept,
                theirs.map(|t| t.to_string()).unwrap_or_else(|| "–".into())
            );
        }
    }
    println!(
        "\nreduction = 1 − output chars / raw chars; kept = must-survive lines found in the output (volatile tokens masked); \"RTK + its dropped lines\" = RTK's output plus the must-survive lines it dropped, the smallest output holding both; tokens ≈ chars / 4."
    );
    // On RTK's own input too: the same bytes in, each judged on them.
    for (name, _, ours, of, theirs) in &other_input {
        if (ours.kept < *of || theirs.is_some_and(|t| t < ours.chars)) && !worse.contains(name) {
            worse.push(format!("{name} (on RTK's input)"));
        }
    }
    if rtk.is_none() {
        println!("RTK was not run: only ooda's side is measured.");
    } else if worse.is_empty() {
        println!(
            "ooda keeps every must-survive line and is no larger than RTK plus the lines RTK dropped, on every input (on the bytes RTK was given, where its tool printed others)."
        );
    } else {
        println!(
            "ooda drops a must-survive line, or is larger than RTK plus the lines RTK dropped, on: {}",
            worse.join(", ")
        );
    }
    std::process::ExitCode::SUCCESS
}

fn side(output: String, micros: u128, must: &[String]) -> Side {
    let must: Vec<&str> = must.iter().map(String::as_str).collect();
    let (kept, missing) = compress::survival(&output, &must);
    Side {
        chars: output.chars().count(),
        kept,
        missing,
        micros,
        output,
    }
}

/// A line as the must-survive rule reads it, with runs of blanks as one.
/// Volatile tokens (timestamps, UUIDs, hex ids) are masked on both sides, as
/// the rule says (`benches/logs/must_survive.py`).
fn normal(line: &str) -> String {
    let shown = compress::strip_ansi(line);
    let shown = shown.rsplit('\r').find(|s| !s.is_empty()).unwrap_or("");
    compress::shape(shown)
}

/// What the tool printed when RTK ran it: the recorded runs' stdout then
/// stderr, in the order of their directories.
fn recorded(case: &Path) -> Option<String> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(case.join("rec"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    runs.sort();
    let mut text = String::new();
    for r in runs {
        for part in ["out", "err"] {
            if let Ok(b) = std::fs::read(r.join(part)) {
                text.push_str(&String::from_utf8_lossy(&b));
            }
        }
    }
    (!text.is_empty()).then_some(text)
}

/// RTK, run as the proxy it is, with the shim for every tool it may start.
/// Returns what it printed (stdout, then stderr) and its wall time.
fn run_rtk(rtk: &Path, corpus: &Path, case: &Path) -> (String, u128) {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = corpus
        .join("shim")
        .canonicalize()
        .expect("benches/logs/shim");
    for tool in ["cargo", "git", "npm", "wget", "pytest", "python"] {
        std::os::unix::fs::symlink(&shim, bin.join(tool)).unwrap();
    }
    // RTK reads some inputs itself (`rtk log raw.log`).
    std::fs::copy(case.join("raw.log"), scratch.path().join("raw.log")).unwrap();
    let args: Vec<String> = std::fs::read_to_string(case.join("rtk"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let t = Instant::now();
    let out = Command::new(rtk)
        .args(&args)
        .current_dir(scratch.path())
        .env("PATH", path)
        .env("HOME", scratch.path())
        .env("XDG_DATA_HOME", scratch.path().join("data"))
        .env("SHIM_MODE", "replay")
        .env(
            "SHIM_STORE",
            case.join("rec").canonicalize().unwrap_or_default(),
        )
        .output()
        .expect("running rtk");
    let micros = t.elapsed().as_micros();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    if !err.trim().is_empty() {
        if !text.ends_with('\n') && !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&err);
    }
    (text, micros)
}
