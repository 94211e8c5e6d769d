//! The llm driver's context layers on a scripted 30-step tool conversation.
//!
//! `cargo bench --bench context_bench [-- --window TOKENS]`
//!
//! `benches/llm/conversation.json` (made by `make_conversation.py`, and
//! committed before the layers were written) holds 30 assistant turns, each
//! one tool call with the result the tool returned. It is replayed twice,
//! building the prompt each step would send:
//!
//! - **without the layers**: the system prompt, the request and the whole
//!   transcript, every result inline (what a loop that appends does);
//! - **with the layers**: the driver's own code (`Memory`, `Store`): L1
//!   stores large results and long arrays by reference, the transcript
//!   window folds old turns into the handover, L3 compacts near the window,
//!   L4 fetches back what the next step depends on. L2 needs a model and is
//!   off here (the deterministic summaries stand in).
//!
//! Both sides see command outputs as `run_command` returns them (after the
//! deterministic output compressor), so the difference is the layers'.
//! Tokens are characters / 4. For the steps that name exact values they
//! need (the 15 order ids, a UUID in a 60 KB log, a commit hash), each side
//! is checked: is the value in the prompt verbatim, or one `fetch_stored`
//! away (in a stored ref whose id the prompt names)?

use ooda::testing::driver::llm::context::{Layers, Memory, Turn, Window, plain_summary, triage};
use ooda::testing::driver::llm::store::Store;
use ooda::testing::driver::llm::tools;
use ooda::testing::driver::llm::wire::{Message, ToolCall};
use serde_json::Value;

/// A request of the size a PLAN or EXECUTE prompt has (the Brief, the plan).
fn request() -> String {
    let mut r = String::from(
        "# Task\nMake p95 parse latency lower; measure with ./bench.sh; tests must stay green.\n",
    );
    while r.len() < 3_000 {
        r.push_str(
            "The Brief's goal, success criteria and what must not break, with the plan to apply. ",
        );
    }
    r
}

struct Step {
    text: String,
    tool: String,
    arguments: Value,
    result: String,
    needs: Vec<String>,
}

fn load() -> Vec<Step> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/llm/conversation.json");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("conversation.json")).unwrap();
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let tool = s["tool"].as_str().unwrap().to_string();
            let raw = s["result"].as_str().unwrap();
            // As `run_command` returns it.
            let result = if tool == tools::RUN {
                format!("exit 0\n{raw}")
            } else {
                raw.to_string()
            };
            Step {
                text: s["text"].as_str().unwrap().to_string(),
                tool,
                arguments: s["arguments"].clone(),
                result,
                needs: s["needs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_str().unwrap().to_string())
                    .collect(),
            }
        })
        .collect()
}

/// What a message puts in a prompt: its text and its calls' arguments.
fn said(m: &Message) -> String {
    let args: String = m.calls.iter().map(|c| c.arguments.to_string()).collect();
    format!("{}{args}", m.text)
}

fn call(i: usize, s: &Step) -> Message {
    Message::assistant(
        s.text.clone(),
        vec![ToolCall {
            id: format!("call_{i}"),
            name: s.tool.clone(),
            arguments: s.arguments.clone(),
        }],
    )
}

/// Whether each needed value is in `prompt`, or in a ref the prompt names.
fn survival(needs: &[String], prompt: &str, store: Option<&Store>) -> (usize, usize) {
    let mut inline = 0;
    let mut fetchable = 0;
    for n in needs {
        if prompt.contains(n.as_str()) {
            inline += 1;
        } else if let Some(st) = store
            && st.refs.iter().any(|r| {
                // Named as a stub, a data-index line or a handover entry.
                let named = [
                    format!("\"{}\"", r.id),
                    format!("- {} ", r.id),
                    format!("{} (", r.id),
                ]
                .iter()
                .any(|form| prompt.contains(form.as_str()));
                named && st.contents(&r.id).is_some_and(|c| c.contains(n.as_str()))
            })
        {
            fetchable += 1;
        }
    }
    (inline, fetchable)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let window: u64 = args
        .iter()
        .position(|a| a == "--window")
        .and_then(|i| args.get(i + 1))
        .and_then(|w| w.parse().ok())
        .unwrap_or(128_000);
    let steps = load();
    let request = request();
    let allowed = vec![
        "./bench.sh".to_string(),
        "cargo test --quiet".into(),
        "./query.sh orders".into(),
    ];
    let system = ooda::testing::driver::llm::tool_loop::instructions(
        "the main agent, in the EXECUTE phase",
        true,
        &allowed,
    );
    let l = Layers::default();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::new(dir.path(), "r");
    let mut memory = Memory::new(&request);
    let mut naive: Vec<Message> = vec![Message::user(request.clone())];
    // Today's output path without the layers: every command output
    // through the compressor, appended.
    let mut squeezed: Vec<Message> = naive.clone();
    let mut compactions = 0;
    let (mut total_naive, mut total_squeezed, mut total_layers) = (0u64, 0u64, 0u64);
    let (mut fetch_tokens, mut fetches) = (0u64, 0u32);
    let mut survived = Vec::new();
    println!("context window {window} tokens; tokens = chars / 4\n");
    println!(
        "{:>4}  {:<13} {:>9} {:>11} {:>9}",
        "step", "tool", "raw", "compressor", "layers"
    );
    for (i, s) in steps.iter().enumerate() {
        // The prompt this step's request sends.
        memory.steps = i as u32;
        memory
            .fit_window(&system, &mut store, &l, &Window::plain(window))
            .unwrap();
        if memory
            .compact(&system, &mut store, &l, &Window::plain(window))
            .unwrap()
            .is_some()
        {
            compactions += 1;
        }
        let p = memory
            .assemble(&system, &store, &l)
            .expect("one form per ref");
        let with_text: String = std::iter::once(p.system.clone())
            .chain(p.messages.iter().map(said))
            .collect();
        let naive_chars = system.chars().count() + naive.iter().map(Message::chars).sum::<usize>();
        let naive_text: String = naive.iter().map(said).collect();
        let squeezed_chars =
            system.chars().count() + squeezed.iter().map(Message::chars).sum::<usize>();
        let squeezed_text: String = squeezed.iter().map(said).collect();
        let (tn, ts, tl) = (
            (naive_chars as u64).div_ceil(4),
            (squeezed_chars as u64).div_ceil(4),
            p.tokens(),
        );
        total_naive += tn;
        total_squeezed += ts;
        total_layers += tl;
        println!(
            "{:>4}  {:<13} {:>9} {:>11} {:>9}",
            i + 1,
            s.tool,
            tn,
            ts,
            tl
        );
        if !s.needs.is_empty() {
            // What the layers' "one fetch away" costs: per ref holding a
            // value the prompt lacks, one more request (this prompt again)
            // with a page of up to 8,000 chars of the ref in it.
            for r in &store.refs {
                let needed = s.needs.iter().any(|n| {
                    !with_text.contains(n.as_str())
                        && store
                            .contents(&r.id)
                            .is_some_and(|c| c.contains(n.as_str()))
                });
                if needed {
                    fetch_tokens += tl + (r.chars.min(8_000) as u64).div_ceil(4);
                    fetches += 1;
                }
            }
            survived.push((
                i + 1,
                s.needs.len(),
                survival(&s.needs, &naive_text, None),
                survival(&s.needs, &squeezed_text, None),
                survival(&s.needs, &with_text, Some(&store)),
            ));
        }
        // The model's turn and the tool's result, into both transcripts.
        let m = call(i, s);
        naive.push(m.clone());
        squeezed.push(m.clone());
        memory.transcript.push(Turn::plain(m));
        memory.depends.clear();
        let id = format!("call_{i}");
        naive.push(Message::tool(&id, s.result.clone(), false));
        let turn = if s.tool == tools::INSIGHT {
            memory.add_insight(s.arguments["text"].as_str().unwrap_or_default(), &l);
            Turn::plain(Message::tool(&id, "kept in working memory", false))
        } else {
            // The driver's own L1 (L2 off: no model here).
            match triage(&s.tool, &s.result, &l) {
                (shown, false) => Turn::plain(Message::tool(&id, shown, false)),
                (_, true) => {
                    let r = store.put(&s.tool, &s.result).unwrap().clone();
                    let shown = triage(&s.tool, &s.result, &l).0;
                    if let Some(summary) = plain_summary(&s.tool, &s.result, &shown, &l) {
                        store.set_summary(&r.id, summary);
                    }
                    let r = store.get(&r.id).unwrap().clone();
                    memory.stored(&id, &r)
                }
            }
        };
        squeezed.push(Message::tool(&id, triage(&s.tool, &s.result, &l).0, false));
        memory.transcript.push(turn);
    }
    let pct = |t: u64| 100.0 * (1.0 - t as f64 / total_naive as f64);
    println!(
        "\ntotal prompt tokens over 30 steps: raw transcript {total_naive}; compressor only {total_squeezed} ({:.1}% fewer); layers {total_layers} ({:.1}% fewer)",
        pct(total_squeezed),
        pct(total_layers)
    );
    println!(
        "layers with the fetches the needed values cost ({fetches} requests): {} ({:.1}% fewer)",
        total_layers + fetch_tokens,
        pct(total_layers + fetch_tokens)
    );
    println!(
        "refs stored {}, compactions {compactions}",
        store.refs.len()
    );
    for (step, n, (ri, _), (ci, _), (li, lf)) in survived {
        println!(
            "step {step}: {n} exact values needed — raw {ri}/{n} in the prompt; compressor only {ci}/{n}; layers {li}/{n} in the prompt + {lf}/{n} one fetch_stored away ({} lost)",
            n - li - lf
        );
    }
}
