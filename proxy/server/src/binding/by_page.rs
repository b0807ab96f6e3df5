//! One build for the whole stack, bound by page: a per-build source (a `[[sources]]` URL
//! template, PyG's `torch-{torch}+{backend}.html`) lists on each page the files built against
//! that torch release and build, with no torch pin in their metadata. A file listed on the page
//! for torch X and build B is bound to (X's release line, B):
//!
//! - only the pages that can matter are fetched: per torch release the torch page lists, the
//!   page of the build torch gets on this machine (a 404 is "no build"), through the index cache;
//! - each file is offered with a torch pin added to its core metadata (its `.metadata` and a
//!   derived wheel, `wheelgate_files::derive`): `torch==X.Y.*`, less the releases of that line that get
//!   another build here, so when several bound files share a public version (`2.1.2+pt29cu130`,
//!   `2.1.2+pt28cu129`) pip and uv pick the one of the torch they install.
//!
//! Links name what the file route needs to find and derive the file again on any replica:
//! `/bound/<source>/<torch>/<backend>/<pin>/<project>/<filename>`.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::str::FromStr;

use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, stream};
use pep440_rs::{Operator, Version, VersionSpecifiers};
use wheelgate_resolver::filename::{DistFilename, normalize_name};
use wheelgate_resolver::index::{CoreMetadata, Hashes, IndexFile, ProjectPage};
use wheelgate_resolver::{Backend, Machine, Policy};

use super::{TorchChoices, torch_choices, torch_pages};
use crate::state::AppState;
use wheelgate_files::cache::FileSpec;
use wheelgate_files::derive::{Change, Derivation};
use wheelgate_index::cache::index::{CachedPage, IndexError};
use wheelgate_index::sources::template::release_line;
use wheelgate_index::sources::{SourceId, Sources, UrlTemplate};

/// The most `!=` exclusions a pin may carry (the patch releases of one line).
const MAX_EXCLUSIONS: usize = 64;
/// Template pages read at once for one page request: a torch page listing a thousand releases
/// made a thousand fetches at once (issue 41 item 7).
pub const CONCURRENT_PAGES: usize = 8;
/// Derived wheels planned at once for one page request (each a few ranged reads).
const CONCURRENT_PLANS: usize = 8;
/// How long one page request waits for its template pages and plans before it answers with
/// what it has (the rest left off, and read for a later request): well inside pip's 15 s read
/// timeout, with torch's own page fetched first.
const WAIT: Duration = Duration::from_secs(5);
/// The least time the plans get after the pages, when these took all of [`WAIT`].
const MIN_PLAN_WAIT: Duration = Duration::from_secs(1);

/// A per-build project's page for one machine.
#[derive(Debug)]
pub struct BoundPage {
    /// Linked to the proxy's `/bound/` routes.
    pub page: ProjectPage,
    /// The template pages it was made from and a generation that changes with any of them (or
    /// torch's page).
    pub key: String,
    pub generation: u64,
    /// Template pages asked for (cached or not).
    pub pages_asked: usize,
    /// Whether everything is final: every page answered and every derived hash known.
    pub complete: bool,
    /// Each page asked for, for `/explain/`.
    pub reports: Vec<PageReport>,
    /// Each file listed, with what it is bound to.
    pub bindings: Vec<Binding>,
    /// The wheels its pages list that it leaves off, with why, for `/explain/`.
    pub left_off: Vec<LeftOff>,
}

/// A wheel a template page lists that the page leaves off.
#[derive(Debug, Clone)]
pub struct LeftOff {
    pub filename: String,
    pub reason: String,
}

/// One template page asked for.
#[derive(Debug, Clone)]
pub struct PageReport {
    pub source: String,
    /// Credentials redacted.
    pub url: String,
    /// The files of the project it lists (0 for a 404: no build).
    pub files: usize,
    /// Why its builds are missing, when it failed.
    pub error: Option<String>,
}

/// One listed file and what it is bound to.
#[derive(Debug, Clone)]
pub struct Binding {
    pub filename: String,
    /// The torch release whose page lists it, and the build.
    pub release: Version,
    pub backend: Backend,
    /// The specifiers added to its core metadata (`==2.10.*,!=2.10.1`).
    pub pin: String,
}

/// One template page to read: for torch `release`'s build `backend` on `source`.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub source: SourceId,
    pub release: Version,
    pub backend: Backend,
}

/// The page of `project` from its per-build `owners`, for `machine`; `Ok(None)` when nothing
/// is known of torch (no torch page anywhere).
///
/// Bounded (issue 41 item 7): at most [`CONCURRENT_PAGES`] template pages are read at once,
/// newest torch release first, and the files of the pages not read [`WAIT`] after the request
/// began are missing from this answer (the reads go on in a task of their own, for the next
/// request), so a torch page of a thousand releases cannot hold the first request past pip's
/// read timeout. Each listed wheel's derivation is planned before it is listed,
/// [`CONCURRENT_PLANS`] at once: a wheel that cannot be derived (no `METADATA`, ZIP64, a host
/// without ranges and no cached copy) is left off, with its reason, rather than listed with a
/// `.metadata` that would 404 (issue 41 item 8); one whose plan is not done in time is listed
/// unchecked, its plan going on.
pub async fn page(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    owners: &[SourceId],
) -> Result<Option<BoundPage>, crate::error::ApiError> {
    let deadline = tokio::time::Instant::now() + WAIT;
    let Some(torch_pages) = torch_pages(state, policy).await? else {
        return Ok(None);
    };
    let torch = torch_choices(state, machine, policy, Some(&torch_pages));
    let (torch_key, torch_generation) = torch_pages.key();
    let (wanted, order) = wanted_pages(&state.sources, &torch, owners);
    let mut read = read_pages(state, project, (&wanted, &order), &torch, deadline).await;
    let key = format!("bound to {torch_key}{}", read.key);
    let mut generations = vec![torch_generation];
    generations.extend(read.generations);
    let listed = list(
        state,
        project,
        &read.candidates,
        &mut read.reports,
        deadline,
    )
    .await;
    let complete = read.complete && listed.complete;
    let (files, bindings, left_off, reports) =
        (listed.files, listed.bindings, listed.left_off, read.reports);
    let mut versions: Vec<Version> = files
        .iter()
        .filter_map(|f: &IndexFile| f.filename.parse::<DistFilename>().ok())
        .map(|parsed| parsed.version().clone().without_local())
        .collect();
    versions.sort();
    versions.dedup();
    Ok(Some(BoundPage {
        page: ProjectPage {
            name: project.to_string(),
            files,
            versions: versions.iter().map(ToString::to_string).collect(),
            meta: wheelgate_resolver::index::Meta::default(),
            base: None,
            status: None,
            dropped: Vec::new(),
        },
        key,
        generation: wheelgate_index::sources::pages::combine(generations),
        pages_asked: order.len(),
        complete,
        reports,
        bindings,
        left_off,
    }))
}

/// What the template pages gave: each page's report, the wheels of `project` they list (each
/// once, from the newest page), and the pages' URLs and generations for the rendering's key.
struct ReadPages {
    key: String,
    generations: Vec<u64>,
    complete: bool,
    reports: Vec<PageReport>,
    candidates: Vec<Candidate>,
}

/// Reads the `order`ed template pages of `wanted`, [`CONCURRENT_PAGES`] at once, until
/// `deadline`.
async fn read_pages(
    state: &AppState,
    project: &str,
    (wanted, order): (&BTreeMap<String, Wanted>, &[String]),
    torch: &TorchChoices,
    deadline: tokio::time::Instant,
) -> ReadPages {
    let answers = detached(order.to_vec(), CONCURRENT_PAGES, deadline, {
        let state = state.clone();
        move |url: String| {
            let state = state.clone();
            async move { state.index.get(&state.client, &url).await }
        }
    })
    .await;
    let mut generations = Vec::new();
    let mut key = String::new();
    let mut complete = true;
    let mut reports = Vec::new();
    let mut seen = HashSet::new();
    let mut candidates = Vec::new();
    for (url, answer) in order.iter().zip(answers) {
        let want = &wanted[url];
        let mut report = PageReport {
            source: state.sources.get(want.source).name.clone(),
            url: wheelgate_index::upstream::redact(url),
            files: 0,
            error: None,
        };
        let cached = match answer {
            Some(Ok(Some(cached))) => cached,
            Some(Ok(None)) => {
                reports.push(report);
                continue;
            }
            Some(Err(error)) => {
                complete = false;
                report.error = Some(wheelgate_index::error_chain::source_chain(&error));
                log_failure(url, &error);
                reports.push(report);
                continue;
            }
            None => {
                complete = false;
                report.error = Some(format!(
                    "not read within the first {} s of this request (read for a later one)",
                    WAIT.as_secs()
                ));
                reports.push(report);
                continue;
            }
        };
        let _ = write!(key, " {}", cached.url);
        generations.push(cached.generation);
        let pin = pin_for(torch, &want.release, &want.backend);
        for file in &cached.page.files {
            if !is_wheel_of(&file.filename, project) || !seen.insert(file.filename.clone()) {
                continue;
            }
            candidates.push(Candidate {
                upstream: upstream_spec(&cached, file),
                file: file.clone(),
                binding: Binding {
                    filename: file.filename.clone(),
                    release: want.release.clone(),
                    backend: want.backend.clone(),
                    pin: pin.clone(),
                },
                report: reports.len(),
                source: want.source,
            });
        }
        reports.push(report);
    }
    ReadPages {
        key,
        generations,
        complete,
        reports,
        candidates,
    }
}

/// The listed wheels of a page and what it leaves off.
struct Listed {
    files: Vec<IndexFile>,
    bindings: Vec<Binding>,
    left_off: Vec<LeftOff>,
    /// Whether every listed wheel's derivation and hash are known.
    complete: bool,
}

/// Lists `candidates` once their derivations are planned, [`CONCURRENT_PLANS`] at once, until
/// `deadline` (or [`MIN_PLAN_WAIT`] from now, if later), counting each in its page's report.
async fn list(
    state: &AppState,
    project: &str,
    candidates: &[Candidate],
    reports: &mut [PageReport],
    deadline: tokio::time::Instant,
) -> Listed {
    let mut complete = true;
    // Each listed wheel's derivation, planned before it is listed; a little longer than the
    // pages' wait when they took all of it.
    let plan_deadline = deadline.max(tokio::time::Instant::now() + MIN_PLAN_WAIT);
    let jobs: Vec<(FileSpec, String, Change)> = candidates
        .iter()
        .map(|c| {
            (
                c.upstream.clone(),
                c.file.filename.clone(),
                Change::AddRequirements(vec![requirement(&c.binding.pin)]),
            )
        })
        .collect();
    let plans = detached(jobs, CONCURRENT_PLANS, plan_deadline, {
        let state = state.clone();
        move |job| plan(state.clone(), job)
    })
    .await;
    let mut files = Vec::new();
    let mut bindings = Vec::new();
    let mut left_off = Vec::new();
    for (candidate, plan) in candidates.iter().zip(plans) {
        let derived = match plan {
            Some(Ok(derivation)) => state.files.derived_sha256(&derivation.spec),
            Some(Err((reason, refused))) => {
                complete &= refused;
                left_off.push(LeftOff {
                    filename: candidate.file.filename.clone(),
                    reason: format!("left off: it cannot be served with its torch pin: {reason}"),
                });
                continue;
            }
            // Not planned in time: listed unchecked (its plan goes on, and the page is not
            // final), since an installer given a page without the newest build would keep
            // that page for `index_ttl_secs`.
            None => None,
        };
        complete &= derived.is_some();
        files.push(listing(state, candidate, derived, project));
        bindings.push(candidate.binding.clone());
        reports[candidate.report].files += 1;
    }
    Listed {
        files,
        bindings,
        left_off,
        complete,
    }
}

/// A wheel a template page lists, before its derivation is planned.
struct Candidate {
    upstream: FileSpec,
    file: IndexFile,
    binding: Binding,
    /// Its page's report.
    report: usize,
    source: SourceId,
}

/// Runs `run` on each of `jobs` in a task of its own, `limit` at once (in `jobs`' order), and
/// gives each result, where `jobs` had it, that came before `deadline`; the rest go on after it
/// (their results remembered where they land: the index cache, the derivations), so a request
/// that stops waiting never leaves the work half started for the next one.
async fn detached<J, R, F, Fut>(
    jobs: Vec<J>,
    limit: usize,
    deadline: tokio::time::Instant,
    run: F,
) -> Vec<Option<R>>
where
    J: Send + 'static,
    R: Send + 'static,
    F: Fn(J) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = R> + Send + 'static,
{
    let count = jobs.len();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut running = stream::iter(jobs.into_iter().enumerate())
            .map(move |(index, job)| {
                let done = run(job);
                async move { (index, done.await) }
            })
            .buffer_unordered(limit);
        while let Some(done) = running.next().await {
            // The request stopped waiting: the work goes on all the same.
            let _ = sender.send(done);
        }
    });
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(count).collect();
    for _ in 0..count {
        match tokio::time::timeout_at(deadline, receiver.recv()).await {
            Ok(Some((index, result))) => results[index] = Some(result),
            _ => break,
        }
    }
    results
}

/// The derivation of a listed wheel with its pin; the reason it cannot be had otherwise, and
/// whether that is a refusal (final) rather than a read that failed.
async fn plan(
    state: AppState,
    (upstream, filename, change): (FileSpec, String, Change),
) -> Result<Arc<Derivation>, (String, bool)> {
    state
        .derivations
        .get((&state.client, &state.files), &upstream, &filename, &change)
        .await
        .map_err(|err| {
            let reason = wheelgate_index::error_chain::with_causes(&err);
            tracing::debug!(file = %filename, error = %reason, "a bound wheel cannot be derived; left off its page");
            (reason, err.is_refusal())
        })
}

/// The template pages that can matter, by URL, and their URLs in the order to read them: per
/// owner, per torch release (newest first, so a file listed for several releases is bound to
/// the newest), the page of the build torch gets here.
pub fn wanted_pages(
    sources: &Sources,
    torch: &TorchChoices,
    owners: &[SourceId],
) -> (BTreeMap<String, Wanted>, Vec<String>) {
    let mut wanted: BTreeMap<String, Wanted> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for &source in owners {
        let template = template_of(sources, source);
        for (release, backend) in torch.chosen.iter().rev() {
            let url = template.fill(release, backend);
            if let std::collections::btree_map::Entry::Vacant(entry) = wanted.entry(url) {
                order.push(entry.key().clone());
                entry.insert(Wanted {
                    source,
                    release: release.clone().without_local(),
                    backend: backend.clone(),
                });
            }
        }
    }
    (wanted, order)
}

fn log_failure(url: &str, error: &IndexError) {
    tracing::warn!(url = %wheelgate_index::upstream::redact(url), error = %wheelgate_index::error_chain::source_chain(error), "a per-build page failed; its builds are missing");
}

/// The template of the per-build source `source`.
fn template_of(sources: &Sources, source: SourceId) -> &UrlTemplate {
    sources
        .get(source)
        .template
        .as_ref()
        .expect("a per-build source has a template")
}

/// Whether `filename` is a wheel of `project` (only wheels can carry a derived pin).
pub fn is_wheel_of(filename: &str, project: &str) -> bool {
    matches!(
        filename.parse::<DistFilename>(),
        Ok(parsed @ DistFilename::Wheel(_)) if normalize_name(parsed.name()) == project
    )
}

/// The torch pin of files built against `release` for `backend`: its release line, less the
/// releases of that line that get another build (or none) on this machine.
pub fn pin_for(torch: &TorchChoices, release: &Version, backend: &Backend) -> String {
    let line = release_line(release);
    let mut pin = format!("=={line}.*");
    for version in &torch.versions {
        if release_line(version) == line && torch.chosen.get(version) != Some(backend) {
            let _ = write!(pin, ",!={}", version.clone().without_local());
        }
    }
    pin
}

/// The file as listed for the machine: linked to the proxy, with a `.metadata` (derived), and
/// the derived wheel's sha256 once known (`derived`).
fn listing(
    state: &AppState,
    candidate: &Candidate,
    derived: Option<String>,
    project: &str,
) -> IndexFile {
    let (file, binding) = (&candidate.file, &candidate.binding);
    IndexFile {
        filename: file.filename.clone(),
        url: bound_link(
            &state.sources.get(candidate.source).name,
            &binding.release,
            &binding.backend,
            &binding.pin,
            project,
            &file.filename,
        ),
        hashes: derived
            .map(|sha256| Hashes::from([("sha256".to_string(), sha256)]))
            .unwrap_or_default(),
        requires_python: file.requires_python.clone(),
        yanked: file.yanked.clone(),
        core_metadata: CoreMetadata::Present,
        gpg_sig: None,
        // The derived wheel's size is not the upstream's.
        size: None,
        upload_time: file.upload_time.clone(),
        // The upstream's attestations are of the upstream's bytes.
        provenance: None,
    }
}

/// The requirement a pin adds to core metadata.
pub fn requirement(pin: &str) -> String {
    format!("torch{pin}")
}

/// The upstream file behind a listing.
pub fn upstream_spec(cached: &CachedPage, file: &IndexFile) -> FileSpec {
    FileSpec {
        url: cached.page.file_url(file, &cached.url),
        sha256: file.sha256().map(str::to_ascii_lowercase),
        size: file.size,
        splice: None,
        listed_on: Some(std::sync::Arc::from(cached.url.as_str())),
    }
}

/// `/bound/<source>/<torch>/<backend>/<pin>/<project>/<filename>`, each segment
/// percent-encoded.
pub fn bound_link(
    source: &str,
    release: &Version,
    backend: &Backend,
    pin: &str,
    project: &str,
    filename: &str,
) -> String {
    let mut link = String::from("/bound");
    for segment in [
        source,
        &release.to_string(),
        &backend.to_string(),
        pin,
        project,
        filename,
    ] {
        link.push('/');
        crate::rewrite::push_encoded(&mut link, segment);
    }
    link
}

/// A `/bound/` request, checked: the per-build source, the torch release and build whose page
/// lists the file, and a pin of that release's line only (`==2.10.*` with `!=2.10.x`
/// exclusions), so a client can neither make the proxy fetch another URL nor derive files
/// with pins of its choosing.
#[derive(Debug)]
pub struct BoundRequest {
    pub source: SourceId,
    pub release: Version,
    pub backend: Backend,
    pub pin: String,
    pub page_url: String,
}

impl BoundRequest {
    /// Checks the segments of a `/bound/` path (percent-decoded by the router).
    pub fn parse(
        state: &AppState,
        source: &str,
        release: &str,
        backend: &str,
        pin: &str,
    ) -> Result<BoundRequest, String> {
        let (id, found) = state
            .sources
            .by_name(source)
            .filter(|(_, s)| s.template.is_some())
            .ok_or_else(|| format!("`{}` is not a per-build source", source.escape_default()))?;
        let release = Version::from_str(release)
            .ok()
            .filter(|v| v.local().is_empty())
            .ok_or_else(|| format!("`{}` is not a torch release", release.escape_default()))?;
        let backend: Backend = backend.parse().map_err(|err| format!("{err}"))?;
        check_pin(pin, &release)?;
        let page_url = found
            .template
            .as_ref()
            .expect("checked above")
            .fill(&release, &backend);
        Ok(BoundRequest {
            source: id,
            release,
            backend,
            pin: pin.to_string(),
            page_url,
        })
    }
}

/// A pin as [`pin_for`] writes them, of `release`'s line.
fn check_pin(pin: &str, release: &Version) -> Result<(), String> {
    let bad = || {
        format!(
            "`{}` is not a torch pin of this release line",
            pin.escape_default()
        )
    };
    let specifiers = VersionSpecifiers::from_str(pin).map_err(|_| bad())?;
    let line = release_line(release);
    let mut iter = specifiers.iter();
    let first = iter.next().ok_or_else(bad)?;
    if *first.operator() != Operator::EqualStar || release_line(first.version()) != line {
        return Err(bad());
    }
    let mut count = 0;
    for specifier in iter {
        count += 1;
        if *specifier.operator() != Operator::NotEqual
            || release_line(specifier.version()) != line
            || count > MAX_EXCLUSIONS
        {
            return Err(bad());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::from_str(text).unwrap()
    }

    #[test]
    fn pins_exclude_the_releases_of_the_line_that_get_another_build() {
        let cu128: Backend = "cu128".parse().unwrap();
        let cu130: Backend = "cu130".parse().unwrap();
        let torch = TorchChoices {
            versions: vec![v("2.9.0"), v("2.10.0"), v("2.10.1"), v("2.10.2")],
            chosen: BTreeMap::from([
                (v("2.9.0"), cu128.clone()),
                (v("2.10.0"), cu128.clone()),
                (v("2.10.1"), cu130.clone()),
                (v("2.10.2"), cu128.clone()),
            ]),
            elsewhere: Vec::new(),
        };
        assert_eq!(pin_for(&torch, &v("2.9.0"), &cu128), "==2.9.*");
        assert_eq!(pin_for(&torch, &v("2.10.0"), &cu128), "==2.10.*,!=2.10.1");
        assert_eq!(
            pin_for(&torch, &v("2.10.1"), &cu130),
            "==2.10.*,!=2.10.0,!=2.10.2"
        );
        for pin in ["==2.10.*", "==2.10.*,!=2.10.1"] {
            check_pin(pin, &v("2.10.0")).unwrap();
        }
        for pin in ["==2.9.*", ">=2.10", "==2.10.*,>=1", "==2.10.*,!=2.9.1", ""] {
            assert!(check_pin(pin, &v("2.10.0")).is_err(), "{pin}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Whatever builds torch's releases get on a machine, the pin added to a file listed for
        /// (release, backend) admits exactly the torch releases that get that backend in that
        /// release's line: a bound file can never be installed beside a torch of another build.
        #[test]
        fn a_pin_admits_exactly_the_torch_releases_of_its_build(
            releases in proptest::collection::btree_map(
                (2u64..4, 0u64..12, 0u64..4),
                proptest::option::of(0usize..4),
                1..24,
            ),
            pick in 0usize..64,
        ) {
            let backends: Vec<Backend> = ["cpu", "cu126", "cu128", "rocm6.4"]
                .iter()
                .map(|b| b.parse().unwrap())
                .collect();
            let versions: Vec<Version> = releases
                .keys()
                .map(|(major, minor, patch)| v(&format!("{major}.{minor}.{patch}")))
                .collect();
            let chosen: BTreeMap<Version, Backend> = releases
                .iter()
                .zip(&versions)
                .filter_map(|((_, b), version)| b.map(|b| (version.clone(), backends[b].clone())))
                .collect();
            proptest::prop_assume!(!chosen.is_empty());
            let (release, backend) = chosen.iter().nth(pick % chosen.len()).unwrap();
            let torch = TorchChoices { versions: versions.clone(), chosen: chosen.clone(), elsewhere: Vec::new() };
            let pin = pin_for(&torch, release, backend);
            check_pin(&pin, release).unwrap();
            let specifiers = VersionSpecifiers::from_str(&pin).unwrap();
            for version in &versions {
                let same_build = release_line(version) == release_line(release)
                    && chosen.get(version) == Some(backend);
                proptest::prop_assert_eq!(specifiers.contains(version), same_build, "{} {}", pin, version);
            }
        }
    }

    #[test]
    fn links_carry_every_segment_encoded() {
        assert_eq!(
            bound_link(
                "pyg",
                &v("2.10.0"),
                &"cu128".parse().unwrap(),
                "==2.10.*,!=2.10.1",
                "torch-scatter",
                "torch_scatter-2.1.2+pt210cu128-cp312-cp312-linux_x86_64.whl"
            ),
            "/bound/pyg/2.10.0/cu128/%3D%3D2.10.%2A%2C%21%3D2.10.1/torch-scatter/torch_scatter-2.1.2%2Bpt210cu128-cp312-cp312-linux_x86_64.whl"
        );
    }
}
