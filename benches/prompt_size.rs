//! Prompt-size benchmark: the PLAN prompt for a synthetic
//! history of 1,000 iterations must stay within the prompt budget (24,000
//! characters by default) and still list every falsified hypothesis.
//!
//! ```sh
//! cargo bench --bench prompt_size            # 1,000 iterations, 24,000 chars
//! cargo bench --bench prompt_size -- 5000 24000
//! cargo bench --bench prompt_size -- 1000 24000 --print   # show the prompt
//! ```
//!
//! Exits 1 if the prompt is over budget or a falsified hypothesis is missing.

use std::time::Instant;

use chrono::Utc;
use ooda::testing::archive::falsified;
use ooda::testing::brief::points::Point;
use ooda::testing::brief::{Brief, Budget};
use ooda::testing::driver::agent::prompt::{self, PlanView};
use ooda::testing::text::clip;

const BRIEF: &str = "---\nmetric:\n  name: p95_ms\n  command: ./bench.sh\n  direction: minimize\n  noise_floor: 1%\nguards: [\"cargo test --quiet\"]\nscope:\n  allow: [\"src/**\"]\n  protect: [\"bench.sh\", \"tests/**\"]\nagent: claude\n---\n# Goal\nMake p95 parse latency lower for the 1 MB corpus.\n\n# Success\np95_ms drops by 20% with the tests green.\n\n# Must not break\nThe public API and the output format.\n\n# Context\nThe tokenizer and the allocator dominate the profile.\n";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let budget: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(24_000);
    let print = args.iter().any(|a| a == "--print");

    let brief = match Brief::parse(std::path::Path::new("briefs/latency.md"), BRIEF) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("the benchmark's Brief does not parse: {e}");
            std::process::exit(1);
        }
    };
    let history = ooda::testing::archive::history::synthetic::synthetic_history(n, 42);
    let best = Point::new();
    let template = ooda::testing::project::TEMPLATES
        .iter()
        .find(|(name, _)| *name == "plan.md")
        .map(|(_, t)| *t)
        .unwrap_or_default();
    let orientation = ooda::testing::model::Orientation::of(&history, 0.0, 0.05, 24);
    let held = ooda::testing::archive::history::History::of(history.clone());
    let view = PlanView {
        template,
        brief: &brief,
        history: held.view(),
        iteration: n + 1,
        limits: Budget {
            iterations: Some(n + 40),
            wall: None,
            cost_usd: Some(15.0),
            tokens: Some(3_000_000),
        },
        run_started: Utc::now(),
        now: Utc::now(),
        iterations_dir: "iterations/latency",
        best_point: &best,
        orientation: &orientation,
        retry: None,
        result_file: false,
        max_chars: budget,
    };
    let t = Instant::now();
    let (text, stats) = match prompt::plan(&view) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("the prompt could not be built: {e}");
            std::process::exit(1);
        }
    };
    let elapsed = t.elapsed();

    let falsified = falsified::falsified_entries(&history);
    let width = stats.falsified_width.unwrap_or(usize::MAX);
    let missing: Vec<u32> = falsified
        .iter()
        .filter(|f| {
            let ids = f
                .ids
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            !text.contains(&format!("{ids}: {}", clip::clip(&f.text, width)))
        })
        .flat_map(|f| f.ids.clone())
        .collect();

    if print {
        println!("{text}\n");
    }
    println!("iterations of history      {n}");
    println!(
        "PLAN prompt                {} chars (budget {budget}, ≈{} tokens)",
        stats.total,
        stats.total / 4
    );
    println!("  fixed (template, Brief, state, knobs)  {}", stats.fixed);
    println!(
        "  falsified list            {} chars, {} hypotheses{}",
        stats.falsified,
        stats.falsified_entries,
        match stats.falsified_width {
            Some(w) => format!(", each shortened to ≤ {w} chars"),
            None => ", in full".into(),
        }
    );
    println!("  named patterns            {}", stats.patterns);
    println!(
        "  recent iterations (k={})  {}",
        stats.recent_k, stats.recent
    );
    println!(
        "  digest                    {} ({} oldest iterations folded into counts)",
        stats.digest, stats.digest_folded
    );
    println!(
        "built in                   {:.2} ms",
        elapsed.as_secs_f64() * 1e3
    );
    println!(
        "falsified listed           {} of {}",
        falsified.len() - missing.len().min(falsified.len()),
        falsified.len()
    );
    let over = stats.total > budget;
    if over || !missing.is_empty() {
        if over {
            eprintln!("FAIL: {} chars is over the budget of {budget}", stats.total);
        }
        if !missing.is_empty() {
            eprintln!("FAIL: falsified hypotheses missing from iterations {missing:?}");
        }
        std::process::exit(1);
    }
    println!("OK");
}
