//! Every file a probe reads goes through a [`Sysroot`]: a directory standing for `/`
//! (`WHEELGATE_SYSROOT`, default `/`), so tests and image builds can describe a machine from a
//! tree of captured sysfs/procfs files instead of the host.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Largest file a probe reads. Kernel attribute files are a few bytes; `/proc/cpuinfo` on a
/// many-core machine is large, and only its head is needed, so reads stop here instead of
/// growing without bound on a garbage or special file.
pub const MAX_READ: u64 = 256 * 1024;

/// Why a file could not be read. Every variant is a normal outcome on some machine.
#[derive(Debug, thiserror::Error)]
pub enum SysrootError {
    #[error("`{0}` does not exist")]
    /// The path does not exist; holds the machine path.
    NotFound(String),
    #[error("`{0}`: permission denied")]
    /// The path cannot be read for lack of permission; holds the machine path.
    PermissionDenied(String),
    #[error("`{0}` is not a regular file")]
    /// The path is a directory or other non-file; holds the machine path.
    NotAFile(String),
    #[error("`{0}` is empty")]
    /// The file holds only whitespace or NUL bytes; holds the machine path.
    Empty(String),
    #[error("`{0}` is not UTF-8 text")]
    /// The file is not UTF-8 text; holds the machine path.
    NotText(String),
    #[error("`{path}` could not be read")]
    /// Any other I/O error.
    Io {
        /// The machine path.
        path: String,
        #[source]
        /// The I/O error.
        source: io::Error,
    },
}

impl SysrootError {
    /// Sorts an I/O error into the variant a person reads best.
    pub fn from_io(path: &str, error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
                SysrootError::NotFound(path.to_string())
            }
            io::ErrorKind::PermissionDenied => SysrootError::PermissionDenied(path.to_string()),
            _ => SysrootError::Io {
                path: path.to_string(),
                source: error,
            },
        }
    }
}

/// A directory that stands for the machine's `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysroot {
    root: PathBuf,
}

impl Sysroot {
    /// A sysroot at `root`; `/` is the running machine.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Sysroot { root: root.into() }
    }

    /// The directory standing for `/`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this is the running machine's own `/` (only then may probes load GPU
    /// libraries or ask the CPU itself: those would describe the host, not the tree).
    pub fn is_host(&self) -> bool {
        self.root == Path::new("/")
    }

    /// The real path of an absolute machine path (`/sys/module/nvidia/version`).
    pub fn resolve(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Reads a small text file, trimmed of surrounding whitespace and NUL bytes (device-tree
    /// strings end in NUL). Special files are refused before they are opened, so a FIFO planted
    /// in a tree cannot block the probe.
    pub fn read(&self, path: &str) -> Result<String, SysrootError> {
        let bytes = self.read_bytes(path, MAX_READ)?;
        let text = String::from_utf8(bytes).map_err(|_| SysrootError::NotText(path.into()))?;
        let trimmed = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        if trimmed.is_empty() {
            return Err(SysrootError::Empty(path.into()));
        }
        Ok(trimmed.to_string())
    }

    /// Reads at most `limit` bytes of a regular file.
    pub fn read_bytes(&self, path: &str, limit: u64) -> Result<Vec<u8>, SysrootError> {
        let real = self.resolve(path);
        let meta = fs::metadata(&real).map_err(|e| SysrootError::from_io(path, e))?;
        if !meta.is_file() {
            return Err(SysrootError::NotAFile(path.into()));
        }
        let file = fs::File::open(&real).map_err(|e| SysrootError::from_io(path, e))?;
        let mut bytes = Vec::with_capacity(256);
        file.take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| SysrootError::from_io(path, e))?;
        Ok(bytes)
    }

    /// Whether a path exists (any file type: device nodes count).
    pub fn exists(&self, path: &str) -> bool {
        fs::symlink_metadata(self.resolve(path)).is_ok()
    }

    /// The entry names of a directory, sorted; a missing directory is an error.
    pub fn list(&self, path: &str) -> Result<Vec<String>, SysrootError> {
        let entries =
            fs::read_dir(self.resolve(path)).map_err(|e| SysrootError::from_io(path, e))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_machine_paths_under_the_root() {
        let root = Sysroot::new("/tmp/fake");
        assert_eq!(
            root.resolve("/sys/module/nvidia/version"),
            Path::new("/tmp/fake/sys/module/nvidia/version")
        );
        assert!(Sysroot::new("/").is_host());
        assert!(!root.is_host());
    }

    #[test]
    fn sorts_io_errors() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(matches!(
            SysrootError::from_io("/x", denied),
            SysrootError::PermissionDenied(_)
        ));
        let gone = io::Error::from(io::ErrorKind::NotFound);
        assert!(matches!(
            SysrootError::from_io("/x", gone),
            SysrootError::NotFound(_)
        ));
    }
}
