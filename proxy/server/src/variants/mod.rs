//! Wheel variants (PEP 825) for plain installers: a page listing variant wheels gets, for every
//! plain wheel filename, the one variant chosen for the machine
//! ([`wheelgate_resolver::variants::choose_variants`]), under the plain filename with the
//! upstream file's hashes, size and metadata untouched. Its link carries the label,
//! `/files/<project>/v/<label>/<plain filename>`, and the file route here turns it back into the
//! upstream name, which is then looked up on the project's cached page like any other file, so
//! a client can only ever get a file the page listed.
//!
//! The versions' `{name}-{version}-variants.json` files are read through the file cache (their
//! sha256 from the page), at most [`VARIANTS_JSON_LIMIT`] bytes each ([`read_variants_files`],
//! which `mirror sync` uses too). `metadata` serves a chosen variant's `.metadata` with its
//! `variant_label` markers decided; [`status`] is the status page's variant block;
//! [`passthrough`] the index for variant-aware installers.

mod metadata;
pub mod passthrough;
pub mod status;

use std::collections::{BTreeMap, BTreeSet};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pep440_rs::Version;
use tracing::{debug, warn};
use wheelgate_resolver::filename::{DistFilename, WheelParts};
use wheelgate_resolver::index::{CoreMetadata, Hashes, ProjectPage};
use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::variants::{
    VariantChoice, VariantsFile, choose_variants, is_valid_label, labelled_filename,
    lists_variants, parse_variants_json, variants_json_indices,
};
use wheelgate_resolver::{Machine, Policy};

use crate::listing::Listing;
use wheelgate_files::cache::{FileCache, FileSpec};
use wheelgate_files::derive::Change;
use wheelgate_index::upstream::UpstreamClient;

use super::error::ApiError;
use super::explanation::{BuildVerdict, Explanation, VersionExplanation};
use super::rewrite::file_link;
use super::state::AppState;

/// The most bytes of a variants file read (PyTorch's are about 3 KiB): a hostile upstream
/// cannot make the proxy hold a huge file in memory.
pub const VARIANTS_JSON_LIMIT: usize = 1024 * 1024;
const METADATA_SUFFIX: &str = ".metadata";

/// The variant file routes: `GET` and `HEAD` on `/files/{project}/v/{label}/{filename}`; and
/// the pass-through index for variant-aware installers ([`passthrough`]).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/files/{project}/v/{label}/{filename}",
            get(get_variant).head(head_variant),
        )
        .merge(passthrough::routes())
}

async fn get_variant(
    State(state): State<AppState>,
    Path((project, label, filename)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::GET, &project, &label, &filename, &headers).await
}

async fn head_variant(
    State(state): State<AppState>,
    Path((project, label, filename)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::HEAD, &project, &label, &filename, &headers).await
}

/// Serves the upstream file `filename` with `label` put back, through the ordinary file route.
async fn serve(
    state: &AppState,
    method: &Method,
    project: &str,
    label: &str,
    filename: &str,
    headers: &HeaderMap,
) -> Response {
    match upstream_name(label, filename) {
        Ok(upstream) => match upstream.strip_suffix(METADATA_SUFFIX) {
            Some(dist) => metadata::decided(state, method, project, dist, label, filename)
                .await
                .unwrap_or_else(IntoResponse::into_response),
            None => derived(state, method, project, &upstream, label, headers)
                .await
                .unwrap_or_else(IntoResponse::into_response),
        },
        Err(err) => {
            debug!(error = %err, "variant file request refused");
            err.into_response()
        }
    }
}

/// The variant wheel `upstream` (its upstream name) as its `.metadata` describes it: derived
/// with its `variant_label` markers decided, which pip 26.2 and later require (they refuse a
/// wheel whose METADATA differs from its `.metadata`, and cannot parse the markers). The
/// upstream's file as it is when the markers change nothing, or when the wheel cannot be read
/// by ranges (installers other than pip 26.2+ still install it).
async fn derived(
    state: &AppState,
    method: &Method,
    project: &str,
    upstream: &str,
    label: &str,
    headers: &HeaderMap,
) -> Result<Response, super::files::FilesError> {
    let source = super::lookup::find_file(state, project, upstream)
        .await
        .map_err(ApiError::Owners)?;
    let Some(source) = source else {
        return super::files::serve(state, method, project, upstream, headers).await;
    };
    let spec = FileSpec {
        url: source.url,
        sha256: source.sha256,
        size: source.size,
        splice: None,
        listed_on: Some(source.listed_on),
    };
    let change = Change::DecideVariantLabel(label.to_string());
    // Offline, from the store's copy of the upstream wheel.
    let derivation = match state
        .derivations
        .get((&state.client, &state.files), &spec, upstream, &change)
        .await
    {
        Ok(derivation) => Some(derivation).filter(|d| d.changed),
        Err(err) => {
            warn!(file = upstream, error = %wheelgate_index::error_chain::source_chain(&err), "cannot derive a variant wheel; serving the upstream's (pip 26.2 and later refuse it)");
            None
        }
    };
    let Some(derivation) = derivation else {
        return super::files::serve(state, method, project, upstream, headers).await;
    };
    super::files::respond(state, &derivation.spec, method, headers)
        .await
        .map_err(|source| super::files::FilesError::Cache {
            filename: upstream.to_string(),
            source,
        })
}

/// The upstream filename (`.metadata` kept) of a plain `filename` served with `label`.
fn upstream_name(label: &str, filename: &str) -> Result<String, ApiError> {
    let printable = |text: &str| {
        text.chars()
            .flat_map(char::escape_default)
            .collect::<String>()
    };
    if !is_valid_label(label) {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a variant label (expected lowercase letters, digits, `_` and `.`)",
            printable(label)
        )));
    }
    let (dist, metadata) = match filename.strip_suffix(METADATA_SUFFIX) {
        Some(dist) => (dist, METADATA_SUFFIX),
        None => (filename, ""),
    };
    let labelled = labelled_filename(dist, label).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "`{}` is not a plain wheel filename",
            printable(dist)
        ))
    })?;
    Ok(format!("{labelled}{metadata}"))
}

/// `page` (rewritten from `upstream` for `machine`) with the chosen variant wheels added, each
/// under its plain filename; a plain wheel of the same version and tags gives way to it (PEP
/// 825 ranks non-variant wheels after every variant). Unchanged when `upstream` lists no
/// variants.
pub async fn with_variants(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    upstream: &ProjectPage,
    listing: Listing<'_>,
    mut page: ProjectPage,
) -> (ProjectPage, bool) {
    let mut settled = true;
    if let Some((choice, all_read)) =
        choose(state, machine, policy, project, upstream, listing).await
    {
        settled = all_read;
        log_choice(project, &choice, upstream);
        let derived_hash = |index: usize| derived_hash(state, upstream, listing, &choice, index);
        apply(project, upstream, &choice, &derived_hash, &mut page);
    }
    (page, settled)
}

/// How long a page waits for a variants file it has not read yet: they are a few KiB (about 3
/// for PyTorch's), so one not read by then is stalled or dripping.
const VARIANTS_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The variant choice for `upstream`, reading its variants files (each waited for at most
/// [`VARIANTS_WAIT`]), and whether every file was settled in time; `None` when it lists no
/// variants.
async fn choose(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    upstream: &ProjectPage,
    listing: Listing<'_>,
) -> Option<(VariantChoice, bool)> {
    let refs: Vec<FileRef<'_>> = upstream.files.iter().map(FileRef::from).collect();
    if !lists_variants(&refs) {
        return None;
    }
    let (parsed, settled) = read_variants_files_within(
        &state.files,
        &state.client,
        state.config.offline,
        (upstream, listing),
        Some(VARIANTS_WAIT),
    )
    .await;
    drop(refs);
    let choice = choose_off_the_runtime(state, machine, policy, project, upstream, parsed).await;
    Some((choice, settled))
}

/// [`choose_variants`] on the blocking pool, with its own copies of what it reads: each core
/// serves its connections on one single-threaded runtime, and a choice made there would hold
/// every other request of that core (health checks among them) for as long as it takes.
pub async fn choose_off_the_runtime(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    upstream: &ProjectPage,
    parsed: BTreeMap<usize, Result<VariantsFile, String>>,
) -> VariantChoice {
    let (catalog, machine, policy) = (state.catalog(), machine.clone(), policy.clone());
    let (project, files) = (project.to_string(), upstream.files.clone());
    off_the_runtime(move || {
        let refs: Vec<FileRef<'_>> = files.iter().map(FileRef::from).collect();
        choose_variants(catalog, &machine, &policy, &project, &refs, &parsed)
    })
    .await
}

/// Runs `work`, CPU work on the request path (choosing from or parsing variants files, bounded
/// by their caps), on tokio's blocking pool, so the runtime that awaits it serves its other
/// requests meanwhile. A panic in `work` resumes here.
pub async fn off_the_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

/// `explanation` (of `/explain/<project>/`) with the variant choice the page serves: per
/// version, every label with its verdict, the files kept under their plain names, the
/// judgements made; and why every other variant file is not served.
pub async fn explain(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    upstream: &ProjectPage,
    listing: Listing<'_>,
    explanation: &mut Explanation,
) {
    let project = explanation.project.clone();
    let Some((choice, _)) = choose(state, machine, policy, &project, upstream, listing).await
    else {
        return;
    };
    relabel_dropped(explanation, upstream, &choice);
    for version in &choice.versions {
        let text = version.version.to_string();
        let at = if let Some(at) = explanation.versions.iter().position(|v| v.version == text) {
            at
        } else {
            // Newest first, as the selection lists them.
            let at = explanation
                .versions
                .iter()
                .position(|v| {
                    v.version
                        .parse::<Version>()
                        .is_ok_and(|other| other < version.version)
                })
                .unwrap_or(explanation.versions.len());
            explanation.versions.insert(
                at,
                VersionExplanation {
                    version: text,
                    ..VersionExplanation::default()
                },
            );
            at
        };
        let entry = &mut explanation.versions[at];
        let chosen: BTreeSet<&str> = version.picks.iter().map(|p| p.label.as_str()).collect();
        if entry.chosen.is_none() {
            entry.chosen = version
                .order
                .first()
                .map(|label| format!("variant {label}"));
        }
        entry.kept.extend(
            version
                .picks
                .iter()
                .map(|pick| format!("{} (variant {})", pick.filename, pick.label)),
        );
        for label in &version.order {
            entry.builds.push(BuildVerdict {
                backend: format!("variant {label}"),
                verdict: if chosen.contains(label.as_str()) {
                    "chosen"
                } else {
                    "usable"
                },
                reason: (!chosen.contains(label.as_str())).then(|| {
                    "runs here, but a variant ranked higher by PEP 825 was served".to_string()
                }),
            });
        }
        for (label, why) in &version.rejected {
            entry.builds.push(BuildVerdict {
                backend: format!("variant {label}"),
                verdict: "rejected",
                reason: Some(why.clone()),
            });
        }
        entry.notes.extend(version.notes.iter().cloned());
        if let Some(first) = version.picks.first()
            && metadata::has_variant_label_markers(state, upstream, listing, first.index, false)
                .await
                == Some(true)
        {
            entry.notes.push(DERIVED_FOR_MARKERS.to_string());
        }
    }
}

/// What `/explain/` says of a version whose chosen wheel declares requirements with PEP 817
/// `variant_label` markers, which pip 26.2 and later refuse in a wheel's own METADATA (measured
/// through this proxy with pip 24.0 to 26.3 and uv 0.13; see the README).
pub const DERIVED_FOR_MARKERS: &str = "the chosen wheel's own METADATA declares requirements with PEP 817 `variant_label` markers, which installers cannot parse (pip 26.2 and newer refuse such a wheel): it is served as a derived wheel, the upstream's files with METADATA (and its RECORD line) decided for this label as the served `.metadata` is, so pip and uv install it alike; it is listed without a hash until a download here has computed the derived wheel's sha256";

/// The reasons of `explanation`'s dropped files that are variant files: none for a served
/// variant (it is on the page, under its plain name), why for every other.
fn relabel_dropped(explanation: &mut Explanation, upstream: &ProjectPage, choice: &VariantChoice) {
    let served: BTreeSet<usize> = choice.picks().map(|pick| pick.index).collect();
    let skipped: BTreeMap<usize, &str> = choice
        .skipped
        .iter()
        .map(|(index, why)| (*index, why.as_str()))
        .collect();
    explanation.dropped.retain_mut(|dropped| {
        let Some(index) = upstream
            .files
            .iter()
            .position(|f| f.filename == dropped.filename)
        else {
            return true;
        };
        if served.contains(&index) {
            return false;
        }
        if let Some(why) = skipped.get(&index) {
            dropped.reason = format!("a wheel-variant file not served: {why}");
        } else if dropped.filename.ends_with("-variants.json") {
            dropped.reason =
                "a variants file: read to choose the variants, never served to plain installers"
                    .to_string();
        }
        true
    });
}

/// What the page may say of a served variant wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Served {
    /// The upstream's file, unchanged: its hashes and size are listed.
    Upstream,
    /// A derived wheel whose sha256 is known.
    Derived(String),
    /// Not known yet: listed without a hash or size, never a wrong one.
    Unknown,
}

/// [`Served`] of the wheel picked at an index of the upstream page.
type DerivedHash<'a> = dyn Fn(usize) -> Served + 'a;

/// [`DerivedHash`] from the derivations planned so far.
fn derived_hash(
    state: &AppState,
    upstream: &ProjectPage,
    listing: Listing<'_>,
    choice: &VariantChoice,
    index: usize,
) -> Served {
    let Some(pick) = choice.picks().find(|pick| pick.index == index) else {
        return Served::Unknown;
    };
    let Some(file) = upstream.files.get(index) else {
        return Served::Unknown;
    };
    let spec = listing.upstream_spec(upstream, file);
    let Some(derivation) = state
        .derivations
        .known(&spec, &Change::DecideVariantLabel(pick.label.clone()))
    else {
        return Served::Unknown;
    };
    if !derivation.changed {
        return Served::Upstream;
    }
    state
        .files
        .derived_sha256(&derivation.spec)
        .map_or(Served::Unknown, Served::Derived)
}

/// Adds the picks of `choice` to `page` (see [`with_variants`]).
fn apply(
    project: &str,
    upstream: &ProjectPage,
    choice: &VariantChoice,
    derived_hash: &DerivedHash<'_>,
    page: &mut ProjectPage,
) {
    let shadowed: BTreeSet<TagKey> = choice
        .picks()
        .filter_map(|pick| tag_key(&pick.filename))
        .collect();
    page.files.retain(|file| {
        let keep = tag_key(&file.filename).is_none_or(|key| !shadowed.contains(&key));
        if !keep {
            debug!(file = %file.filename, "a plain wheel gives way to the chosen variant of the same tags");
        }
        keep
    });
    let mut versions: BTreeSet<Version> = page
        .versions
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    for pick in choice.picks() {
        let mut file = upstream.files[pick.index].clone();
        file.filename.clone_from(&pick.filename);
        // Served with its `variant_label` markers decided: no longer the upstream's bytes.
        if file.core_metadata.is_present() {
            file.core_metadata = CoreMetadata::Present;
        }
        // And so is the wheel (derived, `wheelgate_files::derive`), once its METADATA has such markers.
        match derived_hash(pick.index) {
            Served::Upstream => {}
            Served::Derived(sha256) => {
                file.hashes = Hashes::from([("sha256".to_string(), sha256)]);
                file.size = None;
                file.provenance = None;
            }
            Served::Unknown => {
                file.hashes = Hashes::new();
                file.size = None;
                file.provenance = None;
            }
        }
        // Project names and labels hold only `[a-z0-9-]` and `[0-9a-z_.]`: nothing to encode.
        file.url = file_link(&format!("{project}/v/{}", pick.label), &pick.filename);
        if let Ok(parsed) = pick.filename.parse::<DistFilename>() {
            versions.insert(parsed.version().clone().without_local());
        }
        page.files.push(file);
    }
    page.versions = versions.iter().map(Version::to_string).collect();
}

/// What makes two wheels interchangeable for an installer: public version, build, tags.
type TagKey = (Version, Option<String>, String, String, String);

fn tag_key(filename: &str) -> Option<TagKey> {
    let parts = WheelParts::split(filename).ok()?;
    let version = parts.version.parse::<Version>().ok()?.without_local();
    Some((
        version,
        parts.build.map(str::to_string),
        parts.python.to_string(),
        parts.abi.to_string(),
        parts.platform.to_string(),
    ))
}

fn log_choice(project: &str, choice: &VariantChoice, upstream: &ProjectPage) {
    for version in &choice.versions {
        debug!(
            project,
            version = %version.version,
            order = ?version.order,
            picks = version.picks.len(),
            notes = ?version.notes,
            "wheel variants chosen"
        );
    }
    for (index, why) in &choice.skipped {
        debug!(project, file = %upstream.files[*index].filename, why = why.as_str(), "variant not served");
    }
}

/// Every `*-variants.json` of `upstream` (its files listed as `listing` says), by page index: read through
/// the file cache `files` (verified against the page's sha256, at most [`VARIANTS_JSON_LIMIT`]
/// bytes; from the store only when `offline`) and parsed, or why not. The server reads them to
/// choose; `mirror sync` reads them to choose the same and stores them on the way.
pub async fn read_variants_files(
    files: &FileCache,
    client: &UpstreamClient,
    offline: bool,
    upstream: &ProjectPage,
    listing: Listing<'_>,
) -> BTreeMap<usize, Result<VariantsFile, String>> {
    read_variants_files_within(files, client, offline, (upstream, listing), None)
        .await
        .0
}

/// [`read_variants_files`], all at once, each waited for at most `wait` (`None`: until read):
/// a variants file that drips a byte at a time must not hold its project's pages. One not read
/// in time counts as unreadable (the versions it describes are chosen by their labels, and
/// `/explain/` says so); its download goes on in the file cache, so a later request reads it.
/// Also returns whether every file was settled (read, or failed for good) in time.
pub async fn read_variants_files_within(
    files: &FileCache,
    client: &UpstreamClient,
    offline: bool,
    (upstream, listing): (&ProjectPage, Listing<'_>),
    wait: Option<std::time::Duration>,
) -> (BTreeMap<usize, Result<VariantsFile, String>>, bool) {
    let refs: Vec<FileRef<'_>> = upstream.files.iter().map(FileRef::from).collect();
    let reads = variants_json_indices(&refs).into_iter().map(|index| {
        let file = &upstream.files[index];
        let spec = listing.upstream_spec(upstream, file);
        async move {
            // A download another request started and waited for in vain is not waited for
            // again: one request pays the wait, not every request while the file drips.
            let wait = wait.map(|wait| {
                if files.is_downloading(&spec) {
                    std::time::Duration::ZERO
                } else {
                    wait
                }
            });
            let read = read_variants_json(files, client, offline, &spec);
            let result = match wait {
                None => Some(read.await),
                Some(wait) => tokio::time::timeout(wait, read).await.ok(),
            };
            (index, &file.filename, result)
        }
    });
    let mut parsed = BTreeMap::new();
    let mut settled = true;
    for (index, filename, result) in futures_util::future::join_all(reads).await {
        let result = result.unwrap_or_else(|| {
            settled = false;
            Err(format!(
                "not read within {} ms (still downloading; a later request reads it)",
                wait.unwrap_or_default().as_millis()
            ))
        });
        if let Err(why) = &result {
            warn!(file = %filename, error = why.as_str(), "variants file unreadable");
        }
        parsed.insert(index, result);
    }
    (parsed, settled)
}

/// One variants file, read through the file cache and parsed; or why not. A cached file the
/// page gives a sha256 for is parsed once per content ([`parsed_once`]): every machine's
/// rendering reads the same files, and one at the caps takes milliseconds to parse.
async fn read_variants_json(
    files: &FileCache,
    client: &UpstreamClient,
    offline: bool,
    spec: &FileSpec,
) -> Result<VariantsFile, String> {
    // Only for a file this cache holds: reading it for a page also keeps it for the clients
    // that download it.
    if files.committed_path(spec).is_some()
        && let Some(known) = spec.sha256.as_deref().and_then(parsed_once::get)
    {
        return known;
    }
    let cached = files
        .fetch(client, spec, offline)
        .await
        .map_err(|err| err.to_string())?;
    let bytes = cached
        .read_small(VARIANTS_JSON_LIMIT)
        .await
        .map_err(|err| wheelgate_index::error_chain::source_chain(&err))?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let source_bytes = text.len();
    let parsed =
        off_the_runtime(move || parse_variants_json(&text).map_err(|err| err.to_string())).await;
    if let Some(sha256) = spec.sha256.as_deref() {
        parsed_once::put(sha256, &parsed, source_bytes);
    }
    parsed
}

/// Variants files parsed (or refused) once per content, by sha256: parsing is a pure function
/// of the bytes, which the file cache verified against that hash. Bounded: past
/// [`parsed_once::MAX_FILES`] files or [`parsed_once::MAX_BYTES`] of source, it starts over.
mod parsed_once {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, Mutex};

    use wheelgate_resolver::variants::VariantsFile;

    pub const MAX_FILES: usize = 256;
    pub const MAX_BYTES: usize = 16 * 1024 * 1024;

    type Parsed = Result<Arc<VariantsFile>, String>;

    #[derive(Default)]
    struct Memo {
        by_sha256: HashMap<String, Parsed>,
        bytes: usize,
    }

    static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Mutex::default);

    fn memo() -> std::sync::MutexGuard<'static, Memo> {
        MEMO.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(sha256: &str) -> Option<Result<VariantsFile, String>> {
        let known = memo().by_sha256.get(&sha256.to_ascii_lowercase())?.clone();
        Some(known.map(|file| (*file).clone()))
    }

    pub fn put(sha256: &str, parsed: &Result<VariantsFile, String>, source_bytes: usize) {
        let mut memo = memo();
        if memo.by_sha256.len() >= MAX_FILES || memo.bytes + source_bytes > MAX_BYTES {
            *memo = Memo::default();
        }
        memo.bytes += source_bytes;
        let value = parsed.clone().map(Arc::new);
        memo.by_sha256.insert(sha256.to_ascii_lowercase(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_links_name_the_upstream_file() {
        assert_eq!(
            upstream_name(
                "cuda13.0",
                "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"
            )
            .unwrap(),
            "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cuda13.0.whl"
        );
        assert_eq!(
            upstream_name("null", "torch-2.9.0-cp312-cp312-linux_x86_64.whl.metadata").unwrap(),
            "torch-2.9.0-cp312-cp312-linux_x86_64-null.whl.metadata"
        );
        for (label, filename) in [
            ("Cuda", "torch-2.9.0-cp312-cp312-linux_x86_64.whl"),
            ("cu-da", "torch-2.9.0-cp312-cp312-linux_x86_64.whl"),
            ("null", "torch-2.9.0-cp312-cp312-linux_x86_64-null.whl"),
            ("null", "torch-2.9.0.tar.gz"),
            ("null", "../etc/passwd"),
        ] {
            let err = upstream_name(label, filename).unwrap_err().to_string();
            assert!(err.contains('`'), "{err}");
        }
    }

    #[test]
    fn a_chosen_variant_takes_the_place_of_a_plain_wheel_of_the_same_tags() {
        let html = r#"<a href="/whl/variant/torch-2.9.0-cp312-cp312-linux_x86_64-cuda13.0.whl#sha256=aa" data-core-metadata="sha256=bb">torch-2.9.0-cp312-cp312-linux_x86_64-cuda13.0.whl</a>
<a href="/whl/torch-2.9.0-cp312-cp312-linux_x86_64.whl#sha256=cc">torch-2.9.0-cp312-cp312-linux_x86_64.whl</a>
<a href="/whl/torch-2.8.0-cp312-cp312-linux_x86_64.whl">torch-2.8.0-cp312-cp312-linux_x86_64.whl</a>"#;
        let upstream = wheelgate_resolver::index::parse_project_html(html).unwrap();
        let mut page = upstream.clone();
        page.files.remove(0);
        page.versions = vec!["2.8.0".into(), "2.9.0".into()];
        let choice = VariantChoice {
            versions: vec![wheelgate_resolver::variants::VersionVariants {
                version: "2.9.0".parse().unwrap(),
                order: vec!["cuda13.0".into()],
                rejected: Vec::new(),
                picks: vec![wheelgate_resolver::variants::VariantPick {
                    index: 0,
                    label: "cuda13.0".into(),
                    filename: "torch-2.9.0-cp312-cp312-linux_x86_64.whl".into(),
                }],
                notes: Vec::new(),
            }],
            skipped: Vec::new(),
        };
        // The wheel's METADATA was read and needs no change: the upstream's file, hash and all.
        apply(
            "torch",
            &upstream,
            &choice,
            &|_| Served::Upstream,
            &mut page,
        );
        let names: Vec<(&str, &str)> = page
            .files
            .iter()
            .map(|f| (f.filename.as_str(), f.url.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "torch-2.8.0-cp312-cp312-linux_x86_64.whl",
                    "/whl/torch-2.8.0-cp312-cp312-linux_x86_64.whl"
                ),
                (
                    "torch-2.9.0-cp312-cp312-linux_x86_64.whl",
                    "/files/torch/v/cuda13.0/torch-2.9.0-cp312-cp312-linux_x86_64.whl"
                ),
            ]
        );
        assert_eq!(page.files[1].sha256(), Some("aa"));
        assert!(page.files[1].core_metadata.is_present());
        assert_eq!(page.versions, ["2.8.0", "2.9.0"]);

        // Derived (its METADATA has markers): its own hash once known, none before.
        let mut derived = upstream.clone();
        derived.files.remove(0);
        apply(
            "torch",
            &upstream,
            &choice,
            &|_| Served::Derived("dd".into()),
            &mut derived,
        );
        assert_eq!(derived.files[1].sha256(), Some("dd"));
        let mut unknown = upstream.clone();
        unknown.files.remove(0);
        apply(
            "torch",
            &upstream,
            &choice,
            &|_| Served::Unknown,
            &mut unknown,
        );
        assert!(unknown.files[1].hashes.is_empty());
        assert_eq!(unknown.files[1].size, None);
    }
}
