//! Everything a cache or store keeps is its owner's alone: a company's private packages and
//! index pages are no business of the host's other users (issue 41 item 4). Directories are
//! made `0700` and files `0600` from their first write, whatever the umask; a cache directory an
//! earlier version made `0755` is closed when a server or sync takes it, which alone keeps
//! everyone else out of what lies beneath.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// Mode of every directory a cache or store makes.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file a cache or store writes.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents, each owner-only.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Makes the directory `dir` owner-only (a cache directory an earlier version made).
pub fn close_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
}

/// Options that create a file owner-only (add `write`, `create` and the rest as needed).
pub fn file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}
