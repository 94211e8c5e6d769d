//! `ooda __contain`: the helper process that a command runs under.
//!
//! Its life: die with its parent, become a child subreaper, start `sh -c …`
//! in its own process group (the group `exec.rs` signals) inside a Landlock
//! domain the helper itself stays out of, wait, then kill and reap every
//! descendant left, and exit as the command did.
//!
//! Signals it understands, from `exec.rs` or the kernel:
//! - SIGTERM, SIGINT, SIGHUP: the command's group got it too; the helper
//!   passes SIGTERM on to descendants that left the group (`setsid`), so a
//!   cancellation gives them the same chance to clean up.
//! - SIGUSR1: stop now (timeout, end of the grace period, or the parent's
//!   death through `PR_SET_PDEATHSIG`): everything below is SIGKILLed.
//!
//! Exit codes of its own (the command's are passed through): 125 when the
//! sandbox could not be applied (the message says why), 126 when the
//! command could not be started.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::DEVICE_FILES;

static TERM: AtomicBool = AtomicBool::new(false);
static KILL: AtomicBool = AtomicBool::new(false);

/// Exit code when the sandbox cannot be applied.
pub(super) const SANDBOX_FAILED: i32 = 125;

struct Args {
    parent: Option<i32>,
    abi: Option<i32>,
    writable: Vec<PathBuf>,
    argv: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut out = Args {
        parent: None,
        abi: None,
        writable: Vec::new(),
        argv: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.to_str() {
            Some("--parent") => {
                out.parent = Some(number(&value("--parent")?)?);
            }
            Some("--abi") => out.abi = Some(number(&value("--abi")?)?),
            Some("--write") => out.writable.push(PathBuf::from(value("--write")?)),
            Some("--") => {
                out.argv = it.cloned().collect();
                break;
            }
            _ => return Err(format!("unexpected argument {}", a.to_string_lossy())),
        }
    }
    if out.argv.is_empty() {
        return Err("no command after --".into());
    }
    Ok(out)
}

fn number(s: &OsStr) -> Result<i32, String> {
    s.to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not a number: {}", s.to_string_lossy()))
}

/// The helper's `main`: `args` are those after `__contain`.
pub fn main(args: &[OsString]) -> i32 {
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ooda __contain: {e} (this subcommand is ooda's own helper)");
            return 2;
        }
    };
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1 as libc::c_ulong);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong);
    }
    install_handlers();
    // The parent may have died before PR_SET_PDEATHSIG took effect.
    if args.parent.is_some_and(|p| p != unsafe { libc::getppid() }) {
        eprintln!("ooda: the process that started this command has exited; not starting it");
        return SANDBOX_FAILED;
    }
    // The ruleset is built here and enforced in the child only: the helper
    // stays outside the command's Landlock domain, so from ABI 6 on the
    // command can signal neither it nor ooda, and cannot kill its way out
    // of containment.
    let ruleset = match args.abi.map(|abi| ruleset(abi, &args.writable)).transpose() {
        Ok(r) => std::sync::Mutex::new(r),
        Err(e) => {
            eprintln!("ooda: the sandbox could not be applied: {e}");
            return SANDBOX_FAILED;
        }
    };
    let mut command = Command::new(&args.argv[0]);
    command.args(&args.argv[1..]);
    // A confined command does not reach the user's servers (tmux, D-Bus,
    // X, the ssh agent): their folders are hidden in its own mount
    // namespace, and the variables that name them are dropped.
    let confined = args.abi.is_some();
    let (hidden, hidden_files) = if confined {
        let mut keep = args.writable.clone();
        keep.extend(std::env::current_dir().ok());
        let servers = super::sockets::servers(&keep);
        (
            super::sockets::c_paths(&servers.folders),
            super::sockets::c_paths(&servers.files),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let maps = super::sockets::Maps::of_this_process();
    if confined {
        for v in super::sockets::SOCKET_ENV {
            command.env_remove(v);
        }
    }
    // SAFETY: the helper is single-threaded, so the forked child may lock
    // and allocate; the closure resets the dispositions the helper changed
    // and enters the Landlock domain.
    unsafe {
        command.pre_exec(move || {
            for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR1] {
                libc::signal(s, libc::SIG_DFL);
            }
            // Before the capabilities go: as root, a mount namespace needs
            // CAP_SYS_ADMIN. Where none can be had the gap stays (documented).
            if super::sockets::hide(&hidden, &hidden_files, &maps) == super::sockets::Hidden::Broken
            {
                // Half a namespace: the command would not run as the user,
                // or would see a server's folder. It does not run.
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
            super::caps::drop_privileges()?;
            let taken = ruleset
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            if let Some(r) = taken {
                // No controlling terminal: a confined command must not push
                // keystrokes into the shell that runs after ooda (TIOCSTI).
                // Its new session is still below the helper, which signals
                // and reaps it like any descendant.
                libc::setsid();
                let status = r.restrict_self().map_err(std::io::Error::other)?;
                if status.ruleset == RulesetStatus::NotEnforced {
                    return Err(std::io::Error::other(
                        "the kernel did not enforce the Landlock ruleset",
                    ));
                }
            }
            Ok(())
        });
    }
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "ooda: could not start {}: {e}",
                args.argv[0].to_string_lossy()
            );
            return 126;
        }
    };
    let child_pid = child.id() as libc::pid_t;
    // The std handle is not used to wait: waitpid(-1) below reaps orphans too.
    std::mem::forget(child);
    let status = supervise(child_pid);
    kill_all_descendants();
    exit_like(status)
}

/// Waits for the command; reaps orphans meanwhile; acts on signals.
/// `None` when told to stop before the command ended.
fn supervise(child: libc::pid_t) -> Option<libc::c_int> {
    let mut forwarded = false;
    loop {
        if KILL.load(Ordering::SeqCst) {
            return None;
        }
        if TERM.load(Ordering::SeqCst) && !forwarded {
            forwarded = true;
            // SAFETY: plain syscall.
            let own = unsafe { libc::getpgrp() };
            for p in descendants() {
                if p.pgrp != own {
                    // SAFETY: plain syscall on a descendant.
                    unsafe { libc::kill(p.pid, libc::SIGTERM) };
                }
            }
        }
        let mut status: libc::c_int = 0;
        // SAFETY: waits for any child, writing into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == child {
            return Some(status);
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            return None;
        }
    }
}

/// SIGKILLs every process below the helper until none is left, reaping
/// as it goes: the killed processes' own children are re-parented here
/// (the helper is their subreaper), so when `waitpid` reports no children
/// there is nothing left anywhere below.
fn kill_all_descendants() {
    loop {
        // No child of the helper, living or not, means nothing below it:
        // every orphan below is re-parented here (the helper is their
        // subreaper), so a living descendant has a chain of parents up to
        // a child of the helper. The usual end of a command, asked of the
        // kernel before reading every process of the machine from /proc
        // (that scan, and ooda's own after each run, made a run's overhead
        // 54.7 ms instead of 13.2 with 476 processes on the machine:
        // `benches/run_overhead.rs`).
        if no_children() {
            return;
        }
        // Stopped first, so none of them forks again between the scan and
        // its SIGKILL; then killed.
        let alive: Vec<Proc> = descendants()
            .into_iter()
            .filter(|p| p.state != b'Z')
            .collect();
        for p in &alive {
            // SAFETY: plain syscall on a descendant.
            unsafe { libc::kill(p.pid, libc::SIGSTOP) };
        }
        for p in &alive {
            // SAFETY: as above.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
        }
        // Wait for one to end (none left: ECHILD, and the next round's
        // look returns); the next round reaps the rest that are ready.
        let mut status: libc::c_int = 0;
        // SAFETY: as in `supervise`.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                _ => return,
            }
        }
    }
}

/// Reaps every child that has ended; whether none is left at all.
fn no_children() -> bool {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: as in `supervise`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            continue;
        }
        return pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD);
    }
}

/// Exits as the command did: its code, or death by its signal.
fn exit_like(status: Option<libc::c_int>) -> i32 {
    let Some(status) = status else {
        return 128 + libc::SIGKILL;
    };
    if libc::WIFEXITED(status) {
        return libc::WEXITSTATUS(status);
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: resetting a disposition and raising a signal on ourselves;
        // no core file for the helper (the command's core, if any, is made).
        unsafe {
            let limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &limit);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
        return 128 + sig;
    }
    1
}

extern "C" fn on_term(_: libc::c_int) {
    TERM.store(true, Ordering::SeqCst);
}

extern "C" fn on_kill(_: libc::c_int) {
    KILL.store(true, Ordering::SeqCst);
}

fn install_handlers() {
    for (sig, handler) in [
        (libc::SIGTERM, on_term as extern "C" fn(libc::c_int)),
        (libc::SIGINT, on_term),
        (libc::SIGHUP, on_term),
        (libc::SIGUSR1, on_kill),
    ] {
        // SAFETY: a handler that only stores to an atomic; no SA_RESTART, so
        // a blocked waitpid returns EINTR and the loop looks at the flags.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = 0;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The Landlock ruleset of a command: writes only beneath `writable` and the
/// device files; reads everywhere; from ABI 6, signals and abstract sockets
/// scoped to the sandbox.
fn ruleset(abi: i32, writable: &[PathBuf]) -> Result<RulesetCreated, String> {
    let abi = ABI::from(abi);
    let write = AccessFs::from_write(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write)
        .map_err(|e| e.to_string())?;
    let scope = Scope::from_all(abi);
    if !scope.is_empty() {
        ruleset = ruleset.scope(scope).map_err(|e| e.to_string())?;
    }
    ruleset
        .create()
        .map_err(|e| e.to_string())?
        .set_compatibility(CompatLevel::BestEffort)
        // Never a device beneath a grant: a root command would make one
        // over the disk that holds the user's checkout.
        .add_rules(path_beneath_rules(
            writable,
            write & !(AccessFs::MakeChar | AccessFs::MakeBlock),
        ))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(
            DEVICE_FILES,
            write & (AccessFs::WriteFile | AccessFs::Truncate),
        ))
        .map_err(|e| e.to_string())
}

struct Proc {
    pid: libc::pid_t,
    ppid: libc::pid_t,
    pgrp: libc::pid_t,
    state: u8,
}

/// Every process below this one, from `/proc`.
fn descendants() -> Vec<Proc> {
    // SAFETY: plain syscall.
    let me = unsafe { libc::getpid() };
    let all = processes();
    let mut below = vec![me];
    let mut out = Vec::new();
    // Parents before children is not guaranteed by /proc's order: iterate
    // to a fixed point.
    let mut taken = vec![false; all.len()];
    loop {
        let mut grew = false;
        for (i, p) in all.iter().enumerate() {
            if !taken[i] && below.contains(&p.ppid) {
                taken[i] = true;
                below.push(p.pid);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    for (i, p) in all.into_iter().enumerate() {
        if taken[i] {
            out.push(p);
        }
    }
    out
}

/// The children of `parent`, from `/proc`.
pub(super) fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    processes()
        .into_iter()
        .filter(|p| p.ppid == parent)
        .map(|p| p.pid)
        .collect()
}

/// Every process `/proc` shows.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let pid: libc::pid_t = std::str::from_utf8(name.as_bytes()).ok()?.parse().ok()?;
            let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// `pid (comm) S ppid pgrp …`: the command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn parse_stat(pid: libc::pid_t, stat: &[u8]) -> Option<Proc> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.bytes().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names() {
        let p = parse_stat(7, b"7 (a) b (c)) S 3 9 9 0 -1").unwrap();
        assert_eq!((p.pid, p.ppid, p.pgrp, p.state), (7, 3, 9, b'S'));
        assert!(parse_stat(1, b"garbage").is_none());
    }

    #[test]
    fn arguments_after_the_separator_are_the_command() {
        let a: Vec<OsString> = [
            "--parent", "5", "--abi", "3", "--write", "/x", "--", "sh", "-c", "--abi",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let p = parse(&a).unwrap();
        assert_eq!(p.parent, Some(5));
        assert_eq!(p.abi, Some(3));
        assert_eq!(p.writable, [PathBuf::from("/x")]);
        assert_eq!(p.argv.len(), 3);
        assert!(parse(&[OsString::from("--abi")]).is_err());
        assert!(parse(&[OsString::from("--")]).is_err());
    }

    #[test]
    fn this_test_sees_its_own_children_as_descendants() {
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let found = descendants().iter().any(|p| p.pid == child.id() as i32);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found);
    }
}
