//! The file cache (immutable, verified files) and the core metadata derived from its wheels;
//! index pages and the shared cache directory are `wheelgate_index::cache`.

pub mod derived_metadata;
pub mod files;
