//! The description of a machine that selection works from: platform and accelerators.
//!
//! It is plain data, serializable as JSON, so a machine described on one host (by
//! `wheelgate-selectors` or by hand) can be resolved on another.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::version::{ComputeCapability, CudaVersion, DottedVersion};

mod plausible;

pub use plausible::{
    DRIVER_MAJORS, Doubt, IMPOSSIBLE_COMPUTE_MAJOR, ImplausibleMachine, OLDEST_COMPUTE_CAPABILITY,
};

/// Operating system, as far as wheel selection cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    /// Linux.
    Linux,
    /// Windows.
    Windows,
    /// macOS.
    Macos,
}

/// CPU architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// 64-bit x86 (`x86_64`, `amd64`).
    X86_64,
    /// 64-bit ARM (`aarch64`, `arm64`).
    Aarch64,
    /// IBM Z, Linux only; PyTorch publishes CPU wheels for it (`linux_s390x`).
    S390x,
}

/// An operating system and CPU architecture, written `linux-x86_64`, `linux-aarch64`,
/// `linux-s390x`, `windows-x86_64`, `windows-arm64`, `macos-arm64` (also accepted:
/// `macos-aarch64`, `windows-amd64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Platform {
    /// The operating system.
    pub os: Os,
    /// The CPU architecture.
    pub arch: Arch,
}

/// A platform string that names no platform.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a platform (expected one of `linux-x86_64`, `linux-aarch64`, `linux-s390x`, `windows-x86_64`, `windows-arm64`, `macos-arm64`, `macos-x86_64`)"
)]
pub struct PlatformParseError(pub String);

impl FromStr for Platform {
    type Err = PlatformParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || PlatformParseError(text.to_string());
        let (os, arch) = text.trim().split_once('-').ok_or_else(error)?;
        let os = match os.to_ascii_lowercase().as_str() {
            "linux" => Os::Linux,
            "windows" | "win" => Os::Windows,
            "macos" | "darwin" | "osx" => Os::Macos,
            _ => return Err(error()),
        };
        let arch = match arch.to_ascii_lowercase().as_str() {
            "x86_64" | "amd64" | "x64" => Arch::X86_64,
            "aarch64" | "arm64" => Arch::Aarch64,
            // IBM Z runs Linux only.
            "s390x" if os == Os::Linux => Arch::S390x,
            _ => return Err(error()),
        };
        Ok(Platform { os, arch })
    }
}

impl Platform {
    /// The operating system's and the architecture's names as the platform is written
    /// (`linux`, `x86_64`). Compared as a pair they order platforms as their written names do
    /// (no OS name is a prefix of another), without writing them out.
    pub fn names(self) -> (&'static str, &'static str) {
        let os = match self.os {
            Os::Linux => "linux",
            Os::Windows => "windows",
            Os::Macos => "macos",
        };
        let arch = match (self.os, self.arch) {
            (Os::Macos | Os::Windows, Arch::Aarch64) => "arm64",
            (_, Arch::Aarch64) => "aarch64",
            (_, Arch::X86_64) => "x86_64",
            (_, Arch::S390x) => "s390x",
        };
        (os, arch)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (os, arch) = self.names();
        write!(f, "{os}-{arch}")
    }
}

impl Serialize for Platform {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Platform {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Everything selection needs to know about one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Operating system and CPU architecture.
    pub platform: Platform,
    /// x86-64 microarchitecture level (1 to 4), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x86_64_level: Option<u8>,
    /// aarch64 architecture version such as `8.2a`, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aarch64_version: Option<String>,
    /// glibc version (`2.36`) on Linux; absent for musl or when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<DottedVersion>,
    /// The NVIDIA driver stack and GPUs, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvidia: Option<Nvidia>,
    /// AMD GPUs usable through ROCm, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amd: Option<Amd>,
    /// Intel GPUs, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intel: Option<Intel>,
}

/// The NVIDIA driver and the GPUs it drives.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Nvidia {
    /// Kernel driver version (`580.65.06`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<DottedVersion>,
    /// Highest CUDA version the driver supports (`13.0`), as NVML or libcuda report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<CudaVersion>,
    /// The GPUs the machine will use. Empty when a driver is present but no device is (a
    /// container without GPUs passed through).
    #[serde(default)]
    pub gpus: Vec<NvidiaGpu>,
}

/// One NVIDIA GPU.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NvidiaGpu {
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Compute capability (`9.0`); unknown when only the driver could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<ComputeCapability>,
    /// Integrated GPU (Jetson, DGX Spark's GB10 shares memory but counts as discrete here).
    #[serde(default, skip_serializing_if = "is_false")]
    pub integrated: bool,
}

/// AMD GPUs and the installed ROCm, if any.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Amd {
    /// Installed ROCm user space (`6.4.1`); PyTorch's wheels up to ROCm 7.2 bundle their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocm_version: Option<DottedVersion>,
    #[serde(default)]
    /// The AMD GPUs found, integrated ones included.
    pub gpus: Vec<AmdGpu>,
}

/// One AMD GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AmdGpu {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The marketing name (`Radeon RX 7900 XTX`), where known.
    pub name: Option<String>,
    /// LLVM gfx target (`gfx1100`, `gfx90a`).
    pub gfx: GfxTarget,
    /// An APU's integrated GPU.
    #[serde(default, skip_serializing_if = "is_false")]
    pub integrated: bool,
}

/// Intel GPUs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Intel {
    #[serde(default)]
    /// The Intel GPUs found, integrated ones included.
    pub gpus: Vec<IntelGpu>,
}

/// One Intel GPU.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IntelGpu {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The marketing name (`Arc B580`), where known.
    pub name: Option<String>,
    /// PCI device id (`0xe20b` for an Arc B580).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_device: Option<u16>,
    /// Level Zero device IP version (`20.1.0` for Battlemage), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ip: Option<String>,
    /// Whether the probes found an XPU-class device the runtime can reach (Arc A/B, Data Center
    /// Max, Core Ultra iGPUs by the PCI table or Level Zero, with a render node); older UHD /
    /// Iris Xe iGPUs are not. Selection also needs the catalog to list `device_ip` when it is
    /// known: a stated device IP is judged by the catalog, never taken on trust.
    #[serde(default)]
    pub xpu_capable: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    /// An integrated GPU (Core Ultra, UHD, Iris Xe) rather than a discrete card.
    pub integrated: bool,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(value: &bool) -> bool {
    !*value
}

/// An AMD LLVM gfx target such as `gfx1100`, `gfx90a` or `gfx942`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GfxTarget(String);

/// A string or number that names no gfx target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an AMD gfx target (expected e.g. `gfx1100`, `gfx90a`, `gfx942`)")]
pub struct GfxParseError(pub String);

impl GfxTarget {
    /// Decodes KFD's `gfx_target_version` (major*10000 + minor*100 + stepping): `110000` →
    /// `gfx1100`, `90010` → `gfx90a`, `90402` → `gfx942`. Zero (a CPU node) is `None`.
    pub fn from_kfd_version(value: u32) -> Option<GfxTarget> {
        if value == 0 {
            return None;
        }
        let major = value / 10000;
        let minor = (value / 100) % 100;
        let stepping = value % 100;
        if major == 0 || major > 99 || minor > 15 || stepping > 15 {
            return None;
        }
        Some(GfxTarget(format!("gfx{major}{minor:x}{stepping:x}")))
    }

    /// The target as written (`gfx1100`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for GfxTarget {
    type Err = GfxParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.trim().to_ascii_lowercase();
        // Feature suffixes such as `gfx90a:sramecc+:xnack-` name the same target.
        let base = lower.split(':').next().unwrap_or_default();
        let digits = base
            .strip_prefix("gfx")
            .ok_or_else(|| GfxParseError(text.to_string()))?;
        // `gfx` + major (decimal, no leading zero) + minor and stepping (one hex digit each):
        // `gfx90a` is 9.0.10, `gfx1151` 11.5.1. A hex major (`gfxabc`) is no target.
        let major = digits
            .get(..digits.len().saturating_sub(2))
            .unwrap_or_default();
        let shaped = matches!(major.len(), 1 | 2)
            && !major.starts_with('0')
            && major.bytes().all(|b| b.is_ascii_digit())
            && digits.bytes().all(|b| b.is_ascii_hexdigit());
        if !shaped {
            return Err(GfxParseError(text.to_string()));
        }
        Ok(GfxTarget(base.to_string()))
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for GfxTarget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for GfxTarget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Machine {
    /// A machine with no accelerator on the given platform.
    pub fn cpu_only(platform: Platform) -> Self {
        Machine {
            platform,
            x86_64_level: None,
            aarch64_version: None,
            glibc: None,
            nvidia: None,
            amd: None,
            intel: None,
        }
    }

    /// The same accelerators on `platform`: what selection judges another platform's files
    /// against, so a page holds, for every platform, the build this kind of machine would run
    /// there. The libc and the CPU level are facts of this machine's own OS and CPU, unknown
    /// elsewhere, so they are left out (and every manylinux wheel of `platform` is taken to run).
    #[must_use]
    pub fn elsewhere(&self, platform: Platform) -> Machine {
        if platform == self.platform {
            return self.clone();
        }
        let same_arch = platform.arch == self.platform.arch;
        Machine {
            platform,
            x86_64_level: self.x86_64_level.filter(|_| same_arch),
            aarch64_version: self.aarch64_version.clone().filter(|_| same_arch),
            glibc: None,
            nvidia: self.nvidia.clone(),
            amd: self.amd.clone(),
            intel: self.intel.clone(),
        }
    }

    /// The NVIDIA GPUs the machine will use.
    pub fn nvidia_gpus(&self) -> &[NvidiaGpu] {
        self.nvidia.as_ref().map_or(&[], |n| &n.gpus)
    }

    /// The AMD GPUs the machine will use: the discrete ones when there are any (an APU's
    /// integrated GPU beside a discrete Radeon is not what a user trains on), else all.
    pub fn amd_gpus_in_use(&self) -> Vec<&AmdGpu> {
        let all = self.amd.as_ref().map_or(&[][..], |a| &a.gpus);
        let discrete: Vec<&AmdGpu> = all.iter().filter(|g| !g.integrated).collect();
        if discrete.is_empty() {
            all.iter().collect()
        } else {
            discrete
        }
    }

    /// The Intel GPUs that PyTorch's XPU builds support.
    pub fn xpu_gpus(&self) -> Vec<&IntelGpu> {
        self.intel.as_ref().map_or(Vec::new(), |i| {
            i.gpus.iter().filter(|g| g.xpu_capable).collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_kfd_gfx_target_versions() {
        for (value, name) in [
            (110_000, "gfx1100"),
            (90010, "gfx90a"),
            (90402, "gfx942"),
            (100_300, "gfx1030"),
            (120_001, "gfx1201"),
            (110_501, "gfx1151"),
        ] {
            assert_eq!(GfxTarget::from_kfd_version(value).unwrap().as_str(), name);
        }
        assert_eq!(GfxTarget::from_kfd_version(0), None);
    }

    #[test]
    fn gfx_parse_drops_feature_suffix() {
        assert_eq!(
            "gfx90a:sramecc+:xnack-"
                .parse::<GfxTarget>()
                .unwrap()
                .as_str(),
            "gfx90a"
        );
        assert!("gfx".parse::<GfxTarget>().is_err());
        assert!("sm_90".parse::<GfxTarget>().is_err());
        for not_shaped in ["gfxabc", "gfx0a0", "gfx12345", "gfx10", "gfx9z9"] {
            assert!(not_shaped.parse::<GfxTarget>().is_err(), "{not_shaped}");
        }
        assert_eq!("gfx9999".parse::<GfxTarget>().unwrap().as_str(), "gfx9999");
    }

    #[test]
    fn platform_round_trips() {
        for text in [
            "linux-x86_64",
            "linux-aarch64",
            "linux-s390x",
            "windows-x86_64",
            "macos-arm64",
        ] {
            assert_eq!(text.parse::<Platform>().unwrap().to_string(), text);
        }
        assert!("beos-x86".parse::<Platform>().is_err());
        assert!("windows-s390x".parse::<Platform>().is_err());
    }

    #[test]
    fn machine_json_round_trips() {
        let json = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","cuda_version":"13.0","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;
        let machine: Machine = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&machine).unwrap(), json);
    }
}
