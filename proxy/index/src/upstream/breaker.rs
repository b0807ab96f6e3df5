//! A circuit breaker per upstream (`host:port`) and kind of request (pages, files): after a run
//! of failed requests the upstream is known down for a while, and requests to it fail at once
//! instead of each paying connection timeouts and retries; then one request is let through to
//! probe it, and its answer closes the breaker again or keeps it open. Pages and files have
//! breakers of their own: an index endpoint that stalls while files download fine (a CDN's page
//! cache failing) must not stop file downloads.
//!
//! A page request that meets an open breaker is answered from the stale cached copy, so while an
//! upstream is down every client is served at cache speed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::metrics::{BreakerView, RequestKind, upstream_label};

/// When a breaker opens and how long it stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Consecutive failed requests that open the breaker; 0 disables it.
    pub failures_to_open: u32,
    /// How long an open breaker refuses requests before letting one probe through.
    pub open_for: Duration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        BreakerSettings {
            failures_to_open: 3,
            open_for: Duration::from_secs(15),
        }
    }
}

/// Whether a request may go to its upstream now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The breaker is closed.
    Allowed,
    /// The breaker is open but its time is up: this request probes the upstream.
    Probe,
    /// The breaker is open: fail at once.
    Refused { retry_in: Duration },
}

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u32,
    open_until: Option<Instant>,
    /// When a probe was let through; another is allowed only if this one never reported back
    /// within `open_for` (its request was dropped).
    probing_since: Option<Instant>,
    opened_total: u64,
    refused_total: u64,
}

impl State {
    /// Refusing requests, or waiting on the probe it let through.
    fn is_open(&self, now: Instant) -> bool {
        self.open_until.is_some_and(|until| now < until) || self.probing_since.is_some()
    }
}

/// The breakers of every upstream this server talks to: one entry per upstream host, a handful
/// in all (hosts come from the configured upstreams and the pages they serve).
#[derive(Debug, Default)]
pub struct Breakers {
    settings: BreakerSettings,
    states: Mutex<HashMap<(String, RequestKind), State>>,
}

impl Breakers {
    pub fn new(settings: BreakerSettings) -> Breakers {
        Breakers {
            settings,
            states: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, RequestKind), State>> {
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a request of `kind` to `url` may go out now.
    pub fn admit(&self, url: &str, kind: RequestKind) -> Admission {
        if self.settings.failures_to_open == 0 {
            return Admission::Allowed;
        }
        let now = Instant::now();
        let mut states = self.lock();
        let Some(state) = states.get_mut(&(upstream_label(url), kind)) else {
            return Admission::Allowed;
        };
        let Some(open_until) = state.open_until else {
            return Admission::Allowed;
        };
        if now < open_until {
            state.refused_total += 1;
            return Admission::Refused {
                retry_in: open_until.saturating_duration_since(now),
            };
        }
        match state.probing_since {
            Some(since) if now.duration_since(since) < self.settings.open_for => {
                state.refused_total += 1;
                Admission::Refused {
                    retry_in: self
                        .settings
                        .open_for
                        .saturating_sub(now.duration_since(since)),
                }
            }
            _ => {
                state.probing_since = Some(now);
                Admission::Probe
            }
        }
    }

    /// Records how a request of `kind` to `url` ended: `true` when the upstream answered
    /// (below 500). Returns `true` when this failure opened (or reopened) the breaker.
    pub fn record(&self, url: &str, kind: RequestKind, answered: bool) -> bool {
        if self.settings.failures_to_open == 0 {
            return false;
        }
        let mut states = self.lock();
        if answered {
            if let Some(state) = states.get_mut(&(upstream_label(url), kind)) {
                state.consecutive_failures = 0;
                state.open_until = None;
                state.probing_since = None;
            }
            return false;
        }
        let state = states.entry((upstream_label(url), kind)).or_default();
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
        let was_probing = state.probing_since.take().is_some();
        if was_probing || state.consecutive_failures >= self.settings.failures_to_open {
            if state.open_until.is_none() || was_probing {
                state.opened_total += 1;
            }
            state.open_until = Some(Instant::now() + self.settings.open_for);
            return true;
        }
        false
    }

    /// Every upstream that ever failed, sorted by name.
    pub fn views(&self) -> Vec<BreakerView> {
        let now = Instant::now();
        let mut views: Vec<BreakerView> = self
            .lock()
            .iter()
            .map(|((upstream, requests), state)| BreakerView {
                upstream: upstream.clone(),
                requests: *requests,
                open: state.is_open(now),
                consecutive_failures: state.consecutive_failures,
                opened_total: state.opened_total,
                refused_total: state.refused_total,
            })
            .collect();
        views.sort_by(|a, b| (&a.upstream, a.requests).cmp(&(&b.upstream, b.requests)));
        views
    }

    /// Whether a breaker of `url`'s upstream (pages or files) is open now.
    pub fn is_open(&self, url: &str) -> bool {
        let label = upstream_label(url);
        let now = Instant::now();
        self.lock()
            .iter()
            .any(|((upstream, _), state)| *upstream == label && state.is_open(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://up.example:8080/whl/torch/";
    const P: RequestKind = RequestKind::Pages;

    fn breakers(open_for: Duration) -> Breakers {
        Breakers::new(BreakerSettings {
            failures_to_open: 2,
            open_for,
        })
    }

    #[test]
    fn opens_after_a_run_of_failures_and_refuses_until_its_time_is_up() {
        let b = breakers(Duration::from_mins(1));
        assert_eq!(b.admit(URL, P), Admission::Allowed);
        assert!(!b.record(URL, P, false));
        assert_eq!(b.admit(URL, P), Admission::Allowed);
        assert!(b.record(URL, P, false));
        assert!(matches!(b.admit(URL, P), Admission::Refused { .. }));
        // Another upstream is not affected.
        assert_eq!(
            b.admit("http://other.example/simple/x/", P),
            Admission::Allowed
        );
        let view = &b.views()[0];
        assert!(view.open);
        assert_eq!((view.opened_total, view.refused_total), (1, 1));
    }

    #[test]
    fn a_success_in_between_resets_the_run() {
        let b = breakers(Duration::from_mins(1));
        b.record(URL, P, false);
        b.record(URL, P, true);
        assert!(!b.record(URL, P, false));
        assert_eq!(b.admit(URL, P), Admission::Allowed);
    }

    #[test]
    fn one_probe_after_the_open_time_closes_or_reopens_it() {
        let b = breakers(Duration::from_millis(1));
        b.record(URL, P, false);
        b.record(URL, P, false);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(b.admit(URL, P), Admission::Probe);
        // Only one probe at a time.
        std::thread::sleep(Duration::from_millis(0));
        assert!(b.record(URL, P, false), "a failed probe reopens");
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(b.admit(URL, P), Admission::Probe);
        b.record(URL, P, true);
        assert_eq!(b.admit(URL, P), Admission::Allowed);
        assert!(!b.is_open(URL));
    }

    #[test]
    fn a_second_request_while_probing_is_refused() {
        let b = Breakers::new(BreakerSettings {
            failures_to_open: 1,
            open_for: Duration::from_millis(50),
        });
        b.record(URL, P, false);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(b.admit(URL, P), Admission::Probe);
        assert!(matches!(b.admit(URL, P), Admission::Refused { .. }));
    }
}
