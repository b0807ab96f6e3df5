//! libcuda (`libcuda.so.1`, `nvcuda.dll`), the CUDA driver API: the fallback where NVML is
//! missing (Jetson before `JetPack` 7) or broken. Prototypes from NVIDIA's `cuda.h`
//! (<https://docs.nvidia.com/cuda/cuda-driver-api/>). Honours `CUDA_VISIBLE_DEVICES`.

use std::ffi::{c_char, c_int};

use wheelgate_resolver::{ComputeCapability, CudaVersion};

use super::{buffer_to_string, open_first};
use crate::nvidia::library::{LibraryError, LibraryGpu, LibraryReport, NvidiaLibrary};

/// `CUresult`: 0 is `CUDA_SUCCESS`.
type CuResult = c_int;
/// `CUdevice`: an ordinal.
type CuDevice = c_int;

/// `CU_DEVICE_ATTRIBUTE_INTEGRATED`.
const ATTRIBUTE_INTEGRATED: c_int = 18;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
const ATTRIBUTE_CC_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
const ATTRIBUTE_CC_MINOR: c_int = 76;
const NAME_BUFFER: c_int = 256;
const MAX_DEVICES: c_int = 256;

/// libcuda, found by the dynamic loader's search or at a known path.
#[derive(Debug, Clone)]
pub struct Cuda {
    candidates: Vec<String>,
}

impl Cuda {
    /// The places NVIDIA's packages put libcuda, Jetson's `tegra` directory included.
    pub fn system() -> Self {
        Self::with_candidates(super::platform_candidates(
            &["nvcuda.dll"],
            &[
                "libcuda.so.1",
                "/usr/lib/wsl/lib/libcuda.so.1",
                "/usr/local/nvidia/lib64/libcuda.so.1",
                "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1",
            ],
        ))
    }

    /// libcuda at exactly these paths.
    pub fn with_candidates(candidates: Vec<String>) -> Self {
        Cuda { candidates }
    }
}

impl NvidiaLibrary for Cuda {
    fn name(&self) -> &'static str {
        "libcuda"
    }

    fn query(&self) -> Result<LibraryReport, LibraryError> {
        if self.candidates.is_empty() {
            return Err(LibraryError::Unsupported);
        }
        let (library, path) = open_first(&self.candidates)?;
        let report = query_loaded(&library, &path);
        // After cuInit the driver runs threads that call into the library: unloading it would
        // pull code from under them, so it stays mapped for the life of the process.
        std::mem::forget(library);
        report
    }
}

fn check(function: &'static str, code: CuResult) -> Result<(), LibraryError> {
    if code == 0 {
        return Ok(());
    }
    let message = match code {
        3 => Some("CUDA_ERROR_NOT_INITIALIZED"),
        34 => Some("CUDA_ERROR_STUB_LIBRARY"),
        35 => Some("CUDA_ERROR_INSUFFICIENT_DRIVER"),
        100 => Some("CUDA_ERROR_NO_DEVICE"),
        101 => Some("CUDA_ERROR_INVALID_DEVICE"),
        304 => Some("CUDA_ERROR_OPERATING_SYSTEM"),
        999 => Some("CUDA_ERROR_UNKNOWN"),
        _ => None,
    };
    Err(LibraryError::Call {
        function,
        code: i64::from(code),
        message: message.map(str::to_string),
    })
}

fn query_loaded(library: &libloading::Library, path: &str) -> Result<LibraryReport, LibraryError> {
    // CUresult cuInit(unsigned int Flags);
    let init = load_symbol!(
        library,
        path,
        "cuInit",
        unsafe extern "C" fn(u32) -> CuResult
    )?;
    // CUresult cuDriverGetVersion(int *driverVersion);
    let driver_version = load_symbol!(
        library,
        path,
        "cuDriverGetVersion",
        unsafe extern "C" fn(*mut c_int) -> CuResult
    )?;
    // CUresult cuDeviceGetCount(int *count);
    let count = load_symbol!(
        library,
        path,
        "cuDeviceGetCount",
        unsafe extern "C" fn(*mut c_int) -> CuResult
    )?;
    // CUresult cuDeviceGet(CUdevice *device, int ordinal);
    let device_get = load_symbol!(
        library,
        path,
        "cuDeviceGet",
        unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult
    )?;
    // CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
    let attribute = load_symbol!(
        library,
        path,
        "cuDeviceGetAttribute",
        unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult
    )?;
    // CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
    let name = load_symbol!(
        library,
        path,
        "cuDeviceGetName",
        unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult
    )?;

    let mut report = LibraryReport::default();
    let mut version: c_int = 0;
    // SAFETY: `version` is a valid out-pointer; cuDriverGetVersion works before cuInit.
    if unsafe { driver_version(&raw mut version) } == 0 {
        report.cuda_version = u32::try_from(version)
            .ok()
            .and_then(CudaVersion::from_driver_api);
    }
    // SAFETY: flags must be 0, as documented.
    check("cuInit", unsafe { init(0) })?;
    let mut devices: c_int = 0;
    // SAFETY: `devices` is a valid out-pointer and cuInit succeeded.
    check("cuDeviceGetCount", unsafe { count(&raw mut devices) })?;
    for ordinal in 0..devices.clamp(0, MAX_DEVICES) {
        let mut device: CuDevice = 0;
        // SAFETY: `device` is a valid out-pointer; the ordinal is below the count.
        if unsafe { device_get(&raw mut device, ordinal) } != 0 {
            report.gpus.push(LibraryGpu::default());
            continue;
        }
        let read = |which: c_int| {
            let mut value: c_int = 0;
            // SAFETY: `value` is a valid out-pointer; `device` came from cuDeviceGet.
            (unsafe { attribute(&raw mut value, which, device) } == 0).then_some(value)
        };
        let mut gpu = LibraryGpu {
            integrated: read(ATTRIBUTE_INTEGRATED).map(|v| v != 0),
            ..LibraryGpu::default()
        };
        if let (Some(major), Some(minor)) = (read(ATTRIBUTE_CC_MAJOR), read(ATTRIBUTE_CC_MINOR)) {
            gpu.compute_capability = u8::try_from(major)
                .ok()
                .zip(u8::try_from(minor).ok())
                .filter(|(major, _)| *major > 0)
                .map(|(major, minor)| ComputeCapability::new(major, minor));
        }
        let mut buffer = [0 as c_char; NAME_BUFFER as usize];
        // SAFETY: the buffer is writable for the length passed; `device` came from cuDeviceGet.
        if unsafe { name(buffer.as_mut_ptr(), NAME_BUFFER, device) } == 0 {
            gpu.name = buffer_to_string(&buffer);
        }
        report.gpus.push(gpu);
    }
    Ok(report)
}
