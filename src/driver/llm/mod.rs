//! The llm driver: ooda's own tool loop over HTTP.
//!
//! A command agent is a vendor CLI that owns its context; here ooda owns it.
//! One agent step (PLAN, EXECUTE, LEARN, or a subagent's turn) is a
//! conversation with a model behind an OpenAI-compatible Chat Completions
//! endpoint or Anthropic's Messages API, in which the model calls ooda's
//! tools (`tools.rs`) until it calls `finish` with the step's JSON answer.
//! The step then looks to the rest of ooda exactly like a command agent's
//! call (a `Reply`), so plan validation, retries of a rejected plan, the
//! fence and the outage wait are the same code for every agent.
//!
//! The context is built anew for every request (`context.rs`), with the
//! four layers applied in the order bloat happens: large tool results are
//! stored by reference (L1, `store.rs`), the largest are condensed by the
//! `light` tier (L2), old turns are folded into a structured handover (L3),
//! and refs the next step depends on are fetched back within a budget (L4).
//! One piece of data appears in a prompt in one form only: the builder
//! refuses a prompt that would show a ref twice.
//!
//! Requests retry as the official SDKs do (`retry.rs`); a final failure is
//! data in the iteration, never a panic. The API key is read from the
//! environment variable the tier names, at the moment a request is sent, and
//! is never written anywhere.

pub mod agent;
pub mod anthropic;
pub mod client;
pub mod context;
pub mod decision;
pub mod openai;
pub mod retry;
pub mod store;
pub mod tools;
pub mod wire;

pub use agent::LlmSetup;
