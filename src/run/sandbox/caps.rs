//! Root is not a way out: the capabilities a confined command keeps.
//!
//! Landlock confines what a process may write by path; a root process
//! holds capabilities that reach around paths. With `CAP_MKNOD` it makes a
//! block device beneath its worktree over the disk that holds your
//! checkout; with `CAP_SYS_ADMIN` it sets up a loop device or mounts; with
//! `CAP_LINUX_IMMUTABLE` it `chattr +i`s the archive so every later tick
//! fails. So before a command starts (agent steps and measured commands
//! alike) the helper drops every capability but those a build or a
//! benchmark run as root commonly needs, from the bounding set too (so
//! no program it executes regains one), and sets `no_new_privs` (so no
//! setuid binary does).
//!
//! What stays is Docker's default set less `CAP_MKNOD`, `CAP_SETPCAP` and
//! `CAP_SETFCAP`, plus `CAP_SYS_NICE` and `CAP_IPC_LOCK` (benchmarks pin
//! priorities and lock memory): file ownership and permission overrides
//! (which Landlock still confines to the grants, for writes), killing
//! (which Landlock from ABI 6 confines to the sandbox), changing user,
//! binding low ports, raw sockets, `chroot`, writing the audit log. For a
//! user who is not root there is nothing to drop, and nothing here fails.
//!
//! What no capability set can fix: Landlock does not control `chmod` and
//! `chown`, and root owns the system's files, so a root command can still
//! change their modes (a setuid bit on an interpreter). `ooda check` says
//! so; run ooda as a user of its own.

/// The capabilities a command keeps (numbers of `linux/capability.h`).
pub(crate) const KEPT: &[(u32, &str)] = &[
    (0, "CAP_CHOWN"),
    (1, "CAP_DAC_OVERRIDE"),
    (3, "CAP_FOWNER"),
    (4, "CAP_FSETID"),
    (5, "CAP_KILL"),
    (6, "CAP_SETGID"),
    (7, "CAP_SETUID"),
    (10, "CAP_NET_BIND_SERVICE"),
    (13, "CAP_NET_RAW"),
    (14, "CAP_IPC_LOCK"),
    (18, "CAP_SYS_CHROOT"),
    (23, "CAP_SYS_NICE"),
    (29, "CAP_AUDIT_WRITE"),
];

const CAP_SETPCAP: u32 = 8;
/// Beyond the last capability any kernel defines (40 in Linux 6.x): a drop
/// of an unknown number fails with EINVAL and is skipped.
const CAP_MAX: u32 = 63;
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn kept_mask() -> u64 {
    KEPT.iter().fold(0u64, |m, (n, _)| m | (1 << n))
}

/// Drops what is not [`KEPT`] for this process and what it executes. Only
/// system calls, so it may run between `fork` and `exec`.
pub(crate) fn drop_privileges() -> std::io::Result<()> {
    let keep = kept_mask();
    // SAFETY: prctl and capget/capset with pointers to locals.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Ambient capabilities would survive the exec: none.
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let held = u64::from(data[0].permitted) | (u64::from(data[1].permitted) << 32);
        if held & !keep == 0 {
            return Ok(()); // nothing beyond the kept set (not root)
        }
        // The bounding set needs CAP_SETPCAP, so it goes first; a number the
        // kernel does not know is skipped.
        if held & (1 << CAP_SETPCAP) != 0 {
            for cap in 0..=CAP_MAX {
                if keep & (1 << cap) == 0 {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
                }
            }
        }
        for (i, d) in data.iter_mut().enumerate() {
            let k = (keep >> (32 * i)) as u32;
            d.effective &= k;
            d.permitted &= k;
            d.inheritable &= k;
        }
        header.version = VERSION_3;
        header.pid = 0;
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What `ooda check` says about capabilities for this process's user.
pub(crate) fn describe() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let held = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    if held & !kept_mask() == 0 {
        return "no capabilities beyond the kept set (not root): nothing to drop".into();
    }
    format!(
        "running with capabilities (root): every command runs without CAP_MKNOD, CAP_SYS_ADMIN, CAP_LINUX_IMMUTABLE and the rest, keeping {} only, with no_new_privs. Still, as root a command may chmod and chown the files root owns outside its worktree (Landlock does not control metadata): run ooda as a user of its own",
        KEPT.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_keeps_only_the_kept_set() {
        // In a forked child, so the test process keeps what it has.
        let mut out = std::process::Command::new("sh");
        out.args([
            "-c",
            "grep -E '^Cap(Eff|Bnd|Prm)' /proc/self/status; grep NoNewPrivs /proc/self/status",
        ]);
        // SAFETY: drop_privileges only makes system calls.
        unsafe {
            use std::os::unix::process::CommandExt;
            out.pre_exec(drop_privileges);
        }
        let text = String::from_utf8(out.output().unwrap().stdout).unwrap();
        for line in text.lines().filter(|l| l.starts_with("Cap")) {
            let v = u64::from_str_radix(line.split(':').nth(1).unwrap().trim(), 16).unwrap();
            assert_eq!(v & !kept_mask(), 0, "{line}");
        }
        assert!(text.contains("NoNewPrivs:\t1"), "{text}");
    }
}
