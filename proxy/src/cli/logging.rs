//! Logging to standard error with `RUST_LOG`-style filtering (default: warnings), as text for
//! people or JSON lines for log collectors.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The log format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per event.
    Json,
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("`RUST_LOG` is not a valid filter")]
    Filter(#[source] tracing_subscriber::filter::ParseError),
    #[error("a logger was already installed")]
    Installed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Installs the global subscriber.
pub fn init(format: LogFormat) -> Result<(), LoggingError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => {
            EnvFilter::try_new(spec).map_err(LoggingError::Filter)?
        }
        _ => EnvFilter::new("warn"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal, not for a log file or a collector.
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    }
    .map_err(LoggingError::Installed)
}
