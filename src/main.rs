//! The `ooda` binary: parse arguments, run, map the outcome to an exit code.
//!
//! Exit-code policy (DESIGN.md §13), owned here and nowhere else:
//! 0 ok (an iteration done, or nothing to do), 1 internal or I/O error,
//! 2 invalid input or config, 3 red light, 4 stopped by a budget, 5 busy
//! (another runner holds the lock), 130 interrupted.

use clap::Parser;

fn main() {
    let cli = ooda::cli::Cli::parse();
    let code = match ooda::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ooda: {err}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}
