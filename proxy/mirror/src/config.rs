//! The mirror configuration: which projects, versions, builds, Python versions and platforms
//! `wheelgate mirror sync` copies into a store. Read from TOML, checked whole before anything is
//! fetched, every error naming the entry and what to change. The commented sample is
//! `deploy/mirror.toml`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::{Operator, Version, VersionSpecifier, VersionSpecifiers};
use serde::Deserialize;
use wheelgate_resolver::filename::normalize_name;
use wheelgate_resolver::machine::ImplausibleMachine;
use wheelgate_resolver::{Backend, Catalog, Machine, Platform, Policy};

use wheelgate_config::SourceConfig;
use wheelgate_config::catalog::{CatalogConfig, CatalogRef};
use wheelgate_config::{DEFAULT_PYPI_URL, DEFAULT_PYTORCH_URL, UpstreamsConfig};
use wheelgate_index::sources::{ProjectKind, Sources, SourcesError};

/// The offline server's address in lock files when a configuration names none.
pub const DEFAULT_SERVER_URL: &str = "http://localhost:3141";

/// The platform mirrored when a configuration names none.
pub const DEFAULT_PLATFORM: &str = "linux-x86_64";

/// A checked mirror configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorConfig {
    /// The PyTorch upstream (`DEFAULT_PYTORCH_URL`); the offline server must use the same.
    pub pytorch_url: String,
    /// The general upstream (`DEFAULT_PYPI_URL`); the offline server must use the same.
    pub pypi_url: String,
    /// The projects, in file order.
    pub packages: Vec<PackageEntry>,
    /// `[[constraint]]` entries: version limits on any project a resolution takes, declared or
    /// pulled in as a dependency (pip's and uv's constraints files).
    pub constraints: Vec<Constraint>,
    /// The selection policy for machines (the server's `[policy]`).
    pub policy: Policy,
    /// The offline server as its clients reach it (`http://mirror:3141`): the base of the file
    /// URLs in the PEP 751 locks.
    pub server_url: String,
    /// `[upstreams.pytorch]`, `[upstreams.pypi]`: credentials, headers and CA bundles of private
    /// upstreams, the server's sections as they are (`config/upstreams.rs`), for the origins of
    /// this file's `pytorch_url` and `pypi_url`. Read when the sync starts.
    pub upstreams: UpstreamsConfig,
    /// `[[sources]]`: the server's section as it is (checked when the file is read), so a
    /// project is mirrored from the sources the server serves it from.
    pub sources: Vec<SourceConfig>,
    /// The build facts: built in, or with the server's `[catalog] extend` overlay layered.
    pub catalog: CatalogRef,
}

/// One `[[constraint]]` entry: every version of `project` a resolution takes must satisfy
/// `versions`; it never adds the project by itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// The name as written, for messages.
    pub name: String,
    /// The normalized project name (PEP 503).
    pub project: String,
    pub versions: VersionSpecifiers,
}

/// One `[[package]]` entry, with the top-level defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageEntry {
    /// The name as written in the file, for messages.
    pub name: String,
    /// The normalized project name (PEP 503).
    pub project: String,
    /// Whether its builds are selected per backend and machine (a PyTorch project) or taken
    /// whole, as the server does.
    pub kind: ProjectKind,
    /// `None`: only the newest final version that has a matching file.
    pub versions: Option<VersionSpecifiers>,
    /// Every file of these builds (PyTorch projects).
    pub backends: Vec<Backend>,
    /// The build each of these machines gets for each version (PyTorch projects); on a
    /// wheel-variant index (PEP 825), the variant each gets.
    pub machines: Vec<Machine>,
    /// Every wheel of these variant labels (`cuda13.0`, `null`), on a wheel-variant index, for
    /// an entry with `dependencies = false`; `backends` take their labels too (`cu130` is
    /// `cuda13.0`), resolving or not.
    pub variant_labels: Vec<String>,
    /// The selection policy for `machines` (the same as the server's `[policy]`).
    pub policy: Policy,
    /// Empty: every Python.
    pub python: Vec<PythonVersion>,
    /// Platforms for `backends` and for the general upstream's wheels (never empty).
    pub platforms: Vec<Platform>,
    /// Whether the entry's dependencies are resolved and mirrored (the default). `false`: only
    /// the entry's own files, every version `versions` matches, as before resolution existed.
    pub dependencies: bool,
    /// Extras whose dependencies are resolved too (`torch[opt-einsum]`), normalized.
    pub extras: Vec<String>,
}

impl PackageEntry {
    /// An entry standing for a project a resolution took (for its pages' URLs).
    pub fn resolved(config: &MirrorConfig, project: &str) -> PackageEntry {
        PackageEntry {
            name: project.to_string(),
            project: project.to_string(),
            kind: config.sources().kind(project),
            versions: None,
            backends: Vec::new(),
            machines: Vec::new(),
            variant_labels: Vec::new(),
            policy: config.policy.clone(),
            python: Vec::new(),
            platforms: Vec::new(),
            dependencies: true,
            extras: Vec::new(),
        }
    }

    /// Whether `version` is asked for: contained in the specifiers, and a pre-release only when
    /// a specifier names one (PEP 440's rule).
    pub fn wants(&self, version: &Version) -> bool {
        match &self.versions {
            None => !version.any_prerelease(),
            Some(specifiers) => {
                specifiers.contains(version)
                    && (!version.any_prerelease()
                        || specifiers.iter().any(VersionSpecifier::any_prerelease))
            }
        }
    }

    /// Whether a yanked file of `version` may be mirrored: only when pinned with `==` (PEP 592).
    pub fn allows_yanked(&self, version: &Version) -> bool {
        self.versions.as_ref().is_some_and(|specifiers| {
            specifiers.iter().any(|s| {
                matches!(s.operator(), Operator::Equal | Operator::ExactEqual)
                    && s.version() == version
            })
        })
    }
}

/// A Python version wheels must install on: `3.12`, or `3.13t` for a free-threaded build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonVersion {
    pub major: u32,
    pub minor: u32,
    pub free_threaded: bool,
}

impl FromStr for PythonVersion {
    type Err = MirrorConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || MirrorConfigError::InvalidPython {
            value: text.to_string(),
        };
        let (rest, free_threaded) = match text.trim().strip_suffix('t') {
            Some(rest) => (rest, true),
            None => (text.trim(), false),
        };
        let (major, minor) = rest.split_once('.').ok_or_else(error)?;
        let major: u32 = major.parse().map_err(|_| error())?;
        let minor: u32 = minor.parse().map_err(|_| error())?;
        if major != 3 {
            return Err(error());
        }
        Ok(PythonVersion {
            major,
            minor,
            free_threaded,
        })
    }
}

impl fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if self.free_threaded {
            f.write_str("t")?;
        }
        Ok(())
    }
}

/// A mirror configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MirrorConfigError {
    #[error(transparent)]
    Catalog(#[from] Box<wheelgate_config::catalog::CatalogFileError>),
    #[error("cannot read the mirror configuration `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the mirror configuration `{path}` is invalid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("the mirror configuration `{path}`: {source}")]
    Invalid {
        path: PathBuf,
        #[source]
        source: Box<MirrorConfigError>,
    },
    #[error(
        "no `[[package]]` entry: add one per project to mirror, e.g. `[[package]]` `name = \"torch\"` `versions = \"==2.9.0\"`"
    )]
    NoPackages,
    #[error("`[[package]]` entry {index} has an empty `name`")]
    EmptyName { index: usize },
    #[error(
        "`{name}` is listed twice (entries {first} and {second}); merge them into one `[[package]]`"
    )]
    Duplicate {
        name: String,
        first: usize,
        second: usize,
    },
    #[error(
        "`{name}`: `versions = \"{specifier}\"` is not a PEP 440 version specifier ({message}); write e.g. \"==2.9.0\" or \">=2.8,<2.10\""
    )]
    InvalidSpecifier {
        name: String,
        specifier: String,
        message: String,
    },
    #[error(
        "`{value}` is not a Python version; write e.g. \"3.12\" (or \"3.13t\" for free-threaded)"
    )]
    InvalidPython { value: String },
    #[error(
        "`{name}` is a PyTorch project: set `backends` (e.g. [\"cu130\", \"cpu\"]) or `machines`, in its entry or at the top level"
    )]
    NoBuilds { name: String },
    #[error("{place}: machine {index} of `machines` cannot exist")]
    ImplausibleMachine {
        /// `top level` or the entry's name in backticks.
        place: String,
        /// Its position in `machines`, from 1.
        index: usize,
        #[source]
        reason: ImplausibleMachine,
    },
    #[error("`platforms` is empty: name at least one, e.g. [\"{DEFAULT_PLATFORM}\"]")]
    NoPlatforms,
    #[error(
        "`{name}`: dependencies are resolved per Python version, but no `python` is set; set e.g. `python = [\"3.11\", \"3.12\"]` (top level or in the entry), or `dependencies = false`"
    )]
    NoPythonToResolve { name: String },
    #[error(
        "`{name}` comes from the per-build source `{owner}`: its files are bound to the torch release beside them, which only a resolution knows; remove `dependencies = false` (and list `torch` too to choose its versions)"
    )]
    PerBuildNotResolved { name: String, owner: String },
    #[error("`[[constraint]]` entry {index}: {message}")]
    InvalidConstraint { index: usize, message: String },
    #[error("`{name}`: `{extra}` is not a valid extra name")]
    InvalidExtra { name: String, extra: String },
    #[error(
        "`{name}`: `{label}` in `variant_labels` is not a variant label (lowercase letters, digits, `_` and `.`, e.g. \"cuda13.0\" or \"null\")"
    )]
    InvalidVariantLabel { name: String, label: String },
    #[error(
        "`{name}`: `variant_labels` select files, but this entry resolves its dependencies; name the builds as `backends` (`cu130` takes the `cuda13.0` variant, `cpu` the `null` one) or `machines`, or set `dependencies = false`"
    )]
    VariantLabelsResolved { name: String },
    #[error(transparent)]
    Sources(#[from] SourcesError),
}

/// Refuses a machine that cannot exist (it would mirror CPU builds for a GPU machine) and logs
/// the doubtful ones, naming the entry (`None`: the top-level `machines`) and the position.
fn check_machines(
    entry: Option<&str>,
    machines: &[Machine],
    catalog: &Catalog,
) -> Result<(), MirrorConfigError> {
    let place = || entry.map_or_else(|| "top level".to_string(), |name| format!("`{name}`"));
    for (index, machine) in machines.iter().enumerate() {
        let doubts = machine.check_plausible(catalog).map_err(|reason| {
            MirrorConfigError::ImplausibleMachine {
                place: place(),
                index: index + 1,
                reason,
            }
        })?;
        for doubt in doubts {
            tracing::warn!(source = "mirror configuration", entry = %place(), machine = index + 1, "{doubt}");
        }
    }
    Ok(())
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    pytorch_url: Option<String>,
    #[serde(default)]
    pypi_url: Option<String>,
    #[serde(default)]
    server_url: Option<String>,
    #[serde(default)]
    python: Option<Vec<String>>,
    #[serde(default)]
    platforms: Option<Vec<Platform>>,
    #[serde(default)]
    backends: Option<Vec<Backend>>,
    #[serde(default)]
    machines: Option<Vec<Machine>>,
    #[serde(default)]
    variant_labels: Option<Vec<String>>,
    #[serde(default)]
    policy: Option<Policy>,
    #[serde(default)]
    dependencies: Option<bool>,
    #[serde(default)]
    package: Vec<RawPackage>,
    #[serde(default)]
    constraint: Vec<RawConstraint>,
    #[serde(default)]
    upstreams: UpstreamsConfig,
    #[serde(default)]
    sources: Vec<SourceConfig>,
    #[serde(default)]
    catalog: CatalogConfig,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConstraint {
    name: String,
    versions: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPackage {
    name: String,
    #[serde(default)]
    versions: Option<String>,
    #[serde(default)]
    backends: Option<Vec<Backend>>,
    #[serde(default)]
    machines: Option<Vec<Machine>>,
    #[serde(default)]
    variant_labels: Option<Vec<String>>,
    #[serde(default)]
    python: Option<Vec<String>>,
    #[serde(default)]
    platforms: Option<Vec<Platform>>,
    #[serde(default)]
    dependencies: Option<bool>,
    #[serde(default)]
    extras: Vec<String>,
}

impl MirrorConfig {
    /// Reads and checks a TOML mirror configuration.
    pub fn from_file(path: &Path) -> Result<MirrorConfig, MirrorConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| MirrorConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        MirrorConfig::parse(&text, path)
    }

    /// Parses and checks the text of a mirror configuration read from `path` (named in errors).
    pub fn parse(text: &str, path: &Path) -> Result<MirrorConfig, MirrorConfigError> {
        let mut raw: RawConfig = toml::from_str(text).map_err(|err| MirrorConfigError::Parse {
            path: path.to_path_buf(),
            message: parse_message(text, &err),
        })?;
        // A relative overlay sits beside the file that names it.
        if let Some(dir) = path.parent() {
            raw.catalog.resolved_against(dir);
        }
        MirrorConfig::check(raw).map_err(|source| MirrorConfigError::Invalid {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
    }

    // One check per field in file order, each applying its top-level default: a split would
    // scatter the defaults.
    #[allow(clippy::too_many_lines)]
    fn check(raw: RawConfig) -> Result<MirrorConfig, MirrorConfigError> {
        if raw.package.is_empty() {
            return Err(MirrorConfigError::NoPackages);
        }
        let catalog = raw.catalog.load().map_err(Box::new)?.catalog;
        let default_python = parse_pythons(raw.python.as_deref().unwrap_or_default())?;
        let default_platforms = match raw.platforms {
            Some(platforms) if platforms.is_empty() => return Err(MirrorConfigError::NoPlatforms),
            Some(platforms) => platforms,
            None => vec![DEFAULT_PLATFORM.parse().expect("a valid platform")],
        };
        let policy = raw.policy.unwrap_or_default();
        let sources = Sources::new(
            catalog,
            Some(raw.pytorch_url.as_deref().unwrap_or(DEFAULT_PYTORCH_URL)),
            raw.pypi_url.as_deref().unwrap_or(DEFAULT_PYPI_URL),
            &raw.upstreams,
            &raw.sources,
        )?;
        check_machines(None, raw.machines.as_deref().unwrap_or_default(), catalog)?;
        let mut packages: Vec<PackageEntry> = Vec::new();
        for (index, package) in raw.package.into_iter().enumerate() {
            let number = index + 1;
            let name = package.name.trim().to_string();
            if name.is_empty() {
                return Err(MirrorConfigError::EmptyName { index: number });
            }
            let project = normalize_name(&name);
            if let Some(first) = packages.iter().position(|p| p.project == project) {
                return Err(MirrorConfigError::Duplicate {
                    name,
                    first: first + 1,
                    second: number,
                });
            }
            let versions = package
                .versions
                .map(|text| {
                    VersionSpecifiers::from_str(&text).map_err(|err| {
                        MirrorConfigError::InvalidSpecifier {
                            name: name.clone(),
                            specifier: text.clone(),
                            message: err.to_string(),
                        }
                    })
                })
                .transpose()?;
            let python = match &package.python {
                Some(values) => parse_pythons(values)?,
                None => default_python.clone(),
            };
            let platforms = match package.platforms {
                Some(platforms) if platforms.is_empty() => {
                    return Err(MirrorConfigError::NoPlatforms);
                }
                Some(platforms) => platforms,
                None => default_platforms.clone(),
            };
            check_machines(
                Some(&name),
                package.machines.as_deref().unwrap_or_default(),
                catalog,
            )?;
            // An entry that names either builds or machines replaces both top-level defaults.
            let (backends, machines) = if package.backends.is_some() || package.machines.is_some() {
                (
                    package.backends.unwrap_or_default(),
                    package.machines.unwrap_or_default(),
                )
            } else {
                (
                    raw.backends.clone().unwrap_or_default(),
                    raw.machines.clone().unwrap_or_default(),
                )
            };
            let labels = package
                .variant_labels
                .as_ref()
                .or(raw.variant_labels.as_ref());
            let variant_labels = parse_variant_labels(&name, labels)?;
            let per_build = sources.per_build_owners(&project);
            // A per-build source's project is taken per machine or backend, as PyTorch's are.
            let kind = if per_build.is_empty() {
                sources.kind(&project)
            } else {
                ProjectKind::Pytorch
            };
            let dependencies = package.dependencies.or(raw.dependencies).unwrap_or(true);
            if let (Some(&source), false) = (per_build.first(), dependencies) {
                return Err(MirrorConfigError::PerBuildNotResolved {
                    name,
                    owner: sources.get(source).name.clone(),
                });
            }
            builds_named(
                &name,
                kind,
                &backends,
                &machines,
                &variant_labels,
                dependencies,
            )?;
            if dependencies && python.is_empty() {
                return Err(MirrorConfigError::NoPythonToResolve { name });
            }
            let extras = parse_extras(&name, &package.extras)?;
            packages.push(PackageEntry {
                name,
                project,
                kind,
                versions,
                backends,
                machines,
                variant_labels,
                policy: policy.clone(),
                python,
                platforms,
                dependencies,
                extras,
            });
        }
        let constraints = raw
            .constraint
            .into_iter()
            .enumerate()
            .map(|(index, raw)| parse_constraint(index + 1, &raw))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MirrorConfig {
            pytorch_url: raw.pytorch_url.unwrap_or(DEFAULT_PYTORCH_URL.into()),
            pypi_url: raw.pypi_url.unwrap_or(DEFAULT_PYPI_URL.into()),
            packages,
            constraints,
            policy,
            server_url: raw.server_url.unwrap_or(DEFAULT_SERVER_URL.into()),
            upstreams: raw.upstreams,
            sources: raw.sources,
            catalog: CatalogRef(catalog),
        })
    }

    /// Whether any entry has its dependencies resolved.
    pub fn resolves(&self) -> bool {
        self.packages.iter().any(|p| p.dependencies)
    }

    /// Every source, as the server with the same `pytorch_url`, `pypi_url`, `[upstreams.*]`
    /// and `[[sources]]` has them.
    pub fn sources(&self) -> Sources {
        Sources::new(
            self.catalog.0,
            Some(&self.pytorch_url),
            &self.pypi_url,
            &self.upstreams,
            &self.sources,
        )
        .expect("checked when the configuration was read")
    }

    /// The PyTorch upstream without a trailing slash.
    pub fn pytorch_root(&self) -> &str {
        self.pytorch_url.trim_end_matches('/')
    }

    /// The general upstream without a trailing slash.
    pub fn pypi_root(&self) -> &str {
        self.pypi_url.trim_end_matches('/')
    }
}

/// A PyTorch project's entry must name what to mirror of it: backends, machines or (selecting
/// only) variant labels. A resolving entry's builds are its environments' backends and
/// machines, which take their variants on a variant index: labels there would be ignored.
fn builds_named(
    name: &str,
    kind: ProjectKind,
    backends: &[Backend],
    machines: &[Machine],
    variant_labels: &[String],
    dependencies: bool,
) -> Result<(), MirrorConfigError> {
    if dependencies && !variant_labels.is_empty() {
        return Err(MirrorConfigError::VariantLabelsResolved {
            name: name.to_string(),
        });
    }
    if kind == ProjectKind::Pytorch
        && backends.is_empty()
        && machines.is_empty()
        && variant_labels.is_empty()
    {
        return Err(MirrorConfigError::NoBuilds {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// The variant labels of an entry (its own, else the top level's), each checked against PEP
/// 825's grammar, without repeats.
fn parse_variant_labels(
    name: &str,
    labels: Option<&Vec<String>>,
) -> Result<Vec<String>, MirrorConfigError> {
    let mut out: Vec<String> = Vec::new();
    for label in labels.into_iter().flatten() {
        let label = label.trim();
        if !wheelgate_resolver::variants::is_valid_label(label) {
            return Err(MirrorConfigError::InvalidVariantLabel {
                name: name.to_string(),
                label: label.chars().flat_map(char::escape_default).collect(),
            });
        }
        if !out.iter().any(|l| l == label) {
            out.push(label.to_string());
        }
    }
    Ok(out)
}

/// toml's message (with the offending line), except for a refused plain-text secret in
/// `[upstreams.*]`, whose line holds the secret: then only its line number and the refusal (as
/// the server's configuration file does).
fn parse_message(text: &str, err: &toml::de::Error) -> String {
    if !wheelgate_config::secrets::is_plain_text_refusal(err.message()) {
        return err.to_string();
    }
    let line = err
        .span()
        .and_then(|span| text.get(..span.start))
        .map_or(0, |before| before.matches('\n').count() + 1);
    format!("line {line}: {}", err.message())
}

/// Normalized extra names (PEP 685).
fn parse_extras(name: &str, extras: &[String]) -> Result<Vec<String>, MirrorConfigError> {
    extras
        .iter()
        .map(|extra| {
            pep508_rs::ExtraName::from_str(extra)
                .map(|e| e.to_string())
                .map_err(|_| MirrorConfigError::InvalidExtra {
                    name: name.to_string(),
                    extra: extra.clone(),
                })
        })
        .collect()
}

fn parse_constraint(index: usize, raw: &RawConstraint) -> Result<Constraint, MirrorConfigError> {
    let name = raw.name.trim().to_string();
    if name.is_empty() {
        return Err(MirrorConfigError::InvalidConstraint {
            index,
            message: "empty `name`".to_string(),
        });
    }
    let versions = VersionSpecifiers::from_str(&raw.versions).map_err(|err| {
        MirrorConfigError::InvalidConstraint {
            index,
            message: format!(
                "`versions = \"{}\"` for `{name}` is not a PEP 440 version specifier ({err}); write e.g. \"<2.3\"",
                raw.versions
            ),
        }
    })?;
    Ok(Constraint {
        project: normalize_name(&name),
        name,
        versions,
    })
}

fn parse_pythons(values: &[String]) -> Result<Vec<PythonVersion>, MirrorConfigError> {
    let mut pythons = values
        .iter()
        .map(|v| v.parse())
        .collect::<Result<Vec<PythonVersion>, _>>()?;
    pythons.sort_unstable();
    pythons.dedup();
    Ok(pythons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MirrorConfig, String> {
        MirrorConfig::parse(text, Path::new("mirror.toml")).map_err(|err| {
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            message
        })
    }

    #[test]
    fn the_sample_config_in_deploy_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/mirror.toml");
        let config = MirrorConfig::from_file(&path).unwrap();
        assert_eq!(config.pytorch_url, DEFAULT_PYTORCH_URL);
        let torch = &config.packages[0];
        assert_eq!(torch.project, "torch");
        assert_eq!(torch.kind, ProjectKind::Pytorch);
        assert!(!torch.backends.is_empty());
        assert!(torch.dependencies);
        // Top-level requirements only: what users install.
        assert!(
            config
                .packages
                .iter()
                .all(|p| p.kind == ProjectKind::Pytorch)
        );
        assert!(config.packages.iter().any(|p| !p.machines.is_empty()));
        assert_eq!(config.constraints[0].project, "numpy");
        assert_eq!(config.server_url, "http://mirror:3141");
        // 3 Pythons x (cu130, cpu) on linux-x86_64, and the RTX 5090 per Python.
        assert_eq!(crate::environments(&config).len(), 9);
    }

    #[test]
    fn machines_that_cannot_exist_are_refused_with_their_place_named() {
        let text = parse(
            r#"
            python = ["3.12"]
            machines = [{ platform = "linux-x86_64" }, { platform = "macos-arm64", nvidia = { gpus = [{ compute_capability = "9.0" }] } }]

            [[package]]
            name = "torch"
            "#,
        )
        .unwrap_err();
        assert!(
            text.contains("top level: machine 2 of `machines` cannot exist: a `macos-arm64` machine cannot have NVIDIA GPUs"),
            "{text}"
        );
        let text = parse(
            r#"
            python = ["3.12"]

            [[package]]
            name = "torch"
            machines = [{ platform = "windows-x86_64", amd = { gpus = [{ gfx = "gfx1100" }] } }]
            "#,
        )
        .unwrap_err();
        assert!(
            text.contains("`torch`: machine 1 of `machines` cannot exist: a `windows-x86_64` machine cannot use its AMD GPU `gfx1100`"),
            "{text}"
        );
    }

    #[test]
    fn defaults_apply_and_entries_override_them() {
        let config = parse(
            r#"
            python = ["3.12", "3.11", "3.12"]
            backends = ["cu130", "cpu"]

            [[package]]
            name = "Torch"
            versions = ">=2.8,<2.10"

            [[package]]
            name = "torchvision"
            machines = [{ platform = "linux-x86_64", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }]
            python = ["3.13t"]

            [[package]]
            name = "file_lock"
            "#,
        )
        .unwrap();
        assert_eq!(config.pypi_url, DEFAULT_PYPI_URL);
        let [torch, vision, filelock] = &config.packages[..] else {
            panic!("three entries")
        };
        assert_eq!(torch.project, "torch");
        assert_eq!(torch.name, "Torch");
        assert_eq!(
            torch
                .python
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["3.11", "3.12"]
        );
        assert_eq!(torch.backends.len(), 2);
        assert_eq!(torch.platforms[0].to_string(), "linux-x86_64");
        assert!(torch.wants(&"2.9.0".parse().unwrap()));
        assert!(!torch.wants(&"2.10.0".parse().unwrap()));
        assert!(!torch.wants(&"2.9.0rc1".parse().unwrap()));
        // An entry naming machines replaces the top-level backends.
        assert!(vision.backends.is_empty());
        assert_eq!(vision.machines.len(), 1);
        assert_eq!(vision.python[0].to_string(), "3.13t");
        assert_eq!(filelock.project, "file-lock");
        assert_eq!(filelock.kind, ProjectKind::General);
        assert!(filelock.versions.is_none());
    }

    #[test]
    fn yanked_files_only_for_an_exact_pin() {
        let config = parse(
            "dependencies = false\n[[package]]\nname = \"filelock\"\nversions = \"==3.20.0\"\n[[package]]\nname = \"six\"\nversions = \">=1\"\n",
        )
        .unwrap();
        let version = "3.20.0".parse().unwrap();
        assert!(config.packages[0].allows_yanked(&version));
        assert!(!config.packages[1].allows_yanked(&version));
    }

    #[test]
    fn an_invalid_specifier_names_the_entry_and_an_example() {
        let err =
            parse("backends = [\"cpu\"]\n[[package]]\nname = \"torch\"\nversions = \"=>2.9\"\n")
                .unwrap_err();
        assert!(err.contains("`torch`"), "{err}");
        assert!(err.contains("=>2.9"), "{err}");
        assert!(err.contains("\"==2.9.0\""), "{err}");
        assert!(err.contains("mirror.toml"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_named() {
        let err = parse("[[package]]\nname = \"filelock\"\nversion = \"==3.20.0\"\n").unwrap_err();
        assert!(err.contains("unknown field `version`"), "{err}");
        assert!(err.contains("versions"), "{err}");
        let err = parse("pytorch = \"x\"\n[[package]]\nname = \"filelock\"\n").unwrap_err();
        assert!(err.contains("unknown field `pytorch`"), "{err}");
    }

    #[test]
    fn an_empty_package_list_says_what_to_add() {
        for text in ["", "python = [\"3.12\"]\n", "package = []\n"] {
            let err = parse(text).unwrap_err();
            assert!(err.contains("no `[[package]]` entry"), "{err}");
            assert!(err.contains("name = \"torch\""), "{err}");
        }
    }

    #[test]
    fn other_mistakes_say_what_to_fix() {
        let err = parse("[[package]]\nname = \"torch\"\n").unwrap_err();
        assert!(err.contains("set `backends`"), "{err}");
        let err = parse("python = [\"3\"]\n[[package]]\nname = \"six\"\n").unwrap_err();
        assert!(err.contains("`3` is not a Python version"), "{err}");
        let err = parse(
            "python = [\"3.12\"]\n[[package]]\nname = \"six\"\n[[package]]\nname = \"Six\"\n",
        )
        .unwrap_err();
        assert!(err.contains("listed twice (entries 1 and 2)"), "{err}");
        let err = parse("python = [\"3.12\"]\n[[package]]\nname = \" \"\n").unwrap_err();
        assert!(err.contains("entry 1 has an empty `name`"), "{err}");
        let err = parse("platforms = []\n[[package]]\nname = \"six\"\n").unwrap_err();
        assert!(err.contains("`platforms` is empty"), "{err}");
        let err = parse("platforms = [\"linux\"]\n[[package]]\nname = \"six\"\n").unwrap_err();
        assert!(err.contains("`linux` is not a platform"), "{err}");
        let err = parse("[[package]]\nname = \"six\"\n").unwrap_err();
        assert!(err.contains("no `python` is set"), "{err}");
        assert!(err.contains("`dependencies = false`"), "{err}");
        let err = parse("dependencies = false\n[[constraint]]\nname = \"numpy\"\nversions = \"<<2\"\n[[package]]\nname = \"six\"\n").unwrap_err();
        assert!(err.contains("`[[constraint]]` entry 1"), "{err}");
        assert!(err.contains("`numpy`"), "{err}");
        let err = parse("python = [\"3.12\"]\n[[package]]\nname = \"six\"\nextras = [\"a b\"]\n")
            .unwrap_err();
        assert!(err.contains("`a b` is not a valid extra"), "{err}");
        let err = parse("backends = [\"cuda\"]\n[[package]]\nname = \"torch\"\n").unwrap_err();
        assert!(err.contains("cuda"), "{err}");
    }

    #[test]
    fn a_per_build_project_is_mirrored_only_by_resolution() {
        let sources = "[[sources]]\nname = \"pyg\"\nurl = \"http://pyg.test/whl/torch-{torch}+{backend}.html\"\nprojects = [\"torch-scatter\"]\n";
        let text = format!(
            "python = [\"3.12\"]\nbackends = [\"cu130\"]\n{sources}[[package]]\nname = \"torch-scatter\"\ndependencies = false\n"
        );
        let err = MirrorConfig::parse(&text, Path::new("mirror.toml")).unwrap_err();
        let text_of_err = err.to_string();
        assert!(
            text_of_err.contains("`torch-scatter` comes from the per-build source `pyg`")
                && text_of_err.contains("remove `dependencies = false`"),
            "{text_of_err}"
        );
        // Resolved, it is taken per machine or backend, as PyTorch's projects are.
        let text = text.replace("dependencies = false\n", "");
        let config = MirrorConfig::parse(&text, Path::new("mirror.toml")).unwrap();
        assert_eq!(config.packages[0].kind, ProjectKind::Pytorch);
    }

    #[test]
    fn a_catalog_overlay_beside_the_file_gives_the_mirror_its_facts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("extra.toml"),
            "[[release]]\ntorch = \"2.16\"\nbackends.cpu = {}\nbackends.cu134 = { sm = \"cu13x\" }\n",
        )
        .unwrap();
        let text = "backends = [\"cu134\"]\ndependencies = false\n[catalog]\nextend = \"extra.toml\"\n[[package]]\nname = \"torch\"\n";
        let config = MirrorConfig::parse(text, &dir.path().join("mirror.toml")).unwrap();
        assert_eq!(config.catalog.newest_release().torch.to_string(), "2.16");

        std::fs::write(
            dir.path().join("extra.toml"),
            "[[release]]\ntorch = \"2.16\"\n",
        )
        .unwrap();
        let error = MirrorConfig::parse(text, &dir.path().join("mirror.toml")).unwrap_err();
        let message = format!(
            "{error}: {}",
            wheelgate_index::error_chain::source_chain(&error)
        );
        assert!(
            message.contains("extra.toml") && message.contains("line 2"),
            "{message}"
        );
    }
}
