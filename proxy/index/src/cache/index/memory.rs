//! The parsed pages held in memory: bounded by an estimate of their size, least recently used
//! out first. A page pushed out is read back from disk when asked for again, so the bound costs
//! a parse, never a page.

use std::collections::HashMap;
use std::sync::Arc;

use super::CachedPage;

struct Slot {
    page: Arc<CachedPage>,
    weight: usize,
    last_used: u64,
}

/// Pages by URL within a byte budget.
pub(super) struct PageMemory {
    budget: usize,
    used: usize,
    clock: u64,
    slots: HashMap<String, Slot>,
}

impl PageMemory {
    pub(super) fn new(budget: usize) -> PageMemory {
        PageMemory {
            budget,
            used: 0,
            clock: 0,
            slots: HashMap::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn get(&mut self, url: &str) -> Option<Arc<CachedPage>> {
        self.clock += 1;
        let slot = self.slots.get_mut(url)?;
        slot.last_used = self.clock;
        Some(Arc::clone(&slot.page))
    }

    /// Inserts `page`; returns the pages it pushed out (the old copy of `url` among them), for
    /// the caller to free where it costs no request anything.
    #[must_use]
    pub(super) fn insert(
        &mut self,
        url: String,
        page: Arc<CachedPage>,
        weight: usize,
    ) -> Vec<Arc<CachedPage>> {
        self.clock += 1;
        let mut out: Vec<Arc<CachedPage>> = self.remove(&url).into_iter().collect();
        self.used += weight;
        self.slots.insert(
            url,
            Slot {
                page,
                weight,
                last_used: self.clock,
            },
        );
        // Pages are few (hundreds) and this runs once per fetched page: a scan is enough. The
        // page just inserted stays even when it alone exceeds the budget.
        while self.used > self.budget && self.slots.len() > 1 {
            let Some(oldest) = self
                .slots
                .iter()
                .min_by_key(|(_, slot)| slot.last_used)
                .map(|(url, _)| url.clone())
            else {
                break;
            };
            out.extend(self.remove(&oldest));
        }
        out
    }

    pub(super) fn remove(&mut self, url: &str) -> Option<Arc<CachedPage>> {
        let slot = self.slots.remove(url)?;
        self.used -= slot.weight;
        Some(slot.page)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;
    use crate::upstream::Validators;

    fn page() -> Arc<CachedPage> {
        Arc::new(CachedPage {
            url: String::new(),
            page: wheelgate_resolver::index::ProjectPage::default(),
            generation: 0,
            fetched_at_ms: AtomicU64::new(0),
            validators: Validators::default(),
            retired: Vec::new(),
            retry_at_ms: AtomicU64::new(0),
            weight: 0,
            groups: None,
        })
    }

    #[test]
    fn keeps_within_budget_dropping_the_least_recently_used() {
        let mut memory = PageMemory::new(100);
        let _ = memory.insert("a".into(), page(), 40);
        let _ = memory.insert("b".into(), page(), 40);
        assert!(memory.get("a").is_some());
        assert_eq!(memory.insert("c".into(), page(), 40).len(), 1);
        assert!(memory.get("b").is_none(), "b was least recently used");
        assert!(memory.get("a").is_some() && memory.get("c").is_some());
        let _ = memory.insert("huge".into(), page(), 1000);
        assert_eq!(memory.len(), 1);
        let _ = memory.insert("a".into(), page(), 10);
        assert_eq!(
            memory.insert("a".into(), page(), 10).len(),
            1,
            "the old copy"
        );
        assert_eq!(memory.used, 10, "a replaced entry is not counted twice");
    }
}
