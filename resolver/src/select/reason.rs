//! Why a backend was not chosen, in words a person can act on.

use std::fmt;

use crate::backend::{Backend, BackendKind};
use crate::machine::{GfxTarget, Platform};
use crate::version::{ComputeCapability, CudaVersion, DottedVersion};

/// The reason one offered backend was rejected. Its `Display` is a sentence without the backend
/// name; [`super::Considered`] prefixes it (`cu130: driver 570.86.10 is below 580, ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The index has no file of this backend for the machine's OS and CPU.
    NoFileForPlatform {
        /// The machine's OS and CPU.
        platform: Platform,
    },
    /// The machine has no NVIDIA GPU.
    NoNvidiaGpu,
    /// An NVIDIA driver is loaded but no GPU is visible (a container without devices).
    NvidiaDriverWithoutDevice,
    /// Neither the driver version nor the CUDA version is known.
    NvidiaDriverUnknown,
    /// The driver is older than the family's floor.
    DriverTooOld {
        /// The machine's driver version.
        driver: DottedVersion,
        /// The lowest driver NVIDIA's CUDA compatibility table allows for the family.
        floor: DottedVersion,
        /// The CUDA major version of the build (`13` for `cu130`).
        family: u16,
    },
    /// The driver's CUDA version is below the family.
    CudaTooOld {
        /// The highest CUDA version the driver supports.
        have: CudaVersion,
        /// The CUDA major version of the build.
        family: u16,
    },
    /// No driver floor is known for this CUDA family.
    UnknownCudaFamily {
        /// The CUDA major version of the build.
        family: u16,
    },
    /// A GPU's compute capability is not among the compiled architectures.
    GpuNotCovered {
        /// The GPU's name.
        gpu: String,
        /// The GPU's compute capability.
        capability: ComputeCapability,
        /// The architectures the build has SASS code for; empty when unknown.
        compiled: Vec<ComputeCapability>,
    },
    /// The machine has no AMD GPU.
    NoAmdGpu,
    /// A GPU's gfx target is not among the build's targets.
    GfxNotCovered {
        /// The GPU's name.
        gpu: String,
        /// The GPU's gfx target.
        gfx: GfxTarget,
    },
    /// The machine has no Intel GPU that the XPU build supports.
    NoXpuDevice {
        /// How many Intel GPUs the machine has (0: none at all; more: none supported).
        intel_gpus: usize,
    },
    /// An Intel GPU's device IP is not among those PyTorch's XPU builds list.
    XpuDeviceNotListed {
        /// The GPU's name.
        gpu: String,
        /// The GPU's device IP version as reported.
        device_ip: String,
    },
    /// Usable, but another backend ranks higher.
    Outranked {
        /// The backend that was chosen instead.
        by: Backend,
        /// What made the chosen backend rank higher.
        why: OutrankedBecause,
    },
    /// Runs here on the CPU alone, its GPU code unused: the machine has no GPU of the build's
    /// vendor. Such a build is a CPU build of last resort, ranked below every CPU build and every
    /// build that uses one of the machine's GPUs, and another build of last resort ranked above
    /// it was chosen. (Where a build that runs as built was chosen, a build of last resort is
    /// rejected with what the machine lacks, as [`Rejection::NoNvidiaGpu`].)
    CpuLastResort {
        /// Why the build's GPU code goes unused: [`Rejection::NoNvidiaGpu`],
        /// [`Rejection::NvidiaDriverWithoutDevice`], [`Rejection::NoAmdGpu`] or
        /// [`Rejection::NoXpuDevice`] with no Intel GPU at all.
        no_gpu: Box<Rejection>,
        /// The backend that was chosen instead.
        by: Backend,
    },
    /// A backend was pinned and this is not it.
    NotPinned {
        /// The pinned backend.
        pinned: Backend,
    },
}

/// Why a usable backend lost to the chosen one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutrankedBecause {
    /// The chosen one is of an accelerator class the machine prefers (its best device).
    DeviceClass,
    /// Same family, newer version.
    Newer,
    /// The site's configured preference.
    SitePreference,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::NoFileForPlatform { platform } => write!(f, "no file of this build for {platform}"),
            Rejection::NoNvidiaGpu => f.write_str("no NVIDIA GPU on this machine"),
            Rejection::NvidiaDriverWithoutDevice => f.write_str(
                "an NVIDIA driver is loaded but no NVIDIA GPU is visible (a container started without GPUs?)",
            ),
            Rejection::NvidiaDriverUnknown => f.write_str(
                "the NVIDIA driver version is unknown; set WHEELGATE_CUDA_DRIVER (e.g. `580.65.06`) to say it",
            ),
            Rejection::DriverTooOld { driver, floor, family } => {
                write!(f, "driver {driver} is below {floor}, the minimum for CUDA {family}")
            }
            Rejection::CudaTooOld { have, family } => {
                write!(f, "the driver supports CUDA {have}, below {family}.0 needed by CUDA {family} builds")
            }
            Rejection::UnknownCudaFamily { family } => {
                write!(f, "no driver floor is known for CUDA {family}; pin this backend to use it anyway")
            }
            Rejection::GpuNotCovered { gpu, capability, compiled } => {
                let list: Vec<String> = compiled.iter().map(ToString::to_string).collect();
                if list.is_empty() {
                    write!(f, "{gpu} (compute capability {capability}): the build's compiled architectures are unknown")
                } else {
                    write!(
                        f,
                        "{gpu} has compute capability {capability}, which this build has no code for (compiled for {})",
                        list.join(", ")
                    )
                }
            }
            Rejection::NoAmdGpu => f.write_str("no AMD GPU on this machine"),
            Rejection::GfxNotCovered { gpu, gfx } => write!(f, "{gpu} ({gfx}) is not among this build's gfx targets"),
            Rejection::NoXpuDevice { intel_gpus: 0 } => f.write_str("no Intel GPU on this machine"),
            Rejection::NoXpuDevice { .. } => f.write_str(
                "the Intel GPU here is not supported by XPU builds (Arc, Data Center Max and Core Ultra GPUs are)",
            ),
            Rejection::XpuDeviceNotListed { gpu, device_ip } => write!(
                f,
                "{gpu} has device IP {device_ip}, which PyTorch's XPU builds do not support (not among the catalog's device IPs)"
            ),
            Rejection::Outranked { by, why } => match why {
                OutrankedBecause::DeviceClass => {
                    write!(f, "usable, but {by} targets this machine's preferred {} device", by.kind())
                }
                OutrankedBecause::Newer => write!(f, "usable, but {by} is newer"),
                OutrankedBecause::SitePreference => write!(f, "usable, but the configured preference puts {by} first"),
            },
            Rejection::CpuLastResort { no_gpu, by } => write!(
                f,
                "{no_gpu}, so it would run on the CPU alone: a CPU build of last resort, ranked below {by}"
            ),
            Rejection::NotPinned { pinned } => write!(f, "the backend is pinned to {pinned}"),
        }
    }
}

impl Rejection {
    /// Whether the backend would run on the machine (it lost on preference only). A build that
    /// would run on the CPU alone ([`Rejection::CpuLastResort`]) counts: it runs.
    pub fn is_usable(&self) -> bool {
        matches!(
            self,
            Rejection::Outranked { .. }
                | Rejection::CpuLastResort { .. }
                | Rejection::NotPinned { .. }
        )
    }
}

/// Text for an accelerator kind in notes.
pub(crate) fn kind_name(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Cpu => "CPU",
        BackendKind::Cuda => "NVIDIA",
        BackendKind::Rocm => "AMD",
        BackendKind::Xpu => "Intel",
    }
}
