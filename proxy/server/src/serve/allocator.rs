//! The allocator, set up once for a long-running server: large blocks on their own mappings,
//! and each core's arena resident before its first request.
//!
//! glibc's malloc serves a block of 128 KiB or more from its own mapping, returned to the
//! system when freed, but raises that threshold to the size of each such block freed (up to
//! 32 MiB). After the first large page, every later page's buffers (its body, its parsed files,
//! its renderings: megabytes each for PyPI's largest projects) come from the arenas, one per
//! thread that allocated them, where what is freed stays resident between live blocks. Under
//! distinct large pages that doubled the server's resident memory over what it held
//! (`scripts/bench-memory`: 179 MiB at the peak against 103 MiB with the threshold fixed).
//! Fixing the threshold at 1 MiB keeps those buffers on their own mappings, while the
//! real-size torch page's (its 0.7 MB body, 0.6 MB of parsed files) stay in the arenas.
//!
//! A fresh server's first uncached page spent about a third of its time faulting in fresh
//! memory (zeroed by the kernel page by page: over 2 ms of the 9 ms a cold merged torch page
//! took in `scripts/bench-proxy`). Each serving thread (a core's connection thread, a page
//! parser) therefore writes its arena full before it serves, and glibc keeps up to
//! [`KEPT_FREE`] of free memory at an arena's top instead of returning it, so the first page
//! finds its memory resident. What that holds is bounded: [`WARM_TOTAL`] across all of them.

/// Blocks this large or larger get their own mapping, whatever was freed before.
const OWN_MAPPING_FROM: usize = 1024 * 1024;
/// Free memory at the top of an arena kept resident rather than returned.
const KEPT_FREE: usize = WARM_PER_THREAD + 1024 * 1024;
/// Memory made resident in the serving threads' arenas before they serve, all threads together.
const WARM_TOTAL: usize = 16 * 1024 * 1024;
/// And per thread at most: enough for a cold real-size torch page's part on each thread (its
/// parse on a parser thread, merge, selection and rendering on a core's). It also bounds what
/// every arena keeps free ([`KEPT_FREE`]): with 8 MiB, the parser threads' two arenas took the
/// long mixed run's peak from 129–133 to 139–146 MB (`scripts/bench-memory`).
const WARM_PER_THREAD: usize = 4 * 1024 * 1024;

/// Whether [`tune_for_serving`] set the thresholds (a server, not a test or a one-off command).
static TUNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Fixes glibc's thresholds: [`OWN_MAPPING_FROM`] for a separate mapping, [`KEPT_FREE`] for
/// returning memory. Elsewhere (musl, macOS, Windows) there is nothing to set: their
/// allocators decide for themselves.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune_for_serving() {
    for (parameter, value) in [
        (libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM),
        (libc::M_TRIM_THRESHOLD, KEPT_FREE),
    ] {
        let value = libc::c_int::try_from(value).expect("a few MiB fit a C int");
        // SAFETY: mallopt takes a parameter number and a value and changes allocator settings
        // under the allocator's own lock; it touches no memory of ours, and both parameters
        // accept these values (the mapping threshold up to 32 MiB, the trim threshold any).
        // Its result says only whether the value was accepted.
        let accepted = unsafe { libc::mallopt(parameter, value) };
        if accepted != 1 {
            tracing::warn!(
                parameter,
                value,
                "the allocator refused a setting; memory may grow"
            );
            return;
        }
    }
    TUNED.store(true, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_for_serving() {}

/// How much each of `threads` threads (the cores' connection threads and the page parsers,
/// `cpu_pool.rs`) makes resident: an even share of [`WARM_TOTAL`], at most [`WARM_PER_THREAD`];
/// nothing when [`tune_for_serving`] has not run (glibc would return it at once).
pub fn warm_share(threads: usize) -> usize {
    if !TUNED.load(std::sync::atomic::Ordering::Relaxed) {
        return 0;
    }
    (WARM_TOTAL / threads.max(1)).min(WARM_PER_THREAD)
}

/// Makes `bytes` of this thread's arena (glibc gives each new thread its own) resident,
/// written and freed at once. Freed, it stays in the arena (below [`KEPT_FREE`]), so the first
/// requests' allocations neither grow the arena (one `mprotect` call per page) nor fault in
/// fresh pages.
pub fn warm_this_thread(bytes: usize) {
    // Blocks under the threshold for a separate mapping, so they come from the arena.
    const BLOCK: usize = 64 * 1024;
    let blocks: Vec<Vec<u8>> = (0..bytes / BLOCK).map(|_| vec![1u8; BLOCK]).collect();
    drop(std::hint::black_box(blocks));
}
