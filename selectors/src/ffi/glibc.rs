//! glibc's own version, from the C library this process runs with.

/// `gnu_get_libc_version()` (`"2.39"`), on glibc; `None` elsewhere.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn version() -> Option<String> {
    use std::ffi::{CStr, c_char};

    unsafe extern "C" {
        // const char *gnu_get_libc_version(void);  (<gnu/libc-version.h>)
        fn gnu_get_libc_version() -> *const c_char;
    }
    // SAFETY: takes no arguments and returns a pointer to a static string owned by glibc.
    let pointer = unsafe { gnu_get_libc_version() };
    if pointer.is_null() {
        return None;
    }
    // SAFETY: the pointer is non-null and points to glibc's static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(pointer) };
    text.to_str().ok().map(str::to_string)
}

/// `gnu_get_libc_version()` (`"2.39"`), on glibc; `None` elsewhere.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn version() -> Option<String> {
    None
}
