//! The thread that writes fetched index pages to the cache directory, at the lowest priority.
//!
//! A page's disk copy is for a restart or for offline serving; the page is answered from memory
//! before it lands. Written at normal priority, on the blocking threads, the copies of a cold
//! merged torch page (0.7 MB and 0.3 MB, about a millisecond of CPU) ran while the same request
//! still parsed the torch page and selected from it: on two cores that were already busy, every
//! such millisecond was the request's. At the lowest priority the writes take what the serving
//! threads leave.

use crate::cpu_pool::CpuPool;

/// One thread named `wheelgate-store` at the lowest scheduling priority (nice 19) where the
/// system lets a thread lower its own; elsewhere at normal priority.
pub fn start_page_writer() -> std::io::Result<CpuPool> {
    CpuPool::start("wheelgate-store", 1, lower_this_thread)
}

/// Lowers the calling thread's priority to nice 19. On Linux a thread has a priority of its own
/// and `setpriority` with `PRIO_PROCESS` and id 0 changes only the caller's.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn lower_this_thread() {
    // SAFETY: setpriority takes two integers and an id and touches no memory of ours; lowering
    // one's own priority needs no privilege. A failure (a sandbox refusing it) leaves the
    // thread at normal priority, which is only slower for the requests beside it.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    if result != 0 {
        tracing::debug!(
            error = %std::io::Error::last_os_error(),
            "the page writer stays at normal priority"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_thread() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_page_writer_runs_at_the_lowest_priority() {
        let writer = start_page_writer().unwrap();
        let (name, nice) = writer
            .run(|| {
                // SAFETY: as above; getpriority reads this thread's nice value.
                #[allow(unsafe_code)]
                let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
                (std::thread::current().name().map(str::to_string), nice)
            })
            .await;
        assert_eq!(name.as_deref(), Some("wheelgate-store-0"));
        assert_eq!(nice, 19);
    }
}
