//! Where a Brief's measurements run (`executor:`), and what ooda asks Slurm
//! for when they run there (`slurm:`).

use std::time::Duration;

/// `executor:` in a Brief, or `defaults.executor` in `ooda.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Every command on this machine.
    #[default]
    Local,
    /// Setup, guards and timed runs inside one Slurm allocation per phase;
    /// agent steps stay here (compute nodes often cannot reach a model API).
    Slurm,
}

impl Placement {
    pub fn parse(text: &str) -> Option<Placement> {
        match text {
            "local" => Some(Placement::Local),
            "slurm" => Some(Placement::Slurm),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Local => "local",
            Placement::Slurm => "slurm",
        }
    }
}

/// `slurm:` in `ooda.yaml` (a Brief's own `slurm:` overrides it key by key):
/// passed to `sbatch` as its options of the same names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlurmSettings {
    pub partition: Option<String>,
    pub account: Option<String>,
    /// `--gres`, e.g. `gpu:1`.
    pub gres: Option<String>,
    /// `--constraint`: pin measurements to one node type, since the pooled
    /// noise and the divergence light assume one machine.
    pub constraint: Option<String>,
    /// `--time` of one phase's allocation (rounded up to whole minutes).
    pub time: Option<Duration>,
    /// `--cpus-per-task` of the allocation and of every step (Slurm gives
    /// one CPU otherwise).
    pub cpus: Option<u32>,
    /// Further `sbatch` arguments, as given.
    pub args: Vec<String>,
    /// How long a controller that does not answer is waited for before
    /// the phase is parked (not an sbatch option).
    pub controller_wait: Option<Duration>,
    /// How long a measurement's job may stay pending (a drained node, a
    /// full partition) before the phase is parked (not an sbatch option).
    pub pending_limit: Option<Duration>,
}

impl SlurmSettings {
    /// These settings with `over`'s keys where it has them.
    pub fn overridden_by(&self, over: &SlurmSettings) -> SlurmSettings {
        let pick = |a: &Option<String>, b: &Option<String>| b.clone().or_else(|| a.clone());
        SlurmSettings {
            partition: pick(&self.partition, &over.partition),
            account: pick(&self.account, &over.account),
            gres: pick(&self.gres, &over.gres),
            constraint: pick(&self.constraint, &over.constraint),
            time: over.time.or(self.time),
            cpus: over.cpus.or(self.cpus),
            controller_wait: over.controller_wait.or(self.controller_wait),
            pending_limit: over.pending_limit.or(self.pending_limit),
            args: if over.args.is_empty() {
                self.args.clone()
            } else {
                over.args.clone()
            },
        }
    }

    /// The `sbatch` options these settings stand for.
    pub fn sbatch_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, v) in [
            ("--partition", &self.partition),
            ("--account", &self.account),
            ("--gres", &self.gres),
            ("--constraint", &self.constraint),
        ] {
            if let Some(v) = v {
                out.push(format!("{flag}={v}"));
            }
        }
        if let Some(c) = self.cpus {
            out.push(format!("--cpus-per-task={c}"));
        }
        if let Some(t) = self.time {
            out.push(format!("--time={}", t.as_secs().div_ceil(60).max(1)));
        }
        out.extend(self.args.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_briefs_keys_override_the_projects_and_become_sbatch_options() {
        let project = SlurmSettings {
            partition: Some("cpu".into()),
            account: Some("lab".into()),
            time: Some(Duration::from_secs(90)),
            args: vec!["--qos=low".into()],
            ..SlurmSettings::default()
        };
        let brief = SlurmSettings {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            ..SlurmSettings::default()
        };
        assert_eq!(
            project.overridden_by(&brief).sbatch_args(),
            [
                "--partition=gpu",
                "--account=lab",
                "--gres=gpu:1",
                "--time=2",
                "--qos=low"
            ]
        );
        assert_eq!(Placement::parse("slurm"), Some(Placement::Slurm));
        assert_eq!(Placement::parse("cluster"), None);
    }
}
