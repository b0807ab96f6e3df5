//! The thread that writes fetched index pages to the cache directory, at the lowest priority.
//!
//! A page's disk copy is for a restart or for offline serving; the page is answered from memory
//! before it lands. Written at normal priority, on the blocking threads, the copies of a cold
//! merged torch page (0.7 MB and 0.3 MB, about a millisecond of CPU) ran while the same request
//! still parsed the torch page and selected from it: on two cores that were already busy, every
//! such millisecond was the request's.
//!
//! At nice 19 the writes still took 0.15 to 0.25 ms of a cold merged torch page's 4 to 5 (8 of
//! 10 fresh servers, `perf` on every thread): the scheduler lets a task it has just picked run
//! for a minimum slice, whatever its weight, before a waking parser may take the core back. A
//! thread under `SCHED_IDLE` is the exception: any other thread that wakes preempts it at once.
//! The kernel does not preempt a thread inside a system call here (`PREEMPT_NONE`, the default
//! of many distribution kernels), so the copies are also written in pieces (`cache/index.rs`).

use wheelgate_index::cpu_pool::CpuPool;

/// One thread named `wheelgate-store` that runs only when nothing else wants the core
/// (`SCHED_IDLE`), or at nice 19 where the system refuses that; elsewhere at normal priority.
pub fn start_page_writer() -> std::io::Result<CpuPool> {
    CpuPool::start("wheelgate-store", 1, lower_this_thread)
}

/// Puts the calling thread under `SCHED_IDLE`, or at nice 19 where that is refused. On Linux a
/// thread has a policy and a priority of its own: `sched_setscheduler` and `setpriority` with
/// id 0 change only the caller's.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn lower_this_thread() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler reads the one sched_param passed by reference, which lives
    // across the call, and changes only this thread's policy; lowering one's own policy needs
    // no privilege. A refusal (a sandbox) leaves the policy as it was, handled below.
    let idle = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &raw const param) };
    if idle == 0 {
        return;
    }
    // A failure leaves the thread at normal priority, which is only slower for the requests
    // beside it.
    if let Err(err) = wheelgate_index::cpu_pool::lower_this_thread(19) {
        tracing::debug!(error = %err, "the page writer stays at normal priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_thread() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_page_writer_runs_only_when_nothing_else_wants_the_core() {
        let writer = start_page_writer().unwrap();
        let (name, policy) = writer
            .run(|| {
                // SAFETY: sched_getscheduler reads this thread's policy and touches no memory.
                #[allow(unsafe_code)]
                let policy = unsafe { libc::sched_getscheduler(0) };
                (std::thread::current().name().map(str::to_string), policy)
            })
            .await;
        assert_eq!(name.as_deref(), Some("wheelgate-store-0"));
        assert_eq!(policy, libc::SCHED_IDLE);
    }
}
