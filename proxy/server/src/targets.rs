//! What a page request resolves for (machine, policy and the key its renderings are cached
//! under), remembered per route target and User-Agent. Working it out means parsing pip's
//! JSON User-Agent and serializing the machine for the rendering key: a sixth of a warm page
//! request's CPU, for an answer that is the same for every request of a client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wheelgate_index::sync::lock;
use wheelgate_resolver::{Machine, Policy};

/// Distinct (target, User-Agent) pairs remembered; the whole memo is cleared past it (a client
/// sending a new User-Agent each time only costs what every request cost before).
const LIMIT: usize = 1024;

/// One request target, resolved.
#[derive(Debug)]
pub struct ResolvedTarget {
    /// The machine pages are rewritten for (the server's own, under `/simple/`, moved to the
    /// client's platform when its User-Agent says it runs elsewhere).
    pub machine: Machine,
    pub policy: Policy,
    /// `machine` and `policy` as JSON: what the rendered-page cache is keyed by.
    pub key: Arc<str>,
    /// XXH3-128 of `key`: what that cache hashes instead of the JSON's few hundred bytes.
    pub key_digest: u128,
}

/// A resolved target (or none: a page served alike to every machine) in a cache key: equal by
/// its JSON, hashed by that JSON's digest, so a lookup hashes 16 bytes instead of the JSON.
#[derive(Debug, Clone)]
pub struct TargetKey {
    json: Arc<str>,
    digest: u128,
}

impl TargetKey {
    /// The key of `resolved`'s machine and policy.
    pub fn of(resolved: &ResolvedTarget) -> TargetKey {
        TargetKey {
            json: Arc::clone(&resolved.key),
            digest: resolved.key_digest,
        }
    }

    /// The key of a page that is the same for every machine.
    pub fn any_machine() -> TargetKey {
        TargetKey::from_json("")
    }

    /// The key of a target written as `json`.
    pub fn from_json(json: &str) -> TargetKey {
        TargetKey {
            json: json.into(),
            digest: xxhash_rust::xxh3::xxh3_128(json.as_bytes()),
        }
    }
}

impl PartialEq for TargetKey {
    fn eq(&self, other: &TargetKey) -> bool {
        self.digest == other.digest
            && (Arc::ptr_eq(&self.json, &other.json) || self.json == other.json)
    }
}

impl Eq for TargetKey {}

impl std::hash::Hash for TargetKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.digest.hash(state);
    }
}

/// The memo, shared by the server's handlers.
#[derive(Default)]
pub struct TargetMemo {
    entries: Mutex<HashMap<u128, Remembered>>,
}

/// What the resolution depends on besides the server's fixed configuration: the route prefix
/// (`/simple`, `/b/<backend>/simple`, `/m/<token>/simple`), the `[[networks]]` rule that holds
/// the client (for `/simple`), and the User-Agent (empty where it refines nothing: every target
/// but `/simple` for a client no rule holds); written one after the other, each ended by
/// a NUL (which none of them can hold), and remembered under the XXH3-128 of that text. The
/// text is kept and compared too: two targets whose texts hash alike (a client can try to make
/// them) are told apart, the later one resolved again and remembered in place.
struct Remembered {
    text: Box<str>,
    resolved: Arc<ResolvedTarget>,
}

impl TargetMemo {
    /// The resolution for this target and User-Agent: remembered, or made by `resolve` now.
    pub fn resolve(
        &self,
        prefix: &str,
        rule: &str,
        user_agent: &str,
        resolve: impl FnOnce() -> (Machine, Policy),
    ) -> Arc<ResolvedTarget> {
        // Each request's key text is written into one buffer per thread: a pip User-Agent is
        // a few hundred bytes, copied for every page request otherwise.
        thread_local! {
            static TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let found = TEXT.with_borrow_mut(|text| {
            text.clear();
            for part in [prefix, rule, user_agent] {
                text.push_str(part);
                text.push('\0');
            }
            let digest = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
            match lock(&self.entries).get(&digest) {
                Some(found) if *found.text == **text => Ok(Arc::clone(&found.resolved)),
                _ => Err((digest, Box::<str>::from(text.as_str()))),
            }
        });
        let (digest, text) = match found {
            Ok(resolved) => return resolved,
            Err(missing) => missing,
        };
        let (machine, policy) = resolve();
        let json = serde_json::to_string(&(&machine, &policy)).unwrap_or_default();
        let resolved = Arc::new(ResolvedTarget {
            machine,
            policy,
            key_digest: xxhash_rust::xxh3::xxh3_128(json.as_bytes()),
            key: json.into(),
        });
        let mut entries = lock(&self.entries);
        if entries.len() >= LIMIT {
            entries.clear();
        }
        let resolved_copy = Arc::clone(&resolved);
        entries.insert(digest, Remembered { text, resolved });
        resolved_copy
    }

    /// How many resolutions are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(platform: &str) -> Machine {
        serde_json::from_str(&format!(r#"{{"platform":"{platform}"}}"#)).unwrap()
    }

    #[test]
    fn resolved_once_per_target_and_user_agent() {
        let memo = TargetMemo::default();
        let mut calls = 0;
        for _ in 0..3 {
            let resolved = memo.resolve("/simple", "gpu", "pip/25.0", || {
                calls += 1;
                (machine("linux-x86_64"), Policy::default())
            });
            assert_eq!(resolved.machine.platform.to_string(), "linux-x86_64");
            assert!(resolved.key.contains("linux-x86_64"));
        }
        assert_eq!(calls, 1);
        // Another rule, prefix or User-Agent is another resolution.
        let other = memo.resolve("/simple", "laptops", "pip/25.0", || {
            (machine("macos-arm64"), Policy::default())
        });
        assert!(other.key.contains("macos-arm64"));
        memo.resolve("/b/cpu/simple", "", "pip/25.0", || {
            (machine("linux-x86_64"), Policy::default())
        });
        memo.resolve("/simple", "gpu", "uv/0.9", || {
            (machine("linux-x86_64"), Policy::default())
        });
        assert_eq!(memo.len(), 4);
    }

    #[test]
    fn parts_are_kept_apart() {
        // The same bytes split differently between prefix, rule and User-Agent are different
        // targets.
        let memo = TargetMemo::default();
        let a = memo.resolve("/simple", "gpu", "pip", || {
            (machine("linux-x86_64"), Policy::default())
        });
        let b = memo.resolve("/simple", "gp", "upip", || {
            (machine("macos-arm64"), Policy::default())
        });
        assert_ne!(a.key, b.key);
        assert_ne!(a.key_digest, b.key_digest);
        assert_eq!(memo.len(), 2);
    }

    #[test]
    fn bounded() {
        let memo = TargetMemo::default();
        for i in 0..=LIMIT {
            memo.resolve("/simple", "", &format!("agent {i}"), || {
                (machine("linux-x86_64"), Policy::default())
            });
        }
        assert!(memo.len() <= LIMIT);
    }
}
