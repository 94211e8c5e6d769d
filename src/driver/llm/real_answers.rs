//! The answers real small models gave on a real llama.cpp server
//! (`tests/fixtures/real-model/`, recorded by ooda's llm driver on a small
//! Python project), read exactly as the tool loop reads them: the calls
//! written as text, the answer, and what the model is told when neither
//! came. Each row of the table is one recorded answer and what ooda must
//! make of it; a recording ooda misreads fails here before it fails a night.

use serde_json::Value;

use super::text_calls;
use super::tool_loop::nudge;
use super::tools::specs;
use super::wire::{Completion, Tokens};
use crate::config::ToolsMode;
use crate::driver::agent::reply::result_json;

/// One recorded exchange of the llm driver.
struct Recorded {
    content: String,
    finish: String,
    output_tokens: u64,
    max_tokens: u64,
    /// 9 tools: EXECUTE; 7: a step that only reads.
    edits: bool,
}

fn recorded(file: &str) -> Vec<Recorded> {
    let path = format!(
        "{}/tests/fixtures/real-model/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Recorded {
                content: v["content"].as_str().unwrap_or_default().to_string(),
                finish: v["finish_reason"].as_str().unwrap_or_default().to_string(),
                output_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0),
                max_tokens: v["req_max_tokens"].as_u64().unwrap_or(0),
                edits: v["req_tools"].as_u64() == Some(9),
            }
        })
        .collect()
}

/// What the loop makes of one answer, in a line.
fn reading(r: &Recorded) -> String {
    let offered = specs(r.edits, true);
    let found = text_calls::read(&r.content, &offered, 1, "");
    if !found.calls.is_empty() {
        let calls: Vec<String> = found
            .calls
            .iter()
            .map(|(c, f)| format!("call {} ({}) {}", c.name, f.as_str(), c.arguments))
            .collect();
        return calls.join("; ");
    }
    let read = result_json(None, Some(&r.content), "");
    if let Ok((v, source)) = &read {
        // A plan is judged by PLAN's rules; an EXECUTE answer's fields are
        // optional.
        let plan = (!r.edits)
            .then(|| crate::driver::agent::answers::plan_field_problem(v))
            .flatten()
            .map(|p| format!(" / as a plan: {p}"))
            .unwrap_or_default();
        let wrong = found
            .problems
            .first()
            .map(|p| format!(" / told: {p}"))
            .unwrap_or_default();
        return format!("answer ({}){plan}{wrong}", source.as_str());
    }
    let c = Completion {
        text: r.content.clone(),
        calls: Vec::new(),
        finish: r.finish.clone(),
        tokens: Tokens {
            output: r.output_tokens,
            ..Tokens::default()
        },
        model: String::new(),
        speeds: None,
    };
    let unread = super::tool_loop::unread_block(&read);
    format!(
        "nudge: {}",
        nudge(
            ToolsMode::Native,
            false,
            &c,
            &[],
            &found.problems,
            unread.as_deref(),
            r.max_tokens
        )
    )
}

const FINISH: &str = "nudge: Call the finish tool";
const CUT: &str = "nudge: Your answer was cut off at 1024 tokens";
const OODA: &str = "answer (```ooda block)";

/// Each recorded answer and the start of what ooda must make of it (the
/// fixtures' README says what each file shows).
const EXPECTED: &[(&str, &[&str])] = &[
    // SmolLM2-135M: prose, and answers cut off at max_tokens; its template
    // has no tools, so it never calls one.
    (
        "n1b-smollm2-llm.jsonl",
        &[
            FINISH, FINISH, FINISH, FINISH, FINISH, FINISH, CUT, FINISH, FINISH, CUT, CUT, CUT,
            CUT, FINISH, FINISH,
        ],
    ),
    // Qwen2.5-Coder-0.5B: a plan followed by a stray fence; a plan
    // followed by `finish({"answer": "ooda"})`; a block that is not JSON.
    (
        "n2-qwen05-llm.jsonl",
        &[
            OODA,
            "answer (bare JSON)",
            "answer (bare JSON) / told: the call of `finish` was not run: the field `answer` must be an object (got a string)",
            "answer (bare JSON) / told: the call of `finish` was not run: the field `answer` must be an object (got a string)",
            OODA,
            OODA,
            OODA,
            OODA,
            OODA,
            "nudge: Your answer could not be read: the last ```ooda block is not a JSON object",
            "nudge: Your answer could not be read: the last ```ooda block is not a JSON object",
            "nudge: Your answer could not be read: the last ```ooda block is not a JSON object",
        ],
    ),
    // Qwen2.5-Coder-1.5B: `change` written as an object; finish written as
    // a fenced `{"answer": …}`; an `<answer>` tag.
    (
        "n3-qwen15-llm.jsonl",
        &[
            "answer (```ooda block) / as a plan: the field `change` must be a string: the change in one sentence (not the edit itself), and it is an object",
            OODA,
            OODA,
            OODA,
            "answer (bare JSON)",
            "call finish (fenced JSON) {\"answer\":{\"change\":\"Replace the naive",
            "call finish (fenced JSON) {\"answer\":{\"change\":\"Replace the naive",
            OODA,
            OODA,
            OODA,
            FINISH,
            "call finish (fenced JSON) {\"answer\":{\"change\":\"Replace the naive",
            "call finish (fenced JSON) {\"answer\":{\"change\":\"Replace the naive",
        ],
    ),
];

#[test]
fn every_recorded_answer_is_read_as_what_it_is() {
    let mut wrong = Vec::new();
    for (file, want) in EXPECTED {
        let answers = recorded(file);
        assert_eq!(
            answers.len(),
            want.len(),
            "{file}: one expectation per answer"
        );
        for (i, (r, w)) in answers.iter().zip(want.iter()).enumerate() {
            let got = reading(r);
            if !got.starts_with(w) {
                wrong.push(format!("{file} #{i}:\n  want {w}\n  got  {got}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The timeouts recorded: the client gave up (HTTP 502 from the recording
/// proxy, the client gone): no answer to read, and nothing here may
/// mistake an empty body for one.
#[test]
fn a_timed_out_request_has_no_answer_to_read() {
    for r in recorded("t1-qwen15-timeout20s.jsonl") {
        assert!(r.content.is_empty());
        assert!(result_json(None, Some(&r.content), "").is_err());
        assert!(
            text_calls::read(&r.content, &specs(true, true), 1, "")
                .calls
                .is_empty()
        );
    }
}

/// aider's exchanges (`n4`, `n5`) were recorded as the server's stream,
/// clipped to its first 2,000 bytes: what each holds is the start of an
/// answer (a ```ooda block, a search/replace block, aider's own reflection
/// "SearchReplaceNoExactMatch"). An incomplete answer must not be acted on:
/// no call, no edit block and no answer is read from any of them.
#[test]
fn a_clipped_stream_is_never_acted_on() {
    for file in ["n4-qwen15-aider.jsonl", "n5-qwen15-aider-long.jsonl"] {
        let path = format!(
            "{}/tests/fixtures/real-model/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let mut starts = 0;
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let raw = v["raw_response"].as_str().unwrap_or_default();
            let mut content = String::new();
            for data in raw.lines().filter_map(|l| l.strip_prefix("data: ")) {
                if let Ok(chunk) = serde_json::from_str::<Value>(data) {
                    for c in chunk["choices"].as_array().into_iter().flatten() {
                        content.push_str(c["delta"]["content"].as_str().unwrap_or_default());
                    }
                }
            }
            starts += usize::from(!content.is_empty());
            assert!(
                text_calls::read(&content, &specs(true, true), 1, "")
                    .calls
                    .is_empty(),
                "{content}"
            );
            assert!(super::edit_blocks::parse(&content).is_empty(), "{content}");
            assert!(result_json(None, Some(&content), "").is_err(), "{content}");
        }
        assert!(starts > 0, "{file}: no answer decoded");
    }
}
