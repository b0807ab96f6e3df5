//! The derived wheels a store holds: a variant wheel whose `METADATA` carries PEP 817
//! `variant_label` markers is served with them decided, and a wheel bound by page with its
//! torch pin added (`wheelgate_files::derive`, because pip 26.2 and later refuse a wheel whose `METADATA`
//! differs from its `.metadata`), so the sync builds each one from the upstream wheel it
//! stored, keeps it in the store, and its locks list the derived wheel's own sha256 and size:
//! the bytes the server answers their URLs with.

use std::collections::HashMap;

use futures_util::TryStreamExt;
use wheelgate_resolver::variants::choose::variant_label;

use super::candidates::is_wheel;
use super::failure::{Failure, error_chain};
use super::plan::{FileKind, Plan};
use super::resolve::ResolvedPackage;
use wheelgate_files::cache::{FileCache, FileSpec};
use wheelgate_files::derive::{Change, Source, derive};
use wheelgate_index::upstream::UpstreamClient;
use wheelgate_server::binding::by_page::upstream_spec;
use wheelgate_server::rewrite::file_link;

/// A derived wheel's identity, as a lock lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedWheel {
    pub sha256: String,
    pub size: u64,
}

/// Derived wheels: a variant wheel's by the URL of the upstream wheel it is derived from, a
/// bound wheel's by its `/bound/` link (one upstream wheel may be bound with several pins).
#[derive(Debug, Clone, Default)]
pub struct DerivedWheels(HashMap<String, DerivedWheel>);

impl DerivedWheels {
    /// The wheel served in place of the upstream wheel at `url` (or at the link `url`), if
    /// it is derived.
    pub fn get(&self, url: &str) -> Option<&DerivedWheel> {
        self.0.get(url)
    }
}

/// Builds, in `files`, the derived wheel of every wheel of `plan` whose metadata the server
/// changes (variant wheels, wheels bound by page): from the store's copy of the upstream wheel
/// when it has one, else from the upstream. A wheel that cannot be derived is a failure (the
/// server would answer it with bytes its lock does not name).
pub async fn derive_wheels(
    plan: &Plan,
    files: &FileCache,
    client: &UpstreamClient,
) -> (DerivedWheels, Vec<Failure>) {
    let mut derived = DerivedWheels::default();
    let mut failures = Vec::new();
    let mut wanted: Vec<(String, &str, &FileSpec, Change)> = Vec::new();
    for file in &plan.files {
        if file.kind != FileKind::Distribution {
            continue;
        }
        if let Some(label) = variant_label(&file.filename) {
            let change = Change::DecideVariantLabel(label.to_string());
            wanted.push((file.spec.url.clone(), &file.filename, &file.spec, change));
        }
    }
    let mut specs: Vec<(String, String, FileSpec, Change)> = Vec::new();
    for package in plan.resolutions.iter().flat_map(|r| &r.packages) {
        if let Some(link_of) = device_links(package) {
            for &index in &package.files {
                let file = &package.page.page.files[index];
                let Some(link) = link_of(&file.filename) else {
                    continue;
                };
                if !specs.iter().any(|(known, ..)| *known == link) {
                    let spec = upstream_spec(&package.page, file);
                    let change = Change::RequireExtras(package.device_extras.clone());
                    specs.push((link, file.filename.clone(), spec, change));
                }
            }
        }
        let Some(listing) = &package.bound else {
            continue;
        };
        for &index in &package.files {
            let file = &listing.page.page.files[index];
            let bound = &listing.bound[index];
            let link = bound.link(&package.project, &file.filename);
            if specs.iter().any(|(known, ..)| *known == link) {
                continue;
            }
            let spec = upstream_spec(&listing.page, file);
            specs.push((link, file.filename.clone(), spec, bound.change()));
        }
    }
    for (key, filename, spec, change) in &specs {
        wanted.push((key.clone(), filename, spec, change.clone()));
    }
    for (key, filename, spec, change) in wanted {
        match derive_one(spec, filename, &change, files, client).await {
            Ok(Some(wheel)) => {
                derived.0.insert(key, wheel);
            }
            Ok(None) => {}
            Err(message) => failures.push(Failure {
                what: filename.to_string(),
                message,
            }),
        }
    }
    (derived, failures)
}

/// For a package served with device extras, the server's link to each of its wheels
/// (`/files/torch/x/device-gfx942/<wheel>`), under which its lock names the derived wheel;
/// `None` for a package served as it is, and for a file that is not a plain wheel.
pub fn device_links(package: &ResolvedPackage) -> Option<impl Fn(&str) -> Option<String> + '_> {
    if package.device_extras.is_empty() {
        return None;
    }
    let route = format!("{}/x/{}", package.project, package.device_extras.join("+"));
    Some(move |filename: &str| {
        (is_wheel(filename) && variant_label(filename).is_none())
            .then(|| file_link(&route, filename))
    })
}

/// The derived wheel of the upstream wheel `spec` (`filename`) under `change`, committed in
/// `files`; `None` when the change changes nothing (the upstream wheel is served as it is).
async fn derive_one(
    spec: &FileSpec,
    filename: &str,
    change: &Change,
    files: &FileCache,
    client: &UpstreamClient,
) -> Result<Option<DerivedWheel>, String> {
    let source = match files.committed_path(spec) {
        Some(path) => Source::Local(path),
        None => Source::Upstream(client),
    };
    let derivation = derive(source, spec, filename, change)
        .await
        .map_err(|err| format!("cannot be derived: {}", error_chain(&err)))?;
    if !derivation.changed {
        return Ok(None);
    }
    let cached = files
        .fetch(client, &derivation.spec, false)
        .await
        .map_err(|err| error_chain(&err))?;
    // Reading to the end waits for the commit (a failed build ends the stream with an error).
    let mut size = 0u64;
    let mut body = std::pin::pin!(cached.stream(0, None));
    while let Some(chunk) = body.try_next().await.map_err(|err| err.to_string())? {
        size += chunk.len() as u64;
    }
    let sha256 = files
        .derived_sha256_committed(&derivation.spec)
        .await
        .ok_or_else(|| "the derived wheel was built but not committed".to_string())?;
    Ok(Some(DerivedWheel { sha256, size }))
}
