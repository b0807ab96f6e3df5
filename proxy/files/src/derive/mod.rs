//! Derived wheels: where the proxy changes a wheel's core metadata (a torch pin added to a file
//! bound by its page), it serves a wheel whose own `METADATA` says the same, because pip 26.2
//! and later refuse a wheel whose `METADATA` differs from its PEP 658 `.metadata` file in
//! `Requires-Dist`.
//!
//! - **Planned by ranges**: the upstream wheel's central directory, `METADATA` and `RECORD`
//!   are read with a few ranged requests; the new `METADATA` ([`metadata`]) and `RECORD` (its
//!   `METADATA` line re-hashed: [`record`]) give a layout ([`wheel`]). A new version
//!   ([`Change::PlainVersion`]) also renames the `.dist-info` and `.data` directories, whose
//!   members are read and written under their new names ([`rename`]).
//! - **Streamed**: the file cache downloads the upstream wheel once, verifies it against the
//!   page's sha256, and writes the derived bytes as they arrive (a splice), so the first
//!   client is served at the upstream's pace. The derived file is its own cache entry.
//! - **Deterministic**: the same upstream wheel and change give the same bytes on every
//!   replica; its sha256 is listed once a download here has computed it, never before.
//! - **Bounded**: each ranged read stops at the bytes asked for (`mirror/wheel_metadata.rs`);
//!   the central directory, `METADATA` (the limit of a served `.metadata`) and `RECORD` are
//!   refused past their limits before they are read, and a member that does not inflate to
//!   exactly what its central directory says (size and CRC-32) is refused, never truncated.
//!   Concurrent requests for one derivation share one plan.

pub mod metadata;
mod range_reader;
pub mod record;
pub mod rename;
pub mod wheel;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::cache::splice::{Segment, Splice};
use crate::cache::{FileCache, FileSpec};
use crate::wheel_metadata::Span;
use wheelgate_index::upstream::UpstreamClient;

use self::range_reader::RangeReader;
use self::record::{with_paths_moved, with_record_line};
use self::rename::Moves;
use self::wheel::{CentralEntry, EndRecord, Replacement};

/// The tail read first: the end record and, for most wheels, the whole central directory.
const TAIL: u64 = 256 * 1024;
/// The most `METADATA` may inflate to: the limit of a core metadata file the server reads or
/// serves, since the derived one is served as the wheel's `.metadata`.
pub const MAX_METADATA: u64 = crate::cache::CORE_METADATA_LIMIT as u64;
/// The most `RECORD` may inflate to (torch's is about 2 MB): it is held, rewritten, with the
/// plan.
pub const MAX_RECORD: u64 = 16 * 1024 * 1024;
/// The most a central directory may be (torch's, of about 13,000 entries, is 1.3 MB).
pub const MAX_DIRECTORY: u64 = 64 * 1024 * 1024;
/// A local header's most: its fixed part, then a name and an extra field of 64 KiB each.
const MAX_LOCAL_HEADER: u64 = 30 + 2 * 0xFFFF;
/// Derivations remembered at most; one costs a few ranged reads to plan again.
const REMEMBERED: usize = 4096;
/// The most bytes the remembered derivations may hold (their `METADATA`, and the members the
/// plan writes): past it they are forgotten, as past [`REMEMBERED`].
const REMEMBERED_BYTES: usize = 128 * 1024 * 1024;

/// How long a refused wheel is answered as refused without being read again.
const REFUSED_FOR: std::time::Duration = std::time::Duration::from_hours(1);

/// A wheel that cannot be derived.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    #[error("cannot read `{file}` by ranges")]
    Read {
        file: String,
        #[source]
        source: crate::wheel_metadata::WheelMetadataError,
    },
    #[error("`{file}` cannot be derived: {problem}")]
    Zip { file: String, problem: String },
    #[error("cannot read the cached copy of `{file}`")]
    Local {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The failure of a plan shared by several requests.
    #[error(transparent)]
    Shared(Arc<DeriveError>),
}

impl DeriveError {
    /// Whether asking again changes nothing: the wheel itself cannot be derived faithfully (its
    /// layout or content), or its host does not answer ranges (then only a cached copy can be
    /// derived); a read that failed may succeed next time.
    pub fn is_refusal(&self) -> bool {
        use crate::wheel_metadata::WheelMetadataError as Read;
        match self {
            DeriveError::Zip { .. } => true,
            DeriveError::Read { source, .. } => matches!(
                source,
                Read::Zip { .. } | Read::RangeIgnored { .. } | Read::RangeOverrun { .. }
            ),
            DeriveError::Local { .. } => false,
            DeriveError::Shared(inner) => inner.is_refusal(),
        }
    }
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
    /// The version in the wheel renamed to this one (its local label dropped: `2.9.0+cpu`
    /// served as `2.9.0`), so a universal lock finds each platform's build under the plain
    /// version: `METADATA`'s `Version`, and the `.dist-info` and `.data` directories' names
    /// (uv checks the first against the file's name and reads the installed version from the
    /// second).
    PlainVersion(String),
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
            Change::PlainVersion(version) => metadata::with_version(metadata, version),
        }
    }

    fn key(&self) -> String {
        match self {
            Change::AddRequirements(requirements) => format!("+{}", requirements.join(";")),
            Change::DecideVariantLabel(label) => format!("variant_label={label}"),
            Change::RequireExtras(extras) => format!("extras={}", extras.join("+")),
            Change::PlainVersion(version) => format!("version={version}"),
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

/// A plan's outcome, as every request that waited for it sees it.
type Planned = Result<Arc<Derivation>, Arc<DeriveError>>;

/// Derivations by upstream identity and change, and those being planned.
#[derive(Debug, Default)]
pub struct Derivations {
    known: Mutex<Memo>,
    /// Plans in flight: a request for one while it runs waits for it (single flight) rather
    /// than reading the wheel's parts again. Removed once done: a failed plan is tried again
    /// by the next request.
    planning: Mutex<HashMap<String, Arc<tokio::sync::OnceCell<Planned>>>>,
    /// Wheels refused ([`DeriveError::is_refusal`]), with when: a page that lists one asks for
    /// its plan on every request, and is answered from here for [`REFUSED_FOR`].
    refused: Mutex<HashMap<String, (Arc<DeriveError>, std::time::Instant)>>,
}

impl Derivations {
    /// The derivation of `upstream` (the wheel `filename`) with `change`, planned once and
    /// remembered: from `files`' copy of the upstream wheel when it holds one (offline too),
    /// else by ranged requests upstream. Concurrent requests for the same derivation share one
    /// plan; if the request planning it goes away, a waiting one takes it over.
    pub async fn get(
        &self,
        (client, files): (&UpstreamClient, &FileCache),
        upstream: &FileSpec,
        filename: &str,
        change: &Change,
    ) -> Result<Arc<Derivation>, DeriveError> {
        let key = memo_key(upstream, change);
        if let Some(known) = self.memo().map.get(&key) {
            return Ok(Arc::clone(known));
        }
        // Not for a wheel cached here since: its copy is read, whatever its host does.
        if files.committed_path(upstream).is_none()
            && let Some(refused) = self.refusal(&key)
        {
            return Err(DeriveError::Shared(refused));
        }
        let flight = Arc::clone(self.planning().entry(key.clone()).or_default());
        let planned = flight
            .get_or_init(|| async {
                // Planned by a flight that ended between the look-up above and this one.
                if let Some(known) = self.memo().map.get(&key) {
                    return Ok(Arc::clone(known));
                }
                let source = match files.committed_path(upstream) {
                    Some(path) => Source::Local(path),
                    None => Source::Upstream(client),
                };
                let planned = derive(source, upstream, filename, change).await;
                let derivation = match planned {
                    Ok(derivation) => Arc::new(derivation),
                    Err(err) => {
                        let err = Arc::new(err);
                        if err.is_refusal() {
                            self.refuse(key.clone(), Arc::clone(&err));
                        }
                        return Err(err);
                    }
                };
                self.memo().insert(key.clone(), Arc::clone(&derivation));
                Ok(derivation)
            })
            .await
            .clone();
        let mut planning = self.planning();
        if planning
            .get(&key)
            .is_some_and(|current| Arc::ptr_eq(current, &flight))
        {
            planning.remove(&key);
        }
        planned.map_err(DeriveError::Shared)
    }

    /// The derivation of `upstream` with `change`, when it was planned already.
    pub fn known(&self, upstream: &FileSpec, change: &Change) -> Option<Arc<Derivation>> {
        self.memo().map.get(&memo_key(upstream, change)).cloned()
    }

    /// Whether the derivation of `upstream` with `change` was refused within [`REFUSED_FOR`]
    /// (a page need not list what would answer 404).
    pub fn refused(&self, upstream: &FileSpec, change: &Change) -> bool {
        self.refusal(&memo_key(upstream, change)).is_some()
    }

    /// Why the wheel of `key` was refused, within [`REFUSED_FOR`].
    fn refusal(&self, key: &str) -> Option<Arc<DeriveError>> {
        let refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (err, at) = refused.get(key)?;
        (at.elapsed() < REFUSED_FOR).then(|| Arc::clone(err))
    }

    fn refuse(&self, key: String, err: Arc<DeriveError>) {
        let mut refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if refused.len() >= REMEMBERED {
            refused.clear();
        }
        refused.insert(key, (err, std::time::Instant::now()));
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn planning(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::OnceCell<Planned>>>> {
        self.planning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The derivations remembered, and the bytes they hold.
#[derive(Debug, Default)]
struct Memo {
    map: HashMap<String, Arc<Derivation>>,
    bytes: usize,
}

impl Memo {
    /// Remembers `derivation`, forgetting every other first when it would pass a limit (each
    /// costs a few ranged reads to plan again).
    fn insert(&mut self, key: String, derivation: Arc<Derivation>) {
        let held = weight(&derivation);
        if self.map.len() >= REMEMBERED || self.bytes + held > REMEMBERED_BYTES {
            self.map.clear();
            self.bytes = 0;
        }
        if let Some(old) = self.map.insert(key, derivation) {
            self.bytes = self.bytes.saturating_sub(weight(&old));
        }
        self.bytes += held;
    }
}

/// The bytes `derivation` holds: its `METADATA`, what its plan writes, and the ranged reads the
/// plan is checked against.
fn weight(derivation: &Derivation) -> usize {
    let planned = derivation.spec.splice.as_ref().map_or(0, |splice| {
        let inserted: usize = splice
            .segments
            .iter()
            .map(|segment| match segment {
                Segment::Insert(bytes) => bytes.len(),
                Segment::Copy(_) => 0,
            })
            .sum();
        let checked: usize = splice.checks.iter().map(|(_, bytes)| bytes.len()).sum();
        inserted + checked
    });
    derivation.metadata.len() + planned
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
    let mut reader = RangeReader::new(
        source,
        &upstream.url,
        upstream.listed_on.as_deref(),
        filename,
    );
    let (tail, tail_start) = reader.read(Span::Suffix(TAIL)).await?;
    let end = wheel::end_record(&tail).map_err(zip_error)?;
    if end.directory_size > MAX_DIRECTORY {
        return Err(zip_error(format!(
            "a central directory of {} bytes (more than {MAX_DIRECTORY} is not read)",
            end.directory_size
        )));
    }
    let directory = reader
        .slice_or_read(&tail, tail_start, end.directory_offset, end.directory_size)
        .await?;
    let entries = wheel::central_entries(&directory).map_err(zip_error)?;
    let metadata_name = wheel::single_dist_info_member(&entries, "METADATA")
        .map_err(zip_error)?
        .ok_or_else(|| zip_error("no top-level `*.dist-info/METADATA`".into()))?
        .to_string();
    let record_name = wheel::single_dist_info_member(&entries, "RECORD")
        .map_err(zip_error)?
        .map(str::to_string);
    let original = reader
        .member(&entries, &end, &metadata_name, MAX_METADATA)
        .await?;
    // Core metadata is UTF-8 (PEP 566, the email format's headers as text): other bytes would
    // be passed through and make an installer fail while it reads them.
    if let Err(err) = std::str::from_utf8(&original) {
        return Err(zip_error(format!(
            "`{metadata_name}` is not UTF-8 (invalid at byte {})",
            err.valid_up_to()
        )));
    }
    let metadata = change.apply(&original);
    if metadata == original {
        return Ok(Derivation {
            spec: upstream.clone(),
            metadata: Bytes::from(metadata),
            changed: false,
        });
    }
    let moves = match change {
        Change::PlainVersion(version) => {
            Moves::of(&entries, &metadata_name, version).map_err(zip_error)?
        }
        _ => Moves::default(),
    };
    if !moves.is_empty() {
        reader.hold(tail_start, tail.clone());
    }
    let replaced = replacements(
        &mut reader,
        (&entries, &end),
        (metadata_name, &metadata),
        record_name,
        &moves,
    )
    .await?;
    let layout = wheel::plan(&entries, &end, &replaced).map_err(zip_error)?;
    Ok(Derivation {
        spec: FileSpec {
            splice: Some(Splice::checked(
                layout.segments,
                layout.len,
                std::mem::take(&mut reader.read),
            )),
            ..upstream.clone()
        },
        metadata: Bytes::from(metadata),
        changed: true,
    })
}

/// What the plan writes in place of the upstream's members, by their upstream names: `METADATA`
/// (as `metadata`), `RECORD` with its row of `METADATA` re-hashed, and every member `moves`
/// moves, under its new name (`RECORD`'s rows of them moved too).
async fn replacements(
    reader: &mut RangeReader<'_>,
    (entries, end): (&[CentralEntry], &EndRecord),
    (metadata_name, metadata): (String, &[u8]),
    record_name: Option<String>,
    moves: &Moves,
) -> Result<BTreeMap<String, Replacement>, DeriveError> {
    let mut replaced = BTreeMap::new();
    if !moves.is_empty() {
        let rewritten: Vec<&str> = [Some(&metadata_name), record_name.as_ref()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        replaced = rename::moved_members(reader, (entries, end), moves, &rewritten).await?;
    }
    if let Some(record_name) = record_name {
        let mut record = reader
            .member(entries, end, &record_name, MAX_RECORD)
            .await?;
        let record_error = |problem| DeriveError::Zip {
            file: reader.file.to_string(),
            problem: format!("`{record_name}` {problem}"),
        };
        if !moves.is_empty() {
            record = with_paths_moved(&record, moves.dirs()).map_err(record_error)?;
        }
        let record = with_record_line(&record, &moves.name_after(&metadata_name), metadata)
            .map_err(record_error)?;
        let replacement = Replacement {
            name: moves.name_after(&record_name),
            content: record,
        };
        replaced.insert(record_name, replacement);
    }
    let replacement = Replacement {
        name: moves.name_after(&metadata_name),
        content: metadata.to_vec(),
    };
    replaced.insert(metadata_name, replacement);
    Ok(replaced)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};

    use super::*;

    /// A stored wheel of `members`, each `(name, content)`.
    pub(in crate::derive) fn zipped(members: &[(&str, &[u8])]) -> Vec<u8> {
        use std::io::Write as _;
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, content) in members {
            zip.start_file(*name, stored).unwrap();
            zip.write_all(content).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    /// The derivation (a torch pin added) of `wheel`, planned from a local copy.
    async fn derived(wheel: &[u8]) -> Result<Derivation, DeriveError> {
        derived_with(
            wheel,
            &Change::AddRequirements(vec!["torch==2.10.*".to_string()]),
        )
        .await
    }

    /// The derivation of `wheel` with `change`, planned from a local copy.
    pub(in crate::derive) async fn derived_with(
        wheel: &[u8],
        change: &Change,
    ) -> Result<Derivation, DeriveError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("xpkg-1.0-py3-none-any.whl");
        std::fs::write(&path, wheel).unwrap();
        let spec = FileSpec {
            url: "http://127.0.0.1:9/xpkg-1.0-py3-none-any.whl".to_string(),
            sha256: Some(hex::encode(Sha256::digest(wheel))),
            size: Some(wheel.len() as u64),
            splice: None,
            listed_on: None,
        };
        derive(
            Source::Local(path),
            &spec,
            "xpkg-1.0-py3-none-any.whl",
            change,
        )
        .await
    }

    const METADATA: &[u8] = b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0\n\n";

    #[tokio::test]
    async fn a_wheel_derived_with_a_quoted_record_row_lists_the_new_metadata_hash() {
        let wheel = zipped(&[
            ("xpkg/__init__.py", b"VALUE = 1\n"),
            ("xpkg-1.0.dist-info/METADATA", METADATA),
            (
                "xpkg-1.0.dist-info/RECORD",
                b"\"xpkg/__init__.py\",,\n\"xpkg-1.0.dist-info/METADATA\",sha256=old,45\n",
            ),
        ]);
        let derivation = derived(&wheel).await.unwrap();
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(&derivation.metadata));
        let record = derivation
            .spec
            .splice
            .as_ref()
            .unwrap()
            .segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Insert(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
                Segment::Copy(_) => None,
            })
            .collect::<String>();
        assert!(
            record.contains(&format!("xpkg-1.0.dist-info/METADATA,sha256={hash},")),
            "{record}"
        );
        assert!(!record.contains("sha256=old"), "{record}");
    }

    #[tokio::test]
    async fn what_cannot_be_derived_faithfully_is_refused_with_its_reason() {
        let cases: [(Vec<u8>, &str); 4] = [
            (
                zipped(&[("xpkg/__init__.py", b"VALUE = 1\n")]),
                "no top-level `*.dist-info/METADATA`",
            ),
            (
                zipped(&[
                    ("xpkg-1.0.dist-info/METADATA", METADATA),
                    ("other-1.0.dist-info/METADATA", METADATA),
                ]),
                "two top-level `*.dist-info/METADATA` members",
            ),
            (
                // One name twice: written under two names, then made one.
                {
                    let wheel = zipped(&[
                        ("xpkg-1.0.dist-info/METADATA", METADATA),
                        ("xpkg-1.0.dist-info/METADATB", b"Requires-Dist: evil\n"),
                    ]);
                    let mut bytes = wheel;
                    let from = b"dist-info/METADATB";
                    let mut at = 0;
                    while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from)
                    {
                        let start = at + found;
                        bytes[start..start + from.len()].copy_from_slice(b"dist-info/METADATA");
                        at = start + from.len();
                    }
                    bytes
                },
                "two top-level `*.dist-info/METADATA` members",
            ),
            (
                zipped(&[(
                    "xpkg-1.0.dist-info/METADATA",
                    b"Metadata-Version: 2.1\nName: xpkg\nVersion: 1.0\nSummary: caf\xe9\n\n",
                )]),
                "is not UTF-8",
            ),
        ];
        // ZIP64 sizes (as a wheel of a member past 4 GiB has them).
        let zip64 = {
            use std::io::Write as _;
            let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            let large = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .large_file(true);
            zip.start_file("xpkg-1.0.dist-info/METADATA", large)
                .unwrap();
            zip.write_all(METADATA).unwrap();
            zip.finish().unwrap().into_inner()
        };
        let cases = cases.into_iter().chain([(zip64, "ZIP64")]);
        for (wheel, expected) in cases {
            let err = derived(&wheel).await.unwrap_err();
            assert!(err.is_refusal(), "{err}");
            let message = err.to_string();
            assert!(message.contains(expected), "{message}");
        }
    }
}
