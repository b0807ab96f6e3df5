//! The upstream indexes: the HTTP client, its circuit breakers and the access settings of
//! private upstreams (which source owns which project is `crate::sources`, which reads its access here).

mod access;
mod arriving_text;

pub use arriving_text::ArrivingText;
mod breaker;
mod client;
mod transport;

pub use access::{AccessError, OriginAccess, SourceAccess, UrlCredentials, resolve_sources};

pub use crate::metrics::{BreakerView, RequestKind};
pub use breaker::{Admission, BreakerSettings, Breakers};
pub use client::{
    BodyReader, ClientSettings, PageBody, PageResponse, UpstreamClient, UpstreamError, Validators,
    redact,
};
