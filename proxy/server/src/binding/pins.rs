//! Facts binding read from files' core metadata (torch pins, AMD device extras), remembered by
//! the file's sha256 for every later page; the state holds them (`state.rs`), `metadata.rs`
//! reads them.

use std::collections::HashMap;
use std::sync::Mutex;

use wheelgate_resolver::select::TorchPin;

/// Pins remembered at most; cleared whole past it (a pin costs one small read to learn again).
const REMEMBERED: usize = 65_536;

/// What binding reads from one file's core metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFacts {
    pub pin: TorchPin,
    /// Its `Provides-Extra: device-*` extras (AMD's per-GPU device packages), in file order.
    pub device_extras: Vec<String>,
}

/// Facts by the file's sha256 (or URL, for a file listed without one).
#[derive(Debug, Default)]
pub struct PinMemo(Mutex<HashMap<String, FileFacts>>);

impl PinMemo {
    pub fn get(&self, key: &str) -> Option<FileFacts> {
        self.lock().get(key).cloned()
    }

    pub fn put(&self, key: String, pin: FileFacts) {
        let mut pins = self.lock();
        if pins.len() >= REMEMBERED {
            pins.clear();
        }
        pins.insert(key, pin);
    }

    /// Forgets `key`'s facts: the bytes they were read from were not the file's.
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, FileFacts>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
