//! Backends: the accelerator stacks PyTorch builds for (`cpu`, `cu128`, `rocm6.4`, `xpu`), as
//! named by download.pytorch.org's path segments, local version labels and variant labels.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::version::{CudaVersion, DottedVersion};

/// One accelerator stack a build targets.
///
/// The textual form is the download.pytorch.org path segment: `cpu`, `cu128` (CUDA 12.8),
/// `rocm6.2.4`, `xpu`. The ordering is "newer is greater" within a kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// CPU-only build (`cpu`; the unlabelled macOS wheels; variant labels `null`, `00000000`).
    Cpu,
    /// NVIDIA CUDA build (`cu118`, `cu128`, `cu130`, ...).
    Cuda(CudaVersion),
    /// AMD ROCm build (`rocm6.4`, `rocm6.2.4`, `rocm7.14`, ...).
    Rocm(DottedVersion),
    /// Intel XPU build (`xpu`).
    Xpu,
}

/// The accelerator family a backend belongs to, used for preference between families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// A CPU-only build (`cpu`).
    Cpu,
    /// An NVIDIA CUDA build (`cu128`).
    Cuda,
    /// An AMD ROCm build (`rocm6.4`).
    Rocm,
    /// An Intel XPU build (`xpu`).
    Xpu,
}

/// A string that names no backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a backend name (expected `cpu`, `cuXYZ` such as `cu128`, `rocmX.Y` such as `rocm6.4`, or `xpu`)"
)]
pub struct BackendParseError(pub String);

impl Backend {
    /// The family of this backend.
    pub fn kind(&self) -> BackendKind {
        match self {
            Backend::Cpu => BackendKind::Cpu,
            Backend::Cuda(_) => BackendKind::Cuda,
            Backend::Rocm(_) => BackendKind::Rocm,
            Backend::Xpu => BackendKind::Xpu,
        }
    }

    /// Reads a wheel-variant label as PyTorch publishes them: `cuda12.8`, `rocm6.4`, `xpu`,
    /// `null` (CPU), and torch 2.8's `cu126` and `00000000`.
    pub fn from_variant_label(label: &str) -> Option<Backend> {
        match label {
            "null" | "00000000" | "cpu" => Some(Backend::Cpu),
            _ => {
                if let Some(rest) = label.strip_prefix("cuda") {
                    rest.parse().ok().map(Backend::Cuda)
                } else {
                    label.parse().ok()
                }
            }
        }
    }

    /// Compares two backends of the same kind, newest greater; different kinds compare by kind.
    pub fn newness(&self, other: &Backend) -> Ordering {
        self.cmp(other)
    }
}

impl FromStr for Backend {
    type Err = BackendParseError;

    /// Parses a path segment or local version label: `cpu`, `cu92`, `cu118`, `cu128`, `cu134`,
    /// `rocm6.2.4`, `xpu`. Variants such as `cpu-cxx11-abi` or `cu117-pypi-cudnn` are other
    /// indexes, not backends, and are rejected.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || BackendParseError(text.to_string());
        match text {
            "cpu" => return Ok(Backend::Cpu),
            "xpu" => return Ok(Backend::Xpu),
            _ => {}
        }
        if let Some(digits) = text.strip_prefix("cu") {
            // `cu128` is CUDA 12.8: the last digit is the minor version, the rest the major.
            if digits.len() < 2 || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(error());
            }
            let (major, minor) = digits.split_at(digits.len() - 1);
            let major: u16 = major.parse().map_err(|_| error())?;
            let minor: u16 = minor.parse().map_err(|_| error())?;
            if major == 0 {
                return Err(error());
            }
            return Ok(Backend::Cuda(CudaVersion::new(major, minor)));
        }
        if let Some(version) = text.strip_prefix("rocm") {
            let version: DottedVersion = version.parse().map_err(|_| error())?;
            return Ok(Backend::Rocm(version));
        }
        Err(error())
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Cpu => f.write_str("cpu"),
            Backend::Cuda(v) => write!(f, "cu{}{}", v.major, v.minor),
            Backend::Rocm(v) => write!(f, "rocm{v}"),
            Backend::Xpu => f.write_str("xpu"),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cpu => "CPU",
            BackendKind::Cuda => "CUDA",
            BackendKind::Rocm => "ROCm",
            BackendKind::Xpu => "XPU",
        })
    }
}

impl Serialize for Backend {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Backend {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_real_backend_segments() {
        for (text, shown) in [
            ("cpu", "cpu"),
            ("cu92", "cu92"),
            ("cu118", "cu118"),
            ("cu128", "cu128"),
            ("cu130", "cu130"),
            ("cu134", "cu134"),
            ("rocm6.2.4", "rocm6.2.4"),
            ("rocm7.14", "rocm7.14"),
            ("xpu", "xpu"),
        ] {
            let backend: Backend = text.parse().unwrap();
            assert_eq!(backend.to_string(), shown);
        }
        let cu128: Backend = "cu128".parse().unwrap();
        assert_eq!(cu128, Backend::Cuda(CudaVersion::new(12, 8)));
    }

    #[test]
    fn rejects_other_index_names() {
        for text in [
            "cpu-cxx11-abi",
            "cu117-pypi-cudnn",
            "nightly",
            "cu",
            "cu1",
            "rocm",
            "rocmx",
            "",
            "cu0",
        ] {
            assert!(text.parse::<Backend>().is_err(), "{text}");
        }
    }

    #[test]
    fn orders_newest_last_within_kind() {
        let mut list: Vec<Backend> = ["cu130", "cu126", "cu128", "rocm6.4", "rocm6.2.4", "rocm7.2"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        list.sort();
        let shown: Vec<String> = list.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["cu126", "cu128", "cu130", "rocm6.2.4", "rocm6.4", "rocm7.2"]
        );
    }

    #[test]
    fn reads_variant_labels() {
        assert_eq!(
            Backend::from_variant_label("cuda12.8"),
            Some("cu128".parse().unwrap())
        );
        assert_eq!(Backend::from_variant_label("null"), Some(Backend::Cpu));
        assert_eq!(Backend::from_variant_label("00000000"), Some(Backend::Cpu));
        assert_eq!(
            Backend::from_variant_label("cu129"),
            Some("cu129".parse().unwrap())
        );
        assert_eq!(
            Backend::from_variant_label("rocm6.4"),
            Some("rocm6.4".parse().unwrap())
        );
        assert_eq!(Backend::from_variant_label("x86_64_v3"), None);
    }
}
