//! `nvidia-smi`, the last resort: a subprocess costing tens of milliseconds, but the only source
//! on WSL2 without NVML in the loader's path, and a second opinion where a model name is not in
//! the table.

use std::path::Path;
use std::time::Duration;

use wheelgate_resolver::{ComputeCapability, DottedVersion};

use crate::command::{self, CommandError};

/// The query of [`run`]; `compute_cap` needs driver 510 or newer.
pub const QUERY: &str = "--query-gpu=driver_version,compute_cap,name";
/// The query for older drivers, which refuse `compute_cap`.
pub const LEGACY_QUERY: &str = "--query-gpu=driver_version,name";

/// One GPU line of `nvidia-smi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmiGpu {
    /// The driver version (`580.65.06`).
    pub driver_version: Option<DottedVersion>,
    /// The GPU's compute capability (`9.0`).
    pub compute_capability: Option<ComputeCapability>,
    /// The GPU's name (`NVIDIA H100 80GB HBM3`).
    pub name: Option<String>,
}

/// Why `nvidia-smi` gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum SmiError {
    #[error(transparent)]
    /// `nvidia-smi` could not be run or failed.
    Command(#[from] CommandError),
    #[error("`nvidia-smi` listed no GPU: `{0}`")]
    /// `nvidia-smi` printed no GPU line; holds the start of its output.
    NoGpu(String),
}

fn field(text: &str) -> Option<&str> {
    let text = text.trim();
    // `[N/A]`, `[Not Supported]`, `[Unknown Error]`
    (!text.is_empty() && !text.starts_with('[')).then_some(text)
}

/// Reads the output of `nvidia-smi --query-gpu=driver_version,compute_cap,name
/// --format=csv,noheader`, one line per GPU:
/// ```text
/// 580.65.06, 9.0, NVIDIA H100 80GB HBM3
/// 580.65.06, 9.0, NVIDIA H100 80GB HBM3
/// ```
/// With `with_capability` false, the legacy two-column form `470.256.02, Tesla T4`.
pub fn parse_query(content: &str, with_capability: bool) -> Result<Vec<SmiGpu>, SmiError> {
    let columns = if with_capability { 3 } else { 2 };
    let mut gpus = Vec::new();
    for line in content.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.splitn(columns, ',').collect();
        if fields.len() != columns {
            continue;
        }
        let Some(driver_version) = field(fields[0]).and_then(|v| v.parse().ok()) else {
            // Not a GPU line: an error message such as "No devices were found".
            continue;
        };
        let compute_capability = if with_capability {
            field(fields[1]).and_then(|v| v.parse().ok())
        } else {
            None
        };
        gpus.push(SmiGpu {
            driver_version: Some(driver_version),
            compute_capability,
            name: field(fields[columns - 1]).map(str::to_string),
        });
    }
    if gpus.is_empty() {
        let first = content.lines().next().unwrap_or_default().trim();
        return Err(SmiError::NoGpu(first.chars().take(120).collect()));
    }
    Ok(gpus)
}

/// Runs `nvidia-smi` at `program`, with the legacy query if the driver refuses `compute_cap`.
pub fn run(program: &Path, limit: Duration) -> Result<Vec<SmiGpu>, SmiError> {
    match command::run(program, &[QUERY, "--format=csv,noheader"], limit) {
        Ok(output) => parse_query(&output, true),
        Err(CommandError::Failed { output, .. }) if output.contains("not a valid field") => {
            let output = command::run(program, &[LEGACY_QUERY, "--format=csv,noheader"], limit)?;
            parse_query(&output, false)
        }
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_gpu_line() {
        let output = "580.65.06, 8.0, NVIDIA A100-SXM4-80GB\n580.65.06, 7.5, Tesla T4\n";
        let gpus = parse_query(output, true).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[1].name.as_deref(), Some("Tesla T4"));
        assert_eq!(
            gpus[1].compute_capability,
            Some(ComputeCapability::new(7, 5))
        );
    }

    #[test]
    fn reads_legacy_output_and_placeholders() {
        let gpus = parse_query("470.256.02, Tesla T4\n", false).unwrap();
        assert_eq!(gpus[0].compute_capability, None);
        let gpus = parse_query("580.65.06, [N/A], NVIDIA Graphics Device\n", true).unwrap();
        assert_eq!(gpus[0].compute_capability, None);
    }

    #[test]
    fn refuses_error_messages_and_garbage() {
        for output in [
            "",
            "No devices were found\n",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
            "\u{0}\u{1}garbage,,,\n",
            "580.65.06, 9.0",
        ] {
            assert!(parse_query(output, true).is_err(), "{output:?}");
        }
    }
}
