//! Errors of request handlers and the one place they become HTTP status codes. Internals go to
//! the log; the client gets a short text that names the problem.

use crate::error_chain::source_chain;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tracing::{error, warn};

use crate::cache::index::IndexError;

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
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            ApiError::Upstream(IndexError::Parse { .. }) => {
                error!(error = %self, cause = %source_chain(&self), "upstream page unusable");
                StatusCode::BAD_GATEWAY
            }
            ApiError::Upstream(_) => {
                warn!(error = %self, cause = %source_chain(&self), "upstream failed");
                StatusCode::BAD_GATEWAY
            }
        };
        let text = match &self {
            ApiError::Upstream(inner) => format!("{inner}\n"),
            other => format!("{other}\n"),
        };
        (
            status,
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )],
            text,
        )
            .into_response()
    }
}
