//! `wheelgate pip-config --proxy URL [--format pip|uv|poetry|pdm|env]`: a ready configuration
//! that points an installer on this machine at a wheelgate server, with this machine's
//! description in the URL (`/m/<token>/simple/`). Credentials given in the proxy URL
//! (`http://user:password@host:3141`) go where each installer takes them (`formats.rs`).

pub use wheelgate_server::installer_config::{Format, INDEX_NAME, Index, render};

use std::io::{self, Write};

use wheelgate_resolver::token;
use wheelgate_selectors::overrides::{Env, OverrideError};
use wheelgate_selectors::{DetectError, ProbeContext, detect};

/// Arguments of `wheelgate pip-config`.
#[derive(Debug, clap::Args)]
pub struct PipConfigArgs {
    /// The wheelgate server's base URL, e.g. `http://wheelgate.internal:3141`.
    /// Credentials, if the server asks for them, go in it: `http://user:password@host:3141`.
    #[arg(long, value_name = "URL")]
    pub proxy: String,
    /// Which installer's configuration to print.
    #[arg(long, value_enum, default_value_t = Format::Pip)]
    pub format: Format,
}

/// Why `wheelgate pip-config` failed.
#[derive(Debug, thiserror::Error)]
pub enum PipConfigError {
    #[error("invalid override; unset it or fix its value")]
    Override(#[source] OverrideError),
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error(
        "`{0}` is not an http(s) URL; pass the server's base URL such as `http://wheelgate.internal:3141`"
    )]
    Url(String),
    #[error("could not write the output")]
    Output(#[from] io::Error),
}

/// Runs `wheelgate pip-config`.
pub fn run(args: &PipConfigArgs) -> Result<(), PipConfigError> {
    let base = args.proxy.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://"))
        || base.contains(char::is_whitespace)
    {
        // The URL may carry a password: never echo it.
        return Err(PipConfigError::Url(wheelgate_index::upstream::redact(
            &args.proxy,
        )));
    }
    let ctx = ProbeContext::from_env(Env::from_process()).map_err(PipConfigError::Override)?;
    let detection = detect(&ctx)?;
    let index = format!("{base}/m/{}/simple/", token::encode(&detection.machine));
    let mut out = io::stdout().lock();
    writeln!(out, "{}", render(args.format, &index))?;
    Ok(())
}
