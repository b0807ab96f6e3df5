//! What a machine supports, as ordered variant properties (PEP 817 "Provider plugins", PEP 825
//! "Variant ordering"): for every namespace, its features in order of preference, and for every
//! feature its values, most preferred first.
//!
//! The values mirror what the WheelNext reference providers report on the same machine, so
//! that ordering here agrees with an installer that runs the plugins:
//!
//! - `nvidia` (nvidia-variant-provider): `cuda_version_lower_bound`, `cuda_version_upper_bound`,
//!   `sm_arch`;
//! - `amd` (amd-variant-provider): `gfx_arch`, `rocm_version`;
//! - `intel` (intel-variant-provider): `device_ip`;
//! - `x86_64` (provider-variant-x86-64): `level`;
//! - `aarch64` (provider-variant-aarch64): `version`.
//!
//! Static namespaces (PyTorch's `priority`) are not the machine's business: their values come
//! from the variants file, merged in by [`SupportedProperties::with_static_properties`].

use std::collections::BTreeMap;

use crate::driver_cuda::{CudaSource, machine_cuda};
use crate::machine::{Arch, Machine, Nvidia, Os};
use crate::version::{ComputeCapability, CudaVersion, DottedVersion};

use super::schema::VariantsFile;

/// Namespace of the NVIDIA provider.
pub const NVIDIA: &str = "nvidia";
/// Namespace of the AMD provider.
pub const AMD: &str = "amd";
/// Namespace of the Intel provider.
pub const INTEL: &str = "intel";
/// Namespace of the x86-64 microarchitecture-level provider.
pub const X86_64: &str = "x86_64";
/// Namespace of the aarch64 architecture-version provider.
pub const AARCH64: &str = "aarch64";

/// The lowest and highest CUDA majors the NVIDIA provider knows (its `UMD_MAJOR_RANGE`, 11 to
/// 15), and the highest minor it lists for a major (its `UMD_MINOR_RANGE`, 0 to 20).
const CUDA_MIN_MAJOR: u16 = 11;
const CUDA_MAX_MAJOR: u16 = 15;
const CUDA_MAX_MINOR: u16 = 20;

/// One feature the machine supports, with its values most preferred first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportedFeature {
    /// Feature name (`sm_arch`).
    pub name: String,
    /// Supported values, most preferred first. May be empty: then no variant listing the
    /// feature is compatible (GPUs that share no architecture).
    pub values: Vec<String>,
    /// Where the values come from, as a phrase for explanations
    /// (`the machine's driver supports CUDA 12.8`).
    pub origin: String,
}

/// The variant properties a machine supports, ordered per PEP 825: per namespace, features in
/// order of preference, each with values in order of preference. The order of namespaces is
/// not the machine's: it comes from the variants file's `default-priorities.namespace`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SupportedProperties {
    namespaces: BTreeMap<String, Vec<SupportedFeature>>,
    /// Why a namespace (`nvidia`) or feature (`nvidia::sm_arch`) has no values here.
    gaps: BTreeMap<String, String>,
}

impl SupportedProperties {
    /// No supported properties at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the reference providers would report on `machine`.
    ///
    /// Decisions beyond the providers, for machines they do not describe:
    ///
    /// - **CUDA version**: `nvidia.cuda_version` when known. With only a driver version it is
    ///   the CUDA version of the driver's branch, as the driver itself reports it
    ///   ([`crate::driver_cuda`]: `570.86` → 12.8, `580.65` → 13.0). For a driver newer than
    ///   every branch NVIDIA's table lists, that is a lower bound only, and
    ///   `cuda_version_upper_bound` is left out.
    /// - **Several NVIDIA GPUs**: the provider looks only at the GPU with the highest compute
    ///   capability. Here an `sm_arch` value is supported only if every GPU with a known
    ///   compute capability supports it (the intersection, in the order of the highest GPU),
    ///   so a build chosen for the machine runs on all of its GPUs.
    /// - **AMD**: `gfx_arch` lists every GPU in use (discrete ones when there are any), as the
    ///   provider does; `rocm_version` is the installed ROCm's `major.minor` and is absent when
    ///   no ROCm is installed, as with the provider.
    /// - **x86-64** with an unknown level: only the baseline `v1`.
    pub fn from_machine(machine: &Machine) -> Self {
        let mut out = Self::new();
        match &machine.nvidia {
            Some(nvidia) => out.add_nvidia(nvidia, machine.platform.os),
            None => out.note_gap(NVIDIA, None, "the machine has no NVIDIA driver"),
        }
        out.add_amd(machine);
        out.add_intel(machine);
        out.add_cpu(machine);
        out
    }

    /// Adds (or replaces) one supported feature, after the namespace's existing features.
    pub fn push(
        &mut self,
        namespace: &str,
        feature: &str,
        values: Vec<String>,
        origin: impl Into<String>,
    ) {
        let features = self.namespaces.entry(namespace.to_string()).or_default();
        let supported = SupportedFeature {
            name: feature.to_string(),
            values,
            origin: origin.into(),
        };
        match features.iter_mut().find(|f| f.name == feature) {
            Some(existing) => *existing = supported,
            None => features.push(supported),
        }
    }

    /// Records why a namespace (`feature` = `None`) or a feature has no values on this machine,
    /// for explanations.
    pub fn note_gap(&mut self, namespace: &str, feature: Option<&str>, why: impl Into<String>) {
        self.gaps.insert(gap_key(namespace, feature), why.into());
    }

    /// The supported features of a namespace, most preferred first; `None` when the machine
    /// knows nothing about the namespace.
    pub fn features(&self, namespace: &str) -> Option<&[SupportedFeature]> {
        self.namespaces.get(namespace).map(Vec::as_slice)
    }

    /// One supported feature.
    pub fn feature(&self, namespace: &str, feature: &str) -> Option<&SupportedFeature> {
        self.features(namespace)?.iter().find(|f| f.name == feature)
    }

    /// The supported values of one feature, most preferred first.
    pub fn values(&self, namespace: &str, feature: &str) -> Option<&[String]> {
        self.feature(namespace, feature)
            .map(|f| f.values.as_slice())
    }

    /// The namespaces the machine has properties in, in lexical order.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.namespaces.keys().map(String::as_str)
    }

    /// Why a namespace or feature has no values, when known.
    pub fn gap(&self, namespace: &str, feature: Option<&str>) -> Option<&str> {
        self.gaps
            .get(&gap_key(namespace, feature))
            .map(String::as_str)
    }

    /// Whether the machine supports no property at all.
    pub fn is_empty(&self) -> bool {
        self.namespaces.values().all(Vec::is_empty)
    }

    /// These properties with the static namespaces of `file` (PEP 817 `static-properties`,
    /// `v0.0.2` `plugin-use: none`) replaced by the values the file gives them: a static
    /// namespace is a choice of the publisher, not a fact of the machine.
    #[must_use]
    pub fn with_static_properties(&self, file: &VariantsFile) -> SupportedProperties {
        let mut out = self.clone();
        let static_namespaces = file.static_properties.keys().chain(
            file.providers
                .iter()
                .filter(|(_, provider)| provider.is_static())
                .map(|(namespace, _)| namespace),
        );
        for namespace in static_namespaces {
            out.namespaces.remove(namespace);
            out.gaps
                .retain(|key, _| key != namespace && !key.starts_with(&format!("{namespace}::")));
            match file.static_properties.get(namespace) {
                Some(features) => {
                    for feature in features {
                        let origin = format!(
                            "the variants file allows only {}",
                            feature.values.join(", ")
                        );
                        out.push(namespace, &feature.name, feature.values.clone(), origin);
                    }
                }
                None => out.note_gap(
                    namespace,
                    None,
                    format!(
                        "the variants file declares `{namespace}` static but gives it no values"
                    ),
                ),
            }
        }
        out
    }

    fn add_nvidia(&mut self, nvidia: &Nvidia, os: Os) {
        let Some((cuda, source)) = machine_cuda(nvidia, os) else {
            let why = match &nvidia.driver_version {
                Some(driver) => {
                    format!("the machine's NVIDIA driver {driver} is older than any CUDA 11 driver")
                }
                None => "the machine's NVIDIA driver reports no CUDA version".to_string(),
            };
            self.note_gap(NVIDIA, None, why);
            return;
        };
        if cuda.major < CUDA_MIN_MAJOR {
            self.note_gap(
                NVIDIA,
                None,
                format!(
                    "the machine's driver supports only CUDA {cuda}, older than the CUDA {CUDA_MIN_MAJOR}.0 the NVIDIA provider knows"
                ),
            );
            return;
        }
        let (origin, exact) = match &source {
            CudaSource::Reported => (format!("the machine's driver supports CUDA {cuda}"), true),
            CudaSource::Driver {
                driver,
                exact: true,
            } => (
                format!(
                    "the machine's driver {driver} supports CUDA {cuda} (its branch's CUDA version, from NVIDIA's table of driver branches)"
                ),
                true,
            ),
            CudaSource::Driver {
                driver,
                exact: false,
            } => (
                format!(
                    "the machine's driver {driver} supports at least CUDA {cuda} (newer than every branch of NVIDIA's table this proxy knows)"
                ),
                false,
            ),
        };
        self.push(
            NVIDIA,
            "cuda_version_lower_bound",
            cuda_lower_bound_values(cuda),
            origin.clone(),
        );
        if exact {
            self.push(
                NVIDIA,
                "cuda_version_upper_bound",
                cuda_upper_bound_values(cuda),
                origin,
            );
        } else if let CudaSource::Driver { driver, .. } = &source {
            self.note_gap(
                NVIDIA,
                Some("cuda_version_upper_bound"),
                format!(
                    "driver {driver} is newer than every branch this proxy knows, so only a lower bound of its CUDA version is known"
                ),
            );
        }
        self.add_sm_arch(nvidia);
    }

    fn add_sm_arch(&mut self, nvidia: &Nvidia) {
        let mut capabilities: Vec<ComputeCapability> = nvidia
            .gpus
            .iter()
            .filter_map(|gpu| gpu.compute_capability)
            .collect();
        capabilities.sort_unstable_by(|a, b| b.cmp(a));
        capabilities.dedup();
        let Some((highest, others)) = capabilities.split_first() else {
            self.note_gap(
                NVIDIA,
                Some("sm_arch"),
                "the machine reports no NVIDIA GPU compute capability",
            );
            return;
        };
        let lists: Vec<Vec<String>> = others.iter().map(|cc| sm_arch_values(*cc)).collect();
        let values: Vec<String> = sm_arch_values(*highest)
            .into_iter()
            .filter(|value| lists.iter().all(|list| list.contains(value)))
            .collect();
        let origin = if others.is_empty() {
            format!("the machine's GPU has compute capability {highest}")
        } else {
            let shown: Vec<String> = capabilities.iter().rev().map(ToString::to_string).collect();
            format!(
                "the machine's GPUs have compute capabilities {} and a build must cover all of them",
                shown.join(", ")
            )
        };
        self.push(NVIDIA, "sm_arch", values, origin);
    }

    fn add_amd(&mut self, machine: &Machine) {
        let gpus = machine.amd_gpus_in_use();
        if gpus.is_empty() {
            self.note_gap(AMD, None, "the machine has no AMD GPU");
            return;
        }
        let mut gfx: Vec<String> = Vec::new();
        for gpu in gpus {
            let name = gpu.gfx.as_str().to_string();
            if is_value(&name) && !gfx.contains(&name) {
                gfx.push(name);
            }
        }
        let origin = if gfx.len() == 1 {
            format!("the machine's AMD GPU is {}", gfx[0])
        } else {
            format!("the machine's AMD GPUs are {}", gfx.join(", "))
        };
        self.push(AMD, "gfx_arch", gfx, origin);
        match machine.amd.as_ref().and_then(|amd| amd.rocm_version.as_ref()) {
            Some(rocm) => self.push(
                AMD,
                "rocm_version",
                vec![rocm_major_minor(rocm)],
                format!("the machine has ROCm {rocm} installed"),
            ),
            None => self.note_gap(
                AMD,
                Some("rocm_version"),
                "the machine has no ROCm installed (the AMD provider matches the installed ROCm version)",
            ),
        }
    }

    fn add_intel(&mut self, machine: &Machine) {
        let gpus = machine.intel.as_ref().map_or(&[][..], |intel| &intel.gpus);
        if gpus.is_empty() {
            self.note_gap(INTEL, None, "the machine has no Intel GPU");
            return;
        }
        // Discrete GPUs first: they are what a user of an XPU build means to run on.
        let mut ordered: Vec<_> = gpus.iter().collect();
        ordered.sort_by_key(|gpu| gpu.integrated);
        let mut ips: Vec<String> = Vec::new();
        for ip in ordered.iter().filter_map(|gpu| gpu.device_ip.as_deref()) {
            let ip = ip.trim().to_ascii_lowercase();
            if is_value(&ip) && !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        if ips.is_empty() {
            self.note_gap(
                INTEL,
                None,
                "the machine's Intel GPUs report no device IP version",
            );
            return;
        }
        let origin = if ips.len() == 1 {
            format!("the machine's Intel GPU has device IP {}", ips[0])
        } else {
            format!(
                "the machine's Intel GPUs have device IPs {}",
                ips.join(", ")
            )
        };
        self.push(INTEL, "device_ip", ips, origin);
    }

    fn add_cpu(&mut self, machine: &Machine) {
        match machine.platform.arch {
            Arch::X86_64 => {
                let (level, origin) = match machine.x86_64_level {
                    Some(level) => (level, format!("the machine's CPU is x86-64-v{level}")),
                    None => (
                        1,
                        "the machine's x86-64 level is unknown, so only the baseline v1 is assumed"
                            .to_string(),
                    ),
                };
                self.push(X86_64, "level", x86_64_level_values(level), origin);
                self.note_gap(AARCH64, None, "the machine's CPU is not aarch64");
            }
            Arch::Aarch64 => {
                self.note_gap(X86_64, None, "the machine's CPU is not x86-64");
                let values = machine
                    .aarch64_version
                    .as_deref()
                    .and_then(aarch64_version_values);
                match values {
                    Some(values) => {
                        let origin = format!("the machine's CPU implements Armv{}", values[0]);
                        self.push(AARCH64, "version", values, origin);
                    }
                    None => self.note_gap(
                        AARCH64,
                        None,
                        "the machine's aarch64 architecture version is unknown",
                    ),
                }
            }
            Arch::S390x => {
                self.note_gap(X86_64, None, "the machine's CPU is not x86-64");
                self.note_gap(AARCH64, None, "the machine's CPU is not aarch64");
            }
        }
    }
}

fn gap_key(namespace: &str, feature: Option<&str>) -> String {
    match feature {
        Some(feature) => format!("{namespace}::{feature}"),
        None => namespace.to_string(),
    }
}

fn is_value(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
}

/// The `nvidia :: cuda_version_lower_bound` values a driver supporting `cuda` satisfies, most
/// preferred first, as nvidia-variant-provider lists them: every `major.minor` from `cuda`
/// down to 11.0, each major's bare number after its minors; older majors list minors 20 to 0.
/// CUDA 13.0 → `13.0, 13, 12.20, 12.19, ..., 12.0, 12, 11.20, ..., 11.0, 11`.
pub fn cuda_lower_bound_values(cuda: CudaVersion) -> Vec<String> {
    let mut out = Vec::new();
    for major in (CUDA_MIN_MAJOR..=cuda.major).rev() {
        let top = if major == cuda.major {
            cuda.minor
        } else {
            CUDA_MAX_MINOR
        };
        out.extend((0..=top).rev().map(|minor| format!("{major}.{minor}")));
        out.push(major.to_string());
    }
    out
}

/// The `nvidia :: cuda_version_upper_bound` values (an exclusive bound: the wheel needs a
/// CUDA below it) a driver supporting `cuda` satisfies, as nvidia-variant-provider lists them:
/// from 15.20 down, each higher major's minors 20 to 0 then its bare number, then the driver's
/// own major from 20 down to just above its minor. CUDA 12.8 → `15.20, ..., 15.0, 15, ...,
/// 13.0, 13, 12.20, ..., 12.9`.
pub fn cuda_upper_bound_values(cuda: CudaVersion) -> Vec<String> {
    let mut out = Vec::new();
    for major in (cuda.major..=CUDA_MAX_MAJOR.max(cuda.major)).rev() {
        if major > cuda.major {
            out.extend(
                (0..=CUDA_MAX_MINOR)
                    .rev()
                    .map(|minor| format!("{major}.{minor}")),
            );
            out.push(major.to_string());
        } else {
            out.extend(
                (cuda.minor + 1..=CUDA_MAX_MINOR)
                    .rev()
                    .map(|minor| format!("{major}.{minor}")),
            );
        }
    }
    out
}

/// The `nvidia :: sm_arch` values a GPU of compute capability X.Y runs, most preferred first,
/// as nvidia-variant-provider lists them: `X(Y)_real` down to `X0_real`, then `X0_virtual`
/// (PTX of the major's first architecture). 8.6 → `86_real, 85_real, ..., 80_real, 80_virtual`.
pub fn sm_arch_values(cc: ComputeCapability) -> Vec<String> {
    let mut out: Vec<String> = (0..=cc.minor)
        .rev()
        .map(|minor| format!("{}{minor}_real", cc.major))
        .collect();
    out.push(format!("{}0_virtual", cc.major));
    out
}

/// The `x86_64 :: level` values a CPU of x86-64 microarchitecture level `level` runs: its own
/// level and every lower one, `v4` to `v1` at most. Levels above 4 are taken as 4, 0 as 1.
pub fn x86_64_level_values(level: u8) -> Vec<String> {
    let level = level.clamp(1, 4);
    (1..=level).rev().map(|l| format!("v{l}")).collect()
}

/// The `aarch64 :: version` values a CPU implementing `version` runs, as
/// provider-variant-aarch64 writes them (`8a`, `8.1a`, ..., `8.5a`, `9.0a`): its own version
/// and every one it includes. Armv9.N includes Armv8.(5+N) (up to 8.9).
/// Accepts `8.2a`, `8.2-a`, `armv8.2a`, `8.2`, `8`, `9.0a`; `None` for anything else.
pub fn aarch64_version_values(version: &str) -> Option<Vec<String>> {
    let lower = version.trim().to_ascii_lowercase();
    let text = lower.strip_prefix("armv").unwrap_or(&lower);
    let text = text
        .strip_suffix("-a")
        .or_else(|| text.strip_suffix('a'))
        .unwrap_or(text);
    let (major, minor) = text.split_once('.').unwrap_or((text, "0"));
    let major: u8 = major.parse().ok()?;
    let minor: u8 = minor.parse().ok()?;
    let v8 = |minor: u8| {
        if minor == 0 {
            "8a".to_string()
        } else {
            format!("8.{minor}a")
        }
    };
    match (major, minor) {
        (8, 0..=9) => Some((0..=minor).rev().map(v8).collect()),
        (9, 0..=9) => {
            let mut out: Vec<String> = (0..=minor).rev().map(|m| format!("9.{m}a")).collect();
            out.extend((0..=(5 + minor).min(9)).rev().map(v8));
            Some(out)
        }
        _ => None,
    }
}

/// `major.minor` of an installed ROCm (`6.4.1` → `6.4`), as the AMD provider reports it.
fn rocm_major_minor(rocm: &DottedVersion) -> String {
    let parts = rocm.parts();
    format!(
        "{}.{}",
        parts.first().copied().unwrap_or(0),
        parts.get(1).copied().unwrap_or(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(json: &str) -> Machine {
        serde_json::from_str(json).unwrap()
    }

    fn cuda(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    fn cc(text: &str) -> ComputeCapability {
        text.parse().unwrap()
    }

    #[test]
    fn cuda_lower_bound_for_13_0_matches_the_provider() {
        let values = cuda_lower_bound_values(cuda("13.0"));
        assert_eq!(values[..5], ["13.0", "13", "12.20", "12.19", "12.18"]);
        assert_eq!(values[21..25], ["12.1", "12.0", "12", "11.20"]);
        assert_eq!(values[values.len() - 3..], ["11.1", "11.0", "11"]);
        assert_eq!(values.len(), 2 + 22 + 22);
    }

    #[test]
    fn cuda_lower_bound_for_12_8_starts_at_the_driver() {
        let values = cuda_lower_bound_values(cuda("12.8"));
        assert_eq!(values[..3], ["12.8", "12.7", "12.6"]);
        assert_eq!(values[8..11], ["12.0", "12", "11.20"]);
        assert!(!values.contains(&"12.9".to_string()));
        assert_eq!(values.len(), 10 + 22);
    }

    #[test]
    fn cuda_upper_bound_lists_versions_above_the_driver() {
        let values = cuda_upper_bound_values(cuda("12.8"));
        assert_eq!(values[..3], ["15.20", "15.19", "15.18"]);
        assert_eq!(values[20..23], ["15.0", "15", "14.20"]);
        assert_eq!(values[values.len() - 3..], ["12.11", "12.10", "12.9"]);
        assert!(!values.contains(&"12.8".to_string()));
        assert!(!values.contains(&"12".to_string()));
        assert_eq!(values.len(), 3 * 22 + 12);
        assert_eq!(cuda_upper_bound_values(cuda("15.20")), Vec::<String>::new());
    }

    #[test]
    fn sm_arch_lists_real_down_then_virtual() {
        assert_eq!(
            sm_arch_values(cc("8.6")),
            [
                "86_real",
                "85_real",
                "84_real",
                "83_real",
                "82_real",
                "81_real",
                "80_real",
                "80_virtual"
            ]
        );
        assert_eq!(sm_arch_values(cc("12.0")), ["120_real", "120_virtual"]);
    }

    #[test]
    fn driver_only_machine_supports_its_branch_s_cuda_version() {
        // RTX 5090 on driver 570, known by its driver alone: CUDA 12.8, as nvidia-smi and the
        // NVIDIA provider report it (before: 12.0, the 12.x family's floor).
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#,
        ));
        assert_eq!(
            props.values(NVIDIA, "cuda_version_lower_bound").unwrap(),
            cuda_lower_bound_values(cuda("12.8"))
        );
        assert_eq!(
            props.values(NVIDIA, "cuda_version_upper_bound").unwrap(),
            cuda_upper_bound_values(cuda("12.8"))
        );
        let origin = &props
            .feature(NVIDIA, "cuda_version_lower_bound")
            .unwrap()
            .origin;
        assert!(
            origin.contains("570.86.10 supports CUDA 12.8") && origin.contains("driver branches"),
            "{origin}"
        );
        assert_eq!(props.values(NVIDIA, "sm_arch").unwrap()[0], "120_real");
    }

    #[test]
    fn driver_past_every_known_branch_has_no_upper_bound() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"590.44.01","gpus":[{"compute_capability":"8.9"}]}}"#,
        ));
        assert_eq!(
            props.values(NVIDIA, "cuda_version_lower_bound").unwrap()[..2],
            ["13.0", "13"]
        );
        assert!(props.feature(NVIDIA, "cuda_version_upper_bound").is_none());
        assert!(
            props
                .gap(NVIDIA, Some("cuda_version_upper_bound"))
                .unwrap()
                .contains("590.44.01")
        );
    }

    #[test]
    fn nvidia_features_in_provider_order() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"cuda_version":"12.8","gpus":[{"compute_capability":"9.0"}]}}"#,
        ));
        let names: Vec<&str> = props
            .features(NVIDIA)
            .unwrap()
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "cuda_version_lower_bound",
                "cuda_version_upper_bound",
                "sm_arch"
            ]
        );
        assert_eq!(
            props.values(NVIDIA, "sm_arch").unwrap(),
            ["90_real", "90_virtual"]
        );
        assert_eq!(
            props
                .feature(NVIDIA, "cuda_version_lower_bound")
                .unwrap()
                .origin,
            "the machine's driver supports CUDA 12.8"
        );
    }

    #[test]
    fn several_gpus_support_only_what_all_of_them_run() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"cuda_version":"12.8","gpus":[
                {"compute_capability":"8.6"},{"compute_capability":"8.9"},{"compute_capability":"8.6"}]}}"#,
        ));
        assert_eq!(
            props.values(NVIDIA, "sm_arch").unwrap(),
            sm_arch_values(cc("8.6"))
        );
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"cuda_version":"12.8","gpus":[
                {"compute_capability":"8.6"},{"compute_capability":"9.0"}]}}"#,
        ));
        let sm = props.feature(NVIDIA, "sm_arch").unwrap();
        assert!(sm.values.is_empty());
        assert!(sm.origin.contains("8.6, 9.0"), "{}", sm.origin);
    }

    #[test]
    fn gpu_without_capability_gives_no_sm_arch() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"cuda_version":"13.0","gpus":[]}}"#,
        ));
        assert!(props.feature(NVIDIA, "cuda_version_lower_bound").is_some());
        assert!(props.feature(NVIDIA, "sm_arch").is_none());
        assert!(props.gap(NVIDIA, Some("sm_arch")).is_some());
    }

    #[test]
    fn old_driver_gives_no_nvidia_namespace() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","nvidia":{"cuda_version":"10.2","gpus":[{"compute_capability":"7.0"}]}}"#,
        ));
        assert!(props.features(NVIDIA).is_none());
        assert!(props.gap(NVIDIA, None).unwrap().contains("10.2"));
    }

    #[test]
    fn amd_lists_gpus_in_use_and_installed_rocm() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","amd":{"rocm_version":"6.4.1","gpus":[
                {"gfx":"gfx942"},{"gfx":"gfx90a"},{"gfx":"gfx942"},{"gfx":"gfx1150","integrated":true}]}}"#,
        ));
        assert_eq!(props.values(AMD, "gfx_arch").unwrap(), ["gfx942", "gfx90a"]);
        assert_eq!(props.values(AMD, "rocm_version").unwrap(), ["6.4"]);

        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx1151","integrated":true}]}}"#,
        ));
        assert_eq!(props.values(AMD, "gfx_arch").unwrap(), ["gfx1151"]);
        assert!(props.feature(AMD, "rocm_version").is_none());
    }

    #[test]
    fn intel_lists_device_ips_discrete_first() {
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","intel":{"gpus":[
                {"device_ip":"12.71.4","integrated":true,"xpu_capable":true},
                {"device_ip":"20.1.0","xpu_capable":true},
                {"name":"UHD 770","integrated":true}]}}"#,
        ));
        assert_eq!(
            props.values(INTEL, "device_ip").unwrap(),
            ["20.1.0", "12.71.4"]
        );
        let props = SupportedProperties::from_machine(&machine(
            r#"{"platform":"linux-x86_64","intel":{"gpus":[{"name":"UHD 770","integrated":true}]}}"#,
        ));
        assert!(props.features(INTEL).is_none());
    }

    #[test]
    fn cpu_levels_and_versions() {
        assert_eq!(x86_64_level_values(3), ["v3", "v2", "v1"]);
        assert_eq!(x86_64_level_values(9), ["v4", "v3", "v2", "v1"]);
        assert_eq!(x86_64_level_values(0), ["v1"]);
        assert_eq!(
            aarch64_version_values("8.5a").unwrap(),
            ["8.5a", "8.4a", "8.3a", "8.2a", "8.1a", "8a"]
        );
        assert_eq!(aarch64_version_values("armv8-a").unwrap(), ["8a"]);
        assert_eq!(
            aarch64_version_values("9.0a").unwrap(),
            ["9.0a", "8.5a", "8.4a", "8.3a", "8.2a", "8.1a", "8a"]
        );
        assert_eq!(
            aarch64_version_values("9.2-a").unwrap()[..4],
            ["9.2a", "9.1a", "9.0a", "8.7a"]
        );
        assert_eq!(aarch64_version_values("7a"), None);
        assert_eq!(aarch64_version_values("banana"), None);
    }

    #[test]
    fn cpu_only_machine_supports_only_its_cpu() {
        let props =
            SupportedProperties::from_machine(&Machine::cpu_only("linux-x86_64".parse().unwrap()));
        assert_eq!(props.namespaces().collect::<Vec<_>>(), [X86_64]);
        assert_eq!(props.values(X86_64, "level").unwrap(), ["v1"]);
        assert_eq!(
            props.gap(NVIDIA, None),
            Some("the machine has no NVIDIA driver")
        );

        let mut arm = Machine::cpu_only("linux-aarch64".parse().unwrap());
        arm.aarch64_version = Some("8.2a".to_string());
        let props = SupportedProperties::from_machine(&arm);
        assert_eq!(props.namespaces().collect::<Vec<_>>(), [AARCH64]);
        assert_eq!(props.values(AARCH64, "version").unwrap()[0], "8.2a");
    }

    #[test]
    fn static_properties_replace_the_machine_s() {
        let file = super::super::schema::parse_variants_json(
            r#"{"default-priorities": {"namespace": ["nvidia", "priority", "fixed"]},
                "providers": {"priority": {"install-time": false}, "fixed": {"plugin-use": "none"}},
                "static-properties": {"priority": {"order": ["1", "2", "3"]}},
                "variants": {"null": {}}}"#,
        )
        .unwrap();
        let mut props = SupportedProperties::new();
        props.push("priority", "order", vec!["9".into()], "a confused caller");
        let merged = props.with_static_properties(&file);
        assert_eq!(merged.values("priority", "order").unwrap(), ["1", "2", "3"]);
        assert!(merged.features("fixed").is_none());
        assert!(merged.gap("fixed", None).unwrap().contains("static"));
    }
}
