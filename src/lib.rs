//! ooda: an unattended optimization loop runner.
//!
//! A human writes a Brief (what to optimize, how to measure it, what must not
//! break); ooda runs an OODA loop over it, one iteration per tick, and leaves
//! behind a branch of verified improvements plus an archive of everything it
//! tried. Each folder below is one concept of that contract, and the folder
//! named after a concept is where to look for it; `docs/architecture.md`
//! says which folder may import which.
//!
//! The library is the binary's: what it runs (`cli`, `error`, `exit` and the
//! sandbox helper's entry) is public, everything else is `pub(crate)`, and
//! the tests and benchmarks reach what they exercise through [`testing`].

#![warn(unreachable_pub)]

mod archive;
mod atomic;
mod brief;
pub mod cli;
mod code_index;
mod config;
mod driver;
mod error;
mod eval;
mod events;
mod exit;
mod model;
mod phases;
mod project;
mod report;
mod run;
mod schedule;
mod stats;
mod subagents;
mod text;
mod validate;
mod workspace;

pub use error::{Error, Result};
pub use exit::Exit;
/// What `ooda` needs to be its own sandbox helper: the argument that marks
/// the re-executed helper, its entry, and the setup of the parent process.
pub use run::sandbox::{HELPER_ARG, become_subreaper, contain_main, set_helper};
pub use validate::problem::{BriefError, Problem};

/// What the tests in `tests/` and the benchmarks in `benches/` reach of the
/// library, by the paths the crate itself uses (`testing::archive::history`
/// is `crate::archive::history`), each holding only what they use.
///
/// Not an API: it changes with the code it exercises. Everything else of the
/// crate is `pub(crate)`, so the compiler (`unreachable_pub`, dead code)
/// sees what the crate's own code no longer uses.
#[doc(hidden)]
pub mod testing {
    pub mod archive {
        pub mod gc {
            pub use crate::archive::gc::disk_bytes;
        }
        pub use crate::archive::falsified;
        pub use crate::archive::render_context;
        pub mod history {
            pub use crate::archive::history::view::History;
            pub use crate::archive::history::{
                IterationRecord, Prediction, Verdict, load, load_and_repair, load_files, path_of,
                read, write,
            };
            pub mod index {
                pub use crate::archive::history::index::FILE;
            }
            pub mod synthetic {
                pub use crate::archive::history::synthetic::synthetic_history;
            }
        }
        pub mod state {
            pub use crate::archive::state::STATE_VERSION;
        }
    }
    pub mod brief {
        pub use crate::brief::points;
        pub use crate::brief::{Brief, Budget, Direction, Knob, KnobSpec, KnobValue};
    }
    pub mod cli {
        pub mod status {
            pub mod table {
                pub use crate::cli::status::table::{Loader, collect_with};
            }
        }
    }
    pub mod driver {
        pub use crate::driver::builtin;
        pub mod agent {
            pub mod prompt {
                pub use crate::driver::agent::prompt::{PlanView, plan};
            }
        }
        pub mod llm {
            pub use crate::driver::llm::{context, store, tools, wire};
            pub mod tool_loop {
                pub use crate::driver::llm::tool_loop::instructions;
            }
        }
    }
    pub mod eval {
        pub use crate::eval::{
            CONFIRM_LOOKS, calibrate, confirm, confirmation_settled, decide_series, gain,
            oriented_log_ratio, redlight, screen, sequential,
        };
    }
    pub mod events {
        pub use crate::events::{Event, read_all};
    }
    pub mod code_index {
        pub use crate::code_index::explorer::Explorer;
        pub use crate::code_index::{Index, Limits, base_key};
    }
    pub mod model {
        pub use crate::model::{
            AlarmKind, Axis, CallOutcome, DiscardKind, GuardResult, IterationRecord, NoiseHistory,
            Orientation, Pair, Phase, Plan, Point, Prediction, ReviewVerdict, RunSeconds,
            RunWrites, SubagentOutcome, Thresholds, Verdict,
        };
    }
    pub mod phases {
        pub use crate::phases::failpoint;
    }
    pub mod project {
        pub use crate::project::{Project, TEMPLATES};
    }
    pub mod run {
        pub mod executor {
            pub use crate::run::executor::{job_prefix, slurm_available};
        }
        pub mod sandbox {
            pub use crate::run::sandbox::landlock_abi;
        }
    }
    pub mod stats {
        pub use crate::stats::*;
    }
    pub mod subagents {
        pub use crate::subagents::notes_for_plan;
    }
    pub mod text {
        pub use crate::text::{clip, compress};
    }
}
