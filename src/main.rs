//! The `ooda` binary: parse arguments, run, return the exit code.
//!
//! The exit-code policy is `exit.rs`; this is the one place
//! that applies it, including to a closed standard output, which ends the
//! process quietly with 0 (`ooda status | head -1`).

use std::process::ExitCode;

use clap::Parser;
use ooda::{Error, Exit};

fn main() -> ExitCode {
    // ooda re-executes itself as the helper every command runs under; that
    // process must not parse a command line meant for people.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == ooda::HELPER_ARG) {
        let rest: Vec<_> = args.collect();
        return ExitCode::from(ooda::contain_main(&rest).clamp(0, 255) as u8);
    }
    if let Ok(exe) = std::env::current_exe() {
        ooda::set_helper(exe);
        ooda::become_subreaper();
    }
    let cli = ooda::cli::Cli::parse();
    let json = cli.json;
    match ooda::cli::run(cli) {
        Ok(exit) => exit.into(),
        Err(Error::BrokenPipe) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ooda: {err}");
            let exit = Exit::from(&err);
            // A script reading `--json` gets the error as JSON too, not an
            // empty stdout it would fail to parse (unless the command printed
            // its own document before failing).
            if json && !ooda::cli::printed() {
                println!(
                    "{}",
                    serde_json::json!({"error": err.to_string(), "exit": exit.code()})
                );
            }
            exit.into()
        }
    }
}
