//! What a failed file or page says in a sync's report: the error with its causes on one line,
//! and a hint when the disk is full.

use std::io;

/// A file or page that did not make it into the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The file name or page URL.
    pub what: String,
    pub message: String,
}

/// An error with its causes on one line, and a hint when the disk is full.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut hint = String::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = current {
        if let Some(io_error) = cause.downcast_ref::<io::Error>()
            && hint.is_empty()
        {
            hint = disk_hint(io_error);
        }
        if let Some(next) = cause.source() {
            let next_text = next.to_string();
            if !text.ends_with(&next_text) {
                text.push_str(": ");
                text.push_str(&next_text);
            }
        }
        current = cause.source();
    }
    text + &hint
}

/// A hint for the errors a full disk (or a file-size limit) gives.
pub fn disk_hint(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::StorageFull
        | io::ErrorKind::FileTooLarge
        | io::ErrorKind::QuotaExceeded => {
            " (the disk is full: free space or choose another --store, then run the same command again; committed files are kept and skipped)".to_string()
        }
        _ => String::new(),
    }
}
