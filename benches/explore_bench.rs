//! Exploration with the code index against exploration with grep and reads.
//!
//! ```text
//! bash benches/explore/fetch.sh
//! cargo bench --bench explore_bench [-- --corpus DIR] [--only ID] [--show ID]
//! ```
//!
//! Every question of `benches/explore/questions.yaml` (answers established
//! by hand, before the index existed) is answered twice by a scripted
//! explorer following a fixed strategy: once with the llm driver's
//! `search_files`/`read_file` tools, once with the index's tools (falling
//! back to the grep strategy when the index does not know the symbol).
//! Both see exactly what a model would be returned. Per question and in
//! total: tool calls, characters returned, whether every expected item is
//! in what was returned, and wall time. Per codebase: the index's build
//! time and size, and the time of an update after a one-file change.
//!
//! The grep/read strategy, per kind of question (what a careful agent does
//! with text tools and nothing else):
//! - define: one search for a definition of the name (`fn|def|func|
//!   function|class|struct|type… NAME`, `NAME = function`, a C function
//!   header), then a read of 40 lines at the first hit to confirm it;
//! - callers / impact: one search for `NAME(`; then, for every hit outside
//!   the definition, a read of the 50 lines above it (to see which function
//!   it is in), and up to two more 50-line reads further up while none shows
//!   a function's header, skipping hits a previous read already covered;
//! - callees: a search for the definition, a read of 80 lines from it, and
//!   one search for the definitions of every name called in those lines;
//! - tests: one search for the name; then the same reads above every hit
//!   in a test file (to see which test it is in).
//!
//! The index strategy: define → `find_symbol`; callers → `callers`;
//! callees → `callees`; impact → `impact`; tests → `explore` (its tests
//! section); each one call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};

use ooda::testing::code_index::{Explorer, Index, Limits};
use ooda::testing::driver::llm::tools::read_only;

#[derive(Deserialize, Debug)]
struct Question {
    id: String,
    codebase: String,
    kind: String,
    symbol: String,
    file: String,
    expect: Vec<String>,
}

/// What one strategy did for one question.
#[derive(Default, Clone)]
struct Run {
    calls: usize,
    chars: usize,
    found: bool,
    micros: u128,
    text: String,
    /// What is judged, when not all of `text`: for callees, only the
    /// names shown defined in the codebase (grep: its search for their
    /// definitions; the index: its `→` lines, not its list of names it
    /// could not find).
    answer: Option<String>,
    log: Vec<String>,
}

impl Run {
    fn add(&mut self, tool: &str, args: &Value, out: Result<String, String>) -> String {
        let t = match out {
            Ok(t) => t,
            Err(e) => format!("error: {e}"),
        };
        self.calls += 1;
        self.chars += t.chars().count();
        self.log.push(format!("{tool} {args}"));
        self.text.push_str(&t);
        self.text.push('\n');
        t
    }
}

fn grep(root: &Path, run: &mut Run, args: Value) -> Vec<(String, usize)> {
    let out = run.add(
        "search_files",
        &args,
        read_only(root, "search_files", &args),
    );
    serde_json::from_str::<Vec<String>>(&out)
        .unwrap_or_default()
        .iter()
        .filter_map(|h| {
            let mut it = h.splitn(3, ':');
            let (p, l) = (it.next()?, it.next()?.parse().ok()?);
            Some((p.to_string(), l))
        })
        .collect()
}

fn read(root: &Path, run: &mut Run, path: &str, start: usize, end: usize) -> String {
    let args = json!({"path": path, "start": start.max(1), "end": end.max(1)});
    run.add("read_file", &args, read_only(root, "read_file", &args))
}

fn esc(s: &str) -> String {
    regex::escape(s)
}

/// A regex for a definition of `name` in any of the five languages.
fn def_pattern(name: &str) -> String {
    def_regex(&esc(name))
}

/// [`def_pattern`] for a regex of names (`(a|b)`).
fn def_regex(n: &str) -> String {
    format!(
        r"(fn|def|func|function|class|struct|enum|trait|type|interface|macro_rules!)\s+(\([^)]*\)\s*)?\*?{n}\b|[.\s]{n}\s*[:=]\s*(async\s+)?function|^[A-Za-z_][\w\s\*]*\b{n}\s*\(.*[^;]$"
    )
}

fn is_test_path(p: &str) -> bool {
    let l = p.to_lowercase();
    l.split('/').any(|c| {
        matches!(c, "test" | "tests" | "__tests__" | "spec")
            || c.starts_with("test_")
            || c.contains("_test.")
            || c.contains(".test.")
            || c.contains(".spec.")
            || c.starts_with("test.")
    }) || l.starts_with("test")
}

/// A line that opens a function, method or test in one of the languages.
fn header() -> &'static regex::Regex {
    static H: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    H.get_or_init(|| {
        regex::Regex::new(
            r#"(?m)^\s*((pub(\([\w:]+\))?\s+)?(async\s+)?(fn|def|func|function)\b|(it|test|describe)\(|\w+(\.prototype)?\.\w+\s*=\s*function|[A-Za-z_][\w \t\*]*\b\w+\s*\([^;]*\)\s*\{?\s*$)"#,
        )
        .unwrap()
    })
}

/// Reads the 50 lines above each hit (covering the enclosing function's
/// header), once per region of a file.
fn read_above(root: &Path, run: &mut Run, hits: &[(String, usize)]) {
    let mut covered: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (p, l) in hits {
        let spans = covered.entry(p.clone()).or_default();
        if spans.iter().any(|(a, b)| a <= l && l <= b) {
            continue;
        }
        // Up to three windows of 50 lines, until one shows a function's
        // header above the hit (what a careful agent reads on for).
        let (mut a, b) = (l.saturating_sub(50).max(1), l + 2);
        let mut text = read(root, run, p, a, b);
        for _ in 0..2 {
            if a == 1 || header().is_match(&text) {
                break;
            }
            let top = a.saturating_sub(50).max(1);
            text = read(root, run, p, top, a - 1);
            a = top;
        }
        spans.push((a, b));
    }
}

fn grep_strategy(root: &Path, q: &Question) -> Run {
    let mut run = Run::default();
    let n = esc(&q.symbol);
    match q.kind.as_str() {
        "define" => {
            let hits = grep(root, &mut run, json!({"pattern": def_pattern(&q.symbol)}));
            if let Some((p, l)) = hits.iter().find(|(p, _)| !is_test_path(p)).or(hits.first()) {
                read(root, &mut run, p, *l, l + 40);
            }
        }
        "callers" | "impact" => {
            let hits = grep(
                root,
                &mut run,
                json!({"pattern": format!(r"\b{n}\s*\("), "max": 200}),
            );
            let defs = grep_defs(root, q);
            let hits: Vec<_> = hits.into_iter().filter(|h| !defs.contains(h)).collect();
            read_above(root, &mut run, &hits);
        }
        "callees" => {
            let hits = grep(
                root,
                &mut run,
                json!({"pattern": def_pattern(&q.symbol), "dir": q.file}),
            );
            let Some((p, l)) = hits.first().cloned() else {
                return run;
            };
            let body = read(root, &mut run, &p, l, l + 80);
            let re = regex::Regex::new(r"([A-Za-z_]\w*)\s*\(").unwrap();
            let mut names: Vec<String> = re
                .captures_iter(&body)
                .map(|c| c[1].to_string())
                .filter(|s| s != &q.symbol && !KEYWORDS.contains(&s.as_str()))
                .collect();
            names.sort();
            names.dedup();
            if !names.is_empty() {
                let before = run.text.len();
                let alt = names.iter().map(|s| esc(s)).collect::<Vec<_>>().join("|");
                grep(
                    root,
                    &mut run,
                    json!({"pattern": def_regex(&format!("({alt})")), "max": 200}),
                );
                run.answer = Some(run.text[before..].to_string());
            }
        }
        "tests" => {
            let hits = grep(
                root,
                &mut run,
                json!({"pattern": format!(r"\b{n}\b"), "max": 200}),
            );
            let hits: Vec<_> = hits.into_iter().filter(|(p, _)| is_test_path(p)).collect();
            read_above(root, &mut run, &hits);
        }
        k => panic!("unknown kind {k}"),
    }
    run
}

/// The definition lines of the symbol (not counted as calls; found
/// without a tool call since the question names the file).
fn grep_defs(root: &Path, q: &Question) -> Vec<(String, usize)> {
    let re = regex::Regex::new(&def_pattern(&q.symbol)).unwrap();
    let text = std::fs::read_to_string(root.join(&q.file)).unwrap_or_default();
    text.lines()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(i, _)| (q.file.clone(), i + 1))
        .collect()
}

const KEYWORDS: &[&str] = &[
    "if", "for", "while", "switch", "return", "match", "sizeof", "catch", "function", "fn", "def",
    "func", "Some", "Ok", "Err", "typeof", "print", "len", "new",
];

fn index_strategy(root: &Path, ex: &mut Explorer, q: &Question) -> Run {
    let mut run = Run::default();
    let (tool, args) = match q.kind.as_str() {
        "define" => ("find_symbol", json!({"query": q.symbol})),
        "callers" => ("callers", json!({"name": q.symbol, "file": q.file})),
        "callees" => ("callees", json!({"name": q.symbol, "file": q.file})),
        "impact" => ("impact", json!({"name": q.symbol, "file": q.file})),
        _ => ("explore", json!({"name": q.symbol, "file": q.file})),
    };
    let out = ex.call(tool, &args);
    let failed = out.is_err();
    let text = run.add(tool, &args, out);
    if q.kind == "callees" {
        run.answer = Some(
            text.lines()
                .filter(|l| l.contains(" → "))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    if failed {
        // The index does not know it: the text tools, as without it.
        let g = grep_strategy(root, q);
        run.calls += g.calls;
        run.chars += g.chars;
        run.text.push_str(&g.text);
        run.log.extend(g.log);
    }
    run
}

/// Whether every expected item is in the text: a `path:line` followed by
/// no further digit, a name as a whole word.
fn found(text: &str, expect: &[String]) -> bool {
    expect.iter().all(|e| {
        text.match_indices(e.as_str()).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + e.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    })
}

/// The direct callers a `callers` answer lists: (name, resolved).
fn listed_callers(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .filter_map(|l| {
            let head = l.trim().split(" — ").next()?;
            let mut words = head.split_whitespace();
            let _path = words.next()?;
            let kind = words.next()?;
            if kind == "top-level" {
                return None;
            }
            let name = words.next()?;
            let name = name.rsplit('.').next().unwrap_or(name).to_string();
            Some((name, l.ends_with("[resolved]")))
        })
        .collect()
}

/// Callers questions: edges listed, right or wrong, by certainty; and the
/// expected callers missing.
#[derive(Default)]
struct Precision {
    resolved_right: usize,
    resolved_wrong: usize,
    matched_right: usize,
    matched_wrong: usize,
    missing: usize,
}

fn timed(f: impl FnOnce() -> Run) -> Run {
    let t = Instant::now();
    let mut r = f();
    r.micros = t.elapsed().as_micros();
    r
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut corpus = PathBuf::from(
        std::env::var("EXPLORE_CORPUS").unwrap_or_else(|_| "target/explore-corpus".into()),
    );
    let (mut only, mut show) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => corpus = args.next().expect("--corpus DIR").into(),
            "--only" => only = args.next(),
            "--show" => show = args.next(),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    let qs: Vec<Question> =
        serde_saphyr::from_str(&std::fs::read_to_string("benches/explore/questions.yaml").unwrap())
            .expect("questions.yaml");
    let mut codebases: Vec<&str> = qs.iter().map(|q| q.codebase.as_str()).collect();
    codebases.dedup();
    // The large codebase without questions: timed only.
    let scale = ["tokio"];
    if !corpus.join(codebases[0]).is_dir() {
        eprintln!(
            "no corpus in {}: run `bash benches/explore/fetch.sh` (or pass --corpus DIR)",
            corpus.display()
        );
        std::process::exit(2);
    }
    println!("## Index build and update, per codebase\n");
    println!(
        "| codebase | files indexed | definitions | build (ms) | saved size (KiB) | update after a change to the median file, ms (% of build) | to the largest file | load + update + save, ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut explorers = BTreeMap::new();
    for cb in &codebases {
        let root = corpus.join(cb).canonicalize().unwrap();
        let (row, ex) = build_row(cb, &root);
        println!("{row}");
        explorers.insert(cb.to_string(), (root, ex));
    }
    for cb in scale {
        let root = corpus.join(cb);
        if root.is_dir() {
            println!("{}", build_row(cb, &root.canonicalize().unwrap()).0);
        }
    }
    println!("\n## Questions\n");
    println!(
        "| id | kind | grep calls | grep chars | grep found | index calls | index chars | index found | grep ms | index ms |"
    );
    println!("|---|---|---:|---:|:-:|---:|---:|:-:|---:|---:|");
    let mut totals = [0usize; 6];
    let (mut tg, mut ti) = (0u128, 0u128);
    let mut by_kind: BTreeMap<String, [usize; 6]> = BTreeMap::new();
    let mut precision = Precision::default();
    for q in &qs {
        if only.as_ref().is_some_and(|o| o != &q.id) {
            continue;
        }
        let (root, ex) = explorers.get_mut(&q.codebase).unwrap();
        let mut g = timed(|| grep_strategy(root, q));
        g.found = found(g.answer.as_deref().unwrap_or(&g.text), &q.expect);
        let mut i = timed(|| index_strategy(root, ex, q));
        i.found = found(i.answer.as_deref().unwrap_or(&i.text), &q.expect);
        if show.as_ref() == Some(&q.id) {
            println!(
                "\n--- grep: {:?}\n{}\n--- index: {:?}\n{}\n",
                g.log, g.text, i.log, i.text
            );
        }
        let mark = |b: bool| if b { "yes" } else { "**no**" };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} |",
            q.id,
            q.kind,
            g.calls,
            g.chars,
            mark(g.found),
            i.calls,
            i.chars,
            mark(i.found),
            g.micros as f64 / 1000.0,
            i.micros as f64 / 1000.0
        );
        if q.kind == "callers" {
            let listed = listed_callers(&i.text);
            for (name, resolved) in &listed {
                let right = q.expect.contains(name);
                match (resolved, right) {
                    (true, true) => precision.resolved_right += 1,
                    (true, false) => precision.resolved_wrong += 1,
                    (false, true) => precision.matched_right += 1,
                    (false, false) => precision.matched_wrong += 1,
                }
            }
            precision.missing += q
                .expect
                .iter()
                .filter(|e| !listed.iter().any(|(n, _)| n == *e))
                .count();
        }
        let row = [
            g.calls,
            g.chars,
            g.found as usize,
            i.calls,
            i.chars,
            i.found as usize,
        ];
        let k = by_kind.entry(q.kind.clone()).or_default();
        for j in 0..6 {
            totals[j] += row[j];
            k[j] += row[j];
        }
        tg += g.micros;
        ti += i.micros;
    }
    let n: usize = qs
        .iter()
        .filter(|q| only.as_ref().is_none_or(|o| o == &q.id))
        .count();
    println!("\n## Totals\n");
    println!(
        "| kind | questions | grep calls | index calls | fewer calls | grep chars | index chars | fewer chars | grep found | index found |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let pct = |a: usize, b: usize| 100.0 * (1.0 - b as f64 / a.max(1) as f64);
    for (k, t) in &by_kind {
        let count = qs
            .iter()
            .filter(|q| &q.kind == k && only.as_ref().is_none_or(|o| o == &q.id))
            .count();
        println!(
            "| {k} | {count} | {} | {} | {:.0}% | {} | {} | {:.0}% | {} | {} |",
            t[0],
            t[3],
            pct(t[0], t[3]),
            t[1],
            t[4],
            pct(t[1], t[4]),
            t[2],
            t[5]
        );
    }
    println!(
        "| **all** | {n} | {} | {} | **{:.0}%** | {} | {} | **{:.0}%** | {} | {} |",
        totals[0],
        totals[3],
        pct(totals[0], totals[3]),
        totals[1],
        totals[4],
        pct(totals[1], totals[4]),
        totals[2],
        totals[5]
    );
    let p = &precision;
    println!(
        "\nCallers questions, the index's direct callers: {} resolved edges right, {} wrong; {} name-matched edges right, {} wrong; {} expected callers not listed.",
        p.resolved_right, p.resolved_wrong, p.matched_right, p.matched_wrong, p.missing
    );
    println!(
        "\nWall time of all questions: grep/read {:.0} ms, index {:.0} ms.",
        tg as f64 / 1000.0,
        ti as f64 / 1000.0
    );
}

/// Builds a codebase's index from nothing (timed, best of three), saves
/// it (size), then changes one file of a copy and times the update: the
/// median-sized file (a typical edit) and the largest (the worst), in
/// memory, and as a new process does it (load, refresh, save).
fn build_row(cb: &str, root: &Path) -> (String, Explorer) {
    let limits = Limits::default();
    let no = std::sync::atomic::AtomicBool::new(false);
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join(cb);
    copy_tree(root, &copy);
    let copy = copy.canonicalize().unwrap();
    let mut build = f64::MAX;
    let mut ix = Index::build(&copy, limits, &no);
    for _ in 0..3 {
        let t = Instant::now();
        ix = Index::build(&copy, limits, &no);
        build = build.min(t.elapsed().as_secs_f64());
    }
    let dir = scratch.path().join("index");
    let saved = ix.save(&dir, "base").unwrap();
    let size = std::fs::metadata(&saved).unwrap().len();
    let files = ix.by_size();
    let (median, largest) = (
        files[files.len() / 2].to_string(),
        files[files.len() - 1].to_string(),
    );
    let update = |rel: &str, ix: &mut Index| {
        let p = copy.join(rel);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("\n\n// changed by the benchmark\n");
        std::fs::write(&p, &text).unwrap();
        let t = Instant::now();
        let r = ix.refresh(limits, &no);
        let took = t.elapsed().as_secs_f64();
        assert_eq!(r.parsed, [rel.to_string()]);
        took
    };
    let typical = update(&median, &mut ix);
    let worst = update(&largest, &mut ix);
    let p = copy.join(&median);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text + " ").unwrap();
    let t = Instant::now();
    let (_, r) = Index::open(&copy, &dir, limits, true);
    let reopen = t.elapsed().as_secs_f64();
    assert!(r.parsed.contains(&median), "{:?}", r.parsed);
    let ms = |s: f64| s * 1000.0;
    let row = format!(
        "| {cb} | {} | {} | {:.0} | {} | {:.1} ({:.1}%) | {:.1} ({:.1}%) | {:.1} |",
        ix.len(),
        ix.definitions(),
        ms(build),
        size / 1024,
        ms(typical),
        100.0 * typical / build,
        ms(worst),
        100.0 * worst / build,
        ms(reopen)
    );
    (row, Explorer::open(root, None, limits))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let ft = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &dest);
        } else if ft.is_file() {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
