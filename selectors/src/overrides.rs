//! Every environment variable wheelgate's probes read, one documented constant each, and their
//! parsers. An empty value means "absent" (so `FOO=` in a Dockerfile clears an inherited value);
//! `none` in a device list means "no such device" (to describe a GPU-less target machine).
//!
//! Overrides replace probed facts, for building images or lock files on a machine other than the
//! target (Docker builds, CI, a cluster's login node), like uv's `UV_CUDA_DRIVER_VERSION` and
//! conda's `CONDA_OVERRIDE_CUDA`.

use std::collections::HashMap;
use std::fmt::Display;
use std::str::FromStr;

use wheelgate_resolver::machine::GfxTarget;
use wheelgate_resolver::{Backend, ComputeCapability, CudaVersion, DottedVersion, Platform};

/// Directory standing for `/` for every file the probes read (default `/`). Set to a tree of
/// captured sysfs/procfs files to describe another machine; GPU libraries are then not loaded,
/// since they would describe the host.
pub const SYSROOT: &str = "WHEELGATE_SYSROOT";
/// Pins the backend for selection (`cu128`, `rocm6.4`, `xpu`, `cpu`). Not a machine fact: the
/// machine is still described, and selection uses this backend whatever it says.
pub const BACKEND: &str = "WHEELGATE_BACKEND";
/// Operating system and CPU architecture: `linux-x86_64`, `linux-aarch64`, `linux-s390x`,
/// `windows-x86_64`, `windows-arm64`, `macos-arm64`.
pub const PLATFORM: &str = "WHEELGATE_PLATFORM";
/// NVIDIA driver version (`580.65.06`). Creates an NVIDIA section when none was probed.
pub const CUDA_DRIVER: &str = "WHEELGATE_CUDA_DRIVER";
/// Highest CUDA version the driver supports (`13.0`), as NVML would report it.
pub const CUDA_VERSION: &str = "WHEELGATE_CUDA_VERSION";
/// NVIDIA GPUs by compute capability, one entry per GPU: `9.0`, `8.6,7.5`, `sm_90`; `none` for
/// a machine without NVIDIA GPUs.
pub const CUDA_ARCH: &str = "WHEELGATE_CUDA_ARCH";
/// AMD GPUs by gfx target, one entry per GPU: `gfx1100`, `gfx942,gfx942`; `none` for no AMD GPU.
pub const AMD_GFX: &str = "WHEELGATE_AMD_GFX";
/// Installed ROCm user space (`6.4.1`); `none` for no installed ROCm.
pub const ROCM_VERSION: &str = "WHEELGATE_ROCM_VERSION";
/// Intel GPUs, one entry per GPU, each described by a fact: its Level Zero device IP version
/// (`20.1.0` for Battlemage) or its PCI device id (`8086:e20b`, `0xe20b`); `none` for no Intel
/// GPU. The facts are judged like probed ones: an IP by the catalog's device IPs, a PCI id by
/// the Intel device table, so `12.0.0` (an Iris Xe iGPU) never makes `xpu` the choice.
pub const XPU_DEVICE: &str = "WHEELGATE_XPU_DEVICE";
/// x86-64 microarchitecture level, `1` to `4` (`v3` also accepted).
pub const X86_64_LEVEL: &str = "WHEELGATE_X86_64_LEVEL";
/// aarch64 architecture version (`8.2a`, `9.0a`).
pub const AARCH64_VERSION: &str = "WHEELGATE_AARCH64_VERSION";
/// glibc version (`2.39`); `none` for a non-glibc system (musl).
pub const GLIBC: &str = "WHEELGATE_GLIBC";
/// `0` stops the probes from loading GPU libraries (NVML, libcuda) even on the host.
pub const PROBE_LIBRARIES: &str = "WHEELGATE_PROBE_LIBRARIES";
/// `0` stops the probes from running commands (`nvidia-smi`).
pub const PROBE_COMMANDS: &str = "WHEELGATE_PROBE_COMMANDS";
/// How long a probe command (`nvidia-smi`) may run, in milliseconds (default 5000).
pub const COMMAND_TIMEOUT_MS: &str = "WHEELGATE_COMMAND_TIMEOUT_MS";

/// Every variable above with a one-line description, for `--help` texts and documentation.
pub const ALL: &[(&str, &str)] = &[
    (SYSROOT, "directory standing for `/` for every probed file"),
    (BACKEND, "pin the backend: cpu, cu128, rocm6.4, xpu, ..."),
    (
        PLATFORM,
        "linux-x86_64, linux-aarch64, windows-x86_64, macos-arm64",
    ),
    (CUDA_DRIVER, "NVIDIA driver version, e.g. 580.65.06"),
    (
        CUDA_VERSION,
        "highest CUDA version of the driver, e.g. 13.0",
    ),
    (
        CUDA_ARCH,
        "NVIDIA GPUs' compute capabilities, e.g. 9.0 or 8.6,7.5, or none",
    ),
    (AMD_GFX, "AMD GPUs' gfx targets, e.g. gfx1100, or none"),
    (ROCM_VERSION, "installed ROCm version, e.g. 6.4.1, or none"),
    (
        XPU_DEVICE,
        "Intel GPUs' device IPs or PCI ids, e.g. 20.1.0 or 8086:e20b, or none",
    ),
    (X86_64_LEVEL, "x86-64 level, 1 to 4"),
    (AARCH64_VERSION, "aarch64 architecture version, e.g. 8.2a"),
    (GLIBC, "glibc version, e.g. 2.39, or none"),
    (PROBE_LIBRARIES, "0: never load NVML or libcuda"),
    (PROBE_COMMANDS, "0: never run nvidia-smi"),
    (
        COMMAND_TIMEOUT_MS,
        "time limit of nvidia-smi in ms (default 5000)",
    ),
];

/// An override whose value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{var}={value}` is not valid: {reason}")]
pub struct OverrideError {
    /// The environment variable's name.
    pub var: &'static str,
    /// Its value as set.
    pub value: String,
    /// What is wrong with the value.
    pub reason: String,
}

/// A snapshot of environment variables. Probes take one explicitly, so tests pass a map instead
/// of changing the process environment (which other threads share).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// The process environment (variables that are not UTF-8 are skipped).
    pub fn from_process() -> Self {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A variable's trimmed value; empty counts as absent.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// Sets a variable (for building test environments).
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Whether a switch such as [`PROBE_LIBRARIES`] is off (`0`, `false`, `no`, `off`).
    pub fn is_off(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            )
        })
    }
}

fn invalid(var: &'static str, value: &str, reason: impl Display) -> OverrideError {
    OverrideError {
        var,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// Reads one value with its type's parser.
pub fn value<T>(env: &Env, var: &'static str) -> Result<Option<T>, OverrideError>
where
    T: FromStr,
    T::Err: Display,
{
    env.get(var)
        .map(|text| text.parse::<T>().map_err(|e| invalid(var, text, e)))
        .transpose()
}

/// Reads a comma-separated list; `none` is the empty list.
pub fn list<T>(
    env: &Env,
    var: &'static str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<Vec<T>>, OverrideError> {
    let Some(text) = env.get(var) else {
        return Ok(None);
    };
    if text.eq_ignore_ascii_case("none") {
        return Ok(Some(Vec::new()));
    }
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| parse(item).map_err(|e| invalid(var, text, e)))
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
}

/// The pinned backend ([`BACKEND`]), if any.
pub fn backend_override(env: &Env) -> Result<Option<Backend>, OverrideError> {
    value(env, BACKEND)
}

/// [`PLATFORM`].
pub fn platform(env: &Env) -> Result<Option<Platform>, OverrideError> {
    value(env, PLATFORM)
}

/// [`CUDA_DRIVER`].
pub fn cuda_driver(env: &Env) -> Result<Option<DottedVersion>, OverrideError> {
    value(env, CUDA_DRIVER)
}

/// [`CUDA_VERSION`].
pub fn cuda_version(env: &Env) -> Result<Option<CudaVersion>, OverrideError> {
    value(env, CUDA_VERSION)
}

/// [`CUDA_ARCH`]: `9.0`, `sm_90`, `90` and `12.0` are all accepted.
pub fn cuda_arch(env: &Env) -> Result<Option<Vec<ComputeCapability>>, OverrideError> {
    list(env, CUDA_ARCH, |item| {
        item.parse::<ComputeCapability>().or_else(|e| {
            ComputeCapability::from_sm_digits(item.trim_start_matches("sm_"))
                .ok_or_else(|| e.to_string())
        })
    })
}

/// [`AMD_GFX`].
pub fn amd_gfx(env: &Env) -> Result<Option<Vec<GfxTarget>>, OverrideError> {
    list(env, AMD_GFX, |item| {
        item.parse::<GfxTarget>().map_err(|e| e.to_string())
    })
}

/// [`ROCM_VERSION`]: `Some(None)` for `none`.
#[allow(clippy::option_option)] // absent, `none` and a version are three different answers
pub fn rocm_version(env: &Env) -> Result<Option<Option<DottedVersion>>, OverrideError> {
    optional_version(env, ROCM_VERSION)
}

/// [`GLIBC`]: `Some(None)` for `none`.
#[allow(clippy::option_option)] // absent, `none` and a version are three different answers
pub fn glibc(env: &Env) -> Result<Option<Option<DottedVersion>>, OverrideError> {
    optional_version(env, GLIBC)
}

#[allow(clippy::option_option)] // as above
fn optional_version(
    env: &Env,
    var: &'static str,
) -> Result<Option<Option<DottedVersion>>, OverrideError> {
    match env.get(var) {
        None => Ok(None),
        Some(text) if text.eq_ignore_ascii_case("none") => Ok(Some(None)),
        Some(text) => text
            .parse()
            .map(|v| Some(Some(v)))
            .map_err(|e| invalid(var, text, e)),
    }
}

/// One Intel GPU as [`XPU_DEVICE`] describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntelDeviceFact {
    /// A Level Zero device IP version (`20.1.0`), `arch.release.revision`.
    DeviceIp(String),
    /// A PCI device id of vendor 0x8086 (`0xe20b`).
    PciDevice(u16),
}

/// [`XPU_DEVICE`]: device IP versions (`20.1.0`) or PCI device ids (`8086:e20b`, `0xe20b`).
pub fn xpu_devices(env: &Env) -> Result<Option<Vec<IntelDeviceFact>>, OverrideError> {
    list(env, XPU_DEVICE, parse_intel_device)
}

fn parse_intel_device(item: &str) -> Result<IntelDeviceFact, String> {
    let lower = item.to_ascii_lowercase();
    let pci = lower
        .strip_prefix("8086:")
        .or_else(|| lower.strip_prefix("0x"));
    if let Some(hex) = pci {
        return match u16::from_str_radix(hex, 16) {
            Ok(id) if !hex.is_empty() && hex.len() <= 4 => Ok(IntelDeviceFact::PciDevice(id)),
            _ => Err(format!(
                "`{item}` is not a PCI device id (expected four hex digits such as `8086:e20b`)"
            )),
        };
    }
    match item.parse::<DottedVersion>() {
        Ok(ip) if ip.parts().len() == 3 => Ok(IntelDeviceFact::DeviceIp(item.to_string())),
        _ => Err(format!(
            "`{item}` is neither a device IP version (`20.1.0`) nor a PCI device id (`8086:e20b`)"
        )),
    }
}

/// [`X86_64_LEVEL`]: `1` to `4`, or `v1` to `v4`.
pub fn x86_64_level(env: &Env) -> Result<Option<u8>, OverrideError> {
    let Some(text) = env.get(X86_64_LEVEL) else {
        return Ok(None);
    };
    match text.trim_start_matches(['v', 'V']).parse::<u8>() {
        Ok(level @ 1..=4) => Ok(Some(level)),
        _ => Err(invalid(X86_64_LEVEL, text, "expected a level from 1 to 4")),
    }
}

/// [`AARCH64_VERSION`]: `8.2a`, `9.0a` (the `a` is optional).
pub fn aarch64_version(env: &Env) -> Result<Option<String>, OverrideError> {
    let Some(text) = env.get(AARCH64_VERSION) else {
        return Ok(None);
    };
    let lower = text.to_ascii_lowercase();
    let digits = lower.trim_end_matches('a');
    match digits.split_once('.') {
        Some((major, minor))
            if major.parse::<u8>().is_ok_and(|m| (8..=9).contains(&m))
                && minor.parse::<u8>().is_ok() =>
        {
            Ok(Some(format!("{digits}a")))
        }
        _ => Err(invalid(
            AARCH64_VERSION,
            text,
            "expected a version such as `8.2a`",
        )),
    }
}

/// [`COMMAND_TIMEOUT_MS`].
pub fn command_timeout_ms(env: &Env) -> Result<Option<u64>, OverrideError> {
    value(env, COMMAND_TIMEOUT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_means_absent() {
        let env = Env::from_pairs([(CUDA_DRIVER, ""), (BACKEND, "  ")]);
        assert_eq!(cuda_driver(&env).unwrap(), None);
        assert_eq!(backend_override(&env).unwrap(), None);
    }

    #[test]
    fn reads_lists_and_none() {
        let env = Env::from_pairs([(CUDA_ARCH, "8.6, sm_75,120"), (AMD_GFX, "none")]);
        let arch: Vec<String> = cuda_arch(&env)
            .unwrap()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(arch, ["8.6", "7.5", "12.0"]);
        assert_eq!(amd_gfx(&env).unwrap(), Some(Vec::new()));
    }

    #[test]
    fn names_the_variable_in_errors() {
        let env = Env::from_pairs([(CUDA_DRIVER, "five-eighty"), (X86_64_LEVEL, "7")]);
        let error = cuda_driver(&env).unwrap_err();
        assert_eq!(error.var, CUDA_DRIVER);
        assert!(
            error
                .to_string()
                .contains("WHEELGATE_CUDA_DRIVER=five-eighty")
        );
        assert!(x86_64_level(&env).is_err());
    }

    #[test]
    fn intel_devices_are_ips_or_pci_ids() {
        let env = Env::from_pairs([(XPU_DEVICE, "12.0.0, 8086:E20B,0x9a49")]);
        assert_eq!(
            xpu_devices(&env).unwrap().unwrap(),
            [
                IntelDeviceFact::DeviceIp("12.0.0".into()),
                IntelDeviceFact::PciDevice(0xe20b),
                IntelDeviceFact::PciDevice(0x9a49),
            ]
        );
        for bad in ["20.1", "8086:", "0x12345", "arc", "yes", "8086:zzzz"] {
            let env = Env::from_pairs([(XPU_DEVICE, bad)]);
            let error = xpu_devices(&env).unwrap_err();
            assert!(error.to_string().contains(bad), "{error}");
        }
    }

    #[test]
    fn pins_a_backend() {
        let env = Env::from_pairs([(BACKEND, "cu128")]);
        assert_eq!(
            backend_override(&env).unwrap(),
            Some("cu128".parse().unwrap())
        );
        let bad = Env::from_pairs([(BACKEND, "cuda")]);
        assert!(backend_override(&bad).is_err());
    }

    #[test]
    fn reads_versions_and_switches() {
        let env = Env::from_pairs([
            (GLIBC, "none"),
            (ROCM_VERSION, "6.4.1"),
            (AARCH64_VERSION, "8.2"),
            (PROBE_LIBRARIES, "0"),
        ]);
        assert_eq!(glibc(&env).unwrap(), Some(None));
        assert_eq!(
            rocm_version(&env).unwrap(),
            Some(Some("6.4.1".parse().unwrap()))
        );
        assert_eq!(aarch64_version(&env).unwrap().as_deref(), Some("8.2a"));
        assert!(env.is_off(PROBE_LIBRARIES));
        assert!(!env.is_off(PROBE_COMMANDS));
    }
}
