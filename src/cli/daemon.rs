//! `ooda daemon [--briefs DIR]`: every Brief on its own schedule.

use std::path::PathBuf;

use super::Globals;
use crate::error::Result;
use crate::events::log::Log;
use crate::exit::Exit;
use crate::project::Project;
use crate::validate::cron::Zone;

pub(crate) fn run(g: &Globals, briefs: Option<PathBuf>) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let log = Log::new(Zone::from_env(), g.quiet).json(g.json);
    crate::schedule::daemon::run(project, briefs, log, g.verbose)
}
