//! The `Test` builder: a temporary git repository with Briefs and scripts,
//! the real `ooda` binary run in it, and helpers to read what it left behind.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub struct Test {
    pub dir: tempfile::TempDir,
    /// Commit dates fixed, so commit hashes are the same on every machine
    /// (fixtures written by an earlier release name them).
    pinned: bool,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A metric script for tests: prints `METRIC t=<value>` where `value` is an
/// awk expression of `x` (the knob X, default 10) and `n` (this run's number),
/// times seeded uniform noise of total width `noise`. The run counter is kept
/// outside the worktrees, so every sequence of runs is reproducible.
pub fn bench(value: &str, noise: f64) -> String {
    bench_after("", value, noise)
}

/// [`bench`] with shell lines run first (to crash, hang or log on a side).
pub fn bench_after(prelude: &str, value: &str, noise: f64) -> String {
    format!(
        r#"#!/bin/sh
{prelude}counter="$OODA_TEST_DIR/counter"
n=$(cat "$counter" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$counter"
awk -v n="$n" -v x="${{X:-10}}" 'BEGIN {{ srand(n); print "METRIC t=" ({value}) * (1 + {noise} * (rand() - 0.5)) }}'
"#
    )
}

/// The standard landscape (an awk expression of x): best at X = 40.
pub const LANDSCAPE: &str = "100 + 10 * ((x - 40) / 10) * ((x - 40) / 10)";

/// A landscape on which every move away from the default X = 10 is 20%
/// faster: the first proposal is a keep, wherever the search goes.
pub const ANY_MOVE_GAINS: &str = "(x == 10) ? 100 : 80";

/// [`ANY_MOVE_GAINS`] with ±1% noise.
pub fn gain_bench() -> String {
    bench(ANY_MOVE_GAINS, 0.02)
}

/// The standard landscape with ±0.5% noise.
pub fn knob_bench() -> String {
    bench(LANDSCAPE, 0.01)
}

pub const QUIET_CONFIG: &str = "defaults:\n  pairs: 3\n  calibration_pairs: 3\n";

/// `brief` with its measured commands given `OODA_SIDE` and
/// `OODA_ITERATION` (`metric.env`), for benchmarks and guards that fail on
/// purpose on one side or from one iteration on.
pub fn side_env(brief: &str) -> String {
    assert!(brief.contains("metric:\n"), "{brief}");
    brief.replacen(
        "metric:\n",
        "metric:\n  env: [OODA_SIDE, OODA_ITERATION, OODA_BRIEF]\n",
        1,
    )
}

pub fn knob_brief(extra: &str) -> String {
    format!(
        "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\n  timeout: 20s\nscope:\n  allow: [\"src/**\"]\n  protect: [\"bench.sh\"]\nknobs:\n  X: {{ int: [10, 80], default: 10 }}\nagent: builtin\nseed: 1\n{extra}---\n# Goal\nMake t small.\n\n# Success\nt drops.\n\n# Must not break\nbench.sh stays.\n"
    )
}

impl Test {
    /// A git repository with one commit holding `ooda.yaml`, `.gitignore`,
    /// `bench.sh` and `src/lib.txt`.
    pub fn new() -> Test {
        Test::create(false)
    }

    /// [`Test::new`] with fixed commit dates: the same commit hashes every time.
    pub fn pinned() -> Test {
        Test::create(true)
    }

    fn create(pinned: bool) -> Test {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = Test { dir, pinned };
        t.git(&["init", "-q", "-b", "main"]);
        t.write("ooda.yaml", QUIET_CONFIG);
        t.write(".gitignore", ".ooda/\niterations/*/state.json\niterations/*/events.jsonl\niterations/*/artifacts/\niterations/*/.lock\n/counter\n");
        t.script("bench.sh", &knob_bench());
        t.write("src/lib.txt", "code\n");
        t.commit("init");
        t
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A copy of the project (`cp -a`, `.git/` and `.ooda/` with it), as a
    /// user copying or moving a project folder makes one.
    pub fn copy(&self) -> Test {
        let dir = tempfile::tempdir().expect("tempdir");
        let status = Command::new("cp")
            .arg("-a")
            .arg(self.path().join("."))
            .arg(dir.path())
            .status()
            .expect("cp");
        assert!(status.success());
        Test {
            dir,
            pinned: self.pinned,
        }
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&p, content).unwrap();
        p
    }

    pub fn script(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.write(rel, content);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// Appends patterns to `.gitignore` (marker files the tests' scripts leave).
    pub fn ignore(&self, patterns: &[&str]) {
        let mut text = self.read(".gitignore");
        for p in patterns {
            text.push_str(p);
            text.push('\n');
        }
        self.write(".gitignore", &text);
    }

    pub fn brief(&self, name: &str, text: &str) -> PathBuf {
        self.write(&format!("briefs/{name}.md"), text)
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path().join(rel).exists()
    }

    pub fn git(&self, args: &[&str]) -> String {
        let mut c = Command::new("git");
        if self.pinned {
            c.env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
                .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
        }
        let out = c
            .args(args)
            .current_dir(self.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(env!("CARGO_BIN_EXE_ooda")), args)
    }

    /// A command of another `ooda` binary (an earlier release, for fixtures).
    pub fn command_of(&self, binary: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(binary);
        c.args(args)
            .current_dir(self.path())
            .env("OODA_TEST_DIR", self.path())
            // The benchmarks count their runs there: passed on to measured
            // commands, which get none of ooda's other variables.
            .env("OODA_PASS_ENV", "OODA_TEST_DIR")
            // Each test its own host: parallel tests must not queue on
            // one measurement lock (a test of the lock shares one on purpose).
            .env(
                "OODA_MEASURE_LOCK",
                self.path().join(".git/ooda-measure.lock"),
            )
            .env_remove("OODA_FAILPOINT")
            .stdin(Stdio::null());
        c
    }

    pub fn ooda(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("running ooda"))
    }

    pub fn ooda_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = self.command(args);
        for (k, v) in env {
            c.env(k, v);
        }
        Run::from(c.output().expect("running ooda"))
    }

    /// Iteration files present, as numbers.
    pub fn iterations(&self, brief: &str) -> Vec<u32> {
        let dir = self.path().join("iterations").join(brief);
        let mut out: Vec<u32> = fs::read_dir(&dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n.strip_prefix("iter-")?.strip_suffix(".md")?.parse().ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Every archived record of `brief`, in iteration order.
    pub fn records(&self, brief: &str) -> Vec<ooda::testing::archive::history::IterationRecord> {
        self.iterations(brief)
            .into_iter()
            .map(|i| self.record(brief, i))
            .collect()
    }

    pub fn record(&self, brief: &str, n: u32) -> ooda::testing::archive::history::IterationRecord {
        ooda::testing::archive::history::read(
            &self
                .path()
                .join(format!("iterations/{brief}/iter-{n:03}.md")),
        )
        .unwrap()
    }

    pub fn state(&self, brief: &str) -> serde_json::Value {
        serde_json::from_str(&self.read(&format!("iterations/{brief}/state.json"))).unwrap()
    }

    /// The host-wide measurement lock this test's ooda uses
    /// (`OODA_MEASURE_LOCK`), held until the file is dropped, as another
    /// Brief measuring would hold it.
    pub fn hold_measure_lock(&self) -> std::fs::File {
        let holder = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.path().join(".git/ooda-measure.lock"))
            .unwrap();
        holder.lock().unwrap();
        holder
    }

    pub fn events(&self, brief: &str) -> Vec<serde_json::Value> {
        self.read(&format!("iterations/{brief}/events.jsonl"))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Everything about the user's checkout that ooda must never change
    /// (`iterations/` and `notes/` are where it writes the archive and the
    /// synthesizer's notes).
    pub fn checkout_fingerprint(&self) -> String {
        let head = self.git(&["rev-parse", "HEAD"]);
        let branch = self.git(&["symbolic-ref", "HEAD"]);
        let status = self.git(&[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--",
            ".",
            ":!iterations",
            ":!notes",
        ]);
        let index = fs::read(self.path().join(".git/index")).unwrap();
        let tracked = self.git(&["ls-files", "-s"]);
        format!("{head}\n{branch}\n{status}\n{}\n{tracked}", index.len())
    }

    /// Every byte a user could lose: each file, directory and symlink of the
    /// checkout (tracked, untracked and ignored), and of its git directory
    /// (config, hooks, HEAD, refs, info, the index), with modes. Left out
    /// only: `.ooda/`, `iterations/`, `notes/`, the objects (new ones are
    /// unreachable garbage, not a change), the worktrees' metadata, the
    /// measurement lock, and ooda's own refs (`ooda/…` branches, `refs/ooda/`),
    /// which [`Test::ooda_refs`] compares with their recorded values.
    pub fn snapshot(&self) -> Snapshot {
        let mut files = BTreeMap::new();
        snapshot_walk(self.path(), self.path(), &mut files);
        Snapshot(files)
    }

    /// ooda's own refs and where they point.
    pub fn ooda_refs(&self) -> String {
        self.git(&[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads/ooda/",
            "refs/ooda/",
        ])
    }
}

/// See [`Test::snapshot`].
#[derive(PartialEq, Eq)]
pub struct Snapshot(BTreeMap<String, String>);

impl Snapshot {
    /// Panics naming every path that differs from `before`.
    pub fn assert_same(&self, before: &Snapshot, what: &str) {
        let mut diffs = Vec::new();
        for (k, v) in &before.0 {
            match self.0.get(k) {
                None => diffs.push(format!("removed: {k}")),
                Some(w) if w != v => diffs.push(format!("changed: {k}")),
                _ => {}
            }
        }
        for k in self.0.keys() {
            if !before.0.contains_key(k) {
                diffs.push(format!("added: {k}"));
            }
        }
        assert!(
            diffs.is_empty(),
            "{what}: the user's checkout is not byte-identical:\n{}",
            diffs.join("\n")
        );
    }
}

fn snapshot_walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    use std::os::unix::fs::MetadataExt;
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let skipped = [
            ".ooda",
            "iterations",
            "notes",
            ".git/objects",
            ".git/worktrees",
            ".git/ooda-measure.lock",
            ".git/refs/heads/ooda",
            ".git/refs/ooda",
            ".git/logs/refs/heads/ooda",
            ".git/logs/refs/ooda",
        ];
        if skipped.iter().any(|s| rel == *s) {
            continue;
        }
        let meta = fs::symlink_metadata(&path).unwrap();
        let mode = meta.mode();
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).unwrap();
            out.insert(rel, format!("link {mode:o} {}", target.display()));
        } else if meta.is_dir() {
            out.insert(rel.clone(), format!("dir {mode:o}"));
            snapshot_walk(root, &path, out);
        } else {
            let mut bytes = fs::read(&path).unwrap();
            if rel == ".git/packed-refs" {
                // ooda's refs may be packed beside the user's.
                let text = String::from_utf8_lossy(&bytes).to_string();
                bytes = text
                    .lines()
                    .filter(|l| !l.contains(" refs/heads/ooda/") && !l.contains(" refs/ooda/"))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into_bytes();
            }
            // FNV-1a: any changed byte changes it.
            let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
            });
            out.insert(rel, format!("file {mode:o} {} {hash:016x}", bytes.len()));
        }
    }
}

/// A runtime for the scripted HTTP servers (wiremock) a test starts.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}
