//! The upstream indexes: the HTTP client, its circuit breakers and the access settings of
//! private upstreams (which source owns which project is `crate::sources`).

mod access;
mod arriving_text;

pub use arriving_text::ArrivingText;
mod breaker;
mod client;
mod transport;

pub use access::{AccessError, OriginAccess, resolve as resolve_access, resolve_sources};

pub use breaker::{Admission, BreakerSettings, BreakerView, Breakers, RequestKind};
pub use client::{
    BodyReader, ClientSettings, PageBody, PageResponse, UpstreamClient, UpstreamError, Validators,
    redact,
};
