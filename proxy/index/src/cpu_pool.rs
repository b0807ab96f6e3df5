//! A few threads for CPU-heavy work that must not run on a connection's thread: parsing an
//! upstream index page (two milliseconds and more for download.pytorch.org's torch page).
//!
//! Parsed on the thread that serves connections, a page held up everything else on that core,
//! the other upstream bodies of the same request included. With a socket left unread, the
//! kernel's receive window closed and its update could wait for the delayed-ACK timer: one cold
//! merged torch page in three took 40 ms more (`scripts/bench-proxy`, 12 of 40 fresh servers;
//! 5 of 40 with this pool). On these threads the connection's thread keeps reading, and the
//! pages of one request parse side by side.
//!
//! The threads are started (and their allocator arenas made resident, see
//! `serve/allocator.rs`) before the server serves: a thread spawned for the first request, as
//! tokio's blocking pool does, cost that request its creation and its fresh memory's faults.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of threads running closures in the order they come; cheap to clone (all clones
/// share the threads). The threads end when the last clone is dropped.
#[derive(Clone)]
pub struct CpuPool {
    jobs: Arc<Mutex<Sender<Job>>>,
    threads: usize,
}

impl CpuPool {
    /// Starts `threads` threads named `<name>-<n>`, each running `prepare` first; returns once
    /// all of them have.
    pub fn start(
        name: &str,
        threads: usize,
        prepare: impl Fn() + Send + Sync + 'static,
    ) -> std::io::Result<CpuPool> {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let prepare = Arc::new(prepare);
        let (ready, prepared) = channel::<()>();
        let threads = threads.max(1);
        for index in 0..threads {
            let (queue, prepare, ready) = (Arc::clone(&queue), Arc::clone(&prepare), ready.clone());
            std::thread::Builder::new()
                .name(format!("{name}-{index}"))
                .spawn(move || {
                    prepare();
                    let _ = ready.send(());
                    work(&queue);
                })?;
        }
        drop(ready);
        for _ in 0..threads {
            // A thread that panicked in `prepare` sends nothing; the others still serve.
            if prepared.recv().is_err() {
                break;
            }
        }
        Ok(CpuPool {
            jobs: Arc::new(Mutex::new(jobs)),
            threads,
        })
    }

    /// How many threads it started.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `job` on one of the threads without waiting for it; here when every thread is
    /// gone. A panic in it ends only the job.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let boxed: Job = Box::new(move || {
            let _ = catch_unwind(AssertUnwindSafe(job));
        });
        if let Err(unsent) = lock(&self.jobs).send(boxed) {
            (unsent.0)();
        }
    }

    /// Runs `job` on one of the threads and waits for its result; a panic in `job` goes on in
    /// the caller, as if it had run there. Runs it here when every thread is gone.
    pub async fn run<R: Send + 'static>(&self, job: impl FnOnce() -> R + Send + 'static) -> R {
        let (done, result) = tokio::sync::oneshot::channel();
        let boxed: Job = Box::new(move || {
            let _ = done.send(catch_unwind(AssertUnwindSafe(job)));
        });
        let queued = lock(&self.jobs).send(boxed);
        if let Err(unsent) = queued {
            // No thread left to take it: the job is in the returned box, which runs it here.
            (unsent.0)();
        }
        match result.await {
            Ok(Ok(value)) => value,
            Ok(Err(panic)) => resume_unwind(panic),
            Err(_) => unreachable!("a queued job always sends its result, or its panic"),
        }
    }
}

/// Lowers the calling thread's priority to `nice` (a pool's `init`, for work that must yield to
/// the threads beside it). On Linux a thread has a nice value of its own: `setpriority` with no
/// id changes only the caller's, and lowering it needs no privilege.
#[cfg(target_os = "linux")]
pub fn lower_this_thread(nice: i32) -> std::io::Result<()> {
    rustix::process::setpriority_process(None, nice).map_err(std::io::Error::from)
}

fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only to take one job; the next thread waits for the one after.
        let Ok(job) = lock(queue).recv() else { return };
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn runs_jobs_on_its_threads_after_preparing_each() {
        let prepared = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&prepared);
        let pool = CpuPool::start("test-pool", 3, move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(
            prepared.load(Ordering::SeqCst),
            3,
            "start waits for every thread"
        );
        assert_eq!(pool.threads(), 3);
        let names = futures_util::future::join_all((0..8).map(|i| {
            let pool = pool.clone();
            async move {
                pool.run(move || (i * 2, std::thread::current().name().map(str::to_owned)))
                    .await
            }
        }))
        .await;
        for (i, (value, name)) in names.into_iter().enumerate() {
            assert_eq!(value, i * 2);
            assert!(name.unwrap().starts_with("test-pool-"));
        }
    }

    #[tokio::test]
    async fn a_panicking_job_panics_its_caller_and_the_threads_go_on() {
        let pool = CpuPool::start("test-pool", 1, || {}).unwrap();
        let caller = tokio::spawn({
            let pool = pool.clone();
            async move { pool.run(|| panic!("job failed")).await }
        });
        let err = caller.await.unwrap_err();
        assert!(err.is_panic());
        assert_eq!(pool.run(|| 7).await, 7, "the one thread survived the panic");
    }
}
