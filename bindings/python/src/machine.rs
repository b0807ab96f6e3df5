//! `wheelgate.Machine` and `wheelgate.detect()`: the resolver's machine model, probed as the
//! `wheelgate detect` command probes it (same overrides, same `WHEELGATE_SYSROOT`), or read
//! back from a token or from `wheelgate detect --json` output.

use std::ffi::CString;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use wheelgate_resolver::token;
use wheelgate_resolver::{Catalog, Machine};
use wheelgate_selectors::overrides::Env;
use wheelgate_selectors::{ProbeContext, detect as probe};

use crate::errors::{MachineError, guard, message};

/// A machine as selection sees it: platform, C library, GPUs and their drivers.
#[pyclass(name = "Machine", module = "wheelgate", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct PyMachine {
    pub(crate) machine: Machine,
}

/// The machine, once [`Machine::check_plausible`] has passed it: `MachineError` naming
/// `source` when it cannot exist, a `UserWarning` per doubtful fact (Python shows each once per
/// call site by default).
fn checked(py: Python<'_>, machine: Machine, source: &str) -> PyResult<PyMachine> {
    let doubts = machine
        .check_plausible(Catalog::embedded())
        .map_err(|error| {
            MachineError::new_err(format!(
                "{source} describes a machine that cannot exist: {error}"
            ))
        })?;
    for doubt in doubts {
        // A C string: a NUL (a token may escape one into a device IP) is written out.
        let text =
            CString::new(format!("{source}: {doubt}").replace('\0', "\\0")).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &text, 1)?;
    }
    Ok(PyMachine { machine })
}

/// One GPU of a machine.
#[pyclass(name = "Gpu", module = "wheelgate", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq)]
pub struct PyGpu {
    /// `nvidia`, `amd` or `intel`.
    vendor: &'static str,
    /// The marketing name, where known.
    name: Option<String>,
    /// What builds are judged by: the compute capability (`9.0`), the gfx target (`gfx90a`), or
    /// Intel's device IP version (`12.60.7`).
    architecture: Option<String>,
    /// Whether it is an integrated GPU.
    integrated: bool,
}

#[pymethods]
impl PyMachine {
    /// The machine a token (`wheelgate detect --token`) describes.
    /// Raises `MachineError` for a machine that cannot exist (an NVIDIA GPU on a Mac) and warns
    /// (`UserWarning`) for a doubtful one (an unknown `gfx9999`).
    #[staticmethod]
    fn from_token(py: Python<'_>, token: &str) -> PyResult<Self> {
        guard(|| {
            let machine = token::decode(token.trim()).map_err(|error| {
                MachineError::new_err(format!(
                    "`{}` is not a machine token: {}",
                    shorten(token),
                    message(&error)
                ))
            })?;
            checked(
                py,
                machine,
                &format!("the machine token `{}`", shorten(token.trim())),
            )
        })
    }

    /// The machine in `wheelgate detect --json` output. Raises `MachineError` for a machine
    /// that cannot exist and warns (`UserWarning`) for a doubtful one, as `from_token`.
    #[staticmethod]
    fn from_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        guard(|| {
            let machine = serde_json::from_str(json).map_err(|error| {
                MachineError::new_err(format!("not a `wheelgate detect --json` machine: {error}"))
            })?;
            checked(py, machine, "the JSON machine")
        })
    }

    /// The compact token for `/m/<token>/simple/` URLs.
    #[getter]
    fn token(&self) -> String {
        token::encode(&self.machine)
    }

    /// The machine model as JSON, as `wheelgate detect --json` prints it.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.machine)
            .map_err(|error| MachineError::new_err(format!("cannot encode the machine: {error}")))
    }

    /// `linux-x86_64`, `windows-amd64`, `macos-arm64`, ...
    #[getter]
    fn platform(&self) -> String {
        self.machine.platform.to_string()
    }

    /// `linux`, `windows` or `macos`.
    #[getter]
    fn os(&self) -> String {
        self.platform()
            .split_once('-')
            .map_or_else(String::new, |(os, _)| os.to_string())
    }

    /// The CPU architecture as the platform names it (`x86_64`, `aarch64`, `arm64`, ...).
    #[getter]
    fn arch(&self) -> String {
        self.platform()
            .split_once('-')
            .map_or_else(String::new, |(_, arch)| arch.to_string())
    }

    /// The glibc version on Linux (`2.36`); `None` for musl or when unknown.
    #[getter]
    fn glibc(&self) -> Option<String> {
        self.machine.glibc.as_ref().map(ToString::to_string)
    }

    /// The NVIDIA driver version (`580.65.06`), where there is one.
    #[getter]
    fn nvidia_driver(&self) -> Option<String> {
        let nvidia = self.machine.nvidia.as_ref()?;
        nvidia.driver_version.as_ref().map(ToString::to_string)
    }

    /// The CUDA version the NVIDIA driver supports (`13.0`), where known.
    #[getter]
    fn cuda_version(&self) -> Option<String> {
        let nvidia = self.machine.nvidia.as_ref()?;
        nvidia.cuda_version.as_ref().map(ToString::to_string)
    }

    /// The installed ROCm version, where known.
    #[getter]
    fn rocm_version(&self) -> Option<String> {
        let amd = self.machine.amd.as_ref()?;
        amd.rocm_version.as_ref().map(ToString::to_string)
    }

    /// Every GPU: NVIDIA, then AMD, then Intel.
    #[getter]
    fn gpus(&self) -> Vec<PyGpu> {
        let mut gpus = Vec::new();
        for gpu in self.machine.nvidia_gpus() {
            gpus.push(PyGpu {
                vendor: "nvidia",
                name: gpu.name.clone(),
                architecture: gpu.compute_capability.as_ref().map(ToString::to_string),
                integrated: gpu.integrated,
            });
        }
        for gpu in self.machine.amd.iter().flat_map(|amd| &amd.gpus) {
            gpus.push(PyGpu {
                vendor: "amd",
                name: gpu.name.clone(),
                architecture: Some(gpu.gfx.to_string()),
                integrated: gpu.integrated,
            });
        }
        for gpu in self.machine.intel.iter().flat_map(|intel| &intel.gpus) {
            gpus.push(PyGpu {
                vendor: "intel",
                name: gpu.name.clone(),
                architecture: gpu.device_ip.clone(),
                integrated: gpu.integrated,
            });
        }
        gpus
    }

    fn __repr__(&self) -> String {
        format!(
            "<wheelgate.Machine {} token={}>",
            self.platform(),
            self.token()
        )
    }
}

#[pymethods]
impl PyGpu {
    fn __repr__(&self) -> String {
        let name = self
            .name
            .as_deref()
            .map(|n| format!(" {n:?}"))
            .unwrap_or_default();
        let architecture = self.architecture.as_deref().unwrap_or("unknown");
        format!("<wheelgate.Gpu {} {architecture}{name}>", self.vendor)
    }
}

/// Describes this machine as `wheelgate detect` does: every probe, with the `WHEELGATE_*`
/// overrides and `WHEELGATE_SYSROOT` (`sysroot` instead, when given) read from the environment
/// now.
#[pyfunction]
#[pyo3(signature = (sysroot = None))]
pub fn detect(py: Python<'_>, sysroot: Option<std::path::PathBuf>) -> PyResult<PyMachine> {
    // Probing reads files and may load NVML: other Python threads run meanwhile.
    py.detach(|| guard(|| detect_machine(sysroot).map(|machine| PyMachine { machine })))
}

/// The local machine (or the one under `sysroot`), as the command line probes it.
pub(crate) fn detect_machine(sysroot: Option<std::path::PathBuf>) -> PyResult<Machine> {
    let env = Env::from_process();
    let ctx = match sysroot {
        Some(root) => ProbeContext::new(root, env),
        None => ProbeContext::from_env(env),
    }
    .map_err(|error| {
        MachineError::new_err(format!(
            "invalid override; unset it or fix its value: {}",
            message(&error)
        ))
    })?;
    probe(&ctx)
        .map(|detection| detection.machine)
        .map_err(|error| MachineError::new_err(message(&error)))
}

/// At most 80 characters of a value, for messages.
fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}
