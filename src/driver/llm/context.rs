//! What the model sees on each request: working memory, the transcript
//! window, the handover of folded turns (L3) and the data block (L4),
//! assembled anew every time and checked for one representation per ref.
//!
//! The layout, in order: the system prompt (instructions, then the data
//! index: every stored ref with its summary unless the ref is shown in
//! full further down); the pinned request (the phase's prompt: the Brief,
//! the plan, the task); working memory (insights, newest first, at most
//! 40 / 8,000 chars); the handover, once turns were folded; the transcript
//! window (`round(36 − steps·0.8)` messages, never fewer than 8); and the
//! data block with the refs the next step depends on.
//!
//! Turns leave the window by being folded into the handover, never by
//! being dropped: a result that was shown inline and is long is stored
//! first, so what was seen stays one `fetch_stored` away. A fold never
//! starts the kept part at a tool message (its call would be gone), keeps at
//! least 6 messages and removes at least 2.

use std::collections::BTreeMap;

use super::store::Store;
use super::wire::{Message, Speaker};
use crate::error::Result;

/// The layers' numbers, the source's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Layers {
    /// L1: a result over this many chars is stored by reference.
    pub store_chars: usize,
    /// L1: a JSON array of more items than this is stored.
    pub store_items: usize,
    /// L2: a result over this many chars (after the output compressor) is
    /// condensed by the `light` tier.
    pub condense_chars: usize,
    pub condense_max: usize,
    /// L2's fallback: the first chars, marked `__fallbackTruncated`.
    pub fallback_chars: usize,
    /// L3: compact when the prompt reaches this share of the window…
    pub compact_at: f64,
    /// …down to this share.
    pub compact_to: f64,
    /// L4: a ref up to this size is fetched back whole…
    pub inline_chars: usize,
    /// …larger ones as an enhanced summary of at most this many chars…
    pub enhanced_chars: usize,
    /// …all within this budget.
    pub fetch_budget: usize,
    pub insights_max: usize,
    pub insights_chars: usize,
    pub window_base: f64,
    pub window_slope: f64,
    pub window_min: usize,
}

impl Default for Layers {
    fn default() -> Layers {
        Layers {
            store_chars: 8_000,
            store_items: 10,
            condense_chars: 10_000,
            condense_max: 2_000,
            fallback_chars: 3_000,
            compact_at: 0.85,
            compact_to: 0.30,
            inline_chars: 4_096,
            enhanced_chars: 1_000,
            fetch_budget: 4_096,
            insights_max: 40,
            insights_chars: 8_000,
            window_base: 36.0,
            window_slope: 0.8,
            window_min: 8,
        }
    }
}

/// L1's decision for one tool result: what the model is shown of it
/// (redacted; for a command, what the output compressor makes of it) and
/// whether the exact result is stored. A command's output the compressor shortened is stored
/// whatever its size: the compressor folds lines that differ only in ids
/// (15 UUIDs become one line `×15`), which is exactly the loss the store
/// exists to prevent, so the exact output stays one fetch away.
pub fn triage(tool: &str, text: &str, l: &Layers) -> (String, bool) {
    let exact = crate::text::redact::redact(&clean(text));
    let shown = if tool == super::tools::RUN {
        crate::text::compress::excerpt(text, super::tools::RUN_CHARS)
    } else {
        exact.clone()
    };
    // Lossy: a line of the exact output is missing from what is shown
    // (dropped, folded, or masked into a shape); whitespace does not count.
    let kept: std::collections::HashSet<&str> = shown.lines().map(str::trim).collect();
    let lossy = exact
        .lines()
        .map(str::trim)
        .any(|l| !l.is_empty() && !kept.contains(l));
    let store = lossy || Store::wants(tool, &shown, l.store_chars, l.store_items);
    (shown, store)
}

/// A tool's text without colour codes and control characters: what the
/// output compressor would see, so a coloured output is not "lossy" and a
/// secret split by colour codes is joined before it is redacted.
pub fn clean(text: &str) -> String {
    crate::text::compress::strip_ansi(text)
        .chars()
        .filter(|c| matches!(c, '\n' | '\t') || !c.is_control())
        .collect()
}

/// The summary of a stored result no model condenses: over L2's size,
/// the structured truncation (what L2 falls back to); below it, for a
/// command, the compressor's view within L2's size; otherwise the store's
/// own (the size and first line, or the first items).
pub fn plain_summary(tool: &str, text: &str, shown: &str, l: &Layers) -> Option<String> {
    // A list keeps the store's summary, which counts its items: a head of
    // the first hundred paths would be the silently cut list itself.
    if super::store::array_len(text).is_some_and(|n| n > l.store_items) {
        return None;
    }
    if shown.chars().count() > l.condense_chars {
        return Some(fallback(shown, l));
    }
    (tool == super::tools::RUN).then(|| crate::text::compress::excerpt(text, l.condense_max))
}

/// L2's structured truncation: the first chars of what the compressor
/// left, in a wrapper that says it was cut.
pub fn fallback(shown: &str, l: &Layers) -> String {
    serde_json::json!({
        "__fallbackTruncated": true,
        "head": shown.chars().take(l.fallback_chars).collect::<String>(),
    })
    .to_string()
}

/// What a prompt may take, and how its size is estimated before the API
/// counts it: characters / 4, times the ratio the API's own count showed
/// on the last request, plus what every request carries besides the
/// messages (the tools' schemas).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// The model's context window.
    pub tokens: u64,
    /// Tokens every request carries besides the prompt (tool schemas).
    pub overhead: u64,
    /// The API's count over the estimate, from the last request (1 at first).
    pub ratio: f64,
    /// Room kept for the answer (`max_output`).
    pub reserve: u64,
}

impl Window {
    /// A window of `tokens` with nothing else counted (tests, benchmarks).
    pub fn plain(tokens: u64) -> Window {
        Window {
            tokens,
            overhead: 0,
            ratio: 1.0,
            reserve: 0,
        }
    }

    pub fn estimate(&self, chars: usize) -> u64 {
        ((chars as f64 / 4.0) * self.ratio).ceil() as u64 + self.overhead
    }
}

/// The form in which a ref's data appears in a prompt. A bare pointer
/// (the id alone) carries no data and is not a form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Form {
    Summary,
    Inline,
    Enhanced,
    Preview,
}

/// One message of the transcript, with what it shows of the store.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub msg: Message,
    /// A tool message standing for this stored ref (its text is the stub).
    pub stored: Option<String>,
    /// A `fetch_stored` result holding this ref's whole contents (a page
    /// of it is not the ref in another form: its summary stays shown).
    pub fetched: Option<String>,
}

impl Turn {
    pub fn plain(msg: Message) -> Turn {
        Turn {
            msg,
            stored: None,
            fetched: None,
        }
    }
}

/// One line of the handover.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    stage: &'static str,
    did: String,
    result: String,
}

/// Everything one step's conversation holds besides the store.
#[derive(Debug, Default)]
pub struct Memory {
    /// The original request, pinned right after the system prompt.
    pub request: String,
    /// Newest first.
    pub insights: Vec<String>,
    pub transcript: Vec<Turn>,
    /// Model requests made so far.
    pub steps: u32,
    /// Refs the next request depends on (stored by the last tool round).
    pub depends: Vec<String>,
    history: Vec<Entry>,
    abandoned: Vec<String>,
}

/// A prompt ready to send.
#[derive(Debug)]
pub struct Prompt {
    pub system: String,
    pub messages: Vec<Message>,
    pub chars: usize,
    /// Which ref appears in which form, for the check (and the tests).
    pub shows: Vec<(String, Form)>,
}

impl Prompt {
    /// Tokens, estimated as characters / 4.
    pub fn tokens(&self) -> u64 {
        (self.chars as u64).div_ceil(4)
    }
}

/// A ref that would appear in two forms.
#[derive(Debug, PartialEq)]
pub struct Violation {
    pub reference: String,
    pub forms: Vec<Form>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.forms.iter().all(|x| *x == self.forms[0]) {
            return write!(
                f,
                "the prompt would show ref {}'s {:?} {} times (a stub copied into a reply): one piece of data appears in a prompt in one form only",
                self.reference,
                self.forms.first().copied().unwrap_or(Form::Summary),
                self.forms.len()
            );
        }
        write!(
            f,
            "the prompt would show ref {} in {} forms ({:?}): one piece of data appears in a prompt in one form only",
            self.reference,
            self.forms.len(),
            self.forms
        )
    }
}

/// Refuses a prompt that shows one ref in more than one form. The same
/// form twice is one form: two pages of a ref fetched in turn are slices
/// of the same inline data.
pub fn check(shows: &[(String, Form)]) -> std::result::Result<(), Violation> {
    let mut by: BTreeMap<&str, Vec<Form>> = BTreeMap::new();
    for (r, f) in shows {
        let forms = by.entry(r.as_str()).or_default();
        if !forms.contains(f) {
            forms.push(*f);
        }
    }
    match by.into_iter().find(|(_, forms)| forms.len() > 1) {
        Some((r, forms)) => Err(Violation {
            reference: r.to_string(),
            forms,
        }),
        None => Ok(()),
    }
}

/// The same check on the text itself, by the one slot only the builder
/// fills: a stub's `"__summary": …` field. A model that copies a stub it
/// was shown into its own reply puts that field in a second place; data
/// that merely contains a summary's words (an inline array, a quote) does
/// not count.
fn check_text(text: &str, store: &Store, stubs: &[&str]) -> std::result::Result<(), Violation> {
    for r in &store.refs {
        let slot = format!(
            "\"__summary\":{}",
            serde_json::to_string(&r.summary).unwrap_or_default()
        );
        let placed = stubs
            .iter()
            .filter(|id| store.get(id).is_some_and(|o| o.summary == r.summary))
            .count();
        let found = text.matches(slot.as_str()).count();
        if found > placed {
            return Err(Violation {
                reference: r.id.clone(),
                forms: vec![Form::Summary; found],
            });
        }
    }
    Ok(())
}

impl Memory {
    pub fn new(request: &str) -> Memory {
        Memory {
            request: request.to_string(),
            ..Memory::default()
        }
    }

    /// The turn that stands for a stored result (its stub); the next step
    /// depends on the ref, so L4 fetches it back once.
    pub fn stored(&mut self, call_id: &str, r: &super::store::Stored) -> Turn {
        self.depends.push(r.id.clone());
        Turn {
            msg: Message::tool(call_id, r.stub(), false),
            stored: Some(r.id.clone()),
            fetched: None,
        }
    }

    /// Messages the transcript window holds at this step.
    pub fn window(&self, l: &Layers) -> usize {
        let w = (l.window_base - f64::from(self.steps) * l.window_slope).round();
        (w.max(0.0) as usize).max(l.window_min)
    }

    /// Keeps one insight, newest first, within the bounds (oldest dropped).
    pub fn add_insight(&mut self, text: &str, l: &Layers) {
        let text = crate::text::clip::clip(text.trim(), 400);
        if text.is_empty() || self.insights.contains(&text) {
            return;
        }
        self.insights.insert(0, text);
        self.insights.truncate(l.insights_max);
        while self
            .insights
            .iter()
            .map(|i| i.chars().count())
            .sum::<usize>()
            > l.insights_chars
        {
            self.insights.pop();
        }
    }

    /// How many of the oldest turns a fold of `want` would remove, after
    /// the rules: never leave a tool message first, keep ≥ 6, remove ≥ 2.
    pub fn split(&self, want: usize) -> usize {
        let len = self.transcript.len();
        let mut k = want.min(len.saturating_sub(6));
        while k > 0
            && self
                .transcript
                .get(k)
                .is_some_and(|t| t.msg.speaker == Speaker::Tool)
        {
            k -= 1;
        }
        if k < 2 { 0 } else { k }
    }

    /// Folds the oldest `k` turns into the handover. Inline tool results
    /// longer than a line are stored first, so nothing seen is lost.
    pub fn fold(&mut self, k: usize, store: &mut Store) -> Result<()> {
        let folded: Vec<Turn> = self.transcript.drain(..k).collect();
        let mut results: BTreeMap<String, (bool, String)> = BTreeMap::new();
        for t in &folded {
            if t.msg.speaker != Speaker::Tool {
                continue;
            }
            let id = t.msg.call_id.clone().unwrap_or_default();
            let shown = match &t.stored {
                Some(r) => format!("stored as {r}"),
                None if t.msg.text.chars().count() > 300 && !t.msg.is_error => {
                    let tool = tool_of(&folded, &id).unwrap_or("tool");
                    let r = store.put(tool, &t.msg.text)?;
                    format!("stored as {} ({} chars)", r.id, r.chars)
                }
                None => one_line(&t.msg.text, 300),
            };
            results.insert(id, (t.msg.is_error, shown));
        }
        for t in &folded {
            for c in &t.msg.calls {
                let did = format!(
                    "{} {}",
                    c.name,
                    crate::text::clip::clip(&c.arguments.to_string(), 300)
                );
                match results.remove(&c.id) {
                    Some((true, why)) => self.abandoned.push(format!("{did} → failed: {why}")),
                    Some((false, result)) => self.history.push(Entry {
                        stage: stage(&c.name),
                        did,
                        result,
                    }),
                    None => self.history.push(Entry {
                        stage: stage(&c.name),
                        did,
                        result: "(no result)".into(),
                    }),
                }
            }
        }
        Ok(())
    }

    /// Folds what the window no longer holds. Returns (tokens before,
    /// after, turns folded) when it folded.
    pub fn fit_window(
        &mut self,
        base: &str,
        store: &mut Store,
        l: &Layers,
        w: &Window,
    ) -> Result<Option<(u64, u64, usize)>> {
        let over = self.transcript.len().saturating_sub(self.window(l));
        let k = if over > 0 { self.split(over.max(2)) } else { 0 };
        self.fold_measured(k, base, store, l, w)
    }

    /// Folds everything the rules allow, for a server that said the prompt
    /// is too long. Returns what `fit_window` does.
    pub fn squeeze(
        &mut self,
        base: &str,
        store: &mut Store,
        l: &Layers,
        w: &Window,
    ) -> Result<Option<(u64, u64, usize)>> {
        let k = self.split(usize::MAX);
        self.fold_measured(k, base, store, l, w)
    }

    /// Folds `k` turns (none: nothing is measured) and measures the prompt
    /// on both sides.
    fn fold_measured(
        &mut self,
        k: usize,
        base: &str,
        store: &mut Store,
        l: &Layers,
        w: &Window,
    ) -> Result<Option<(u64, u64, usize)>> {
        if k == 0 {
            return Ok(None);
        }
        let before = self.measure(base, store, l, w);
        self.fold(k, store)?;
        Ok(Some((before, self.measure(base, store, l, w), k)))
    }

    /// L3: when the prompt reaches `compact_at` of the window (or would
    /// leave no room for the answer), folds the oldest turns until it is at
    /// most `compact_to` of it, or as far as the rules allow. Returns
    /// (tokens before, after, turns folded).
    pub fn compact(
        &mut self,
        base: &str,
        store: &mut Store,
        l: &Layers,
        w: &Window,
    ) -> Result<Option<(u64, u64, usize)>> {
        let before = self.measure(base, store, l, w);
        // Room for the answer, but never most of the window: a server with
        // max_output near its window would otherwise fold on every request.
        let full = before.saturating_add(w.reserve.min(w.tokens / 4)) > w.tokens;
        if (before as f64) < l.compact_at * w.tokens as f64 && !full {
            return Ok(None);
        }
        let target = (l.compact_to * w.tokens as f64) as u64;
        let mut removed = 0;
        loop {
            let k = self.split(2);
            if k == 0 {
                break;
            }
            self.fold(k, store)?;
            removed += k;
            if self.measure(base, store, l, w) <= target {
                break;
            }
        }
        if removed == 0 {
            return Ok(None);
        }
        Ok(Some((before, self.measure(base, store, l, w), removed)))
    }

    /// Tokens the next prompt takes, as `w` estimates them.
    pub fn measure(&self, base: &str, store: &Store, l: &Layers, w: &Window) -> u64 {
        match self.assemble(base, store, l) {
            Ok(p) => w.estimate(p.chars),
            // A refused prompt is the builder's error, reported when it is
            // built for sending; it says nothing about its size.
            Err(_) => 0,
        }
    }

    /// The prompt, or the ref it would show twice.
    pub fn assemble(
        &self,
        base: &str,
        store: &Store,
        l: &Layers,
    ) -> std::result::Result<Prompt, Violation> {
        let mut shows: Vec<(String, Form)> = Vec::new();
        // Refs whose contents a fetch result in the window already shows.
        let fetched: Vec<&str> = self
            .transcript
            .iter()
            .filter_map(|t| t.fetched.as_deref())
            .collect();
        // L4: what the next step depends on, within the budget, degraded
        // in the source's order: whole (never the audit preview), else the
        // enhanced summary, else the summary; the direct dependencies (what
        // the last round stored) first, then the indirect ones (refs the
        // model's last reply named), summaries only.
        let mut block = String::new();
        let mut in_block: Vec<&str> = Vec::new();
        let mut budget = l.fetch_budget;
        let indirect = self.mentioned(store);
        let wanted = self
            .depends
            .iter()
            .map(|id| (id.as_str(), true))
            .chain(indirect.iter().map(|id| (id.as_str(), false)));
        for (id, direct) in wanted {
            let Some(r) = store.get(id) else { continue };
            if fetched.contains(&id) || in_block.contains(&id) {
                continue;
            }
            let head = format!("<<{} {}, {} chars>>\n", r.id, r.tool, r.chars);
            let tail = format!("\n<</{}>>\n", r.id);
            let room = budget.saturating_sub(head.chars().count() + tail.chars().count());
            let contents = if direct { store.contents(id) } else { None };
            let (form, body) = match contents {
                Some(c) if r.chars <= l.inline_chars && r.chars <= room => (Form::Inline, c),
                Some(c) if room >= 200 => {
                    (Form::Enhanced, r.enhanced(&c, l.enhanced_chars.min(room)))
                }
                _ if r.summary.chars().count() <= room => (Form::Summary, r.summary.clone()),
                _ => continue,
            };
            budget = room.saturating_sub(body.chars().count());
            block.push_str(&head);
            block.push_str(&body);
            block.push_str(&tail);
            shows.push((r.id.clone(), form));
            in_block.push(&r.id);
        }
        let elsewhere = |id: &str| fetched.contains(&id) || in_block.contains(&id);
        let mut messages = vec![Message::user(self.request.clone())];
        if !self.insights.is_empty() {
            let list: Vec<String> = self.insights.iter().map(|i| format!("- {i}")).collect();
            messages.push(Message::user(format!(
                "Working memory (your insights, newest first):\n{}",
                list.join("\n")
            )));
        }
        if !self.history.is_empty() || !self.abandoned.is_empty() {
            messages.push(Message::user(self.handover(store)));
        }
        let mut stub_shown: Vec<&str> = Vec::new();
        for t in &self.transcript {
            let mut m = t.msg.clone();
            if let Some(id) = &t.stored
                && let Some(r) = store.get(id)
            {
                if elsewhere(id) || stub_shown.contains(&id.as_str()) {
                    m.text = r.pointer();
                } else {
                    shows.push((id.clone(), Form::Summary));
                    stub_shown.push(id);
                }
            }
            if let Some(id) = &t.fetched {
                shows.push((id.clone(), Form::Inline));
            }
            messages.push(m);
        }
        if !block.is_empty() {
            messages.push(Message::user(format!(
                "Data block: the stored results your next step depends on, fetched back exactly.\n{block}"
            )));
        }
        let mut system = base.to_string();
        if !store.refs.is_empty() {
            system.push_str(
                "\n\n## Data index (stored results; fetch_stored returns any of them exactly)\n",
            );
            for r in &store.refs {
                let shown = elsewhere(&r.id) || stub_shown.contains(&r.id.as_str());
                let whole = fetched.contains(&r.id.as_str());
                let where_ = if in_block.contains(&r.id.as_str()) {
                    Some("in the data block at the end")
                } else if whole {
                    Some("fetched whole in the transcript")
                } else if stub_shown.contains(&r.id.as_str()) {
                    Some("its summary is on its stub in the transcript")
                } else {
                    None
                };
                match (shown, where_) {
                    (true, Some(w)) => system
                        .push_str(&format!("- {} {}, {} chars ({w})\n", r.id, r.tool, r.chars)),
                    _ => {
                        // One line per ref: a multi-line summary would
                        // read as more entries.
                        system.push_str(&format!(
                            "- {} {}, {} chars: {}\n",
                            r.id,
                            r.tool,
                            r.chars,
                            crate::text::clip::clip(&r.summary.replace('\n', " / "), 300)
                        ));
                        shows.push((r.id.clone(), Form::Summary));
                    }
                }
            }
        }
        check(&shows)?;
        let text: String = std::iter::once(system.as_str())
            .chain(messages.iter().map(|m| m.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        check_text(&text, store, &stub_shown)?;
        let chars = system.chars().count() + messages.iter().map(Message::chars).sum::<usize>();
        Ok(Prompt {
            system,
            messages,
            chars,
            shows,
        })
    }

    /// Refs the model's last reply names (in its text or its arguments),
    /// which the next step depends on indirectly.
    fn mentioned(&self, store: &Store) -> Vec<String> {
        let Some(last) = self
            .transcript
            .iter()
            .rev()
            .find(|t| t.msg.speaker == Speaker::Assistant)
        else {
            return Vec::new();
        };
        let said = format!(
            "{} {}",
            last.msg.text,
            last.msg
                .calls
                .iter()
                .map(|c| c.arguments.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let words: Vec<&str> = said
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        store
            .refs
            .iter()
            .filter(|r| words.contains(&r.id.as_str()))
            .map(|r| r.id.clone())
            .collect()
    }

    /// The handover: the fixed schema of what folded turns did, history
    /// grouped by stage (a run of actions of one stage under one heading).
    fn handover(&self, store: &Store) -> String {
        let mut out = String::from(
            "Handover (earlier turns of this step, folded to save room; concrete values kept):\n\
             Original request: the task above, unchanged.\n\
             History by stage ([stage] → [what was done] → [result]):\n",
        );
        let mut stage = "";
        for e in &self.history {
            if e.stage != stage {
                stage = e.stage;
                out.push_str(&format!("- [{stage}]\n"));
            }
            out.push_str(&format!("  → {} → {}\n", e.did, e.result));
        }
        if !self.abandoned.is_empty() {
            out.push_str("Abandoned paths (and why):\n");
            for a in &self.abandoned {
                out.push_str(&format!("- {a}\n"));
            }
        }
        if !store.refs.is_empty() {
            let ids: Vec<String> = store
                .refs
                .iter()
                .map(|r| format!("{} ({})", r.id, r.tool))
                .collect();
            out.push_str(&format!(
                "Stored refs (see the data index): {}\n",
                ids.join(", ")
            ));
        }
        out
    }
}

fn tool_of<'a>(turns: &'a [Turn], call_id: &str) -> Option<&'a str> {
    turns
        .iter()
        .flat_map(|t| &t.msg.calls)
        .find(|c| c.id == call_id)
        .map(|c| c.name.as_str())
}

fn stage(tool: &str) -> &'static str {
    use super::tools::*;
    match tool {
        LIST | READ | SEARCH | FETCH => "explore",
        EDIT | WRITE => "change",
        RUN => "verify",
        INSIGHT => "note",
        _ => "other",
    }
}

fn one_line(s: &str, max: usize) -> String {
    let joined: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    crate::text::clip::clip(&joined.join(" / "), max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::llm::wire::ToolCall;
    use serde_json::json;

    fn round(m: &mut Memory, store: &mut Store, id: &str, tool: &str, result: &str) {
        m.transcript.push(Turn::plain(Message::assistant(
            "",
            vec![ToolCall {
                id: id.into(),
                name: tool.into(),
                arguments: json!({"path": id}),
            }],
        )));
        let mut t = Turn::plain(Message::tool(id, result, false));
        if Store::wants(tool, result, 8_000, 10) {
            let r = store.put(tool, result).unwrap().clone();
            t.msg.text = r.stub();
            t.stored = Some(r.id.clone());
            m.depends = vec![r.id];
        } else {
            m.depends.clear();
        }
        m.transcript.push(t);
    }

    #[test]
    fn a_ref_is_shown_once_inline_then_as_a_stub() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("task");
        let l = Layers::default();
        let list =
            serde_json::to_string(&(0..15).map(|i| format!("id-{i}")).collect::<Vec<_>>()).unwrap();
        round(&mut m, &mut s, "c1", "run_command", &list);
        let p = m.assemble("sys", &s, &l).unwrap();
        assert_eq!(p.shows, vec![("r1".to_string(), Form::Inline)]);
        let all: String = p.messages.iter().map(|m| m.text.clone()).collect();
        assert!(
            all.contains("id-14") && all.contains("in the data block below"),
            "{all}"
        );
        round(&mut m, &mut s, "c2", "read_file", "short");
        let p = m.assemble("sys", &s, &l).unwrap();
        assert_eq!(p.shows, vec![("r1".to_string(), Form::Summary)]);
    }

    #[test]
    fn two_forms_of_one_ref_are_refused() {
        let e = check(&[
            ("r1".into(), Form::Summary),
            ("r2".into(), Form::Inline),
            ("r1".into(), Form::Preview),
        ])
        .unwrap_err();
        assert_eq!(e.reference, "r1");
        assert!(e.to_string().contains("one form only"));
        // A fetched ref also left as a full stub elsewhere: the builder
        // shows the stub as a pointer rather than build such a prompt.
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("task");
        round(&mut m, &mut s, "c1", "run_command", &"x".repeat(9_000));
        m.depends.clear();
        let mut fetched = Turn::plain(Message::tool("c2", "x".repeat(100), false));
        fetched.fetched = Some("r1".into());
        m.transcript.push(fetched);
        let p = m.assemble("sys", &s, &Layers::default()).unwrap();
        assert_eq!(p.shows, vec![("r1".to_string(), Form::Inline)]);
    }

    #[test]
    fn paging_through_a_ref_is_one_form_but_an_echoed_summary_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("task");
        round(&mut m, &mut s, "c1", "run_command", &"x".repeat(9_000));
        m.depends.clear();
        for (i, page) in ["x".repeat(8_000), "x".repeat(1_000)]
            .into_iter()
            .enumerate()
        {
            let mut t = Turn::plain(Message::tool(&format!("f{i}"), page, false));
            t.fetched = Some("r1".into());
            m.transcript.push(t);
        }
        let p = m.assemble("sys", &s, &Layers::default()).unwrap();
        assert_eq!(
            p.shows.iter().filter(|(_, f)| *f == Form::Inline).count(),
            2
        );
        // A model that copies the stub it was shown into its own reply.
        let mut m = Memory::new("task");
        round(&mut m, &mut s, "c2", "run_command", &"y".repeat(9_000));
        m.depends.clear();
        let stub = s.get("r2").unwrap().stub();
        m.transcript.push(Turn::plain(Message::assistant(
            format!("I saw {stub}"),
            Vec::new(),
        )));
        let e = m.assemble("sys", &s, &Layers::default()).unwrap_err();
        assert_eq!(e.reference, "r2");
    }

    #[test]
    fn a_short_list_shown_whole_or_quoted_is_not_a_second_form() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("task");
        let l = Layers::default();
        let out = format!(
            "exit 0\n{}",
            serde_json::to_string(&(0..12).map(|i| format!("order-{i:03}")).collect::<Vec<_>>())
                .unwrap()
        );
        let (shown, store) = triage("run_command", &out, &l);
        assert!(store);
        let r = s.put("run_command", &out).unwrap().clone();
        if let Some(summary) = plain_summary("run_command", &out, &shown, &l) {
            s.set_summary(&r.id, summary);
        }
        assert!(
            s.get("r1").unwrap().summary.contains("12 items"),
            "{}",
            s.get("r1").unwrap().summary
        );
        m.transcript.push(Turn::plain(Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "run_command".into(),
                arguments: json!({}),
            }],
        )));
        let r = s.get("r1").unwrap().clone();
        let t = m.stored("c1", &r);
        m.transcript.push(t);
        m.assemble("sys", &s, &l)
            .expect("shown whole in the data block");
        // The model quotes the summary's words (not the stub) and fetches it whole.
        m.depends.clear();
        m.transcript.push(Turn::plain(Message::assistant(
            format!("as {} says", r.summary),
            Vec::new(),
        )));
        let mut f = Turn::plain(Message::tool("c2", out.clone(), false));
        f.fetched = Some("r1".into());
        m.transcript.push(f);
        m.assemble("sys", &s, &l)
            .expect("a quote and a whole fetch are fine");
    }

    #[test]
    fn l4_degrades_from_whole_to_enhanced_to_summary_within_its_budget() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("task");
        let l = Layers::default();
        let small =
            serde_json::to_string(&(0..12).map(|i| format!("v{i}")).collect::<Vec<_>>()).unwrap();
        let a = s.put("run_command", &small).unwrap().id.clone();
        let b = s
            .put("read_file", &"line\n".repeat(3_000))
            .unwrap()
            .id
            .clone();
        let c = s
            .put("read_file", &"other\n".repeat(3_000))
            .unwrap()
            .id
            .clone();
        m.depends = vec![a.clone(), b.clone()];
        // The model's last reply names c: an indirect dependency.
        m.transcript.push(Turn::plain(Message::assistant(
            format!("compare with {c}"),
            Vec::new(),
        )));
        let p = m.assemble("sys", &s, &l).unwrap();
        assert!(p.shows.contains(&(a, Form::Inline)), "{:?}", p.shows);
        assert!(p.shows.contains(&(b, Form::Enhanced)), "{:?}", p.shows);
        assert!(p.shows.contains(&(c, Form::Summary)), "{:?}", p.shows);
        let block = &p.messages.last().unwrap().text;
        assert!(
            block.chars().count() <= l.fetch_budget + 120,
            "{}",
            block.chars().count()
        );
    }

    #[test]
    fn folding_keeps_tool_pairs_six_messages_and_every_value() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("task");
        for i in 0..6 {
            round(
                &mut m,
                &mut s,
                &format!("c{i}"),
                "read_file",
                &format!("value-{i} {}", "y".repeat(400)),
            );
        }
        // Asking for 3 would leave a tool message first: 2 are folded.
        assert_eq!(m.split(3), 2);
        assert_eq!(m.split(1), 0, "at least 2 go");
        assert_eq!(m.split(100), 6, "at least 6 stay");
        m.fold(6, &mut s).unwrap();
        assert_eq!(m.transcript.len(), 6);
        assert_eq!(m.transcript[0].msg.speaker, Speaker::Assistant);
        let p = m.assemble("sys", &s, &Layers::default()).unwrap();
        let handover = &p.messages[1].text;
        assert!(
            handover.contains("- [explore]\n  → read_file {\"path\":\"c0\"} → stored as r1"),
            "{handover}"
        );
        assert!(s.contents("r1").unwrap().starts_with("value-0"));
    }

    #[test]
    fn compaction_folds_to_the_target_with_every_tool_pair_intact() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::new(d.path(), "r");
        let mut m = Memory::new("the task");
        let l = Layers::default();
        let window = 6_000; // tokens: 24,000 chars
        let mut compactions = 0;
        for i in 0..30 {
            // Results of 2,500 chars stay inline (under L1's 8,000).
            round(
                &mut m,
                &mut s,
                &format!("c{i}"),
                "read_file",
                &format!("id-{i:04} {}", "z".repeat(2_500)),
            );
            m.steps = i + 1;
            if let Some((before, after, removed)) = m
                .compact("sys", &mut s, &l, &Window::plain(window))
                .unwrap()
            {
                compactions += 1;
                assert!(before as f64 >= 0.85 * window as f64, "{before}");
                assert!(after < before && removed >= 2, "{after} {removed}");
                // Down to 30%, unless the rules keep it from folding more.
                assert!(
                    after as f64 <= 0.30 * window as f64 || m.split(2) == 0,
                    "{after}"
                );
            }
            let p = m.assemble("sys", &s, &l).unwrap();
            assert!(p.tokens() < window, "step {i}: {} tokens", p.tokens());
            // Every tool message answers a call in the same prompt.
            let calls: Vec<&str> = p
                .messages
                .iter()
                .flat_map(|m| &m.calls)
                .map(|c| c.id.as_str())
                .collect();
            for t in p.messages.iter().filter(|m| m.speaker == Speaker::Tool) {
                assert!(
                    calls.contains(&t.call_id.as_deref().unwrap()),
                    "step {i}: orphan {:?}",
                    t.call_id
                );
            }
            assert!(m.transcript.len() >= 6 || m.transcript.len() == 2 * (i as usize + 1));
        }
        assert!(compactions >= 2, "{compactions}");
        // Nothing seen is lost: the first result is one fetch away.
        let handover = m.assemble("sys", &s, &l).unwrap().messages[1].text.clone();
        assert!(
            handover.contains("→ read_file {\"path\":\"c0\"} → stored as"),
            "{handover}"
        );
        assert!(
            s.refs
                .iter()
                .any(|r| s.contents(&r.id).unwrap().starts_with("id-0000 "))
        );
    }

    #[test]
    fn the_window_shrinks_with_steps_but_not_below_eight() {
        let mut m = Memory::new("t");
        let l = Layers::default();
        assert_eq!(m.window(&l), 36);
        m.steps = 10;
        assert_eq!(m.window(&l), 28);
        m.steps = 40;
        assert_eq!(m.window(&l), 8);
    }

    #[test]
    fn insights_are_newest_first_and_bounded() {
        let mut m = Memory::new("t");
        let l = Layers {
            insights_max: 3,
            ..Layers::default()
        };
        for i in 0..5 {
            m.add_insight(&format!("fact {i}"), &l);
        }
        assert_eq!(m.insights, ["fact 4", "fact 3", "fact 2"]);
    }
}
