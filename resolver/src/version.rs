//! Small version types of the accelerator world: CUDA versions (`12.8`), NVIDIA driver versions
//! (`580.65.06`), compute capabilities (`8.6`) and dotted versions (`6.2.4` for ROCm).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A version string that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a valid {what} (expected {expected})")]
pub struct VersionParseError {
    /// The text as given.
    pub text: String,
    /// What it should have been (`CUDA version`, `compute capability`).
    pub what: &'static str,
    /// The accepted form, quoted in the message.
    pub expected: &'static str,
}

/// A dotted numeric version such as `6.2.4` or `580.65.06`, compared component by component
/// numerically (`580.65.06` < `580.105.08`); missing trailing components count as zero.
///
/// Shared, not copied, when cloned: a ROCm backend is cloned for every file of a page that names
/// it, and copying two allocations each time was a measurable part of a selection.
#[derive(Debug, Clone)]
pub struct DottedVersion {
    parts: Arc<[u32]>,
    text: Arc<str>,
}

impl DottedVersion {
    /// The numeric components.
    pub fn parts(&self) -> &[u32] {
        &self.parts
    }

    /// The first component.
    pub fn major(&self) -> u32 {
        self.parts[0]
    }
}

impl FromStr for DottedVersion {
    type Err = VersionParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || VersionParseError {
            text: text.to_string(),
            what: "version",
            expected: "dot-separated numbers such as `6.2.4`",
        };
        let text = text.trim();
        if text.is_empty() || text.len() > 64 {
            return Err(error());
        }
        let parts = text
            .split('.')
            .map(|part| {
                if part.is_empty() || part.len() > 9 || !part.bytes().all(|b| b.is_ascii_digit()) {
                    Err(error())
                } else {
                    part.parse::<u32>().map_err(|_| error())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DottedVersion {
            parts: parts.into(),
            text: text.into(),
        })
    }
}

impl PartialEq for DottedVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for DottedVersion {}

impl std::hash::Hash for DottedVersion {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let significant = self
            .parts
            .iter()
            .rposition(|p| *p != 0)
            .map_or(0, |i| i + 1);
        self.parts[..significant].hash(state);
    }
}

impl PartialOrd for DottedVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DottedVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        let len = self.parts.len().max(other.parts.len());
        for i in 0..len {
            let a = self.parts.get(i).copied().unwrap_or(0);
            let b = other.parts.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        Ordering::Equal
    }
}

impl fmt::Display for DottedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for DottedVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DottedVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A CUDA version, `major.minor` (`12.8`, `13.0`). NVML and libcuda report it as an integer
/// (`12080`), see [`CudaVersion::from_driver_api`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CudaVersion {
    /// The major version (`12` in `12.8`).
    pub major: u16,
    /// The minor version (`8` in `12.8`).
    pub minor: u16,
}

impl CudaVersion {
    /// A CUDA version from its two parts.
    pub const fn new(major: u16, minor: u16) -> Self {
        CudaVersion { major, minor }
    }

    /// Converts the integer of `cuDriverGetVersion` / `nvmlSystemGetCudaDriverVersion_v2`
    /// (`12080` → 12.8, `13000` → 13.0).
    pub fn from_driver_api(value: u32) -> Option<Self> {
        let major = u16::try_from(value / 1000).ok()?;
        let minor = u16::try_from((value % 1000) / 10).ok()?;
        (major > 0).then_some(CudaVersion { major, minor })
    }
}

impl FromStr for CudaVersion {
    type Err = VersionParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || VersionParseError {
            text: text.to_string(),
            what: "CUDA version",
            expected: "`major.minor` such as `12.8`",
        };
        let (major, minor) = text.trim().split_once('.').unwrap_or((text.trim(), "0"));
        let major: u16 = major.parse().map_err(|_| error())?;
        let minor: u16 = minor.parse().map_err(|_| error())?;
        if major == 0 || major > 99 || minor > 99 {
            return Err(error());
        }
        Ok(CudaVersion { major, minor })
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// An NVIDIA GPU's compute capability, `major.minor` (`8.6` for an RTX 3090, `12.0` for an
/// RTX 5090). See NVIDIA's "CUDA GPUs" table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComputeCapability {
    /// The major number (`8` in `sm_86`).
    pub major: u8,
    /// The minor number (`6` in `sm_86`).
    pub minor: u8,
}

impl ComputeCapability {
    /// A compute capability from its two parts.
    pub const fn new(major: u8, minor: u8) -> Self {
        ComputeCapability { major, minor }
    }

    /// Reads the `sm_arch` form of the wheel-variant providers: `86` → 8.6, `120` → 12.0
    /// (the last digit is the minor).
    pub fn from_sm_digits(digits: &str) -> Option<Self> {
        if digits.len() < 2 || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(ComputeCapability {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// The `sm_arch` digits (`8.6` → `86`).
    pub fn sm_digits(self) -> String {
        format!("{}{}", self.major, self.minor)
    }
}

impl FromStr for ComputeCapability {
    type Err = VersionParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || VersionParseError {
            text: text.to_string(),
            what: "compute capability",
            expected: "`major.minor` such as `8.6` or `12.0`",
        };
        let trimmed = text.trim().trim_start_matches("sm_");
        let (major, minor) = trimmed.split_once('.').ok_or_else(error)?;
        let major: u8 = major.parse().map_err(|_| error())?;
        let minor: u8 = minor.parse().map_err(|_| error())?;
        if major == 0 || major > 30 || minor > 9 {
            return Err(error());
        }
        Ok(ComputeCapability { major, minor })
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

macro_rules! serde_via_str {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}
serde_via_str!(CudaVersion, ComputeCapability);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_compare_numerically() {
        let a: DottedVersion = "580.65.06".parse().unwrap();
        let b: DottedVersion = "580.105.08".parse().unwrap();
        let floor: DottedVersion = "580".parse().unwrap();
        assert!(a < b);
        assert!(a >= floor);
        assert!("575.57.08".parse::<DottedVersion>().unwrap() < floor);
        assert_eq!(
            "6.4".parse::<DottedVersion>().unwrap(),
            "6.4.0".parse().unwrap()
        );
    }

    #[test]
    fn rejects_garbage_versions() {
        for text in ["", "abc", "1..2", "1.2.", "-1", "1.2a"] {
            assert!(text.parse::<DottedVersion>().is_err(), "{text}");
        }
        assert!("x".parse::<CudaVersion>().is_err());
        assert!("8".parse::<ComputeCapability>().is_err());
        assert!("8.10".parse::<ComputeCapability>().is_err());
    }

    #[test]
    fn cuda_version_from_driver_api() {
        assert_eq!(
            CudaVersion::from_driver_api(12080),
            Some(CudaVersion::new(12, 8))
        );
        assert_eq!(
            CudaVersion::from_driver_api(13000),
            Some(CudaVersion::new(13, 0))
        );
        assert_eq!(CudaVersion::from_driver_api(0), None);
    }

    #[test]
    fn sm_digits_round_trip() {
        assert_eq!(
            ComputeCapability::from_sm_digits("120"),
            Some(ComputeCapability::new(12, 0))
        );
        assert_eq!(
            ComputeCapability::from_sm_digits("86").unwrap().sm_digits(),
            "86"
        );
        assert_eq!(ComputeCapability::from_sm_digits("8"), None);
    }
}
