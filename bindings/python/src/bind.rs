//! `wheelgate.choose(..., torch=, metadata=)`: a project built against torch bound to torch's
//! builds by its metadata, by the resolver's binding step
//! ([`wheelgate_resolver::select::bind`]) the proxy uses; the metadata is the installer's, asked
//! for one file per build.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMapping, PyString};
use wheelgate_files::metadata::parse_metadata;
use wheelgate_resolver::index::ProjectPage;
use wheelgate_resolver::select::bind::{Pins, TorchChoices, apply_pins, bound_builds};
use wheelgate_resolver::select::{FileRef, PageSelection, TorchPin};
use wheelgate_resolver::{Catalog, Machine, Policy};
use wheelgate_server::rewrite::select_files;

/// The project being chosen for, and for whom.
pub struct Context<'a> {
    pub machine: &'a Machine,
    pub policy: &'a Policy,
    pub project: &'a str,
    pub page: &'a ProjectPage,
}

/// Binds `selection` to the builds torch (`torch_page`, torch's candidates) gets on the
/// machine, each build's pin read from `metadata`. torch's own release train (torch,
/// torchvision, torchaudio) is bound by the catalog already and left as it is.
pub fn bind(
    context: &Context<'_>,
    torch_page: &ProjectPage,
    metadata: &Bound<'_, PyAny>,
    selection: &mut PageSelection,
) -> PyResult<()> {
    let catalog = Catalog::embedded();
    if catalog.is_release_train_project(&selection.project) {
        return Ok(());
    }
    let torch = TorchChoices::from_selection(&select_files(
        catalog,
        context.machine,
        context.policy,
        "torch",
        torch_page,
    ));
    let refs: Vec<FileRef<'_>> = context.page.files.iter().map(FileRef::from).collect();
    let builds = bound_builds(
        catalog,
        context.machine,
        context.policy,
        context.project,
        &refs,
        selection,
    );
    let mut pins = Pins::new();
    loop {
        let pending = builds.pending(selection, &pins, &torch);
        if pending.is_empty() {
            break;
        }
        for (build, index) in pending {
            let filename = &context.page.files[index].filename;
            let pin = match metadata_of(metadata, filename)? {
                Some(text) => parse_metadata(&text, filename)
                    .map(|parsed| TorchPin::of(&parsed.requires_dist))
                    .map_err(|err| err.to_string()),
                None => Err("`metadata` has none for it".to_string()),
            };
            pins.insert(build, pin);
        }
    }
    apply_pins(selection, &builds, &pins, &torch);
    Ok(())
}

/// `filename`'s core metadata from the caller's mapping or callable; `None` when it has none.
/// An exception the callable raises is the caller's and propagates.
fn metadata_of(metadata: &Bound<'_, PyAny>, filename: &str) -> PyResult<Option<Vec<u8>>> {
    let value = if let Ok(mapping) = metadata.cast::<PyMapping>() {
        if !mapping.contains(filename)? {
            return Ok(None);
        }
        mapping.get_item(filename)?
    } else if metadata.is_callable() {
        metadata.call1((filename,))?
    } else {
        return Err(PyTypeError::new_err(format!(
            "`metadata` is a `{}`; give a mapping or a callable from a filename to its core metadata",
            metadata.get_type().name()?
        )));
    };
    if value.is_none() {
        Ok(None)
    } else if let Ok(text) = value.cast::<PyString>() {
        Ok(Some(text.to_cow()?.as_bytes().to_vec()))
    } else if let Ok(bytes) = value.cast::<PyBytes>() {
        Ok(Some(bytes.as_bytes().to_vec()))
    } else {
        Err(PyTypeError::new_err(format!(
            "the metadata of `{filename}` is a `{}`; give str or bytes",
            value.get_type().name()?
        )))
    }
}
