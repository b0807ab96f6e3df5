//! The catalog of PyTorch builds: for each torch release line and backend, what the build needs
//! from a machine. Loaded from data (`resolver/data/catalog.toml`, embedded), with inference for
//! releases and backends the data does not know yet.

mod check;
mod check_variants;
mod data;
mod date;
mod infer;
mod overlay;
mod rules;

pub use check::{CheckReport, Finding, FindingKind};
pub use data::CatalogError;
pub use overlay::{Overlaid, OverlayError, OverlayFact};
pub use rules::{BackendRules, Inferred, Requirement, TrainRelease};

use std::collections::{BTreeMap, BTreeSet};

use crate::backend::Backend;
use crate::machine::{GfxTarget, Platform};
use crate::version::{ComputeCapability, DottedVersion};

/// The catalog wheelgate ships with, from `resolver/data/catalog.toml`.
pub const EMBEDDED_CATALOG: &str = include_str!("../../data/catalog.toml");

/// A torch release line, `major.minor` (`2.9`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReleaseLine {
    /// The major version (`2` in `2.9`).
    pub major: u64,
    /// The minor version (`9` in `2.9`).
    pub minor: u64,
}

impl std::fmt::Display for ReleaseLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for ReleaseLine {
    type Err = CatalogError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || CatalogError::InvalidReleaseLine(text.to_string());
        let (major, minor) = text.split_once('.').ok_or_else(error)?;
        Ok(ReleaseLine {
            major: major.parse().map_err(|_| error())?,
            minor: minor.parse().map_err(|_| error())?,
        })
    }
}

/// The NVIDIA driver a CUDA major family needs (minor-version compatibility).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverFloor {
    /// The lowest Linux driver, from NVIDIA's table "CUDA Toolkit and Minimum Required Driver
    /// Version for CUDA Minor Version Compatibility".
    pub linux: DottedVersion,
    /// The lowest Windows driver, from the same table.
    pub windows: DottedVersion,
}

/// What one backend of one release was built with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BackendEntry {
    /// Name of the Linux `x86_64` sm set.
    pub sm: Option<String>,
    /// Name of the Windows sm set; the Linux `x86_64` set applies when absent.
    pub sm_windows: Option<String>,
    /// Name of the Linux aarch64 sm set; CUDA builds exist on aarch64 only where it is given.
    pub sm_aarch64: Option<String>,
    /// Compute capabilities the build also ships PTX for (JIT-compiled on newer GPUs).
    pub ptx: Vec<ComputeCapability>,
    /// Operating systems the build exists for, when restricted.
    pub os: Option<Vec<crate::machine::Os>>,
    /// Every platform the build exists for, when the catalog says so; otherwise the defaults of
    /// its kind apply (see [`Catalog::offered_backends`]).
    pub platforms: Option<Vec<Platform>>,
    /// The build's existence or contents were not confirmed from a primary source.
    pub inferred: bool,
    /// A note on the build, shown with the choice.
    pub note: Option<String>,
}

/// One torch release line and its release train.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The release line (`2.9`).
    pub torch: ReleaseLine,
    /// The whole entry was not confirmed from a primary source.
    pub inferred: bool,
    /// Normalized project name → its release line in this train (`torchvision` → `0.24`).
    pub companions: BTreeMap<String, ReleaseLine>,
    /// What an unlabelled wheel of this release is, per platform.
    pub plain: BTreeMap<String, Backend>,
    /// The backends the release was built for, with what each was built with.
    pub backends: BTreeMap<Backend, BackendEntry>,
}

/// The whole catalog. Build it with [`Catalog::embedded`] or [`Catalog::from_toml`].
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The day its facts were last checked (`2026-11-25`), when it says.
    pub(crate) updated: Option<String>,
    pub(crate) cuda_families: BTreeMap<u16, DriverFloor>,
    pub(crate) sm_sets: BTreeMap<String, Vec<ComputeCapability>>,
    /// Newest first.
    pub(crate) rocm_gfx: Vec<(DottedVersion, Vec<GfxTarget>)>,
    pub(crate) xpu_device_ips: Vec<String>,
    /// Newest first.
    pub(crate) releases: Vec<Release>,
    pub(crate) pytorch_built: BTreeSet<String>,
    pub(crate) triton_family: BTreeSet<String>,
    /// Routing names PyTorch also publishes on PyPI; each is in one of the two sets above.
    pub(crate) published_on_pypi: BTreeSet<String>,
}

impl Catalog {
    /// The day the catalog's facts were last checked (`2026-11-25`), when it says, and that day
    /// as days since 1970-01-01.
    pub fn updated(&self) -> Option<(&str, u64)> {
        let text = self.updated.as_deref()?;
        Some((text, date::days_since_epoch(text)?))
    }

    /// The catalog compiled into this library.
    pub fn embedded() -> &'static Catalog {
        static CATALOG: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        CATALOG.get_or_init(|| {
            Catalog::from_toml(EMBEDDED_CATALOG).expect("the embedded catalog is valid (tested)")
        })
    }

    /// The release lines, newest first.
    pub fn releases(&self) -> &[Release] {
        &self.releases
    }

    /// The newest release line the catalog knows, confirmed or not.
    pub fn newest_release(&self) -> &Release {
        &self.releases[0]
    }

    /// The driver floor of a CUDA major family, if known.
    pub fn driver_floor(&self, family: u16) -> Option<&DriverFloor> {
        self.cuda_families.get(&family)
    }

    /// A named set of compiled compute capabilities (`cu128_211`).
    pub fn sm_set(&self, name: &str) -> Option<&[ComputeCapability]> {
        self.sm_sets.get(name).map(Vec::as_slice)
    }

    /// Every named set of compiled compute capabilities.
    pub fn sm_sets(&self) -> impl Iterator<Item = (&str, &[ComputeCapability])> {
        self.sm_sets.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// The gfx targets of each known ROCm version, newest first.
    pub fn rocm_gfx(&self) -> &[(DottedVersion, Vec<GfxTarget>)] {
        &self.rocm_gfx
    }

    /// The device IP versions PyTorch's XPU builds list.
    pub fn xpu_device_ips(&self) -> &[String] {
        &self.xpu_device_ips
    }

    /// Whether a (normalized) project name is built and published by PyTorch, so it comes from
    /// the PyTorch index (and, when [`Catalog::is_published_on_pypi`], from PyPI too), never
    /// from anywhere else.
    pub fn is_pytorch_built(&self, normalized: &str) -> bool {
        self.pytorch_built.contains(normalized)
    }

    /// Whether a (normalized) project name is of the triton family PyTorch publishes.
    pub fn is_triton_family(&self, normalized: &str) -> bool {
        self.triton_family.contains(normalized)
    }

    /// Whether the project belongs to the PyTorch upstream (PyTorch-built or triton family).
    pub fn routes_to_pytorch(&self, normalized: &str) -> bool {
        self.is_pytorch_built(normalized) || self.is_triton_family(normalized)
    }

    /// Whether a (normalized) project is torch or a companion of a torch release train
    /// (torchvision, torchaudio), whose unlabelled wheels are a known default build.
    pub fn is_release_train_project(&self, normalized: &str) -> bool {
        normalized == "torch"
            || self
                .releases
                .iter()
                .any(|r| r.companions.contains_key(normalized))
    }

    /// Every project name the PyTorch upstream owns.
    pub fn pytorch_projects(&self) -> impl Iterator<Item = &String> {
        self.pytorch_built.iter().chain(self.triton_family.iter())
    }

    /// Whether a (normalized) project name the PyTorch index owns is also published on PyPI,
    /// under the same name and by the same maintainers (`torch`, `torchvision`): such a project
    /// is merged from both upstreams, the PyTorch index's file kept when both offer the same
    /// build. `false` for a name only the PyTorch index has, or whose PyPI project is a
    /// placeholder (`pytorch-triton`), and for every name the PyTorch index does not own
    /// (`numpy`). The list is `[routing] published_on_pypi` of `resolver/data/catalog.toml`,
    /// each name with its PyPI evidence (<https://pypi.org/pypi/NAME/json>).
    pub fn is_published_on_pypi(&self, normalized: &str) -> bool {
        self.published_on_pypi.contains(normalized)
    }

    /// Every project name the PyTorch index owns that PyTorch also publishes on PyPI (see
    /// [`Catalog::is_published_on_pypi`]), in name order; each is among
    /// [`Catalog::pytorch_projects`].
    pub fn pypi_published_projects(&self) -> impl Iterator<Item = &String> {
        self.published_on_pypi.iter()
    }

    /// Platform key used in `plain` tables.
    pub(crate) fn platform_key(platform: Platform) -> String {
        platform.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_loads_newest_first() {
        let catalog = Catalog::embedded();
        let lines: Vec<String> = catalog
            .releases()
            .iter()
            .map(|r| r.torch.to_string())
            .collect();
        assert_eq!(lines.first().map(String::as_str), Some("2.15"));
        assert_eq!(lines.last().map(String::as_str), Some("2.4"));
        let mut sorted = catalog.releases().to_vec();
        sorted.sort_by_key(|r| std::cmp::Reverse(r.torch));
        assert_eq!(&sorted, catalog.releases());
        assert!(catalog.routes_to_pytorch("torch"));
        assert!(catalog.routes_to_pytorch("pytorch-triton"));
        assert!(!catalog.routes_to_pytorch("numpy"));
        assert_eq!(catalog.driver_floor(13).unwrap().linux.to_string(), "580");
    }

    #[test]
    fn names_published_on_pypi_are_pytorch_names_pypi_really_has() {
        let catalog = Catalog::embedded();
        for name in [
            "torch",
            "torchvision",
            "torchaudio",
            "fbgemm-gpu",
            "xformers",
        ] {
            assert!(catalog.is_published_on_pypi(name), "{name}");
        }
        // A placeholder on PyPI, the 2022 attack's name, a PyTorch-index-only name, and a name
        // the PyTorch index does not own.
        for name in ["pytorch-triton", "torchtriton", "torcharrow", "numpy"] {
            assert!(!catalog.is_published_on_pypi(name), "{name}");
        }
        let published: Vec<&String> = catalog.pypi_published_projects().collect();
        assert!(published.len() >= 10, "{published:?}");
        let routed: BTreeSet<&String> = catalog.pytorch_projects().collect();
        assert!(
            published.iter().all(|name| routed.contains(name)),
            "{published:?}"
        );
        assert!(
            published
                .iter()
                .all(|name| catalog.is_published_on_pypi(name))
        );
    }
}
