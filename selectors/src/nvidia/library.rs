//! The interface between the NVIDIA probe and a GPU library (NVML, libcuda), so the probe can be
//! tested with a library that fails in any way without loading a real one.

use std::fmt;

use wheelgate_resolver::{ComputeCapability, CudaVersion, DottedVersion};

/// What a GPU library reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LibraryReport {
    /// Driver version (NVML only).
    pub driver_version: Option<DottedVersion>,
    /// Highest CUDA version the driver supports.
    pub cuda_version: Option<CudaVersion>,
    /// The GPUs the library can use, in its order.
    pub gpus: Vec<LibraryGpu>,
}

/// One GPU as a library reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LibraryGpu {
    /// The GPU's name (`NVIDIA H100 80GB HBM3`), where the library gives one.
    pub name: Option<String>,
    /// The GPU's compute capability, where the library gives one.
    pub compute_capability: Option<ComputeCapability>,
    /// Integrated GPU (Jetson), where the library says.
    pub integrated: Option<bool>,
}

/// Why a library gave no answer. [`LibraryError::NotFound`] is the normal case on a machine
/// without NVIDIA's driver and is only logged at debug level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LibraryError {
    #[error("not found (tried {0})")]
    /// No candidate library loaded; holds the names tried.
    NotFound(String),
    #[error("`{library}` has no symbol `{symbol}`")]
    /// The library lacks a function the probe needs.
    MissingSymbol {
        /// The library's name.
        library: String,
        /// The missing function's name.
        symbol: String,
    },
    #[error("`{function}` failed with code {code}{}", describe(.message.as_deref()))]
    /// A library function returned an error code.
    Call {
        /// The function's name (`nvmlInit_v2`).
        function: &'static str,
        /// The code it returned.
        code: i64,
        /// The library's name for the code, where known.
        message: Option<String>,
    },
    #[error("this platform has no such library")]
    /// The library does not exist on this OS.
    Unsupported,
}

fn describe(message: Option<&str>) -> String {
    message.map(|m| format!(" ({m})")).unwrap_or_default()
}

/// A GPU library the NVIDIA probe can ask.
pub trait NvidiaLibrary: Send + Sync {
    /// Name shown as the source of facts (`NVML`, `libcuda`).
    fn name(&self) -> &'static str;
    /// Loads the library if needed and asks it.
    fn query(&self) -> Result<LibraryReport, LibraryError>;
}

impl fmt::Debug for dyn NvidiaLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
