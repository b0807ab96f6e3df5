//! Operational routes: liveness and readiness.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::state::AppState;

/// `/healthz` (the process answers) and `/readyz` (the cache directory is writable; upstream
/// reachability is deliberately not part of readiness, see `ready`).
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
    match tokio::fs::write(&probe, b"ok").await {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(err) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the cache directory is not writable: {err}\n"),
        ),
    }
}
