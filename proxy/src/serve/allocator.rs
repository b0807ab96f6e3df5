//! The allocator, set up once for a long-running server.
//!
//! glibc's malloc serves a block of 128 KiB or more from its own mapping, returned to the
//! system when freed, but raises that threshold to the size of each such block freed (up to
//! 32 MiB). After the first large page, every later page's buffers (its body, its parsed files,
//! its renderings: megabytes each for PyPI's largest projects) come from the arenas, one per
//! thread that allocated them, where what is freed stays resident between live blocks. Under a
//! day of distinct large pages that doubled the server's resident memory over what it held
//! (`scripts/bench-memory`: 179 MiB at the peak against 103 MiB with the threshold fixed).
//! Fixing the threshold at 1 MiB keeps those buffers on their own mappings, while the
//! real-size torch page's (its 0.7 MB body, 0.6 MB of parsed files) stay in the arenas, where
//! a cold page costs no extra page faults.

/// Blocks this large or larger get their own mapping, whatever was freed before.
const OWN_MAPPING_FROM: usize = 1024 * 1024;

/// Fixes glibc's threshold for a separate mapping at [`OWN_MAPPING_FROM`]. Elsewhere (musl,
/// macOS, Windows) there is nothing to set: their allocators return large blocks themselves.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune_for_serving() {
    let threshold = libc::c_int::try_from(OWN_MAPPING_FROM).expect("1 MiB fits a C int");
    // SAFETY: mallopt takes a parameter number and a value and changes allocator settings under
    // the allocator's own lock; it touches no memory of ours, and M_MMAP_THRESHOLD accepts any
    // value up to 32 MiB. Its result says only whether the value was accepted.
    let accepted = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) };
    if accepted != 1 {
        tracing::warn!("the allocator refused its large-block threshold; memory may grow");
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_for_serving() {}
