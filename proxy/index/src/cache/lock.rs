//! One server per cache directory. Two servers on one directory would delete each other's
//! partial downloads at start and race on commits, so the server holds an exclusive lock on
//! `<cache>/wheelgate.lock` (an OS file lock, released by the kernel when the process dies, so a
//! crash never leaves a stale lock) and writes its pid and address into it for the message the
//! second one prints. Leftovers of an earlier run are cleaned only once the lock is held.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside the cache directory.
pub const LOCK_FILE: &str = "wheelgate.lock";

/// Why the cache directory cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the cache directory `{dir}` is in use by another wheelgate ({owner}); stop it, or give this one another --cache-dir"
    )]
    Busy { dir: PathBuf, owner: String },
    #[error("cannot lock the cache directory `{dir}`")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct CacheDirLock {
    _file: File,
}

impl CacheDirLock {
    /// Takes the lock of `dir` for a server listening on `owner` (its address, for the other
    /// server's message), or says who holds it.
    pub fn acquire(dir: &Path, owner: &str) -> Result<CacheDirLock, LockError> {
        let io = |source| LockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let path = dir.join(LOCK_FILE);
        let mut file = super::private::file_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let owner = describe_owner(&text);
                return Err(LockError::Busy {
                    dir: dir.to_path_buf(),
                    owner,
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        // Held: this process's directory now, closed to the host's other users (one an earlier
        // version made is `0755`). One that is not ours to change is said, not fatal.
        if let Err(err) = super::private::close_dir(dir) {
            tracing::warn!(dir = %dir.display(), error = %err, "cannot make the cache directory owner-only; other users of this host may read what it holds");
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "pid={}\naddress={owner}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(CacheDirLock { _file: file })
    }
}

// A real example of this parser's input, the lock file:
// pid=4121
// address=0.0.0.0:3141
fn describe_owner(text: &str) -> String {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    match (field("pid"), field("address")) {
        // A server writes its address; `mirror sync` writes what it is.
        (Some(pid), Some(address)) if address.parse::<std::net::SocketAddr>().is_ok() => {
            format!("pid {pid}, listening on {address}")
        }
        (Some(pid), Some(what)) => format!("pid {pid}, {what}"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => "a process that did not say which".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_and_address() {
        let dir = tempfile::tempdir().unwrap();
        let first = CacheDirLock::acquire(dir.path(), "127.0.0.1:3141").unwrap();
        let err = CacheDirLock::acquire(dir.path(), "127.0.0.1:3142").unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id()))
                && message.contains("127.0.0.1:3141")
                && message.contains("--cache-dir"),
            "{message}"
        );
        drop(first);
        CacheDirLock::acquire(dir.path(), "127.0.0.1:3142").unwrap();
    }

    #[test]
    fn describes_an_owner_from_a_damaged_lock_file() {
        assert_eq!(describe_owner("pid=7\n"), "pid 7");
        assert_eq!(
            describe_owner("garbage"),
            "a process that did not say which"
        );
    }
}
