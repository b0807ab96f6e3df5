//! Caches: upstream index pages (short-lived, revalidated) and files (immutable, verified).

pub mod files;
pub mod index;
