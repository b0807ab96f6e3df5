//! What one file's core metadata says for binding (its torch pin, the device extras it
//! provides), read once and remembered by the file's sha256: its PEP 658 `.metadata` through
//! the file cache (so the cache keeps it), else the wheel's `METADATA` by ranged reads.

use wheelgate_resolver::index::{CoreMetadata, IndexFile, ProjectPage};

use crate::listing::Listing;
use crate::state::AppState;
use wheelgate_files::cache::{CORE_METADATA_LIMIT, FileSpec};
use wheelgate_files::metadata::parse_metadata;
use wheelgate_files::wheel_metadata::read_wheel_metadata_by_ranges;
use wheelgate_index::error_chain::with_causes;
use wheelgate_index::upstream::redact;
use wheelgate_resolver::select::TorchPin;

/// The most a core metadata file read here may be.
const METADATA_LIMIT: u64 = CORE_METADATA_LIMIT as u64;

pub use super::pins::{FileFacts, PinMemo};

/// The torch pin of `file` (listed on `page`, as `listing` says), or why its metadata could not
/// be read.
pub async fn torch_pin(
    state: &AppState,
    page: &ProjectPage,
    listing: Listing<'_>,
    file: &IndexFile,
) -> Result<TorchPin, String> {
    facts(state, page, listing, file)
        .await
        .map(|facts| facts.pin)
}

/// What `file`'s core metadata says (listed on `page`, as `listing` says: its reads carry that
/// page's source's access), or why it could not be read.
pub async fn facts(
    state: &AppState,
    page: &ProjectPage,
    listing: Listing<'_>,
    file: &IndexFile,
) -> Result<FileFacts, String> {
    let url = page.file_url(file, listing.base_url());
    let listed_on = listing.page_of(file);
    let key = file
        .sha256()
        .map_or_else(|| url.clone(), str::to_ascii_lowercase);
    if let Some(pin) = state.pins.get(&key) {
        return Ok(pin);
    }
    let mut ranged = None;
    let wheel = FileSpec {
        url: url.clone(),
        sha256: file.sha256().map(str::to_string),
        size: file.size,
        splice: None,
        listed_on: listed_on.clone(),
    };
    // Only a copy verified by its sha256 is trusted over the upstream.
    let held = wheel
        .sha256
        .is_some()
        .then(|| state.files.committed_path(&wheel))
        .flatten();
    let bytes = match &file.core_metadata {
        // The cache holds the verified wheel: its own METADATA, no upstream read to trust.
        CoreMetadata::Absent if let Some(path) = held => {
            let name = file.filename.clone();
            tokio::task::spawn_blocking(move || {
                wheelgate_files::derived_metadata::read_wheel_metadata(&path, &name)
            })
            .await
            .map_err(|err| err.to_string())?
            .map_err(|err| with_causes(&err))?
        }
        CoreMetadata::Absent => {
            let read = read_wheel_metadata_by_ranges(
                &state.client,
                (&url, listed_on.as_deref()),
                &file.filename,
            )
            .await
            .map_err(|err| with_causes(&err))?;
            ranged = Some(read.reads);
            read.metadata
        }
        present => {
            let sha256 = match present {
                CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
                _ => None,
            };
            let spec = FileSpec {
                url: format!("{url}.metadata"),
                sha256,
                size: None,
                splice: None,
                listed_on: listed_on.clone(),
            };
            // Refused past the limit as it arrives, before more is stored: a 100 MB
            // "metadata" file neither fills the cache nor evicts what it holds.
            let cached = state
                .files
                .fetch_small(&state.client, &spec, state.config.offline, METADATA_LIMIT)
                .await
                .map_err(|err| with_causes(&err))?;
            cached
                .read_small(CORE_METADATA_LIMIT)
                .await
                .map_err(|err| format!("`{}`: {}", redact(&spec.url), with_causes(&err)))?
        }
    };
    let metadata = parse_metadata(&bytes, &file.filename).map_err(|err| err.to_string())?;
    let facts = FileFacts {
        pin: TorchPin::of(&metadata.requires_dist),
        device_extras: metadata.device_extras,
    };
    state.pins.put(key.clone(), facts.clone());
    if let Some(reads) = ranged {
        // Nothing verified these reads: checked once the wheel's verified bytes pass through
        // the file cache (now, if it holds them), and on a difference the facts and every page
        // rendered with them are forgotten (issue 41: a host that answers ranges from a forged
        // wheel must not decide selection for good). Kept first, so a check that fails at once
        // forgets them too.
        let (pins, rendered) = (
            std::sync::Arc::clone(&state.pins),
            std::sync::Arc::clone(&state.rendered),
        );
        state.files.check_ranges(
            &wheel,
            reads,
            Box::new(move || {
                pins.forget(&key);
                rendered.clear();
            }),
        );
    }
    Ok(facts)
}
