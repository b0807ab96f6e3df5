//! The server's counters, rendered in the Prometheus text exposition format
//! (<https://prometheus.io/docs/instrumenting/exposition_formats/>).
//!
//! A small hand-rolled registry of atomics rather than a metrics crate: the set of series is
//! fixed and small, and every label value is bounded: routes are one of [`Route`]'s six names
//! (never a raw path), status codes are three digits, and upstreams are the `host:port` of URLs
//! an upstream page or the configuration named (never a client's input).
//!
//! The same registry keeps the last index-page fetch of each upstream (success or failure, and
//! when) for the status page.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::sync::lock;

/// Upper bounds (seconds) of the upstream latency histogram's buckets.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The route label of a request: a small fixed set, never the raw path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Route {
    /// Index pages: `/simple/`, `/b/<backend>/simple/`, `/m/<token>/simple/`.
    Simple,
    /// Wheels and sdists under `/files/`.
    Files,
    /// PEP 658 `.metadata` files under `/files/`.
    Metadata,
    /// `/healthz`, `/readyz`, `/metrics`.
    Ops,
    /// The status page `/`.
    Status,
    /// Anything else (404s, probes).
    Other,
}

impl Route {
    const ALL: [Route; 6] = [
        Route::Simple,
        Route::Files,
        Route::Metadata,
        Route::Ops,
        Route::Status,
        Route::Other,
    ];

    /// The route a request path belongs to.
    pub fn of_path(path: &str) -> Route {
        match path {
            "/" => Route::Status,
            "/healthz" | "/readyz" | "/metrics" => Route::Ops,
            _ if path.starts_with("/files/") => {
                if path.ends_with(".metadata") {
                    Route::Metadata
                } else {
                    Route::Files
                }
            }
            _ if path.starts_with("/simple")
                || (path.starts_with("/b/") || path.starts_with("/m/"))
                    && path.contains("/simple") =>
            {
                Route::Simple
            }
            _ => Route::Other,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Simple => "simple",
            Route::Files => "files",
            Route::Metadata => "metadata",
            Route::Ops => "ops",
            Route::Status => "status",
            Route::Other => "other",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What the index-page cache did for one lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOutcome {
    /// Served from cache while fresh (or offline).
    Hit,
    /// Fetched anew from the upstream.
    Miss,
    /// Revalidated upstream (304) and served from cache.
    Revalidated,
    /// The upstream failed; a stale copy was served.
    Stale,
    /// Served from the shared bucket's copy: a cold replica's first lookup, or a refresh that
    /// adopted a fresher copy another replica published instead of asking the upstream.
    Bucket,
}

/// Why a fetched index page was not allowed to replace the cached copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRejection {
    /// It lists no file where the cached copy lists some.
    Empty,
    /// It does not parse.
    Unparseable,
    /// It lists fewer files, none of them the cached copy's.
    Unrelated,
    /// Its body is shorter than its `Content-Length`.
    Truncated,
    /// It is over `max_page_bytes`.
    TooLarge,
}

impl PageRejection {
    pub const ALL: [PageRejection; 5] = [
        PageRejection::Empty,
        PageRejection::Unparseable,
        PageRejection::Unrelated,
        PageRejection::Truncated,
        PageRejection::TooLarge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PageRejection::Empty => "empty",
            PageRejection::Unparseable => "unparseable",
            PageRejection::Unrelated => "unrelated",
            PageRejection::Truncated => "truncated",
            PageRejection::TooLarge => "too_large",
        }
    }
}

/// How an upstream request attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamOutcome {
    /// Any answer below 500.
    Answered,
    /// A 5xx answer.
    ServerError,
    /// No answer: connection refused or reset, timeout, TLS.
    Failed,
}

/// The last index-page fetch from one upstream, for the status page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamHealth {
    /// When a page fetch last succeeded (an answer, including 304 and 404).
    pub last_success: Option<SystemTime>,
    /// When a page fetch last failed, and why (URLs in it are redacted).
    pub last_failure: Option<(SystemTime, String)>,
}

#[derive(Debug, Default)]
struct UpstreamSeries {
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum_secs: f64,
    server_errors: u64,
    failures: u64,
    health: UpstreamHealth,
}

/// Status codes HTTP allows (100 to 999), one counter each per route.
const STATUS_CODES: usize = 900;

/// Requests answered, by route and status code: one counter each, so that answering a request
/// takes no lock (a mutex over a map here was shared by every core's requests).
#[derive(Debug)]
struct RequestCounts(Box<[AtomicU64]>);

impl Default for RequestCounts {
    fn default() -> RequestCounts {
        RequestCounts(
            (0..Route::ALL.len() * STATUS_CODES)
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }
}

impl RequestCounts {
    fn slot(route: Route, status: u16) -> Option<usize> {
        let code = usize::from(status).checked_sub(100)?;
        (code < STATUS_CODES).then_some(route.index() * STATUS_CODES + code)
    }

    fn add(&self, route: Route, status: u16) {
        if let Some(slot) = Self::slot(route, status) {
            self.0[slot].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts not zero, by route then status code.
    fn nonzero(&self) -> impl Iterator<Item = (Route, u16, u64)> + '_ {
        Route::ALL.into_iter().flat_map(move |route| {
            (100..1000u16).filter_map(move |status| {
                let count = Self::slot(route, status)
                    .map_or(0, |slot| self.0[slot].load(Ordering::Relaxed));
                (count > 0).then_some((route, status, count))
            })
        })
    }
}

/// The registry; one per server, shared through an `Arc` in the state and the upstream client.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: RequestCounts,
    response_bytes: [AtomicU64; 6],
    in_flight: [AtomicI64; 6],
    file_hits: AtomicU64,
    file_misses: AtomicU64,
    index: [AtomicU64; 5],
    pages_published: AtomicU64,
    pages_rejected: [AtomicU64; 5],
    files_uncached: AtomicU64,
    connections_open: AtomicI64,
    connections_at_limit: AtomicU64,
    connections_timed_out: AtomicU64,
    /// Pages served whose answer rests on an inferred catalog fact, and when the last was
    /// (Unix seconds; 0: never).
    inferred_answers: AtomicU64,
    last_inferred_answer: AtomicU64,
    upstreams: Mutex<BTreeMap<String, UpstreamSeries>>,
}

/// The `host[:port]` of a URL, without credentials: the upstream label.
pub fn upstream_label(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    host.to_ascii_lowercase()
}

impl Metrics {
    /// Counts one answered request.
    pub fn request(&self, route: Route, status: u16) {
        self.requests.add(route, status);
    }

    /// Counts body bytes sent on `route`.
    pub fn bytes_sent(&self, route: Route, bytes: u64) {
        self.response_bytes[route.index()].fetch_add(bytes, Ordering::Relaxed);
    }

    /// A response body of `route` started (`+1`) or ended (`-1`).
    pub fn in_flight(&self, route: Route, delta: i64) {
        self.in_flight[route.index()].fetch_add(delta, Ordering::Relaxed);
    }

    /// Responses of `route` whose body is still being sent.
    pub fn in_flight_now(&self, route: Route) -> i64 {
        self.in_flight[route.index()].load(Ordering::Relaxed)
    }

    /// Counts a file request served from the cache (`hit`) or from an upstream download.
    pub fn file_lookup(&self, hit: bool) {
        let counter = if hit {
            &self.file_hits
        } else {
            &self.file_misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an index-cache lookup.
    pub fn index_lookup(&self, outcome: IndexOutcome) {
        self.index[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an index page published to the shared bucket.
    pub fn page_published(&self) {
        self.pages_published.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a fetched page refused in favour of the cached copy (or of nothing).
    pub fn page_rejected(&self, reason: PageRejection) {
        self.pages_rejected[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A client connection opened (`+1`) or closed (`-1`).
    pub fn connection(&self, delta: i64) {
        self.connections_open.fetch_add(delta, Ordering::Relaxed);
    }

    /// Client connections open now.
    pub fn connections_open(&self) -> i64 {
        self.connections_open.load(Ordering::Relaxed)
    }

    /// Counts a moment the server stopped accepting because `max_connections` were open.
    pub fn connection_limit_reached(&self) {
        self.connections_at_limit.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a client connection closed for being idle or slow to send its headers.
    pub fn connection_timed_out(&self) {
        self.connections_timed_out.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a file streamed to a client without being kept (no room, or no way to verify it).
    pub fn file_uncached(&self) {
        self.files_uncached.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a page served whose answer rests on an inferred catalog fact.
    pub fn inferred_answer(&self) {
        self.inferred_answers.fetch_add(1, Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.last_inferred_answer.store(now, Ordering::Relaxed);
    }

    /// When a page resting on an inferred fact was last served (Unix seconds), if ever.
    pub fn last_inferred_answer(&self) -> Option<u64> {
        Some(self.last_inferred_answer.load(Ordering::Relaxed)).filter(|&at| at > 0)
    }

    /// Records one upstream request attempt to `url` that took `elapsed` to answer.
    pub fn upstream_attempt(&self, url: &str, elapsed: Duration, outcome: UpstreamOutcome) {
        let mut upstreams = lock(&self.upstreams);
        let series = upstreams.entry(upstream_label(url)).or_default();
        let secs = elapsed.as_secs_f64();
        for (bucket, bound) in series.buckets.iter_mut().zip(LATENCY_BUCKETS) {
            if secs <= bound {
                *bucket += 1;
            }
        }
        series.count += 1;
        series.sum_secs += secs;
        match outcome {
            UpstreamOutcome::Answered => {}
            UpstreamOutcome::ServerError => series.server_errors += 1,
            UpstreamOutcome::Failed => series.failures += 1,
        }
    }

    /// Records the outcome of an index-page fetch from `url`; `error` is already redacted.
    pub fn page_fetch(&self, url: &str, error: Option<String>) {
        let mut upstreams = lock(&self.upstreams);
        let health = &mut upstreams.entry(upstream_label(url)).or_default().health;
        let now = SystemTime::now();
        match error {
            None => health.last_success = Some(now),
            Some(error) => health.last_failure = Some((now, error)),
        }
    }

    /// The last page fetch of the upstream serving `url` (`host:port`), if any happened.
    pub fn upstream_health(&self, url: &str) -> UpstreamHealth {
        lock(&self.upstreams)
            .get(&upstream_label(url))
            .map(|s| s.health.clone())
            .unwrap_or_default()
    }

    /// `(hits, misses)` of the file cache.
    pub fn file_counts(&self) -> (u64, u64) {
        (
            self.file_hits.load(Ordering::Relaxed),
            self.file_misses.load(Ordering::Relaxed),
        )
    }

    /// The exposition text. `cache` gives the file cache's current files, bytes and limit,
    /// `breakers` the upstreams' circuit breakers.
    pub fn render(
        &self,
        cache: CacheGauges,
        breakers: &[BreakerView],
        build: &BuildLabels,
    ) -> String {
        let mut out = String::with_capacity(4096);
        render_build_info(&mut out, build);
        self.render_inference(&mut out);
        header(
            &mut out,
            "wheelgate_http_requests_total",
            "counter",
            "HTTP requests answered, by route and status code.",
        );
        for (route, status, count) in self.requests.nonzero() {
            let _ = writeln!(
                out,
                "wheelgate_http_requests_total{{route=\"{}\",status=\"{status}\"}} {count}",
                route.as_str()
            );
        }
        header(
            &mut out,
            "wheelgate_http_response_bytes_total",
            "counter",
            "Response body bytes sent, by route (files: wheels and sdists; simple: index pages).",
        );
        for route in Route::ALL {
            let _ = writeln!(
                out,
                "wheelgate_http_response_bytes_total{{route=\"{}\"}} {}",
                route.as_str(),
                self.response_bytes[route.index()].load(Ordering::Relaxed)
            );
        }
        header(
            &mut out,
            "wheelgate_downloads_in_flight",
            "gauge",
            "Responses whose body is still being sent, by route.",
        );
        for route in [Route::Files, Route::Metadata, Route::Simple] {
            let _ = writeln!(
                out,
                "wheelgate_downloads_in_flight{{route=\"{}\"}} {}",
                route.as_str(),
                self.in_flight_now(route)
            );
        }
        header(
            &mut out,
            "wheelgate_file_cache_requests_total",
            "counter",
            "File requests by cache result (hit: committed in the cache; miss: downloading).",
        );
        let (hits, misses) = self.file_counts();
        let _ = writeln!(
            out,
            "wheelgate_file_cache_requests_total{{result=\"hit\"}} {hits}"
        );
        let _ = writeln!(
            out,
            "wheelgate_file_cache_requests_total{{result=\"miss\"}} {misses}"
        );
        header(
            &mut out,
            "wheelgate_index_cache_requests_total",
            "counter",
            "Index-page lookups by cache result.",
        );
        for (name, counter) in ["hit", "miss", "revalidated", "stale", "bucket"]
            .iter()
            .zip(&self.index)
        {
            let _ = writeln!(
                out,
                "wheelgate_index_cache_requests_total{{result=\"{name}\"}} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        for (name, help, value) in [
            (
                "wheelgate_file_cache_files",
                "Files committed in the file cache.",
                cache.files,
            ),
            (
                "wheelgate_file_cache_bytes",
                "Bytes of files committed in the file cache.",
                cache.bytes,
            ),
            (
                "wheelgate_file_cache_limit_bytes",
                "Size limit of the file cache.",
                cache.limit,
            ),
        ] {
            header(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {value}");
        }
        self.render_resilience(&mut out);
        self.render_upstreams(&mut out, breakers);
        out
    }

    fn render_resilience(&self, out: &mut String) {
        header(
            out,
            "wheelgate_index_pages_rejected_total",
            "counter",
            "Upstream pages refused, by reason: in favour of the cached copy, or (unparseable) failing their request when none is cached.",
        );
        for reason in PageRejection::ALL {
            let _ = writeln!(
                out,
                "wheelgate_index_pages_rejected_total{{reason=\"{}\"}} {}",
                reason.as_str(),
                self.pages_rejected[reason as usize].load(Ordering::Relaxed)
            );
        }
        for (name, kind, help, value) in [
            (
                "wheelgate_index_pages_published_total",
                "counter",
                "Index pages published to the shared object store bucket for other replicas.",
                self.pages_published.load(Ordering::Relaxed),
            ),
            (
                "wheelgate_file_cache_uncached_total",
                "counter",
                "Files streamed to a client without being kept (no room in the cache, or neither hash nor length to verify them).",
                self.files_uncached.load(Ordering::Relaxed),
            ),
            (
                "wheelgate_connections_open",
                "gauge",
                "Client connections open.",
                u64::try_from(self.connections_open()).unwrap_or(0),
            ),
            (
                "wheelgate_connections_limit_reached_total",
                "counter",
                "Times the server stopped accepting because max_connections were open.",
                self.connections_at_limit.load(Ordering::Relaxed),
            ),
            (
                "wheelgate_connections_timed_out_total",
                "counter",
                "Client connections closed for being idle or slow to send their headers.",
                self.connections_timed_out.load(Ordering::Relaxed),
            ),
        ] {
            header(out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        }
    }

    fn render_upstreams(&self, out: &mut String, breakers: &[BreakerView]) {
        header(
            out,
            "wheelgate_upstream_breaker_open",
            "gauge",
            "1 while an upstream's circuit breaker for pages or files is open (those requests fail at once; cached content is served).",
        );
        for breaker in breakers {
            let _ = writeln!(
                out,
                "wheelgate_upstream_breaker_open{{upstream=\"{}\",requests=\"{}\"}} {}",
                escape_label(&breaker.upstream),
                breaker.requests.as_str(),
                u8::from(breaker.open)
            );
        }
        header(
            out,
            "wheelgate_upstream_short_circuited_total",
            "counter",
            "Upstream requests failed at once because the upstream's breaker was open.",
        );
        for breaker in breakers {
            let _ = writeln!(
                out,
                "wheelgate_upstream_short_circuited_total{{upstream=\"{}\",requests=\"{}\"}} {}",
                escape_label(&breaker.upstream),
                breaker.requests.as_str(),
                breaker.refused_total
            );
        }
        let upstreams = lock(&self.upstreams);
        header(
            out,
            "wheelgate_upstream_request_duration_seconds",
            "histogram",
            "Time to an upstream's response headers, per request attempt.",
        );
        for (upstream, series) in upstreams.iter().filter(|(_, s)| s.count > 0) {
            let label = escape_label(upstream);
            for (bound, count) in LATENCY_BUCKETS.iter().zip(series.buckets) {
                let _ = writeln!(
                    out,
                    "wheelgate_upstream_request_duration_seconds_bucket{{upstream=\"{label}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "wheelgate_upstream_request_duration_seconds_bucket{{upstream=\"{label}\",le=\"+Inf\"}} {}\n\
                 wheelgate_upstream_request_duration_seconds_sum{{upstream=\"{label}\"}} {}\n\
                 wheelgate_upstream_request_duration_seconds_count{{upstream=\"{label}\"}} {}",
                series.count, series.sum_secs, series.count
            );
        }
        header(
            out,
            "wheelgate_upstream_errors_total",
            "counter",
            "Upstream request attempts that failed (kind: connection = no answer, status = 5xx).",
        );
        for (upstream, series) in upstreams.iter().filter(|(_, s)| s.count > 0) {
            let label = escape_label(upstream);
            let _ = writeln!(
                out,
                "wheelgate_upstream_errors_total{{upstream=\"{label}\",kind=\"connection\"}} {}\n\
                 wheelgate_upstream_errors_total{{upstream=\"{label}\",kind=\"status\"}} {}",
                series.failures, series.server_errors
            );
        }
    }
}

/// The file cache's size, read at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheGauges {
    pub files: u64,
    pub bytes: u64,
    pub limit: u64,
}

impl Metrics {
    /// How often answers rested on inferred catalog facts, and when last.
    fn render_inference(&self, out: &mut String) {
        header(
            out,
            "wheelgate_inferred_answers_total",
            "counter",
            "Pages served whose answer for some version rests on a catalog fact that is inferred (a release or build the catalog lacks or marks inferred).",
        );
        let _ = writeln!(
            out,
            "wheelgate_inferred_answers_total {}",
            self.inferred_answers.load(Ordering::Relaxed)
        );
        header(
            out,
            "wheelgate_inferred_answer_last_timestamp_seconds",
            "gauge",
            "When such a page was last served (Unix seconds; 0: never).",
        );
        let _ = writeln!(
            out,
            "wheelgate_inferred_answer_last_timestamp_seconds {}",
            self.last_inferred_answer.load(Ordering::Relaxed)
        );
    }
}

/// `wheelgate_catalog_updated_timestamp_seconds`: the day the catalog's facts were checked.
pub fn render_catalog(out: &mut String, catalog: &wheelgate_resolver::Catalog) {
    header(
        out,
        "wheelgate_catalog_updated_timestamp_seconds",
        "gauge",
        "When the catalog's build facts were last checked (Unix seconds of its `updated` day; 0: not dated).",
    );
    let seconds = catalog.updated().map_or(0, |(_, day)| day * 86_400);
    let _ = writeln!(out, "wheelgate_catalog_updated_timestamp_seconds {seconds}");
}

/// The kind of request a breaker guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestKind {
    Pages,
    Files,
}

impl RequestKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Pages => "pages",
            RequestKind::Files => "files",
        }
    }
}

/// One upstream's breaker, as shown in `/metrics` and on the status page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerView {
    /// `host:port`.
    pub upstream: String,
    pub requests: RequestKind,
    pub open: bool,
    pub consecutive_failures: u32,
    /// How many times it opened since the server started.
    pub opened_total: u64,
    /// Requests failed at once because it was open.
    pub refused_total: u64,
}

/// Which build this server runs, for `wheelgate_build_info` (the binary's `build_info`).
#[derive(Debug, Clone, Copy)]
pub struct BuildLabels {
    pub version: &'static str,
    pub commit: &'static str,
    pub build_date: &'static str,
}

/// `wheelgate_build_info`: which build this server runs.
fn render_build_info(out: &mut String, build: &BuildLabels) {
    header(
        out,
        "wheelgate_build_info",
        "gauge",
        "The build this server runs: always 1, its version, git commit and build date as labels.",
    );
    let _ = writeln!(
        out,
        "wheelgate_build_info{{version=\"{}\",commit=\"{}\",build_date=\"{}\"}} 1",
        build.version, build.commit, build.build_date
    );
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_counts_are_kept_per_route_and_status_in_order() {
        let counts = RequestCounts::default();
        counts.add(Route::Files, 404);
        counts.add(Route::Simple, 200);
        counts.add(Route::Simple, 200);
        counts.add(Route::Simple, 100);
        counts.add(Route::Other, 999);
        // Outside what HTTP allows: not counted, never a panic.
        counts.add(Route::Simple, 99);
        counts.add(Route::Simple, 1000);
        let listed: Vec<_> = counts.nonzero().collect();
        assert_eq!(
            listed,
            [
                (Route::Simple, 100, 1),
                (Route::Simple, 200, 2),
                (Route::Files, 404, 1),
                (Route::Other, 999, 1),
            ]
        );
    }

    #[test]
    fn routes_are_a_fixed_set() {
        assert_eq!(Route::of_path("/"), Route::Status);
        assert_eq!(Route::of_path("/simple/torch/"), Route::Simple);
        assert_eq!(Route::of_path("/b/cu128/simple/torch/"), Route::Simple);
        assert_eq!(Route::of_path("/m/abc/simple/"), Route::Simple);
        assert_eq!(Route::of_path("/files/torch/t.whl"), Route::Files);
        assert_eq!(
            Route::of_path("/files/torch/t.whl.metadata"),
            Route::Metadata
        );
        assert_eq!(Route::of_path("/metrics"), Route::Ops);
        assert_eq!(Route::of_path("/wp-admin"), Route::Other);
        assert_eq!(Route::of_path("/b/x"), Route::Other);
    }

    #[test]
    fn upstream_labels_drop_credentials_and_paths() {
        assert_eq!(
            upstream_label("https://u:p@Mirror.example:8443/simple/x/"),
            "mirror.example:8443"
        );
        assert_eq!(upstream_label("http://127.0.0.1:9/a"), "127.0.0.1:9");
    }

    #[test]
    fn renders_histograms_and_counters() {
        let metrics = Metrics::default();
        metrics.request(Route::Simple, 200);
        metrics.request(Route::Simple, 200);
        metrics.upstream_attempt(
            "https://a:b@up.example/x",
            Duration::from_millis(30),
            UpstreamOutcome::ServerError,
        );
        let build = BuildLabels {
            version: "0.1.0",
            commit: "0123456789ab",
            build_date: "2026-11-28",
        };
        let text = metrics.render(CacheGauges::default(), &[], &build);
        assert!(text.contains(
            "wheelgate_build_info{version=\"0.1.0\",commit=\"0123456789ab\",build_date=\"2026-11-28\"} 1"
        ));
        assert!(text.contains("wheelgate_http_requests_total{route=\"simple\",status=\"200\"} 2"));
        assert!(text.contains(
            "wheelgate_upstream_request_duration_seconds_bucket{upstream=\"up.example\",le=\"0.05\"} 1"
        ));
        assert!(text.contains(
            "wheelgate_upstream_request_duration_seconds_bucket{upstream=\"up.example\",le=\"0.025\"} 0"
        ));
        assert!(text.contains(
            "wheelgate_upstream_errors_total{upstream=\"up.example\",kind=\"status\"} 1"
        ));
        assert!(!text.contains("a:b"));
    }
}
