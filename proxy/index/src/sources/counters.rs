//! Per-source counters for `/metrics`: how each source's page of a requested project came
//! back. Atomics in a slot per source, since every page request counts (a map under a mutex
//! would be taken by every core for every request).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{SourceId, Sources};
use crate::cache::index::IndexError;
use crate::upstream::UpstreamError;

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

/// Why a source's page failed with nothing cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// It answered something that is not a page (the real-world case: a field of a type the
    /// reader refuses, an HTML error page with a 200).
    Unreadable,
    /// No answer: refused, reset, TLS, DNS.
    Unreachable,
    /// An error status (5xx, or a 4xx other than "no such project").
    Status,
    Timeout,
    TooLarge,
    Truncated,
    /// Its breaker is open after earlier failures.
    BreakerOpen,
}

impl FailureReason {
    const ALL: [FailureReason; 7] = [
        FailureReason::Unreadable,
        FailureReason::Unreachable,
        FailureReason::Status,
        FailureReason::Timeout,
        FailureReason::TooLarge,
        FailureReason::Truncated,
        FailureReason::BreakerOpen,
    ];

    fn as_str(self) -> &'static str {
        match self {
            FailureReason::Unreadable => "unreadable",
            FailureReason::Unreachable => "unreachable",
            FailureReason::Status => "status",
            FailureReason::Timeout => "timeout",
            FailureReason::TooLarge => "too_large",
            FailureReason::Truncated => "truncated",
            FailureReason::BreakerOpen => "breaker_open",
        }
    }

    /// The reason of `error`.
    pub fn of(error: &IndexError) -> FailureReason {
        match error.root() {
            IndexError::Parse { .. } => FailureReason::Unreadable,
            IndexError::Upstream { source, .. } => match source {
                UpstreamError::CircuitOpen { .. } => FailureReason::BreakerOpen,
                UpstreamError::Timeout { .. } => FailureReason::Timeout,
                UpstreamError::Status { .. } => FailureReason::Status,
                UpstreamError::PageTooLarge { .. } => FailureReason::TooLarge,
                UpstreamError::Truncated { .. } => FailureReason::Truncated,
                UpstreamError::Request { .. }
                | UpstreamError::Build(_)
                | UpstreamError::BuildScoped { .. } => FailureReason::Unreachable,
            },
            IndexError::Shared(_) => unreachable!("root() sees through shared errors"),
        }
    }
}

/// One slot of counters per source, in [`Sources`] order: its results, and its failures by
/// reason.
#[derive(Debug)]
pub struct SourceCounters(Vec<([AtomicU64; 3], [AtomicU64; 7])>);

impl SourceCounters {
    /// Zeroed counters for `sources`.
    pub fn new(sources: &Sources) -> SourceCounters {
        SourceCounters(sources.iter().map(|_| Default::default()).collect())
    }

    /// Counts one answer of `source`.
    pub fn count(&self, source: SourceId, result: PageResult) {
        if let Some(slot) = self.0.get(usize::from(source.0)) {
            slot.0[result as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts one failure of `source` (beside its [`PageResult::Failed`]) by its reason.
    pub fn count_failure(&self, source: SourceId, reason: FailureReason) {
        if let Some(slot) = self.0.get(usize::from(source.0)) {
            slot.1[reason as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The count of `result` for `source`.
    pub fn get(&self, source: SourceId, result: PageResult) -> u64 {
        self.0
            .get(usize::from(source.0))
            .map_or(0, |slot| slot.0[result as usize].load(Ordering::Relaxed))
    }

    /// The failures of `source` for `reason`.
    pub fn failures(&self, source: SourceId, reason: FailureReason) -> u64 {
        self.0
            .get(usize::from(source.0))
            .map_or(0, |slot| slot.1[reason as usize].load(Ordering::Relaxed))
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
        out.push_str(
            "# HELP wheelgate_source_page_failures_total Project pages of each source that failed with nothing cached, by reason (unreadable: it answered something that is not a page).\n# TYPE wheelgate_source_page_failures_total counter\n",
        );
        for (id, source) in sources.iter() {
            for reason in FailureReason::ALL {
                let _ = writeln!(
                    out,
                    "wheelgate_source_page_failures_total{{source=\"{}\",reason=\"{}\"}} {}",
                    source.name,
                    reason.as_str(),
                    self.failures(id, reason)
                );
            }
        }
    }
}
