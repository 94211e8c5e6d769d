//! YAML with line numbers, and the checker that turns a YAML tree into problems.
//!
//! Briefs and `ooda.yaml` are validated by walking a small tree ([`Node`]) in which every
//! node and every mapping key remembers the line of the file it came from. We do not
//! deserialize straight into serde structs because serde stops at the first error and
//! reports positions of the YAML snippet, while `ooda check` must report *every* problem
//! at once, each with the file line (a Brief's front matter starts on line 2), the dotted
//! key, what was expected and an example. The tree is built from the event stream of
//! `granit-parser`, the parser serde-saphyr itself uses (re-exported by serde-saphyr, so no
//! extra dependency).
//!
//! Scalars are kept as text: the validators decide what a scalar means for their key
//! (`timeout: 300` and `timeout: 5m` are both durations), which also keeps YAML 1.1
//! surprises such as `no` → false out of the picture. Only null-ness depends on style: an
//! unquoted `~`, `null` or nothing is null, a quoted `"null"` is the string.
//!
//! [`Checker`] collects [`Problem`]s; its typed accessors report a wrong type and return
//! `None`, so a validator keeps going after an error and the caller only decides at the
//! end whether anything was reported.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

use crate::validate::problem::Problem;

/// Alias expansion can grow a small document exponentially ("billion laughs"); no real
/// Brief or config comes anywhere near this many nodes.
const MAX_NODES: usize = 100_000;

/// A YAML node and the file line it starts on (1-based).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub line: usize,
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// `plain` is true for unquoted, untagged scalars: only those can be null.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    /// Entries in file order, duplicates included (the checker reports them).
    Map(Vec<Entry>),
}

/// One `key: value` pair; `line` is the line of the key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    pub line: usize,
    pub value: Node,
}

/// A document that is not YAML at all; `line` is a file line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SyntaxError {
    pub line: usize,
    pub message: String,
}

impl Node {
    pub(crate) fn is_null(&self) -> bool {
        matches!(&self.value, Value::Scalar { text, plain: true }
            if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// The text of a non-null scalar.
    pub(crate) fn scalar(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } if !self.is_null() => Some(text),
            _ => None,
        }
    }

    pub(crate) fn seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn entries(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// How the node looks, for "found ..." in messages.
    pub(crate) fn describe(&self) -> String {
        if self.is_null() {
            return "nothing".into();
        }
        match &self.value {
            Value::Scalar { text, .. } => format!("`{}`", shorten(text)),
            Value::Seq(_) => "a list".into(),
            Value::Map(_) => "a mapping".into(),
        }
    }

    fn count(&self) -> usize {
        1 + match &self.value {
            Value::Scalar { .. } => 0,
            Value::Seq(items) => items.iter().map(Node::count).sum(),
            Value::Map(entries) => entries.iter().map(|e| 1 + e.value.count()).sum(),
        }
    }
}

/// Long or multi-line values would swamp a one-line problem report.
fn shorten(text: &str) -> String {
    let one_line = text.trim().replace('\n', "⏎");
    if one_line.chars().count() > 60 {
        let cut: String = one_line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

enum Frame {
    Seq {
        line: usize,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        line: usize,
        anchor: usize,
        entries: Vec<Entry>,
        key: Option<(String, usize)>,
    },
}

/// Parses one YAML document. `first_line` is the file line of the text's first line, so
/// every line in the tree and in the error is a line of the file. An empty document
/// (nothing but comments) is a null node.
pub(crate) fn parse(text: &str, first_line: usize) -> Result<Node, SyntaxError> {
    let shift = first_line.saturating_sub(1);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut root: Option<Node> = None;
    let mut nodes = 0usize;
    let mut documents = 0usize;
    let err = |line: usize, message: String| SyntaxError {
        line: line + shift,
        message,
    };

    for item in Parser::new_from_str(text) {
        let (event, span) = match item {
            Ok(pair) => pair,
            Err(e) => return Err(err(e.marker().line(), e.info())),
        };
        let line = span.start.line();
        let is_alias = matches!(event, Event::Alias(_));
        let (node, anchor) = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(err(
                        line,
                        "a second YAML document starts here; only one is allowed".into(),
                    ));
                }
                continue;
            }
            Event::Scalar(value, style, anchor, tag) => {
                // `!!str 5` is the string "5": a core `str` tag makes the scalar non-plain.
                let tagged_str = tag
                    .as_ref()
                    .is_some_and(|t| t.is_yaml_core_schema_tag("str"));
                let plain = matches!(style, ScalarStyle::Plain) && !tagged_str;
                let node = Node {
                    line: line + shift,
                    value: Value::Scalar {
                        text: value.into_owned(),
                        plain,
                    },
                };
                (node, anchor)
            }
            Event::SequenceStart(_, anchor, _) => {
                stack.push(Frame::Seq {
                    line: line + shift,
                    anchor,
                    items: Vec::new(),
                });
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push(Frame::Map {
                    line: line + shift,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                });
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq {
                    line,
                    anchor,
                    items,
                }) => (
                    Node {
                        line,
                        value: Value::Seq(items),
                    },
                    anchor,
                ),
                _ => return Err(err(line, "unbalanced sequence end".into())),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map {
                    line,
                    anchor,
                    entries,
                    key: None,
                }) => (
                    Node {
                        line,
                        value: Value::Map(entries),
                    },
                    anchor,
                ),
                _ => return Err(err(line, "unbalanced mapping end".into())),
            },
            Event::Alias(id) => match anchors.get(&id) {
                Some(target) => {
                    let mut copy = target.clone();
                    copy.line = line + shift;
                    (copy, 0)
                }
                None => return Err(err(line, "alias to an unknown anchor".into())),
            },
            // Stream/document ends, comments and presentation metadata carry no data.
            _ => continue,
        };

        // Each parsed node counts once; an alias counts everything it copies.
        nodes += if is_alias { node.count() } else { 1 };
        if nodes > MAX_NODES {
            return Err(err(
                line,
                format!("the document expands to more than {MAX_NODES} nodes (aliases?)"),
            ));
        }
        if anchor != 0 {
            anchors.insert(anchor, node.clone());
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some((k, key_line)) => entries.push(Entry {
                    key: k,
                    line: key_line,
                    value: node,
                }),
                None => match node.value {
                    Value::Scalar { text, .. } => *key = Some((text, node.line)),
                    _ => {
                        return Err(SyntaxError {
                            line: node.line,
                            message: "a key must be a plain name, not a list or mapping".into(),
                        });
                    }
                },
            },
        }
    }
    Ok(root.unwrap_or(Node {
        line: first_line,
        value: Value::Scalar {
            text: String::new(),
            plain: true,
        },
    }))
}

/// Reports a syntax error, with the fix for the two mistakes people actually make.
pub(crate) fn report_syntax(ck: &mut Checker, e: &SyntaxError, what: &str) {
    let (hint, example) = if e.message.contains("mapping values are not allowed") {
        (
            "; a value containing `: ` must be quoted",
            Some("parse: 'regex:p95: (\\d+)'"),
        )
    } else if e.message.contains("tab") {
        ("; indent with spaces, not tabs", None)
    } else {
        ("", None)
    };
    let p = ck.report(Some(e.line), None, format!("{what}: {}{hint}", e.message));
    p.expected("YAML `key: value` lines");
    if let Some(example) = example {
        p.example(example);
    }
}

/// The known name closest to `unknown`, if it is close enough to be a plausible typo.
/// Case, `-` versus `_` and spaces are ignored first, since those are the usual slips;
/// the distance counts an adjacent transposition as one edit (`nmae` → `name`).
pub(crate) fn suggest<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    let norm = |s: &str| s.to_lowercase().replace(['-', ' '], "_");
    let u = norm(unknown);
    let allowed = match u.chars().count() {
        0..=2 => 0,
        3..=5 => 1,
        6..=9 => 2,
        _ => 3,
    };
    known
        .iter()
        .map(|k| (strsim::osa_distance(&u, &norm(k)), *k))
        .filter(|(d, k)| {
            let k = norm(k);
            // `knob` → `knobs`, `integer` → `int`: a clipped or extended name.
            let prefix = u.len() >= 3 && k.len() >= 3 && (k.starts_with(&u) || u.starts_with(&k));
            *d <= allowed || prefix
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `a` + `b` → `a.b`; the root path is empty.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The entries of a mapping after unknown and duplicate keys were reported: the first
/// occurrence of each known key.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fields<'n> {
    pub entries: Vec<&'n Entry>,
}

impl<'n> Fields<'n> {
    /// The entry for `key`, null values included (so "found nothing" can be reported).
    pub(crate) fn entry(&self, key: &str) -> Option<&'n Entry> {
        self.entries.iter().copied().find(|e| e.key == key)
    }

    /// The entry for `key` unless it is absent or null: YAML's `key: ~` means "not set".
    pub(crate) fn get(&self, key: &str) -> Option<&'n Entry> {
        self.entry(key).filter(|e| !e.value.is_null())
    }
}

/// Collects problems for one file.
#[derive(Clone, Debug)]
pub(crate) struct Checker {
    pub file: PathBuf,
    pub problems: Vec<Problem>,
}

impl Checker {
    pub(crate) fn new(file: &Path) -> Checker {
        Checker {
            file: file.to_path_buf(),
            problems: Vec::new(),
        }
    }

    /// Records a problem; the returned reference lets the caller add `expected`/`example`.
    pub(crate) fn report(
        &mut self,
        line: Option<usize>,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> &mut Problem {
        self.problems.push(Problem {
            file: self.file.clone(),
            line,
            key: key.map(str::to_string),
            message: message.into(),
            expected: None,
            example: None,
        });
        let last = self.problems.len() - 1;
        &mut self.problems[last]
    }

    /// "expected X, found Y" at `node`, the most common problem.
    pub(crate) fn wrong(&mut self, node: &Node, key: &str, expected: &str, example: &str) {
        self.report(
            Some(node.line),
            Some(key),
            format!("expected {expected}, found {}", node.describe()),
        )
        .expected(expected)
        .example(example);
    }

    /// Checks that `node` is a mapping whose keys are all in `known`; reports unknown
    /// keys (with a suggestion) and duplicates, and returns the rest.
    pub(crate) fn map<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        known: &[&str],
        example: &str,
    ) -> Option<Fields<'n>> {
        let Some(entries) = node.entries() else {
            let what = if path.is_empty() {
                "the settings"
            } else {
                path
            };
            self.report(
                Some(node.line),
                (!path.is_empty()).then_some(path),
                format!("expected a mapping of keys, found {}", node.describe()),
            )
            .expected(format!("a mapping for {what}"))
            .example(example);
            return None;
        };
        let mut fields = Fields::default();
        for entry in entries {
            let key = join(path, &entry.key);
            if let Some(first) = fields.entry(&entry.key) {
                self.report(
                    Some(entry.line),
                    Some(&key),
                    format!(
                        "duplicate key `{}` (first given on line {}); keep one",
                        entry.key, first.line
                    ),
                );
            } else if known.contains(&entry.key.as_str()) {
                fields.entries.push(entry);
            } else {
                self.unknown(entry, &key, known);
            }
        }
        Some(fields)
    }

    /// The entries of a mapping with free-form keys (profile names, env vars), with
    /// duplicates reported.
    pub(crate) fn map_any<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        example: &str,
    ) -> Option<Vec<&'n Entry>> {
        let Some(entries) = node.entries() else {
            self.wrong(node, path, "a mapping", example);
            return None;
        };
        let mut out: Vec<&Entry> = Vec::new();
        for entry in entries {
            if let Some(first) = out.iter().find(|e| e.key == entry.key) {
                self.report(
                    Some(entry.line),
                    Some(&join(path, &entry.key)),
                    format!(
                        "duplicate key `{}` (first given on line {}); keep one",
                        entry.key, first.line
                    ),
                );
            } else {
                out.push(entry);
            }
        }
        Some(out)
    }

    /// An unknown key, with "did you mean" when a known key is close.
    pub(crate) fn unknown(&mut self, entry: &Entry, key: &str, known: &[&str]) {
        let list = known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let message = match suggest(&entry.key, known) {
            Some(s) => format!("unknown key `{}`; did you mean `{s}`?", entry.key),
            None => format!("unknown key `{}`; known keys here: {list}", entry.key),
        };
        self.report(Some(entry.line), Some(key), message)
            .expected(format!("one of {list}"));
    }

    /// Reports a missing required key at the line of its parent (where it should go).
    pub(crate) fn missing(&mut self, line: usize, key: &str, example: &str) {
        let name = key.rsplit('.').next().unwrap_or(key);
        self.report(
            Some(line),
            Some(key),
            format!("missing required key `{name}`"),
        )
        .example(example);
    }

    /// Converts a node with `conv`; on `None` reports "expected ..., found ...".
    pub(crate) fn expect<T>(
        &mut self,
        node: &Node,
        key: &str,
        expected: &str,
        example: &str,
        conv: impl FnOnce(&Node) -> Option<T>,
    ) -> Option<T> {
        let value = conv(node);
        if value.is_none() {
            self.wrong(node, key, expected, example);
        }
        value
    }

    /// A non-empty string. Numbers and booleans are taken as their text (`name: 42`).
    pub(crate) fn string(
        &mut self,
        node: &Node,
        key: &str,
        expected: &str,
        example: &str,
    ) -> Option<String> {
        self.expect(node, key, expected, example, |n| {
            n.scalar()
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
        })
    }

    pub(crate) fn boolean(&mut self, node: &Node, key: &str, example: &str) -> Option<bool> {
        self.expect(node, key, "`true` or `false`", example, |n| {
            match n.scalar()? {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            }
        })
    }

    /// A list of non-empty strings; each bad item is reported as `key[i]`.
    pub(crate) fn strings(
        &mut self,
        node: &Node,
        key: &str,
        expected_list: &str,
        expected_item: &str,
        example: &str,
    ) -> Option<Vec<String>> {
        let Some(items) = node.seq() else {
            self.wrong(node, key, expected_list, example);
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(item, &format!("{key}[{i}]"), expected_item, example) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// A decimal integer as YAML writes it (`40`, `-3`, `+7`).
pub(crate) fn parse_int(text: &str) -> Option<i64> {
    let t = text.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A finite number (`1.5`, `2`, `1e-3`); YAML's `.inf`/`.nan` and Rust's `inf` are refused.
pub(crate) fn parse_float(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty()
        || t.chars()
            .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
    {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_keys(node: &Node) -> Vec<(String, usize)> {
        node.entries()
            .unwrap_or_default()
            .iter()
            .map(|e| (e.key.clone(), e.line))
            .collect()
    }

    #[test]
    fn lines_are_shifted_to_file_lines() {
        let node = parse("a: 1\nb:\n  c: [x, y]\n", 2).expect("valid yaml");
        assert_eq!(map_keys(&node), vec![("a".into(), 2), ("b".into(), 3)]);
        let b = &node.entries().unwrap_or_default()[1].value;
        assert_eq!(b.line, 4);
        let c = &b.entries().unwrap_or_default()[0].value;
        assert_eq!(c.seq().map(<[Node]>::len), Some(2));
    }

    #[test]
    fn syntax_errors_carry_file_lines() {
        let e = parse("a: 1\nb: c: d\n", 2).expect_err("invalid yaml");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("mapping values"), "{}", e.message);
        let e = parse("a:\n\tb: 1\n", 10).expect_err("tab");
        assert_eq!(e.line, 11);
    }

    #[test]
    fn nulls_depend_on_quoting() {
        let node = parse("a:\nb: ~\nc: 'null'\nd: null\n", 1).expect("valid");
        let nulls: Vec<bool> = node
            .entries()
            .unwrap_or_default()
            .iter()
            .map(|e| e.value.is_null())
            .collect();
        assert_eq!(nulls, vec![true, true, false, true]);
    }

    #[test]
    fn aliases_are_expanded_and_bounded() {
        let node = parse("a: &x [1, 2]\nb: *x\n", 1).expect("valid");
        let b = &node.entries().unwrap_or_default()[1].value;
        assert_eq!(b.line, 2);
        assert_eq!(b.seq().map(<[Node]>::len), Some(2));

        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let e = parse(&bomb, 1).expect_err("alias bomb");
        assert!(e.message.contains("more than"), "{}", e.message);
    }

    #[test]
    fn empty_document_is_null_and_second_document_is_refused() {
        assert!(parse("# only a comment\n", 2).expect("valid").is_null());
        let e = parse("a: 1\n---\nb: 2\n", 1).expect_err("two docs");
        assert_eq!(e.line, 2);
    }

    #[test]
    fn str_tag_makes_a_string() {
        let node = parse("a: !!str null\n", 1).expect("valid");
        assert_eq!(
            node.entries().unwrap_or_default()[0].value.scalar(),
            Some("null")
        );
    }

    #[test]
    fn complex_keys_are_refused() {
        let e = parse("? [a, b]\n: 1\n", 1).expect_err("complex key");
        assert!(e.message.contains("plain name"));
    }

    #[test]
    fn suggestions() {
        let known = [
            "metric",
            "guards",
            "scope",
            "knobs",
            "knobs_file",
            "noise_floor",
        ];
        assert_eq!(suggest("metrc", &known), Some("metric"));
        assert_eq!(suggest("Metric", &known), Some("metric"));
        assert_eq!(suggest("noise-floor", &known), Some("noise_floor"));
        assert_eq!(suggest("knob", &known), Some("knobs"));
        assert_eq!(suggest("gaurds", &known), Some("guards"));
        assert_eq!(suggest("zzz", &known), None);
        assert_eq!(suggest("budget", &known), None);
        assert_eq!(strsim::osa_distance("nmae", "name"), 1);
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_int("40"), Some(40));
        assert_eq!(parse_int("-3"), Some(-3));
        assert_eq!(parse_int("4.0"), None);
        assert_eq!(parse_int("0x10"), None);
        assert_eq!(parse_float("1.5"), Some(1.5));
        assert_eq!(parse_float("1e-3"), Some(0.001));
        assert_eq!(parse_float(".inf"), None);
        assert_eq!(parse_float("inf"), None);
        assert_eq!(parse_float("NaN"), None);
    }

    #[test]
    fn checker_reports_unknown_duplicate_and_wrong() {
        let node = parse("name: x\nnmae: y\nname: z\nlist: a\n", 2).expect("valid");
        let mut ck = Checker::new(Path::new("f.md"));
        let fields = ck
            .map(&node, "metric", &["name", "list"], "name: x")
            .expect("a map");
        if let Some(e) = fields.get("list") {
            ck.strings(&e.value, "metric.list", "a list", "a string", "list: [a]");
        }
        let shown: Vec<String> = ck.problems.iter().map(ToString::to_string).collect();
        assert_eq!(ck.problems.len(), 3, "{shown:#?}");
        assert_eq!(
            shown[0],
            "f.md:3: metric.nmae: unknown key `nmae`; did you mean `name`?"
        );
        assert!(
            shown[1]
                .starts_with("f.md:4: metric.name: duplicate key `name` (first given on line 2)")
        );
        assert_eq!(
            shown[2],
            "f.md:5: metric.list: expected a list, found `a` (example: `list: [a]`)"
        );
    }
}
