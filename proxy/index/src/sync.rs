//! Locking shared by the server's plain maps, counters and queues.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `mutex`, locked even when a thread panicked while holding it: what these mutexes guard (a
/// map, counters, a job queue) is whole between operations, so it stays usable after a panic
/// elsewhere.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
