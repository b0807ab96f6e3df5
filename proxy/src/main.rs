//! The `wheelgate` binary: parses the command line, sets up logging, runs one subcommand, and
//! maps its outcome to a stable exit code (see [`cli::exit`]).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    if let Err(error) = cli::logging::init(args.log_format) {
        eprintln!("wheelgate: {error}");
        return ExitCode::from(cli::exit::USAGE);
    }
    match cli::run(args.command) {
        Ok(()) => ExitCode::from(cli::exit::OK),
        Err(error) => {
            // anyhow's alternate form prints the whole chain of causes on one line.
            let error = anyhow::Error::from(error);
            eprintln!("wheelgate: {error:#}");
            ExitCode::from(cli::exit::FAILURE)
        }
    }
}
