//! `[catalog]`: the build facts the process runs with. The built-in catalog, or with an
//! operator's overlay (`extend`, a file in the catalog's own format; layering rules in
//! `wheelgate_resolver::catalog::Overlaid`) that adds or corrects releases, backends,
//! architecture sets and routing names between wheelgate releases.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wheelgate_resolver::Catalog;
use wheelgate_resolver::catalog::{EMBEDDED_CATALOG, OverlayError, OverlayFact};

/// The `[catalog]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogConfig {
    /// A file layered over the built-in catalog (`/etc/wheelgate/catalog-extra.toml`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend: Option<PathBuf>,
}

impl CatalogConfig {
    /// Whether the section says nothing (the built-in catalog).
    pub fn is_empty(&self) -> bool {
        self.extend.is_none()
    }

    /// The catalog this section describes, read and checked now.
    pub fn load(&self) -> Result<LoadedCatalog, CatalogFileError> {
        let Some(path) = &self.extend else {
            return Ok(LoadedCatalog {
                catalog: Catalog::embedded(),
                overlay: None,
                facts: Vec::new(),
            });
        };
        let text = std::fs::read_to_string(path).map_err(|source| CatalogFileError::Read {
            path: path.clone(),
            source,
        })?;
        let overlaid =
            Catalog::from_toml_with_overlay(EMBEDDED_CATALOG, &text).map_err(|source| {
                CatalogFileError::Overlay {
                    path: path.clone(),
                    source: Box::new(source),
                }
            })?;
        Ok(LoadedCatalog {
            // Once per start (and per `select` or `mirror` run): the process's catalog lives as
            // long as the process, as the built-in one does.
            catalog: Box::leak(Box::new(overlaid.catalog)),
            overlay: Some(path.clone()),
            facts: overlaid.facts,
        })
    }

    /// `extend` relative to `dir` (the configuration file's directory) when it is relative.
    pub fn resolved_against(&mut self, dir: &Path) {
        if let Some(path) = &mut self.extend
            && path.is_relative()
        {
            *path = dir.join(&*path);
        }
    }
}

/// A loaded catalog, compared by identity (each load is its own): what a checked
/// configuration holds.
#[derive(Debug, Clone, Copy)]
pub struct CatalogRef(pub &'static Catalog);

impl PartialEq for CatalogRef {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl std::ops::Deref for CatalogRef {
    type Target = Catalog;

    fn deref(&self) -> &Catalog {
        self.0
    }
}

/// The catalog a process runs with, and where its facts came from.
#[derive(Debug, Clone)]
pub struct LoadedCatalog {
    pub catalog: &'static Catalog,
    /// The overlay file, when one is layered.
    pub overlay: Option<PathBuf>,
    /// What the overlay added or corrected.
    pub facts: Vec<OverlayFact>,
}

/// An overlay that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogFileError {
    #[error("cannot read the catalog overlay `{path}` (`[catalog] extend`)")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the catalog overlay `{path}` (`[catalog] extend`) is not valid: {source}; fix it, or remove `extend` to use the built-in catalog"
    )]
    Overlay {
        path: PathBuf,
        #[source]
        source: Box<OverlayError>,
    },
}

/// The catalog a server runs with, swapped whole when it reloads its overlay (`SIGHUP`). Each
/// catalog lives as long as the process: a request may still hold the previous one.
#[derive(Debug)]
pub struct CatalogCell(std::sync::RwLock<&'static Catalog>);

impl CatalogCell {
    /// A cell holding `catalog`.
    pub fn new(catalog: &'static Catalog) -> CatalogCell {
        CatalogCell(std::sync::RwLock::new(catalog))
    }

    /// The catalog now.
    pub fn get(&self) -> &'static Catalog {
        *self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Puts `catalog` in force from the next read on.
    pub fn set(&self, catalog: &'static Catalog) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = catalog;
    }
}
