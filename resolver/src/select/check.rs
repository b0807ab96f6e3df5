//! Whether one build's requirement is met by a machine: the selection rules of DESIGN.md.

use crate::catalog::{BackendRules, Requirement};
use crate::driver_cuda::{CudaSource, machine_cuda};
use crate::machine::{Machine, Os};
use crate::version::ComputeCapability;

use super::reason::Rejection;

/// How one build fits a machine: the three outcomes selection ranks by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fit {
    /// The build runs as built (a CPU build, or a GPU build that can use the machine's GPUs),
    /// with notes worth showing.
    Runs(Vec<String>),
    /// A CUDA, ROCm or XPU build on a machine with no GPU of its vendor: it runs on the CPU
    /// alone, its GPU code unused, so it is a CPU build of last resort (DESIGN.md: PyPI's torch
    /// is a CUDA build). The rejection says which GPU is missing.
    CpuAlone(Rejection),
    /// The build does not run here: the machine has a GPU of the build's vendor that the build
    /// cannot use (a driver below the family's floor, an architecture or gfx target it was not
    /// compiled for), or the vendor's stack is in a state selection cannot judge. Dropped, so
    /// the installer moves to a version that uses the GPU.
    Rejected(Rejection),
}

/// Judges one build against the machine: [`check`], with the builds that would run on the CPU
/// alone told apart from those that do not run.
pub(super) fn fit(machine: &Machine, rules: &BackendRules) -> Fit {
    match check(machine, rules) {
        Ok(notes) => Fit::Runs(notes),
        Err(rejection) if no_gpu_of_vendor(&rejection) => Fit::CpuAlone(rejection),
        Err(rejection) => Fit::Rejected(rejection),
    }
}

/// Whether a rejection says only that the machine has no GPU of the build's vendor, so the
/// build would run on the CPU (PyTorch's GPU builds fall back to the CPU when no device of
/// their vendor is present). A GPU of the vendor that the build cannot use is not this: an
/// Intel GPU the XPU builds do not support, an NVIDIA GPU whose driver is unknown.
fn no_gpu_of_vendor(rejection: &Rejection) -> bool {
    matches!(
        rejection,
        Rejection::NoNvidiaGpu
            | Rejection::NvidiaDriverWithoutDevice
            | Rejection::NoAmdGpu
            | Rejection::NoXpuDevice { intel_gpus: 0 }
    )
}

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

/// When a CUDA build runs here only by CUDA minor-version compatibility, that rule in words: the
/// build's CUDA version is above the one the machine's driver supports (reported, or derived
/// from its version by [`crate::driver_cuda`]), in the same major family, and the driver meets
/// the family's floor. `None` for any other build, or where the driver's CUDA is unknown.
///
/// This is where the catalog path and the variant path (the providers' `cuda_version_*`
/// properties, from the same driver CUDA version) may differ, and the explanation says which
/// rule decided.
pub fn minor_version_compatibility(machine: &Machine, rules: &BackendRules) -> Option<String> {
    let Requirement::Cuda { cuda, floor, .. } = &rules.requirement else {
        return None;
    };
    let nvidia = machine.nvidia.as_ref()?;
    let (have, source) = machine_cuda(nvidia, machine.platform.os)?;
    if *cuda <= have || cuda.major != have.major {
        return None;
    }
    let floor = floor.as_ref().map(|floor| {
        if machine.platform.os == Os::Windows {
            &floor.windows
        } else {
            &floor.linux
        }
    })?;
    let driver = match &source {
        CudaSource::Reported => "the machine's driver".to_string(),
        CudaSource::Driver { driver, .. } => format!(
            "driver {driver} (its branch's CUDA version, from NVIDIA's table of driver branches)"
        ),
    };
    Some(format!(
        "needs CUDA {cuda}, above the CUDA {have} of {driver}; it runs by CUDA minor-version compatibility, the rule that decided here: a CUDA {}.x build runs on any driver from {floor}, and PyTorch's CUDA wheels bundle their CUDA runtime",
        cuda.major
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::catalog::Catalog;

    /// How `backend` of torch `version` fits the machine described by `json`.
    fn fit_of(json: &str, version: &str, backend: &str) -> Fit {
        let catalog = Catalog::embedded();
        let machine: Machine = serde_json::from_str(json).unwrap();
        let release = catalog
            .train_release("torch", &version.parse().unwrap())
            .release;
        let backend: Backend = backend.parse().unwrap();
        fit(
            &machine,
            &catalog.backend_rules(release, &backend, machine.platform),
        )
    }

    const NO_GPU: &str = r#"{"platform":"linux-x86_64"}"#;

    #[test]
    fn a_gpu_build_runs_on_the_cpu_alone_where_no_gpu_of_its_vendor_is() {
        assert_eq!(fit_of(NO_GPU, "2.9.0", "cpu"), Fit::Runs(Vec::new()));
        assert_eq!(
            fit_of(NO_GPU, "2.9.0", "cu130"),
            Fit::CpuAlone(Rejection::NoNvidiaGpu)
        );
        assert_eq!(
            fit_of(NO_GPU, "2.9.0", "rocm6.4"),
            Fit::CpuAlone(Rejection::NoAmdGpu)
        );
        assert_eq!(
            fit_of(NO_GPU, "2.9.0", "xpu"),
            Fit::CpuAlone(Rejection::NoXpuDevice { intel_gpus: 0 })
        );
        // A container started without GPUs: the driver is there, no device is.
        let container =
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[]}}"#;
        assert_eq!(
            fit_of(container, "2.9.0", "cu130"),
            Fit::CpuAlone(Rejection::NvidiaDriverWithoutDevice)
        );
        // Another vendor's GPU does not make a CUDA build usable, nor reject it.
        let mi300x = r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx942"}]}}"#;
        assert_eq!(
            fit_of(mi300x, "2.9.0", "cu130"),
            Fit::CpuAlone(Rejection::NoNvidiaGpu)
        );
        assert_eq!(fit_of(mi300x, "2.9.0", "rocm6.4"), Fit::Runs(Vec::new()));
    }

    #[test]
    fn a_gpu_of_the_vendor_that_the_build_cannot_use_still_rejects_it() {
        let v100 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"Tesla V100-SXM2-32GB","compute_capability":"7.0"}]}}"#;
        let Fit::Rejected(rejection) = fit_of(v100, "2.11.0", "cu128") else {
            panic!("a V100 is not covered by torch 2.11's cu128");
        };
        assert_eq!(
            rejection.to_string(),
            "Tesla V100-SXM2-32GB has compute capability 7.0, which this build has no code for (compiled for 7.5, 8.0, 8.6, 9.0, 10.0, 12.0)"
        );
        let driver_570 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"8.9"}]}}"#;
        assert!(matches!(
            fit_of(driver_570, "2.9.0", "cu130"),
            Fit::Rejected(Rejection::DriverTooOld { family: 13, .. })
        ));
        let unknown_driver =
            r#"{"platform":"linux-x86_64","nvidia":{"gpus":[{"compute_capability":"8.9"}]}}"#;
        assert_eq!(
            fit_of(unknown_driver, "2.9.0", "cu130"),
            Fit::Rejected(Rejection::NvidiaDriverUnknown)
        );
        let strix_halo =
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx1151","integrated":true}]}}"#;
        assert!(matches!(
            fit_of(strix_halo, "2.9.0", "rocm6.4"),
            Fit::Rejected(Rejection::GfxNotCovered { .. })
        ));
        // An Intel GPU that XPU builds do not support is an Intel GPU all the same.
        let uhd = r#"{"platform":"linux-x86_64","intel":{"gpus":[{"name":"Intel UHD Graphics 630","integrated":true}]}}"#;
        assert_eq!(
            fit_of(uhd, "2.9.0", "xpu"),
            Fit::Rejected(Rejection::NoXpuDevice { intel_gpus: 1 })
        );
    }
}
