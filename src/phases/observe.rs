//! OBSERVE: the worktrees match the best commit before anything is planned.
//!
//! Loading the Brief, the archive and the state, and refusing a RED run, is
//! the machine's (`mod.rs`, `next.rs`); what is left for the phase is to make
//! the workspace what the state says it is, which repairs a worktree a kill
//! left half-reset.

use super::oid;
use crate::error::Result;
use crate::workspace::Workspace;

pub(crate) fn run(ws: &Workspace, best_commit: &str) -> Result<()> {
    ws.ensure(oid(best_commit)?)
}
