//! The NVIDIA probe: driver version, highest CUDA version, and each GPU with its compute
//! capability.
//!
//! Order of sources, cheapest and surest first:
//! 1. overrides ([`overrides::CUDA_DRIVER`], [`overrides::CUDA_VERSION`],
//!    [`overrides::CUDA_ARCH`]);
//! 2. kernel files: `/sys/module/nvidia/version`, `/proc/driver/nvidia/version`,
//!    `/proc/driver/nvidia/gpus/*/information` (model names, mapped to compute capabilities by
//!    [`models`]), PCI sysfs, the device tree of a Jetson;
//! 3. NVML, then libcuda, loaded at run time (host only): exact compute capabilities and the
//!    highest CUDA version;
//! 4. `nvidia-smi`, only when something is still unknown (WSL2, a model the table lacks).
//!
//! Inside a container the host's module is visible even without GPUs: GPUs read from kernel
//! files count only when their `/dev/nvidiaN` node exists (see [`crate::container`]).

pub mod library;
pub mod models;
pub mod procfs;
pub mod smi;

use wheelgate_resolver::machine::{Nvidia, NvidiaGpu};
use wheelgate_resolver::{ComputeCapability, CudaVersion, DottedVersion, Os};

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
use crate::pci::{self, PciDevice};
use crate::source::{Facts, Source, Trail};
use crate::sysroot::Sysroot;
use crate::{command, container};
use library::LibraryReport;

const MODULE_VERSION: &str = "/sys/module/nvidia/version";
const PROC_VERSION: &str = "/proc/driver/nvidia/version";
const PROC_GPUS: &str = "/proc/driver/nvidia/gpus";
const DEVICE_TREE_COMPATIBLE: &str = "/proc/device-tree/compatible";
const DEVICE_TREE_MODEL: &str = "/proc/device-tree/model";
/// WSL2's GPU paravirtualisation device: the GPU is the Windows host's.
const WSL_DXG: &str = "/dev/dxg";
const MODEL_TABLE: &str = "NVIDIA model-name table";
const PCI_TABLE: &str = "NVIDIA PCI id table";
const TEGRA_TABLE: &str = "Tegra SoC table";

/// A GPU being described, with the trail of its compute capability.
struct Candidate {
    gpu: NvidiaGpu,
    source: Option<Source>,
    trail: Trail,
    minor: Option<u32>,
}

impl Candidate {
    fn new(name: Option<String>) -> Self {
        Candidate {
            gpu: NvidiaGpu {
                name,
                ..NvidiaGpu::default()
            },
            source: None,
            trail: Trail::new(""),
            minor: None,
        }
    }

    fn set(&mut self, capability: ComputeCapability, source: Source) {
        self.gpu.compute_capability = Some(capability);
        self.source = Some(source);
    }

    /// Fills the compute capability from the model-name table, if the name is known.
    fn lookup_model(&mut self, from: &str) {
        let Some(name) = self.gpu.name.clone() else {
            return;
        };
        let source = Source::Table {
            table: MODEL_TABLE,
            key: name.clone(),
            from: from.to_string(),
        };
        match models::capability_from_model(&name) {
            Some(capability) => self.set(capability, source),
            None => self
                .trail
                .failed(source, format!("model `{name}` is not in the table")),
        }
    }

    /// Fills the compute capability (and a missing name) from the PCI id table.
    fn lookup_pci(&mut self, device: &PciDevice) {
        let source = Source::Table {
            table: PCI_TABLE,
            key: format!("10de:{:04x}", device.device),
            from: format!("/sys/bus/pci/devices/{}/device", device.address),
        };
        match models::from_pci_device(device.device) {
            Some((name, capability)) => {
                self.gpu.name.get_or_insert_with(|| name.to_string());
                self.set(capability, source);
            }
            None => self.trail.failed(
                source,
                format!("device id `{:04x}` is not in the table", device.device),
            ),
        }
    }
}

/// The Jetson chip, if the device tree names one.
struct Tegra {
    compatible: String,
    model: Option<String>,
    capability: ComputeCapability,
}

/// What the kernel says before any library or command is asked.
struct KernelSignals<'p> {
    file_gpus: Vec<(String, Option<procfs::GpuInformation>)>,
    pci_gpus: Vec<&'p PciDevice>,
    tegra: Option<Tegra>,
    wsl: bool,
}

/// The facts being gathered, with their trails.
struct Gathering {
    driver: Option<(DottedVersion, Source)>,
    driver_trail: Trail,
    cuda: Option<(CudaVersion, Source)>,
    cuda_trail: Trail,
    candidates: Vec<Candidate>,
    list_source: Option<Source>,
    list_trail: Trail,
}

/// Describes the NVIDIA stack, or `None` when the machine has no sign of one.
pub fn probe(
    ctx: &ProbeContext,
    os: Os,
    pci: &[PciDevice],
    facts: &mut Facts,
) -> Result<Option<Nvidia>, OverrideError> {
    let driver_override = overrides::cuda_driver(&ctx.env)?;
    let cuda_override = overrides::cuda_version(&ctx.env)?;
    let arch_override = overrides::cuda_arch(&ctx.env)?;
    let linux = os == Os::Linux;
    let sysroot = &ctx.sysroot;

    let mut gathering = Gathering {
        driver: None,
        driver_trail: Trail::new("nvidia.driver_version"),
        cuda: cuda_override.map(|v| (v, Source::Override(overrides::CUDA_VERSION))),
        cuda_trail: Trail::new("nvidia.cuda_version"),
        candidates: Vec::new(),
        list_source: None,
        list_trail: Trail::new("nvidia.gpus"),
    };
    gathering.driver = match driver_override {
        Some(version) => Some((version, Source::Override(overrides::CUDA_DRIVER))),
        None if linux => read_driver(sysroot, &mut gathering.driver_trail),
        None => None,
    };
    let signals = KernelSignals {
        file_gpus: if linux {
            read_proc_gpus(sysroot, &mut gathering.list_trail)
        } else {
            Vec::new()
        },
        pci_gpus: pci.iter().filter(|d| d.vendor == pci::NVIDIA).collect(),
        tegra: if linux { read_tegra(sysroot) } else { None },
        wsl: linux && sysroot.exists(WSL_DXG),
    };
    let present = gathering.driver.is_some()
        || !signals.file_gpus.is_empty()
        || !signals.pci_gpus.is_empty()
        || signals.tegra.is_some()
        || signals.wsl
        || os == Os::Windows
        || gathering.cuda.is_some()
        || arch_override.as_ref().is_some_and(|a| !a.is_empty());
    if !present {
        facts.push(absent(&gathering.driver_trail, linux));
        return Ok(None);
    }

    // GPU libraries: asked unless every fact they give is already overridden.
    let report = if arch_override.is_none() || gathering.cuda.is_none() {
        ask_libraries(ctx, &mut gathering)
    } else {
        None
    };
    if let Some(arch) = &arch_override {
        gathering.list_source = Some(Source::Override(overrides::CUDA_ARCH));
        for capability in arch {
            let mut candidate = Candidate::new(None);
            candidate.set(*capability, Source::Override(overrides::CUDA_ARCH));
            gathering.candidates.push(candidate);
        }
    } else if let Some((answer, name)) = &report {
        gathering.list_source = Some(Source::Library(name));
        gathering.candidates = answer
            .gpus
            .iter()
            .map(|gpu| from_library(gpu, name))
            .collect();
    } else {
        list_from_kernel(ctx, &signals, &mut gathering);
    }

    // nvidia-smi, only for what is still unknown: it is a subprocess.
    let dropped_by_container = gathering.list_source.is_some() && gathering.candidates.is_empty();
    let unknown_capability = gathering
        .candidates
        .iter()
        .any(|c| c.gpu.compute_capability.is_none());
    let unknown_list = gathering.list_source.is_none() && signals.wsl;
    let unknown_driver =
        gathering.driver.is_none() && (!gathering.candidates.is_empty() || signals.wsl);
    if !dropped_by_container && (unknown_capability || unknown_list || unknown_driver) {
        let keep_list = arch_override.is_some() || report.is_some();
        ask_nvidia_smi(ctx, &mut gathering, keep_list);
    }
    Ok(finish(gathering, facts))
}

/// The fact saying there is no NVIDIA stack, with everything that was looked at.
fn absent(driver_trail: &Trail, linux: bool) -> crate::source::Fact {
    let mut trail = Trail::new("nvidia");
    for attempt in driver_trail.tried() {
        trail.failed(attempt.source.clone(), &attempt.reason);
    }
    if linux {
        trail.failed(Source::File(DEVICE_TREE_COMPATIBLE.into()), "no Tegra chip");
        trail.failed(Source::File(WSL_DXG.into()), "not WSL2 with a GPU");
    }
    trail.failed(
        Source::File("/sys/bus/pci/devices".into()),
        "no NVIDIA kernel module, PCI device, Tegra chip or WSL2 GPU",
    );
    trail.none()
}

/// Asks NVML, then libcuda; the first that answers wins.
fn ask_libraries(
    ctx: &ProbeContext,
    gathering: &mut Gathering,
) -> Option<(LibraryReport, &'static str)> {
    if ctx.nvidia_libraries.is_empty() {
        let reason = if ctx.sysroot.is_host() {
            format!("disabled by {}=0", overrides::PROBE_LIBRARIES)
        } else {
            "not loaded for a sysroot other than `/` (they would describe the host)".to_string()
        };
        gathering
            .cuda_trail
            .failed(Source::Library("NVML"), &reason);
    }
    for library in &ctx.nvidia_libraries {
        match library.query() {
            Ok(answer) => {
                let name = library.name();
                if gathering.driver.is_none()
                    && let Some(version) = &answer.driver_version
                {
                    gathering.driver = Some((version.clone(), Source::Library(name)));
                }
                if gathering.cuda.is_none() {
                    gathering.cuda = answer.cuda_version.map(|v| (v, Source::Library(name)));
                }
                return Some((answer, name));
            }
            Err(error) => {
                gathering
                    .cuda_trail
                    .failed(Source::Library(library.name()), &error);
                gathering
                    .list_trail
                    .failed(Source::Library(library.name()), &error);
            }
        }
    }
    None
}

fn from_library(gpu: &library::LibraryGpu, name: &'static str) -> Candidate {
    let mut candidate = Candidate::new(gpu.name.clone());
    candidate.gpu.integrated = gpu.integrated.unwrap_or(false);
    if let Some(capability) = gpu.compute_capability {
        candidate.set(capability, Source::Library(name));
    } else {
        candidate
            .trail
            .failed(Source::Library(name), "no compute capability");
        candidate.lookup_model(name);
    }
    candidate
}

/// The GPU list from kernel files: the module's GPU directories, else PCI, else the device tree.
fn list_from_kernel(ctx: &ProbeContext, signals: &KernelSignals<'_>, gathering: &mut Gathering) {
    if !signals.file_gpus.is_empty() {
        gathering.list_source = Some(Source::File(PROC_GPUS.into()));
        for (address, information) in &signals.file_gpus {
            let path = format!("{PROC_GPUS}/{address}/information");
            if information.as_ref().is_some_and(|i| i.excluded) {
                gathering
                    .list_trail
                    .failed(Source::File(path), "GPU excluded by the administrator");
                continue;
            }
            let mut candidate = Candidate::new(information.as_ref().map(|i| i.model.clone()));
            candidate.minor = information.as_ref().and_then(|i| i.device_minor);
            candidate.lookup_model(&path);
            if candidate.gpu.compute_capability.is_none()
                && let Some(device) = signals.pci_gpus.iter().find(|d| &d.address == address)
            {
                candidate.lookup_pci(device);
            }
            gathering.candidates.push(candidate);
        }
        keep_passed_through(ctx, &mut gathering.candidates, &mut gathering.list_trail);
    } else if !signals.pci_gpus.is_empty() {
        gathering.list_source = Some(Source::File("/sys/bus/pci/devices".into()));
        for device in &signals.pci_gpus {
            let mut candidate = Candidate::new(None);
            candidate.lookup_pci(device);
            gathering.candidates.push(candidate);
        }
    } else if let Some(tegra) = &signals.tegra {
        gathering.list_source = Some(Source::File(DEVICE_TREE_COMPATIBLE.into()));
        let mut candidate = Candidate::new(tegra.model.clone());
        candidate.gpu.integrated = true;
        candidate.set(
            tegra.capability,
            Source::Table {
                table: TEGRA_TABLE,
                key: tegra.compatible.clone(),
                from: DEVICE_TREE_COMPATIBLE.into(),
            },
        );
        gathering.candidates.push(candidate);
    }
}

/// Turns the gathered facts into the description and its provenance.
fn finish(gathering: Gathering, facts: &mut Facts) -> Option<Nvidia> {
    let Gathering {
        driver,
        driver_trail,
        cuda,
        cuda_trail,
        candidates,
        list_source,
        list_trail,
    } = gathering;
    if driver.is_none() && cuda.is_none() && candidates.is_empty() {
        facts.push(driver_trail.not_found());
        facts.push(list_trail.not_found());
        return None;
    }
    facts.push(match &driver {
        Some((version, source)) => driver_trail.found(version, source.clone()),
        None => driver_trail.not_found(),
    });
    facts.push(match &cuda {
        Some((version, source)) => cuda_trail.found(version, source.clone()),
        None => cuda_trail.not_found(),
    });
    facts.push(match &list_source {
        Some(source) => list_trail.found(candidates.len(), source.clone()),
        None => list_trail.not_found(),
    });
    let list_source = list_source.unwrap_or(Source::Build);
    let mut gpus = Vec::with_capacity(candidates.len());
    for (index, candidate) in candidates.into_iter().enumerate() {
        let mut trail = Trail::new(format!("nvidia.gpu{index}"));
        for attempt in candidate.trail.tried() {
            trail.failed(attempt.source.clone(), &attempt.reason);
        }
        // A GPU whose compute capability no source knew is still shown, from its list.
        let source = candidate.source.unwrap_or_else(|| list_source.clone());
        facts.push(trail.found(describe(&candidate.gpu), source));
        gpus.push(candidate.gpu);
    }
    Some(Nvidia {
        driver_version: driver.map(|(v, _)| v),
        cuda_version: cuda.map(|(v, _)| v),
        gpus,
    })
}

fn describe(gpu: &NvidiaGpu) -> String {
    let name = gpu.name.as_deref().unwrap_or("NVIDIA GPU");
    let integrated = if gpu.integrated { ", integrated" } else { "" };
    match gpu.compute_capability {
        Some(capability) => format!("{name} (compute capability {capability}{integrated})"),
        None => format!("{name} (compute capability unknown{integrated})"),
    }
}

/// The driver version from the module's sysfs file, else from its procfs file.
fn read_driver(sysroot: &Sysroot, trail: &mut Trail) -> Option<(DottedVersion, Source)> {
    type Parser = fn(&str) -> Result<DottedVersion, procfs::ProcfsError>;
    let sources: [(&str, Parser); 2] = [
        (MODULE_VERSION, procfs::parse_module_version),
        (PROC_VERSION, procfs::parse_proc_version),
    ];
    for (path, parse) in sources {
        match sysroot
            .read(path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&text).map_err(|e| e.to_string()))
        {
            Ok(version) => return Some((version, Source::File(path.into()))),
            Err(reason) => trail.failed(Source::File(path.into()), reason),
        }
    }
    None
}

/// The GPUs the kernel module lists, by PCI address, with their information file if it could be
/// read (a GPU whose file is garbage is still a GPU; its model is then looked up by PCI id).
fn read_proc_gpus(
    sysroot: &Sysroot,
    trail: &mut Trail,
) -> Vec<(String, Option<procfs::GpuInformation>)> {
    let addresses = match sysroot.list(PROC_GPUS) {
        Ok(addresses) => addresses,
        Err(error) => {
            trail.failed(Source::File(PROC_GPUS.into()), error);
            return Vec::new();
        }
    };
    addresses
        .into_iter()
        .map(|address| {
            let path = format!("{PROC_GPUS}/{address}/information");
            let information = sysroot
                .read(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| procfs::parse_gpu_information(&text).map_err(|e| e.to_string()));
            let information = match information {
                Ok(information) => Some(information),
                Err(reason) => {
                    trail.failed(Source::File(path), reason);
                    None
                }
            };
            (address.to_ascii_lowercase(), information)
        })
        .collect()
}

/// A Jetson's chip from the device tree: `compatible` holds NUL-separated entries such as
/// `nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0`.
fn read_tegra(sysroot: &Sysroot) -> Option<Tegra> {
    let compatible = sysroot.read(DEVICE_TREE_COMPATIBLE).ok()?;
    let (entry, (_, capability)) = compatible
        .split('\0')
        .find_map(|entry| models::from_tegra_compatible(entry).map(|found| (entry, found)))?;
    Some(Tegra {
        compatible: entry.to_string(),
        model: sysroot.read(DEVICE_TREE_MODEL).ok(),
        capability,
    })
}

/// Drops GPUs whose `/dev/nvidiaN` node is missing inside a container (not passed through).
fn keep_passed_through(ctx: &ProbeContext, candidates: &mut Vec<Candidate>, trail: &mut Trail) {
    let nodes: Vec<u32> = match ctx.sysroot.list("/dev") {
        Ok(entries) => entries
            .iter()
            .filter_map(|name| name.strip_prefix("nvidia")?.parse().ok())
            .collect(),
        Err(error) => {
            trail.failed(
                Source::File("/dev".into()),
                format!("{error}; assuming the GPUs are usable"),
            );
            return;
        }
    };
    if nodes.is_empty() {
        if let Some(marker) = container::marker(&ctx.sysroot, &ctx.env) {
            trail.failed(
                Source::File("/dev".into()),
                format!(
                    "no /dev/nvidiaN node in a container ({marker}): the host's GPUs are not passed through"
                ),
            );
            candidates.clear();
        }
        return;
    }
    candidates.retain(|candidate| match candidate.minor {
        Some(minor) if !nodes.contains(&minor) => {
            trail.failed(
                Source::File(format!("/dev/nvidia{minor}")),
                "missing: GPU not passed through",
            );
            false
        }
        _ => true,
    });
}

/// Asks `nvidia-smi` and takes its driver version (unless known) and its GPU list (unless
/// `keep_list`: an override or a library gave one).
fn ask_nvidia_smi(ctx: &ProbeContext, gathering: &mut Gathering, keep_list: bool) {
    let source = Source::Command("nvidia-smi");
    let fail = |gathering: &mut Gathering, reason: String| {
        gathering.list_trail.failed(source.clone(), &reason);
        gathering.driver_trail.failed(source.clone(), reason);
    };
    if !ctx.commands {
        fail(
            gathering,
            format!("disabled by {}=0", overrides::PROBE_COMMANDS),
        );
        return;
    }
    let Some(program) = command::find(&ctx.sysroot, ctx.env.get("PATH"), "nvidia-smi") else {
        fail(gathering, "not on PATH".to_string());
        return;
    };
    let answer = match smi::run(&program, ctx.command_timeout) {
        Ok(answer) => answer,
        Err(error) => {
            fail(gathering, error.to_string());
            return;
        }
    };
    let source = Source::Command("nvidia-smi");
    if gathering.driver.is_none()
        && let Some(version) = answer.iter().find_map(|g| g.driver_version.clone())
    {
        gathering.driver = Some((version, source.clone()));
    }
    if keep_list {
        return;
    }
    // The attempts made for the old list stay in the list trail; the new list replaces it.
    for candidate in &gathering.candidates {
        for attempt in candidate.trail.tried() {
            gathering
                .list_trail
                .failed(attempt.source.clone(), &attempt.reason);
        }
    }
    gathering.list_source = Some(source.clone());
    gathering.candidates = answer
        .into_iter()
        .map(|gpu| {
            let mut candidate = Candidate::new(gpu.name);
            match gpu.compute_capability {
                Some(capability) => candidate.set(capability, source.clone()),
                None => candidate.lookup_model("nvidia-smi"),
            }
            candidate
        })
        .collect();
}
