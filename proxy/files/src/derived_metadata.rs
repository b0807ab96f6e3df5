//! PEP 658 metadata for wheels whose upstream offers none (a registry mirror, Artifactory and
//! Nexus remotes): read once from the wheel after the file cache verified it against its page's
//! sha256, and kept under `<cache_dir>/metadata/<wheel sha256>.metadata`, so every later
//! resolution by any client reads kilobytes instead of the whole wheel.
//!
//! Only verified bytes: the wheel is read where the file cache committed it, never by ranges
//! from the upstream (which nothing checks). The key is the wheel's own sha256, so a copy is
//! right for every page and source that lists that wheel, and a different wheel under the same
//! name has a different key.

use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use crate::derive::wheel::{central_entries, dist_info_member, end_record, local_data_offset};

/// The most a `METADATA` member may be: the limit of every core metadata file the server reads
/// or serves. Real ones are a few KiB to a few hundred KiB.
pub const MAX_METADATA_BYTES: u64 = crate::cache::CORE_METADATA_LIMIT as u64;
/// The tail read first: the end record and, for most wheels, the whole central directory.
const TAIL: u64 = 256 * 1024;
/// The largest central directory read (torch's has about 13,000 entries, 1.3 MB).
const MAX_DIRECTORY: u64 = 64 * 1024 * 1024;

/// Derived metadata kept on disk, one file per wheel.
#[derive(Debug, Clone)]
pub struct MetadataStore {
    dir: PathBuf,
}

/// Why a wheel's metadata cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum DerivedMetadataError {
    #[error("`{file}` is not a wheel whose METADATA can be read: {problem}")]
    Wheel { file: String, problem: String },
    #[error("cannot read `{file}` from the cache")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

impl MetadataStore {
    /// The store under `cache_dir/metadata/`, created owner-only when missing.
    pub fn open(cache_dir: &Path) -> std::io::Result<MetadataStore> {
        let dir = cache_dir.join("metadata");
        wheelgate_index::cache::private::create_dir(&dir)?;
        Ok(MetadataStore { dir })
    }

    /// The kept metadata of the wheel whose sha256 is `sha256`, if any.
    pub async fn get(&self, sha256: &str) -> Option<Vec<u8>> {
        let path = self.path_for(sha256)?;
        tokio::fs::read(path).await.ok()
    }

    /// Keeps `metadata` for the wheel `sha256`, written atomically (a reader never sees part of
    /// it). A failure is logged; the next request reads the wheel again.
    pub async fn put(&self, sha256: &str, metadata: Vec<u8>) {
        let Some(path) = self.path_for(sha256) else {
            return;
        };
        let written = tokio::task::spawn_blocking(move || {
            wheelgate_index::cache::private::write_atomically(&path, &metadata)
        })
        .await
        .map_err(std::io::Error::other)
        .flatten();
        if let Err(err) = written {
            tracing::warn!(sha256, error = %err, "could not keep a wheel's derived metadata");
        }
    }

    /// The path for `sha256`; `None` for anything but 64 hex digits (never a path of a client's
    /// choosing).
    fn path_for(&self, sha256: &str) -> Option<PathBuf> {
        let hex = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then(|| {
            self.dir
                .join(format!("{}.metadata", sha256.to_ascii_lowercase()))
        })
    }
}

/// The top-level `*.dist-info/METADATA` of the wheel at `path` (named `file` in messages), read
/// in place: the end record, the central directory, then the one member. Refuses, never
/// truncates: a member over [`MAX_METADATA_BYTES`], one that inflates to another size than the
/// directory says, a ZIP64 wheel.
pub fn read_wheel_metadata(path: &Path, file: &str) -> Result<Vec<u8>, DerivedMetadataError> {
    let wheel_error = |problem: String| DerivedMetadataError::Wheel {
        file: file.to_string(),
        problem,
    };
    let io_error = |source| DerivedMetadataError::Io {
        file: file.to_string(),
        source,
    };
    let handle = std::fs::File::open(path).map_err(io_error)?;
    let size = handle.metadata().map_err(io_error)?.len();
    let read = |offset: u64, len: u64| -> Result<Vec<u8>, DerivedMetadataError> {
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(wheel_error(format!(
                "{len} bytes at {offset} lie past its end ({size} bytes)"
            )));
        }
        let mut bytes = vec![0; usize::try_from(len).map_err(|_| wheel_error("size".into()))?];
        handle.read_exact_at(&mut bytes, offset).map_err(io_error)?;
        Ok(bytes)
    };
    let tail_len = size.min(TAIL);
    let tail = read(size - tail_len, tail_len)?;
    let end = end_record(&tail).map_err(wheel_error)?;
    if end.directory_size > MAX_DIRECTORY {
        return Err(wheel_error(format!(
            "a central directory of {} bytes",
            end.directory_size
        )));
    }
    let directory = read(end.directory_offset, end.directory_size)?;
    let entries = central_entries(&directory).map_err(wheel_error)?;
    let name = dist_info_member(&entries, "METADATA")
        .ok_or_else(|| wheel_error("no top-level `*.dist-info/METADATA` member".into()))?;
    let entry = entries
        .iter()
        .find(|e| e.name == name)
        .expect("a member of the directory");
    if entry.size() > MAX_METADATA_BYTES || entry.compressed_size() > MAX_METADATA_BYTES {
        return Err(wheel_error(format!(
            "its METADATA is {} bytes, over the limit of {MAX_METADATA_BYTES}",
            entry.size()
        )));
    }
    let header = read(entry.local_offset, 30)?;
    let start = entry.local_offset
        + local_data_offset(&header)
            .ok_or_else(|| wheel_error(format!("a bad local header for `{name}`")))?;
    let data = read(start, entry.compressed_size())?;
    let content = match entry.method() {
        0 => data,
        8 => {
            let mut out = Vec::new();
            flate2::read::DeflateDecoder::new(&data[..])
                .take(MAX_METADATA_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|err| wheel_error(format!("`{name}` does not inflate ({err})")))?;
            out
        }
        method => {
            return Err(wheel_error(format!(
                "`{name}` uses compression method {method} (only stored and deflate are read)"
            )));
        }
    };
    if content.len() as u64 != entry.size() {
        return Err(wheel_error(format!(
            "`{name}` inflates to {} bytes where its directory says {}",
            content.len(),
            entry.size()
        )));
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// A wheel written by the `zip` crate's stored writer, plus a deflated METADATA written by
    /// hand would need more; stored members are what the reader must handle first.
    fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in members {
            zip.start_file(*name, options).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
        out.into_inner()
    }

    fn on_disk(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn reads_the_top_level_metadata_member() {
        let metadata = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: six\n";
        let file = on_disk(&wheel(&[
            ("demo/__init__.py", b"x = 1\n"),
            ("demo/sub.dist-info/METADATA", b"not this one"),
            ("demo-1.0.dist-info/METADATA", metadata),
            ("demo-1.0.dist-info/RECORD", b""),
        ]));
        assert_eq!(
            read_wheel_metadata(file.path(), "demo-1.0-py3-none-any.whl").unwrap(),
            metadata
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_faithfully() {
        let none = on_disk(&wheel(&[("demo/__init__.py", b"")]));
        let err = read_wheel_metadata(none.path(), "demo.whl").unwrap_err();
        assert!(err.to_string().contains("no top-level"), "{err}");
        let garbage = on_disk(b"not a zip at all");
        let err = read_wheel_metadata(garbage.path(), "demo.whl").unwrap_err();
        assert!(
            err.to_string().contains("no end of central directory"),
            "{err}"
        );
        // A directory that understates the member's size: refused, not truncated.
        let mut bytes = wheel(&[("demo-1.0.dist-info/METADATA", b"Name: demo\n")]);
        let central = bytes
            .windows(4)
            .rposition(|w| w == [0x50, 0x4b, 0x01, 0x02])
            .unwrap();
        bytes[central + 24] = 3; // uncompressed size
        let lying = on_disk(&bytes);
        let err = read_wheel_metadata(lying.path(), "demo.whl").unwrap_err();
        assert!(
            err.to_string().contains("where its directory says 3"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn the_store_keeps_by_sha256_owner_only_and_refuses_other_keys() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = MetadataStore::open(dir.path()).unwrap();
        let sha = "ab".repeat(32);
        assert_eq!(store.get(&sha).await, None);
        store.put(&sha, b"Name: demo\n".to_vec()).await;
        assert_eq!(store.get(&sha).await.unwrap(), b"Name: demo\n");
        let mode = std::fs::metadata(dir.path().join("metadata").join(format!("{sha}.metadata")))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        store.put("../../etc/passwd", b"x".to_vec()).await;
        assert_eq!(store.get("../../etc/passwd").await, None);
    }
}
