//! The upstream indexes: the HTTP client, and which upstream owns which project.

mod client;
mod routing;

pub use client::{ClientSettings, PageResponse, UpstreamClient, UpstreamError, Validators, redact};
pub use routing::{Upstream, route};
