//! `wheelgate pip-config --proxy URL`: a ready pip.conf and uv.toml that point this machine at a
//! wheelgate server, with this machine's description in the URL (`/m/<token>/simple/`).

use std::io::{self, Write};

use wheelgate_resolver::token;
use wheelgate_selectors::overrides::{Env, OverrideError};
use wheelgate_selectors::{DetectError, ProbeContext, detect};

/// Arguments of `wheelgate pip-config`.
#[derive(Debug, clap::Args)]
pub struct PipConfigArgs {
    /// The wheelgate server's base URL, e.g. `http://wheelgate.internal:3141`.
    #[arg(long, value_name = "URL")]
    pub proxy: String,
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
        return Err(PipConfigError::Url(args.proxy.clone()));
    }
    let ctx = ProbeContext::from_env(Env::from_process()).map_err(PipConfigError::Override)?;
    let detection = detect(&ctx)?;
    let index = format!("{base}/m/{}/simple/", token::encode(&detection.machine));
    let mut out = io::stdout().lock();
    writeln!(out, "{}", render(&index))?;
    Ok(())
}

/// Both files, each under a comment naming where it goes.
pub fn render(index: &str) -> String {
    format!(
        "# pip: ~/.config/pip/pip.conf (or PIP_INDEX_URL={index})\n[global]\nindex-url = {index}\n\n\
         # uv: ~/.config/uv/uv.toml (or UV_INDEX_URL={index})\n[[index]]\nurl = \"{index}\"\ndefault = true"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_both_files() {
        let text = super::render("http://h:3141/m/abc/simple/");
        assert!(text.contains("[global]\nindex-url = http://h:3141/m/abc/simple/"));
        assert!(text.contains("url = \"http://h:3141/m/abc/simple/\"\ndefault = true"));
    }
}
