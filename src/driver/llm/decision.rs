//! Decision attribution: why the model took an action.
//!
//! The system prompt asks for a short block with each action,
//! `<decision>goal: … | options: … | choice: … | why: … | expected: …</decision>`
//! (fields on one line split by `|`, or one per line). It is parsed into a
//! `decision_attribution` event attached to the model call; when the block
//! is missing, the tool call and the text before it stand in, marked as a
//! fallback, so every action still has a recorded reason.

use serde::{Deserialize, Serialize};

use super::wire::ToolCall;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Decision {
    pub goal: String,
    pub options: Vec<String>,
    pub choice: String,
    pub why: String,
    pub expected: String,
    /// `block` when the model wrote one, `fallback` when ooda derived it.
    pub source: String,
}

const FIELD_CHARS: usize = 400;

/// The model's block, or the fallback from its call and text.
pub(crate) fn attribute(text: &str, call: Option<&ToolCall>) -> Decision {
    if let Some(d) = parse(text) {
        return d;
    }
    let before = text.trim();
    Decision {
        goal: String::new(),
        options: Vec::new(),
        choice: call
            .map(|c| {
                format!(
                    "{} {}",
                    c.name,
                    crate::text::clip::clip(&c.arguments.to_string(), 200)
                )
            })
            .unwrap_or_default(),
        why: crate::text::clip::clip(before, FIELD_CHARS),
        expected: String::new(),
        source: "fallback".into(),
    }
}

fn parse(text: &str) -> Option<Decision> {
    let start = text.find("<decision>")? + "<decision>".len();
    let end = text[start..]
        .find("</decision>")
        .map(|e| start + e)
        .unwrap_or(text.len());
    let body = &text[start..end];
    let mut d = Decision {
        source: "block".into(),
        ..Decision::default()
    };
    let mut any = false;
    for part in body.split(['|', '\n']) {
        let Some((k, v)) = part.split_once(':') else {
            continue;
        };
        let v = crate::text::clip::clip(v.trim(), FIELD_CHARS);
        match k.trim().to_ascii_lowercase().as_str() {
            "goal" => d.goal = v,
            "options" | "options considered" => {
                d.options = v
                    .split([';', ','])
                    .map(|o| o.trim().to_string())
                    .filter(|o| !o.is_empty())
                    .collect()
            }
            "choice" => d.choice = v,
            "why" => d.why = v,
            "expected" | "expected result" => d.expected = v,
            _ => continue,
        }
        any = true;
    }
    any.then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_block_is_read_and_a_missing_one_falls_back_to_the_call() {
        let d = attribute(
            "<decision>goal: faster parse | options: reuse buffer; SIMD | choice: reuse buffer | why: allocs dominate | expected: -10%</decision> ok",
            None,
        );
        assert_eq!(d.options, ["reuse buffer", "SIMD"]);
        assert_eq!(d.expected, "-10%");
        assert_eq!(d.source, "block");
        let multi = attribute("<decision>\ngoal: g\nchoice: c\nwhy: w\n</decision>", None);
        assert_eq!((multi.goal.as_str(), multi.why.as_str()), ("g", "w"));
        let call = ToolCall {
            id: "1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        };
        let f = attribute("Let me look at a.", Some(&call));
        assert_eq!(f.source, "fallback");
        assert_eq!(f.choice, "read_file {\"path\":\"a\"}");
        assert_eq!(f.why, "Let me look at a.");
    }
}
