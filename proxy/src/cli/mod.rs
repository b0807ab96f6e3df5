//! The command line: subcommands, their arguments, and their errors.
//!
//! Each subcommand lives in its own file (`detect.rs`; `select.rs` and the server's commands
//! join here). Commands that need no network (`detect`) run without starting an async runtime,
//! so they stay fast.
//!
//! It lives in the library, not only the binary, so that the Python package
//! (`bindings/python`) runs exactly this code behind its `wheelgate` command: [`main`] is the
//! whole program given its arguments.

pub mod catalog;
pub mod config_reference;
pub mod config_show;
pub mod detect;
pub mod logging;
pub mod mirror;
pub mod pip_config;
pub mod select;
pub mod serve;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

/// Stable exit codes: scripts may rely on them.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The command ran and failed (an invalid override, an unwritable output).
    pub const FAILURE: u8 = 1;
    /// The command line or the logging setup is invalid (clap uses 2 for usage errors too).
    pub const USAGE: u8 = 2;
}

/// Environment variable choosing the log format (`text` or `json`), like `--log-format`.
pub const LOG_FORMAT_VAR: &str = "WHEELGATE_LOG_FORMAT";

/// wheelgate: the right PyTorch wheel for every machine, through one index URL.
///
/// Logging follows `RUST_LOG` (for example `RUST_LOG=wheelgate_selectors=debug` shows every
/// source each probe tried).
#[derive(Debug, Parser)]
#[command(name = "wheelgate", version = wheelgate_server::build_info::LONG_VERSION, about, long_about = None)]
pub struct Cli {
    /// Log format on standard error.
    #[arg(long, global = true, env = LOG_FORMAT_VAR, value_enum, default_value_t = logging::LogFormat::Text)]
    pub log_format: logging::LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Describe this machine (or a captured tree): platform, GPUs, drivers, and where each fact
    /// came from.
    Detect(detect::DetectArgs),
    /// Which build each requirement resolves to on this machine (or `--machine`), and why the
    /// others were rejected: from the catalog, or from a real index page with `--index`.
    Select(select::SelectArgs),
    /// Run the proxy: one index URL that gives every machine the right PyTorch build.
    Serve(serve::ServeArgs),
    /// Print the configuration that points an installer on this machine (pip, uv, Poetry, PDM,
    /// CI variables: `--format`) at a wheelgate server.
    PipConfig(pip_config::PipConfigArgs),
    /// Mirror a declared set of packages into a store for an offline server.
    Mirror(mirror::MirrorArgs),
    /// Show the effective configuration of `wheelgate serve`: values, sources, secrets redacted.
    Config(config_show::ConfigArgs),
    /// The build facts: `show` the effective catalog, `check` it against a real listing.
    Catalog(catalog::CatalogArgs),
}

/// Why a subcommand failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Detect(#[from] detect::DetectCommandError),
    #[error(transparent)]
    Select(#[from] select::SelectCommandError),
    #[error(transparent)]
    Serve(#[from] serve::ServeCommandError),
    #[error(transparent)]
    PipConfig(#[from] pip_config::PipConfigError),
    #[error(transparent)]
    Mirror(#[from] mirror::MirrorCommandError),
    #[error(transparent)]
    Config(#[from] config_show::ConfigShowError),
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogCommandError),
}

/// The whole program: parses `args` (the program name first), sets up logging, runs one
/// subcommand, and returns its exit code (see [`exit`]). Usage errors, `--help` and `--version`
/// are printed as clap prints them, with clap's exit code.
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = match Cli::try_parse_from(args) {
        Ok(args) => args,
        Err(error) => {
            // What `Cli::parse` would do, without ending the process: the Python package calls
            // this inside its interpreter.
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(exit::USAGE);
        }
    };
    if let Err(error) = logging::init(args.log_format) {
        eprintln!("wheelgate: {error}");
        return exit::USAGE;
    }
    match run(args.command) {
        Ok(()) => exit::OK,
        Err(error) => {
            // anyhow's alternate form prints the whole chain of causes on one line.
            let error = anyhow::Error::from(error);
            eprintln!("wheelgate: {error:#}");
            exit::FAILURE
        }
    }
}

/// Runs one subcommand.
pub fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Detect(args) => detect::run(&args)?,
        Command::Select(args) => select::run(&args)?,
        Command::Serve(args) => serve::run(&args)?,
        Command::PipConfig(args) => pip_config::run(&args)?,
        Command::Mirror(args) => mirror::run(&args)?,
        Command::Config(args) => config_show::run(&args)?,
        Command::Catalog(args) => catalog::run(&args)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_and_token_exclude_each_other() {
        assert!(Cli::try_parse_from(["wheelgate", "detect", "--json", "--token"]).is_err());
        assert!(Cli::try_parse_from(["wheelgate", "detect", "--token"]).is_ok());
    }
}
