//! `neutral`: a null change that stayed null falsifies nothing.
//!
//! A change its plan expected to change nothing (a clean-up, a rename, a
//! prediction below θ₁) that measured as no change would otherwise be filed
//! under falsified directions, telling every later PLAN never to tidy that
//! code again, on the evidence of a test that was never asked whether it
//! helps. Applied after the rule decided, by EVALUATE and by `replay`'s
//! re-measurement alike, so both name the same kind.

use crate::model::{DiscardKind, Plan};

/// Turns a futile or inconclusive discard of a null-by-design plan
/// ([`Plan::null_by_design`]) into `neutral`, saying why in its reason. A
/// worse verdict stands: a refactor that measurably hurt is a finding.
pub(crate) fn neutral(
    discard: &mut Option<DiscardKind>,
    reason: &mut String,
    plan: &Plan,
    theta1: f64,
) {
    use DiscardKind::{Futile, Inconclusive, Neutral};
    if !matches!(discard, Some(Futile | Inconclusive)) || !plan.null_by_design(theta1) {
        return;
    }
    *discard = Some(Neutral);
    reason.push_str(&format!(
        "; neutral: its plan expected no gain (predicted {}, θ₁ {:.1}%{}) and none was measured, so no direction is falsified",
        crate::text::number::effect(plan.predicted_effect),
        theta1 * 100.0,
        if plan.predicted_effect.abs() < theta1 {
            ""
        } else {
            ", axes name a clean-up"
        }
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: DiscardKind, predicted: f64) -> (Option<DiscardKind>, String) {
        let plan = Plan {
            predicted_effect: predicted,
            ..Plan::default()
        };
        let (mut d, mut r) = (Some(kind), "discarded: -0.1% [-2.8, +2.5]".to_string());
        neutral(&mut d, &mut r, &plan, 0.05);
        (d, r)
    }

    #[test]
    fn only_a_null_plan_measured_as_null_is_neutral() {
        for kind in [DiscardKind::Futile, DiscardKind::Inconclusive] {
            let (d, r) = check(kind, 0.0);
            assert_eq!(d, Some(DiscardKind::Neutral));
            assert!(
                r.ends_with(
                    "(predicted +0.0%, θ₁ 5.0%) and none was measured, so no direction is falsified"
                ),
                "{r}"
            );
        }
        // Measurably worse is a finding, whatever the plan expected.
        assert_eq!(check(DiscardKind::Worse, 0.0).0, Some(DiscardKind::Worse));
        // A plan that expected a gain was falsified.
        let (d, r) = check(DiscardKind::Futile, 0.1);
        assert_eq!(d, Some(DiscardKind::Futile));
        assert_eq!(r, "discarded: -0.1% [-2.8, +2.5]");
    }
}
