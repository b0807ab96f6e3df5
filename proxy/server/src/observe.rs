//! Request metrics: every answered request counted by route and status, the body bytes each
//! route sends, and the responses still streaming (`count`, called by the listener); and the
//! `/metrics` route.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http_body::{Frame, SizeHint};

use wheelgate_index::metrics::{CacheGauges, Metrics, Route};

use super::state::AppState;

/// `/metrics` in the Prometheus text format.
pub fn routes() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

async fn metrics(State(state): State<AppState>) -> Response {
    let gauges = CacheGauges {
        files: state.files.len() as u64,
        bytes: state.files.total_bytes(),
        limit: state.config.cache_max_bytes,
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        {
            let mut text = state.metrics.render(
                gauges,
                &state.client.breakers().views(),
                &crate::build_info::LABELS,
            );
            state.source_counters.render(&state.sources, &mut text);
            wheelgate_index::metrics::render_catalog(&mut text, state.catalog());
            text
        },
    )
        .into_response()
}

/// Counts an answered request of `route` by its status, and wraps its body so that its bytes
/// and its end are counted too. The listener calls it for every request the router answers
/// (`listener.rs`), rather than a middleware layer, which cost a few per cent of a warm page's
/// CPU.
pub fn count(metrics: &Arc<Metrics>, route: Route, response: Response) -> Response {
    metrics.request(route, response.status().as_u16());
    let (parts, body) = response.into_parts();
    metrics.in_flight(route, 1);
    let body = Body::new(Counted {
        inner: body,
        metrics: Arc::clone(metrics),
        route,
    });
    Response::from_parts(parts, body)
}

/// A response body that counts its bytes and, when dropped (sent, or the client went away),
/// leaves the in-flight gauge.
struct Counted {
    inner: Body,
    metrics: Arc<Metrics>,
    route: Route,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.metrics.in_flight(self.route, -1);
    }
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.metrics.bytes_sent(this.route, data.len() as u64);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
