//! Level Zero (`libze_loader.so.1`, Windows `ze_loader.dll`): the Intel GPUs the oneAPI runtime
//! sees, with the device IP version PyTorch's XPU builds are listed by. Structure layouts and
//! constants are those of `level_zero/ze_api.h` (Level Zero 1.x).

use std::ffi::c_void;
use std::os::raw::c_char;
use std::sync::mpsc;
use std::time::Duration;

use super::{buffer_to_string, open_first};
use crate::intel::library::{IntelLibrary, LibraryError, ZeDevice, ip_version_string};

/// `ze_result_t`: 0 is `ZE_RESULT_SUCCESS`.
type ZeResult = u32;
/// `ZE_INIT_FLAG_GPU_ONLY`
const INIT_GPU_ONLY: u32 = 1;
/// `ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES`
const STYPE_DEVICE_PROPERTIES: u32 = 0x3;
/// `ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT`
const STYPE_DEVICE_IP_VERSION_EXT: u32 = 0x1000f;
/// `ZE_DEVICE_TYPE_GPU`
const DEVICE_TYPE_GPU: u32 = 1;
/// `ZE_DEVICE_PROPERTY_FLAG_INTEGRATED`
const FLAG_INTEGRATED: u32 = 1;
const INTEL_VENDOR: u32 = 0x8086;
/// Handles read at most: more drivers or GPUs than this on one host is not a real machine.
const MAX_HANDLES: u32 = 64;
/// `zeInit` on a broken driver can hang; `wheelgate detect` must not.
const QUERY_TIMEOUT: Duration = Duration::from_secs(3);

/// `ze_device_ip_version_ext_t`, chained behind the device properties.
#[repr(C)]
struct IpVersionExt {
    stype: u32,
    p_next: *mut c_void,
    ip_version: u32,
}

/// `ze_device_properties_t`, followed by spare room: a driver writes only the fields of the
/// version it implements, and the spare bytes keep a larger future layout from writing past it.
#[repr(C)]
struct DeviceProperties {
    stype: u32,
    p_next: *mut c_void,
    device_type: u32,
    vendor_id: u32,
    device_id: u32,
    flags: u32,
    subdevice_id: u32,
    core_clock_rate: u32,
    max_mem_alloc_size: u64,
    max_hardware_contexts: u32,
    max_command_queue_priority: u32,
    num_threads_per_eu: u32,
    physical_eu_simd_width: u32,
    num_eus_per_subslice: u32,
    num_subslices_per_slice: u32,
    num_slices: u32,
    timer_resolution: u64,
    timestamp_valid_bits: u32,
    kernel_timestamp_valid_bits: u32,
    uuid: [u8; 16],
    name: [c_char; 256],
    spare: [u8; 256],
}

/// The Level Zero loader at the usual paths.
pub struct LevelZero {
    candidates: Vec<String>,
}

impl LevelZero {
    /// Where Intel's packages put the loader.
    pub fn system() -> Self {
        Self::with_candidates(super::platform_candidates(
            &["ze_loader.dll"],
            &["libze_loader.so.1"],
        ))
    }

    /// The loader at exactly these paths (tests point it at libraries that are not it).
    pub fn with_candidates(candidates: Vec<String>) -> Self {
        LevelZero { candidates }
    }
}

impl IntelLibrary for LevelZero {
    fn name(&self) -> &'static str {
        "Level Zero"
    }

    fn query(&self) -> Result<Vec<ZeDevice>, LibraryError> {
        if self.candidates.is_empty() {
            return Err(LibraryError::Unsupported);
        }
        let candidates = self.candidates.clone();
        let (sender, receiver) = mpsc::channel();
        // A hung driver keeps this thread; the probe goes on without Level Zero.
        std::thread::spawn(move || {
            let result = open_first(&candidates).and_then(|(library, path)| {
                let devices = query_loaded(&library, &path);
                // The runtime keeps threads inside the library after zeInit: never unload it.
                std::mem::forget(library);
                devices
            });
            let _ = sender.send(result);
        });
        receiver.recv_timeout(QUERY_TIMEOUT).unwrap_or_else(|_| {
            Err(LibraryError::Call {
                function: "zeInit",
                code: -1,
                message: Some(format!("no answer within {} s", QUERY_TIMEOUT.as_secs())),
            })
        })
    }
}

fn check(function: &'static str, code: ZeResult) -> Result<(), LibraryError> {
    if code == 0 {
        Ok(())
    } else {
        Err(LibraryError::Call {
            function,
            code: i64::from(code),
            message: None,
        })
    }
}

fn query_loaded(library: &libloading::Library, path: &str) -> Result<Vec<ZeDevice>, LibraryError> {
    // ze_result_t zeInit(ze_init_flags_t flags);
    let init = load_symbol!(
        library,
        path,
        "zeInit",
        unsafe extern "C" fn(u32) -> ZeResult
    )?;
    // ze_result_t zeDriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers);
    let driver_get = load_symbol!(
        library,
        path,
        "zeDriverGet",
        unsafe extern "C" fn(*mut u32, *mut *mut c_void) -> ZeResult
    )?;
    // ze_result_t zeDeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices);
    let device_get = load_symbol!(
        library,
        path,
        "zeDeviceGet",
        unsafe extern "C" fn(*mut c_void, *mut u32, *mut *mut c_void) -> ZeResult
    )?;
    // ze_result_t zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* pDeviceProperties);
    let get_properties = load_symbol!(
        library,
        path,
        "zeDeviceGetProperties",
        unsafe extern "C" fn(*mut c_void, *mut DeviceProperties) -> ZeResult
    )?;
    // SAFETY: the prototype is restated above; the flag is a valid `ze_init_flags_t`.
    check("zeInit", unsafe { init(INIT_GPU_ONLY) })?;
    // SAFETY: `handles` passes a valid count pointer and an array of that many handle slots.
    let drivers = handles("zeDriverGet", |count, array| unsafe {
        driver_get(count, array)
    })?;
    let mut devices = Vec::new();
    for driver in drivers {
        // SAFETY: `driver` came from zeDriverGet; the pointers are as in `handles`.
        let found = handles("zeDeviceGet", |count, array| unsafe {
            device_get(driver, count, array)
        })?;
        for device in found {
            let mut ip = IpVersionExt {
                stype: STYPE_DEVICE_IP_VERSION_EXT,
                p_next: std::ptr::null_mut(),
                ip_version: 0,
            };
            // SAFETY: an all-zero `DeviceProperties` is valid (integers, arrays, a null pointer).
            let mut properties: DeviceProperties = unsafe { std::mem::zeroed() };
            properties.stype = STYPE_DEVICE_PROPERTIES;
            properties.p_next = std::ptr::from_mut(&mut ip).cast();
            // SAFETY: `device` came from zeDeviceGet; `properties` and the chained `ip` live
            // until the call returns and are at least as large as the header's structures.
            check("zeDeviceGetProperties", unsafe {
                get_properties(device, &raw mut properties)
            })?;
            if properties.device_type != DEVICE_TYPE_GPU
                || properties.vendor_id != INTEL_VENDOR
                || ip.ip_version == 0
            {
                continue;
            }
            devices.push(ZeDevice {
                pci_device: u16::try_from(properties.device_id).unwrap_or(u16::MAX),
                device_ip: ip_version_string(ip.ip_version),
                name: buffer_to_string(&properties.name),
                integrated: properties.flags & FLAG_INTEGRATED != 0,
            });
        }
    }
    Ok(devices)
}

/// Calls a Level Zero `Get(&count, array)` pair: once for the count, once for the handles.
fn handles(
    function: &'static str,
    mut get: impl FnMut(*mut u32, *mut *mut c_void) -> ZeResult,
) -> Result<Vec<*mut c_void>, LibraryError> {
    let mut count = 0u32;
    check(function, get(&raw mut count, std::ptr::null_mut()))?;
    let mut count = count.min(MAX_HANDLES);
    let mut array = vec![std::ptr::null_mut(); count as usize];
    check(function, get(&raw mut count, array.as_mut_ptr()))?;
    array.truncate(count as usize);
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_loader_is_not_found() {
        let error = LevelZero::with_candidates(vec!["/nonexistent/libze_loader.so.1".into()])
            .query()
            .unwrap_err();
        assert!(matches!(error, LibraryError::NotFound(_)), "{error}");
    }

    #[test]
    fn a_library_that_is_not_the_loader_lacks_its_symbols() {
        let error = LevelZero::with_candidates(vec!["libm.so.6".into()])
            .query()
            .unwrap_err();
        assert!(
            matches!(error, LibraryError::MissingSymbol { ref symbol, .. } if symbol == "zeInit"),
            "{error}"
        );
    }

    #[test]
    fn the_structures_have_the_header_layout() {
        assert_eq!(std::mem::offset_of!(IpVersionExt, ip_version), 16);
        assert_eq!(std::mem::offset_of!(DeviceProperties, device_id), 24);
        assert_eq!(
            std::mem::offset_of!(DeviceProperties, max_mem_alloc_size),
            40
        );
        assert_eq!(std::mem::offset_of!(DeviceProperties, timer_resolution), 80);
        assert_eq!(std::mem::offset_of!(DeviceProperties, name), 112);
    }
}
