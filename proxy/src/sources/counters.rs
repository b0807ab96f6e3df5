//! Per-source counters for `/metrics`: how each source's page of a requested project came
//! back. Atomics in a slot per source, since every page request counts (a map under a mutex
//! would be taken by every core for every request).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{SourceId, Sources};

/// How one owner's page of a requested project came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageResult {
    /// A page, fresh or cached.
    Page,
    /// The source has no such project.
    Absent,
    /// It failed with nothing cached: its builds are missing.
    Failed,
}

impl PageResult {
    const ALL: [PageResult; 3] = [PageResult::Page, PageResult::Absent, PageResult::Failed];

    fn as_str(self) -> &'static str {
        match self {
            PageResult::Page => "page",
            PageResult::Absent => "absent",
            PageResult::Failed => "failed",
        }
    }
}

/// One slot of counters per source, in [`Sources`] order.
#[derive(Debug)]
pub struct SourceCounters(Vec<[AtomicU64; 3]>);

impl SourceCounters {
    /// Zeroed counters for `sources`.
    pub fn new(sources: &Sources) -> SourceCounters {
        SourceCounters(sources.iter().map(|_| Default::default()).collect())
    }

    /// Counts one answer of `source`.
    pub fn count(&self, source: SourceId, result: PageResult) {
        if let Some(slot) = self.0.get(usize::from(source.0)) {
            slot[result as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The count of `result` for `source`.
    pub fn get(&self, source: SourceId, result: PageResult) -> u64 {
        self.0
            .get(usize::from(source.0))
            .map_or(0, |slot| slot[result as usize].load(Ordering::Relaxed))
    }

    /// `wheelgate_source_pages_total{source,result}` in the Prometheus text format.
    pub fn render(&self, sources: &Sources, out: &mut String) {
        out.push_str(
            "# HELP wheelgate_source_pages_total Project pages asked of each source, by result (page: fresh or cached; absent: no such project there; failed: nothing cached, its builds missing).\n# TYPE wheelgate_source_pages_total counter\n",
        );
        for (id, source) in sources.iter() {
            for result in PageResult::ALL {
                let _ = writeln!(
                    out,
                    "wheelgate_source_pages_total{{source=\"{}\",result=\"{}\"}} {}",
                    source.name,
                    result.as_str(),
                    self.get(id, result)
                );
            }
        }
    }
}
