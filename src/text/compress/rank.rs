//! Fitting compressed output into a budget of characters, by rank.
//!
//! When the budget binds, what stays is chosen by what a reader needs
//! first, not by where it is: the last line (most often the verdict),
//! errors with their locations, then the
//! details of failures, then warnings with their locations, then
//! summaries (a tool's closing counts, the first line), then
//! other lines the loose problem words name, then the rest nearest the
//! head and the tail. Within a rank, earlier lines first. A line is never
//! cut below a useful length (one overlong line is shortened, with the
//! count of what went, only past an eighth of the budget and never below
//! [`MIN_LINE`]); each gap says how many lines it stands for, and a closing
//! marker says which kinds of line the budget cut, so a reader knows
//! whether anything they need went.

use super::keep::{self, Keep};
use super::{Entry, char_len, clamp_chars, is_code, join};

/// No line is cut shorter than this, whatever the budget.
const MIN_LINE: usize = 160;

/// A line's rank when the budget binds: lower stays first.
fn ranks(entries: &[Entry]) -> Vec<u8> {
    // A location ranks with the line it is the location of: the last
    // line before it that is not one.
    let mut owner = 5;
    let mut seen = std::collections::HashSet::new();
    // The last line a tool printed, not a marker ooda added after it.
    let last = entries.iter().rposition(|e| !e.key.starts_with("<marker>"));
    // A name standing alone over problems or a failure's details, before
    // the next name (a failing test's header over its report), says whose
    // they are: it ranks with the gravest of them, and comes before them.
    // A name over nothing of the kind (a file of a listing) is any line.
    // (Each line read once: a marker's own words count here, not below.)
    let kinds: Vec<Option<Keep>> = entries.iter().map(|e| Keep::of(&e.text)).collect();
    let mut heads: Vec<Option<u8>> = vec![None; entries.len()];
    let mut gravest: Option<u8> = None;
    for (i, e) in entries.iter().enumerate().rev() {
        if keep::is_name(&e.text) {
            heads[i] = gravest.take();
        } else {
            let rank = match kinds[i] {
                Some(Keep::Error) => Some(0),
                Some(Keep::Detail) => Some(1),
                Some(Keep::Warning) => Some(2),
                _ => None,
            };
            gravest = match (gravest, rank) {
                (Some(g), Some(r)) => Some(g.min(r)),
                (g, r) => g.or(r),
            };
        }
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let kind = if e.key.starts_with("<marker>") {
                None
            } else {
                kinds[i]
            };
            let rank = match kind {
                // Code (a snippet's line, a suggested fix) is code, whatever
                // names it holds (`except ImportError:`).
                _ if is_code(&e.text) => 5,
                // The last line is most often the verdict (`Found 3
                // errors.`, `test result: FAILED`): it stays first.
                _ if Some(i) == last => 0,
                _ if heads[i].is_some() => heads[i].unwrap_or(5),
                Some(Keep::Error) => 0,
                // Under an error, a detail or a warning; under anything
                // else (a linter's `E501 Line too long`), as a warning's.
                Some(Keep::Location) => return owner.min(2),
                Some(Keep::Detail) => 1,
                Some(Keep::Warning) => 2,
                Some(Keep::Summary | Keep::Id) => 3,
                None if i == 0 => 3,
                None if e.important => 4,
                None => 5,
            };
            // A location belongs to the nearest problem above it.
            if rank <= 2 {
                owner = rank;
            }
            // A problem said again word for word (a linter's same message at
            // another place) tells nothing new; its location ranks with
            // warnings': where else the same problem is comes after every
            // problem's first place.
            if rank <= 2 && !seen.insert(e.text.as_str()) {
                owner = 2;
                return 4;
            }
            rank
        })
        .collect()
}

/// What a cut line was, for the closing marker.
fn kind_name(e: &Entry) -> &'static str {
    match Keep::of(&e.text) {
        None if keep::is_name(&e.text) => "names",
        Some(Keep::Error) => "errors",
        Some(Keep::Location) => "locations",
        Some(Keep::Detail) => "details",
        Some(Keep::Warning) => "warnings",
        Some(Keep::Summary) => "summaries",
        Some(Keep::Id) => "names",
        None => "other",
    }
}

fn gap(lines: usize) -> String {
    if lines == 1 {
        "[… 1 line]".to_string()
    } else {
        format!("[… {lines} lines]")
    }
}

/// `entries` within `budget` characters (newlines included).
pub(super) fn fit(mut entries: Vec<Entry>, budget: usize) -> String {
    let rendered = |es: &[Entry]| -> usize {
        es.iter()
            .map(|e| char_len(&e.text) + 1)
            .sum::<usize>()
            .saturating_sub(1)
    };
    if rendered(&entries) <= budget {
        return join(&entries);
    }
    // Ranked and named as printed: a problem word past a cut still ranks
    // the line and names what a cut took.
    let ranks = ranks(&entries);
    let kinds: Vec<&str> = entries.iter().map(kind_name).collect();
    // One long line (minified JSON, a base64 blob) must not crowd out
    // everything else.
    let line_cap = (budget / 8).max(MIN_LINE);
    for e in &mut entries {
        let len = char_len(&e.text);
        if len > line_cap {
            let suffix = format!("… [+{} chars]", len - line_cap);
            let keep = line_cap.saturating_sub(char_len(&suffix));
            e.text = e.text.chars().take(keep).collect::<String>() + &suffix;
        }
    }
    if rendered(&entries) <= budget {
        return join(&entries);
    }
    let n = entries.len();
    let total_lines: usize = entries.iter().map(|e| e.lines).sum();
    let gap_cost = char_len(&gap(total_lines)) + 1;
    // The closing marker's room: up to seven kinds with their counts
    // (`[cut to fit: 20 errors, 8 locations, 23 details, 5 warnings, 1
    // summaries, 3 names, 33 other]`), so that the bound does not cut it
    // short (at budgets under 400 a quarter is all it gets).
    let closing_cost = 100.min(budget / 4);
    // One gap's marker to begin with: everything is one gap.
    let available = budget.saturating_sub(closing_cost + gap_cost);
    let mut order: Vec<usize> = (0..n).collect();
    // A closing count (`Found 3 errors.`, `2 failed`) goes first of its
    // rank: one line, and it says how much a cut hid.
    let summary: Vec<bool> = entries.iter().map(|e| Keep::is_summary(&e.text)).collect();
    order.sort_by_key(|&i| {
        let place = if ranks[i] == 5 { i.min(n - 1 - i) } else { i };
        (ranks[i], !summary[i], place)
    });
    let mut keep = vec![false; n];
    let mut used = 0usize;
    for i in order {
        // Keeping a line splits the gap it is in: a marker before it if a
        // line before it stays omitted, one after it likewise, where there
        // was one marker.
        let before = i > 0 && !keep[i - 1];
        let after = i + 1 < n && !keep[i + 1];
        let markers = usize::from(before) + usize::from(after);
        let cost = char_len(&entries[i].text) + 1 + markers * gap_cost;
        let freed = gap_cost;
        if used + cost <= available + freed {
            keep[i] = true;
            used = (used + cost).saturating_sub(freed);
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut omitted = 0;
    let mut cut: std::collections::BTreeMap<&str, usize> = Default::default();
    for ((e, kept), kind) in entries.iter().zip(&keep).zip(&kinds) {
        if *kept {
            if omitted > 0 {
                out.push(gap(omitted));
                omitted = 0;
            }
            out.push(e.text.clone());
        } else {
            omitted += e.lines;
            if !e.key.starts_with("<marker>") {
                *cut.entry(kind).or_default() += e.lines;
            }
        }
    }
    if omitted > 0 {
        out.push(gap(omitted));
    }
    // Which kinds went: "other" alone needs no saying beyond the gaps.
    if cut.keys().any(|k| *k != "other") {
        let kinds: Vec<String> = [
            "errors",
            "locations",
            "details",
            "warnings",
            "summaries",
            "names",
            "other",
        ]
        .iter()
        .filter_map(|k| cut.get(k).map(|n| format!("{n} {k}")))
        .collect();
        out.push(format!("[cut to fit: {}]", kinds.join(", ")));
    }
    clamp_chars(out.join("\n"), budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<Entry> {
        text.lines().map(|l| Entry::of(l, 1, false)).collect()
    }

    #[test]
    fn a_failing_tests_name_ranks_with_its_error_and_a_listed_name_does_not() {
        // Found by a new user: under a budget the E lines of seventeen
        // failures stayed and the names heading them went, so no kept
        // error said whose it was.
        let report = entries(
            "test_case_1\ntests/t.py:10: in test_case_1\n    check(1)\nE   ValueError: 1 is not 2\ntest_case_2\n    check(2)\nE   assert 2 == 3\nnext line\n",
        );
        let r = ranks(&report);
        assert_eq!((r[0], r[4]), (0, 0), "{r:?}");
        // A file of a listing heads no problem: any line. A file over a
        // warning ranks with warnings, after every error.
        let listing = entries("src/a.rs\nsrc/b.rs\nsrc/c.rs\ndone\n");
        assert_eq!(ranks(&listing)[1], 5);
        let lint = entries(
            "src/w.js\n  1:5  warning  'x' is assigned a value but never used  no-unused-vars\nsrc/e.js\n  3:5  error  'config' is not defined  no-undef\nend\n",
        );
        let r = ranks(&lint);
        assert_eq!((r[0], r[2]), (2, 0), "{r:?}");
        assert_eq!(gap(1), "[… 1 line]");
        assert_eq!(gap(2), "[… 2 lines]");
    }

    #[test]
    fn the_closing_marker_is_never_cut_short() {
        // Seven kinds with their counts, at a small budget.
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!(
                "error: e{i}\n  --> a.rs:{i}:1\nleft: {i}\nwarning: w{i}\ntest result: ok. {i} passed\nsrc/f{i}.rs\nplain {i}\n"
            ));
        }
        for budget in (400..3000).step_by(13) {
            let out = fit(entries(&text), budget);
            let last = out.lines().last().unwrap();
            assert!(
                last.starts_with("[cut to fit: ") && last.ends_with(']'),
                "at {budget}: {last}"
            );
            assert!(out.chars().count() <= budget);
        }
    }
}
