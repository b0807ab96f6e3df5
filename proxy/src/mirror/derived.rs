//! The derived wheels a store holds: a variant wheel whose `METADATA` carries PEP 817
//! `variant_label` markers is served with them decided (`crate::derive`, because pip 26.2 and
//! later refuse a wheel whose `METADATA` differs from its `.metadata`), so the sync builds each
//! one from the upstream wheel it stored, keeps it in the store, and its locks list the
//! derived wheel's own sha256 and size: the bytes the server answers their URLs with.

use std::collections::HashMap;

use futures_util::TryStreamExt;
use wheelgate_resolver::variants::choose::variant_label;

use super::plan::{FileKind, Plan, PlannedFile};
use super::sync::{Failure, error_chain};
use crate::cache::files::FileCache;
use crate::derive::{Change, Source, derive};
use crate::upstream::UpstreamClient;

/// A derived wheel's identity, as a lock lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedWheel {
    pub sha256: String,
    pub size: u64,
}

/// Derived wheels by the URL of the upstream wheel each is derived from.
#[derive(Debug, Clone, Default)]
pub struct DerivedWheels(HashMap<String, DerivedWheel>);

impl DerivedWheels {
    /// The wheel served in place of the upstream wheel at `url`, if it is derived.
    pub fn get(&self, url: &str) -> Option<&DerivedWheel> {
        self.0.get(url)
    }
}

/// Builds, in `files`, the derived wheel of every variant wheel of `plan` whose metadata the
/// server changes: from the store's copy of the upstream wheel when it has one, else from the
/// upstream. A wheel that cannot be derived is a failure (the server would answer it with
/// bytes its lock does not name).
pub async fn derive_variant_wheels(
    plan: &Plan,
    files: &FileCache,
    client: &UpstreamClient,
) -> (DerivedWheels, Vec<Failure>) {
    let mut derived = DerivedWheels::default();
    let mut failures = Vec::new();
    for file in &plan.files {
        if file.kind != FileKind::Distribution {
            continue;
        }
        let Some(label) = variant_label(&file.filename) else {
            continue;
        };
        match derive_one(file, label, files, client).await {
            Ok(Some(wheel)) => {
                derived.0.insert(file.spec.url.clone(), wheel);
            }
            Ok(None) => {}
            Err(message) => failures.push(Failure {
                what: file.filename.clone(),
                message,
            }),
        }
    }
    (derived, failures)
}

/// The derived wheel of `file` for `label`, committed in `files`; `None` when deciding the
/// markers changes nothing (the upstream wheel is served as it is).
async fn derive_one(
    file: &PlannedFile,
    label: &str,
    files: &FileCache,
    client: &UpstreamClient,
) -> Result<Option<DerivedWheel>, String> {
    let source = match files.committed_path(&file.spec) {
        Some(path) => Source::Local(path),
        None => Source::Upstream(client),
    };
    let change = Change::DecideVariantLabel(label.to_string());
    let derivation = derive(source, &file.spec, &file.filename, &change)
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
