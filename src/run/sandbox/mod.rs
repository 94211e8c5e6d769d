//! The sandbox every command of a run lives in: what it may write, and that
//! nothing it starts outlives it.
//!
//! Why a sandbox and not only the fence: the fence (`run/fence/`) and the scope
//! check see what changed *after* a step, and a step that rewrites the
//! benchmark, the Brief or the user's git hooks, or leaves a `setsid` process
//! behind to do it later, wins against detection after the fact. So every
//! command ooda starts for a run — agent steps, and the setup, guards and
//! metric of both worktrees (the candidate's code is the agent's) — is started
//! through a small helper, ooda itself re-executed as `ooda __contain`:
//!
//! - **Landlock** (Linux ≥ 5.13, no root, no extra package). The helper
//!   puts the command in a Landlock domain it stays out of itself, so the
//!   command and everything it starts can write only beneath the paths of its
//!   [`Confinement`]: the worktree it runs in, a private temporary directory,
//!   the device files every program writes to, and what the configuration
//!   declares. Reading stays allowed everywhere. From ABI 6 on, signals and
//!   abstract UNIX sockets are scoped too: a sandboxed process cannot signal
//!   the helper, ooda or the user's programs.
//! - **Containment.** The helper is a child subreaper, so processes that
//!   double-fork or `setsid` away from the command's process group are
//!   re-parented to it rather than to init; when the command ends, by itself,
//!   by timeout or by cancellation, it kills every descendant that is left
//!   and reaps them all before it exits. It dies with its parent
//!   (`PR_SET_PDEATHSIG`), so a `kill -9` of ooda takes the step down with it.
//!
//! A helper process rather than `pre_exec`: the daemon runs Briefs on
//! threads, and between `fork` and `exec` of a multithreaded process nothing
//! may allocate, while building a ruleset does. The helper is a fresh,
//! single-threaded image; it is also the one process that stays to reap.
//!
//! The helper is ooda's own binary: [`set_helper`] is called once by `main`.
//! Code that runs without it (the library's unit tests) starts commands
//! directly, as before.

mod caps;
mod contain;
mod sockets;

pub(crate) use caps::describe as describe_capabilities;
pub(crate) use sockets::can_hide as can_hide_sockets;

use crate::model::{SandboxMode as Mode, SandboxSettings as Settings};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use contain::main as contain_main;

/// The hidden subcommand that makes the binary the helper.
pub const HELPER_ARG: &str = "__contain";

/// Caps the Landlock ABI ooda uses, to learn what an older kernel would
/// contain (the attack suite runs with it). Lowering it weakens the
/// sandbox; it never strengthens it.
pub(crate) const ABI_CAP_ENV: &str = "OODA_LANDLOCK_ABI_MAX";

/// Device files any program may open for writing (no ioctl): writing to
/// them changes no file. No terminal: a confined command has none.
pub(crate) const DEVICE_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

static HELPER: OnceLock<PathBuf> = OnceLock::new();

/// Records the binary that acts as the helper (ooda's own executable).
pub fn set_helper(path: PathBuf) {
    let _ = HELPER.set(path);
}

/// The helper binary, when this process is ooda.
pub(crate) fn helper() -> Option<&'static Path> {
    HELPER.get().map(PathBuf::as_path)
}

/// A fresh directory of one command's, under the system's temporary
/// directory, readable by this user only from its creation (the agent's
/// raw result and a step's `TMPDIR` live there), removed on drop.
pub(crate) struct PrivateDir(pub PathBuf);

impl PrivateDir {
    pub(crate) fn create(prefix: &str) -> std::io::Result<PrivateDir> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("{prefix}-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(PrivateDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("creating the private directory {}: {e}", dir.display()),
                    ));
                }
            }
        }
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// ooda's own children that `run/exec.rs` is running: anything else that is
/// ooda's child is an orphan a step left behind (see [`sweep_orphans`]).
static LIVE: std::sync::Mutex<std::collections::BTreeSet<u32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Makes ooda a child subreaper (`main` calls it): a process that escapes a
/// killed helper is re-parented to ooda, not to init, and is swept after
/// the next command (within a second after one whose helper ended by
/// itself: [`sweep_due`]). Without this, a command with no Landlock (which can
/// kill its helper) could leave processes running for the rest of the night.
pub fn become_subreaper() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong);
    }
}

/// Spawns `command` as a child `run/exec.rs` will wait for, registered so that a
/// sweep in another thread never mistakes it for an orphan.
pub(crate) fn spawn_registered(
    command: &mut std::process::Command,
) -> std::io::Result<std::process::Child> {
    let mut live = LIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let child = command.spawn()?;
    live.insert(child.id());
    Ok(child)
}

/// The child was waited for.
pub(crate) fn unregister(pid: u32) {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&pid);
}

/// How often, at most, a command whose helper ended by itself is followed
/// by a sweep: such a helper left nothing behind, but ooda is the subreaper
/// of what it starts without one (`git`, a notification's `sh`) too, and
/// an orphan of those is still found within about this time. A sweep reads
/// every process of the machine from `/proc` (with the helper's own scan,
/// 41 ms a run with 476 processes: `benches/run_overhead.rs`), so not
/// after every run.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// When the last sweep began.
static LAST_SWEEP: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);

/// Whether a command whose helper ended by itself is due a sweep
/// ([`SWEEP_EVERY`]).
pub(crate) fn sweep_due() -> bool {
    LAST_SWEEP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_none_or(|t| t.elapsed() >= SWEEP_EVERY)
}

/// Kills and reaps every child of ooda that `run/exec.rs` is not running: what
/// escaped a helper that was killed, or a command ooda started without one.
/// Each orphan's own children come to
/// ooda in turn and are swept in the next round. Returns how many it killed.
pub(crate) fn sweep_orphans() -> usize {
    *LAST_SWEEP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(std::time::Instant::now());
    let live = LIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let me = std::process::id();
    let mut killed = 0;
    for _round in 0..64 {
        let orphans: Vec<i32> = contain::children_of(me as i32)
            .into_iter()
            .filter(|p| !live.contains(&(*p as u32)))
            .collect();
        if orphans.is_empty() {
            break;
        }
        for p in &orphans {
            // SAFETY: plain syscalls on our own (unregistered) children;
            // waiting on each by pid never takes another thread's child.
            // Never a blocking wait under the lock: one orphan stuck in the
            // kernel must not stop every thread from starting commands.
            unsafe {
                libc::kill(*p, libc::SIGKILL);
                for _ in 0..50 {
                    let mut status = 0;
                    if libc::waitpid(*p, &mut status, libc::WNOHANG) != 0 {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
        }
        killed += orphans.len();
    }
    killed
}

/// The environment variable that marks every command of one tick.
pub(crate) const MARK_ENV: &str = "OODA_STEP";

/// The same mark under a name that says nothing of ooda, for measured
/// commands, which get none of ooda's `OODA_*` variables: what a killed
/// tick's benchmark left running is found by it all the same.
pub(crate) const MEASURED_MARK_ENV: &str = "STEP_TOKEN";

/// A fresh mark for this tick's commands.
pub(crate) fn new_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}-{nanos:x}", std::process::id())
}

/// SIGKILLs every process whose environment carries `mark` (what a tick
/// that was killed together with its helpers left running). Returns how
/// many. A process that cleared its environment is not found: Landlock, not
/// this, is what confines it.
pub(crate) fn kill_marked(mark: &str) -> usize {
    let needle = format!("{MARK_ENV}={mark}");
    let measured = format!("{MEASURED_MARK_ENV}={mark}");
    let me = std::process::id();
    let mut killed = 0;
    // In rounds, stopped before killed, so a forking process cannot leave
    // children born between a scan and its kill.
    for _round in 0..8 {
        let marked: Vec<u32> = std::fs::read_dir("/proc")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter(|pid| *pid != me)
                    .filter(|pid| {
                        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                            env.split(|b| *b == 0)
                                .any(|v| v == needle.as_bytes() || v == measured.as_bytes())
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        if marked.is_empty() {
            break;
        }
        for sig in [libc::SIGSTOP, libc::SIGKILL] {
            for pid in &marked {
                // SAFETY: plain syscall.
                unsafe { libc::kill(*pid as libc::pid_t, sig) };
            }
        }
        killed += marked.len();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed
}

/// The sandbox a run of `project` gets, `agent` naming its command agent
/// (none for the builtin driver): the same for a tick, `check --measure`,
/// `--preflight` and a replay, so what works in one works in the others.
pub(crate) fn for_project(
    project: &crate::project::Project,
    agent: Option<&str>,
) -> crate::error::Result<InForce> {
    project
        .config
        .sandbox
        .in_force(agent)
        .and_then(|s| s.refuse_wide(&project.root).map(|()| s))
        .map_err(|e| crate::error::Error::Input(format!("{}: {e}", crate::config::FILE_NAME)))
}

/// The sandbox a run gets, decided once per tick from the settings and the
/// kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InForce {
    /// The Landlock ABI commands are confined with; `None`: unconfined.
    pub abi: Option<i32>,
    /// `sandbox.writable`, expanded (entries naming unset variables left out).
    pub writable: Vec<PathBuf>,
    /// Why commands run unconfined, for `summary.md` and `ooda check`.
    pub warning: Option<String>,
}

impl Settings {
    /// The Landlock ABI a command agent's steps would be confined with.
    pub fn abi(&self) -> Option<i32> {
        match self.mode {
            Mode::Off => None,
            Mode::Auto | Mode::On => landlock_abi(),
        }
    }

    /// What a run gets. `agent` names the command agent the run would start
    /// (`None` for the builtin driver). Under `auto`, a run with an agent is
    /// confined, and refused where Landlock is missing; the builtin driver's
    /// commands are the user's own code with other knob values, so they run
    /// unconfined (still contained) unless `sandbox: on` asks otherwise.
    pub fn in_force(&self, agent: Option<&str>) -> Result<InForce, String> {
        self.in_force_with(agent, landlock_abi())
    }

    /// [`Settings::in_force`] on a kernel offering `found`.
    fn in_force_with(&self, agent: Option<&str>, found: Option<i32>) -> Result<InForce, String> {
        let writable = self.writable.iter().filter_map(|w| expand(w)).collect();
        let unconfined = |warning: Option<String>| InForce {
            abi: None,
            writable: Vec::new(),
            warning,
        };
        match (self.mode, agent) {
            (Mode::Off, _) => Ok(unconfined(Some(
                "`sandbox: off` in ooda.yaml: commands run without Landlock and can write anywhere the user can (their processes are still contained)".to_string(),
            ))),
            (Mode::Auto, None) => Ok(unconfined(None)),
            (Mode::On, _) | (Mode::Auto, Some(_)) => match found {
                Some(abi) => Ok(InForce {
                    abi: Some(abi),
                    writable,
                    warning: None,
                }),
                None if self.mode == Mode::On => Err(format!(
                    "`sandbox: on`, but {}: run on a kernel with Landlock (Linux 5.13 or later, `lsm=…,landlock` on the kernel command line), or set `sandbox: off` to run unconfined",
                    no_landlock_reason()
                )),
                None => Err(format!(
                    "{}, and agent `{}` is not run unconfined: enable Landlock (Linux 5.13 or later, `lsm=…,landlock` on the kernel command line), or set `sandbox: off` in ooda.yaml to run it anyway (summary.md will say so)",
                    no_landlock_reason(),
                    agent.unwrap_or_default()
                )),
            },
        }
    }
}

impl InForce {
    /// Refuses a grant that would undo the sandbox: a writable path that is
    /// the project or holds it (`~`, `/`, `$HOME`) would make the checkout,
    /// the Briefs and the git directory writable again.
    pub fn refuse_wide(&self, root: &Path) -> Result<(), String> {
        if let Some(w) = wide_grant(&self.writable, root) {
            return Err(format!(
                "sandbox.writable: {} holds the project ({}), so granting it would make the checkout, the Briefs and the git directory writable: grant the cache directories themselves (e.g. ~/.cargo/registry)",
                w.display(),
                root.display()
            ));
        }
        // Nor what the sandbox exists to keep read-only, granted directly.
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let root = canon(root);
        let kept: Vec<PathBuf> = [".git", "briefs", "iterations", "ooda.yaml"]
            .iter()
            .map(|k| root.join(k))
            .collect();
        for w in &self.writable {
            let w = canon(w);
            if let Some(k) = kept.iter().find(|k| w.starts_with(k)) {
                return Err(format!(
                    "sandbox.writable: {} is inside {}, which the sandbox keeps read-only so that no command can rewrite the repository, a Brief or the archive: remove the entry",
                    w.display(),
                    k.display()
                ));
            }
        }
        Ok(())
    }
}

/// The first of `grants` that is `root` or one of its ancestors.
pub(crate) fn wide_grant<'a>(grants: &'a [PathBuf], root: &Path) -> Option<&'a PathBuf> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    grants.iter().find(|w| {
        let w = w.canonicalize().unwrap_or_else(|_| w.to_path_buf());
        root.starts_with(&w)
    })
}

fn no_landlock_reason() -> String {
    match std::env::var(ABI_CAP_ENV) {
        Ok(v) if v.trim().parse::<i32>().is_ok_and(|c| c < 1) => {
            format!("Landlock is turned off by {ABI_CAP_ENV}={}", v.trim())
        }
        _ => "this kernel offers no Landlock".to_string(),
    }
}

/// What one command may write, as the helper enforces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Confinement {
    /// The Landlock ABI used (≥ 1).
    pub abi: i32,
    /// Writable beneath each of these; everything else is read-only.
    pub writable: Vec<PathBuf>,
}

/// The Landlock ABI this kernel offers, capped by [`ABI_CAP_ENV`]; `None`
/// when Landlock is not built in or not enabled.
pub fn landlock_abi() -> Option<i32> {
    // SAFETY: the version query takes no ruleset and writes nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v < 1 {
        return None;
    }
    let v = v as i32;
    let cap = std::env::var(ABI_CAP_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    match cap {
        Some(c) if c < 1 => None,
        Some(c) => Some(v.min(c)),
        None => Some(v),
    }
}

/// What an attack needs from Landlock, by ABI: docs/sandbox.md's table of what
/// older kernels cannot contain comes from running the suite at each cap.
pub(crate) fn abi_gaps(abi: i32) -> Vec<&'static str> {
    let mut gaps = Vec::new();
    if abi < 3 {
        gaps.push("truncate(2) of a read-only file (the Brief, the archive) is not denied (ABI 3)");
    }
    if abi < 5 {
        gaps.push("ioctl on device files is not controlled (ABI 5)");
    }
    if abi < 6 {
        gaps.push("signals to processes outside the sandbox (ooda itself, the user's programs) are not denied (ABI 6)");
    }
    gaps
}

/// Expands `~` and `$VAR`/`${VAR}` in a configured path. An unset variable
/// makes the whole path unusable (`None`): granting `/` instead of
/// `$GOCACHE/` would be the opposite of what was asked.
pub(crate) fn expand(raw: &str) -> Option<PathBuf> {
    expand_with(raw, |name| std::env::var(name).ok())
}

/// [`expand`] with variables looked up by `var` (a profile's `env` before
/// the process environment).
pub(crate) fn expand_with(raw: &str, var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let home = || var("HOME").map(PathBuf::from);
    let mut out = String::new();
    let rest = if raw == "~" {
        return home();
    } else if let Some(r) = raw.strip_prefix("~/") {
        out.push_str(home()?.to_str()?);
        out.push('/');
        r
    } else {
        raw
    };
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let braced = chars.peek() == Some(&'{');
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphanumeric() || n == '_' {
                name.push(n);
                chars.next();
            } else {
                break;
            }
        }
        if braced && chars.next() != Some('}') {
            return None;
        }
        if name.is_empty() {
            out.push('$');
            continue;
        }
        let value = var(&name).filter(|v| !v.is_empty())?;
        out.push_str(&value);
    }
    Some(PathBuf::from(out))
}

/// The helper's command line for running `sh -c command` under `confine`
/// (or contained only, with `None`). `parent` is the pid the helper checks
/// it still belongs to.
pub(crate) fn helper_args(
    confine: Option<&Confinement>,
    parent: u32,
    command: &str,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        HELPER_ARG.into(),
        "--parent".into(),
        parent.to_string().into(),
    ];
    if let Some(c) = confine {
        args.push("--abi".into());
        args.push(c.abi.to_string().into());
        for w in &c.writable {
            args.push("--write".into());
            args.push(w.clone().into_os_string());
        }
    }
    args.extend(["--".into(), "sh".into(), "-c".into(), command.into()]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_of_home_and_variables() {
        let home = std::env::var("HOME").unwrap();
        assert_eq!(
            expand("~/.cargo"),
            Some(PathBuf::from(format!("{home}/.cargo")))
        );
        assert_eq!(expand("~"), Some(PathBuf::from(&home)));
        assert_eq!(expand("$HOME/x"), Some(PathBuf::from(format!("{home}/x"))));
        assert_eq!(
            expand("${HOME}/y"),
            Some(PathBuf::from(format!("{home}/y")))
        );
        assert_eq!(expand("/a/b"), Some(PathBuf::from("/a/b")));
        // An unset variable must not widen the grant to the parent directory.
        assert_eq!(expand("$OODA_SURELY_UNSET_VAR_123/cache"), None);
        assert_eq!(expand("${HOME"), None);
        assert_eq!(expand("a$"), Some(PathBuf::from("a$")));
    }

    #[test]
    fn the_helper_line_carries_the_policy_then_the_command() {
        let c = Confinement {
            abi: 5,
            writable: vec![PathBuf::from("/w"), PathBuf::from("/t")],
        };
        let args = helper_args(Some(&c), 42, "echo hi");
        let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            args,
            [
                "__contain",
                "--parent",
                "42",
                "--abi",
                "5",
                "--write",
                "/w",
                "--write",
                "/t",
                "--",
                "sh",
                "-c",
                "echo hi"
            ]
        );
        let bare = helper_args(None, 1, "true");
        assert!(!bare.iter().any(|a| a == "--abi"));
    }

    #[test]
    fn agents_are_confined_or_refused_and_off_is_said() {
        let s = |mode| Settings {
            mode,
            writable: vec!["/c".into(), "$OODA_SURELY_UNSET_VAR_123/x".into()],
        };
        let f = s(Mode::Auto)
            .in_force_with(Some("claude"), Some(7))
            .unwrap();
        assert_eq!(f.abi, Some(7));
        // An entry naming an unset variable is left out, not widened.
        assert_eq!(f.writable, [PathBuf::from("/c")]);
        let e = s(Mode::Auto)
            .in_force_with(Some("claude"), None)
            .unwrap_err();
        assert!(
            e.contains("agent `claude` is not run unconfined") && e.contains("sandbox: off"),
            "{e}"
        );
        let b = s(Mode::Auto).in_force_with(None, Some(7)).unwrap();
        assert_eq!((b.abi, b.warning), (None, None));
        assert_eq!(
            s(Mode::On).in_force_with(None, Some(3)).unwrap().abi,
            Some(3)
        );
        assert!(s(Mode::On).in_force_with(None, None).is_err());
        let off = s(Mode::Off).in_force_with(Some("claude"), Some(7)).unwrap();
        assert_eq!(off.abi, None);
        assert!(off.warning.unwrap().contains("sandbox: off"));
    }

    #[test]
    fn a_grant_holding_the_project_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("cache")).unwrap();
        let f = |w: Vec<PathBuf>| InForce {
            abi: Some(7),
            writable: w,
            warning: None,
        };
        assert!(f(vec![root.join("cache")]).refuse_wide(&root).is_ok());
        assert!(f(vec![PathBuf::from("/opt/x")]).refuse_wide(&root).is_ok());
        let e = f(vec![dir.path().to_path_buf()])
            .refuse_wide(&root)
            .unwrap_err();
        assert!(e.contains("holds the project"), "{e}");
        assert!(f(vec![PathBuf::from("/")]).refuse_wide(&root).is_err());
        assert!(f(vec![root.clone()]).refuse_wide(&root).is_err());
        for inside in [".git/hooks", "briefs", "iterations/b", "ooda.yaml"] {
            let e = f(vec![root.join(inside)]).refuse_wide(&root).unwrap_err();
            assert!(e.contains("keeps read-only"), "{inside}: {e}");
        }
        // A file of the checkout granted on purpose (a benchmark's counter) is fine.
        assert!(f(vec![root.join("counter")]).refuse_wide(&root).is_ok());
    }

    #[test]
    fn older_abis_name_their_gaps() {
        assert!(abi_gaps(7).is_empty());
        assert_eq!(abi_gaps(5).len(), 1);
        assert_eq!(abi_gaps(1).len(), 3);
    }
}
