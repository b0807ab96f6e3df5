//! The `wheelgate` binary: the command line of [`wheelgate::cli`], which parses the arguments,
//! sets up logging, runs one subcommand, and maps its outcome to a stable exit code (see
//! [`wheelgate::cli::exit`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(wheelgate::cli::main(std::env::args_os()))
}
