//! Reading the metric from a measurement command's stdout (`metric.parse`).
//!
//! Design choices:
//! - `METRIC` lines are unambiguous: the same name printed twice with different values
//!   is an error, not "the last one wins". Last-wins let a candidate's code append a line
//!   after the benchmark's own (a wrapper, an `atexit` hook) and be measured by it; a
//!   benchmark that prints a warm-up or running value names it differently. Repeating
//!   the same value is fine. In the regex and JSON modes the last match or line still
//!   wins, because there the pattern or pointer is the user's own choice of what to read.
//! - If the occurrence read is malformed it is an error, not a silent fall-back to an
//!   earlier value: a stale number would be measured as if it were fresh.
//! - Numbers are strict (`1.5`, `-3`, `2e-3`; no units glued on, no `inf`/`NaN`), because
//!   a half-parsed `1.2ms` → 1.2 or `0x10` → 0 would pass as a measurement. A unit after
//!   whitespace is fine (`METRIC t=1.2 ms`).
//! - Every error says what was expected and shows at most 200 characters of what was
//!   found (the end of stdout, where benchmarks print results), so that an iteration's
//!   `crash` verdict explains itself without opening the artifacts.

use std::sync::LazyLock;

use regex::Regex;
use thiserror::Error;

/// How to find the metric in stdout (from the Brief's `metric.parse`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum MetricParse<'a> {
    /// Lines `METRIC <name>=<number>`: one value for this name (it may be repeated).
    MetricLine { name: &'a str },
    /// The first capture group (or the whole match, for a regex without groups) of the
    /// last match in stdout.
    Regex(&'a Regex),
    /// A JSON pointer (RFC 6901, e.g. `/results/p95`; a missing leading `/` is added) into
    /// stdout parsed as JSON, or else into its last line that parses as a JSON object or
    /// array.
    Json(&'a str),
}

/// Why no metric could be read. Messages are shown to users and agents as they are.
#[derive(Debug, Clone, PartialEq, Error)]
pub(crate) enum MetricError {
    #[error(
        "expected a line `METRIC {name}=<number>` in stdout, found {}; end of stdout: {snippet}",
        seen_list(seen)
    )]
    MetricLineMissing {
        name: String,
        seen: Vec<String>,
        snippet: String,
    },
    #[error(
        "`METRIC {name}` is printed {lines} times with {} different values ({}): print the metric once per run, and name a warm-up or running value differently (`METRIC {name}_warmup=…`); ooda does not guess which one is meant",
        values.len(),
        values.join(", ")
    )]
    MetricLineRepeated {
        name: String,
        lines: usize,
        values: Vec<String>,
    },
    #[error("expected a number for {what}, found {found}")]
    NotANumber { what: String, found: String },
    #[error(
        "expected a match of regex `{pattern}` in stdout, found none; end of stdout: {snippet}"
    )]
    RegexNoMatch { pattern: String, snippet: String },
    #[error(
        "regex `{pattern}` matched {matched} but its first group did not take part in the match"
    )]
    RegexGroupUnmatched { pattern: String, matched: String },
    #[error(
        "expected JSON in stdout (the whole of it, or a line holding an object or array), found none; end of stdout: {snippet}"
    )]
    JsonMissing { snippet: String },
    #[error("expected a value at JSON pointer `{pointer}`, found nothing there in {snippet}")]
    JsonPointerMissing { pointer: String, snippet: String },
    #[error("expected a finite metric for {what}, found {value}")]
    NotFinite { what: String, value: f64 },
}

fn seen_list(seen: &[String]) -> String {
    if seen.is_empty() {
        "no METRIC lines at all".to_string()
    } else {
        format!("METRIC names {}", seen.join(", "))
    }
}

const SNIPPET_CHARS: usize = 200;

static METRIC_LINE: LazyLock<Regex> = LazyLock::new(|| {
    // `METRIC` as a word (start of line or after whitespace), a name without spaces or
    // `=`, then the value token up to the next whitespace.
    Regex::new(r"(?:^|\s)METRIC\s+([^\s=]+)\s*=\s*(\S*)").expect("static regex is valid")
});

static STRICT_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$").expect("static regex is valid")
});

/// Reads the metric from `stdout` as `how` says.
pub(crate) fn parse_metric(stdout: &str, how: &MetricParse) -> Result<f64, MetricError> {
    match how {
        MetricParse::MetricLine { name } => parse_metric_line(stdout, name),
        MetricParse::Regex(re) => parse_regex(stdout, re),
        MetricParse::Json(pointer) => parse_json(stdout, pointer),
    }
}

fn parse_metric_line(stdout: &str, name: &str) -> Result<f64, MetricError> {
    let mut seen: Vec<String> = Vec::new();
    let mut values: Vec<&str> = Vec::new();
    for line in stdout.lines() {
        for caps in METRIC_LINE.captures_iter(line) {
            let (Some(n), Some(v)) = (caps.get(1), caps.get(2)) else {
                continue;
            };
            if n.as_str() == name {
                values.push(v.as_str());
            }
            if !seen.iter().any(|s| s == n.as_str()) {
                seen.push(n.as_str().to_string());
            }
        }
    }
    let what = format!("METRIC {name}");
    let Some(first) = values.first() else {
        return Err(MetricError::MetricLineMissing {
            name: name.to_string(),
            seen,
            snippet: tail_snippet(stdout),
        });
    };
    let value = to_number(first, &what)?;
    let mut distinct: Vec<(f64, String)> = vec![(value, first.to_string())];
    for v in &values[1..] {
        // `2` and `2.0` are the same value; a malformed repeat is an error.
        let x = to_number(v, &what)?;
        if !distinct.iter().any(|(d, _)| *d == x) {
            distinct.push((x, v.to_string()));
        }
    }
    if distinct.len() > 1 {
        return Err(MetricError::MetricLineRepeated {
            name: name.to_string(),
            lines: values.len(),
            values: distinct.into_iter().map(|(_, v)| v).collect(),
        });
    }
    Ok(value)
}

fn parse_regex(stdout: &str, re: &Regex) -> Result<f64, MetricError> {
    let Some(caps) = re.captures_iter(stdout).last() else {
        return Err(MetricError::RegexNoMatch {
            pattern: re.as_str().to_string(),
            snippet: tail_snippet(stdout),
        });
    };
    let group = if re.captures_len() > 1 {
        caps.get(1)
    } else {
        caps.get(0)
    };
    match group {
        Some(m) => to_number(m.as_str(), &format!("regex `{}`", re.as_str())),
        None => Err(MetricError::RegexGroupUnmatched {
            pattern: re.as_str().to_string(),
            matched: quote(caps.get(0).map_or("", |m| m.as_str())),
        }),
    }
}

fn parse_json(stdout: &str, pointer: &str) -> Result<f64, MetricError> {
    let pointer = if pointer.is_empty() || pointer.starts_with('/') {
        pointer.to_string()
    } else {
        format!("/{pointer}")
    };
    let (doc, source) = find_json(stdout).ok_or_else(|| MetricError::JsonMissing {
        snippet: tail_snippet(stdout),
    })?;
    let what = format!("JSON pointer `{pointer}`");
    match doc.pointer(&pointer) {
        None => Err(MetricError::JsonPointerMissing {
            pointer,
            snippet: quote(source),
        }),
        Some(serde_json::Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            Some(x) => Err(MetricError::NotFinite { what, value: x }),
            None => Err(MetricError::NotANumber {
                what,
                found: quote(&n.to_string()),
            }),
        },
        Some(serde_json::Value::String(s)) => to_number(s.trim(), &what),
        Some(other) => Err(MetricError::NotANumber {
            what,
            found: quote(&other.to_string()),
        }),
    }
}

/// The whole stdout as JSON, else its last line holding a JSON object or array (a bare
/// `3` or `true` line is too likely to be something else to count). Also returns the
/// text it was parsed from, for error messages.
fn find_json(stdout: &str) -> Option<(serde_json::Value, &str)> {
    let whole = stdout.trim();
    if !whole.is_empty()
        && let Ok(v) = serde_json::from_str(whole)
    {
        return Some((v, whole));
    }
    stdout.lines().rev().find_map(|line| {
        let line = line.trim();
        if !(line.starts_with('{') || line.starts_with('[')) {
            return None;
        }
        serde_json::from_str(line).ok().map(|v| (v, line))
    })
}

fn to_number(text: &str, what: &str) -> Result<f64, MetricError> {
    let not_a_number = || MetricError::NotANumber {
        what: what.to_string(),
        found: quote(text),
    };
    if !STRICT_NUMBER.is_match(text) {
        return Err(not_a_number());
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        // `1e999` passes the syntax check and overflows to infinity.
        Ok(x) => Err(MetricError::NotFinite {
            what: what.to_string(),
            value: x,
        }),
        Err(_) => Err(not_a_number()),
    }
}

/// The last ≤ 200 characters of stdout, quoted with escapes so that newlines and control
/// characters stay visible in a one-line message.
fn tail_snippet(stdout: &str) -> String {
    let trimmed = stdout.trim_end();
    if trimmed.is_empty() {
        return "(empty)".to_string();
    }
    let count = trimmed.chars().count();
    if count <= SNIPPET_CHARS {
        return format!("{trimmed:?}");
    }
    let tail: String = trimmed.chars().skip(count - SNIPPET_CHARS).collect();
    format!("…{tail:?}")
}

/// `text` quoted, cut to its first ≤ 200 characters.
fn quote(text: &str) -> String {
    if text.is_empty() {
        return "nothing (empty)".to_string();
    }
    if text.chars().count() <= SNIPPET_CHARS {
        return format!("{text:?}");
    }
    let head: String = text.chars().take(SNIPPET_CHARS).collect();
    format!("{head:?}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stdout: &str, name: &str) -> Result<f64, MetricError> {
        parse_metric(stdout, &MetricParse::MetricLine { name })
    }

    fn json(stdout: &str, pointer: &str) -> Result<f64, MetricError> {
        parse_metric(stdout, &MetricParse::Json(pointer))
    }

    fn regex(stdout: &str, re: &str) -> Result<f64, MetricError> {
        let re = Regex::new(re).unwrap();
        parse_metric(stdout, &MetricParse::Regex(&re))
    }

    #[test]
    fn a_metric_line_printed_twice_with_different_values_is_an_error() {
        let out = "warming up\nMETRIC p95_ms=3.5\nMETRIC rss=100\nnoise\nMETRIC p95_ms=2.25\nbye\n";
        let err = line(out, "p95_ms").unwrap_err();
        assert_eq!(
            err,
            MetricError::MetricLineRepeated {
                name: "p95_ms".into(),
                lines: 2,
                values: vec!["3.5".into(), "2.25".into()],
            }
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("`METRIC p95_ms` is printed 2 times with 2 different values (3.5, 2.25): print the metric once per run"),
            "{msg}"
        );
        // Other names are not affected, and repeating one value is fine.
        assert_eq!(line(out, "rss"), Ok(100.0));
        assert_eq!(line("METRIC x=2\nMETRIC x=2.0\nMETRIC x=2\n", "x"), Ok(2.0));
        let three = line("METRIC x=2\nMETRIC x=3\nMETRIC x=3.0\n", "x").unwrap_err();
        assert!(
            three
                .to_string()
                .contains("printed 3 times with 2 different values (2, 3)"),
            "{three}"
        );
    }

    #[test]
    fn metric_line_number_forms() {
        assert_eq!(line("METRIC x=42", "x"), Ok(42.0));
        assert_eq!(line("METRIC x=-1.5e-3", "x"), Ok(-1.5e-3));
        assert_eq!(line("METRIC x=2E6", "x"), Ok(2e6));
        assert_eq!(line("METRIC x=+.5", "x"), Ok(0.5));
        assert_eq!(line("  METRIC x = 7 ms  ", "x"), Ok(7.0));
        assert_eq!(line("[bench] METRIC x=8\r", "x"), Ok(8.0));
        assert_eq!(line("METRIC a=1 METRIC x=9", "x"), Ok(9.0));
    }

    #[test]
    fn metric_line_rejects_bad_numbers() {
        for bad in [
            "METRIC x=1.2ms",
            "METRIC x=0x10",
            "METRIC x=",
            "METRIC x=abc",
        ] {
            let err = line(bad, "x").unwrap_err();
            assert!(
                matches!(err, MetricError::NotANumber { .. }),
                "{bad}: {err:?}"
            );
        }
        for bad in ["METRIC x=inf", "METRIC x=NaN"] {
            assert!(line(bad, "x").is_err(), "{bad}");
        }
        assert!(matches!(
            line("METRIC x=1e999", "x"),
            Err(MetricError::NotFinite { .. })
        ));
        // A malformed last line is an error even when an earlier one was fine.
        assert!(line("METRIC x=1\nMETRIC x=oops\n", "x").is_err());
        let msg = line("METRIC x=1.2ms", "x").unwrap_err().to_string();
        assert_eq!(msg, "expected a number for METRIC x, found \"1.2ms\"");
    }

    #[test]
    fn metric_line_missing_lists_seen_names() {
        let err = line("METRIC a=1\nMETRIC b=2\nMETRIC a=3\n", "p95").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "expected a line `METRIC p95=<number>` in stdout, found METRIC names a, b;"
            ),
            "{msg}"
        );
        let msg = line("hello\nworld", "p95").unwrap_err().to_string();
        assert!(msg.contains("no METRIC lines at all"), "{msg}");
        assert!(msg.contains(r#""hello\nworld""#), "{msg}");
        // The snippet is bounded whatever the size of stdout.
        let big = "x".repeat(10_000);
        let msg = line(&big, "p95").unwrap_err().to_string();
        assert!(msg.len() < 400, "{}", msg.len());
        assert!(line("", "p95").unwrap_err().to_string().contains("(empty)"));
        // Names are whole words: METRICS or xMETRIC do not count.
        assert!(line("METRICS x=1\nfooMETRIC x=2", "x").is_err());
    }

    #[test]
    fn regex_uses_first_group_of_last_match() {
        let out = "time: 1.5 s\ntime: 1.25 s\nother: 9\n";
        assert_eq!(regex(out, r"time: (\S+) s"), Ok(1.25));
        // Without a group the whole match is the number.
        assert_eq!(regex("value 12 and 13", r"\d+"), Ok(13.0));
        // A unit glued to the captured number is rejected, as in metric lines.
        assert!(regex("t=1.2ms", r"t=(\S+)").is_err());
    }

    #[test]
    fn regex_errors() {
        let msg = regex("nothing here", r"time: (\d+)")
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("expected a match of regex `time: (\\d+)` in stdout, found none;"),
            "{msg}"
        );
        assert!(msg.contains("nothing here"));
        assert!(matches!(
            regex("a=", r"a=(\d+)?"),
            Err(MetricError::RegexGroupUnmatched { .. })
        ));
        assert!(matches!(
            regex("v=NaN", r"v=(\w+)"),
            Err(MetricError::NotANumber { .. })
        ));
    }

    #[test]
    fn json_whole_stdout_or_last_json_line() {
        let whole = "{\n  \"results\": {\"p95\": 3.5, \"n\": [1, 2]}\n}\n";
        assert_eq!(json(whole, "/results/p95"), Ok(3.5));
        assert_eq!(json(whole, "results/n/1"), Ok(2.0));
        let mixed = "building...\n{\"p95\": 1}\nlog line\n{\"p95\": 2, \"s\": \"4.5\"}\ndone\n";
        assert_eq!(json(mixed, "/p95"), Ok(2.0));
        assert_eq!(json(mixed, "/s"), Ok(4.5));
        assert_eq!(json("17\n", ""), Ok(17.0));
        assert_eq!(json("[3, 4]", "/0"), Ok(3.0));
    }

    #[test]
    fn json_errors() {
        let msg = json("no json here", "/p95").unwrap_err().to_string();
        assert!(msg.starts_with("expected JSON in stdout"), "{msg}");
        let msg = json("{\"p50\": 1}", "/p95").unwrap_err().to_string();
        assert_eq!(
            msg,
            r#"expected a value at JSON pointer `/p95`, found nothing there in "{\"p50\": 1}""#
        );
        let msg = json("{\"p95\": [1]}", "/p95").unwrap_err().to_string();
        assert_eq!(
            msg,
            "expected a number for JSON pointer `/p95`, found \"[1]\""
        );
        assert!(json("{\"p95\": null}", "/p95").is_err());
        assert!(json("{\"p95\": \"fast\"}", "/p95").is_err());
        assert!(json("{\"p95\": \"inf\"}", "/p95").is_err());
        // A long document is cut in the message.
        let long = format!("{{\"pad\": \"{}\"}}", "y".repeat(5000));
        assert!(json(&long, "/p95").unwrap_err().to_string().len() < 400);
    }

    #[test]
    fn unicode_snippets_do_not_split_chars() {
        let out = "é".repeat(1000);
        let msg = line(&out, "x").unwrap_err().to_string();
        assert!(msg.contains('…'));
    }
}
