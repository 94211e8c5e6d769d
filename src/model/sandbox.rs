/// `sandbox.mode` in `ooda.yaml`. What each grants is `run/sandbox/`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Landlock for every run with a command agent, which refuses to start
    /// where the kernel has none; the builtin driver's runs, whose
    /// candidates are the user's own code with other knob values, are
    /// contained but not confined.
    #[default]
    Auto,
    /// Landlock for every run, the builtin driver's too, or nothing runs.
    On,
    /// No Landlock, said explicitly; `summary.md` carries a warning.
    /// Processes are still contained.
    Off,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::On => "on",
            SandboxMode::Off => "off",
        }
    }
}

/// The project's sandbox settings (`sandbox:` in `ooda.yaml`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// Writable for every command (caches: `~/.cargo`, `GOCACHE`, pip's),
    /// as written: `~` and `$VAR` are expanded when a command starts.
    pub writable: Vec<String>,
}
