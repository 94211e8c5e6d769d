//! Puts the commit and its date in `ooda --version`, so a bug report says
//! which code it is about. Outside a git checkout (a crate tarball) both
//! are `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=OODA_COMMIT={commit}");
    println!("cargo:rustc-env=OODA_COMMIT_DATE={date}");
    // A new commit, a checkout of another branch: the version follows.
    // (Only files that exist: cargo reruns a script for a missing one
    // every time.)
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(head);
    }
    for w in watch {
        if let Some(path) = git(&["rev-parse", "--git-path", &w])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
