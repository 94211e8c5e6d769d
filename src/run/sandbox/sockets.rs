//! Other programs' servers: what a confined command must not ask.
//!
//! Landlock before ABI 9 does not control connecting to a UNIX socket by
//! path. A confined command could ask the user's tmux server
//! (`/tmp/tmux-<uid>/default`: `tmux run-shell`), its D-Bus session or
//! systemd's user manager (`$XDG_RUNTIME_DIR/bus`, `systemd-run --user`), an
//! X server or the ssh agent to do what it may not: those servers are not
//! confined, and write the checkout for it. So a confined command gets a
//! mount namespace of its own in which the folders of those sockets are
//! empty (a small tmpfs is mounted over each), and an environment without
//! the variables that name them.
//!
//! A mount namespace needs `CAP_SYS_ADMIN` (root) or an unprivileged user
//! namespace (most distributions allow one; some turn them off). Where
//! neither is to be had the folders stay visible, `ooda check` says so,
//! and docs/sandbox.md says what a user can do instead.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Variables that name a server's socket: the command does not get them.
pub(crate) const SOCKET_ENV: &[&str] = &[
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
];

/// What a confined command must not reach, on this machine: the folders
/// of servers' sockets (emptied) and the sockets that sit in a folder that
/// cannot be emptied (covered).
pub(crate) struct Servers {
    pub folders: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

/// The [`Servers`] that exist here, but for a folder holding one of `keep`
/// (the command's worktree and grants, which must stay).
pub(crate) fn servers(keep: &[PathBuf]) -> Servers {
    // One look at /tmp, which may hold thousands of entries, per command.
    let (mut editors, mut sockets) = (Vec::new(), Vec::new());
    if let Ok(rd) = std::fs::read_dir("/tmp") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("nvim.") {
                editors.push(e.path());
            } else if n.starts_with("vscode-") && n.ends_with(".sock") {
                sockets.push(e.path());
            }
        }
    }
    Servers {
        folders: folders_in(keep, |n| std::env::var_os(n), editors),
        files: socket_files(sockets),
    }
}

/// The servers' folders: tmux's, X's, screen's, Emacs', the session's
/// runtime folder, the ssh agent's and the session bus's, and `editors`
/// (Neovim's `/tmp/nvim.<user>/`), with the environment given.
fn folders_in(
    keep: &[PathBuf],
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
    editors: Vec<PathBuf>,
) -> Vec<PathBuf> {
    // SAFETY: plain syscall.
    let uid = unsafe { libc::getuid() };
    let var = |n: &str| env(n).map(PathBuf::from);
    let tmux_tmp = var("TMUX_TMPDIR").unwrap_or_else(|| PathBuf::from("/tmp"));
    let mut out = vec![
        tmux_tmp.join(format!("tmux-{uid}")),
        PathBuf::from("/tmp").join(format!("tmux-{uid}")),
        PathBuf::from("/tmp/.X11-unix"),
        PathBuf::from("/tmp/.ICE-unix"),
        PathBuf::from("/run/screen"),
        PathBuf::from("/var/run/screen"),
        PathBuf::from(format!("/tmp/emacs{uid}")),
        var("XDG_RUNTIME_DIR").unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}"))),
    ];
    out.extend(editors);
    if let Some(sock) = var("SSH_AUTH_SOCK")
        && let Some(dir) = sock.parent()
    {
        out.push(dir.to_path_buf());
    }
    if let Some(bus) = env("DBUS_SESSION_BUS_ADDRESS")
        .and_then(|a| a.into_string().ok())
        .and_then(|a| {
            a.split(',')
                .find_map(|p| p.strip_prefix("unix:path=").map(String::from))
        })
        && let Some(dir) = Path::new(&bus).parent()
    {
        out.push(dir.to_path_buf());
    }
    let keep: Vec<PathBuf> = keep
        .iter()
        .map(|k| k.canonicalize().unwrap_or_else(|_| k.clone()))
        .collect();
    existing(out, |real, m| {
        m.is_dir() && real != Path::new("/") && !keep.iter().any(|k| k.starts_with(real))
    })
}

/// The container engines' sockets (a root shell for any member of their
/// group) and `editors'` (VS Code runs commands for its terminal), which
/// sit in folders that cannot be emptied (`/run`, `/tmp`): each is covered
/// by `/dev/null`.
fn socket_files(editors: Vec<PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut out: Vec<PathBuf> = [
        "/run/docker.sock",
        "/var/run/docker.sock",
        "/run/podman/podman.sock",
        "/run/containerd/containerd.sock",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    out.extend(editors);
    existing(out, |_, m| m.file_type().is_socket())
}

/// `paths` resolved, those there that `keep` admits, each once.
fn existing(paths: Vec<PathBuf>, keep: impl Fn(&Path, &std::fs::Metadata) -> bool) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for p in paths {
        let Ok(real) = p.canonicalize() else { continue };
        let admitted = std::fs::symlink_metadata(&real).is_ok_and(|m| keep(&real, &m));
        if admitted && !found.contains(&real) {
            found.push(real);
        }
    }
    found
}

/// The folders as C strings, made before `fork` (no allocation after it).
pub(crate) fn c_paths(folders: &[PathBuf]) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    folders
        .iter()
        .filter_map(|f| CString::new(f.as_os_str().as_bytes()).ok())
        .collect()
}

/// What [`hide`] did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hidden {
    Yes,
    /// No namespace could be had: nothing changed, the gap stays.
    Impossible,
    /// A user namespace was entered but could not be set up (the command
    /// would run as the overflow user): it must not run.
    Broken,
}

/// Enters a mount namespace of its own and mounts an empty tmpfs over each
/// folder. Between `fork` and `exec`: system calls, and writes of
/// preformatted text.
pub(crate) fn hide(folders: &[CString], files: &[CString], maps: &Maps) -> Hidden {
    if folders.is_empty() && files.is_empty() {
        return Hidden::Yes;
    }
    // SAFETY: system calls with pointers to NUL-terminated locals.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            // Not root: a user namespace, mapping this user to itself.
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return Hidden::Impossible;
            }
            if !write_proc(c"/proc/self/setgroups", b"deny")
                || !write_proc(c"/proc/self/uid_map", &maps.uid)
                || !write_proc(c"/proc/self/gid_map", &maps.gid)
            {
                return Hidden::Broken;
            }
        }
        // Mounts made here must not reach the parent's namespace.
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            // Mounts made now could reach the parent's namespace (and hide
            // the user's own sockets from the user): none is made.
            return Hidden::Impossible;
        }
        let mut all = true;
        for f in folders {
            let done = libc::mount(
                c"tmpfs".as_ptr(),
                f.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"size=64k,mode=0700".as_ptr().cast(),
            ) == 0;
            all &= done;
        }
        for f in files {
            let done = libc::mount(
                c"/dev/null".as_ptr(),
                f.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ) == 0;
            all &= done;
        }
        // A folder that could not be covered stays visible: the gap, not a
        // reason to refuse the command.
        if all { Hidden::Yes } else { Hidden::Impossible }
    }
}

/// `uid_map` and `gid_map` lines for a user namespace that maps this user
/// to itself, made before `fork`.
pub(crate) struct Maps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl Maps {
    pub(crate) fn of_this_process() -> Maps {
        // SAFETY: plain syscalls.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Maps {
            uid: format!("{uid} {uid} 1").into_bytes(),
            gid: format!("{gid} {gid} 1").into_bytes(),
        }
    }
}

/// Writes `bytes` to a `/proc` file in one `write`.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: the caller's contract: between fork and exec, plain calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        n == bytes.len() as isize
    }
}

/// Whether this machine lets a command have a mount namespace of its own
/// (tried in a child that runs `true`), for `ooda check`.
pub(crate) fn can_hide() -> bool {
    use std::os::unix::process::CommandExt;
    let maps = Maps::of_this_process();
    let probe = c_paths(&[std::env::temp_dir()]);
    let mut c = std::process::Command::new("true");
    // SAFETY: `hide` makes only system calls; the tmpfs is mounted over
    // the temporary folder of the child's own namespace, which ends with it.
    unsafe {
        c.pre_exec(move || match hide(&probe, &[], &maps) {
            Hidden::Yes => Ok(()),
            // No allocation after fork: an error from a number.
            _ => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
        });
    }
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_holding_a_grant_is_never_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("inner")).unwrap();
        let env = |n: &str| (n == "XDG_RUNTIME_DIR").then(|| run.clone().into_os_string());
        let hidden = folders_in(&[dir.path().join("work")], env, Vec::new());
        assert!(hidden.contains(&run.canonicalize().unwrap()), "{hidden:?}");
        let kept = folders_in(&[run.join("inner")], env, Vec::new());
        assert!(!kept.contains(&run.canonicalize().unwrap()), "{kept:?}");
    }
}
