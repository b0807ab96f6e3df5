//! The only code of the workspace that calls C: NVML, libcuda and the Level Zero loader loaded
//! at run time with `dlopen` (no link-time dependency, so one binary runs on machines with and
//! without the vendors' drivers), and glibc's `gnu_get_libc_version`.
//!
//! `unsafe` is allowed here and nowhere else because calling a C function through a pointer
//! obtained from `dlsym` cannot be checked by the compiler: each call relies on the function's
//! prototype in the vendors' headers (`nvml.h`, `cuda.h`, `ze_api.h`), restated next to each symbol type.
#![allow(unsafe_code)]

/// Loads a symbol as the function-pointer type `$ty`, which must restate the symbol's C
/// prototype from the vendor's header (each call site quotes it).
macro_rules! load_symbol {
    ($library:expr, $path:expr, $name:literal, $ty:ty) => {
        // SAFETY: `$ty` restates the prototype of `$name` from the vendor header, as quoted
        // next to the call.
        unsafe { $crate::ffi::symbol::<$ty>($library, $path, $name) }
    };
}

pub mod cuda;
pub mod glibc;
pub mod level_zero;
pub mod nvml;

use std::ffi::{CStr, c_char};

use libloading::Library;
use tracing::debug;

use crate::nvidia::library::{LibraryError, NvidiaLibrary};

/// The GPU libraries of the running machine, in the order the NVIDIA probe asks them.
pub fn system_nvidia_libraries() -> Vec<Box<dyn NvidiaLibrary>> {
    vec![
        Box::new(nvml::Nvml::system()),
        Box::new(cuda::Cuda::system()),
    ]
}

/// The Level Zero loader of the running machine, for the Intel probe.
pub fn system_intel_libraries() -> Vec<Box<dyn crate::intel::library::IntelLibrary>> {
    vec![Box::new(level_zero::LevelZero::system())]
}

/// The library names to try on the platform this program was built for.
fn platform_candidates(windows: &[&str], linux: &[&str]) -> Vec<String> {
    let names = if cfg!(windows) {
        windows
    } else if cfg!(target_os = "linux") {
        linux
    } else {
        &[]
    };
    names.iter().map(|name| (*name).to_string()).collect()
}

/// Opens the first library of `candidates` that loads. A missing library is normal (debug log).
fn open_first(candidates: &[String]) -> Result<(Library, String), LibraryError> {
    let mut reasons = Vec::new();
    for candidate in candidates {
        // SAFETY: loading a library runs its initialisers. The candidates are NVIDIA's driver
        // libraries (or the caller's explicit test paths), whose initialisers are safe to run
        // in any process: they are what every CUDA program loads.
        match unsafe { Library::new(candidate) } {
            Ok(library) => return Ok((library, candidate.clone())),
            Err(error) => {
                debug!(library = %candidate, error = %error, "library did not load");
                reasons.push(format!("`{candidate}`"));
            }
        }
    }
    Err(LibraryError::NotFound(reasons.join(", ")))
}

/// Reads a NUL-terminated string out of a buffer a C function filled.
fn buffer_to_string(buffer: &[c_char]) -> Option<String> {
    if !buffer.contains(&0) {
        return None;
    }
    // SAFETY: the buffer contains a NUL (checked above), so the read stays inside it.
    let text = unsafe { CStr::from_ptr(buffer.as_ptr()) };
    let text = text.to_string_lossy().trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Loads a symbol, naming it in the error.
///
/// # Safety
/// `T` must be the function-pointer type of the symbol's C prototype.
unsafe fn symbol<'lib, T>(
    library: &'lib Library,
    path: &str,
    name: &'static str,
) -> Result<libloading::Symbol<'lib, T>, LibraryError> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    // SAFETY: the caller guarantees `T` matches the symbol's prototype.
    unsafe { library.get::<T>(&bytes) }.map_err(|_| LibraryError::MissingSymbol {
        library: path.to_string(),
        symbol: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_library_is_not_found() {
        let error = open_first(&["/nonexistent/libnvidia-ml.so.1".to_string()]).unwrap_err();
        assert!(matches!(error, LibraryError::NotFound(_)));
    }

    #[test]
    fn buffer_without_nul_is_refused() {
        let buffer: Vec<c_char> = b"abc".iter().map(|b| b.cast_signed()).collect();
        assert_eq!(buffer_to_string(&buffer), None);
        let buffer: Vec<c_char> = b"H100\0xx".iter().map(|b| b.cast_signed()).collect();
        assert_eq!(buffer_to_string(&buffer).as_deref(), Some("H100"));
    }
}
