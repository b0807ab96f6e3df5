//! Derived wheels: where the proxy changes a wheel's core metadata (a torch pin added to a file
//! bound by its page), it serves a wheel whose own `METADATA` says the same, because pip 26.2
//! and later refuse a wheel whose `METADATA` differs from its PEP 658 `.metadata` file in
//! `Requires-Dist`.
//!
//! - **Planned by ranges**: the upstream wheel's central directory, `METADATA` and `RECORD`
//!   are read with a few ranged requests; the new `METADATA` ([`metadata`]) and `RECORD` (its
//!   `METADATA` line re-hashed) give a layout ([`wheel`]).
//! - **Streamed**: the file cache downloads the upstream wheel once, verifies it against the
//!   page's sha256, and writes the derived bytes as they arrive (a splice), so the first
//!   client is served at the upstream's pace. The derived file is its own cache entry.
//! - **Deterministic**: the same upstream wheel and change give the same bytes on every
//!   replica; its sha256 is listed once a download here has computed it, never before.

pub mod metadata;
pub mod wheel;

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::cache::files::splice::Splice;
use crate::cache::files::{FileCache, FileSpec};
use crate::mirror::wheel_metadata::{Ranged, get_range};
use crate::upstream::UpstreamClient;

use self::wheel::{CentralEntry, EndRecord};

/// The tail read first: the end record and, for most wheels, the whole central directory.
const TAIL: u64 = 256 * 1024;
/// The most `METADATA` or `RECORD` may inflate to (torch's RECORD is about 2 MB).
const MAX_MEMBER: u64 = 64 * 1024 * 1024;
/// Derivations remembered at most; one costs a few ranged reads to plan again.
const REMEMBERED: usize = 4096;

/// A wheel that cannot be derived.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    #[error("cannot read `{file}` by ranges")]
    Read {
        file: String,
        #[source]
        source: crate::mirror::wheel_metadata::WheelMetadataError,
    },
    #[error("`{file}` cannot be derived: {problem}")]
    Zip { file: String, problem: String },
    #[error("cannot read the cached copy of `{file}`")]
    Local {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a derived wheel changes in its core metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `Requires-Dist` lines added (a torch pin: `torch==2.10.*`).
    AddRequirements(Vec<String>),
    /// Every PEP 817 `variant_label` marker decided for this label (which installers other
    /// than variant-aware ones cannot parse).
    DecideVariantLabel(String),
    /// The requirements behind these extras (`device-gfx942`) made unconditional.
    RequireExtras(Vec<String>),
}

impl Change {
    /// The new `METADATA` from the upstream's.
    pub fn apply(&self, metadata: &[u8]) -> Vec<u8> {
        match self {
            Change::AddRequirements(requirements) => {
                metadata::with_requirements(metadata, requirements)
            }
            Change::DecideVariantLabel(label) => {
                wheelgate_resolver::variants::decide_variant_label(
                    &String::from_utf8_lossy(metadata),
                    label,
                )
                .into_bytes()
            }
            Change::RequireExtras(extras) => metadata::with_extras_required(metadata, extras),
        }
    }

    fn key(&self) -> String {
        match self {
            Change::AddRequirements(requirements) => format!("+{}", requirements.join(";")),
            Change::DecideVariantLabel(label) => format!("variant_label={label}"),
            Change::RequireExtras(extras) => format!("extras={}", extras.join("+")),
        }
    }
}

/// A derived wheel: its cache spec (the upstream file, spliced) and its `METADATA`.
#[derive(Debug)]
pub struct Derivation {
    pub spec: FileSpec,
    /// The derived `METADATA`, served as the file's `.metadata`.
    pub metadata: Bytes,
    /// Whether the change changed anything: when not, the upstream's file is served as it is.
    pub changed: bool,
}

/// Derivations by upstream identity and change.
#[derive(Debug, Default)]
pub struct Derivations(Mutex<HashMap<String, Arc<Derivation>>>);

impl Derivations {
    /// The derivation of `upstream` (the wheel `filename`) with `change`, planned once and
    /// remembered: from `files`' copy of the upstream wheel when it holds one (offline too),
    /// else by ranged requests upstream.
    pub async fn get(
        &self,
        (client, files): (&UpstreamClient, &FileCache),
        upstream: &FileSpec,
        filename: &str,
        change: &Change,
    ) -> Result<Arc<Derivation>, DeriveError> {
        let key = memo_key(upstream, change);
        if let Some(known) = self.lock().get(&key) {
            return Ok(Arc::clone(known));
        }
        let source = match files.committed_path(upstream) {
            Some(path) => Source::Local(path),
            None => Source::Upstream(client),
        };
        let derivation = Arc::new(derive(source, upstream, filename, change).await?);
        let mut memo = self.lock();
        if memo.len() >= REMEMBERED {
            memo.clear();
        }
        memo.insert(key, Arc::clone(&derivation));
        Ok(derivation)
    }

    /// The derivation of `upstream` with `change`, when it was planned already.
    pub fn known(&self, upstream: &FileSpec, change: &Change) -> Option<Arc<Derivation>> {
        self.lock().get(&memo_key(upstream, change)).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Derivation>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn memo_key(upstream: &FileSpec, change: &Change) -> String {
    format!(
        "{} {}",
        upstream.sha256.as_deref().unwrap_or(&upstream.url),
        change.key()
    )
}

/// Where a wheel's parts are read from.
pub enum Source<'a> {
    /// Ranged requests to its URL.
    Upstream(&'a UpstreamClient),
    /// A complete copy on local disk (the file cache's).
    Local(PathBuf),
}

/// Plans the derived wheel of `upstream` with `change` made to its metadata.
pub async fn derive(
    source: Source<'_>,
    upstream: &FileSpec,
    filename: &str,
    change: &Change,
) -> Result<Derivation, DeriveError> {
    let zip_error = |problem: String| DeriveError::Zip {
        file: filename.to_string(),
        problem,
    };
    let mut reader = RangeReader {
        source,
        url: &upstream.url,
        file: filename,
        whole: None,
    };
    let (tail, tail_start) = reader.read(Span::Suffix(TAIL)).await?;
    let end = wheel::end_record(&tail).map_err(zip_error)?;
    let directory = reader
        .slice_or_read(&tail, tail_start, end.directory_offset, end.directory_size)
        .await?;
    let entries = wheel::central_entries(&directory).map_err(zip_error)?;
    let metadata_name = wheel::dist_info_member(&entries, "METADATA")
        .ok_or_else(|| zip_error("no top-level `*.dist-info/METADATA`".into()))?
        .to_string();
    let original = reader.member(&entries, &end, &metadata_name).await?;
    let metadata = change.apply(&original);
    if metadata == original {
        return Ok(Derivation {
            spec: upstream.clone(),
            metadata: Bytes::from(metadata),
            changed: false,
        });
    }
    let mut replaced = BTreeMap::new();
    if let Some(record_name) = wheel::dist_info_member(&entries, "RECORD") {
        let record_name = record_name.to_string();
        let record = reader.member(&entries, &end, &record_name).await?;
        replaced.insert(
            record_name,
            with_record_line(&record, &metadata_name, &metadata),
        );
    }
    replaced.insert(metadata_name, metadata.clone());
    let layout = wheel::plan(&entries, &end, &replaced).map_err(zip_error)?;
    Ok(Derivation {
        spec: FileSpec {
            splice: Some(Splice::new(layout.segments, layout.len)),
            ..upstream.clone()
        },
        metadata: Bytes::from(metadata),
        changed: true,
    })
}

/// `record` with the line of `name` naming `content`'s hash and size (PEP 376/427: urlsafe
/// base64 of the sha256, unpadded).
fn with_record_line(record: &[u8], name: &str, content: &[u8]) -> Vec<u8> {
    let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(content));
    let line = format!("{name},sha256={hash},{}", content.len());
    let text = String::from_utf8_lossy(record);
    let mut out = String::with_capacity(text.len() + 64);
    for piece in text.split_inclusive('\n') {
        let body = piece.trim_end_matches(['\r', '\n']);
        if body.split(',').next() == Some(name) {
            out.push_str(&line);
            out.push_str(&piece[body.len()..]);
        } else {
            out.push_str(piece);
        }
    }
    out.into_bytes()
}

/// Which bytes of a file to read.
#[derive(Debug, Clone, Copy)]
enum Span {
    /// The last so many.
    Suffix(u64),
    /// `len` bytes from `offset` (`len` > 0).
    At { offset: u64, len: u64 },
}

/// Ranged reads of one upstream file, or slices of it once a server answered a range with
/// the whole file.
struct RangeReader<'a> {
    source: Source<'a>,
    url: &'a str,
    file: &'a str,
    whole: Option<Vec<u8>>,
}

impl RangeReader<'_> {
    /// The bytes of `span` and where they start.
    async fn read(&mut self, span: Span) -> Result<(Vec<u8>, u64), DeriveError> {
        if let Some(whole) = &self.whole {
            return Ok((whole.clone(), 0));
        }
        let client = match &self.source {
            Source::Upstream(client) => *client,
            Source::Local(path) => {
                return read_local(path.clone(), span)
                    .await
                    .map_err(|source| DeriveError::Local {
                        file: self.file.to_string(),
                        source,
                    });
            }
        };
        let range = match span {
            Span::Suffix(len) => format!("bytes=-{len}"),
            Span::At { offset, len } => format!("bytes={offset}-{}", offset + len - 1),
        };
        match get_range(client, self.url, &range)
            .await
            .map_err(|source| DeriveError::Read {
                file: self.file.to_string(),
                source,
            })? {
            Ranged::Part { bytes, start } => Ok((bytes, start)),
            Ranged::Whole(bytes) => {
                self.whole = Some(bytes.clone());
                Ok((bytes, 0))
            }
        }
    }

    /// `len` bytes at `offset`: from `held` (read from `held_start`) when it has them.
    async fn slice_or_read(
        &mut self,
        held: &[u8],
        held_start: u64,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, DeriveError> {
        if let Some(bytes) = slice(held, held_start, offset, len) {
            return Ok(bytes.to_vec());
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        let (bytes, start) = self.read(Span::At { offset, len }).await?;
        slice(&bytes, start, offset, len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| DeriveError::Zip {
                file: self.file.to_string(),
                problem: format!(
                    "the upstream answered a range of {} bytes at {start}",
                    bytes.len()
                ),
            })
    }

    /// The inflated content of the member `name`.
    async fn member(
        &mut self,
        entries: &[CentralEntry],
        end: &EndRecord,
        name: &str,
    ) -> Result<Vec<u8>, DeriveError> {
        let zip_error = |problem: String| DeriveError::Zip {
            file: self.file.to_string(),
            problem,
        };
        let entry = entries
            .iter()
            .find(|e| e.name == name)
            .expect("a member of the directory");
        if entry.size() > MAX_MEMBER {
            return Err(zip_error(format!("`{name}` of {} bytes", entry.size())));
        }
        let span = wheel::member_end(entries, entry, end) - entry.local_offset;
        let bytes = self.slice_or_read(&[], 0, entry.local_offset, span).await?;
        let start = wheel::local_data_offset(&bytes)
            .and_then(|at| usize::try_from(at).ok())
            .ok_or_else(|| zip_error(format!("a bad local header for `{name}`")))?;
        let data = usize::try_from(entry.compressed_size())
            .ok()
            .and_then(|len| bytes.get(start..start + len))
            .ok_or_else(|| zip_error(format!("`{name}` runs past its member")))?;
        match entry.method() {
            0 => Ok(data.to_vec()),
            8 => {
                let mut out = Vec::new();
                flate2::read::DeflateDecoder::new(data)
                    .take(MAX_MEMBER)
                    .read_to_end(&mut out)
                    .map_err(|err| zip_error(format!("`{name}` does not inflate ({err})")))?;
                Ok(out)
            }
            method => Err(zip_error(format!(
                "`{name}` uses compression method {method} (only stored and deflate are read)"
            ))),
        }
    }
}

/// `span` of the file at `path` and where it starts, read in place.
async fn read_local(path: PathBuf, span: Span) -> std::io::Result<(Vec<u8>, u64)> {
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt as _;
        let file = std::fs::File::open(&path)?;
        let size = file.metadata()?.len();
        let (offset, len) = match span {
            Span::Suffix(len) => (size.saturating_sub(len), len.min(size)),
            Span::At { offset, len } => (offset, len),
        };
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{len} bytes at {offset} of a {size}-byte file"),
            ));
        }
        let mut bytes = vec![0; usize::try_from(len).map_err(std::io::Error::other)?];
        file.read_exact_at(&mut bytes, offset)?;
        Ok((bytes, offset))
    })
    .await
    .map_err(std::io::Error::other)?
}

fn slice(held: &[u8], held_start: u64, offset: u64, len: u64) -> Option<&[u8]> {
    let from = usize::try_from(offset.checked_sub(held_start)?).ok()?;
    let to = from.checked_add(usize::try_from(len).ok()?)?;
    held.get(from..to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_line_of_metadata_is_rehashed() {
        let record = b"pkg/__init__.py,sha256=abc,3\r\npkg-1.0.dist-info/METADATA,sha256=old,10\r\npkg-1.0.dist-info/RECORD,,\r\n";
        let out = with_record_line(record, "pkg-1.0.dist-info/METADATA", b"new");
        let text = String::from_utf8(out).unwrap();
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(b"new"));
        assert_eq!(
            text,
            format!(
                "pkg/__init__.py,sha256=abc,3\r\npkg-1.0.dist-info/METADATA,sha256={hash},3\r\npkg-1.0.dist-info/RECORD,,\r\n"
            )
        );
    }
}
