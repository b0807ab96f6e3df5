//! Client authentication (see [`wheelgate_config::AuthConfig`]): when configured, every request
//! but the probes (and `/metrics` if public) needs credentials, else `401` with a basic
//! challenge, so pip and uv send the credentials of their index URL. Credentials are never
//! logged: only the outcome is.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::debug;

use super::state::AppState;

/// The challenge sent with every `401`.
pub const CHALLENGE: &str = "Basic realm=\"wheelgate\"";

/// Lets a request through when authentication is off, the route is open, or its credentials
/// are configured ones.
pub async fn require(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let auth = &state.config.auth;
    if !auth.enabled() {
        return next.run(request).await;
    }
    let open = match request.uri().path() {
        "/healthz" | "/readyz" => true,
        "/metrics" => auth.public_metrics,
        _ => false,
    };
    let accepted = open
        || request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| auth.accepts(v));
    if accepted {
        return next.run(request).await;
    }
    debug!(
        path = %request.uri().path().escape_default(),
        credentials = request.headers().contains_key(header::AUTHORIZATION),
        "request refused: authentication required"
    );
    (
        StatusCode::UNAUTHORIZED,
        [
            (header::WWW_AUTHENTICATE, CHALLENGE),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        ],
        "this wheelgate server needs credentials: put them in the index URL, \
         http://USER:PASSWORD@HOST/simple/\n",
    )
        .into_response()
}
