//! Caches: upstream index pages (short-lived, revalidated) and files (immutable, verified), in a
//! directory one server holds at a time (`lock.rs`).

pub mod derived_metadata;
pub mod files;
pub mod index;
pub mod lock;
pub mod private;
