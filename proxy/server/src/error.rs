//! Errors of request handlers and the one place they become HTTP status codes. Internals go to
//! the log; the client gets a short text that names the problem.

use std::fmt::Write as _;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tracing::{error, info, warn};
use wheelgate_index::error_chain::source_chain;

use wheelgate_index::cache::index::IndexError;
pub use wheelgate_index::cache::index::client_message;
use wheelgate_index::sources::pages::OwnersFailed;
use wheelgate_index::upstream::UpstreamError;

/// What a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error(
        "none of the accepted formats is offered; ask for application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html or text/html"
    )]
    NotAcceptable,
    #[error("the upstream index failed")]
    Upstream(#[source] IndexError),
    /// Every source that owns a project failed; no other source is asked in their place.
    #[error(transparent)]
    Owners(#[from] OwnersFailed),
}

impl ApiError {
    /// No source has `project`; offline, the store has no page of it.
    pub fn no_such_project(offline: bool, project: &str) -> ApiError {
        ApiError::NotFound(if offline {
            format!(
                "`{project}` is not in this mirror: the store has no page of it, and this server is offline"
            )
        } else {
            format!("no project named `{project}` upstream")
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut retry_after = None;
        let status = match &self {
            // Logged too: a client asking for what does not exist, or in a form the server
            // refuses, is worth seeing when an install fails (escaped: a client's text cannot
            // forge a log line).
            ApiError::NotFound(message) => {
                info!(status = 404, "{}", message.escape_debug());
                StatusCode::NOT_FOUND
            }
            ApiError::BadRequest(message) => {
                info!(status = 400, "{}", message.escape_debug());
                StatusCode::BAD_REQUEST
            }
            ApiError::NotAcceptable => {
                info!(status = 406, "{self}");
                StatusCode::NOT_ACCEPTABLE
            }
            ApiError::Upstream(inner) => index_status(&self, inner, &mut retry_after),
            ApiError::Owners(owners) => index_status(&self, &owners.error, &mut retry_after),
        };
        let text = match &self {
            ApiError::Upstream(inner) => format!("{}\n", client_message(inner.root())),
            ApiError::Owners(owners) => {
                let mut text = format!(
                    "`{}` is served only from {}: `{}`: {}",
                    owners.project,
                    owners.named.owners,
                    owners.named.first,
                    client_message(owners.error.root())
                );
                // The first failure above; the other owners' after it, each named.
                for (source, error) in &owners.named.others {
                    let _ = write!(text, "; `{source}`: {}", client_message(error.root()));
                }
                text.push('\n');
                text
            }
            other => format!("{other}\n"),
        };
        let mut response = (
            status,
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )],
            text,
        )
            .into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// The status of an index failure (logged here, once), and its `Retry-After` when the upstream
/// is known down.
fn index_status(error: &ApiError, inner: &IndexError, retry_after: &mut Option<u64>) -> StatusCode {
    match inner.root() {
        IndexError::Parse { .. } => {
            error!(error = %error, cause = %source_chain(error), "upstream page unusable");
            StatusCode::BAD_GATEWAY
        }
        IndexError::Upstream {
            source: UpstreamError::CircuitOpen { retry_in_secs, .. },
            ..
        } => {
            warn!(error = %error, cause = %source_chain(error), "upstream known down");
            *retry_after = Some(*retry_in_secs);
            StatusCode::SERVICE_UNAVAILABLE
        }
        IndexError::Upstream {
            source: UpstreamError::Timeout { .. },
            ..
        } => {
            warn!(error = %error, cause = %source_chain(error), "upstream timed out");
            StatusCode::GATEWAY_TIMEOUT
        }
        IndexError::Upstream { .. } | IndexError::Shared(_) => {
            warn!(error = %error, cause = %source_chain(error), "upstream failed");
            StatusCode::BAD_GATEWAY
        }
    }
}
