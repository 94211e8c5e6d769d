//! The `ooda` binary: parse arguments, run, return the exit code.
//!
//! The exit-code policy is `exit.rs`; this is the one place
//! that applies it, including to a closed standard output, which ends the
//! process quietly with 0 (`ooda status | head -1`).

use std::process::ExitCode;

use clap::Parser;
use ooda::error::Error;
use ooda::exit::Exit;

fn main() -> ExitCode {
    let cli = ooda::cli::Cli::parse();
    match ooda::cli::run(cli) {
        Ok(exit) => exit.into(),
        Err(Error::BrokenPipe) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ooda: {err}");
            Exit::from(&err).into()
        }
    }
}
