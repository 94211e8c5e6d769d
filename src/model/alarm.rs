use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::StopReason;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Yellow,
    Red,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Yellow => "YELLOW",
            Level::Red => "RED",
        }
    }
}

/// What an alarm is about. Only kinds the runner raises can stop a run: an
/// archive written by a newer ooda (or edited by hand) may carry a kind this
/// one does not know, which is kept as written and stops nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmKind {
    // Red-light detectors (see `eval/redlight.rs`).
    ExactCycle,
    DirectionFlips,
    Divergence,
    Regressions,
    PredictionsUnreliable,
    PredictionsBiased,
    FailureStreak,
    AgentIneffective,
    Scope,
    /// An unconfined agent step changed the user's checkout, refs, git
    /// config or hooks, a Brief or ooda.yaml.
    Tamper,
    // The alarm CHECK files under the stop a red light caused, named after
    // the stop reason (`red_oscillation` → `oscillation`).
    Oscillation,
    ModelMismatch,
    // Warnings.
    MachineDrift,
    Plateau,
    IdenticalCandidate,
    NoiseChanged,
    /// A kind this version does not know, as written.
    Other(String),
}

impl AlarmKind {
    const KNOWN: [AlarmKind; 16] = [
        AlarmKind::ExactCycle,
        AlarmKind::DirectionFlips,
        AlarmKind::Divergence,
        AlarmKind::Regressions,
        AlarmKind::PredictionsUnreliable,
        AlarmKind::PredictionsBiased,
        AlarmKind::FailureStreak,
        AlarmKind::AgentIneffective,
        AlarmKind::Scope,
        AlarmKind::Tamper,
        AlarmKind::Oscillation,
        AlarmKind::ModelMismatch,
        AlarmKind::MachineDrift,
        AlarmKind::Plateau,
        AlarmKind::IdenticalCandidate,
        AlarmKind::NoiseChanged,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            AlarmKind::ExactCycle => "exact_cycle",
            AlarmKind::DirectionFlips => "direction_flips",
            AlarmKind::Divergence => "divergence",
            AlarmKind::Regressions => "regressions",
            AlarmKind::PredictionsUnreliable => "predictions_unreliable",
            AlarmKind::PredictionsBiased => "predictions_biased",
            AlarmKind::FailureStreak => "failure_streak",
            AlarmKind::AgentIneffective => "agent_ineffective",
            AlarmKind::Scope => "scope",
            AlarmKind::Tamper => "tamper",
            AlarmKind::Oscillation => "oscillation",
            AlarmKind::ModelMismatch => "model_mismatch",
            AlarmKind::MachineDrift => "machine_drift",
            AlarmKind::Plateau => "plateau",
            AlarmKind::IdenticalCandidate => "identical_candidate",
            AlarmKind::NoiseChanged => "noise_changed",
            AlarmKind::Other(s) => s,
        }
    }

    pub fn parse(text: &str) -> AlarmKind {
        AlarmKind::KNOWN
            .into_iter()
            .find(|k| k.as_str() == text)
            .unwrap_or_else(|| AlarmKind::Other(text.to_string()))
    }

    /// The stop a RED alarm of this kind ends the run with; `None` for
    /// warnings and for kinds this version does not know.
    pub fn stop_reason(&self) -> Option<StopReason> {
        Some(match self {
            AlarmKind::ExactCycle | AlarmKind::DirectionFlips | AlarmKind::Oscillation => {
                StopReason::RedOscillation
            }
            AlarmKind::Divergence | AlarmKind::Regressions => StopReason::RedDivergence,
            AlarmKind::PredictionsUnreliable
            | AlarmKind::PredictionsBiased
            | AlarmKind::ModelMismatch => StopReason::RedModelMismatch,
            AlarmKind::FailureStreak => StopReason::RedFailureStreak,
            AlarmKind::AgentIneffective => StopReason::RedAgentIneffective,
            AlarmKind::Scope => StopReason::RedScope,
            AlarmKind::Tamper => StopReason::RedTamper,
            AlarmKind::Other(k) if k == "anomaly" => StopReason::RedAnomaly,
            AlarmKind::MachineDrift
            | AlarmKind::Plateau
            | AlarmKind::IdenticalCandidate
            | AlarmKind::NoiseChanged
            | AlarmKind::Other(_) => return None,
        })
    }

    /// The alarm filed under a red stop (`red_scope` → `scope`); `None` for
    /// stops that are not red.
    pub fn for_stop(reason: StopReason) -> Option<AlarmKind> {
        Some(match reason {
            StopReason::RedOscillation => AlarmKind::Oscillation,
            StopReason::RedDivergence => AlarmKind::Divergence,
            StopReason::RedModelMismatch => AlarmKind::ModelMismatch,
            StopReason::RedFailureStreak => AlarmKind::FailureStreak,
            StopReason::RedAgentIneffective => AlarmKind::AgentIneffective,
            StopReason::RedScope => AlarmKind::Scope,
            StopReason::RedTamper => AlarmKind::Tamper,
            StopReason::RedAnomaly => AlarmKind::Other("anomaly".into()),
            StopReason::GoalReached
            | StopReason::BudgetIterations
            | StopReason::BudgetWall
            | StopReason::BudgetCost
            | StopReason::BudgetTokens
            | StopReason::Stalled
            | StopReason::Interrupted => return None,
        })
    }
}

impl fmt::Display for AlarmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AlarmKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AlarmKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AlarmKind, D::Error> {
        Ok(AlarmKind::parse(&String::deserialize(d)?))
    }
}

/// A red light or a warning raised by CHECK (or by EVALUATE).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    pub level: Level,
    pub kind: AlarmKind,
    /// The evidence in words, with the numbers and iterations.
    pub evidence: String,
}

impl Alarm {
    pub fn red(kind: AlarmKind, evidence: String) -> Alarm {
        Alarm {
            level: Level::Red,
            kind,
            evidence,
        }
    }

    pub fn yellow(kind: AlarmKind, evidence: String) -> Alarm {
        Alarm {
            level: Level::Yellow,
            kind,
            evidence,
        }
    }

    /// The stop reason a RED alarm ends the run with.
    pub fn stop_reason(&self) -> Option<StopReason> {
        (self.level == Level::Red)
            .then(|| self.kind.stop_reason())
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknown_ones_stop_nothing() {
        for k in AlarmKind::KNOWN {
            assert_eq!(AlarmKind::parse(k.as_str()), k);
        }
        let a: Alarm =
            serde_json::from_str(r#"{"level":"RED","kind":"new_detector","evidence":"x"}"#)
                .unwrap();
        assert_eq!(a.kind, AlarmKind::Other("new_detector".into()));
        assert_eq!(
            a.stop_reason(),
            None,
            "an unknown kind must not become red_scope"
        );
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"level":"RED","kind":"new_detector","evidence":"x"}"#
        );
    }

    #[test]
    fn every_red_stop_has_its_alarm_and_back() {
        for r in StopReason::ALL {
            match AlarmKind::for_stop(r) {
                Some(k) => assert_eq!(k.stop_reason(), Some(r)),
                None => assert!(!r.is_red(), "{r:?}"),
            }
        }
        assert_eq!(
            Alarm::yellow(AlarmKind::Scope, String::new()).stop_reason(),
            None
        );
    }
}
