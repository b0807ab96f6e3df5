//! Operational routes: liveness and readiness.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::state::AppState;

/// `/healthz` (the process answers) and `/readyz` (the cache directory is writable).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
}

async fn ready(State(state): State<AppState>) -> (StatusCode, String) {
    let probe = state.config.cache_dir.join(".readyz");
    match tokio::fs::write(&probe, b"ok").await {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(err) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the cache directory is not writable: {err}\n"),
        ),
    }
}
