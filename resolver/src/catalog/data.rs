//! Reading the catalog's TOML form into [`Catalog`].

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{BackendEntry, Catalog, DriverFloor, Release, ReleaseLine};
use crate::backend::Backend;
use crate::machine::{GfxTarget, Os, Platform};
use crate::version::{ComputeCapability, DottedVersion};

/// A catalog that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("the catalog is not valid TOML of the expected shape")]
    /// The text is not TOML, or its keys or values do not have the catalog's shape.
    Toml(#[source] toml::de::Error),
    #[error("`{0}` is not a release line (expected `major.minor` such as `2.9`)")]
    /// A release line that is not `major.minor`; holds the text.
    InvalidReleaseLine(String),
    #[error("the catalog names an unknown CUDA family `{0}` (expected a number such as `12`)")]
    /// A `cuda_families` key that is not a CUDA major version; holds the key.
    InvalidFamily(String),
    #[error("release {release}: backend `{backend}` refers to an unknown sm set `{set}`")]
    /// A CUDA backend names an sm set the catalog does not define.
    UnknownSmSet {
        /// The release line (`2.9`).
        release: String,
        /// The backend (`cu128`).
        backend: String,
        /// The sm set's name as written.
        set: String,
    },
    #[error("the catalog has an invalid value `{value}` in {place}: {reason}")]
    /// A value that does not parse as what its key needs.
    InvalidValue {
        /// The key holding it (`rocm_gfx`, `xpu.device_ips`).
        place: String,
        /// The value as written.
        value: String,
        /// What was expected.
        reason: String,
    },
    #[error("the catalog lists no release")]
    /// The catalog lists no release at all.
    NoRelease,
    #[error(
        "`routing.published_on_pypi` names `{0}`, which is not a routing name (in neither `pytorch_built` nor `triton_family`)"
    )]
    /// A name published on PyPI that the PyTorch index does not own; holds the name.
    PublishedNotRouted(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    /// The day the facts were last checked (`2026-11-25`).
    #[serde(default)]
    updated: Option<String>,
    cuda_families: BTreeMap<String, RawFloor>,
    sm_sets: BTreeMap<String, Vec<ComputeCapability>>,
    rocm_gfx: BTreeMap<String, Vec<GfxTarget>>,
    xpu: RawXpu,
    release: Vec<RawRelease>,
    routing: RawRouting,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFloor {
    linux: DottedVersion,
    windows: DottedVersion,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawXpu {
    device_ips: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelease {
    torch: String,
    #[serde(default)]
    inferred: bool,
    #[serde(default)]
    companions: BTreeMap<String, String>,
    #[serde(default)]
    plain: BTreeMap<String, Backend>,
    backends: BTreeMap<Backend, RawBackend>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackend {
    sm: Option<String>,
    sm_windows: Option<String>,
    sm_aarch64: Option<String>,
    #[serde(default)]
    ptx: Vec<ComputeCapability>,
    os: Option<Vec<Os>>,
    platforms: Option<Vec<Platform>>,
    #[serde(default)]
    inferred: bool,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRouting {
    pytorch_built: Vec<String>,
    triton_family: Vec<String>,
    #[serde(default)]
    published_on_pypi: Vec<String>,
}

impl Catalog {
    /// Reads a catalog in the format of `resolver/data/catalog.toml`.
    pub fn from_toml(content: &str) -> Result<Catalog, CatalogError> {
        let raw: RawCatalog = toml::from_str(content).map_err(CatalogError::Toml)?;
        let mut cuda_families = BTreeMap::new();
        for (family, floor) in raw.cuda_families {
            let number: u16 = family
                .parse()
                .map_err(|_| CatalogError::InvalidFamily(family.clone()))?;
            cuda_families.insert(
                number,
                DriverFloor {
                    linux: floor.linux,
                    windows: floor.windows,
                },
            );
        }
        let mut rocm_gfx = Vec::new();
        for (name, targets) in raw.rocm_gfx {
            let invalid = || CatalogError::InvalidValue {
                place: "rocm_gfx".to_string(),
                value: name.clone(),
                reason: "expected `rocmX.Y`".to_string(),
            };
            let Ok(Backend::Rocm(version)) = name.parse::<Backend>() else {
                return Err(invalid());
            };
            rocm_gfx.push((version, targets));
        }
        rocm_gfx.sort_by(|a, b| b.0.cmp(&a.0));
        let mut releases = Vec::new();
        for raw_release in raw.release {
            releases.push(convert_release(raw_release, &raw.sm_sets)?);
        }
        if releases.is_empty() {
            return Err(CatalogError::NoRelease);
        }
        releases.sort_by_key(|r: &Release| std::cmp::Reverse(r.torch));
        for platform in &raw.xpu.device_ips {
            if platform.parse::<DottedVersion>().is_err() {
                return Err(CatalogError::InvalidValue {
                    place: "xpu.device_ips".to_string(),
                    value: platform.clone(),
                    reason: "expected `arch.release.revision`".to_string(),
                });
            }
        }
        if let Some(updated) = &raw.updated
            && super::date::days_since_epoch(updated).is_none()
        {
            return Err(CatalogError::InvalidValue {
                place: "updated".to_string(),
                value: updated.clone(),
                reason: "expected a date `YYYY-MM-DD`".to_string(),
            });
        }
        let routing = raw.routing;
        if let Some(stray) = routing.published_on_pypi.iter().find(|name| {
            !routing.pytorch_built.contains(name) && !routing.triton_family.contains(name)
        }) {
            return Err(CatalogError::PublishedNotRouted(stray.clone()));
        }
        Ok(Catalog {
            updated: raw.updated,
            cuda_families,
            sm_sets: raw.sm_sets,
            rocm_gfx,
            xpu_device_ips: raw.xpu.device_ips,
            releases,
            pytorch_built: routing.pytorch_built.into_iter().collect(),
            triton_family: routing.triton_family.into_iter().collect(),
            published_on_pypi: routing.published_on_pypi.into_iter().collect(),
        })
    }
}

fn convert_release(
    raw: RawRelease,
    sm_sets: &BTreeMap<String, Vec<ComputeCapability>>,
) -> Result<Release, CatalogError> {
    let torch: ReleaseLine = raw.torch.parse()?;
    let mut companions = BTreeMap::new();
    for (project, line) in raw.companions {
        companions.insert(crate::filename::normalize_name(&project), line.parse()?);
    }
    for key in raw.plain.keys() {
        key.parse::<Platform>()
            .map_err(|err| CatalogError::InvalidValue {
                place: format!("release {torch} plain"),
                value: key.clone(),
                reason: err.to_string(),
            })?;
    }
    let mut backends = BTreeMap::new();
    for (backend, entry) in raw.backends {
        for set in [&entry.sm, &entry.sm_windows, &entry.sm_aarch64]
            .into_iter()
            .flatten()
        {
            if !sm_sets.contains_key(set) {
                return Err(CatalogError::UnknownSmSet {
                    release: torch.to_string(),
                    backend: backend.to_string(),
                    set: set.clone(),
                });
            }
        }
        backends.insert(
            backend,
            BackendEntry {
                sm: entry.sm,
                sm_windows: entry.sm_windows,
                sm_aarch64: entry.sm_aarch64,
                ptx: entry.ptx,
                os: entry.os,
                platforms: entry.platforms,
                inferred: entry.inferred,
                note: entry.note,
            },
        );
    }
    // Normalize plain keys so lookups by `Platform::to_string` always match.
    let plain = raw
        .plain
        .into_iter()
        .filter_map(|(key, backend)| {
            key.parse::<Platform>()
                .ok()
                .map(|p| (Catalog::platform_key(p), backend))
        })
        .collect();
    Ok(Release {
        torch,
        inferred: raw.inferred,
        companions,
        plain,
        backends,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unknown_sm_set_and_bad_shapes() {
        let bad = super::super::EMBEDDED_CATALOG.replace("sm = \"cu13x\"", "sm = \"cu99x\"");
        assert!(matches!(
            Catalog::from_toml(&bad),
            Err(CatalogError::UnknownSmSet { .. })
        ));
        assert!(matches!(
            Catalog::from_toml("garbage ="),
            Err(CatalogError::Toml(_))
        ));
        let bad = super::super::EMBEDDED_CATALOG.replace("torch = \"2.9\"", "torch = \"two\"");
        assert!(matches!(
            Catalog::from_toml(&bad),
            Err(CatalogError::InvalidReleaseLine(_))
        ));
    }

    #[test]
    fn rejects_a_name_published_on_pypi_that_is_no_routing_name() {
        let bad = super::super::EMBEDDED_CATALOG
            .replace("published_on_pypi = [", "published_on_pypi = [\"numpy\", ");
        let error = Catalog::from_toml(&bad).unwrap_err();
        assert!(
            matches!(&error, CatalogError::PublishedNotRouted(name) if name == "numpy"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "`routing.published_on_pypi` names `numpy`, which is not a routing name (in neither `pytorch_built` nor `triton_family`)"
        );
        // A catalog without the list publishes nothing on PyPI.
        let start = super::super::EMBEDDED_CATALOG
            .find("published_on_pypi = [")
            .unwrap();
        let end = start
            + super::super::EMBEDDED_CATALOG[start..]
                .find("\n]\n")
                .unwrap()
            + 3;
        let without = format!(
            "{}{}",
            &super::super::EMBEDDED_CATALOG[..start],
            &super::super::EMBEDDED_CATALOG[end..]
        );
        let catalog = Catalog::from_toml(&without).unwrap();
        assert!(!catalog.is_published_on_pypi("torch"));
        assert!(catalog.routes_to_pytorch("torch"));
    }
}
