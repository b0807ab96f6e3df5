//! What the index side keeps: upstream index pages (short-lived, revalidated), the bucket that
//! replicas share pages and files through, and the cache directory one server holds at a time
//! (`lock.rs`), owner-only (`private.rs`). The file cache is `wheelgate_files::cache`.

pub mod bucket;
pub mod index;
pub mod lock;
pub mod private;
pub mod read_at;
