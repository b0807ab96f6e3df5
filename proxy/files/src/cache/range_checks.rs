//! Facts read from a file by ranges before the cache held it (a binding pin, device extras: a
//! wheel's `METADATA` read from its upstream by `Range` requests, which nothing verifies) are
//! checked once the file's verified bytes are here: the ranges read are compared with the
//! committed copy, and whoever relied on them is told to forget what they built on them when
//! they differ. A host that answers `Range` from another file than its plain GETs then misleads
//! selection until the file is first downloaded through this cache, not for good.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::sync::Mutex;

use bytes::Bytes;
use tracing::warn;

/// Files with checks waiting at most; past it the oldest waiting are given up, their facts
/// forgotten (read again when next needed) rather than trusted unchecked.
const WAITING_FILES: usize = 16_384;

/// Told to forget the facts read from the ranges: they differ from the verified file, or could
/// no longer be kept waiting for it.
pub type Forget = Box<dyn FnOnce() + Send>;

/// What was read by ranges and who to tell.
pub(super) struct RangeCheck {
    /// `(offset, bytes)` read from the upstream.
    reads: Vec<(u64, Bytes)>,
    forget: Forget,
}

impl RangeCheck {
    pub(super) fn new(reads: Vec<(u64, Bytes)>, forget: Forget) -> RangeCheck {
        RangeCheck { reads, forget }
    }

    /// Tells its owner to forget the facts read.
    pub(super) fn forget(self) {
        (self.forget)();
    }
}

/// Checks compared with a download's input as it streams through its sha256 check: a derived
/// wheel's download verifies the upstream file without committing it, so its bytes are seen
/// only here.
#[derive(Default)]
pub(super) struct StreamChecks {
    checks: Vec<(RangeCheck, bool)>,
}

impl StreamChecks {
    pub(super) fn new(checks: Vec<RangeCheck>) -> StreamChecks {
        StreamChecks {
            checks: checks.into_iter().map(|check| (check, false)).collect(),
        }
    }

    /// Compares input bytes `data`, at input offset `offset`.
    pub(super) fn see(&mut self, offset: u64, data: &[u8]) {
        for (check, differs) in &mut self.checks {
            if !*differs {
                *differs = super::splice::first_difference(&check.reads, offset, data).is_some();
            }
        }
    }

    /// The input verified: those that differed forget, the others are confirmed.
    pub(super) fn verified(mut self, url: &str) {
        for (check, differs) in self.checks.drain(..) {
            if differs {
                warn!(
                    url,
                    "facts read from this file by ranges differ from its verified bytes: forgotten"
                );
                check.forget();
            }
        }
    }
}

/// Dropped before [`StreamChecks::verified`] (a download that failed, was cancelled or
/// panicked): nothing is confirmed, every fact is forgotten (read again when next needed).
impl Drop for StreamChecks {
    fn drop(&mut self) {
        for (check, _) in self.checks.drain(..) {
            check.forget();
        }
    }
}

/// Checks waiting for their file, by cache key.
#[derive(Default)]
pub(super) struct WaitingChecks {
    by_key: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    checks: HashMap<String, Vec<RangeCheck>>,
    /// Keys in the order they first waited, to give up the oldest first.
    order: std::collections::VecDeque<String>,
}

impl WaitingChecks {
    /// Keeps `check` until `key`'s file is committed. Called with the store locked, so a
    /// commit cannot pass between the caller's look and this.
    pub(super) fn wait(&self, key: &str, check: RangeCheck) {
        let given_up = {
            let mut waiting = self.lock();
            let mut given_up = Vec::new();
            if !waiting.checks.contains_key(key) {
                while waiting.checks.len() >= WAITING_FILES {
                    let Some(oldest) = waiting.order.pop_front() else {
                        break;
                    };
                    given_up.extend(waiting.checks.remove(&oldest).unwrap_or_default());
                }
                waiting.order.push_back(key.to_string());
            }
            waiting
                .checks
                .entry(key.to_string())
                .or_default()
                .push(check);
            given_up
        };
        for check in given_up {
            check.forget();
        }
    }

    /// The checks waiting for `key`'s file, now that it is committed.
    pub(super) fn take(&self, key: &str) -> Vec<RangeCheck> {
        let mut waiting = self.lock();
        let checks = waiting.checks.remove(key).unwrap_or_default();
        if !checks.is_empty() {
            waiting.order.retain(|waiting_key| waiting_key != key);
        }
        checks
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Compares each check's reads with `file` (the verified copy) and tells those that differ to
/// forget; blocking file reads. `url` names the file in the log.
pub(super) fn run_checks(file: &File, url: &str, checks: Vec<RangeCheck>) {
    for check in checks {
        match first_difference(file, &check.reads) {
            Ok(None) => {}
            Ok(Some(offset)) => {
                warn!(
                    url,
                    offset,
                    "facts read from this file by ranges differ from its verified bytes: forgotten"
                );
                check.forget();
            }
            Err(err) => {
                warn!(url, error = %err, "cannot read the verified file to check facts read from it by ranges: forgotten");
                check.forget();
            }
        }
    }
}

/// The first offset where `reads` differ from `file` (a read past its end differs at its end).
fn first_difference(file: &File, reads: &[(u64, Bytes)]) -> io::Result<Option<u64>> {
    let len = file.metadata()?.len();
    for (offset, bytes) in reads {
        let available = usize::try_from(len.saturating_sub(*offset))
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let on_disk = wheelgate_index::cache::read_at::read_exact_at(file, available, *offset)?;
        if let Some(at) = on_disk
            .iter()
            .zip(bytes.iter())
            .position(|(disk, read)| disk != read)
        {
            return Ok(Some(offset + u64::try_from(at).unwrap_or(u64::MAX)));
        }
        if available < bytes.len() {
            return Ok(Some(len.max(*offset)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting() -> (Arc<AtomicUsize>, Forget) {
        let count = Arc::new(AtomicUsize::new(0));
        let told = Arc::clone(&count);
        (
            count,
            Box::new(move || {
                told.fetch_add(1, Ordering::SeqCst);
            }),
        )
    }

    fn file_of(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn reads_that_match_the_verified_file_keep_their_facts() {
        let file = file_of(b"0123456789");
        let (count, forget) = counting();
        let reads = vec![
            (0, Bytes::from_static(b"012")),
            (7, Bytes::from_static(b"789")),
        ];
        run_checks(file.as_file(), "u", vec![RangeCheck::new(reads, forget)]);
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_read_that_differs_or_runs_past_the_end_forgets_its_facts() {
        let file = file_of(b"0123456789");
        assert_eq!(
            first_difference(file.as_file(), &[(4, Bytes::from_static(b"4X6"))]).unwrap(),
            Some(5)
        );
        assert_eq!(
            first_difference(file.as_file(), &[(8, Bytes::from_static(b"89A"))]).unwrap(),
            Some(10)
        );
        let (count, forget) = counting();
        let reads = vec![(4, Bytes::from_static(b"4X6"))];
        run_checks(file.as_file(), "u", vec![RangeCheck::new(reads, forget)]);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn checks_wait_for_their_file_and_the_oldest_are_given_up_past_the_limit() {
        let waiting = WaitingChecks::default();
        let (first, forget) = counting();
        waiting.wait("sha256-first", RangeCheck::new(Vec::new(), forget));
        for n in 0..WAITING_FILES {
            let (_, forget) = counting();
            waiting.wait(&format!("sha256-{n}"), RangeCheck::new(Vec::new(), forget));
        }
        assert_eq!(
            first.load(Ordering::SeqCst),
            1,
            "the oldest was given up and forgotten"
        );
        assert!(waiting.take("sha256-first").is_empty());
        assert_eq!(waiting.take("sha256-7").len(), 1);
        assert!(waiting.take("sha256-7").is_empty());
    }
}
