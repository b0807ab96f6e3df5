//! NVML (`libnvidia-ml.so.1`, `nvml.dll`): driver version, highest CUDA version, and each GPU's
//! name and compute capability. Prototypes from NVIDIA's `nvml.h`
//! (<https://docs.nvidia.com/deploy/nvml-api/>). NVML ignores `CUDA_VISIBLE_DEVICES`.

use std::ffi::{c_char, c_int, c_uint, c_void};

use wheelgate_resolver::{ComputeCapability, CudaVersion};

use super::{buffer_to_string, open_first};
use crate::nvidia::library::{LibraryError, LibraryGpu, LibraryReport, NvidiaLibrary};

/// `nvmlReturn_t`: 0 is `NVML_SUCCESS`.
type NvmlReturn = c_int;
/// `nvmlDevice_t`: an opaque pointer.
type NvmlDevice = *mut c_void;

/// `NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE`.
const DRIVER_BUFFER: c_uint = 80;
/// `NVML_DEVICE_NAME_V2_BUFFER_SIZE`.
const NAME_BUFFER: c_uint = 96;
/// More GPUs than any machine has; bounds the loop if the library reports garbage.
const MAX_DEVICES: c_uint = 256;

/// NVML, found by the dynamic loader's search or at a known path.
#[derive(Debug, Clone)]
pub struct Nvml {
    candidates: Vec<String>,
}

impl Nvml {
    /// The places NVIDIA's packages put NVML: the loader's search path, WSL's driver directory,
    /// and the directory the Kubernetes device plugin mounts.
    pub fn system() -> Self {
        Self::with_candidates(super::platform_candidates(
            &[
                "nvml.dll",
                "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll",
            ],
            &[
                "libnvidia-ml.so.1",
                "/usr/lib/wsl/lib/libnvidia-ml.so.1",
                "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
            ],
        ))
    }

    /// NVML at exactly these paths (tests point it at libraries that are not NVML).
    pub fn with_candidates(candidates: Vec<String>) -> Self {
        Nvml { candidates }
    }
}

impl NvidiaLibrary for Nvml {
    fn name(&self) -> &'static str {
        "NVML"
    }

    fn query(&self) -> Result<LibraryReport, LibraryError> {
        if self.candidates.is_empty() {
            return Err(LibraryError::Unsupported);
        }
        let (library, path) = open_first(&self.candidates)?;
        let report = query_loaded(&library, &path);
        // Unloading NVML after use is allowed, but unloading driver libraries is a common source
        // of crashes at exit; the process is short-lived or keeps the answer, so keep it mapped.
        std::mem::forget(library);
        report
    }
}

fn check(function: &'static str, code: NvmlReturn) -> Result<(), LibraryError> {
    if code == 0 {
        Ok(())
    } else {
        Err(LibraryError::Call {
            function,
            code: i64::from(code),
            message: nvml_error_name(code).map(str::to_string),
        })
    }
}

/// Names of the `nvmlReturn_t` codes seen in practice.
fn nvml_error_name(code: NvmlReturn) -> Option<&'static str> {
    Some(match code {
        1 => "NVML_ERROR_UNINITIALIZED",
        2 => "NVML_ERROR_INVALID_ARGUMENT",
        3 => "NVML_ERROR_NOT_SUPPORTED",
        4 => "NVML_ERROR_NO_PERMISSION",
        6 => "NVML_ERROR_NOT_FOUND",
        9 => "NVML_ERROR_DRIVER_NOT_LOADED",
        12 => "NVML_ERROR_LIBRARY_NOT_FOUND",
        15 => "NVML_ERROR_GPU_IS_LOST",
        18 => "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
        999 => "NVML_ERROR_UNKNOWN",
        _ => return None,
    })
}

fn query_loaded(library: &libloading::Library, path: &str) -> Result<LibraryReport, LibraryError> {
    // nvmlReturn_t nvmlInit_v2(void);
    let init = load_symbol!(
        library,
        path,
        "nvmlInit_v2",
        unsafe extern "C" fn() -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlShutdown(void);
    let shutdown = load_symbol!(
        library,
        path,
        "nvmlShutdown",
        unsafe extern "C" fn() -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
    let driver_version = load_symbol!(
        library,
        path,
        "nvmlSystemGetDriverVersion",
        unsafe extern "C" fn(*mut c_char, c_uint) -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);
    let cuda_version = load_symbol!(
        library,
        path,
        "nvmlSystemGetCudaDriverVersion_v2",
        unsafe extern "C" fn(*mut c_int) -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
    let count = load_symbol!(
        library,
        path,
        "nvmlDeviceGetCount_v2",
        unsafe extern "C" fn(*mut c_uint) -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
    let handle = load_symbol!(
        library,
        path,
        "nvmlDeviceGetHandleByIndex_v2",
        unsafe extern "C" fn(c_uint, *mut NvmlDevice) -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
    let name = load_symbol!(
        library,
        path,
        "nvmlDeviceGetName",
        unsafe extern "C" fn(NvmlDevice, *mut c_char, c_uint) -> NvmlReturn
    )?;
    // nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor);
    let capability = load_symbol!(
        library,
        path,
        "nvmlDeviceGetCudaComputeCapability",
        unsafe extern "C" fn(NvmlDevice, *mut c_int, *mut c_int) -> NvmlReturn
    )?;

    // SAFETY: no arguments; NVML may be initialised any number of times (reference counted).
    check("nvmlInit_v2", unsafe { init() })?;

    let mut report = LibraryReport::default();
    let mut buffer = [0 as c_char; DRIVER_BUFFER as usize];
    // SAFETY: the buffer is writable for the length passed.
    if unsafe { driver_version(buffer.as_mut_ptr(), DRIVER_BUFFER) } == 0 {
        report.driver_version = buffer_to_string(&buffer).and_then(|t| t.parse().ok());
    }
    let mut cuda: c_int = 0;
    // SAFETY: `cuda` is a valid out-pointer.
    if unsafe { cuda_version(&raw mut cuda) } == 0 {
        report.cuda_version = u32::try_from(cuda)
            .ok()
            .and_then(CudaVersion::from_driver_api);
    }
    let mut devices: c_uint = 0;
    // SAFETY: `devices` is a valid out-pointer.
    let counted = check("nvmlDeviceGetCount_v2", unsafe { count(&raw mut devices) });
    if let Err(error) = counted {
        // SAFETY: balances the successful nvmlInit_v2 above.
        unsafe { shutdown() };
        return Err(error);
    }
    for index in 0..devices.min(MAX_DEVICES) {
        let mut device: NvmlDevice = std::ptr::null_mut();
        // SAFETY: `device` is a valid out-pointer; index < count.
        if unsafe { handle(index, &raw mut device) } != 0 {
            report.gpus.push(LibraryGpu::default());
            continue;
        }
        let mut gpu = LibraryGpu::default();
        let mut buffer = [0 as c_char; NAME_BUFFER as usize];
        // SAFETY: `device` came from NVML; the buffer is writable for the length passed.
        if unsafe { name(device, buffer.as_mut_ptr(), NAME_BUFFER) } == 0 {
            gpu.name = buffer_to_string(&buffer);
        }
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        // SAFETY: `device` came from NVML; both out-pointers are valid.
        if unsafe { capability(device, &raw mut major, &raw mut minor) } == 0 {
            gpu.compute_capability = u8::try_from(major)
                .ok()
                .zip(u8::try_from(minor).ok())
                .filter(|(major, _)| *major > 0)
                .map(|(major, minor)| ComputeCapability::new(major, minor));
        }
        report.gpus.push(gpu);
    }
    // SAFETY: balances the successful nvmlInit_v2 above.
    unsafe { shutdown() };
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_nvml_is_not_found() {
        let nvml = Nvml::with_candidates(vec!["/nonexistent/libnvidia-ml.so.1".into()]);
        assert!(matches!(nvml.query(), Err(LibraryError::NotFound(_))));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_library_without_nvml_symbols_is_refused() {
        // libm loads everywhere glibc does and has none of NVML's symbols: the probe must say
        // which symbol is missing instead of calling anything.
        let nvml = Nvml::with_candidates(vec!["libm.so.6".into()]);
        match nvml.query() {
            Err(LibraryError::MissingSymbol { symbol, .. }) => assert_eq!(symbol, "nvmlInit_v2"),
            other => panic!("expected a missing symbol, got {other:?}"),
        }
    }
}
