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

/// Similarity a line needs with a template to join it: the share of token
/// positions that agree (Drain's usual threshold).
const SIMILARITY: f64 = 0.5;

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
        let tokens: Vec<String> = line.split_whitespace().map(mask).collect();
        if tokens.is_empty() {
            continue;
        }
        let candidates = groups.entry((tokens.len(), tokens[0].clone())).or_default();
        let found = candidates.iter_mut().find(|(_, t)| {
            if tokens.len() == 1 {
                return t.iter().zip(&tokens).all(|(a, b)| a.as_deref() == Some(b));
            }
            let same = t
                .iter()
                .zip(&tokens)
                .filter(|(a, b)| a.as_deref() == Some(b.as_str()))
                .count();
            same as f64 / tokens.len() as f64 >= SIMILARITY
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

/// A token as a template compares it: one holding a digit is a value.
fn mask(token: &str) -> String {
    if token.bytes().any(|b| b.is_ascii_digit()) {
        "<*>".to_string()
    } else {
        token.to_string()
    }
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
