//! Request limits applied before any route: oversized headers are refused with 431, as nginx's
//! default buffers (4 × 8 KiB) would, so no handler ever sees them.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::warn;

/// The most header bytes (names and values) a request may carry.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses requests whose headers exceed [`MAX_HEADER_BYTES`].
pub async fn limit_headers(request: Request, next: Next) -> Response {
    let size: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if size > MAX_HEADER_BYTES {
        warn!(size, limit = MAX_HEADER_BYTES, path = %request.uri().path(), "request headers too large; refused");
        return (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("request headers are {size} bytes, over the limit of {MAX_HEADER_BYTES}\n"),
        )
            .into_response();
    }
    next.run(request).await
}
