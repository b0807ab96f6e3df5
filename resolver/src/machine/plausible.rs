//! Whether a machine described from the outside (a token, a machine file, a `[[networks]]`
//! rule, a configured machine) can exist, checked in one place so every entry point refuses the
//! same machines with the same words.
//!
//! A machine that cannot exist would otherwise be resolved silently: an NVIDIA GPU on a Mac or
//! a Radeon on Windows passes every parser and gets CPU builds, so the person who wrote it
//! never learns that the rule or token is wrong. Each fact is judged one of two ways:
//!
//! - **Impossible** ([`ImplausibleMachine`], an error): the machine is refused.
//!   - NVIDIA GPUs (or an NVIDIA driver) on macOS: Apple silicon has no NVIDIA GPU, and CUDA
//!     for macOS ended with macOS 10.13; no PyTorch release has a macOS CUDA build.
//!   - AMD GPUs on Windows or macOS: the `amd` section describes GPUs used through ROCm, and
//!     PyTorch publishes ROCm builds for Linux only (`../shared/reference/pytorch-variants.toml`,
//!     `catalog.toml`'s `[rocm_gfx]`: "Linux x86_64 only").
//!   - An XPU-capable Intel GPU on macOS: the XPU builds exist for Linux and Windows only.
//!   - A compute capability below 3.0 or from 20.0 up: Fermi (2.x) and older are driven by no
//!     driver that reports a compute capability through NVML (support ended with the 390
//!     branch), and NVIDIA's numbering went from 1.0 to 12.1 in eighteen years.
//!   - A driver version whose major number is below 100 or above 9999: every NVIDIA driver
//!     since 2008 is `1xx` to `5xx` (`580.65.06`; Windows' NVML reports `566.36` too). A driver
//!     that does not parse at all (`abc`) is already refused by the parser.
//!   - A gfx target that is not gfx-shaped is refused by [`GfxTarget`]'s parser.
//! - **Doubtful** ([`Doubt`], a warning for the caller to log once, naming where the machine
//!   came from): possible, and `/explain/` says why no GPU build fits.
//!   - A gfx target no ROCm version of the catalog compiles for (`gfx9999`), among the AMD GPUs
//!     selection uses (an APU's iGPU beside a discrete Radeon is not).
//!   - A compute capability newer than any the catalog knows (a GPU newer than this wheelgate).
//!   - AMD GPUs on Linux other than x86-64, for which PyTorch has no ROCm build.
//!   - An Intel device IP the XPU builds do not list (the GPU is not an XPU target).

use std::fmt;

use crate::catalog::Catalog;
use crate::machine::{Machine, Os};
use crate::{Arch, ComputeCapability, Platform};

/// The oldest compute capability a machine can report (Kepler, 3.0).
pub const OLDEST_COMPUTE_CAPABILITY: ComputeCapability = ComputeCapability::new(3, 0);
/// The first major compute capability taken as impossible.
pub const IMPOSSIBLE_COMPUTE_MAJOR: u8 = 20;
/// The NVIDIA driver major numbers taken as possible.
pub const DRIVER_MAJORS: std::ops::RangeInclusive<u32> = 100..=9999;

/// A fact about a machine that no real machine has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImplausibleMachine {
    /// An `nvidia` section on macOS.
    #[error(
        "a `{platform}` machine cannot have NVIDIA GPUs or an NVIDIA driver (no Mac runs CUDA, and PyTorch has no macOS CUDA build); remove the `nvidia` section"
    )]
    NvidiaOnMacos {
        /// The machine's platform.
        platform: Platform,
    },
    /// AMD GPUs on a platform PyTorch has no ROCm builds for, where that is certain.
    #[error(
        "a `{platform}` machine cannot use its AMD GPU `{gfx}` through ROCm (PyTorch publishes ROCm builds for Linux only); remove the `amd` GPUs, the machine gets CPU builds"
    )]
    AmdWithoutRocm {
        /// The machine's platform.
        platform: Platform,
        /// The first AMD GPU's gfx target.
        gfx: String,
    },
    /// An XPU-capable Intel GPU on macOS.
    #[error(
        "a `{platform}` machine cannot have an XPU-capable Intel GPU (PyTorch's XPU builds exist for Linux and Windows only); set `xpu_capable = false`"
    )]
    XpuOnMacos {
        /// The machine's platform.
        platform: Platform,
    },
    /// A compute capability outside what NVIDIA GPUs report.
    #[error(
        "NVIDIA GPU {index} has compute capability `{capability}`, which no GPU has (possible: {OLDEST_COMPUTE_CAPABILITY} up to {max}.9)",
        max = IMPOSSIBLE_COMPUTE_MAJOR - 1
    )]
    ComputeCapability {
        /// The GPU's position among the machine's NVIDIA GPUs, from 1.
        index: usize,
        /// The capability given.
        capability: ComputeCapability,
    },
    /// A driver version no NVIDIA driver has.
    #[error(
        "NVIDIA driver `{version}` does not exist (NVIDIA drivers are numbered like `580.65.06`, major {} to {})",
        DRIVER_MAJORS.start(),
        DRIVER_MAJORS.end()
    )]
    Driver {
        /// The version given.
        version: String,
    },
}

/// A fact about a machine that is possible but probably not what was meant; the machine is
/// still resolved (and `/explain/` says why no GPU build fits it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doubt {
    /// A gfx target no ROCm version of the catalog compiles for.
    UnknownGfx {
        /// The target.
        gfx: String,
    },
    /// A compute capability newer than any build of the catalog lists.
    NewerComputeCapability {
        /// The capability given.
        capability: ComputeCapability,
        /// The newest the catalog lists.
        newest: ComputeCapability,
    },
    /// AMD GPUs on a Linux platform PyTorch has no ROCm builds for.
    AmdOffPlatform {
        /// The machine's platform.
        platform: Platform,
    },
    /// An Intel GPU marked XPU-capable whose device IP the XPU builds do not list.
    UnknownDeviceIp {
        /// The device IP given.
        device_ip: String,
    },
}

impl fmt::Display for Doubt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Doubt::UnknownGfx { gfx } => write!(
                f,
                "no ROCm build of the catalog is compiled for AMD GPU `{gfx}`; it gets no ROCm build"
            ),
            Doubt::NewerComputeCapability { capability, newest } => write!(
                f,
                "compute capability `{capability}` is newer than any build of the catalog is compiled for (newest `{newest}`); no known CUDA build has code for it"
            ),
            Doubt::AmdOffPlatform { platform } => write!(
                f,
                "PyTorch has no ROCm build for `{platform}`; its AMD GPUs get no ROCm build"
            ),
            Doubt::UnknownDeviceIp { device_ip } => write!(
                f,
                "Intel device IP `{device_ip}` is not one PyTorch's XPU builds list; it gets no XPU build"
            ),
        }
    }
}

impl Machine {
    /// Checks that the machine can exist: `Err` for the first impossible fact (NVIDIA on
    /// macOS, AMD GPUs on Windows or macOS, XPU on macOS, compute capability outside 3.0 to
    /// 19.9, a driver major outside [`DRIVER_MAJORS`]), else the doubtful facts ([`Doubt`]), for
    /// the caller to log once with where the machine came from. Call it wherever a machine
    /// enters from outside; why each rule holds is written in `machine/plausible.rs`.
    ///
    /// # Errors
    ///
    /// [`ImplausibleMachine`] when a fact is impossible.
    pub fn check_plausible(&self, catalog: &Catalog) -> Result<Vec<Doubt>, ImplausibleMachine> {
        let platform = self.platform;
        let mut doubts = Vec::new();
        if let Some(nvidia) = &self.nvidia {
            if platform.os == Os::Macos {
                return Err(ImplausibleMachine::NvidiaOnMacos { platform });
            }
            if let Some(driver) = &nvidia.driver_version
                && !DRIVER_MAJORS.contains(&driver.major())
            {
                return Err(ImplausibleMachine::Driver {
                    version: driver.to_string(),
                });
            }
            let newest = newest_known_capability(catalog);
            for (index, gpu) in nvidia.gpus.iter().enumerate() {
                let Some(capability) = gpu.compute_capability else {
                    continue;
                };
                if capability < OLDEST_COMPUTE_CAPABILITY
                    || capability.major >= IMPOSSIBLE_COMPUTE_MAJOR
                {
                    return Err(ImplausibleMachine::ComputeCapability {
                        index: index + 1,
                        capability,
                    });
                }
                if let Some(newest) = newest.filter(|newest| capability > *newest) {
                    push_once(
                        &mut doubts,
                        Doubt::NewerComputeCapability { capability, newest },
                    );
                }
            }
        }
        if let Some(first) = self.amd.as_ref().and_then(|amd| amd.gpus.first()) {
            match (platform.os, platform.arch) {
                (Os::Windows | Os::Macos, _) => {
                    return Err(ImplausibleMachine::AmdWithoutRocm {
                        platform,
                        gfx: first.gfx.to_string(),
                    });
                }
                (Os::Linux, Arch::X86_64) => {}
                (Os::Linux, _) => doubts.push(Doubt::AmdOffPlatform { platform }),
            }
        }
        // The GPUs selection uses: an APU's iGPU beside a discrete Radeon is no cause for doubt.
        for gpu in self.amd_gpus_in_use() {
            let known = catalog
                .rocm_gfx()
                .iter()
                .any(|(_, targets)| targets.contains(&gpu.gfx));
            if !known {
                push_once(
                    &mut doubts,
                    Doubt::UnknownGfx {
                        gfx: gpu.gfx.to_string(),
                    },
                );
            }
        }
        for gpu in self.intel.iter().flat_map(|intel| &intel.gpus) {
            if !gpu.xpu_capable {
                continue;
            }
            if platform.os == Os::Macos {
                return Err(ImplausibleMachine::XpuOnMacos { platform });
            }
            if let Some(ip) = &gpu.device_ip
                && !catalog.xpu_device_ips().contains(ip)
            {
                push_once(
                    &mut doubts,
                    Doubt::UnknownDeviceIp {
                        device_ip: ip.clone(),
                    },
                );
            }
        }
        Ok(doubts)
    }
}

/// The newest compute capability any build of the catalog is compiled for.
fn newest_known_capability(catalog: &Catalog) -> Option<ComputeCapability> {
    catalog
        .sm_sets()
        .flat_map(|(_, set)| set.iter().copied())
        .max()
}

fn push_once(doubts: &mut Vec<Doubt>, doubt: Doubt) {
    if !doubts.contains(&doubt) {
        doubts.push(doubt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str) -> Result<Vec<Doubt>, ImplausibleMachine> {
        let machine: Machine = serde_json::from_str(json).unwrap();
        machine.check_plausible(Catalog::embedded())
    }

    #[test]
    fn real_machines_pass_without_doubt() {
        for json in [
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","cuda_version":"13.0","gpus":[{"compute_capability":"9.0"}]}}"#,
            r#"{"platform":"windows-x86_64","nvidia":{"driver_version":"566.36","gpus":[{"compute_capability":"12.0"}]}}"#,
            r#"{"platform":"linux-aarch64","nvidia":{"gpus":[{"compute_capability":"8.7","integrated":true}]}}"#,
            r#"{"platform":"linux-aarch64","nvidia":{"driver_version":"580.95.05","gpus":[{"compute_capability":"12.1"}]}}"#,
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx1100"},{"gfx":"gfx1103","integrated":true}]}}"#,
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx942"}]}}"#,
            r#"{"platform":"windows-x86_64","intel":{"gpus":[{"pci_device":57867,"device_ip":"20.1.0","xpu_capable":true}]}}"#,
            r#"{"platform":"macos-x86_64","intel":{"gpus":[{"integrated":true}]}}"#,
            r#"{"platform":"macos-arm64"}"#,
            r#"{"platform":"linux-s390x"}"#,
        ] {
            assert_eq!(check(json), Ok(Vec::new()), "{json}");
        }
    }

    #[test]
    fn impossible_machines_are_refused_with_the_fact_named() {
        for (json, expected) in [
            (
                r#"{"platform":"macos-arm64","nvidia":{"gpus":[{"compute_capability":"9.0"}]}}"#,
                "a `macos-arm64` machine cannot have NVIDIA GPUs",
            ),
            (
                r#"{"platform":"macos-x86_64","nvidia":{"driver_version":"418.163"}}"#,
                "a `macos-x86_64` machine cannot have NVIDIA GPUs",
            ),
            (
                r#"{"platform":"windows-x86_64","amd":{"gpus":[{"gfx":"gfx1100"}]}}"#,
                "a `windows-x86_64` machine cannot use its AMD GPU `gfx1100` through ROCm",
            ),
            (
                r#"{"platform":"macos-x86_64","amd":{"gpus":[{"gfx":"gfx1010"}]}}"#,
                "a `macos-x86_64` machine cannot use its AMD GPU `gfx1010`",
            ),
            (
                r#"{"platform":"macos-x86_64","intel":{"gpus":[{"xpu_capable":true}]}}"#,
                "cannot have an XPU-capable Intel GPU",
            ),
            (
                r#"{"platform":"linux-x86_64","nvidia":{"gpus":[{"compute_capability":"9.0"},{"compute_capability":"2.1"}]}}"#,
                "NVIDIA GPU 2 has compute capability `2.1`, which no GPU has (possible: 3.0 up to 19.9)",
            ),
            (
                r#"{"platform":"linux-x86_64","nvidia":{"gpus":[{"compute_capability":"25.0"}]}}"#,
                "compute capability `25.0`",
            ),
            (
                r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"1.2","gpus":[]}}"#,
                "NVIDIA driver `1.2` does not exist",
            ),
            (
                r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"58065.06"}}"#,
                "NVIDIA driver `58065.06` does not exist",
            ),
        ] {
            let error = check(json).expect_err(json);
            assert!(error.to_string().contains(expected), "{error}");
        }
    }

    #[test]
    fn doubtful_machines_pass_with_the_doubt_named_once() {
        let doubts = check(
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx9999"},{"gfx":"gfx9999"}]}}"#,
        )
        .unwrap();
        assert_eq!(
            doubts,
            vec![Doubt::UnknownGfx {
                gfx: "gfx9999".into()
            }]
        );
        assert!(doubts[0].to_string().contains("`gfx9999`"));

        let doubts = check(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"13.0"}]}}"#,
        )
        .unwrap();
        assert!(
            matches!(doubts[..], [Doubt::NewerComputeCapability { capability, .. }] if capability == ComputeCapability::new(13, 0)),
            "{doubts:?}"
        );

        // An unknown iGPU beside a known discrete GPU is not used, so not doubted.
        let doubts = check(
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx1100"},{"gfx":"gfx1036","integrated":true}]}}"#,
        )
        .unwrap();
        assert_eq!(doubts, Vec::new());

        let doubts =
            check(r#"{"platform":"linux-aarch64","amd":{"gpus":[{"gfx":"gfx942"}]}}"#).unwrap();
        assert_eq!(
            doubts,
            vec![Doubt::AmdOffPlatform {
                platform: "linux-aarch64".parse().unwrap()
            }]
        );

        let doubts = check(
            r#"{"platform":"linux-x86_64","intel":{"gpus":[{"device_ip":"12.0.0","xpu_capable":true},{"device_ip":"12.0.0","xpu_capable":false}]}}"#,
        )
        .unwrap();
        assert_eq!(
            doubts,
            vec![Doubt::UnknownDeviceIp {
                device_ip: "12.0.0".into()
            }]
        );
    }

    #[test]
    fn unparsable_facts_never_reach_the_check() {
        // `abc` as a driver, 99.9 as a compute capability and `gfxzz` are refused by the parsers,
        // with the value named.
        for json in [
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"abc"}}"#,
            r#"{"platform":"linux-x86_64","nvidia":{"gpus":[{"compute_capability":"99.9"}]}}"#,
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfxabc"}]}}"#,
        ] {
            let error = serde_json::from_str::<Machine>(json).unwrap_err();
            assert!(error.to_string().contains('`'), "{error}");
        }
    }
}
