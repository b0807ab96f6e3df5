//! Device extras: from ROCm 7.13 (AMD TheRock's multi-arch packaging), torch from AMD's index is
//! host code only and the GPU kernels come as `amd-torch-device-gfxNNNN` packages behind extras
//! (`pip install "torch[device-gfx942]"`); a bare `pip install torch` installs a torch that
//! cannot run on the GPU. Where a kept build's core metadata declares `device-*` extras:
//!
//! - on a machine whose every gfx target in use has its extra, the build is served with those
//!   extras' requirements made unconditional (its `.metadata` and a derived wheel,
//!   `wheelgate_files::derive`), one extra per distinct target: `pip install torch` brings the device
//!   package;
//! - on a machine whose target has no extra, the build is left out, so the installer moves to a
//!   version whose build runs here.
//!
//! Links: `/files/<project>/x/<extra>[+<extra>...]/<filename>`; the file is looked up on the
//! project's pages like any other.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use futures_util::stream;
use wheelgate_resolver::Machine;
use wheelgate_resolver::filename::DistFilename;
use wheelgate_resolver::index::{CoreMetadata, Hashes, ProjectPage};

use super::metadata::facts;
use crate::listing::Listing;
use crate::state::AppState;
use wheelgate_files::cache::FileSpec;
use wheelgate_files::derive::Change;

/// Metadata reads in flight at once for one page.
const CONCURRENT_READS: usize = 16;
/// How long one page waits for its wheels' derivations to be planned before it lists the rest
/// unchecked (their plans go on): well inside pip's 15 s read timeout.
const PLAN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// The most extras a link may name (one per distinct gfx target of a machine).
const MAX_EXTRAS: usize = 8;

/// The device extras this machine needs: `device-<gfx>` per distinct gfx target of its AMD
/// GPUs, sorted.
pub fn machine_extras(machine: &Machine) -> Vec<String> {
    let mut extras: Vec<String> = machine
        .amd
        .iter()
        .flat_map(|amd| &amd.gpus)
        .map(|gpu| format!("device-{}", gpu.gfx))
        .collect();
    extras.sort();
    extras.dedup();
    extras
}

/// Whether `text` is a `+`-joined list of device extras, as links carry them.
pub fn parse_extras(text: &str) -> Option<Vec<String>> {
    let extras: Vec<String> = text.split('+').map(str::to_string).collect();
    let valid = |extra: &String| {
        extra.strip_prefix("device-gfx").is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        })
    };
    (extras.len() <= MAX_EXTRAS && extras.iter().all(valid)).then_some(extras)
}

/// What device extras did to one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceNote {
    /// The public version (no local label).
    pub version: String,
    /// Whether its build is still served (with the extras required) or was left out.
    pub kept: bool,
    pub note: String,
}

/// `page` (rewritten for `machine`) with its builds that declare device extras served with the
/// machine's extras required, or left out where the machine's targets have none; `upstream` is
/// the page it was rewritten from (its files listed as `listing` says). What was done, per version, for
/// the log and `/explain/`.
pub async fn apply(
    state: &AppState,
    machine: &Machine,
    project: &str,
    upstream: &ProjectPage,
    listing: Listing<'_>,
    page: &mut ProjectPage,
) -> Vec<DeviceNote> {
    let needed = machine_extras(machine);
    if needed.is_empty() {
        return Vec::new();
    }
    // One file stands for its version's build: every wheel of a build declares the same extras.
    let mut by_version: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, file) in page.files.iter().enumerate() {
        if let Ok(parsed @ DistFilename::Wheel(_)) = file.filename.parse::<DistFilename>() {
            by_version
                .entry(parsed.version().clone().without_local().to_string())
                .or_default()
                .push(index);
        }
    }
    let reads: Vec<(String, usize)> = by_version
        .iter()
        .filter_map(|(version, indices)| {
            let name = &page.files[indices[0]].filename;
            upstream
                .files
                .iter()
                .position(|f| &f.filename == name)
                .map(|index| (version.clone(), index))
        })
        .collect();
    let provided: BTreeMap<String, Result<Vec<String>, String>> = stream::iter(reads)
        .map(|(version, index)| read_extras(state, upstream, listing, version, index))
        .buffer_unordered(CONCURRENT_READS)
        .collect()
        .await;
    let mut notes = Vec::new();
    let mut dropped = vec![false; page.files.len()];
    let joined = needed.join("+");
    for (version, extras) in &provided {
        let Ok(extras) = extras else { continue };
        if extras.is_empty() {
            continue;
        }
        let indices = &by_version[version];
        if let Some(missing) = needed.iter().find(|extra| !extras.contains(extra)) {
            notes.push(DeviceNote {
                version: version.clone(),
                kept: false,
                note: format!("its build declares device extras ({}), none for this machine's `{missing}`: left out, so installers move to a version whose build runs here", extras.join(", ")),
            });
            for &index in indices {
                dropped[index] = true;
            }
            continue;
        }
        let plans = plan_wheels(state, (upstream, listing), page, indices, &needed).await;
        let mut left_off = Vec::new();
        for (index, planned) in plans {
            let derived = match planned {
                Planned::Derived(derived) => derived,
                Planned::Refused(reason) => {
                    dropped[index] = true;
                    left_off.push(format!("`{}`: {reason}", page.files[index].filename));
                    continue;
                }
                // Not planned in time: listed unchecked, its plan going on.
                Planned::Late => None,
            };
            let file = &mut page.files[index];
            file.url = crate::rewrite::file_link(&format!("{project}/x/{joined}"), &file.filename);
            file.hashes = derived
                .map(|sha256| Hashes::from([("sha256".to_string(), sha256)]))
                .unwrap_or_default();
            file.size = None;
            file.provenance = None;
            file.core_metadata = CoreMetadata::Present;
        }
        left_off.sort();
        let listed = indices.len() - left_off.len();
        notes.push(DeviceNote {
            version: version.clone(),
            kept: listed > 0,
            note: if left_off.is_empty() {
                format!("served with the extras `{joined}` required (its device packages), in its `.metadata` and a derived wheel, so a plain `pip install {project}` brings them")
            } else {
                format!(
                    "served with the extras `{joined}` required (its device packages) in {listed} of its {} wheels; left off, since they cannot be served with the extras required: {}",
                    indices.len(),
                    left_off.join("; ")
                )
            },
        });
    }
    if dropped.iter().any(|d| *d) {
        leave_out(page, &dropped);
    }
    for note in &notes {
        tracing::debug!(project, version = %note.version, "{}", note.note);
    }
    notes
}

/// What planning a wheel's derived form with the extras required gave.
enum Planned {
    /// It can be made; its sha256 once a download here has made it.
    Derived(Option<String>),
    /// It cannot be made: why.
    Refused(String),
    /// Not planned within [`PLAN_WAIT`] (the plan goes on).
    Late,
}

/// The derived forms of `page`'s wheels at `indices` (files of `upstream`, listed as `listing`
/// says), with `extras` required, planned before they are listed (as bound wheels are): one that
/// cannot be made (no `METADATA`, ZIP64, a host without ranges and no cached copy) is left off
/// with its reason rather than listed with a `.metadata` and a file that answer 404 (issue 41
/// item 8).
async fn plan_wheels(
    state: &AppState,
    (upstream, listing): (&ProjectPage, Listing<'_>),
    page: &ProjectPage,
    indices: &[usize],
    extras: &[String],
) -> Vec<(usize, Planned)> {
    let change = Change::RequireExtras(extras.to_vec());
    let jobs: Vec<(usize, FileSpec, String)> = indices
        .iter()
        .filter_map(|&index| {
            let file = &page.files[index];
            let upstream_file = upstream
                .files
                .iter()
                .find(|f| f.filename == file.filename)?;
            let spec = listing.upstream_spec(upstream, upstream_file);
            Some((index, spec, file.filename.clone()))
        })
        .collect();
    let deadline = tokio::time::Instant::now() + PLAN_WAIT;
    let change = &change;
    stream::iter(jobs)
        .map(|(index, spec, filename)| async move {
            let plan =
                state
                    .derivations
                    .get((&state.client, &state.files), &spec, &filename, change);
            let planned = match tokio::time::timeout_at(deadline, plan).await {
                Ok(Ok(derivation)) => {
                    Planned::Derived(state.files.derived_sha256(&derivation.spec))
                }
                Ok(Err(err)) => Planned::Refused(wheelgate_index::error_chain::with_causes(&err)),
                Err(_) => Planned::Late,
            };
            (index, planned)
        })
        .buffer_unordered(CONCURRENT_READS)
        .collect()
        .await
}

/// `page` without the files `dropped` marks, its versions listed again.
fn leave_out(page: &mut ProjectPage, dropped: &[bool]) {
    let mut index = 0;
    page.files.retain(|_| {
        index += 1;
        !dropped[index - 1]
    });
    let mut versions: Vec<pep440_rs::Version> = page
        .files
        .iter()
        .filter_map(|f| f.filename.parse::<DistFilename>().ok())
        .map(|parsed| parsed.version().clone().without_local())
        .collect();
    versions.sort();
    versions.dedup();
    page.versions = versions.iter().map(ToString::to_string).collect();
}

/// The device extras of `upstream`'s file at `index`, for `version`.
async fn read_extras(
    state: &AppState,
    upstream: &ProjectPage,
    listing: Listing<'_>,
    version: String,
    index: usize,
) -> (String, Result<Vec<String>, String>) {
    let extras = facts(state, upstream, listing, &upstream.files[index])
        .await
        .map(|facts| facts.device_extras);
    (version, extras)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_extra_per_distinct_target_and_links_checked() {
        let machine: Machine = serde_json::from_str(r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx942"},{"gfx":"gfx942"},{"gfx":"gfx90a"}]}}"#).unwrap();
        assert_eq!(machine_extras(&machine), ["device-gfx90a", "device-gfx942"]);
        let cpu: Machine = serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap();
        assert!(machine_extras(&cpu).is_empty());
        assert_eq!(
            parse_extras("device-gfx90a+device-gfx942").unwrap(),
            ["device-gfx90a", "device-gfx942"]
        );
        for bad in [
            "",
            "device-gfx",
            "gfx942",
            "device-gfx942+../x",
            "device-GFX942",
        ] {
            assert!(parse_extras(bad).is_none(), "{bad}");
        }
    }
}
