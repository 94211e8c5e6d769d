//! SIGINT/SIGTERM as a flag, never an abrupt exit.
//!
//! A signal must not tear a phase in half: the handler only sets a flag, the
//! command runner stops the running measurement, and the phase machine stops
//! at its next checkpoint and exits 130.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Interrupt {
    /// Installs the handlers; callable more than once (each returns the same flag semantics).
    pub fn install() -> Interrupt {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Registration fails only for forbidden signals, which these are not.
            let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
        }
        Interrupt { flag }
    }

    /// A flag nobody sets, for library callers and tests.
    pub fn none() -> Interrupt {
        Interrupt {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}
