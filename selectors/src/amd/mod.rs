//! The AMD probe: GPUs from the KFD topology (what ROCm itself enumerates), the amdgpu module
//! version, and the installed ROCm version.
//!
//! PyTorch's ROCm wheels up to 7.2 bundle ROCm's user space, so an installed ROCm is reported
//! but not required; what matters is each GPU's gfx target and the kernel driver (`/dev/kfd`).

pub mod devices;

use wheelgate_resolver::DottedVersion;
use wheelgate_resolver::machine::{Amd, AmdGpu, GfxTarget};

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
use crate::pci::{self, PciDevice};
use crate::source::{Facts, Source, Trail};

const NODES: &str = "/sys/class/kfd/kfd/topology/nodes";
const MODULE_VERSION: &str = "/sys/module/amdgpu/version";
const ROCM_VERSION: &str = "/opt/rocm/.info/version";
const KFD_DEVICE: &str = "/dev/kfd";

/// A KFD node's properties that are not a GPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KfdError {
    #[error("no `gfx_target_version` line")]
    /// The node has no `gfx_target_version` line.
    NoTarget,
    #[error("a CPU node (`gfx_target_version 0`)")]
    /// The node is a CPU (`gfx_target_version 0`).
    CpuNode,
    #[error("`gfx_target_version {0}` names no gfx target")]
    /// The `gfx_target_version` decodes to no gfx target; holds the number.
    BadTarget(u32),
}

/// One GPU node of the KFD topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KfdNode {
    /// The node's LLVM gfx target (`gfx1100`).
    pub gfx: GfxTarget,
    /// PCI device id.
    pub device_id: Option<u16>,
    /// CPU cores in the same node: an APU (older kernels report APUs as one node).
    pub cpu_cores: u32,
}

/// `/sys/class/kfd/kfd/topology/nodes/<n>/properties`, `key value` lines (excerpt of an
/// RX 7900 XTX):
/// ```text
/// cpu_cores_count 0
/// simd_count 192
/// gfx_target_version 110000
/// vendor_id 4098
/// device_id 29772
/// location_id 768
/// drm_render_minor 128
/// ```
/// CPU nodes have `gfx_target_version 0`.
pub fn parse_properties(content: &str) -> Result<KfdNode, KfdError> {
    let mut target = None;
    let mut device_id = None;
    let mut cpu_cores = 0;
    for line in content.lines() {
        let Some((key, value)) = line.trim().split_once(' ') else {
            continue;
        };
        let value = value.trim();
        match key {
            "gfx_target_version" => target = value.parse::<u32>().ok(),
            "device_id" => device_id = value.parse::<u16>().ok(),
            "cpu_cores_count" => cpu_cores = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    let target = target.ok_or(KfdError::NoTarget)?;
    if target == 0 {
        return Err(KfdError::CpuNode);
    }
    let gfx = GfxTarget::from_kfd_version(target).ok_or(KfdError::BadTarget(target))?;
    Ok(KfdNode {
        gfx,
        device_id,
        cpu_cores,
    })
}

/// `/opt/rocm/.info/version`: `6.4.1-83`, the part before `-` is the version.
pub fn parse_rocm_version(content: &str) -> Option<DottedVersion> {
    content.trim().split('-').next()?.parse().ok()
}

/// Describes the AMD GPUs ROCm can use, or `None` without any.
pub fn probe(
    ctx: &ProbeContext,
    linux: bool,
    pci: &[PciDevice],
    facts: &mut Facts,
) -> Result<Option<Amd>, OverrideError> {
    let gfx_override = overrides::amd_gfx(&ctx.env)?;
    let rocm_override = overrides::rocm_version(&ctx.env)?;
    let mut list_trail = Trail::new("amd.gpus");
    let (list_source, found) = if let Some(targets) = gfx_override {
        let source = Source::Override(overrides::AMD_GFX);
        let gpus = targets
            .into_iter()
            .map(|gfx| {
                let integrated = devices::is_apu_target(gfx.as_str());
                let gpu = AmdGpu {
                    name: None,
                    gfx,
                    integrated,
                };
                (gpu, source.clone())
            })
            .collect();
        (Some(source), gpus)
    } else if linux {
        read_kfd(ctx, pci, &mut list_trail)
    } else {
        (None, Vec::new())
    };
    let (gpus, gpu_sources): (Vec<AmdGpu>, Vec<Source>) = found.into_iter().unzip();

    if gpus.is_empty() {
        facts.push(list_trail.none());
        return Ok(None);
    }

    let mut rocm_trail = Trail::new("amd.rocm_version");
    let rocm = match rocm_override {
        Some(version) => version.map(|v| (v, Source::Override(overrides::ROCM_VERSION))),
        None => read_rocm_version(ctx, &mut rocm_trail),
    };
    let mut module_trail = Trail::new("amd.kernel_driver");
    match ctx.sysroot.read(MODULE_VERSION) {
        Ok(version) => facts.push(module_trail.found(version, Source::File(MODULE_VERSION.into()))),
        Err(error) => {
            // The in-tree amdgpu module has no version file; only AMD's DKMS build does.
            module_trail.failed(Source::File(MODULE_VERSION.into()), error);
            facts.push(module_trail.not_found());
        }
    }
    facts.push(match &rocm {
        Some((version, source)) => rocm_trail.found(version, source.clone()),
        None => rocm_trail.not_found(),
    });
    facts.push(list_trail.found(gpus.len(), list_source.expect("gpus were found")));
    for (index, (gpu, source)) in gpus.iter().zip(gpu_sources).enumerate() {
        let name = gpu.name.as_deref().unwrap_or("AMD GPU");
        let integrated = if gpu.integrated { ", integrated" } else { "" };
        facts.push(
            Trail::new(format!("amd.gpu{index}"))
                .found(format!("{name} ({}{integrated})", gpu.gfx), source),
        );
    }
    Ok(Some(Amd {
        rocm_version: rocm.map(|(v, _)| v),
        gpus,
    }))
}

/// The GPU nodes of the KFD topology, or why there are none.
fn read_kfd(
    ctx: &ProbeContext,
    pci: &[PciDevice],
    trail: &mut Trail,
) -> (Option<Source>, Vec<(AmdGpu, Source)>) {
    let sysroot = &ctx.sysroot;
    let nodes = match sysroot.list(NODES) {
        Ok(nodes) => nodes,
        Err(error) => {
            trail.failed(Source::File(NODES.into()), error);
            match pci.iter().find(|d| d.vendor == pci::AMD) {
                Some(device) => trail.failed(
                    Source::File(format!("/sys/bus/pci/devices/{}", device.address)),
                    format!(
                        "AMD display device `1002:{:04x}` without the amdgpu driver's KFD: ROCm cannot use it",
                        device.device
                    ),
                ),
                None => trail.failed(
                    Source::File("/sys/bus/pci/devices".into()),
                    "no amdgpu KFD topology and no AMD display device",
                ),
            }
            return (None, Vec::new());
        }
    };
    let mut nodes: Vec<(u32, String)> = nodes
        .into_iter()
        .filter_map(|n| Some((n.parse().ok()?, n)))
        .collect();
    nodes.sort();
    let mut gpus = Vec::new();
    for (_, node) in nodes {
        let path = format!("{NODES}/{node}/properties");
        let text = match sysroot.read(&path) {
            Ok(text) => text,
            Err(error) => {
                trail.failed(Source::File(path), error);
                continue;
            }
        };
        match parse_properties(&text) {
            Ok(node) => {
                let name = node.device_id.and_then(devices::name).map(str::to_string);
                let integrated = node.cpu_cores > 0 || devices::is_apu_target(node.gfx.as_str());
                let gpu = AmdGpu {
                    name,
                    gfx: node.gfx,
                    integrated,
                };
                gpus.push((gpu, Source::File(path)));
            }
            Err(KfdError::CpuNode) => {}
            Err(error) => trail.failed(Source::File(path), error),
        }
    }
    // Inside a container the topology is the host's; the GPUs are usable only through /dev/kfd.
    if !gpus.is_empty() && sysroot.exists("/dev") && !sysroot.exists(KFD_DEVICE) {
        trail.failed(
            Source::File(KFD_DEVICE.into()),
            "missing: the GPUs are not usable here (not passed through to this container?)",
        );
        gpus.clear();
    }
    (Some(Source::File(NODES.into())), gpus)
}

/// The installed ROCm: `$ROCM_PATH/.info/version`, else `/opt/rocm/.info/version`.
fn read_rocm_version(ctx: &ProbeContext, trail: &mut Trail) -> Option<(DottedVersion, Source)> {
    let mut paths = Vec::new();
    if let Some(root) = ctx.env.get("ROCM_PATH") {
        paths.push(format!("{}/.info/version", root.trim_end_matches('/')));
    }
    paths.push(ROCM_VERSION.to_string());
    for path in paths {
        match ctx.sysroot.read(&path) {
            Ok(text) => match parse_rocm_version(&text) {
                Some(version) => return Some((version, Source::File(path))),
                None => trail.failed(Source::File(path), format!("`{text}` is not a version")),
            },
            Err(error) => trail.failed(Source::File(path), error),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gpu_and_cpu_nodes() {
        let gpu = parse_properties(
            "cpu_cores_count 0\nsimd_count 192\ngfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\n",
        )
        .unwrap();
        assert_eq!(gpu.gfx.as_str(), "gfx1100");
        assert_eq!(gpu.device_id, Some(0x744c));
        assert_eq!(
            parse_properties("cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n"),
            Err(KfdError::CpuNode)
        );
    }

    #[test]
    fn refuses_garbage_nodes() {
        assert_eq!(parse_properties(""), Err(KfdError::NoTarget));
        assert_eq!(
            parse_properties("gfx_target_version banana"),
            Err(KfdError::NoTarget)
        );
        assert_eq!(
            parse_properties("gfx_target_version 99999999"),
            Err(KfdError::BadTarget(99_999_999))
        );
    }

    #[test]
    fn reads_rocm_versions() {
        assert_eq!(
            parse_rocm_version("6.4.1-83\n").unwrap().to_string(),
            "6.4.1"
        );
        assert_eq!(parse_rocm_version("garbage"), None);
    }
}
