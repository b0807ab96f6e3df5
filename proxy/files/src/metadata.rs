//! A distribution's core metadata (the wheel's `METADATA`, or its PEP 658 `.metadata` copy):
//! only what resolution reads, `Requires-Dist` and `Requires-Python`, and the per-GPU device
//! extras it declares (`Provides-Extra: device-gfx942`, AMD's multi-arch packaging).

use std::str::FromStr;

use pep440_rs::VersionSpecifiers;
use pep508_rs::{Requirement, VerbatimUrl};

/// What resolution needs from one distribution's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    /// Every `Requires-Dist`, markers (extras included) still to evaluate.
    pub requires_dist: Vec<Requirement<VerbatimUrl>>,
    /// `Requires-Python`, when given.
    pub requires_python: Option<VersionSpecifiers>,
    /// Its `Provides-Extra: device-*` extras (AMD's per-GPU device packages), in file order.
    pub device_extras: Vec<String>,
}

/// Metadata that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("the metadata of `{file}` is not UTF-8")]
    NotUtf8 { file: String },
    #[error("the metadata of `{file}` has an invalid `Requires-Dist: {line}` ({message})")]
    RequiresDist {
        file: String,
        line: String,
        message: String,
    },
    #[error("the metadata of `{file}` has an invalid `Requires-Python: {value}` ({message})")]
    RequiresPython {
        file: String,
        value: String,
        message: String,
    },
    #[error("the metadata of `{file}` has no `Metadata-Version` header: it is not core metadata")]
    NotMetadata { file: String },
}

/// Parses core metadata (an RFC 822 style header block; the description body after the first
/// blank line is ignored). `file` names the distribution in errors. For example:
///
/// ```text
/// Metadata-Version: 2.4
/// Name: torchvision
/// Version: 0.24.0
/// Requires-Python: >=3.10
/// Requires-Dist: numpy
/// Requires-Dist: torch (==2.9.0)
/// Requires-Dist: pillow (!=8.3.*,>=5.3.0)
/// Requires-Dist: scipy; extra == "scipy"
/// ```
pub fn parse_metadata(bytes: &[u8], file: &str) -> Result<Metadata, MetadataError> {
    let text = std::str::from_utf8(bytes).map_err(|_| MetadataError::NotUtf8 {
        file: file.to_string(),
    })?;
    let mut metadata = Metadata::default();
    let mut seen_version_header = false;
    for (name, value) in headers(text) {
        if name.eq_ignore_ascii_case("Metadata-Version") {
            seen_version_header = true;
        } else if name.eq_ignore_ascii_case("Requires-Dist") {
            let requirement =
                Requirement::from_str(&value).map_err(|err| MetadataError::RequiresDist {
                    file: file.to_string(),
                    line: value.clone(),
                    message: err.message.to_string(),
                })?;
            metadata.requires_dist.push(requirement);
        } else if name.eq_ignore_ascii_case("Requires-Python") {
            let specifiers = VersionSpecifiers::from_str(&value).map_err(|err| {
                MetadataError::RequiresPython {
                    file: file.to_string(),
                    value: value.clone(),
                    message: err.to_string(),
                }
            })?;
            metadata.requires_python = Some(specifiers);
        } else if name.eq_ignore_ascii_case("Provides-Extra") && value.starts_with("device-") {
            metadata.device_extras.push(value);
        }
    }
    if !seen_version_header {
        return Err(MetadataError::NotMetadata {
            file: file.to_string(),
        });
    }
    Ok(metadata)
}

/// The header fields up to the first blank line, continuation lines (leading whitespace)
/// joined to the field they continue.
fn headers(text: &str) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = fields.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':') {
            fields.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    // torchvision 0.24.0's METADATA as PyPI serves it (body shortened).
    const TORCHVISION: &str = "Metadata-Version: 2.4\r\nName: torchvision\r\nVersion: 0.24.0\r\nRequires-Python: >=3.10\r\nLicense-File: LICENSE\r\nRequires-Dist: numpy\r\nRequires-Dist: torch (==2.9.0)\r\nRequires-Dist: pillow (!=8.3.*,>=5.3.0)\r\nProvides-Extra: gdown\r\nRequires-Dist: gdown>=4.7.3; extra == \"gdown\"\r\nDescription-Content-Type: text/markdown\r\n\r\nRequires-Dist: not-a-header\n";

    #[test]
    fn requirements_and_python_of_real_metadata() {
        let metadata = parse_metadata(TORCHVISION.as_bytes(), "torchvision.whl").unwrap();
        let names: Vec<String> = metadata
            .requires_dist
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            [
                "numpy",
                "torch==2.9.0",
                "pillow>=5.3.0,!=8.3.*",
                "gdown>=4.7.3 ; extra == 'gdown'"
            ]
        );
        assert_eq!(metadata.requires_python.unwrap().to_string(), ">=3.10");
        assert!(metadata.device_extras.is_empty());
        let amd = "Metadata-Version: 2.4\nName: torch\nProvides-Extra: device-gfx942\nRequires-Dist: amd-torch-device-gfx942==2.10.0; extra == \"device-gfx942\"\nProvides-Extra: opt-einsum\nProvides-Extra: device-gfx90a\n";
        let metadata = parse_metadata(amd.as_bytes(), "torch.whl").unwrap();
        assert_eq!(metadata.device_extras, ["device-gfx942", "device-gfx90a"]);
    }

    #[test]
    fn garbage_is_named() {
        let err = parse_metadata(
            b"Metadata-Version: 2.1\nRequires-Dist: torch (==)\n",
            "t.whl",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`t.whl`"), "{err}");
        assert!(err.contains("`Requires-Dist: torch (==)`"), "{err}");
        let err = parse_metadata(
            b"Metadata-Version: 2.1\nRequires-Python: >=three\n",
            "t.whl",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`Requires-Python: >=three`"), "{err}");
        let err = parse_metadata(b"<html>not found</html>", "t.whl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not core metadata"), "{err}");
        let err = parse_metadata(&[0xff, 0xfe], "t.whl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not UTF-8"), "{err}");
    }
}
