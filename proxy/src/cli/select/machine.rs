//! `wheelgate select --machine TOKEN|FILE`: choose for another machine, described by the token
//! `wheelgate detect --token` printed there, or by a file holding `wheelgate detect --json`
//! output (or a token). Nothing of the local machine is probed then.

use std::path::Path;

use wheelgate_resolver::machine::ImplausibleMachine;
use wheelgate_resolver::token::{self, TokenError};
use wheelgate_resolver::{Catalog, Machine};

/// A `--machine` value that describes no machine.
#[derive(Debug, thiserror::Error)]
pub enum MachineArgError {
    #[error("could not read the machine file `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the machine file `{path}` is not `wheelgate detect --json` output")]
    Json {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{source_name} describes a machine that cannot exist")]
    Implausible {
        /// `the machine file `...``, `the machine token `...``.
        source_name: String,
        #[source]
        reason: ImplausibleMachine,
    },
    #[error("`{text}` is neither a machine file nor a machine token")]
    Token {
        text: String,
        #[source]
        source: TokenError,
    },
}

/// Reads `--machine`: an existing file (JSON, or a token in it), else a token. A machine that
/// cannot exist (an NVIDIA GPU on a Mac) is refused with the file or token named; a doubtful one
/// is logged and used.
pub fn read_machine(arg: &str) -> Result<Machine, MachineArgError> {
    let (machine, source) = decode_machine(arg)?;
    let doubts = machine
        .check_plausible(Catalog::embedded())
        .map_err(|reason| MachineArgError::Implausible {
            source_name: source.clone(),
            reason,
        })?;
    for doubt in doubts {
        tracing::warn!(source = %source, "{doubt}");
    }
    Ok(machine)
}

/// The machine of `--machine` and how messages name where it came from.
fn decode_machine(arg: &str) -> Result<(Machine, String), MachineArgError> {
    let path = Path::new(arg);
    if path.is_file() {
        let content = std::fs::read_to_string(path).map_err(|source| MachineArgError::Read {
            path: arg.to_string(),
            source,
        })?;
        let content = content.trim();
        let machine = if content.starts_with('{') {
            serde_json::from_str(content).map_err(|source| MachineArgError::Json {
                path: arg.to_string(),
                source,
            })?
        } else {
            token::decode(content).map_err(|source| MachineArgError::Token {
                text: shorten(content),
                source,
            })?
        };
        return Ok((machine, format!("the machine file `{arg}`")));
    }
    let machine = token::decode(arg.trim()).map_err(|source| MachineArgError::Token {
        text: shorten(arg),
        source,
    })?;
    Ok((
        machine,
        format!("the machine token `{}`", shorten(arg.trim())),
    ))
}

/// At most 80 characters of a value, for messages.
fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tokens_json_files_and_token_files() {
        let machine: Machine = serde_json::from_str(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"7.0"}]}}"#,
        )
        .unwrap();
        let encoded = token::encode(&machine);
        assert_eq!(read_machine(&encoded).unwrap(), machine);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("machine.json");
        std::fs::write(&json, serde_json::to_string_pretty(&machine).unwrap()).unwrap();
        assert_eq!(read_machine(json.to_str().unwrap()).unwrap(), machine);
        let token_file = dir.path().join("machine.token");
        std::fs::write(&token_file, format!("{encoded}\n")).unwrap();
        assert_eq!(read_machine(token_file.to_str().unwrap()).unwrap(), machine);
    }

    #[test]
    fn impossible_facts_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("machine.json");
        std::fs::write(
            &json,
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"abc","gpus":[]}}"#,
        )
        .unwrap();
        let chain = |error: MachineArgError| {
            format!("{error}: {}", std::error::Error::source(&error).unwrap())
        };
        let text = chain(read_machine(json.to_str().unwrap()).unwrap_err());
        assert!(text.contains("`abc` is not a valid version"), "{text}");
        let text = chain(read_machine("1-lx-n580-s99.9").unwrap_err());
        assert!(text.contains("s99.9"), "{text}");
        assert!(read_machine("no-such-file.json").is_err());
    }

    #[test]
    fn machines_that_cannot_exist_are_refused_with_the_source_named() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("mac.json");
        std::fs::write(
            &json,
            r#"{"platform":"macos-arm64","nvidia":{"gpus":[{"compute_capability":"9.0"}]}}"#,
        )
        .unwrap();
        let chain = |error: MachineArgError| {
            format!("{error}: {}", std::error::Error::source(&error).unwrap())
        };
        let path = json.to_str().unwrap();
        let text = chain(read_machine(path).unwrap_err());
        assert!(
            text.contains(&format!("the machine file `{path}` describes a machine that cannot exist: a `macos-arm64` machine cannot have NVIDIA GPUs")),
            "{text}"
        );
        let text = chain(read_machine("1-wx-m-k1100").unwrap_err());
        assert!(
            text.contains("the machine token `1-wx-m-k1100` describes a machine that cannot exist: a `windows-x86_64` machine cannot use its AMD GPU `gfx1100`"),
            "{text}"
        );
        // Doubtful, not impossible: an unknown gfx target is used (and logged).
        let machine = read_machine("1-lx-m-k9999").unwrap();
        assert_eq!(machine.amd.unwrap().gpus[0].gfx.as_str(), "gfx9999");
    }
}
