//! Whether one build's requirement is met by a machine: the selection rules of DESIGN.md.

use crate::catalog::{BackendRules, Requirement};
use crate::machine::{Machine, Os};
use crate::version::ComputeCapability;

use super::reason::Rejection;

/// Checks the rules of one backend against the machine. `Ok` carries notes worth showing (a GPU
/// whose compute capability is unknown, so coverage could not be checked).
pub fn check(machine: &Machine, rules: &BackendRules) -> Result<Vec<String>, Rejection> {
    match &rules.requirement {
        Requirement::Nothing => Ok(Vec::new()),
        Requirement::Cuda {
            cuda,
            floor,
            sm,
            ptx,
        } => check_cuda(machine, cuda.major, floor.as_ref(), sm, ptx),
        Requirement::Rocm { gfx } => {
            let gpus = machine.amd_gpus_in_use();
            if gpus.is_empty() {
                return Err(Rejection::NoAmdGpu);
            }
            for gpu in gpus {
                if !gfx.contains(&gpu.gfx) {
                    return Err(Rejection::GfxNotCovered {
                        gpu: gpu
                            .name
                            .clone()
                            .unwrap_or_else(|| "the AMD GPU".to_string()),
                        gfx: gpu.gfx.clone(),
                    });
                }
            }
            Ok(Vec::new())
        }
        Requirement::Xpu { device_ips } => check_xpu(machine, device_ips),
    }
}

/// An Intel GPU is an XPU target when the probes found it usable (an Arc, Data Center Max or
/// Core Ultra GPU the runtime can reach) and, where its device IP is known, PyTorch lists that
/// IP: a stated IP is a fact the catalog judges, whoever stated it (a probe or an override).
fn check_xpu(machine: &Machine, device_ips: &[String]) -> Result<Vec<String>, Rejection> {
    let intel = machine.intel.as_ref().map_or(&[][..], |i| &i.gpus);
    let listed = |ip: &String| device_ips.contains(ip);
    if intel
        .iter()
        .any(|gpu| gpu.xpu_capable && gpu.device_ip.as_ref().is_none_or(listed))
    {
        return Ok(Vec::new());
    }
    if let Some((gpu, ip)) = intel.iter().find_map(|gpu| {
        gpu.device_ip
            .as_ref()
            .filter(|ip| !listed(ip))
            .map(|ip| (gpu, ip))
    }) {
        return Err(Rejection::XpuDeviceNotListed {
            gpu: gpu
                .name
                .clone()
                .unwrap_or_else(|| "the Intel GPU".to_string()),
            device_ip: ip.clone(),
        });
    }
    Err(Rejection::NoXpuDevice {
        intel_gpus: intel.len(),
    })
}

fn check_cuda(
    machine: &Machine,
    family: u16,
    floor: Option<&crate::catalog::DriverFloor>,
    sm: &[ComputeCapability],
    ptx: &[ComputeCapability],
) -> Result<Vec<String>, Rejection> {
    let Some(nvidia) = &machine.nvidia else {
        return Err(Rejection::NoNvidiaGpu);
    };
    if nvidia.gpus.is_empty() {
        return Err(
            if nvidia.driver_version.is_some() || nvidia.cuda_version.is_some() {
                Rejection::NvidiaDriverWithoutDevice
            } else {
                Rejection::NoNvidiaGpu
            },
        );
    }
    let Some(floor) = floor else {
        return Err(Rejection::UnknownCudaFamily { family });
    };
    let floor = if machine.platform.os == Os::Windows {
        &floor.windows
    } else {
        &floor.linux
    };
    // The driver version is what NVIDIA's floors are stated in; the CUDA version reported by
    // NVML or libcuda is equivalent (family F usable when it is at least F.0) when it is all
    // there is.
    match (&nvidia.driver_version, nvidia.cuda_version) {
        (Some(driver), _) if driver < floor => {
            return Err(Rejection::DriverTooOld {
                driver: driver.clone(),
                floor: floor.clone(),
                family,
            });
        }
        (None, Some(cuda)) if cuda.major < family => {
            return Err(Rejection::CudaTooOld { have: cuda, family });
        }
        (Some(_), _) | (None, Some(_)) => {}
        (None, None) => return Err(Rejection::NvidiaDriverUnknown),
    }
    let mut notes = Vec::new();
    for (index, gpu) in nvidia.gpus.iter().enumerate() {
        let name = gpu
            .name
            .clone()
            .unwrap_or_else(|| format!("NVIDIA GPU {index}"));
        let Some(capability) = gpu.compute_capability else {
            notes.push(format!(
                "the compute capability of {name} is unknown, so architecture coverage was not checked; set WHEELGATE_CUDA_ARCH"
            ));
            continue;
        };
        // SASS for X.Z runs on X.Y when Z <= Y (same major); PTX for X.Y is JIT-compiled on any
        // newer GPU.
        let covered = sm
            .iter()
            .any(|s| s.major == capability.major && s.minor <= capability.minor)
            || ptx.iter().any(|p| *p <= capability);
        if !covered {
            return Err(Rejection::GpuNotCovered {
                gpu: name,
                capability,
                compiled: sm.to_vec(),
            });
        }
    }
    Ok(notes)
}
