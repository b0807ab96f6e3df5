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

/// Writes `bytes` to `path` whole or not at all, owner-only: a temporary file beside it (a name
/// of its own per write, so two writers of one path never share one), synced, then renamed into
/// place. A reader sees the old file or the new one, never part of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".tmp{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = path.with_file_name(name);
    let written = file_options()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_data()))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn an_atomic_write_is_owner_only_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept");
        super::write_atomically(&path, b"first").unwrap();
        super::write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, super::FILE_MODE, "{mode:o}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
