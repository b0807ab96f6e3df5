//! The upstream indexes: the HTTP client, its circuit breakers, and which upstream owns which
//! project.

mod breaker;
mod client;
mod routing;

pub use breaker::{Admission, BreakerSettings, BreakerView, Breakers, RequestKind};
pub use client::{ClientSettings, PageResponse, UpstreamClient, UpstreamError, Validators, redact};
pub use routing::{Upstream, route};
