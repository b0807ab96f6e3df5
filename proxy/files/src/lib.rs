//! wheelgate's file side: the wheels and sdists it serves, and what it reads out of them.
//!
//! - [`cache`]: the file cache: single-flight downloads verified before commit, streamed to
//!   every reader, evicted least recently used, shared through the bucket;
//! - [`derive`]: derived wheels, spliced from an upstream wheel with a rewritten `METADATA`;
//! - [`wheel_metadata`]: a wheel's `METADATA` read by bounded HTTP ranges (derived wheels,
//!   binding and the mirror use it before any file is cached);
//! - [`derived_metadata`]: PEP 658 metadata kept for wheels whose upstream offers none;
//! - [`metadata`]: the core metadata fields resolution reads.

pub mod cache;
pub mod derive;
pub mod derived_metadata;
pub mod metadata;
pub mod wheel_metadata;
