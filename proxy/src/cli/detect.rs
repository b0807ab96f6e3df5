//! `wheelgate detect`: the machine as a table of facts with their sources, as JSON (the machine
//! model, which `/m/` URLs and other hosts accept), or as the token for `/m/<token>/`.

use std::io::{self, Write};
use std::path::PathBuf;

use wheelgate_resolver::token;
use wheelgate_selectors::overrides::{self, Env, OverrideError};
use wheelgate_selectors::{DetectError, Detection, ProbeContext, detect};

/// Arguments of `wheelgate detect`.
#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)] // independent command-line flags, not a state machine
pub struct DetectArgs {
    /// Print the machine model as JSON.
    #[arg(long, conflicts_with = "token")]
    pub json: bool,
    /// With `--json`: also print every fact's source and what was tried before it.
    #[arg(long, requires = "json")]
    pub sources: bool,
    /// Print the compact machine token for `/m/<token>/simple/` URLs.
    #[arg(long)]
    pub token: bool,
    /// Describe a captured tree instead of this machine (like `WHEELGATE_SYSROOT`).
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// List, under each fact, the sources that did not answer and why.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Why `wheelgate detect` failed.
#[derive(Debug, thiserror::Error)]
pub enum DetectCommandError {
    #[error("invalid override; unset it or fix its value")]
    Override(#[source] OverrideError),
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error("could not write the output")]
    Output(#[from] io::Error),
    #[error("could not encode the machine as JSON")]
    Json(#[from] serde_json::Error),
}

/// Runs `wheelgate detect`.
pub fn run(args: &DetectArgs) -> Result<(), DetectCommandError> {
    let env = Env::from_process();
    let ctx = match &args.sysroot {
        Some(root) => ProbeContext::new(root, env),
        None => ProbeContext::from_env(env),
    }
    .map_err(DetectCommandError::Override)?;
    let detection = detect(&ctx)?;
    // The machine is printed as found (a token or a JSON file made from it can then be checked
    // anywhere), but `WHEELGATE_*` overrides can describe one that cannot exist: said on
    // standard error, as `serve` says it, before anyone builds a rule or a mirror on it.
    let source = "this host's probes and WHEELGATE_* overrides";
    match detection
        .machine
        .check_plausible(wheelgate_resolver::Catalog::embedded())
    {
        Err(impossible) => tracing::warn!(source, "{impossible}"),
        Ok(doubts) => {
            for doubt in doubts {
                tracing::warn!(source, "{doubt}");
            }
        }
    }
    let mut out = io::stdout().lock();
    if args.token {
        writeln!(out, "{}", token::encode(&detection.machine))?;
    } else if args.json && args.sources {
        serde_json::to_writer_pretty(&mut out, &detection)?;
        writeln!(out)?;
    } else if args.json {
        serde_json::to_writer_pretty(&mut out, &detection.machine)?;
        writeln!(out)?;
    } else {
        write_table(&mut out, &detection, args.verbose)?;
    }
    out.flush()?;
    Ok(())
}

/// Longest value shown in the table's middle column before the source.
const VALUE_WIDTH: usize = 56;

/// The human table: one fact per line, `name  value  source`.
fn write_table(out: &mut impl Write, detection: &Detection, verbose: bool) -> io::Result<()> {
    let facts: Vec<_> = detection.facts.iter().collect();
    let name_width = facts.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let value_width = facts
        .iter()
        .filter_map(|f| f.value.as_ref().map(String::len))
        .max()
        .unwrap_or(0)
        .min(VALUE_WIDTH);
    let mut hidden = 0;
    for fact in &facts {
        let value = fact.value.as_deref().unwrap_or("unknown");
        let source = match (&fact.source, fact.tried.last()) {
            (Some(source), _) => source.to_string(),
            (None, Some(last)) if !verbose => format!("({}: {})", last.source, last.reason),
            (None, _) => String::new(),
        };
        let line = format!("{:name_width$}  {value:value_width$}  {source}", fact.name);
        writeln!(out, "{}", line.trim_end())?;
        if verbose {
            for attempt in &fact.tried {
                writeln!(
                    out,
                    "{:name_width$}    tried {}: {}",
                    "", attempt.source, attempt.reason
                )?;
            }
        } else {
            hidden += fact.tried.len();
        }
    }
    writeln!(out)?;
    writeln!(out, "token  {}", token::encode(&detection.machine))?;
    if let Some(pin) = &detection.backend_pin {
        writeln!(out, "pin    {pin} (from {})", overrides::BACKEND)?;
    }
    if hidden > 0 {
        writeln!(
            out,
            "\n{hidden} other sources did not answer; `wheelgate detect -v` lists them, `--json --sources` too."
        )?;
    }
    Ok(())
}
