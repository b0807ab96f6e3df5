//! The upstream indexes: the HTTP client, its circuit breakers, the access settings of private
//! upstreams, and which upstream owns which project.

mod access;
mod breaker;
mod client;
mod routing;
mod transport;

pub use access::{AccessError, OriginAccess, resolve as resolve_access, resolve_sections};

pub use breaker::{Admission, BreakerSettings, BreakerView, Breakers, RequestKind};
pub use client::{ClientSettings, PageResponse, UpstreamClient, UpstreamError, Validators, redact};
pub use routing::{Upstream, route};
