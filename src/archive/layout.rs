//! Every path under `iterations/<brief>/`, in one place.
//!
//! The archive is read by people (the iteration files, `summary.md`), by
//! `git` (what is committed and what `.gitignore` leaves out) and by every
//! command of ooda; a path spelt twice drifts. Whoever writes or reads a
//! file of the archive asks [`Layout`] where it is. The names of the files
//! whose format a module below the archive owns stay beside that format
//! (the event log and its segments in `events/`), and the layout gives
//! their paths; `docs/files.md` is the reference.

use std::path::{Path, PathBuf};

/// The files of one Brief's archive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout<'a> {
    dir: &'a Path,
}

impl<'a> Layout<'a> {
    pub(crate) const SUMMARY: &'static str = "summary.md";
    pub(crate) const SUMMARY_JSON: &'static str = "summary.json";
    pub(crate) const CHART: &'static str = "progress.svg";
    pub(crate) const FALSIFIED: &'static str = "falsified.md";
    pub(crate) const STATE: &'static str = "state.json";
    pub(crate) const LOCK: &'static str = ".lock";
    pub(crate) const REPLAYS: &'static str = "replays";
    pub(crate) const INDEX: &'static str = "index.jsonl";
    pub(crate) const FACTS: &'static str = "facts.bin";
    pub(crate) const LEDGER: &'static str = "ledger.json";

    /// The archive at `dir` (`iterations/<brief>`).
    pub(crate) fn of(dir: &'a Path) -> Layout<'a> {
        Layout { dir }
    }

    /// `iter-NNN.md`: an iteration's file.
    pub(crate) fn iteration(&self, iteration: u32) -> PathBuf {
        self.dir.join(Layout::iteration_name(iteration))
    }

    pub(crate) fn iteration_name(iteration: u32) -> String {
        format!("iter-{iteration:03}.md")
    }

    /// `summary.md`: the morning report.
    pub(crate) fn summary(&self) -> PathBuf {
        self.dir.join(Layout::SUMMARY)
    }

    /// `summary.json`: the same, for scripts.
    pub(crate) fn summary_json(&self) -> PathBuf {
        self.dir.join(Layout::SUMMARY_JSON)
    }

    /// `progress.svg`: the chart.
    pub(crate) fn chart(&self) -> PathBuf {
        self.dir.join(Layout::CHART)
    }

    /// `falsified.md`: every direction measured and found wanting.
    pub(crate) fn falsified(&self) -> PathBuf {
        self.dir.join(Layout::FALSIFIED)
    }

    /// `state.json`: the checkpoint of the phase machine.
    pub(crate) fn state(&self) -> PathBuf {
        self.dir.join(Layout::STATE)
    }

    /// `events.jsonl`: the live event log (`events/` holds its sealed
    /// segments).
    pub(crate) fn events(&self) -> PathBuf {
        self.dir.join(crate::events::FILE)
    }

    /// `index.jsonl`, `facts.bin`, `ledger.json`: the history's caches,
    /// rebuilt from the iteration files.
    pub(crate) fn index(&self) -> PathBuf {
        self.dir.join(Layout::INDEX)
    }

    pub(crate) fn facts(&self) -> PathBuf {
        self.dir.join(Layout::FACTS)
    }

    pub(crate) fn ledger(&self) -> PathBuf {
        self.dir.join(Layout::LEDGER)
    }

    /// `events/`: the event log's sealed segments.
    pub(crate) fn segments(&self) -> PathBuf {
        self.dir.join(crate::events::segments::DIR)
    }

    /// `state.json.corrupt-<stamp>`: an unreadable checkpoint, moved aside.
    pub(crate) fn corrupt_state(&self, stamp: &str) -> PathBuf {
        self.dir.join(format!("{}.corrupt-{stamp}", Layout::STATE))
    }

    /// `.lock`: one runner per Brief.
    pub(crate) fn lock(&self) -> PathBuf {
        self.dir.join(Layout::LOCK)
    }

    /// `artifacts/`: discarded diffs, prompts, outputs, subagents' reports.
    pub(crate) fn artifacts(&self) -> PathBuf {
        self.dir.join(Layout::ARTIFACTS)
    }

    pub(crate) const ARTIFACTS: &'static str = "artifacts";

    /// `artifacts/iter-NNN/`: an iteration's prompts, outputs, transcripts
    /// and reports.
    pub(crate) fn artifacts_of(&self, iteration: u32) -> PathBuf {
        self.artifacts().join(format!("iter-{iteration:03}"))
    }

    /// `artifacts/iter-NNN/subagents/`: the prompts and outputs of the
    /// iteration's command subagents, beside the main agent's.
    pub(crate) fn subagent_files(&self, iteration: u32) -> PathBuf {
        self.artifacts_of(iteration).join("subagents")
    }

    /// `artifacts/iter-NNN.diff`, relative to the archive: a discarded
    /// candidate's diff, as its iteration file links it.
    pub(crate) fn diff(iteration: u32) -> String {
        format!("{}/iter-{iteration:03}.diff", Layout::ARTIFACTS)
    }

    /// `artifacts/iter-NNN/<name>.<role>[.<tag>].json`, relative to the
    /// archive: a subagent's archived report (`tag` names a second pass in
    /// the same iteration, over a simplified candidate).
    pub(crate) fn report(iteration: u32, name: &str, role: &str, tag: Option<&str>) -> String {
        match tag {
            Some(tag) => format!(
                "{}/iter-{iteration:03}/{name}.{role}.{tag}.json",
                Layout::ARTIFACTS
            ),
            None => format!(
                "{}/iter-{iteration:03}/{name}.{role}.json",
                Layout::ARTIFACTS
            ),
        }
    }

    /// `replays/`: `ooda replay`'s runs of earlier iterations.
    pub(crate) fn replays(&self) -> PathBuf {
        self.dir.join(Layout::REPLAYS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are the archive's format: users' `.gitignore` lines,
    /// links in iteration files and other tools read them.
    #[test]
    fn the_archive_keeps_its_names() {
        let l = Layout::of(Path::new("iterations/b"));
        assert_eq!(l.iteration(7), Path::new("iterations/b/iter-007.md"));
        assert_eq!(l.summary(), Path::new("iterations/b/summary.md"));
        assert_eq!(l.summary_json(), Path::new("iterations/b/summary.json"));
        assert_eq!(l.chart(), Path::new("iterations/b/progress.svg"));
        assert_eq!(l.falsified(), Path::new("iterations/b/falsified.md"));
        assert_eq!(l.state(), Path::new("iterations/b/state.json"));
        assert_eq!(l.events(), Path::new("iterations/b/events.jsonl"));
        assert_eq!(l.lock(), Path::new("iterations/b/.lock"));
        assert_eq!(l.index(), Path::new("iterations/b/index.jsonl"));
        assert_eq!(l.facts(), Path::new("iterations/b/facts.bin"));
        assert_eq!(l.ledger(), Path::new("iterations/b/ledger.json"));
        assert_eq!(l.segments(), Path::new("iterations/b/events"));
        assert_eq!(
            l.corrupt_state("20261201T000000"),
            Path::new("iterations/b/state.json.corrupt-20261201T000000")
        );
        assert_eq!(
            l.subagent_files(3),
            Path::new("iterations/b/artifacts/iter-003/subagents")
        );
        assert_eq!(
            l.artifacts_of(3),
            Path::new("iterations/b/artifacts/iter-003")
        );
        assert_eq!(Layout::diff(3), "artifacts/iter-003.diff");
        assert_eq!(
            Layout::report(3, "code-reviewer", "review", Some("simplified")),
            "artifacts/iter-003/code-reviewer.review.simplified.json"
        );
        assert_eq!(l.replays(), Path::new("iterations/b/replays"));
    }
}
