//! Operational routes: liveness and readiness.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::state::AppState;

/// `/healthz` (the process answers) and `/readyz` (the cache directory is writable and its
/// filesystem has room; upstream reachability is deliberately not part of readiness, see
/// `ready`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
}

async fn ready(State(state): State<AppState>) -> (StatusCode, String) {
    // Ready means able to serve: the cache directory takes writes. The upstreams are not
    // checked on purpose: a server with cached pages serves them stale while an upstream is
    // down (and an offline mirror never has one), so taking it out of a load balancer then
    // would turn an upstream outage into a full one.
    let probe = state.config.cache_dir.join(".readyz");
    if let Err(err) = tokio::fs::write(&probe, b"ok").await {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the cache directory is not writable: {err}\n"),
        );
    }
    // A full disk still takes a two-byte write, but every download then breaks off: out of the
    // balancer until there is room again.
    let needed = state.config.limits.min_free_bytes;
    match free_bytes(&state.config.cache_dir) {
        Some(free) if free < needed => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the cache directory's filesystem has {free} bytes free, under `[limits] min_free_bytes` ({needed}): downloads would break off; free some space or lower `cache_max_bytes`\n"
            ),
        ),
        _ => (StatusCode::OK, "ready\n".to_string()),
    }
}

/// Bytes an unprivileged process may still write on the filesystem of `dir`; `None` where it
/// cannot be told.
#[cfg(unix)]
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(not(unix))]
fn free_bytes(_dir: &std::path::Path) -> Option<u64> {
    None
}
