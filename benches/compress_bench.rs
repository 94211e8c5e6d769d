//! ooda's output compressor beside RTK on the same real command outputs.
//!
//! `cargo bench --bench compress_bench -- [--rtk PATH] [--corpus DIR] [--show CASE] [--items CASE] [--budget CASE N] [--twice CASE] [--save]`
//!
//! The corpus (`benches/compress/corpus/`, made by
//! `benches/compress/generate.sh`) holds, per case, the command a user ran,
//! what it printed (`raw.log`), what RTK's own Claude Code hook rewrites the
//! command to (`rtk`, `-` where the hook leaves it alone, so RTK never sees
//! the output), and what the tools printed when RTK ran them (`rec/`). RTK
//! is a proxy that runs the tool itself (`rtk cargo test` runs `cargo
//! test`, perhaps with flags of its own), so it is run here as such, with
//! `benches/compress/shim` standing in for each tool and printing the
//! recorded bytes.
//!
//! What must survive is decided by a rule written before the corpus was
//! made (`benches/compress/must_survive.rs`), on `raw.log` for both sides:
//! it is what the user's command printed and what the agent asked to see,
//! whatever flags RTK runs the tool with. RTK drops lines, so
//! its size alone says nothing of what it kept: ooda is held to RTK's
//! output plus the items RTK dropped ("RTK + dropped"), the least an output
//! holding both would spend. Sizes count characters; tokens ≈ chars / 4.
//!
//! ooda's side is `compress::compress` with no budget (RTK has none); the
//! budget's ranking is measured separately: at 4,000 characters, on every
//! case with at most 20 errors, are all errors and their locations kept?
//!
//! `--items CASE` lists what the rule says must survive of one case;
//! `--budget CASE N` prints one case compressed to N characters and the
//! errors and locations it lost; `--twice CASE` prints it compressed once
//! and twice (the two must be the same);
//! `--show CASE` prints both outputs and the items each dropped; `--save`
//! keeps what RTK printed in each case's `rtk-out.txt`, where the corpus
//! test holds ooda to it without RTK at hand.

#[path = "compress/must_survive.rs"]
mod must_survive;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use must_survive::{Must, dropped, must_survive, survival};
use ooda::testing::text::compress;

struct Side {
    chars: usize,
    kept: usize,
    of: usize,
    /// The least characters the items it dropped would add.
    missing: usize,
    micros: u128,
    output: String,
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut rtk: Option<PathBuf> = None;
    let mut corpus = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/compress/corpus"
    ));
    let mut show = None;
    let mut save = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rtk" => rtk = args.next().map(PathBuf::from),
            "--corpus" => corpus = args.next().map(PathBuf::from).unwrap_or(corpus),
            "--show" => show = args.next(),
            "--save" => save = true,
            "--budget" => {
                // One case compressed to a budget, and the errors and
                // locations it lost.
                let case = corpus.join(args.next().unwrap_or_default());
                let budget = args.next().and_then(|b| b.parse().ok()).unwrap_or(4000);
                let raw = std::fs::read(case.join("raw.log")).unwrap_or_default();
                let raw = String::from_utf8_lossy(&raw);
                let out = compress::compress(&raw, budget);
                println!("{out}\n===== lost =====");
                let items: Vec<Must> = must_survive::errors_and_locations(&must_survive(&raw))
                    .into_iter()
                    .map(|(m, _)| m)
                    .collect();
                for m in dropped(&out, &items) {
                    println!("{}", m.listed());
                }
                return std::process::ExitCode::SUCCESS;
            }
            "--twice" => {
                // One case compressed once and twice, for a reader to diff.
                let case = corpus.join(args.next().unwrap_or_default());
                let raw = std::fs::read(case.join("raw.log")).unwrap_or_default();
                let once = compress::compress(&String::from_utf8_lossy(&raw), usize::MAX);
                let twice = compress::compress(&once, usize::MAX);
                println!("{once}\n===== twice =====\n{twice}");
                return std::process::ExitCode::SUCCESS;
            }
            "--items" => {
                // The must-survive items of one case, as the rule lists them.
                let case = corpus.join(args.next().unwrap_or_default());
                let raw = std::fs::read(case.join("raw.log")).unwrap_or_default();
                for m in must_survive(&String::from_utf8_lossy(&raw)) {
                    println!("{}", m.listed());
                }
                return std::process::ExitCode::SUCCESS;
            }
            // What `cargo bench` passes to a benchmark without a harness.
            "--bench" => {}
            _ => {
                eprintln!(
                    "usage: compress_bench [--rtk PATH] [--corpus DIR] [--show CASE] [--items CASE] [--budget CASE N] [--twice CASE] [--save]\n(unknown argument {a})"
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
        (None, _) => println!(
            "RTK not run (pass --rtk PATH): its side is what it printed when the corpus was measured (rtk-out.txt).\n"
        ),
        (Some(p), None) => {
            eprintln!("{} does not run (`--version` failed)", p.display());
            return std::process::ExitCode::from(2);
        }
        (Some(_), Some(v)) => println!("RTK: {v}\n"),
    }
    let cases = match cases(&corpus) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot read the corpus {}: {e}", corpus.display());
            return std::process::ExitCode::from(2);
        }
    };
    println!(
        "| case | raw chars | must | ooda chars | ooda cut | ooda kept | RTK chars | RTK cut | RTK kept | RTK + dropped | ooda ≤ | ooda ms/MB | RTK ms/MB | 4k budget: errors + locations |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:-:|---:|---:|---:|");
    let (mut raw_total, mut ooda_total, mut rtk_total, mut rtk_plus_total) = (0, 0, 0, 0);
    let (mut raw_bytes, mut ooda_micros, mut rtk_micros) = (0usize, 0u128, 0u128);
    let (mut no_larger, mut lost, mut budget_lost, mut budget_cases) =
        (0, Vec::new(), Vec::new(), 0);
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(case.join("raw.log")).unwrap_or_default();
        let raw = String::from_utf8_lossy(&bytes).into_owned();
        let must = must_survive(&raw);
        let ours = {
            let t = Instant::now();
            let output = compress::compress(&raw, usize::MAX);
            side(output, t.elapsed().as_micros(), &must)
        };
        // Both are judged on what the user's command printed: that is what
        // the agent asked to see, whatever flags RTK ran the tool with.
        let rtk_must = &must;
        let theirs = match &rtk {
            Some(r) => {
                let (output, micros) = run_rtk(r, &corpus, case, &raw);
                if save {
                    std::fs::write(case.join("rtk-out.txt"), &output).expect("writing rtk-out.txt");
                }
                side(output, micros, rtk_must)
            }
            None => side(
                std::fs::read_to_string(case.join("rtk-out.txt")).unwrap_or_default(),
                0,
                rtk_must,
            ),
        };
        if show.as_deref() == Some(name.as_str()) {
            eprintln!("===== ooda =====\n{}", ours.output);
            eprintln!("===== ooda dropped =====");
            for m in dropped(&ours.output, &must) {
                eprintln!("{}", m.listed());
            }
            eprintln!("===== RTK =====\n{}", theirs.output);
            eprintln!("===== RTK dropped =====");
            for m in dropped(&theirs.output, rtk_must) {
                eprintln!("{}", m.listed());
            }
        }
        let raw_chars = raw.chars().count();
        let rtk_plus = theirs.chars + theirs.missing;
        // Each side with what it dropped (ooda drops nothing the rule
        // counts, where it does the same charge applies).
        let ok = ours.chars + ours.missing <= rtk_plus;
        no_larger += usize::from(ok);
        if ours.kept < ours.of {
            lost.push(name.clone());
        }
        let budget = budget_check(&raw, &must);
        if let Some((kept, of)) = budget {
            budget_cases += 1;
            if kept < of {
                budget_lost.push(name.clone());
            }
        }
        raw_total += raw_chars;
        ooda_total += ours.chars;
        rtk_total += theirs.chars;
        rtk_plus_total += rtk_plus;
        raw_bytes += bytes.len();
        ooda_micros += ours.micros;
        rtk_micros += theirs.micros;
        let pct = |n: usize| 100.0 * (1.0 - n as f64 / raw_chars.max(1) as f64);
        let per_mb = |m: u128| m as f64 / 1000.0 / (bytes.len().max(1) as f64 / 1e6);
        println!(
            "| {name} | {raw_chars} | {} | {} | {:.1}% | {}/{} | {} | {:.1}% | {}/{} | {rtk_plus} | {} | {:.0} | {} | {} |",
            must.len(),
            ours.chars,
            pct(ours.chars),
            ours.kept,
            ours.of,
            theirs.chars,
            pct(theirs.chars),
            theirs.kept,
            theirs.of,
            if ok { "yes" } else { "**no**" },
            per_mb(ours.micros),
            if rtk.is_some() {
                format!("{:.0}", per_mb(theirs.micros))
            } else {
                "–".into()
            },
            budget.map_or("–".into(), |(k, o)| format!("{k}/{o}")),
        );
    }
    let pct = |n: usize| 100.0 * (1.0 - n as f64 / raw_total.max(1) as f64);
    let per_mb = |m: u128| m as f64 / 1000.0 / (raw_bytes.max(1) as f64 / 1e6);
    println!(
        "| **total** ({} cases) | {raw_total} | | {ooda_total} | {:.1}% | | {rtk_total} | {:.1}% | | {rtk_plus_total} ({:.1}%) | {}/{} | {:.0} | {} | |",
        cases.len(),
        pct(ooda_total),
        pct(rtk_total),
        pct(rtk_plus_total),
        no_larger,
        cases.len(),
        per_mb(ooda_micros),
        if rtk.is_some() {
            format!("{:.0}", per_mb(rtk_micros))
        } else {
            "–".into()
        },
    );
    println!(
        "\ncut = 1 − output chars / raw chars; kept = must-survive items of raw.log found in the output; \"RTK + dropped\" = RTK's output plus the items it dropped; ooda ≤ = ooda's output no larger than that; ms/MB = time per MB of raw output (RTK: its whole run, process start and the replaying shim included); 4k budget = at 4,000 characters, errors and their locations kept, on cases with 1 to 20 errors whose own lines fit in it (with a gap marker after each)."
    );
    let tools: std::collections::BTreeSet<String> = cases
        .iter()
        .filter_map(|c| std::fs::read_to_string(c.join("tool")).ok())
        .map(|t| t.trim().to_string())
        .collect();
    if !tools.is_empty() {
        println!("{} cases from {} tools.", cases.len(), tools.len());
    }
    println!(
        "ooda keeps every item on {}/{} cases{}; no larger than RTK + dropped on {no_larger}/{} ({:.0}%) and {} in total; the 4k budget keeps errors and locations on {}/{budget_cases}{}.",
        cases.len() - lost.len(),
        cases.len(),
        if lost.is_empty() {
            String::new()
        } else {
            format!(" (drops on {})", lost.join(", "))
        },
        cases.len(),
        100.0 * no_larger as f64 / cases.len().max(1) as f64,
        if ooda_total <= rtk_plus_total {
            "no larger"
        } else {
            "LARGER"
        },
        budget_cases - budget_lost.len(),
        if budget_lost.is_empty() {
            String::new()
        } else {
            format!(" (not on {})", budget_lost.join(", "))
        },
    );
    std::process::ExitCode::SUCCESS
}

fn cases(corpus: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("raw.log").is_file())
        .collect();
    cases.sort();
    Ok(cases)
}

fn side(output: String, micros: u128, must: &[Must]) -> Side {
    let (kept, missing) = survival(&output, must);
    Side {
        chars: output.chars().count(),
        kept,
        of: must.len(),
        missing,
        micros,
        output,
    }
}

/// What a gap between two kept lines costs at most (`[… 1234 lines]`).
const GAP: usize = 16;

/// At the 4,000 characters of a failing guard's excerpt: of the error
/// items and the locations among the must-survive items, how many the
/// compressed output keeps; `None` for a case with no error, more than 20,
/// or errors whose own lines, with a gap's marker after each, are longer
/// than the budget (pino's JSON records of a failed request: 1,200
/// characters each).
fn budget_check(raw: &str, must: &[Must]) -> Option<(usize, usize)> {
    let errors = must_survive::errors_and_locations(must);
    let count = errors.iter().filter(|(_, location)| !location).count();
    if count == 0 || count > 20 {
        return None;
    }
    let items: Vec<Must> = errors.into_iter().map(|(m, _)| m).collect();
    // Errors that alone, with a gap's marker after each, are longer than
    // the budget cannot all be kept.
    if items.iter().map(|m| m.cost() + GAP).sum::<usize>() > 4000 {
        return None;
    }
    let out = compress::compress(raw, 4000);
    Some((survival(&out, &items).0, items.len()))
}

/// RTK, run as its hook would run it, with the shim for every tool it may
/// start; where the hook leaves the command alone, what the agent gets is
/// the raw output. Returns what it printed (stdout, then stderr) and its
/// wall time.
fn run_rtk(rtk: &Path, corpus: &Path, case: &Path, raw: &str) -> (String, u128) {
    let command = std::fs::read_to_string(case.join("rtk")).unwrap_or_default();
    let command = command.trim();
    if command == "-" || command.is_empty() {
        return (raw.to_string(), 0);
    }
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = corpus
        .parent()
        .unwrap_or(corpus)
        .join("shim")
        .canonicalize()
        .expect("benches/compress/shim");
    std::os::unix::fs::symlink(rtk.canonicalize().unwrap(), bin.join("rtk")).unwrap();
    // Only the tools RTK ran when the corpus was made: a shim for one it
    // did not would change which tool it looks for (uv before pip).
    for run in std::fs::read_dir(case.join("rec"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some(tool) = std::fs::read_to_string(run.path().join("argv"))
            .ok()
            .and_then(|a| a.lines().next().map(str::to_string))
        {
            let _ = std::os::unix::fs::symlink(&shim, bin.join(tool));
        }
    }
    // RTK reads a file itself (`rtk read server.log`): the raw output is it.
    let words: Vec<&str> = command.split_whitespace().collect();
    if words.get(1) == Some(&"read")
        && let Some(file) = words.last()
    {
        std::fs::write(scratch.path().join(file), raw).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let t = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
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
