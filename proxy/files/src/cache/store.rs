//! The cache's bookkeeping, all in memory behind one mutex: committed files with their sizes
//! and access order, and the downloads in flight. No file I/O happens under the lock; the
//! callers delete evicted files after releasing it.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::watch;
use tracing::{info, warn};

use super::download::Progress;
use super::{CacheKey, FileCacheError};

/// A committed file.
#[derive(Debug)]
struct Entry {
    size: u64,
    /// Logical clock of the last access: higher is more recent.
    last_access: u64,
    /// Distinguishes this commit from a later one of the same key (see [`Store::forget`]).
    generation: u64,
}

/// A download in flight: its growing `*.part` file, its progress, and the room it holds in the
/// cache's limit.
#[derive(Debug)]
struct InFlight {
    file: Arc<File>,
    progress: watch::Receiver<Progress>,
    reserved: u64,
    /// Bytes written to its `*.part` file so far (or made room for: see [`Store::grow`]).
    made_room: u64,
}

/// How far ahead of a download's writing [`Store::grow`] evicts: one eviction per step of a
/// large download, not one per chunk, and a download cancelled early has evicted at most this
/// much more than it wrote.
const EVICTION_STEP: u64 = 8 * 1024 * 1024;

/// What the cache holds for a key.
pub(super) enum Lookup {
    Cached {
        size: u64,
        generation: u64,
    },
    InFlight {
        file: Arc<File>,
        progress: watch::Receiver<Progress>,
    },
    Miss,
}

/// Committed files and downloads in flight.
#[derive(Debug)]
pub(super) struct Store {
    dir: PathBuf,
    max_bytes: u64,
    entries: HashMap<CacheKey, Entry>,
    total: u64,
    /// Bytes held by downloads in flight (their expected sizes): whether another download can
    /// be kept is judged against them.
    reserved: u64,
    /// The room made on disk for downloads in flight (what they have written, a step ahead):
    /// committed files and this together stay within the limit at every moment.
    made_room: u64,
    clock: u64,
    inflight: HashMap<CacheKey, InFlight>,
}

impl Store {
    /// Scans `dir` (creating it): removes `*.part` leftovers of a crashed run, registers every
    /// committed file in the order of its modification time, then evicts down to `max_bytes`.
    pub(super) fn open(dir: &Path, max_bytes: u64) -> Result<Store, FileCacheError> {
        let io_err = |source| FileCacheError::Io {
            path: dir.to_path_buf(),
            source,
        };
        wheelgate_index::cache::private::create_dir(dir).map_err(io_err)?;
        let mut found = Vec::new();
        for item in std::fs::read_dir(dir).map_err(io_err)? {
            let item = item.map_err(io_err)?;
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = item.path();
            if Path::new(name).extension().is_some_and(|ext| ext == "part") {
                match std::fs::remove_file(&path) {
                    Ok(()) => {
                        info!(path = %path.display(), "removed a partial download left by an earlier run");
                    }
                    Err(err) => {
                        warn!(path = %path.display(), error = %err, "cannot remove a partial download");
                    }
                }
                continue;
            }
            let Some(key) = CacheKey::from_file_name(name) else {
                warn!(path = %path.display(), "ignoring a file the cache did not write");
                continue;
            };
            let meta = item.metadata().map_err(io_err)?;
            if !meta.is_file() {
                continue;
            }
            found.push((
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                key,
                meta.len(),
            ));
        }
        found.sort_by_key(|(modified, _, _)| *modified);
        let mut store = Store {
            dir: dir.to_path_buf(),
            max_bytes,
            entries: HashMap::new(),
            total: 0,
            reserved: 0,
            made_room: 0,
            clock: 0,
            inflight: HashMap::new(),
        };
        for (_, key, size) in found {
            store.insert(key, size);
        }
        for path in store.evict(None) {
            if let Err(err) = std::fs::remove_file(&path) {
                warn!(path = %path.display(), error = %err, "cannot evict a cached file");
            }
        }
        Ok(store)
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn total_bytes(&self) -> u64 {
        self.total
    }

    pub(super) fn is_downloading(&self, key: &CacheKey) -> bool {
        self.inflight.contains_key(key)
    }

    pub(super) fn contains(&self, key: &CacheKey) -> bool {
        self.entries.contains_key(key)
    }

    /// Finds `key`, marking a committed file as just used.
    pub(super) fn lookup(&mut self, key: &CacheKey) -> Lookup {
        self.clock += 1;
        if let Some(entry) = self.entries.get_mut(key) {
            entry.last_access = self.clock;
            return Lookup::Cached {
                size: entry.size,
                generation: entry.generation,
            };
        }
        match self.inflight.get(key) {
            Some(download) => Lookup::InFlight {
                file: Arc::clone(&download.file),
                progress: download.progress.clone(),
            },
            None => Lookup::Miss,
        }
    }

    /// Drops an entry whose file turned out to be missing, unless it was committed again since.
    pub(super) fn forget(&mut self, key: &CacheKey, generation: u64) {
        if self
            .entries
            .get(key)
            .is_some_and(|entry| entry.generation == generation)
        {
            let entry = self.entries.remove(key).expect("present");
            self.total -= entry.size;
            warn!(
                key = key.as_str(),
                "a cached file disappeared from disk; it will be downloaded again"
            );
        }
    }

    /// Registers a download of `key`; `false` when the file is already cached or downloading.
    pub(super) fn register(
        &mut self,
        key: &CacheKey,
        file: Arc<File>,
        progress: watch::Receiver<Progress>,
    ) -> bool {
        if self.entries.contains_key(key) || self.inflight.contains_key(key) {
            return false;
        }
        self.inflight.insert(
            key.clone(),
            InFlight {
                file,
                progress,
                reserved: 0,
                made_room: 0,
            },
        );
        true
    }

    /// Holds `bytes` of the limit for the download of `key`; whether it fits: not when it
    /// cannot (larger than the limit, or the room is held by other downloads), and then it is
    /// served without being kept. Nothing is evicted yet: room is made as the download writes
    /// ([`Store::grow`]), so a download cancelled early evicts little.
    pub(super) fn reserve(&mut self, key: &CacheKey, bytes: u64) -> bool {
        let held = self.reserved + bytes;
        if held > self.max_bytes {
            return false;
        }
        let Some(download) = self.inflight.get_mut(key) else {
            return false;
        };
        download.reserved += bytes;
        self.reserved += bytes;
        true
    }

    /// Records that the download of `key` has written `written` bytes, evicting least recently
    /// used files so the committed files and what downloads have written stay within the
    /// limit. Room is made [`EVICTION_STEP`] ahead (never past the download's reservation).
    /// Returns the paths to delete.
    pub(super) fn grow(&mut self, key: &CacheKey, written: u64) -> Vec<PathBuf> {
        let Some(download) = self.inflight.get_mut(key) else {
            return Vec::new();
        };
        if written <= download.made_room {
            return Vec::new();
        }
        let ahead = (written + EVICTION_STEP).min(download.reserved.max(written));
        self.made_room += ahead - download.made_room;
        download.made_room = ahead;
        self.evict(None)
    }

    /// Forgets a failed (or not kept) download, so the next request starts a fresh one.
    pub(super) fn abandon(&mut self, key: &CacheKey) {
        if let Some(download) = self.inflight.remove(key) {
            self.reserved -= download.reserved;
            self.made_room -= download.made_room;
        }
    }

    /// Turns a finished download (already renamed to its key) into an entry and evicts least
    /// recently used files past the limit. Returns the paths to delete.
    pub(super) fn commit(&mut self, key: &CacheKey, size: u64) -> Vec<PathBuf> {
        self.abandon(key);
        self.insert(key.clone(), size);
        self.evict(Some(key))
    }

    fn insert(&mut self, key: CacheKey, size: u64) {
        self.clock += 1;
        let entry = Entry {
            size,
            last_access: self.clock,
            generation: self.clock,
        };
        if let Some(old) = self.entries.insert(key, entry) {
            self.total -= old.size;
        }
        self.total += size;
    }

    /// Removes least recently used entries until the total and the room made for downloads fit
    /// the limit, `keep` last: a file larger than the whole limit is served to the clients that
    /// asked but not kept.
    fn evict(&mut self, keep: Option<&CacheKey>) -> Vec<PathBuf> {
        self.evict_to(self.max_bytes.saturating_sub(self.made_room), keep)
    }

    /// Removes least recently used entries until the total is at most `room`, `keep` last.
    fn evict_to(&mut self, room: u64, keep: Option<&CacheKey>) -> Vec<PathBuf> {
        if self.total <= room {
            return Vec::new();
        }
        let mut order: Vec<(u64, CacheKey)> = self
            .entries
            .iter()
            .filter(|(key, _)| Some(*key) != keep)
            .map(|(key, entry)| (entry.last_access, key.clone()))
            .collect();
        order.sort_unstable_by_key(|(last_access, _)| *last_access);
        order.extend(keep.cloned().map(|key| (u64::MAX, key)));
        let mut victims = Vec::new();
        for (_, key) in order {
            if self.total <= room {
                break;
            }
            if let Some(entry) = self.entries.remove(&key) {
                self.total -= entry.size;
                info!(
                    key = key.as_str(),
                    size = entry.size,
                    total = self.total,
                    max_bytes = self.max_bytes,
                    "evicting a cached file"
                );
                victims.push(self.dir.join(key.as_str()));
            }
        }
        victims
    }
}

/// Deletes evicted files; an open handle keeps serving its file until closed.
pub(super) fn remove_evicted(paths: &[PathBuf]) {
    for path in paths {
        if let Err(err) = std::fs::remove_file(path)
            && err.kind() != io::ErrorKind::NotFound
        {
            warn!(path = %path.display(), error = %err, "cannot evict a cached file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: char) -> CacheKey {
        CacheKey(format!("sha256-{}", c.to_string().repeat(64)))
    }

    #[test]
    fn evicts_least_recently_used_first_and_the_new_file_last() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 100).unwrap();
        assert!(store.commit(&key('a'), 40).is_empty());
        assert!(store.commit(&key('b'), 40).is_empty());
        // `a` is used again, so `b` is now the least recently used.
        assert!(matches!(
            store.lookup(&key('a')),
            Lookup::Cached { size: 40, .. }
        ));
        let victims = store.commit(&key('c'), 40);
        assert_eq!(victims, vec![dir.path().join(key('b').as_str())]);
        assert_eq!(store.total_bytes(), 80);
        // A file larger than the limit evicts everything, itself included.
        let victims = store.commit(&key('d'), 150);
        assert_eq!(victims.len(), 3);
        assert_eq!(victims.last(), Some(&dir.path().join(key('d').as_str())));
        assert_eq!(store.total_bytes(), 0);
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn a_download_makes_room_as_it_writes_or_is_not_kept() {
        const MIB: u64 = 1024 * 1024;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 200 * MIB).unwrap();
        for name in ['a', 'b', 'c'] {
            store.commit(&key(name), 60 * MIB);
        }
        let (_tx, rx) = watch::channel(Progress::Connecting);
        let file = Arc::new(tempfile::tempfile().unwrap());
        assert!(store.register(&key('d'), Arc::clone(&file), rx.clone()));
        // 180 cached + 120 expected > 200: it fits next to the other downloads (none), and
        // nothing is evicted before a byte is written.
        assert!(store.reserve(&key('d'), 120 * MIB));
        assert_eq!(store.total_bytes(), 180 * MIB);
        // 10 written: room is made a step ahead, which 180 cached still leaves.
        assert!(store.grow(&key('d'), 10 * MIB).is_empty());
        assert_eq!(store.made_room, 10 * MIB + EVICTION_STEP);
        // 30 written: room for 30 and a step, the least recently used file first.
        let victims = store.grow(&key('d'), 30 * MIB);
        assert_eq!(victims, vec![dir.path().join(key('a').as_str())]);
        // Writing within the room made evicts nothing.
        assert!(store.grow(&key('d'), 30 * MIB + EVICTION_STEP).is_empty());
        // A second download cannot take the room the first one holds, and evicts nothing.
        assert!(store.register(&key('e'), Arc::clone(&file), rx.clone()));
        assert!(!store.reserve(&key('e'), 90 * MIB));
        store.abandon(&key('e'));
        assert!(store.contains(&key('b')) && store.contains(&key('c')));
        // The first download is cancelled: one file was evicted for it, not two.
        store.abandon(&key('d'));
        assert_eq!((store.reserved, store.made_room), (0, 0));
        assert_eq!(store.total_bytes(), 120 * MIB);
        // Committing a finished download counts its real size.
        assert!(store.register(&key('f'), Arc::clone(&file), rx.clone()));
        assert!(store.reserve(&key('f'), 90 * MIB));
        assert_eq!(
            store.grow(&key('f'), 90 * MIB),
            vec![dir.path().join(key('b').as_str())]
        );
        assert!(store.commit(&key('f'), 90 * MIB).is_empty());
        assert_eq!(store.total_bytes(), 150 * MIB);
        assert_eq!((store.reserved, store.made_room), (0, 0));
        // Larger than the whole limit: never kept.
        assert!(store.register(&key('g'), file, rx));
        assert!(!store.reserve(&key('g'), 201 * MIB));
    }

    #[test]
    fn open_removes_partial_files_and_rebuilds_order_from_mtimes() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(key('a').as_str());
        let new = dir.path().join(key('b').as_str());
        std::fs::write(&old, [0u8; 60]).unwrap();
        std::fs::write(&new, [0u8; 60]).unwrap();
        let past = SystemTime::now() - std::time::Duration::from_hours(1);
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(past)
            .unwrap();
        let partial = dir.path().join(format!("{}.1.0.part", key('c').as_str()));
        std::fs::write(&partial, b"half").unwrap();
        std::fs::write(dir.path().join("README"), b"not ours").unwrap();

        let store = Store::open(dir.path(), 100).unwrap();
        assert!(!partial.exists(), "partial downloads are removed at open");
        assert!(
            !old.exists(),
            "the least recently used file is evicted to fit the limit"
        );
        assert!(new.exists());
        assert_eq!(store.len(), 1);
        assert_eq!(store.total_bytes(), 60);
        assert!(
            dir.path().join("README").exists(),
            "files the cache did not write are left alone"
        );
    }

    #[test]
    fn single_registration_per_key_and_forget_respects_generations() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 1000).unwrap();
        let file = Arc::new(tempfile::tempfile().unwrap());
        let (_tx, rx) = watch::channel(Progress::Connecting);
        assert!(store.register(&key('a'), Arc::clone(&file), rx.clone()));
        assert!(!store.register(&key('a'), Arc::clone(&file), rx.clone()));
        assert!(matches!(store.lookup(&key('a')), Lookup::InFlight { .. }));
        store.abandon(&key('a'));
        assert!(matches!(store.lookup(&key('a')), Lookup::Miss));

        store.commit(&key('a'), 10);
        let Lookup::Cached { generation, .. } = store.lookup(&key('a')) else {
            panic!("committed")
        };
        store.commit(&key('a'), 10);
        store.forget(&key('a'), generation);
        assert!(store.contains(&key('a')), "a newer commit is not forgotten");
        let Lookup::Cached { generation, .. } = store.lookup(&key('a')) else {
            panic!("committed")
        };
        store.forget(&key('a'), generation);
        assert!(!store.contains(&key('a')));
        assert_eq!(store.total_bytes(), 0);
    }
}
