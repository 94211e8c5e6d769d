//! Knobs: named parameters the builtin driver searches, passed to every command as
//! environment variables.
//!
//! A knob's value travels as text (an env var, the knobs file, a plan's JSON), so the
//! spec both checks typed values ([`KnobSpec::contains`]) and reads text back
//! ([`KnobSpec::parse_value`]); [`KnobValue`]'s `Display` is the exact text written.

use crate::model::KnobValue;
use crate::validate::yaml::{Checker, Entry, Node, join, parse_float, parse_int};

#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    pub name: String,
    pub spec: KnobSpec,
    pub default: Option<KnobValue>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum KnobSpec {
    /// Inclusive range; `log` means the search works on a log scale (requires lo > 0).
    Int {
        lo: i64,
        hi: i64,
        log: bool,
    },
    Float {
        lo: f64,
        hi: f64,
        log: bool,
    },
    Choice(Vec<String>),
}

impl KnobSpec {
    /// Whether `v` is a legal value. An integer is accepted by a float knob (JSON and
    /// YAML write `2.0` as `2`), and a choice compares by text (`choice: [1, 2, 4]`).
    pub fn contains(&self, v: &KnobValue) -> bool {
        match (self, v) {
            (KnobSpec::Int { lo, hi, .. }, KnobValue::Int(x)) => lo <= x && x <= hi,
            (KnobSpec::Float { lo, hi, .. }, KnobValue::Float(x)) => {
                x.is_finite() && *lo <= *x && *x <= *hi
            }
            (KnobSpec::Float { lo, hi, .. }, KnobValue::Int(x)) => {
                let x = *x as f64;
                *lo <= x && x <= *hi
            }
            (KnobSpec::Choice(options), v) => {
                let text = v.to_string();
                options.contains(&text)
            }
            _ => false,
        }
    }

    /// Reads a value from its text (an env var, a knobs file, CLI input); `None` unless
    /// the text has the knob's type and is [`contains`](Self::contains)ed.
    pub fn parse_value(&self, text: &str) -> Option<KnobValue> {
        let value = match self {
            KnobSpec::Int { .. } => KnobValue::Int(parse_int(text)?),
            KnobSpec::Float { .. } => KnobValue::Float(parse_float(text)?),
            KnobSpec::Choice(_) => KnobValue::Str(text.to_string()),
        };
        self.contains(&value).then_some(value)
    }

    /// `int [8, 512] log`, `choice [naive, blocked]`: for reports and prompts.
    pub fn describe(&self) -> String {
        match self {
            KnobSpec::Int { lo, hi, log } => {
                format!("int [{lo}, {hi}]{}", if *log { " log" } else { "" })
            }
            KnobSpec::Float { lo, hi, log } => {
                format!("float [{lo}, {hi}]{}", if *log { " log" } else { "" })
            }
            KnobSpec::Choice(options) => format!("choice [{}]", options.join(", ")),
        }
    }
}

/// Environment variables a knob must not shadow: ooda's own, and the ones every shell
/// command relies on.
const RESERVED: &[&str] = &["PATH", "HOME", "PWD", "SHELL", "IFS", "USER", "TMPDIR"];

/// Whether `name` can be an environment variable name in every shell.
pub(crate) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

const KNOB_KEYS: &[&str] = &["int", "float", "choice", "log", "default"];

/// Validates `NAME: {int: [lo, hi], log: bool, default: v}` (or float/choice). Every
/// problem found is reported; `None` if there was any.
pub(crate) fn check(ck: &mut Checker, entry: &Entry) -> Option<Knob> {
    let name = &entry.key;
    let path = join("knobs", name);
    let before = ck.problems.len();

    if !is_env_name(name) {
        let upper: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        ck.report(
            Some(entry.line),
            Some(&path),
            format!(
                "`{name}` cannot be an environment variable name: use letters, digits and `_`, not starting with a digit"
            ),
        )
        .expected("a name like `TILE` or `BATCH_SIZE`")
        .example(format!(
            "{}: {{int: [8, 512]}}",
            if upper.starts_with(|c: char| c.is_ascii_digit()) {
                format!("K_{upper}")
            } else {
                upper
            }
        ));
    } else if name.starts_with("OODA_") || RESERVED.contains(&name.as_str()) {
        ck.report(
            Some(entry.line),
            Some(&path),
            format!("`{name}` is reserved (ooda's `OODA_*` variables and the shell's own); rename the knob"),
        )
        .example("TILE: {int: [8, 512]}");
    }

    if name == "file" && entry.value.scalar().is_some() {
        ck.report(
            Some(entry.line),
            Some(&path),
            "the knobs file is set with the top-level key `knobs_file`, not inside `knobs`",
        )
        .example("knobs_file: ooda.knobs.env");
        return None;
    }

    let example = format!("{name}: {{int: [8, 512], log: true}}");
    let fields = ck.map(&entry.value, &path, KNOB_KEYS, &example)?;

    let kinds: Vec<&Entry> = ["int", "float", "choice"]
        .iter()
        .filter_map(|k| fields.entry(k))
        .collect();
    let spec = match kinds.as_slice() {
        [] => {
            ck.report(
                Some(entry.line),
                Some(&path),
                "missing the knob's type: give one of `int`, `float` or `choice`",
            )
            .expected("one of `int: [lo, hi]`, `float: [lo, hi]`, `choice: [a, b]`")
            .example(format!("{name}: {{choice: [naive, blocked]}}"));
            None
        }
        [kind] => check_kind(ck, kind, &path),
        [first, second, ..] => {
            ck.report(
                Some(second.line),
                Some(&join(&path, &second.key)),
                format!(
                    "a knob has exactly one type, but both `{}` and `{}` are given",
                    first.key, second.key
                ),
            )
            .example(format!("{name}: {{int: [8, 512]}}"));
            None
        }
    };

    let log = fields
        .get("log")
        .and_then(|e| ck.boolean(&e.value, &join(&path, "log"), "log: true"));
    let spec = match spec {
        Some(KnobSpec::Int { lo, hi, .. }) => {
            let log = log.unwrap_or(false);
            if log && lo <= 0 {
                log_needs_positive(
                    ck,
                    fields.entry("log"),
                    &path,
                    &lo.to_string(),
                    "int: [1, 512], log: true",
                );
            }
            Some(KnobSpec::Int { lo, hi, log })
        }
        Some(KnobSpec::Float { lo, hi, .. }) => {
            let log = log.unwrap_or(false);
            if log && lo <= 0.0 {
                log_needs_positive(
                    ck,
                    fields.entry("log"),
                    &path,
                    &lo.to_string(),
                    "float: [0.001, 1], log: true",
                );
            }
            Some(KnobSpec::Float { lo, hi, log })
        }
        Some(KnobSpec::Choice(options)) => {
            if let (Some(_), Some(e)) = (log, fields.entry("log")) {
                ck.report(
                    Some(e.line),
                    Some(&join(&path, "log")),
                    "`log` applies only to `int` and `float` knobs; remove it",
                )
                .example(format!("{name}: {{choice: [naive, blocked]}}"));
            }
            Some(KnobSpec::Choice(options))
        }
        None => None,
    };

    let default = match (fields.get("default"), &spec) {
        (Some(e), Some(spec)) => check_default(ck, &e.value, &join(&path, "default"), spec),
        _ => None,
    };

    if ck.problems.len() > before {
        return None;
    }
    Some(Knob {
        name: name.clone(),
        spec: spec?,
        default,
    })
}

fn log_needs_positive(ck: &mut Checker, log: Option<&Entry>, path: &str, lo: &str, example: &str) {
    if let Some(e) = log {
        ck.report(
            Some(e.line),
            Some(&join(path, "log")),
            format!("a log-scale knob needs lo > 0, found lo = {lo}"),
        )
        .expected("a range with lo > 0")
        .example(example);
    }
}

fn check_kind(ck: &mut Checker, kind: &Entry, path: &str) -> Option<KnobSpec> {
    let key = join(path, &kind.key);
    let node = &kind.value;
    match kind.key.as_str() {
        "int" => {
            let (lo, hi) = pair(
                ck,
                node,
                &key,
                "`[lo, hi]`, two integers",
                "int: [8, 512]",
                parse_int,
            )?;
            ordered(ck, node, &key, lo < hi, "int: [8, 512]")?;
            Some(KnobSpec::Int { lo, hi, log: false })
        }
        "float" => {
            let (lo, hi) = pair(
                ck,
                node,
                &key,
                "`[lo, hi]`, two numbers",
                "float: [0.1, 0.9]",
                parse_float,
            )?;
            ordered(ck, node, &key, lo < hi, "float: [0.1, 0.9]")?;
            Some(KnobSpec::Float { lo, hi, log: false })
        }
        _ => {
            let example = "choice: [naive, blocked]";
            let options = ck.strings(
                node,
                &key,
                "a list of values",
                "a value (text or number)",
                example,
            )?;
            if options.is_empty() {
                ck.report(
                    Some(node.line),
                    Some(&key),
                    "expected at least one value, found an empty list",
                )
                .expected("a non-empty list of values")
                .example(example);
                return None;
            }
            let mut ok = true;
            for (i, option) in options.iter().enumerate() {
                if options[..i].contains(option) {
                    ck.report(
                        Some(
                            node.seq()
                                .and_then(|s| s.get(i))
                                .map_or(node.line, |n| n.line),
                        ),
                        Some(&format!("{key}[{i}]")),
                        format!("duplicate value `{option}`; each choice must be listed once"),
                    )
                    .example(example);
                    ok = false;
                }
            }
            ok.then_some(KnobSpec::Choice(options))
        }
    }
}

/// A `[lo, hi]` list of two numbers of the knob's type.
fn pair<T: Copy>(
    ck: &mut Checker,
    node: &Node,
    key: &str,
    expected: &str,
    example: &str,
    conv: fn(&str) -> Option<T>,
) -> Option<(T, T)> {
    ck.expect(node, key, expected, example, |n| match n.seq()? {
        [lo, hi] => Some((conv(lo.scalar()?)?, conv(hi.scalar()?)?)),
        _ => None,
    })
}

fn ordered(ck: &mut Checker, node: &Node, key: &str, ok: bool, example: &str) -> Option<()> {
    if !ok {
        let shown = node
            .seq()
            .unwrap_or_default()
            .iter()
            .map(|n| n.scalar().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(", ");
        ck.report(
            Some(node.line),
            Some(key),
            format!("expected `[lo, hi]` with lo < hi, found `[{shown}]`"),
        )
        .expected("`[lo, hi]` with lo < hi")
        .example(example);
        return None;
    }
    Some(())
}

fn check_default(ck: &mut Checker, node: &Node, key: &str, spec: &KnobSpec) -> Option<KnobValue> {
    let (expected, example) = match spec {
        KnobSpec::Int { lo, hi, .. } => (
            format!("an integer in [{lo}, {hi}]"),
            format!("default: {lo}"),
        ),
        KnobSpec::Float { lo, hi, .. } => (
            format!("a number in [{lo}, {hi}]"),
            format!("default: {lo}"),
        ),
        KnobSpec::Choice(options) => (
            format!(
                "one of {}",
                options
                    .iter()
                    .map(|o| format!("`{o}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!("default: {}", options.first().map_or("", String::as_str)),
        ),
    };
    ck.expect(node, key, &expected, &example, |n| {
        spec.parse_value(n.scalar()?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_env_text() {
        assert_eq!(KnobValue::Int(64).to_string(), "64");
        assert_eq!(KnobValue::Float(0.1).to_string(), "0.1");
        assert_eq!(KnobValue::Float(1e-7).to_string(), "0.0000001");
        assert_eq!(KnobValue::Str("blocked".into()).to_string(), "blocked");
        let third = 1.0f64 / 3.0;
        let shown = KnobValue::Float(third).to_string();
        assert_eq!(shown.parse::<f64>().ok(), Some(third));
    }

    #[test]
    fn contains_and_parse_value() {
        let int = KnobSpec::Int {
            lo: 8,
            hi: 512,
            log: true,
        };
        assert!(int.contains(&KnobValue::Int(8)));
        assert!(int.contains(&KnobValue::Int(512)));
        assert!(!int.contains(&KnobValue::Int(513)));
        assert!(!int.contains(&KnobValue::Float(64.0)));
        assert_eq!(int.parse_value(" 64 "), Some(KnobValue::Int(64)));
        assert_eq!(int.parse_value("64.5"), None);
        assert_eq!(int.parse_value("4"), None);

        let float = KnobSpec::Float {
            lo: 0.0,
            hi: 1.0,
            log: false,
        };
        assert!(float.contains(&KnobValue::Int(1)));
        assert!(!float.contains(&KnobValue::Float(f64::NAN)));
        assert_eq!(float.parse_value("0.25"), Some(KnobValue::Float(0.25)));
        assert_eq!(float.parse_value("2"), None);

        let choice = KnobSpec::Choice(vec!["naive".into(), "4".into()]);
        assert!(choice.contains(&KnobValue::Int(4)));
        assert_eq!(
            choice.parse_value("naive"),
            Some(KnobValue::Str("naive".into()))
        );
        assert_eq!(choice.parse_value("fast"), None);
    }

    #[test]
    fn values_serialize_untagged() {
        let values = vec![
            KnobValue::Int(3),
            KnobValue::Float(0.5),
            KnobValue::Str("x".into()),
        ];
        let json = serde_json::to_string(&values).unwrap_or_default();
        assert_eq!(json, r#"[3,0.5,"x"]"#);
        let back: Vec<KnobValue> = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, values);
    }

    #[test]
    fn env_names() {
        assert!(is_env_name("TILE"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("TILE-SIZE"));
        assert!(!is_env_name(""));
    }
}
