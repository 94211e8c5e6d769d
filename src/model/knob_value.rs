use std::collections::BTreeMap;
use std::fmt;

/// A knob's value. It travels as text (an environment variable, the knobs
/// file, a plan's JSON); `Display` is the exact text written.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum KnobValue {
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for KnobValue {
    /// The environment-variable text. Rust's float formatting is already the shortest
    /// text that reads back to the same `f64`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnobValue::Int(v) => write!(f, "{v}"),
            KnobValue::Float(v) => write!(f, "{v}"),
            KnobValue::Str(s) => f.write_str(s),
        }
    }
}

/// A point in knob space: knob name → value (ordered, so keys are stable).
pub type Point = BTreeMap<String, KnobValue>;
