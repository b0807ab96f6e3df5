//! Rewritten pages kept for reuse, by (upstream URL, format, route prefix, machine and policy),
//! each valid for one generation of its upstream page: a warm page request is a hash lookup.
//! The state holds them (`state.rs`); `simple.rs` renders and reads them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::HeaderValue;
use bytes::Bytes;

use super::precompressed::Precompressed;
use super::targets::TargetKey;

/// Rendered pages kept for reuse; cleared whole when full (pages are cheap to rebuild).
const RENDERED_LIMIT: usize = 4096;
/// And at most this many bytes of them unless [`RenderedPages::new`] says otherwise, so large
/// pages rendered for many machines cannot add up.
const RENDERED_BYTES: usize = 18 * 1024 * 1024;

/// Rendered pages by (upstream URL, format, route prefix, machine and policy), each valid for
/// one generation of its upstream page.
pub struct RenderedPages {
    entries: Mutex<RenderedEntries>,
    /// Bytes of bodies held at most.
    budget: usize,
}

impl Default for RenderedPages {
    fn default() -> Self {
        RenderedPages::new(RENDERED_BYTES)
    }
}

#[derive(Default)]
struct RenderedEntries {
    map: HashMap<RenderKey, Rendered>,
    /// Bytes of the bodies held, against [`RenderedPages::budget`].
    bytes: usize,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RenderKey {
    pub url: String,
    pub json: bool,
    pub prefix: String,
    /// The machine and policy ([`super::targets::ResolvedTarget::key`]), or none for pages
    /// served alike to every machine.
    pub target: TargetKey,
}

#[derive(Clone)]
pub struct Rendered {
    /// The generation of the upstream page it was rendered from: a newer page replaces it in
    /// place, so superseded renderings never pile up.
    pub generation: u64,
    pub body: Bytes,
    pub etag: HeaderValue,
    /// Its gzip form, made once in the background and shared by every copy of this entry.
    pub compressed: Arc<Precompressed>,
    /// Whether a version's answer rests on an inferred fact (`/metrics`, the status page).
    pub inferred: bool,
}

impl RenderedPages {
    /// Rendered pages of at most `budget` bytes (bodies and their gzip forms, estimated).
    pub fn new(budget: usize) -> RenderedPages {
        RenderedPages {
            entries: Mutex::default(),
            budget,
        }
    }

    /// Forgets every rendering: the facts they were made with changed (a catalog reload).
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.map.clear();
            entries.bytes = 0;
        }
    }

    pub fn get(&self, key: &RenderKey, generation: u64) -> Option<Rendered> {
        self.entries
            .lock()
            .ok()?
            .map
            .get(key)
            .filter(|rendered| rendered.generation == generation)
            .cloned()
    }

    pub fn put(&self, key: RenderKey, value: Rendered) {
        if let Ok(mut entries) = self.entries.lock() {
            // The body, and about a quarter of it again for its gzip form.
            let size = value.body.len() + value.body.len() / 4;
            if entries.map.len() >= RENDERED_LIMIT || entries.bytes + size > self.budget {
                entries.map.clear();
                entries.bytes = 0;
            }
            entries.bytes += size;
            if let Some(old) = entries.map.insert(key, value) {
                entries.bytes -= old.body.len() + old.body.len() / 4;
            }
        }
    }
}

/// Shared so `AppState` can hold it.
pub type SharedRendered = Arc<RenderedPages>;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(url: &str, target: &str) -> RenderKey {
        RenderKey {
            url: url.to_string(),
            json: true,
            prefix: String::new(),
            target: TargetKey::from_json(target),
        }
    }

    fn rendered(generation: u64) -> Rendered {
        Rendered {
            generation,
            body: Bytes::from_static(b"{}"),
            etag: HeaderValue::from_static("\"x\""),
            compressed: Arc::default(),
            inferred: false,
        }
    }

    #[test]
    fn one_rendering_per_page_and_machine_valid_for_one_generation() {
        let pages = RenderedPages::default();
        pages.put(key("a", "m1"), rendered(1));
        pages.put(key("a", "m2"), rendered(1));
        pages.put(key("b", "m1"), rendered(1));
        assert!(pages.get(&key("a", "m2"), 1).is_some());
        // A newer copy of the page: its rendering replaces the older one in place.
        pages.put(key("a", "m1"), rendered(2));
        assert!(pages.get(&key("a", "m1"), 1).is_none());
        assert!(pages.get(&key("a", "m1"), 2).is_some());
        // A rendering of an older copy is never served for the newer one.
        assert!(pages.get(&key("a", "m2"), 2).is_none());
        assert!(pages.get(&key("b", "m1"), 1).is_some(), "other pages stay");
        assert_eq!(
            pages.entries.lock().unwrap().map.len(),
            3,
            "nothing piles up"
        );
    }
}
