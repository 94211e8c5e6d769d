//! What reading the archive costs as history grows: `ooda status` over
//! three Briefs of N iterations each, on real iteration files.
//!
//! ```sh
//! cargo run --release --example overhead              # 3 Briefs × 10, 1,000 iterations
//! cargo run --release --example overhead -- 10 1000 10000
//! ```
//!
//! The histories are synthetic (`prompt::synthetic_history`) but written by
//! the archive's own writer, so they are files the real reader accepts.
//! Each size is timed in this process (the median of 5 `status::collect`
//! calls over a warm page cache) and the peak resident memory of a fresh
//! `ooda status` process is read from `/proc` when the release binary is
//! beside this example. This is the baseline of the full-parse path the
//! index of issue 16 replaces; the goal there is 3 × 1,000 in ≤ 100 ms and
//! ≤ 30 MB.

use std::path::Path;
use std::time::Instant;

use ooda::brief::Brief;
use ooda::history;
use ooda::project::Project;

fn brief_text() -> &'static str {
    "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nscope:\n  allow: [\"src/**\"]\n  protect: [\"bench.sh\"]\nknobs:\n  X: { int: [10, 80], default: 10 }\nagent: builtin\n---\n# Goal\nMake t small.\n\n# Success\nt drops.\n\n# Must not break\nbench.sh stays.\n"
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
        let ctx = ooda::archive::render_context(&brief);
        for mut rec in ooda::prompt::synthetic_history(n, 7) {
            rec.brief = b.to_string();
            history::write(&dir, &rec, &ctx).map_err(|e| e.to_string())?;
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

fn main() -> std::process::ExitCode {
    let sizes: Vec<u32> = {
        let a: Vec<u32> = std::env::args()
            .skip(1)
            .filter_map(|a| a.parse().ok())
            .collect();
        if a.is_empty() { vec![10, 1_000] } else { a }
    };
    let ooda = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join("ooda")))
        .filter(|p| p.is_file());
    println!(
        "| iterations per Brief | Briefs | status (median of 5) | peak RSS of `ooda status` |"
    );
    println!("|---:|---:|---:|---:|");
    for n in sizes {
        let dir = tempfile::tempdir().expect("a scratch directory");
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
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let rows = ooda::status::collect(&project, None).expect("status reads the archive");
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(rows.len(), 3);
            assert!(rows.iter().all(|r| r.iterations == n as usize));
        }
        times.sort_by(f64::total_cmp);
        let rss = ooda
            .as_deref()
            .and_then(|o| peak_rss(o, dir.path()))
            .map(|m| format!("{m:.1} MB"))
            .unwrap_or_else(|| "– (no release binary beside the example)".into());
        println!("| {n} | 3 | {:.1} ms | {rss} |", times[2]);
    }
    std::process::ExitCode::SUCCESS
}
