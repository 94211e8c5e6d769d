//! Routine lines grouped by template, wherever they are.
//!
//! A log's routine lines are few templates filled with different values:
//! `Get:12 http://… amd64 libfoo 1.2 [98 kB]`, `=== RUN TestFoo`,
//! `Collecting flask==3.0.3`, `127.0.0.1:56740 - "GET / HTTP/1.1" 200`.
//! Rules per tool would know a few of them; the Drain family of
//! log-template miners finds them in any log: lines of the same length (in
//! tokens) that start alike and agree on most positions are one template.
//! This is a one-pass, fixed-depth version of it: tokens holding a digit are
//! masked first (counters, sizes, ports, times), then a line joins the first
//! template of its length and first token with which it shares at least
//! half its tokens.
//!
//! Only lines that are nothing a reader needs go into a template (no
//! problem, location, detail, summary or identifier: see [`super::keep`]),
//! and no line of a diff or of code: those are read one by one.

use std::collections::HashMap;

/// Similarity a line needs with a template to join it: more than this share
/// of token positions agree (Drain's usual threshold).
const SIMILARITY: f64 = 0.5;

/// The most templates kept for one length and first word.
const MAX_TEMPLATES: usize = 64;

/// How many lines a template needs before it is folded: two alike lines
/// are not yet a pattern.
const MIN_LINES: usize = 3;

/// A template's number and its tokens, `None` where its lines differ.
type Template = (usize, Vec<Option<String>>);

/// The template each line belongs to (`None` for a line that stays on its
/// own), numbered in first-seen order; a template with fewer than
/// [`MIN_LINES`] lines counts as none.
///
/// A line that starts a record of its own (`barrier`: a commit's header)
/// ends every template before it: lines of two records that only look
/// alike (two commits' subjects, `Release 1.0.3` and `Release 1.0.4`) are
/// each their record's, not one template's.
pub(crate) fn templates(lines: &[&str], eligible: &[bool], barrier: &[bool]) -> Vec<Option<usize>> {
    // By (token count, first token): the templates' tokens, `None` where
    // lines differ.
    let mut groups: HashMap<(usize, String), Vec<Template>> = HashMap::new();
    let mut of = vec![None; lines.len()];
    let mut next = 0;
    for (i, line) in lines.iter().enumerate() {
        if barrier[i] {
            groups.clear();
        }
        if !eligible[i] {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let tokens: Vec<String> = words.iter().map(|w| mask(w)).collect();
        if tokens.is_empty() {
            continue;
        }
        let candidates = groups.entry((tokens.len(), tokens[0].clone())).or_default();
        // Lines that share nothing but a length and a first word would
        // each start a template and each later line scan them all: past
        // [`MAX_TEMPLATES`] of them, such a line stays on its own.
        let full = candidates.len() >= MAX_TEMPLATES;
        let found = candidates.iter_mut().find(|(_, t)| {
            let mut same = 0;
            for ((slot, token), word) in t.iter().zip(&tokens).zip(&words) {
                if slot.as_deref() == Some(token.as_str()) {
                    same += 1;
                } else if identifier(word) {
                    // What names a thing is no value: two lines naming
                    // two files or two commits are two lines.
                    return false;
                }
            }
            // More than half: two words of which one differs are not a
            // template (`0: main`, `1: run`).
            same as f64 > tokens.len() as f64 * SIMILARITY
        });
        match found {
            Some((id, template)) => {
                for (slot, token) in template.iter_mut().zip(&tokens) {
                    if slot.as_deref() != Some(token.as_str()) {
                        *slot = None;
                    }
                }
                of[i] = Some(*id);
            }
            None if full => {}
            None => {
                candidates.push((next, tokens.into_iter().map(Some).collect()));
                of[i] = Some(next);
                next += 1;
            }
        }
    }
    let mut sizes = vec![0usize; next];
    for id in of.iter().flatten() {
        sizes[*id] += 1;
    }
    of.iter()
        .map(|id| id.filter(|&id| sizes[id] >= MIN_LINES))
        .collect()
}

/// A token as a template compares it: one of digits and punctuation (a
/// count, a size, a version) is a value; one with words keeps them, its
/// digits masked (`depth=300` and `depth=12` are alike, `job-7` is not).
fn mask(token: &str) -> String {
    if !token.bytes().any(|b| b.is_ascii_digit()) {
        return token.to_string();
    }
    if !token.chars().any(char::is_alphabetic) {
        return "<*>".to_string();
    }
    let mut out = String::with_capacity(token.len());
    for c in token.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a token names a thing that a count must not hide: a file (a path
/// or a name with an extension, not a URL), a commit (seven to forty hex
/// digits, letters and digits both), a quoted name (`'luaC_newobj'`).
pub(crate) fn identifier(token: &str) -> bool {
    let t = token.trim_matches(|c: char| matches!(c, ',' | ';' | ')' | '(' | '*' | '[' | ']'));
    if t.is_empty() {
        return false;
    }
    let hex = t.len() >= 7
        && t.len() <= 40
        && t.bytes().all(|b| b.is_ascii_hexdigit())
        && t.bytes().any(|b| b.is_ascii_digit())
        && t.bytes().any(|b| b.is_ascii_alphabetic());
    let quoted = t.len() > 2 && (t.starts_with(['\'', '`', '‘']) || t.ends_with(['\'', '`', '’']));
    let url = t.contains("://") || t.contains('?');
    let file = !url && {
        // `dir/a.c:12:5:` names `a.c`.
        let path = t.split(':').next().unwrap_or(t);
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        match name.rsplit_once('.') {
            Some((stem, ext)) => {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && ext.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            }
            None => false,
        }
    };
    hex || quoted || file
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_one_template_are_found_wherever_they_are() {
        let lines = [
            "Get:1 http://deb.debian.org/debian bookworm/main amd64 tree amd64 2.1.0-1 [54.1 kB]",
            "Unpacking tree (2.1.0-1) ...",
            "Get:2 http://deb.debian.org/debian bookworm/main amd64 jq amd64 1.6-2.1 [135 kB]",
            "Unpacking jq (1.6-2.1) ...",
            "Get:3 http://deb.debian.org/debian bookworm/main amd64 libonig5 amd64 6.9.8-1 [188 kB]",
            "Unpacking libonig5 (6.9.8-1) ...",
            "Setting up jq (1.6-2.1) ...",
        ];
        let got = templates(&lines, &[true; 7], &[false; 7]);
        assert_eq!(got[0], got[2]);
        assert_eq!(got[0], got[4]);
        assert_eq!(got[1], got[3]);
        assert_eq!(got[1], got[5]);
        assert_ne!(got[0], got[1]);
        // Alone, it is no template.
        assert_eq!(got[6], None);
        // A line that is not eligible joins none.
        let got = templates(
            &lines,
            &[true, true, false, true, true, true, true],
            &[false; 7],
        );
        assert_eq!(got[2], None);
        // Nor across the start of a record.
        let got = templates(
            &lines,
            &[true; 7],
            &[false, false, false, false, true, false, false],
        );
        assert_eq!(got[0], None);
        assert_eq!(got[4], None);
    }

    #[test]
    fn what_names_a_thing_keeps_lines_apart() {
        let lines = [
            "would reformat /src/toolz/__init__.py",
            "would reformat /src/toolz/dicttoolz.py",
            "would reformat /src/toolz/itertoolz.py",
            "* af77385 Release 1.0.18",
            "* ccd581e Release 1.0.3",
            "* 0a1b2c3 Release 1.0.2",
            "lgc.c: In function 'luaC_newobj':",
            "lgc.c: In function 'luaC_fullgc':",
            "lgc.c: In function 'sweeplist':",
            "INFO [ingest.heartbeat] heartbeat: queue depth=300 workers=4",
            "INFO [ingest.worker] processed job-01133 ts=1 rows=7",
            "INFO [ingest.worker] processed job-01134 ts=2 rows=9",
            "0: __rustc::rust_begin_unwind",
            "1: core::panicking::panic_fmt",
            "2: core::option::expect_failed",
        ];
        let got = templates(&lines, &[true; 15], &[false; 15]);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, None, "{}", lines[i]);
        }
        // Values still are values: a request's path, a count, a version.
        let lines = [
            "127.0.0.1:51234 - \"GET /missing/36 HTTP/1.1\" 404",
            "127.0.0.1:51236 - \"GET /missing/52 HTTP/1.1\" 404",
            "127.0.0.1:51240 - \"GET /static/app.js?v=3 HTTP/1.1\" 404",
        ];
        let got = templates(&lines, &[true; 3], &[false; 3]);
        assert!(
            got[0].is_some() && got[0] == got[1] && got[1] == got[2],
            "{got:?}"
        );
    }

    #[test]
    fn different_lines_of_one_length_stay_apart() {
        let lines = [
            "alpha beta gamma delta",
            "one two three four",
            "red green blue white",
        ];
        assert_eq!(
            templates(&lines, &[true; 3], &[false; 3]),
            [None, None, None]
        );
    }
}
