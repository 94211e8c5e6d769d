//! Finding JSON objects and fenced blocks in a model's prose.
//!
//! Models wrap their answers in text: a plan followed by a stray fence, a
//! call inside tags, two objects on two lines. A JSON parser reads a whole
//! string or fails; these find where each object or block starts and ends,
//! so the reader can take the one it wants and say exactly what was wrong
//! with the rest.

use serde_json::Value;

/// The longest object looked for (a tool call's arguments are capped at
/// 1 MiB).
const SCAN_MAX: usize = 1 << 20;

/// How a JSON value's type is said to the model.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The JSON object that starts at byte `at` (a `{`) and where it ends.
pub(crate) fn object_at(text: &str, at: usize) -> Option<(Value, usize)> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    // No answer object is larger than a tool call's arguments may be.
    let end = bytes.len().min(at.saturating_add(SCAN_MAX));
    for (i, &b) in bytes.iter().enumerate().take(end).skip(at) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    let v: Value = serde_json::from_str(&text[at..=i]).ok()?;
                    return v.is_object().then_some((v, i + 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` with what JSON does not allow and small models write anyway taken
/// out: `#` and `//` comments to the end of a line, and a comma before a
/// closing bracket; strings are left as they are. `None` when there was
/// nothing to take out.
pub(crate) fn without_comments(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        let comment = c == '#' || (c == '/' && chars.peek() == Some(&'/'));
        if comment {
            changed = true;
            while chars.peek().is_some_and(|n| *n != '\n') {
                chars.next();
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        if c == '}' || c == ']' {
            let kept = out.trim_end().len();
            if out[..kept].ends_with(',') {
                out.truncate(kept - 1);
                changed = true;
            }
        }
        out.push(c);
    }
    changed.then_some(out)
}

/// `(start, end, body_start, body_end)` of each fenced block (``` or ~~~,
/// any info string); an unclosed last block runs to the end.
pub(crate) fn fenced_blocks(text: &str) -> Vec<(usize, usize, usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, char, usize)> = None; // start, body, char, len
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let c = trimmed.chars().next().unwrap_or(' ');
        let n = if c == '`' || c == '~' {
            trimmed.chars().take_while(|x| *x == c).count()
        } else {
            0
        };
        match open {
            None if n >= 3 => open = Some((pos, pos + line.len(), c, n)),
            Some((start, body, oc, on)) if c == oc && n >= on && trimmed[n..].trim().is_empty() => {
                out.push((start, pos + line.len(), body, pos));
                open = None;
            }
            _ => {}
        }
        pos += line.len();
    }
    if let Some((start, body, _, _)) = open {
        out.push((start, text.len(), body, text.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_taken_out_and_strings_kept() {
        let t =
            "{\n  \"a\": 0.1,  # a fraction\n  \"b\": \"x # y // z\", // why\n  \"c\": [1, 2,],\n}";
        let v: Value = serde_json::from_str(&without_comments(t).unwrap()).unwrap();
        assert_eq!(v["b"], "x # y // z");
        assert_eq!(v["c"][1], 2);
        assert_eq!(without_comments("{\"a\": 1}"), None);
    }

    #[test]
    fn objects_are_found_inside_strings_braces_and_all() {
        let t = "x {\"a\": \"}{\", \"b\": {\"c\": [1, {\"d\": 2}]}} y";
        let (v, end) = object_at(t, 2).unwrap();
        assert_eq!(v["b"]["c"][1]["d"], 2);
        assert_eq!(&t[end..], " y");
        assert!(object_at("{\"a\": ", 0).is_none());
        let blocks = fenced_blocks("a\n```json\n{}\n```\nb\n~~~~\nx");
        assert_eq!(blocks.len(), 2);
    }
}
