//! What a page request resolves for (machine, policy and the key its renderings are cached
//! under), remembered per route target and User-Agent. Working it out means parsing pip's
//! JSON User-Agent and serializing the machine for the rendering key: a sixth of a warm page
//! request's CPU, for an answer that is the same for every request of a client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use wheelgate_resolver::{Machine, Policy};

/// Distinct (target, User-Agent) pairs remembered; the whole memo is cleared past it (a client
/// sending a new User-Agent each time only costs what every request cost before).
const LIMIT: usize = 1024;

/// One request target, resolved.
#[derive(Debug)]
pub struct ResolvedTarget {
    /// The machine pages are rewritten for (moved to the client's platform when its
    /// User-Agent says it runs elsewhere).
    pub machine: Machine,
    pub policy: Policy,
    /// `machine` and `policy` as JSON: what the rendered-page cache is keyed by.
    pub key: Arc<str>,
}

/// The memo, shared by the server's handlers.
#[derive(Default)]
pub struct TargetMemo {
    entries: Mutex<HashMap<MemoKey, Arc<ResolvedTarget>>>,
}

/// What the resolution depends on besides the server's fixed configuration: the route prefix
/// (`/simple`, `/b/<backend>/simple`, `/m/<token>/simple`), the `[[networks]]` rule that holds
/// the client (for `/simple`), and the User-Agent.
#[derive(PartialEq, Eq, Hash)]
struct MemoKey {
    prefix: String,
    rule: String,
    user_agent: String,
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
        let key = MemoKey {
            prefix: prefix.to_string(),
            rule: rule.to_string(),
            user_agent: user_agent.to_string(),
        };
        if let Some(found) = lock(&self.entries).get(&key) {
            return Arc::clone(found);
        }
        let (machine, policy) = resolve();
        let json = serde_json::to_string(&(&machine, &policy)).unwrap_or_default();
        let resolved = Arc::new(ResolvedTarget {
            machine,
            policy,
            key: json.into(),
        });
        let mut entries = lock(&self.entries);
        if entries.len() >= LIMIT {
            entries.clear();
        }
        entries.insert(key, Arc::clone(&resolved));
        resolved
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
