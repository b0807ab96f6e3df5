//! Request limits applied before any route: oversized headers are refused with 431, as nginx's
//! default buffers (4 × 8 KiB) would, so no handler ever sees them. The listener checks them
//! before a request reaches the router (`listener.rs`), rather than a middleware layer, which
//! cost a few per cent of a warm page's CPU for a sum over the headers.

use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use tracing::warn;

/// The most header bytes (names and values) a request may carry.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The 431 answer for a request whose headers exceed [`MAX_HEADER_BYTES`]; `None` for any other.
pub fn refuse_oversized_headers<B>(request: &Request<B>) -> Option<Response> {
    let size: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if size <= MAX_HEADER_BYTES {
        return None;
    }
    warn!(size, limit = MAX_HEADER_BYTES, path = %request.uri().path(), "request headers too large; refused");
    Some(
        (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("request headers are {size} bytes, over the limit of {MAX_HEADER_BYTES}\n"),
        )
            .into_response(),
    )
}
